"""Launch plans: a derived backward's launch decided once, then replayed.

Launching a derived backward takes decisions (which compiled variant, partial
buffers or not, their sizes, zero fills, tapes, re-parallelization tables, mask
variants, register caps) that depend only on what the launch depends on: the
arguments' dtypes, shapes, strides and alignment, the integer and float
arguments, the grid, which shadows hold garbage, the device. The first launch
with a given such key runs the deciding path (_partial.launch), which records
what it does as steps: allocations, zero fills, kernel launches with the source
of each argument (the call's tensor of that name, a buffer the plan allocates,
or a constant: integers, tables, placeholders). Later launches with the same
key replay the steps: a lookup, allocations, and each compiled kernel's own
launch (its C launcher, as Triton's JITFunction.run ends, with no launch-hook
metadata where no hook is registered), without Triton's argument binding and
cache lookup.

Replays do no host-to-device copies (tables are made when the plan is), so a
step replayed inside ``torch.cuda.graph`` capture is legal; the stream is the
current one at each launch.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import threading
import types
from typing import Dict, List, Optional

from tritonad import _caches

_PLANS_ATTRIBUTE = "tritonad_launch_plans"
_PLAN_LIMIT = 64  # per backward kernel (a training loop uses a handful of shapes)
_LOCK = threading.Lock()

# The recording of the launch being decided (this context only).
_RECORDING: contextvars.ContextVar = contextvars.ContextVar("tritonad_recording", default=None)

# The plans launches used (made or replayed) while a caller collects them (this
# context only): a caller one level up keeps them to replay without the path
# that chose them (tritonad.autograd's call plans, _call_plan.py).
_USED: contextvars.ContextVar = contextvars.ContextVar("tritonad_used_plans", default=None)


# The recorder of a differentiable launcher's kernel launches (_launcher.py), set
# while its launches are recorded (this context only): a forward launched then is
# the user's kernel as written.
LAUNCHER_RECORDER: contextvars.ContextVar = contextvars.ContextVar("tritonad_recorder",
                                                                  default=None)


def span(t) -> int:
    """Elements from t's first to its last element, gaps included (a shadow is
    addressed with t's strides)."""
    return 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) if t.numel() else 0


def device_of(kwargs):
    """The first tensor among a launch's arguments (None: none)."""
    import torch

    for value in kwargs.values():
        if isinstance(value, torch.Tensor):
            return value
    return None


@functools.lru_cache(maxsize=None)
def placeholder(device, dtype: str):
    """16 elements on `device` for a scratch argument the compiled kernel may not
    use (a tape, a re-parallelization table): the warm-up compile sees them, and
    the launch path replaces them where the kernel does use them
    (_allocate_tape, _regrid.prepare)."""
    import torch
    return torch.empty(16, dtype=getattr(torch, dtype), device=device)


def key_of(kwargs: dict, grid: tuple, extra: tuple) -> Optional[tuple]:
    """What a launch's decisions depend on, or None where an argument is neither
    a tensor nor a hashable value (then the launch is decided each time)."""
    import torch

    tensor = torch.Tensor
    parts: List[tuple] = [grid, extra, tuple(kwargs)]
    for value in kwargs.values():
        if isinstance(value, tensor):
            parts.append((value.dtype, value.device, value.shape, value.stride(),
                          value.data_ptr() & 15))
            if _FINGERPRINT in value.__dict__:  # (a residual buffer: which forward filled it)
                parts.append(value.__dict__[_FINGERPRINT])
        else:
            try:
                hash(value)
            except TypeError:
                return None
            parts.append((type(value), value))
    return tuple(parts)


_FINGERPRINT = "tritonad_fingerprint"


def lookup(jit, key) -> Optional["LaunchPlan"]:
    plans = getattr(jit, _PLANS_ATTRIBUTE, None)
    return None if plans is None or key is None else plans.get(key)


def store(jit, key, plan: "LaunchPlan") -> None:
    if key is None or plan is None:
        return
    with _LOCK:
        plans = getattr(jit, _PLANS_ATTRIBUTE, None)
        if plans is None:
            plans = {}
            setattr(jit, _PLANS_ATTRIBUTE, plans)
        _caches.keep_newest(plans, key, plan, _PLAN_LIMIT)


@contextlib.contextmanager
def collecting_used():
    """Collects, in the list it yields, every plan the launches in this block
    made or replayed; a launch that was not planned adds None."""
    used_plans: list = []
    token = _USED.set(used_plans)
    try:
        yield used_plans
    finally:
        _USED.reset(token)


