"""A data-race check for kernels run by Triton's CPU interpreter (TRITON_INTERPRET=1).

The interpreter runs a launch's programs one after another and each program's ops in
order, so a kernel whose programs (or threads) race computes what one serial order gives,
and a race that the GPU turns into a wrong value goes unseen on the CPU. `RaceCheck`
watches the interpreter's memory ops (its builder's masked load / store, which every
load and store form reaches, atomic_rmw, atomic_cas, and the barrier of
tl.debug_barrier) and reports every access pair that a GPU does not order:

  with RaceCheck() as check:
      kernel[grid](...)
  assert not check.races, check.report()

Happens-before, as on the GPU:
- Across programs, nothing is ordered except through atomics: an atomic with acquire
  semantics (Triton's default is acq_rel) on address L orders after it every access
  that an earlier program made up to its last releasing atomic on L (vector clocks;
  the interpreter's serial order decides which program came first, so "the last
  program to arrive sums the partials" is race-free). Two accesses to one address
  from different programs race when they are not so ordered and at least one is a
  plain store, or one is an atomic and the other a plain access.
- Within a program, different threads are ordered only by a barrier. Two different
  ops touching one address, at least one a plain store (or an atomic against a plain
  access), race unless a barrier lies between them or the same lane does both. The
  ASSUMPTION: the same element index in tensors of the same shape is the same thread
  (Triton gives both the same layout where the shapes agree; it need not, so this
  check may miss a race that a layout change creates). Several lanes of one store or
  atomic at one address count as its first such lane.
- One plain store whose active lanes write different values to one address races
  (equal values do not: a broadcast scalar stored by every lane).

A race across programs is reported by the earlier program's last access to the address
and the later program's first (the pair least likely ordered), counted per address and
pair of programs. An address is a byte address: accesses of different widths that overlap without
starting at the same byte are not compared. A load is compared with the next atomic
and the next store to its address, a plain access with the last store and the last
atomic before it; with relaxed atomics (no acquire/release chain between them) a race
of a load with a later atomic that is not the next one can be missed.

Each launch is checked on its own (a launch boundary orders everything). The cost is
linear in the accesses plus a sort per program and per launch, and one vector clock
(an int per program) per synchronizing atomic op executed.
"""

from __future__ import annotations

import dataclasses
import linecache
import os
import re
import sys
from typing import Dict, List, Optional, Tuple

import numpy as np

LOAD, STORE, ATOMIC = 0, 1, 2
_NEVER = np.iinfo(np.int64).max

# this file's frames are the check's, not the kernel's (as frames spell it)
_THIS_FILE = (lambda: None).__code__.co_filename


class RaceCheckError(RuntimeError):
    """The check cannot run on this launch (e.g. too many programs synchronizing)."""


@dataclasses.dataclass(frozen=True)
class Access:
    op: str                       # load, store, atomic_add, atomic_cas ...
    program: Tuple[int, int, int]
    where: str                    # file:line of the kernel, and its text
    lane: Optional[int] = None    # flat element index in the op's tensor (within a program)


@dataclasses.dataclass
class Race:
    kind: str                     # "across programs", "within a program", "one store"
    first: Access
    second: Access
    buffer: str                   # argument name and element, e.g. "dx_ptr[137]"
    count: int = 1                # address pairs with the same two ops

    def __str__(self):
        if self.kind == "one store":
            return (f"{self.first.op} writes different values to {self.buffer} from two "
                    f"lanes ({self.first.lane}, {self.second.lane}) in program "
                    f"{self.first.program} at {self.first.where}"
                    + (f" ({self.count} addresses)" if self.count > 1 else ""))
        lanes = (f" (lanes {self.first.lane} and {self.second.lane})"
                 if self.kind == "within a program" else "")
        return (f"race {self.kind} on {self.buffer}{lanes}: {self.first.op} by program "
                f"{self.first.program} at {self.first.where}; {self.second.op} by program "
                f"{self.second.program} at {self.second.where}"
                + (f" ({self.count} address/program pairs)" if self.count > 1 else ""))


