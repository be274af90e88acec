"""Re-parallelized gradients: how a derived backward is launched when some of
its gradients get programs of their own (cpp/lib/AutoDiff/Schedule/Regrid.cpp).

A matmul program (m, n) at iteration k adds dC[m, n] B[k, n]^T to dA[m, k]:
every program of row m adds to the same tile. The derived kernel instead has
extra programs, one per (tile, iteration), that loop over the forward programs
sharing the tile, sum their contributions in registers and add the sum once.
Which forward programs share a tile is what the compiled kernel's metadata
records, per re-parallelized shadow, as data: a *key*, integer expressions of
the program ids, the scalar arguments and the grid, that the tile's addresses
depend on the program through. This module evaluates the key for every
program of the forward's grid (vectorized, on the host), groups the programs
by it (each group in increasing program order: a fixed summation order),
checks whether the values each member's contribution takes from its program
are affine in its index within the group (then the kernel computes them, and
the loads of its loop are affine in the loop's index, as in a hand-written
one), and
passes the grouping to the kernel as ``tritonad_regrid`` (its words declared in
cpp/include/tritonad/LaunchContract.h, the arrays in Coverage.h, ``Regrid``). The launch then has
``mainPrograms + sum(groups * trips)`` programs along axis 0.

Accumulations that share their members (attention's dK and dV: the same head,
the same key block) are one part: the first record leads and has the
programs, the others follow it with none. Where the loop's trip count varies by
program (a causal loop up to the diagonal), each group's members are ordered
by decreasing trip count and the table counts, per (group, tile), the members
that reach the tile: its program loops over those only. A loop may also start
where the program's key says (a loop over the program's own diagonal block):
its members share the start.

An accumulation outside the loop whose contribution is a sum along an axis
of a value each forward program computes (a linear layer's bias gradient,
db[n] = sum_m G[m, n]), at addresses keyed by the values of a part's key, is a
*reduction member* of that part: one more program per group (the group's
last) sums it over the group's members and writes it once.

A shadow that parts of two loops add into (attention written as an off-band
and a diagonal loop) is summed by each in a launch of its own, in the loops'
order (a *phase* per part): each launch has one writer per shadow, and the
sums land in a fixed order.

Tables are cached by the arguments the expressions read and the grid, so a
training loop pays for the grouping once per shape.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

from tritonad import _caches, _contract, _coverage

# (the table's words as the core reads them: LaunchContract.h, kRegridHeader / kRegridPart)
_HEADER_WORDS = _contract.table_words("regrid", "header")
_PART_WORDS = _contract.table_words("regrid", "part")
_HEADER, _PART_HEADER = len(_HEADER_WORDS), len(_PART_WORDS)
_MAIN, _PARTS = _HEADER_WORDS.index("main_programs"), _HEADER_WORDS.index("parts")
_PROGRAMS = _PART_WORDS.index("programs")
_METADATA = _contract.metadata_key("regrid")
_TABLE = _contract.declared("tritonad_regrid")
# (the record's fields: LaunchContract.h, kRegridRecord and kRegridPartRecord)
_RUNS_MAIN, _DETERMINISTIC, _PART_RECORDS = _contract.fields("regrid", "main", "deterministic",
                                                             "parts")
(_SHADOW, _KEY, _LOWER, _UPPER, _STEP, _FRONTIER, _AFFINE, _COARSENING, _COVERAGE, _KEY_DIGITS,
 _CONDITION_KEYS, _STORE_ONLY, _TRIPS_VARY, _LOWER_VARIES, _PHASE, _ADDRESS_KEYS, _LEADER,
 _REDUCTION) = _contract.fields(
    "regrid_part", "shadow", "key", "lower", "upper", "step", "frontier", "affine", "coarsening",
    "coverage", "key_digits", "condition_keys", "store_only", "trips_vary", "lower_varies",
    "phase", "address_keys", "leader", "reduction")
_CACHE: Dict[tuple, tuple] = {}
_CACHE_LIMIT = 256


def per_program(expression, arguments, grid, ids):
    """The value of a recorded expression for every program: `ids` are the
    programs' ids along axes 0..2 (int64 tensors); an int where the expression
    does not depend on them."""
    return _coverage.evaluate(expression, arguments, grid, ids)


def reads_slot(expression) -> bool:
    """Whether a recorded expression reads the program's scratch slot."""
    return expression[0] == "slot" or (expression[0] not in _coverage.LEAVES and
                                       any(reads_slot(e) for e in expression[1:]))