def used(plan: Optional["LaunchPlan"]) -> None:
    """Tells a collecting caller (collecting_used) which plan a launch used."""
    collected = _USED.get()
    if collected is not None:
        collected.append(plan)


class Recording:
    """The steps of one launch through the deciding path."""

    def __init__(self, kwargs: dict):
        import torch

        # (the call's own tensors, by name: a replay takes the new call's)
        self.call = {n: v for n, v in kwargs.items() if isinstance(v, torch.Tensor)}
        self.steps: List[tuple] = []
        self.allocated: Dict[str, object] = {}
        self.plannable = True

    def source(self, name, value, from_call):
        """Where a replay finds the argument `name` of value `value` (`from_call`:
        parameters that take the call's tensor of another name)."""
        import torch

        if not isinstance(value, torch.Tensor):
            return ("const", value)
        name = from_call.get(name, name)
        if self.call.get(name) is value:
            return ("call", name)
        for role, tensor in self.allocated.items():
            if tensor is value:
                return ("alloc", role)
        for role, tensor in self.allocated.items():  # (a row of a workspace)
            if value._base is tensor and value.dim() + 1 == tensor.dim() and \
                    value.storage_offset() % tensor.stride(0) == 0 and \
                    value.stride() == tensor.stride()[1:]:
                return ("row", role, value.storage_offset() // tensor.stride(0))
        if any(value is t for t in self.call.values()):  # (the call's, under another name)
            self.plannable = False
        # (a tensor the deciding path made, kept by the plan: a table, a placeholder)
        return ("const", value)

    def plan(self, result) -> Optional["LaunchPlan"]:
        """The plan (None where a replay could not repeat this launch); its replays
        return `result`, the compiled kernel the deciding path returned."""
        return LaunchPlan(tuple(self.steps), result) if self.plannable and self.steps else None


def recording() -> Optional[Recording]:
    return _RECORDING.get()


def begin(kwargs):
    recorder = Recording(kwargs)
    return recorder, _RECORDING.set(recorder)


def end(token) -> None:
    _RECORDING.reset(token)


def allocate(role: str, make, shape, dtype, device):
    """A buffer the launch needs (workspace, tape), made again by each replay."""
    tensor = make(shape, dtype=dtype, device=device)
    recorder = _RECORDING.get()
    if recorder is not None:
        recorder.allocated[role] = tensor
        recorder.steps.append(("allocate", role, make, tuple(shape) if not isinstance(
            shape, int) else shape, dtype, device))
    return tensor


def zero(name: str, tensor) -> None:
    """Zero-fills the call's tensor `name`."""
    tensor.zero_()
    recorder = _RECORDING.get()
    if recorder is not None:
        if recorder.call.get(name) is not tensor:
            recorder.plannable = False
        recorder.steps.append(("zero", name))


def note(step: tuple) -> None:
    """A step the deciding path took itself, for replays (see LaunchPlan.run)."""
    recorder = _RECORDING.get()
    if recorder is not None:
        recorder.steps.append(step)


class CompiledLaunch:
    """A compiled kernel's launch on a fixed grid, every parameter of `jit` bound
    by name (from the arguments, else its default) as Triton's JITFunction.run
    binds them after its cache lookup."""

    __slots__ = ("kernel", "grid", "names", "defaults")

    def __init__(self, jit, kernel, grid):
        if hasattr(kernel, "result"):  # (Triton's asynchronous compile, as its run waits)
            kernel = kernel.result()
        parameters = jit.signature.parameters
        self.kernel = kernel
        self.names = tuple(parameters)
        self.defaults = {n: p.default for n, p in parameters.items()}
        self.grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))

    def values(self, arguments) -> list:
        defaults = self.defaults
        return [arguments[n] if n in arguments else defaults[n] for n in self.names]

    def __call__(self, arguments) -> None:
        _run(self.kernel, self.grid, self.values(arguments))


def launch_compiled(jit, kernel, grid, arguments, from_call=None):
    """Launches `kernel`, `jit` compiled for `arguments`, on `grid` (a
    CompiledLaunch); recorded for replays (`from_call`: {parameter: name of the
    call's tensor it takes})."""
    launch = CompiledLaunch(jit, kernel, grid)
    values = launch.values(arguments)
    recorder = _RECORDING.get()
    if recorder is not None:
        sources = tuple(recorder.source(n, v, from_call or {})
                        for n, v in zip(launch.names, values))
        recorder.steps.append(("launch", launch.kernel, launch.grid, sources))
    _run(launch.kernel, launch.grid, values)