def _site_text(filename: str, lineno: int) -> str:
    """file:line: text; for a rendering of tritonad's, also the user's line its comment
    names (the comment line `# file.py:NN: text` before the op)."""
    lines = linecache.getlines(filename)
    text = lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""
    where = f"{os.path.basename(filename)}:{lineno}: {text}"
    if filename.startswith("<tritonad-rendered"):
        for back in range(lineno - 2, -1, -1):
            stripped = lines[back].strip()
            if re.match(r"# \S+:\d+: ", stripped):
                return f"{where}  [{stripped[2:]}]"
            if stripped.startswith("def "):
                break
    return where


class _Program:
    """One program's accesses, in its op order."""

    def __init__(self, index):
        self.index = index
        self.ops: List[tuple] = []        # (kind, epoch, shape id, site id)
        self.addresses: List[np.ndarray] = []
        self.lanes: List[np.ndarray] = []
        self.epoch = 0
        self.clock = 0                     # id of this program's vector clock
        self.clock_changes: List[Tuple[int, int]] = []   # (time, clock id) at acquires


class _Launch:
    def __init__(self, regions, programs_total):
        self.regions = regions             # sorted [(base, end, name, itemsize, origin)]
        self.bases = np.array([r[0] for r in regions], dtype=np.uint64)
        self.grid_of: List[Tuple[int, int, int]] = []
        self.total = programs_total
        self.clocks: List[np.ndarray] = [np.zeros(programs_total, dtype=np.int32)]
        self.location_clocks: Dict[int, np.ndarray] = {}   # region -> clock id per byte
        self.stray_clocks: Dict[int, int] = {}              # address -> clock id
        self.summaries: List[Dict[str, np.ndarray]] = []
        self.program: Optional[_Program] = None

    def region_of(self, addresses):
        index = np.searchsorted(self.bases, addresses.astype(np.uint64), side="right") - 1
        inside = index >= 0
        if len(self.regions):
            ends = np.array([r[1] for r in self.regions], dtype=np.uint64)[np.maximum(index, 0)]
            inside &= addresses.astype(np.uint64) < ends
        return index, inside

    def new_clock(self, vector):
        if (len(self.clocks) + 1) * self.total * 4 > _CLOCK_BYTES:
            raise RaceCheckError(
                f"race check: {len(self.clocks)} synchronizing atomic ops over {self.total} "
                "programs exceed the vector clocks' memory; check a smaller launch")
        self.clocks.append(vector)
        return len(self.clocks) - 1

    # -- atomics' vector clocks ------------------------------------------------

    def _location_ids(self, addresses):
        index, inside = self.region_of(addresses)
        ids = np.full(addresses.shape, -1, dtype=np.int32)
        for r in np.unique(index[inside]):
            base = self.regions[r][0]
            table = self.location_clocks.get(r)
            if table is not None:
                sel = inside & (index == r)
                ids[sel] = table[_offsets(addresses[sel], base)]
        for k in np.flatnonzero(~inside):
            ids[k] = self.stray_clocks.get(int(addresses[k]), -1)
        return ids, index, inside

    def _set_location_ids(self, addresses, ids, index, inside):
        for r in np.unique(index[inside]):
            base, end = self.regions[r][0], self.regions[r][1]
            table = self.location_clocks.get(r)
            if table is None:
                table = self.location_clocks[r] = np.full(int(end - base), -1, dtype=np.int32)
            sel = inside & (index == r)
            table[_offsets(addresses[sel], base)] = ids[sel]
        for k in np.flatnonzero(~inside):
            self.stray_clocks[int(addresses[k])] = int(ids[k])

    def synchronize(self, program: _Program, addresses, time, acquire, release):
        if not (acquire or release) or addresses.size == 0:
            return
        ids, index, inside = self._location_ids(addresses)
        known = np.unique(ids[ids >= 0])
        if acquire and known.size:
            joined = np.maximum(self.clocks[program.clock],
                                np.stack([self.clocks[k] for k in known]).max(axis=0))
            if (joined > self.clocks[program.clock]).any():
                program.clock = self.new_clock(joined)
                program.clock_changes.append((time, program.clock))
        if release:
            mine = self.clocks[program.clock].copy()
            mine[program.index] = time
            if acquire:   # (acq_rel: every location now holds this program's clock)
                new_ids = np.full(ids.shape, self.new_clock(mine), dtype=np.int32)
            else:
                new_ids = np.empty_like(ids)
                for old in np.unique(ids):
                    joined = mine if old < 0 else np.maximum(self.clocks[old], mine)
                    new_ids[ids == old] = self.new_clock(joined)
            self._set_location_ids(addresses, new_ids, index, inside)

    def describe(self, address):
        index, inside = self.region_of(np.array([address], dtype=np.uint64))
        if inside[0]:
            _, _, name, itemsize, origin = self.regions[int(index[0])]
            return f"{name}[{(address - origin) // itemsize}]"
        return f"address {address:#x}"


