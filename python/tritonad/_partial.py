"""Partial buffers: how a derived backward is launched when every program of the
forward adds to one gradient (a weight shared by all rows).

The derived kernel then runs as a grid-stride loop: program p of the backward
handles the forward's programs p, p + G, p + 2G, ... (G programs launched
instead of the forward's P), sums their contributions to each such gradient in
registers, and writes the sum into its own slot of a workspace. After the
kernel the G slots of each gradient are summed (in a fixed order) into its
shadow: no atomics, bitwise reproducible. The derived kernel has three
workspace parameters (WORKSPACE_PARAMS); whether it uses them is decided when
it is derived, and read back from the compiled kernel's metadata.

The fourth, `tritonad_tape`, is scratch memory for a loop whose carried state
the backward keeps per iteration (a tape, see cpp/lib/AutoDiff/Rules/ScfRules.cpp):
the compiled kernel's metadata says how many bytes per iteration and how many
iterations (an expression of the arguments); the launch path allocates that
much for each program of the launch, or, where that exceeds the budget, keeps
only every k-th iteration's state (`tritonad_tape_every` = k, the smallest that
fits; the reverse replays the iterations in between).

The sixth, `tritonad_regrid`, is the grouping of the forward's programs for
gradients re-parallelized into programs of their own (see _regrid.py); such a
kernel is launched on a grid of its own, in two launches: the forward's
programs, then the parts, each with a kernel compiled for its own programs
(`tritonad_main_only`, `tritonad_parts_only`).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import functools
import warnings

import triton
import triton.language as tl

from tritonad import (_contract, _coverage, _launch_plan, _masks, _order, _regrid,
                      _residuals, _scatter, _tuning)

# The hidden parameters the launch path fills and their Triton types (the
# workspace holds fp32 slots), as the core declares them (_contract.py); the
# residual buffer is tritonad.autograd's.
WORKSPACE_TYPES = {n: t for n, t in _contract.HIDDEN_TYPES.items() if n != _residuals.RESIDUALS}
WORKSPACE_PARAMS = tuple(WORKSPACE_TYPES)
HIDDEN_INTEGERS = tuple(n for n, t in WORKSPACE_TYPES.items() if not t.startswith("*"))
# Passed as 0 or 1: Triton compiles an int argument equal to 1 as a constant,
# absent from the kernel's signature, so a kernel compiled with one of them 1
# runs only the forward's programs or only the re-parallelized parts (the
# core is told which: programs_of), or has no masks that the launch's
# arguments make always true (_masks.py).
_MAIN_ONLY, _PARTS_ONLY = (_contract.declared(n) for n in ("tritonad_main_only",
                                                           "tritonad_parts_only"))
PROGRAM_SELECTORS = {_MAIN_ONLY: "main", _PARTS_ONLY: "parts"}
# (the compiled kernel's metadata keys of the backward record's fields)
_PARTIAL_KEY, _SLOT_AXES_KEY, _REQUIREMENTS_KEY, _TAPES_KEY, _COVERAGE_KEY = map(
    _contract.metadata_key, ("partial", "partial_slots", "requirements", "tapes", "coverage"))
_WORKSPACE, _SLOT, _PROGRAMS, _REGRID, _TAPE, _TAPE_EVERY = (_contract.declared(n) for n in (
    "tritonad_workspace", "tritonad_slot", "tritonad_programs", "tritonad_regrid", "tritonad_tape",
    "tritonad_tape_every"))
SPECIALIZED_INTEGERS = _contract.passed_as("selector")
_PROGRAMS_PER_SM = 2
# (the interpreter's grid-stride programs: few, so each handles several of the
# forward's, and an odd count, so they handle different numbers)
_INTERPRETED_WORKERS = 3
_SUM_ROWS, _SUM_COLS = 64, 32  # (many narrow column blocks: one program per 32 columns)


@triton.jit
def _add_group_sum(slots_ptr, out_ptr, programs, slot, span,
                   ROWS: tl.constexpr, COLS: tl.constexpr, OVERWRITE: tl.constexpr):
    # out[c] += sum_p slots[p, c] (= with OVERWRITE, for an uninitialized `out`)
    # for a contiguous `out` of `span` elements: the programs' slots are summed
    # in a fixed order, then rounded once.
    cols = tl.program_id(0) * COLS + tl.arange(0, COLS)
    acc = tl.zeros([ROWS, COLS], dtype=slots_ptr.dtype.element_ty)
    for p0 in range(0, programs, ROWS):
        rows = p0 + tl.arange(0, ROWS)
        mask = (rows[:, None] < programs) & (cols[None, :] < span)
        acc += tl.load(slots_ptr + rows[:, None].to(tl.int64) * slot + cols[None, :], mask=mask,
                       other=0.0)
    total = tl.sum(acc, axis=0)
    if not OVERWRITE:
        total += tl.load(out_ptr + cols, mask=cols < span, other=0.0).to(total.dtype)
    tl.store(out_ptr + cols, total.to(out_ptr.dtype.element_ty), mask=cols < span)


@triton.jit
def _add_slot_sums(slots_ptr, out0, out1, out2, out3, group0, group1, group2, group3,
                   span0, span1, span2, span3, programs, slot,
                   ROWS: tl.constexpr, COLS: tl.constexpr, GROUPS: tl.constexpr,
                   OVERWRITE0: tl.constexpr, OVERWRITE1: tl.constexpr,
                   OVERWRITE2: tl.constexpr, OVERWRITE3: tl.constexpr):
    # Up to four partial buffers' slots summed in one launch (axis 1: which);
    # group<i>: where buffer i's slots start in the workspace, in groups of
    # programs * slot words.
    which = tl.program_id(1)
    group_words = programs.to(tl.int64) * slot
    if which == 0:
        _add_group_sum(slots_ptr + group0 * group_words, out0, programs, slot, span0,
                       ROWS, COLS, OVERWRITE0)
    if GROUPS > 1:
        if which == 1:
            _add_group_sum(slots_ptr + group1 * group_words, out1, programs, slot, span1,
                           ROWS, COLS, OVERWRITE1)
    if GROUPS > 2:
        if which == 2:
            _add_group_sum(slots_ptr + group2 * group_words, out2, programs, slot, span2,
                           ROWS, COLS, OVERWRITE2)
    if GROUPS > 3:
        if which == 3:
            _add_group_sum(slots_ptr + group3 * group_words, out3, programs, slot, span3,
                           ROWS, COLS, OVERWRITE3)


_SUMS_PER_LAUNCH = 4


def _sum_slots(workspace, partial, targets, overwrite, programs, slot):
    """Sums each partial buffer's `programs` slots into its shadow: the contiguous
    ones by _add_slot_sums, up to four per launch; others by torch (recorded as
    "sum" steps)."""
    contiguous = []
    for group, (name, shadow) in enumerate(zip(partial, targets)):
        if shadow.is_contiguous():
            contiguous.append((group, name, shadow))
            continue
        span = _span(shadow)
        _launch_plan.note(("sum", "workspace", group, name, span, name in overwrite))
        summed = workspace[group, :, :span].sum(dim=0).as_strided(shadow.shape, shadow.stride())
        shadow.copy_(summed) if name in overwrite else shadow.add_(summed)
    for first in range(0, len(contiguous), _SUMS_PER_LAUNCH):
        chunk = contiguous[first:first + _SUMS_PER_LAUNCH]
        spans = [_span(shadow) for _, _, shadow in chunk]
        arguments = dict(slots_ptr=workspace, programs=programs, slot=slot,
                         ROWS=_SUM_ROWS, COLS=_SUM_COLS, GROUPS=len(chunk))
        from_call = {}
        for i in range(_SUMS_PER_LAUNCH):
            group, name, shadow = chunk[i] if i < len(chunk) else (0, None, None)
            arguments.update({f"out{i}": shadow, f"group{i}": group,
                              f"span{i}": spans[i] if shadow is not None else 0,
                              f"OVERWRITE{i}": name in overwrite})
            if name is not None:
                from_call[f"out{i}"] = name
        _launch_now(_add_slot_sums.run, (triton.cdiv(max(spans), _SUM_COLS), len(chunk)),
                    arguments, from_call=from_call)


@functools.lru_cache(maxsize=None)
def _workers(device_index: int) -> int:
    import torch

    return _PROGRAMS_PER_SM * torch.cuda.get_device_properties(device_index).multi_processor_count


@functools.lru_cache(maxsize=None)
def _register_file(device_index: int) -> int:
    return triton.runtime.driver.active.utils.get_device_properties(device_index)["max_num_regs"]


_span = _launch_plan.span
_device_of = _launch_plan.device_of
_placeholder = _launch_plan.placeholder


# Shadow tensors a caller allocated uninitialized (``uninitialized``), by id():
# every launch zero-fills each one first unless the backward's stores reach all
# of it (so an autotuner's trials, which restore the shadows, see the same).
_UNINITIALIZED: contextvars.ContextVar = contextvars.ContextVar("tritonad_uninitialized",
                                                               default={})


@contextlib.contextmanager
def uninitialized(tensors):
    """Within this block, launches of derived backward kernels treat `tensors`
    (shadows allocated with torch.empty, each passed to one launch) as holding
    garbage: the launch fills one with zeros unless the kernel stores every
    element of it (coverage checked with the launch's arguments and grid), and
    stores a partial-buffer sum into it instead of adding. A tensor no launch
    reached is zero-filled on exit. Every tensor holds its gradient after."""
    launched = {id(t): [False] for t in tensors}
    token = _UNINITIALIZED.set({**_UNINITIALIZED.get(), **launched})
    try:
        yield
    finally:
        _UNINITIALIZED.reset(token)
        for t in tensors:
            if not launched[id(t)][0]:
                t.zero_()


def launch(run, grid, warmup, kwargs, shadows, use_partial: bool, tape=None, tune=False,
           check=lambda: False):
    """Runs the backward (`run` is JITFunction.run) with the workspace parameters
    filled in; with partial buffers, launches G programs and sums the slots into
    the shadows afterwards. `tape`: True keeps loop tapes whatever they take,
    False never (loops are replayed), None when they fit the budget
    (_tape_budget). `tune`: each launch's own options (_tuning.py). `check()`
    validates the arguments, returning whether its verdict follows from their
    layouts alone (then a replay needs none).

    A launch is decided once per key (_launch_plan.py): later launches with the
    same dtypes, layouts, scalars and grid replay the first one's steps."""
    import torch

    given = [p for p in WORKSPACE_PARAMS if kwargs.get(p) is not None]
    if given:
        raise TypeError(f"{given} are set by tritonad's launch path; do not pass them")
    any_tensor = _device_of(kwargs)
    jit = getattr(run, "__self__", None)
    if warmup or tune is not False or any_tensor is None or any_tensor.device.type != "cuda" \
            or not hasattr(jit, "device_caches"):
        check()
        if not warmup:
            _launch_plan.used(None)
        return _decide(run, grid, warmup, kwargs, shadows, use_partial, tape, tune)
    with _on_device(any_tensor.device):
        grid_now = _coverage.grid_of(grid, kwargs) if grid is not None else ()
        pending = _UNINITIALIZED.get()
        garbage = tuple(s for s in shadows
                        if isinstance(kwargs.get(s), torch.Tensor) and id(kwargs[s]) in pending)
        # (the device: the tensors', in the key, made current above)
        key = _launch_plan.key_of(kwargs, grid_now, (garbage, use_partial, tape))
        plan = _launch_plan.lookup(jit, key)
        if plan is not None:
            if not plan.checked_by_layout:
                check()
            if kwargs.get(_residuals.RESIDUALS) is not None:
                _residuals.check_launch(kwargs[_residuals.RESIDUALS], grid, kwargs)
            _launch_plan.used(plan)
            return plan.run(kwargs, _set_initialized)
        by_layout = check()
        recorder, token = _launch_plan.begin(kwargs)
        try:
            kernel = _decide(run, grid, warmup, kwargs, shadows, use_partial, tape, tune)
        finally:
            _launch_plan.end(token)
        plan = recorder.plan(kernel)
        if plan is not None:
            plan.checked_by_layout = by_layout
            _launch_plan.store(jit, key, plan)
        _launch_plan.used(plan)
        return kernel


_CURRENT_DEVICE = contextlib.nullcontext()


def _on_device(device):
    """Triton launches on the current device: a backward of tensors on another
    GPU is launched with theirs current."""
    index = device.index
    if index is None or index == _launch_plan.current_device():
        return _CURRENT_DEVICE
    import torch
    return torch.cuda.device(device)


def _decide(run, grid, warmup, kwargs, shadows, use_partial, tape, tune):
    """The launch, deciding everything (recorded where _launch_plan records)."""
    import torch

    any_tensor = _device_of(kwargs)
    # (evaluated once: a grid callable sees the arguments before the workspace's)
    grid_now = _coverage.grid_of(grid, kwargs) if grid is not None else ()
    programs = grid_now[0] if grid_now else 0
    pending = _UNINITIALIZED.get()
    garbage = [s for s in shadows
               if isinstance(kwargs.get(s), torch.Tensor) and id(kwargs[s]) in pending]
    partial_possible = use_partial and any_tensor is not None and programs > 1 and \
        any(isinstance(kwargs.get(s), torch.Tensor) for s in shadows)
    launcher = _Launcher(run, kwargs, shadows, tune)
    # Whether the kernel keeps a tape is decided when it is derived: compile it
    # (or take it from the cache) with a placeholder first.
    with_tape = tape is not False and any_tensor is not None
    kwargs.update({_TAPE: _placeholder(any_tensor.device, "int8") if with_tape else None,
                   _TAPE_EVERY: 1, _MAIN_ONLY: 1, _PARTS_ONLY: 0, **_masks.variant(full=True),
                   _REGRID: _placeholder(any_tensor.device, "int64")
                   if any_tensor is not None else None})
    # The workspace's and the scatter slots' dtype is part of the kernel's
    # signature: fp64 for fp64 gradients (gradcheck), fp32 otherwise.
    wide = any(isinstance(kwargs.get(s), torch.Tensor) and kwargs[s].dtype == torch.float64
               for s in shadows)
    kwargs.update(_scatter.placeholders(any_tensor.device, wide) if any_tensor is not None
                  else {_scatter.INDEX: None, _scatter.VALUES: None})
    if not partial_possible:
        kwargs.update({_WORKSPACE: None, _SLOT: 0, _PROGRAMS: programs})
        kernel = _residuals.checked(run, grid, run(grid=grid, warmup=True, **kwargs), kwargs)
        if warmup:
            return kernel
        _check_requirements(kernel, kwargs, grid_now)
        return _run_on_own_grid(run, grid, kernel, kwargs, grid_now, garbage, tape, launcher)
    dtype = torch.float64 if wide else torch.float32
    device = any_tensor.device
    # Which shadows get partial buffers is decided when the kernel is derived:
    # compile first (or take it from the cache) with a placeholder workspace.
    placeholder = torch.empty(16, dtype=dtype, device=device)
    kwargs.update({_WORKSPACE: placeholder, _SLOT: 16, _PROGRAMS: programs})
    kernel = _residuals.checked(run, grid, run(grid=grid, warmup=True, **kwargs), kwargs)
    metadata = getattr(kernel, "metadata", None)
    recorded = getattr(metadata, _PARTIAL_KEY, None) or {}
    partial = [name for names in recorded.values() for name in names]
    # (the axes each partial shadow's slots span: the workspace has a slot per
    # program along the union of them, in each group)
    slot_axes = [axes for lists in (getattr(metadata, _SLOT_AXES_KEY, None) or {}).values()
                 for axes in lists]
    if len(slot_axes) != len(partial):
        raise RuntimeError(f"tritonad: the compiled backward records the slot axes of "
                           f"{len(slot_axes)} partial buffers for {len(partial)} ({partial}): "
                           f"clear Triton's cache (~/.triton/cache) and launch again")
    if warmup:
        return kernel
    _check_requirements(kernel, kwargs, grid_now)
    if not partial:
        return _run_on_own_grid(run, grid, kernel, kwargs, grid_now, garbage, tape, launcher)

    kernel = _resident(run, grid, kernel, kwargs)
    targets = [kwargs[name] for name in partial]
    slot = max(_span(t) for t in targets)
    slot = (slot + 15) // 16 * 16  # (aligned slots: vectorized stores)
    workers = min(programs, _workers(device.index if device.index is not None
                                     else torch.cuda.current_device())
                  if device.type == "cuda" else _INTERPRETED_WORKERS)
    launch_grid = (workers, *grid_now[1:])
    # (a slot per program along the axes where programs read the same addresses
    # of a shadow; programs along the others write disjoint addresses of one slot)
    group_axes = {axis for axes in slot_axes for axis in axes}
    slots = math.prod(n for axis, n in enumerate(launch_grid) if axis in group_axes)
    kwargs[_SLOT] = slot
    # A program stores only the addresses its loads touch: the slots need zeros
    # unless every slot's stores reach all of its shadow's elements (a grid of
    # several axes: a program's slot may hold its part only).
    slots_covered = _covered(kernel, kwargs, launch_grid, partial) if slots == workers else ()
    make = torch.empty if len(slots_covered) == len(partial) else torch.zeros
    workspace = _launch_plan.allocate("workspace", make, (len(partial), slots, slot), dtype,
                                      device)
    kwargs[_WORKSPACE] = workspace
    overwrite = {name for name in partial if name in garbage}
    kernel = _allocate_tape(run, launch_grid, kernel, kwargs, grid_now, launch_grid, tape)
    _masks.choose(kernel, kwargs, launch_grid)
    _initialize([s for s in garbage if s not in overwrite], kernel, kwargs, launch_grid)
    # (a row of scatter slots per program of the forward, which the
    # grid-stride loop runs)
    with _scatter.summed(kernel, kwargs, grid_now):
        kernel = launcher(launch_grid, kwargs, workspace)
    _sum_slots(workspace, partial, targets, overwrite, slots, slot)
    _mark_initialized(overwrite, kwargs)
    return kernel


# (a requirement record's fields: LaunchContract.h, kRequirementRecord)
_SHADOW, _CONDITION, _WHY, _REFUSAL = _contract.fields("requirement", "shadow", "condition", "why",
                                                       "refusal")
# (how a refusal of a launch's arguments begins, for callers that count them)
LAUNCH_REFUSED = "tritonad: this launch breaks a condition its backward was derived under"


def _check_requirements(kernel, kwargs, grid):
    """Refuses a launch that breaks a condition the kernel was derived under
    (deterministic mode writes without atomics where each address belongs to
    one program for some arguments only; a loop's iterations store to
    addresses of their own for some strides only)."""
    recorded = getattr(getattr(kernel, "metadata", None), _REQUIREMENTS_KEY, None) or {}
    for requirement in (r for requirements in recorded.values() for r in requirements):
        unchecked = ""
        try:
            holds = _coverage.evaluate(requirement[_CONDITION], kwargs, grid)
        except (KeyError, TypeError, ZeroDivisionError) as error:
            unchecked = f"it cannot be checked with this launch's arguments ({error})"
            holds, why = False, unchecked
        else:
            why = "with this launch's arguments and grid, programs write the same addresses"
        if not holds and requirement.get(_REFUSAL):
            named = sorted(_coverage.arguments_read(requirement[_CONDITION], set()))
            values = ", ".join(f"{name}={kwargs.get(name)!r}" for name in named)
            raise RuntimeError(f"{LAUNCH_REFUSED}: {requirement[_REFUSAL]} (this launch: "
                               f"{values + ', ' if values else ''}grid {tuple(grid)})"
                               f"{'; ' + unchecked if unchecked else ''}")
        if not holds:
            raise RuntimeError(
                f"tritonad: mode='deterministic' writes the gradient '{requirement[_SHADOW]}' "
                f"without atomics, which needs each of its addresses written by one program "
                f"({requirement[_WHY]}); {why}. Launch it so that the programs' tiles are "
                f"disjoint, or use mode='auto' (atomics where they overlap)")


class _Launcher:
    """Launches the backward with its own tuned options where `tune` asks for
    them (_tuning.py); a trial may write the shadows given and `extra`."""

    def __init__(self, run, kwargs, shadows, tune):
        self.run, self.tune = run, tune
        # (the caller's register cap, before the launch path adds its own)
        self.user_cap = kwargs.get("maxnreg")
        self.shadows = [kwargs[s] for s in shadows if kwargs.get(s) is not None]

    def __call__(self, grid, arguments, *extra, computed=None):
        """Launches on `grid` (`computed`: its value where it is a callable)."""
        shape = grid if computed is None else computed
        if callable(shape) or not shape:
            return _launch_now(self.run, grid, arguments)
        if self.tune is False:
            arguments, kernel = _with_stages_that_fit(self.run, grid, arguments)
            return _launch_now(self.run, grid,
                               _with_warps_for_registers(self.run, grid, arguments, kernel))
        return _tuning.launch(self.run, tuple(shape), arguments, self.tune,
                              [*self.shadows, *extra], self.user_cap, fits, _resident)


def _launch_now(run, grid, arguments, from_call=None):
    """Launches a JIT kernel (`run` is its JITFunction.run); while a launch is
    being decided, through its compiled kernel, recorded (_launch_plan.py)."""
    jit = getattr(run, "__self__", None)
    if _launch_plan.recording() is None or not hasattr(jit, "signature"):
        return run(grid=grid, warmup=False, **arguments)
    kernel = run(grid=grid, warmup=True, **arguments)
    _launch_plan.launch_compiled(jit, kernel, _coverage.grid_of(grid, arguments), arguments,
                                 from_call)
    return kernel


def _run_on_own_grid(run, grid, kernel, kwargs, grid_now, garbage, tape, launcher):
    """Launches a kernel without partial buffers: on the forward's grid, or,
    where gradients were re-parallelized, the forward's programs (`kernel`,
    compiled for them only) and then the parts, with a kernel of their own."""
    kernel = _allocate_tape(run, grid, kernel, kwargs, grid_now, grid_now, tape)
    # (regridded or not, the condition is about the forward's grid)
    _masks.choose(kernel, kwargs, grid_now)
    own = _regrid.prepare(kernel, kwargs, grid_now) if grid_now else None
    parts_kwargs = _parts_arguments(run, grid, kernel, kwargs) if own is not None else None
    if parts_kwargs is None:
        if own is not None:  # (the atomics' kernel: the table is gone from the arguments)
            kernel = _allocate_tape(run, grid, run(grid=grid, warmup=True, **kwargs), kwargs,
                                    grid_now, grid_now, tape)
            _masks.choose(kernel, kwargs, grid_now)
        order = _order.table(kernel, kwargs, grid_now, kwargs[_REGRID].device) \
            if kwargs.get(_REGRID) is not None else None
        if order is not None:  # (longest programs first: _order.py)
            kwargs[_REGRID] = order
        _initialize(garbage, kernel, kwargs, grid_now)
        with _scatter.summed(kernel, kwargs, grid_now):
            return launcher(grid, kwargs, computed=grid_now)
    launches, stored = own
    _initialize(garbage, kernel, kwargs, grid_now, stored=stored)
    launched = kernel  # (nothing to do where every launch is empty: an empty grid or loop)
    # (the forward's programs write the slots: a row each, as numbered on its grid)
    with _scatter.summed(kernel, kwargs, grid_now):
        for launch_grid, table, programs in launches:
            if launch_grid[0] > 0:
                arguments = kwargs if programs == "main" else parts_kwargs
                arguments[_REGRID] = table
                launched = launcher(launch_grid, arguments)
    return launched


def _parts_arguments(run, grid, kernel, kwargs):
    """The arguments that launch the re-parallelized parts with a kernel of
    their own (its launch options decided once per forward-programs' `kernel`),
    or None where it does not fit the device: then kwargs lose the table, and
    the kernel compiled without one keeps the forward's schedule (atomics)."""
    options = _once(kernel, "tritonad_parts_options", lambda: _parts_options(run, grid, kwargs))
    if options is None:
        kwargs[_REGRID] = None  # (another specialization: no table argument)
        return None
    return {**kwargs, **options}


def _parts_options(run, grid, kwargs):
    """The parts' kernel's selectors and the launch options it needs (fewer
    pipeline stages, a register cap), or None where it does not fit."""
    options = {_MAIN_ONLY: 0, _PARTS_ONLY: 1}
    arguments = {**kwargs, **options}
    kernel = run(grid=grid, warmup=True, **arguments)
    if not fits(kernel):
        # The parts' tiles do not fit the shared memory with these launch
        # options: fewer pipeline stages (the backward's own option: its
        # results do not depend on it).
        stages = _stages_that_fit(run, grid, kernel, arguments)
        if stages is None:
            warnings.warn(f"tritonad: the re-parallelized backward needs "
                          f"{kernel.metadata.shared} bytes of shared memory with these launch "
                          f"options, more than the device has, even with one pipeline stage; "
                          f"it runs with atomics instead (smaller tiles let it fit)",
                          stacklevel=5)
            return None
        options["num_stages"] = arguments["num_stages"] = stages
        kernel = run(grid=grid, warmup=True, **arguments)
    # (two programs per SM, as a hand-written matmul runs)
    _resident(run, grid, kernel, arguments)
    if arguments.get("maxnreg") != kwargs.get("maxnreg"):
        options["maxnreg"] = arguments["maxnreg"]
    return options


def _once(kernel, attribute: str, decide):
    """decide(), computed once per compiled kernel and kept on it (the launch
    path asks at every launch)."""
    if not hasattr(kernel, attribute):
        setattr(kernel, attribute, decide())
    return getattr(kernel, attribute)


def _stages_that_fit(run, grid, kernel, kwargs):
    """The most pipeline stages below the kernel's own with which it fits the
    device's shared memory, or None."""
    for fewer in range(getattr(kernel.metadata, "num_stages", 1) - 1, 0, -1):
        if fits(run(grid=grid, warmup=True, **{**kwargs, "num_stages": fewer})):
            return fewer
    return None


# Spilled registers (Triton's n_spills, 4-byte words per thread) that a kernel
# compiled under a register cap may have and still be preferred.
_SPILLS_ALLOWED = 8


def _resident(run, grid, kernel, kwargs):
    """The grid-stride schedule launches _PROGRAMS_PER_SM programs per SM, as a
    hand-written persistent kernel does, and a re-parallelized backward's
    tiles are sized for as many (a hand-written matmul's); they run at once
    only if their registers fit in the SM's register file together. Where they
    do not, the kernel is compiled again under ptxas's register cap
    (``maxnreg``), and that one is launched if it spills at most a few
    registers. A ``maxnreg`` the caller passed is kept."""
    init = getattr(kernel, "_init_handles", None)
    if init is None or kwargs.get("maxnreg") is not None:
        return kernel  # (the interpreter, or the caller's own cap)
    capped = _once(kernel, "tritonad_register_cap",
                   lambda: _register_cap(run, grid, kernel, kwargs))
    if capped is None:
        return kernel
    kwargs["maxnreg"] = capped[0]  # (the launches below use it too)
    return capped[1]


def _register_cap(run, grid, kernel, kwargs):
    """(the cap that lets _PROGRAMS_PER_SM programs of `kernel` fit on an SM,
    the kernel compiled under it), or None (they fit, or the capped kernel
    spills more than _SPILLS_ALLOWED)."""
    kernel._init_handles()
    device = _device_of(kwargs).device
    threads = 32 * kernel.metadata.num_warps * getattr(kernel.metadata, "num_ctas", 1)
    cap = _register_file(device.index or 0) // (_PROGRAMS_PER_SM * threads) // 8 * 8
    if cap < 32 or kernel.n_regs <= cap:
        return None
    capped = run(grid=grid, warmup=True, **{**kwargs, "maxnreg": cap})
    capped._init_handles()
    return (cap, capped) if capped.n_spills <= _SPILLS_ALLOWED else None


# Spilled words per thread (Triton's n_spills) past which a backward launch is
# compiled again with twice the warps, so that each thread holds half of each
# tile: a quarter of the 255 registers a thread may have. A few spills cost less
# than the warps' extra synchronization (attention's backward at head dim 64
# spills about 50 words with 4 warps and runs slower with 8).
_SPILLS_HEAVY = 64
_MAX_WARPS = 8


def _with_stages_that_fit(run, grid, arguments):
    """(`arguments` with fewer pipeline stages where the backward compiled with
    the forward's does not fit the device's shared memory, the kernel compiled
    with them): the most that fit (a loop the forward did not pipeline, a
    counted while loop, is a for loop in the backward; the backward holds more
    tiles than its forward; the stages are the backward's own option: its
    results do not depend on them). Unchanged where it fits and in the
    interpreter; where none fits, Triton's OutOfResources, with a note that
    says which backward and what to change."""
    kernel = run(grid=grid, warmup=True, **arguments)
    if fits(kernel):
        return arguments, kernel
    stages = _once(kernel, "tritonad_stages_that_fit",
                   lambda: _stages_that_fit(run, grid, kernel, arguments))
    if stages is None:
        _raise_does_not_fit(kernel)
        return arguments, kernel  # (it loaded after all)
    arguments = {**arguments, "num_stages": stages}
    return arguments, run(grid=grid, warmup=True, **arguments)


def _raise_does_not_fit(kernel):
    """Raises the OutOfResources loading `kernel` raises (its type kept: an
    autotuner's benchmark skips such a config), noted with what tritonad tried;
    returns where it loads."""
    from triton.runtime.errors import OutOfResources
    try:
        kernel._init_handles()
    except OutOfResources as error:
        metadata = kernel.metadata
        note = (f"tritonad: the derived backward {getattr(metadata, 'name', '')} needs more "
                f"{error.name} than the device has with any number of pipeline stages "
                f"(num_warps {getattr(metadata, 'num_warps', '?')}); its tiles are the "
                f"forward's: launch the forward with smaller block sizes (an autotuned "
                f"forward: give it configs with smaller blocks)")
        if hasattr(error, "add_note"):  # (Python 3.11)
            error.add_note(note)
        raise


def _with_warps_for_registers(run, grid, arguments, kernel):
    """`arguments` with the warps the backward's registers need (decided once
    per compiled kernel `kernel`, compiled with `arguments`: _warps_for_registers):
    the backward holds more tiles live than its forward (the forward's, their
    adjoints, a loop's recomputed values), so the forward's warps may leave each
    thread more than it has registers for. A launch whose caller capped
    registers (``maxnreg``) is left as it is, as is the interpreter's."""
    if arguments.get("maxnreg") is not None:
        return arguments
    if getattr(kernel, "_init_handles", None) is None:
        return arguments
    warps = _once(kernel, "tritonad_warps_for_registers",
                  lambda: _warps_for_registers(run, grid, kernel, arguments))
    return arguments if warps is None else {**arguments, "num_warps": warps}


def _warps_for_registers(run, grid, kernel, arguments):
    """Twice the kernel's warps, repeatedly up to _MAX_WARPS, while it spills
    more than _SPILLS_HEAVY words per thread and twice the warps at least halve
    the spills; None where the kernel's own warps are kept."""
    from triton.runtime.errors import OutOfResources
    kernel._init_handles()
    warps, spills, chosen = kernel.metadata.num_warps, kernel.n_spills, None
    while spills > _SPILLS_HEAVY and warps * 2 <= _MAX_WARPS:
        wider = run(grid=grid, warmup=True, **{**arguments, "num_warps": warps * 2})
        try:
            wider._init_handles()
        except OutOfResources:
            break
        if wider.n_spills * 2 > spills:
            break
        warps, spills, chosen = warps * 2, wider.n_spills, warps * 2
    if chosen is not None and triton.knobs.autotuning.print:
        print(f"tritonad: backward launch on grid {tuple(grid)}: num_warps {chosen} instead "
              f"of {kernel.metadata.num_warps} (the forward's): {kernel.n_spills} spilled "
              f"registers per thread become {spills}")
    return chosen


def fits(kernel) -> bool:
    """Whether a compiled kernel's shared memory fits its device (Triton raises
    OutOfResources when it loads the kernel for its first launch)."""
    from triton.runtime.errors import OutOfResources
    init = getattr(kernel, "_init_handles", None)
    if init is None:  # (the interpreter: no device limits)
        return True

    def loads():  # (a kernel that does not fit would try to load again each time)
        try:
            init()
        except OutOfResources:
            return False
        return True
    return _once(kernel, "tritonad_fits", loads)


def _tape_budget(device) -> int:
    """Bytes a loop tape may take: TRITONAD_TAPE_BUDGET, else a quarter of the
    device's free memory (1 GiB off CUDA)."""
    import os
    import torch
    if os.environ.get("TRITONAD_TAPE_BUDGET"):
        return int(os.environ["TRITONAD_TAPE_BUDGET"])
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return free // 4
    return 1 << 30


def _allocate_tape(run, grid, kernel, kwargs, forward_grid, launch_grid, option):
    """Replaces the placeholder tape with scratch for every program of
    `launch_grid` when the kernel keeps one: every iteration's state where that
    fits the budget (or `option` is True), else every k-th for the smallest k
    that fits; where not even one state per program fits (and `option` is not
    True) the loops are replayed: returns the kernel compiled without a tape.
    Returns the kernel to launch."""
    recorded = getattr(getattr(kernel, "metadata", None), _TAPES_KEY, None) or {}
    tapes = [tape for by_name in recorded.values() for tape in by_name]
    if not tapes:
        return kernel
    import torch
    programs = 1
    for extent in launch_grid or (1,):
        programs *= int(extent)
    needs = []  # (bytes per state, trips)
    for where, bytes_per_state, trips in tapes:
        try:
            count = _coverage.evaluate(trips, kwargs, forward_grid)
        except (KeyError, TypeError, ZeroDivisionError) as error:
            raise RuntimeError(f"tritonad: cannot size the tape of the loop at {where} from "
                               f"this launch's arguments ({error})") from None
        needs.append((int(bytes_per_state), max(int(count), 0)))

    def size(every):
        return max(programs * sum(b * -(-n // every) for b, n in needs), 16)

    placeholder = kwargs[_TAPE]
    every = 1
    if option is None:
        budget = _tape_budget(placeholder.device)
        longest = max(n for _, n in needs) or 1
        if size(longest) > budget:
            kwargs[_TAPE] = None  # (another specialization: the replaying kernel)
            return run(grid=grid, warmup=True, **kwargs)
        every = max(1, size(1) // budget)
        while size(every) > budget:
            every += max(1, every // 8)
    kwargs[_TAPE] = _launch_plan.allocate("tape", torch.empty, size(every), torch.int8,
                                          placeholder.device)
    kwargs[_TAPE_EVERY] = every
    return kernel


def _coverage_of(kernel) -> dict:
    recorded = getattr(getattr(kernel, "metadata", None), _COVERAGE_KEY, None) or {}
    merged = {}
    for by_shadow in recorded.values():
        merged.update(by_shadow)
    return merged


def _covered(kernel, kwargs, grid, names):
    """The shadows among `names` whose every element the kernel stores, launched
    on `grid` (a tuple; none known: nothing is covered)."""
    records = _coverage_of(kernel)
    return {name for name in names if grid and name in records and
            _coverage.covers(records[name], kwargs[name], kwargs, grid)}


def _initialize(garbage, kernel, kwargs, grid, stored=()):
    """Zero-fills the uninitialized shadows the kernel does not wholly store
    (`stored`: shadows its re-parallelized parts store whole at this launch)."""
    covered = _covered(kernel, kwargs, grid, garbage) | set(stored)
    for name in garbage:
        if name not in covered:
            _launch_plan.zero(name, kwargs[name])
    _mark_initialized(garbage, kwargs)


def _mark_initialized(names, kwargs):
    _launch_plan.note(("mark", tuple(names)))
    _set_initialized(names, kwargs)


def _set_initialized(names, kwargs):
    pending = _UNINITIALIZED.get()
    for name in names:
        pending[id(kwargs[name])][0] = True