def _run(kernel, grid, values):
    """Launches a compiled kernel on `grid` (three extents; none where one is 0)."""
    if not (grid[0] and grid[1] and grid[2]):
        return
    runtime = _triton_runtime()
    enter, leave = runtime.launch_enter_hook, runtime.launch_exit_hook
    current_stream, current_device = _torch_cuda()
    stream = current_stream(current_device())
    try:
        direct = kernel.tritonad_direct_launch
    except AttributeError:
        direct = kernel.tritonad_direct_launch = _direct_launch(kernel)
    if direct is not None and _quiet(enter) and _quiet(leave):
        launch, function, cooperative, pdl, packed = direct
        launch(grid[0], grid[1], grid[2], stream, function, cooperative, pdl, None, None,
               packed, None, None, None, *values)
        return
    metadata = kernel.launch_metadata(grid, stream, *values)
    kernel.run(grid[0], grid[1], grid[2], stream, kernel.function, kernel.packed_metadata,
               metadata, enter, leave, *values)


def _direct_launch(kernel):
    """What the driver's launch of `kernel` takes beyond the grid, stream and
    arguments, where it can be called without Triton's per-launch Python (no
    scratch memory to allocate per launch, no tensor descriptors to unpack: the
    C launcher itself, as Triton's CudaLauncher calls it); None otherwise. With no
    launch hook registered the hook arguments are None, as the C launcher reads
    them (a profiler's hook is honoured: the launch then goes through Triton's
    own path)."""
    launcher = kernel.run
    launch = getattr(launcher, "launch", None)
    if not isinstance(launch, types.BuiltinFunctionType) or \
            getattr(launcher, "global_scratch_size", 1) or \
            getattr(launcher, "profile_scratch_size", 1) or \
            not hasattr(launcher, "launch_cooperative_grid"):
        return None
    return (launch, kernel.function, launcher.launch_cooperative_grid, launcher.launch_pdl,
            kernel.packed_metadata)


def _quiet(hook) -> bool:
    """Whether a launch hook (a HookChain in Triton 3.6, or a function set by
    hand) would do nothing."""
    return hook is None or not getattr(hook, "calls", True)


@functools.lru_cache(maxsize=None)
def _torch_cuda():
    """torch's raw stream of a device and its current device (what Triton's driver
    calls for each launch)."""
    from torch._C import _cuda_getCurrentRawStream, _cuda_getDevice

    return _cuda_getCurrentRawStream, _cuda_getDevice


def current_device() -> int:
    """torch's current CUDA device (its raw getter: the device is initialized, as a
    tensor on it shows)."""
    return _torch_cuda()[1]()


@functools.lru_cache(maxsize=None)
def _triton_runtime():
    from triton import knobs

    return knobs.runtime


def add_scatter_slots(index, values, shadow, groups) -> None:
    """Adds a launch's scatter slots (_scatter.py) into `shadow`: for each of
    its column groups (values begin, end, keys begin, end, lanes per key), key
    (p, c) holds `lanes` + the offset from the shadow's pointer of the first of
    `lanes` consecutive elements (0: none), and values (p, lanes * c + l) their
    contributions. Each element's contributions are summed in a fixed order
    (group, then key, then slot) in fp32 and rounded once: the same bits on
    every run."""
    import torch

    extent = span(shadow)
    sums = None
    for begin, end, index_begin, index_end, lanes in groups:
        sums = slot_sums(index[:, index_begin:index_end], values, begin, end - begin, lanes,
                         extent, sums)
    if sums is None:
        return
    if torch._debug_has_internal_overlap(shadow):
        # (elements that share memory, a broadcast gradient buffer: its memory
        # takes each sum once)
        shadow = shadow.as_strided((extent,), (1,))
    shadow.add_(sums.as_strided(shadow.shape, shadow.stride()).to(shadow.dtype))