_CLOCK_BYTES = 1 << 28   # (stacked once more at the launch's end)


class RaceCheck:
    """Context manager: while it is active, every launch that Triton's interpreter runs
    is checked for data races; `races` lists them (one per pair of ops, with a count),
    `report()` says them. The check patches the interpreter's builder and grid
    executor, and restores them on exit."""

    def __init__(self, select=None):
        """select: which launches to check, a predicate of the kernel's Python function
        (e.g. `derived_by_tritonad`); default every launch."""
        self.select = select
        self.races: List[Race] = []
        self.launches = 0                  # launches checked
        self._sites: Dict[tuple, int] = {}
        self._site_list: List[tuple] = []
        self._wheres: Dict[int, str] = {}
        self._shapes: Dict[tuple, int] = {}
        self._launch: Optional[_Launch] = None
        self._pending_regions = None
        self._undo = []

    # -- the interpreter's hooks -----------------------------------------------

    def __enter__(self):
        try:   # (tritonad's mends wrap the same methods: theirs first, so exit keeps them)
            from tritonad import _interpreter_mends
            _interpreter_mends.install()
        except ImportError:
            pass
        from triton.runtime import interpreter

        builder, executor = interpreter.InterpreterBuilder, interpreter.GridExecutor
        check = self
        load, store = builder.create_masked_load, builder.create_masked_store
        rmw, cas, barrier = (builder.create_atomic_rmw, builder.create_atomic_cas,
                             builder.create_barrier)
        set_dim, set_idx = builder.set_grid_dim, builder.set_grid_idx
        init_args, call = executor._init_args_hst, executor.__call__
        sem = interpreter._ir.MEM_SEMANTIC
        acquires = {sem.ACQUIRE, sem.ACQUIRE_RELEASE}
        releases = {sem.RELEASE, sem.ACQUIRE_RELEASE}

        def create_masked_load(self, ptrs, mask, other, *rest):
            check._access(LOAD, "load", ptrs, mask)
            return load(self, ptrs, mask, other, *rest)

        def create_masked_store(self, ptrs, value, mask, *rest):
            check._access(STORE, "store", ptrs, mask, value)
            return store(self, ptrs, value, mask, *rest)

        def create_atomic_rmw(self, op, ptr, val, mask, sem_, scope):
            name = getattr(op, "name", str(op)).split(".")[-1].lower()
            name = "atomic_" + ("add" if name == "fadd" else name)   # (as tl.atomic_* says)
            check._access(ATOMIC, name, ptr, mask, acquire=sem_ in acquires,
                          release=sem_ in releases)
            return rmw(self, op, ptr, val, mask, sem_, scope)

        def create_atomic_cas(self, ptr, cmp, val, sem_, scope):
            check._access(ATOMIC, "atomic_cas", ptr, None, acquire=sem_ in acquires,
                          release=sem_ in releases)
            return cas(self, ptr, cmp, val, sem_, scope)

        def create_barrier(self):
            if check._launch is not None and check._launch.program is not None:
                check._launch.program.epoch += 1
            return barrier(self)

        def set_grid_dim(self, nx, ny, nz):
            if check._pending_regions is not None:   # (None: a launch not selected)
                check._start_launch(nx * ny * nz)
            return set_dim(self, nx, ny, nz)

        def set_grid_idx(self, x, y, z):
            result = set_idx(self, x, y, z)
            check._start_program((x, y, z))
            return result

        def _init_args_hst(self, args_dev, kwargs):
            args_hst, kwargs_hst = init_args(self, args_dev, kwargs)
            if check.select is None or check.select(self.fn):
                named = list(zip(self.arg_names, args_hst)) + list(kwargs_hst.items())
                check._pending_regions = _regions(named)
            return args_hst, kwargs_hst

        def __call__(self, *args, **kwargs):
            try:
                result = call(self, *args, **kwargs)
            except BaseException:
                check._launch = check._pending_regions = None
                raise
            check._end_launch()
            return result

        for owner, name, new in (
                (builder, "create_masked_load", create_masked_load),
                (builder, "create_masked_store", create_masked_store),
                (builder, "create_atomic_rmw", create_atomic_rmw),
                (builder, "create_atomic_cas", create_atomic_cas),
                (builder, "create_barrier", create_barrier),
                (builder, "set_grid_dim", set_grid_dim),
                (builder, "set_grid_idx", set_grid_idx),
                (executor, "_init_args_hst", _init_args_hst),
                (executor, "__call__", __call__)):
            self._undo.append((owner, name, owner.__dict__[name]))
            setattr(owner, name, new)
        return self

    def __exit__(self, *exc):
        for owner, name, old in reversed(self._undo):
            setattr(owner, name, old)
        self._undo.clear()
        self._launch = None
        return False

    def report(self) -> str:
        return "\n".join(str(r) for r in self.races)

    # -- recording -------------------------------------------------------------

    def _site(self, kind_name):
        frame = sys._getframe(2)
        while frame is not None:
            filename = frame.f_code.co_filename
            if not (filename.startswith(_TRITON_DIR) or filename == _THIS_FILE
                    or filename.endswith(_MENDS_FILE)):
                break
            frame = frame.f_back
        key = ((kind_name, frame.f_code.co_filename, frame.f_lineno) if frame
               else (kind_name, "?", 0))
        site = self._sites.get(key)
        if site is None:
            site = self._sites[key] = len(self._site_list)
            self._site_list.append(key)
        return site

    def _start_launch(self, total):
        regions, self._pending_regions = self._pending_regions, None
        self._launch = _Launch(regions, total)

    def _start_program(self, grid_index):
        launch = self._launch
        if launch is None:
            return
        if launch.program is not None:
            self._end_program()
        launch.program = _Program(len(launch.grid_of))
        launch.grid_of.append(tuple(int(v) for v in grid_index))

    def _access(self, kind, name, ptrs, mask, value=None, acquire=False, release=False):
        launch = self._launch
        if launch is None or launch.program is None:
            return
        program = launch.program
        addresses = np.asarray(ptrs.data)
        shape = addresses.shape
        if mask is None:
            active = np.ones(shape, dtype=bool)
        else:
            m = mask if isinstance(mask, np.ndarray) else mask.data
            active = np.broadcast_to(np.asarray(m, dtype=bool), shape)
        lanes = np.flatnonzero(active)
        at = addresses.reshape(-1)[lanes].astype(np.int64)
        time = len(program.ops) + 1
        site = self._site(name)
        if kind != LOAD and at.size:
            # one record per address: several lanes of one store / atomic count as its first
            unique, first = np.unique(at, return_index=True)
            if kind == STORE and unique.size < at.size:
                self._duplicate_store(value, shape, lanes, at, unique, first, site)
            at, lanes = unique, lanes[first]
        shape_id = self._shapes.setdefault(shape, len(self._shapes))
        program.ops.append((kind, program.epoch, shape_id, site))
        program.addresses.append(at)
        program.lanes.append(lanes.astype(np.int64))
        if kind == ATOMIC:
            launch.synchronize(program, at, time, acquire, release)

    def _duplicate_store(self, value, shape, lanes, at, unique, first, site):
        values = np.broadcast_to(np.asarray(value.data), shape).reshape(-1)[lanes]
        bits = np.ascontiguousarray(values)
        bits = bits.view(f"u{bits.itemsize}") if bits.dtype.kind in "fc" else bits
        inverse = np.searchsorted(unique, at)
        differ = bits != bits[first][inverse]
        if differ.any():
            k = int(np.flatnonzero(differ)[0])
            launch = self._launch
            program = launch.grid_of[launch.program.index]
            where = self._where(site)
            lane_a = Access(self._op(site), program, where, int(lanes[first[inverse[k]]]))
            lane_b = Access(self._op(site), program, where, int(lanes[k]))
            self._add(Race("one store", lane_a, lane_b, launch.describe(int(at[k])),
                           int(np.unique(at[differ]).size)))

    def _where(self, site):
        where = self._wheres.get(site)
        if where is None:
            _, filename, lineno = self._site_list[site]
            where = self._wheres[site] = _site_text(filename, lineno)
        return where

    def _op(self, site):
        return self._site_list[site][0]

    def _add(self, race):
        key = (race.kind, race.first.op, race.first.where, race.second.op, race.second.where)
        for known in self.races:
            if (known.kind, known.first.op, known.first.where, known.second.op,
                    known.second.where) == key:
                known.count += race.count
                return
        self.races.append(race)

    # -- within a program ------------------------------------------------------

    def _end_program(self):
        launch = self._launch
        program, launch.program = launch.program, None
        if not program.addresses:
            return
        ops = np.array(program.ops, dtype=np.int64).reshape(-1, 4)
        sizes = np.array([a.size for a in program.addresses])
        op_index = np.repeat(np.arange(len(ops)), sizes)
        addr = np.concatenate(program.addresses)
        lane = np.concatenate(program.lanes)
        if addr.size == 0:
            return
        order = np.lexsort((op_index, addr))
        addr, lane, op_index = addr[order], lane[order], op_index[order]
        kind, epoch, shape, site = (ops[op_index, c] for c in range(4))
        time = op_index + 1
        n = addr.size
        groups = _Groups(addr)
        idx = np.arange(n)
        is_load, is_store, is_atomic = kind == LOAD, kind == STORE, kind == ATOMIC
        pairs = [(groups.previous(is_store), idx, np.ones(n, bool)),
                 (groups.previous(is_atomic), idx, is_load),
                 (idx, groups.following(is_store), is_load | is_atomic),
                 (idx, groups.following(is_atomic), is_load)]
        grid = launch.grid_of[program.index]
        for a, b, use in pairs:
            use = use & (a >= 0) & (b >= 0)
            a, b = a[use], b[use]
            racing = (op_index[a] != op_index[b]) & (epoch[a] == epoch[b]) & \
                ~((shape[a] == shape[b]) & (lane[a] == lane[b]))
            a, b = a[racing], b[racing]
            for i, j, count in _examples(site[a], site[b], a, b):
                self._add(Race("within a program",
                               Access(self._op(site[i]), grid, self._where(site[i]),
                                      int(lane[i])),
                               Access(self._op(site[j]), grid, self._where(site[j]),
                                      int(lane[j])),
                               launch.describe(int(addr[i])), count))
        self._summarize(program, addr, kind, time, site, groups.starts)

    def _summarize(self, program, addr, kind, time, site, starts):
        """Per address: the program's first access of each kind (with its vector clock)
        and its last, for the checks across programs."""
        launch = self._launch
        n = addr.size
        idx = np.arange(n)
        summary = {"addr": addr[starts],
                   "program": np.full(starts.size, program.index, dtype=np.int64)}
        masks = {"any": np.ones(n, bool), "load": kind == LOAD, "store": kind == STORE,
                 "atomic": kind == ATOMIC}
        changes = np.array(program.clock_changes, dtype=np.int64).reshape(-1, 2)
        for name, selected in masks.items():
            first = np.minimum.reduceat(np.where(selected, idx, n), starts)
            last = np.maximum.reduceat(np.where(selected, idx, -1), starts)
            has = first < n
            firsts, lasts = np.where(has, first, 0), np.where(has, last, 0)
            summary[f"first_{name}"] = np.where(has, time[firsts], _NEVER)
            summary[f"first_{name}_site"] = site[firsts]
            summary[f"last_{name}"] = np.where(has, time[lasts], -1)
            summary[f"last_{name}_site"] = site[lasts]
            # the program's clock at its first access of this kind (the last acquire
            # at or before it)
            at = np.searchsorted(changes[:, 0], summary[f"first_{name}"], side="right") - 1
            summary[f"clock_{name}"] = np.where(at >= 0, changes[np.maximum(at, 0), 1]
                                                if len(changes) else 0, 0)
        launch.summaries.append(summary)

    # -- across programs -------------------------------------------------------

    def _end_launch(self):
        launch = self._launch
        if launch is None:
            return
        if launch.program is not None:
            self._end_program()
        self._launch = None
        self.launches += 1
        if not launch.summaries:
            return
        rows = {k: np.concatenate([s[k] for s in launch.summaries]) for k in launch.summaries[0]}
        order = np.argsort(rows["addr"], kind="stable")   # (program order within an address)
        rows = {k: v[order] for k, v in rows.items()}
        addr = rows["addr"]
        n = addr.size
        idx = np.arange(n)
        groups = _Groups(addr)
        has = {k: rows[f"first_{k}"] != _NEVER for k in ("load", "store", "atomic")}
        clocks = np.stack(launch.clocks)
        # (earlier row, its kind, later row, its kind, rows that take part)
        checks = [(groups.previous(has["store"]), "store", idx, "any", np.ones(n, bool)),
                  (groups.previous(has["atomic"]), "atomic", idx, "load", has["load"]),
                  (idx, "load", groups.following(has["store"]), "store", has["load"]),
                  (idx, "atomic", groups.following(has["store"]), "store", has["atomic"]),
                  (idx, "load", groups.following(has["atomic"]), "atomic", has["load"])]
        for a, kind_a, b, kind_b, use in checks:
            use = use & (a >= 0) & (b >= 0)
            a, b = a[use], b[use]
            time_a = rows[f"last_{kind_a}"][a]
            seen = clocks[rows[f"clock_{kind_b}"][b], rows["program"][a]]
            racing = seen < time_a
            a, b = a[racing], b[racing]
            site_a, site_b = rows[f"last_{kind_a}_site"], rows[f"first_{kind_b}_site"]
            for i, j, count in _examples(site_a[a], site_b[b], a, b):
                self._add(Race(
                    "across programs",
                    Access(self._op(site_a[i]), launch.grid_of[rows["program"][i]],
                           self._where(site_a[i])),
                    Access(self._op(site_b[j]), launch.grid_of[rows["program"][j]],
                           self._where(site_b[j])),
                    launch.describe(int(addr[i])), count))