def _ungroupable(part, error) -> RuntimeError:
    return RuntimeError(f"tritonad: cannot group the programs that add to {part[_SHADOW]} "
                        f"with this launch's arguments ({error})")


def record_of(kernel) -> Optional[dict]:
    """The compiled kernel's re-parallelization record, or None."""
    recorded = getattr(getattr(kernel, "metadata", None), _METADATA, None) or {}
    for record in recorded.values():
        if record:
            return record
    return None


def _affine(values, members, starts):
    """(bases, deltas) where, in every group, the j-th member's values (one
    column each) are base + j * delta; None otherwise."""
    import torch

    if values.shape[1] == 0:
        return torch.zeros(len(starts) - 1, 0, dtype=torch.int64), []
    ordered = values[members]
    counts = starts[1:] - starts[:-1]
    group_of = torch.repeat_interleave(torch.arange(len(counts)), counts)
    index = torch.arange(len(members)) - starts[:-1][group_of]
    bases = ordered[starts[:-1]]
    pairs = counts >= 2
    if bool(pairs.any()):
        seconds = ordered[starts[:-1][pairs] + 1] - bases[pairs]
        deltas = seconds[0]
        if not bool((seconds == deltas).all()):
            return None
    else:
        deltas = torch.zeros(values.shape[1], dtype=torch.int64)
    if not bool((ordered == bases[group_of] + index[:, None] * deltas).all()):
        return None
    return bases, deltas.tolist()


def _reaches_each_once(part, keys, arguments, grid) -> bool:
    """Whether the part's writes reach every element of its shadow exactly once
    at this launch: the groups' key values, per key used by the addresses,
    must be 0, s, 2s, ... (one digit of the offsets, spacing s) in every
    combination, and the digits then enumerate the tensor (_coverage.covers)."""
    import torch

    coverage = part.get(_COVERAGE)
    tensor = arguments.get(part[_SHADOW])
    if coverage is None or not isinstance(tensor, torch.Tensor):
        return False
    alive = torch.ones(len(keys), dtype=torch.bool)
    for k in part[_CONDITION_KEYS]:
        alive &= keys[:, k] != 0
    keys = keys[alive]
    if len(keys) == 0:
        return False  # (no group writes: nothing to prove)
    digits = [tuple(d) for d in coverage[_coverage.DIGITS]]
    clamps, wraps = ([([[int(i), int(k)] for i, k in terms], bound) for terms, bound in listed]
                     for listed in (coverage[_coverage.CLAMPS],
                                    coverage.get(_coverage.WRAPS, ())))
    combinations = 1
    for k, digit in enumerate(part[_KEY_DIGITS]):
        values = torch.unique(keys[:, k])
        if digit < 0:
            if len(values) > 1:
                return False  # (groups apart in a key the addresses ignore write alike)
            continue
        spacing = int(values[1] - values[0]) if len(values) > 1 else 1
        if int(values[0]) != 0 or spacing <= 0 or \
                not torch.equal(values, torch.arange(len(values)) * spacing):
            return False
        combinations *= len(values)
        digits[digit] = (("mul", digits[digit][0], ("const", spacing)), ("const", len(values)))
        for terms, _ in (*clamps, *wraps):
            for term in terms:
                if term[0] == digit:
                    term[1] *= spacing
    if combinations != len(keys):
        return False
    # Offsets wrapped by a remainder (`(pid_m * BLOCK_M + arange) % M`, taken
    # as its dividend): only where no index tuple reaches the bound, or where
    # the mask leaves out every lane that does (a clamp of the same offsets
    # by the same bound: the lanes whose contributions are zero, Regrid.cpp's
    # dropZeroLanes).
    for terms, bound in wraps:
        if any(clamp_terms == terms and clamp_bound == bound
               for clamp_terms, clamp_bound in clamps):
            continue
        largest = sum(k * (_coverage.evaluate(digits[i][1], arguments, grid) - 1)
                      for i, k in terms)
        if largest >= _coverage.evaluate(bound, arguments, grid):
            return False
    record = {_coverage.DIGITS: digits, _coverage.CLAMPS: clamps,
              _coverage.CONDITION: ("const", 1)}
    return _coverage.covers(record, tensor, arguments, grid)