def slot_sums(keys, values, begin: int, width: int, lanes: int, extent: int, sums=None):
    """`sums` (zeros where None) plus, per element e in 0..extent-1, the values
    that name it: key (p, c) of `keys` (0: none) covers elements key - lanes
    ... key - 1 (those at 0 or above), with values values[p, begin + lanes * c
    + l]. The keys are sorted, stably (32-bit keys where the elements fit: half
    a 64-bit sort's passes), and one lane per element finds the keys that cover
    it by binary search and adds their values in key order, then slot order:
    no atomics. On the CPU outside Triton's interpreter, the same sums by
    index_put_, which adds in slot order there."""
    import os

    import torch

    if sums is None:
        sums = torch.zeros(extent, dtype=values.dtype, device=values.device)
    per_key = keys.shape[1]
    if keys.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        named = keys.reshape(-1, 1)
        elements = (named - lanes + torch.arange(lanes)).reshape(-1)
        kept = (named > 0).expand(-1, lanes).reshape(-1) & (elements >= 0) & (elements < extent)
        contributions = values[:, begin:begin + width].reshape(-1)
        sums.index_put_((elements[kept],), contributions[kept], accumulate=True)
        return sums
    flat = keys.reshape(-1)
    if extent + lanes < 2 ** 31 - 1:
        flat = flat.to(torch.int32)
    flat, order = torch.sort(flat, stable=True)
    if extent:
        block = 256
        _covered_sums()[(-(-extent // block),)](
            flat, flat.numel(), flat.numel().bit_length() + 1, order, values, values.stride(0),
            begin, per_key, lanes, sums, extent, BLOCK=block)
    return sums


@functools.lru_cache(maxsize=None)
def _covered_sums():
    """The kernel: sums[e] += the values of the sorted keys that cover element e
    (keys e + 1 ... e + lanes: found by binary search), in their order (key k's
    lane e + lanes - k)."""
    import triton
    import triton.language as tl

    @triton.jit
    def covered_sums(keys, count, steps, order, values, row_length, begin, per_key, lanes,
                     sums, n, BLOCK: tl.constexpr):
        element = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        inside = element < n
        # (two binary searches at once, per lane: the first sorted position whose
        # key reaches element + 1, and element + lanes + 1)
        targets = tl.join(element + 1, element + lanes + 1)
        low = tl.zeros_like(targets)
        high = low + count
        for _ in range(0, steps):
            middle = (low + high) // 2
            searching = low < high
            key = tl.load(keys + middle, mask=searching & (middle < count), other=0)
            right = searching & (key < targets)
            low = tl.where(right, middle + 1, low)
            high = tl.where(searching & ~right, middle, high)
        start, stop = tl.split(low)
        covered = tl.where(inside, stop - start, 0)
        total = tl.load(sums + element, mask=inside, other=0.0)
        for i in range(0, tl.max(covered, axis=0)):
            taken = i < covered
            key = tl.load(keys + start + i, mask=taken, other=1).to(tl.int64)
            slot = tl.load(order + start + i, mask=taken, other=0)
            program = slot // per_key
            value = values + program * row_length + begin + (slot - program * per_key) * lanes
            total += tl.load(value + (element + lanes - key), mask=taken, other=0.0)
        tl.store(sums + element, total, mask=inside)

    return covered_sums


class LaunchPlan:
    """Steps replayed for each launch with the same key:
    ("allocate", role, make, shape, dtype, device), ("zero", name),
    ("launch", compiled kernel, grid, sources), ("mark", names),
    ("sum", role, group, name, span, overwrite),
    ("scatter", index role, values role, name, column groups); a source is
    ("call", name), ("alloc", role), ("row", role, index) or ("const", value)."""

    __slots__ = ("steps", "result", "checked_by_layout")

    def __init__(self, steps, result):
        self.steps, self.result = steps, result
        self.checked_by_layout = False  # (the arguments' check needs no repeat)

    def run(self, kwargs, mark_initialized):
        allocated = {}
        for step in self.steps:
            kind = step[0]
            if kind == "launch":
                _, kernel, grid, sources = step
                values = []
                for source in sources:
                    where = source[0]
                    if where == "const":
                        values.append(source[1])
                    elif where == "call":
                        values.append(kwargs[source[1]])
                    elif where == "alloc":
                        values.append(allocated[source[1]])
                    else:
                        values.append(allocated[source[1]][source[2]])
                _run(kernel, grid, values)
            elif kind == "allocate":
                _, role, make, shape, dtype, device = step
                allocated[role] = make(shape, dtype=dtype, device=device)
            elif kind == "zero":
                kwargs[step[1]].zero_()
            elif kind == "mark":
                mark_initialized(step[1], kwargs)
            elif kind == "sum":
                _, role, group, name, span, overwrite = step
                shadow = kwargs[name]
                summed = allocated[role][group, :, :span].sum(dim=0).as_strided(
                    shadow.shape, shadow.stride())
                shadow.copy_(summed) if overwrite else shadow.add_(summed)
            elif kind == "scatter":
                _, index, values, name, groups = step
                add_scatter_slots(allocated[index], allocated[values], kwargs[name], groups)
        return self.result