def _offsets(addresses, base):
    return (addresses.astype(np.uint64) - np.uint64(base)).astype(np.int64)


class _Groups:
    """Runs of equal addresses in a sorted array; per element, the selected element
    before or after it in its run."""

    def __init__(self, addr):
        n = addr.size
        self.starts = np.flatnonzero(np.r_[True, addr[1:] != addr[:-1]])
        lengths = np.diff(np.r_[self.starts, n])
        self.first = np.repeat(self.starts, lengths)
        self.end = np.repeat(np.r_[self.starts[1:], n], lengths)
        self.index = np.arange(n)

    def previous(self, selected):
        """The last selected element before each one in its run, or -1."""
        last = np.maximum.accumulate(np.where(selected, self.index, -1))
        last = np.r_[-1, last[:-1]]
        return np.where(last >= self.first, last, -1)

    def following(self, selected):
        """The next selected element after each one in its run, or -1."""
        n = self.index.size
        nxt = np.minimum.accumulate(np.where(selected, self.index, n)[::-1])[::-1]
        nxt = np.r_[nxt[1:], n]
        return np.where(nxt < self.end, nxt, -1)


def _examples(site_a, site_b, a, b):
    """(a, b, count) of the first racing pair of each pair of sites."""
    if a.size == 0:
        return []
    keys = np.stack([site_a, site_b], axis=1)
    _, first, counts = np.unique(keys, axis=0, return_index=True, return_counts=True)
    return [(int(a[k]), int(b[k]), int(c)) for k, c in zip(first, counts)]