def _members(inverse, groups, trips, affine_values, want_affine):
    """(members, starts, affine) of a grouping: each group's programs in
    increasing order, or where `trips` (per program) is given, by decreasing
    trip count, ties in increasing or decreasing order, whichever keeps the
    frontier values affine in the member's index (a causal attention's query
    blocks, longest first, are then affine too)."""
    import torch

    programs = len(inverse)
    starts = torch.zeros(groups + 1, dtype=torch.int64)
    starts[1:] = torch.cumsum(torch.bincount(inverse, minlength=groups), 0)
    if trips is None:
        orders = [torch.argsort(inverse, stable=True)]
    else:
        ids = torch.arange(programs, dtype=torch.int64)
        most = int(trips.max()) + 1 if programs else 1
        orders = [torch.argsort((inverse * (most + 1) + (most - trips)) * programs + tie)
                  for tie in (ids, programs - 1 - ids)]
    for members in orders:
        affine = _affine(affine_values, members, starts) if want_affine and groups else None
        if affine is not None or members is orders[-1]:
            return members, starts, affine


def _reach_counts(inverse, groups, trips, coarsening):
    """Per (group, tile): the members whose trips reach the tile's first
    iteration (groups x tiles, int64)."""
    import torch

    tiles_each = -(-trips // coarsening)
    tiles = int(tiles_each.max()) if len(trips) else 0
    histogram = torch.zeros(groups, tiles + 1, dtype=torch.int64)
    histogram.index_put_((inverse, tiles_each), torch.ones_like(inverse), accumulate=True)
    # counts[:, t] = members with more than t tiles
    beyond = histogram.flip(1).cumsum(1).flip(1)
    return beyond[:, 1:]


def _column(values, programs):
    import torch

    return torch.as_tensor(values, dtype=torch.int64).expand(programs)


def _grouping(part, arguments, grid, ids, programs, deterministic=False):
    """A leading part's trips and groups at this launch: (trips per program,
    or None where they do not vary, the most trips, the unique keys, each
    program's group). `deterministic`: a loop starting where its key says
    must have its groups start apart (_check_starts_apart)."""
    import torch

    try:
        step = _coverage.evaluate(part[_STEP], arguments, grid)
        # (where trips vary, the bounds per program; the lower bound, where it
        # varies, the same for a group's members: a function of the key)
        lower = _column(per_program(part[_LOWER], arguments, grid, ids), programs) \
            if part.get(_LOWER_VARIES) else _coverage.evaluate(part[_LOWER], arguments, grid)
        upper = _column(per_program(part[_UPPER], arguments, grid, ids), programs) \
            if part.get(_TRIPS_VARY) else _coverage.evaluate(part[_UPPER], arguments, grid)
        key = [_column(per_program(k, arguments, grid, ids), programs) for k in part[_KEY]]
    except (KeyError, TypeError, ZeroDivisionError) as error:
        raise _ungroupable(part, error) from None
    if step <= 0:
        raise RuntimeError(f"tritonad: the loop adding to {part[_SHADOW]} has step {step}")
    if part.get(_TRIPS_VARY):
        trips_each = torch.clamp(-(-(upper - lower) // step), min=0)
        trips = int(trips_each.max()) if programs else 0
    else:
        trips_each, trips = None, max(0, -(-(upper - lower) // step))
    keys = torch.stack(key, dim=1) if key else torch.zeros(programs, 0, dtype=torch.int64)
    if programs and key:
        unique, inverse = torch.unique(keys, dim=0, return_inverse=True)
    else:
        unique = keys[:1]
        inverse = torch.zeros(programs, dtype=torch.int64)
    if deterministic and part.get(_LOWER_VARIES):  # (trips then vary too)
        _check_starts_apart(part, lower, step, trips_each, unique, inverse)
    return trips_each, trips, unique, inverse


def _check_starts_apart(part, lower, step, trips_each, unique, inverse):
    """Deterministic mode, a part whose loop starts where its key says (a
    diagonal loop; `lower` and `trips_each` per program): groups with the same
    address keys must start far enough apart that no two sum the same
    iteration (else two of its programs would add into one element, in either
    order). Raises a RuntimeError naming the shadow where they do not (a
    sliding window's overlapping ranges)."""
    import torch

    if not len(unique):
        return
    groups = len(unique)
    starts = torch.zeros(groups, dtype=torch.int64).scatter_(0, inverse, lower)
    ends = starts + torch.zeros(groups, dtype=torch.int64).scatter_reduce_(
        0, inverse, trips_each, "amax", include_self=False) * step
    address = unique[:, :int(part.get(_ADDRESS_KEYS, 0))]
    _, bucket = torch.unique(address, dim=0, return_inverse=True) if address.shape[1] else \
        (None, torch.zeros(groups, dtype=torch.int64))
    order = torch.argsort(bucket * (int(ends.max()) - int(starts.min()) + 1) +
                          (starts - int(starts.min())))
    same = bucket[order][1:] == bucket[order][:-1]
    if bool((same & (starts[order][1:] < ends[order][:-1])).any()):
        raise RuntimeError(
            f"tritonad: deterministic mode: the programs adding into {part[_SHADOW]} start "
            f"their loop at places whose ranges overlap at this launch, so two would add into "
            f"one element in either order; mode='auto' adds them with atomics")


def _slot_orders(record, groupings, programs):
    """The orders of the programs' staged values in scratch to try: program
    order, and, where the parts' frontiers read the slot, the order of their
    groups (the first part's group major, the program id last): with a grouped
    program order (GROUP_M), a matmul's dB members (one column of tiles) are
    not evenly spaced in program order, but they are in the order of (dA's
    group, dB's group)."""
    import torch

    linear = torch.arange(programs, dtype=torch.int64)
    orders = [linear]
    if programs and any(reads_slot(value) for part in record[_PART_RECORDS]
                        for value in part.get(_FRONTIER, [])):
        key = torch.zeros(programs, dtype=torch.int64)
        for _, _, unique, inverse in groupings.values():
            key = key * len(unique) + inverse
        rank = torch.empty_like(linear)
        rank[torch.argsort(key * programs + linear)] = linear
        orders.append(rank)
    return orders


def _table(record, arguments, grid) -> Tuple["torch.Tensor", int, list]:
    """(the int64 words of tritonad_regrid, the number of programs to launch,
    the shadows the launch overwrites whole)."""
    import torch

    gx, gy, gz = (list(grid) + [1, 1, 1])[:3]
    programs = gx * gy * gz
    ids = _coverage.program_ids(grid)
    parts = record[_PART_RECORDS]
    groupings = {index: _grouping(part, arguments, grid, ids, programs,
                                  bool(record.get(_DETERMINISTIC)))
                 for index, part in enumerate(parts) if part.get(_LEADER, -1) < 0}

    # The slot order that keeps the most parts' members affine (the first of
    # equals): each group's members, where trips vary by decreasing trip count.
    best = None
    wanted = sum(bool(parts[index].get(_AFFINE)) for index in groupings)
    for slots in _slot_orders(record, groupings, programs):
        if best is not None and best[0] == wanted:
            break
        summed = {}
        for index, (trips_each, _, unique, inverse) in groupings.items():
            part = parts[index]
            try:
                frontier = [_column(per_program(v, arguments, grid, (*ids, slots)), programs)
                            for v in part.get(_FRONTIER, [])]
            except (KeyError, TypeError, ZeroDivisionError) as error:
                raise _ungroupable(part, error) from None
            values = torch.stack(frontier, dim=1) if frontier else \
                torch.zeros(programs, 0, dtype=torch.int64)
            summed[index] = _members(inverse, len(unique), trips_each, values,
                                     bool(part.get(_AFFINE)))
        affine = sum(members[2] is not None for members in summed.values())
        if best is None or affine > best[0]:
            best = (affine, slots, summed)
    _, slots, summed = best

    header = dict(main_programs=programs if record[_RUNS_MAIN] else 0, grid_x=gx, grid_y=gy,
                  grid_z=gz, parts=len(parts), slots_at=0)
    part_headers, arrays, stored = [], [], []
    offset = _HEADER + _PART_HEADER * len(parts)
    total = header["main_programs"]

    def place(array):
        nonlocal offset
        at = offset
        arrays.append(array.reshape(-1))
        offset += arrays[-1].numel()
        return at

    header["slots_at"] = place(slots)
    leaders = {}
    for index, part in enumerate(parts):
        leader = part.get(_LEADER, -1)
        if leader >= 0:
            # (summed by its leader's programs, from the same members: only
            # whether its own writes may be plain is its own)
            headers, unique = leaders[leader]
            plain = _reaches_each_once(part, unique, arguments, grid)
            if plain and part.get(_STORE_ONLY):
                stored.append(part[_SHADOW])
            # (its header: the leader's, with no programs and its own plain word)
            part_headers += _contract.filled("regrid", "part",
                                             {**headers, "programs": 0, "plain": int(plain)})
            continue
        trips_each, trips, unique, inverse = groupings[index]
        members, starts, affine = summed[index]
        groups = len(unique)
        coarsening = int(part.get(_COARSENING, 1))
        bases, deltas = affine if affine is not None else \
            (torch.zeros(groups, 0, dtype=torch.int64), [])
        at = [place(members), place(starts), place(unique), place(bases),
              place(torch.tensor(deltas, dtype=torch.int64))]
        counts_at = place(_reach_counts(inverse, groups, trips_each, coarsening)) \
            if trips_each is not None else 0
        # (a part with reduction members has one more program per group,
        # its last, which sums them: Regrid.cpp's emitReductions; a part of
        # reductions alone has that program only)
        reductions = any(p.get(_LEADER, -1) == index and p.get(_REDUCTION) for p in parts)
        programs_of_part = groups if part.get(_REDUCTION) else \
            groups * (-(-trips // coarsening) + int(reductions))
        plain = _reaches_each_once(part, unique, arguments, grid)
        if plain and part.get(_STORE_ONLY):
            stored.append(part[_SHADOW])
        headers = dict(programs=programs_of_part, groups=groups, trips=trips,
                       members_at=at[0], starts_at=at[1], keys_at=at[2],
                       affine=int(affine is not None), bases_at=at[3], deltas_at=at[4],
                       plain=int(plain), counts_at=counts_at)
        leaders[index] = (headers, unique)
        part_headers += _contract.filled("regrid", "part", headers)
        total += programs_of_part
    words = torch.cat([torch.tensor(_contract.filled("regrid", "header", header) + part_headers,
                                    dtype=getattr(torch, _contract.table_dtype("regrid"))),
                       *arrays])
    if total >= 2**31 or offset >= 2**31:
        raise RuntimeError("tritonad: the re-parallelized launch needs more than 2**31 programs")
    return words, total, stored


def _expressions(record):
    """Every expression of a regrid record, for the arguments they read."""
    for part in record[_PART_RECORDS]:
        coverage = part.get(_COVERAGE) or {_coverage.DIGITS: [], _coverage.CLAMPS: []}
        yield from (*part[_KEY], *part.get(_FRONTIER, []), part[_LOWER], part[_UPPER],
                    part[_STEP], *(e for digit in coverage[_coverage.DIGITS] for e in digit),
                    *(bound for _, bound in (*coverage[_coverage.CLAMPS],
                                             *coverage.get(_coverage.WRAPS, ()))))


def prepare(kernel, kwargs, grid: Sequence[int]):
    """For a kernel with re-parallelized shadows: returns (the launches, each
    (grid, one axis; table for tritonad_regrid; 'main' or 'parts', the
    programs it runs), in order; the shadows the launch overwrites whole,
    which need no zero fill); None for any other kernel (launched on the
    forward's grid). The forward's programs (where they do anything: they may
    stage values the parts read) run first, then the parts, a launch per
    phase, whose tables say there are no forward programs."""
    import torch

    record = record_of(kernel)
    if record is None:
        return None
    placeholder = kwargs[_TABLE]
    text, names = _coverage.described(record, lambda: _expressions(record))
    values = tuple((n, kwargs.get(n)) for n in names)
    layouts = tuple((tuple(t.shape), tuple(t.stride())) if isinstance(t, torch.Tensor) else None
                    for t in (kwargs.get(part[_SHADOW]) for part in record[_PART_RECORDS]))
    key = (text, tuple(int(g) for g in grid), values, layouts, str(placeholder.device))
    cached = _CACHE.get(key)
    if cached is None:
        words, total, stored = _table(record, kwargs, tuple(int(g) for g in grid))
        main = int(words[_MAIN])  # (read on the host, before the copy)
        launches = [((main,), words.to(placeholder.device), "main")]
        # A launch per phase: parts adding into a shadow that a part of an
        # earlier phase adds into run after it (their tables give the other
        # phases' parts no programs).
        phases = [int(part.get(_PHASE, 0)) for part in record[_PART_RECORDS]]
        for phase in sorted(set(phases)):
            only = words.clone()
            only[_MAIN] = 0
            for index, of in enumerate(phases):
                if of != phase:
                    only[_HEADER + _PART_HEADER * index + _PROGRAMS] = 0
            first = _HEADER + _PROGRAMS
            programs = int(only[first:first + _PART_HEADER * len(phases):_PART_HEADER].sum())
            launches.append(((programs,), only.to(placeholder.device), "parts"))
        cached = (tuple(launches), stored)
        _caches.keep_newest(_CACHE, key, cached, _CACHE_LIMIT)
    global last_table
    last_table = cached[0][0][1]  # (the whole table: its header counts the forward programs)
    return cached


last_table = None  # the table of the latest re-parallelized launch (for describe)


def describe(words) -> list:
    """Per part of a table: {'programs', 'groups', 'trips', 'affine', 'plain'}
    (how the part sums its groups: computed member values, or each member's id
    read; whether it writes without atomics); [] for no table (the last launch
    kept the forward's schedule)."""
    if words is None:
        return []
    parts = int(words[_PARTS])
    words = [int(w) for w in words[:_HEADER + _PART_HEADER * parts]]
    headers = (dict(zip(_PART_WORDS, words[_HEADER + _PART_HEADER * i:
                                           _HEADER + _PART_HEADER * (i + 1)]))
               for i in range(parts))
    return [dict(programs=h["programs"], groups=h["groups"], trips=h["trips"],
                 affine=bool(h["affine"]), plain=bool(h["plain"])) for h in headers]