def derived_by_tritonad(fn) -> bool:
    """Whether an interpreted kernel function is a backward tritonad derived (rendered)."""
    code = getattr(fn, "__code__", None)
    return bool(code) and code.co_filename.startswith("<tritonad-rendered")


def _regions(named):
    """[(base, end, name, itemsize, origin)] of the launch's tensors' storages, sorted
    (origin: the address of the first argument's element 0 in that storage)."""
    found = {}
    for name, value in named:
        for tensor in _tensors(value):
            storage = tensor.untyped_storage()
            base = storage.data_ptr()
            if base and base not in found:
                found[base] = (base, base + storage.nbytes(), name, tensor.element_size(),
                               tensor.data_ptr())
    return sorted(found.values())


def _tensors(value):
    if isinstance(value, tuple):
        for v in value:
            yield from _tensors(v)
    elif hasattr(value, "untyped_storage"):
        yield value
    elif hasattr(value, "base") and hasattr(value.base, "untyped_storage"):   # a descriptor
        yield value.base


def _package_dir(module_name):
    import importlib.util
    spec = importlib.util.find_spec(module_name)
    return os.path.dirname(spec.origin) + os.sep if spec and spec.origin else "\0"


_TRITON_DIR = _package_dir("triton")
_MENDS_FILE = os.path.join("tritonad", "_interpreter_mends.py")
