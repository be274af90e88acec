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
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl

WORKSPACE_PARAMS = ("tritonad_workspace", "tritonad_slot", "tritonad_programs")
_PROGRAMS_PER_SM = 2
_SUM_ROWS, _SUM_COLS = 32, 256


@triton.jit
def _add_slot_sums(slots_ptr, out_ptr, programs, slot, span,
                   ROWS: tl.constexpr, COLS: tl.constexpr):
    # out[c] += sum_p slots[p, c] for a contiguous `out` of `span` elements: the
    # programs' slots are summed in a fixed order, then rounded once.
    cols = tl.program_id(0) * COLS + tl.arange(0, COLS)
    acc = tl.zeros([ROWS, COLS], dtype=slots_ptr.dtype.element_ty)
    for p0 in range(0, programs, ROWS):
        rows = p0 + tl.arange(0, ROWS)
        mask = (rows[:, None] < programs) & (cols[None, :] < span)
        acc += tl.load(slots_ptr + rows[:, None].to(tl.int64) * slot + cols[None, :], mask=mask,
                       other=0.0)
    total = tl.sum(acc, axis=0)
    old = tl.load(out_ptr + cols, mask=cols < span, other=0.0).to(total.dtype)
    tl.store(out_ptr + cols, (old + total).to(out_ptr.dtype.element_ty), mask=cols < span)


def _programs_along_axis0(grid, kwargs) -> int:
    if callable(grid):
        grid = grid(kwargs)
    return int(grid[0])


@functools.lru_cache(maxsize=None)
def _workers(device_index: int) -> int:
    import torch

    return _PROGRAMS_PER_SM * torch.cuda.get_device_properties(device_index).multi_processor_count


def _span(t) -> int:
    """Elements from t's first to its last element, gaps included (the shadow is
    addressed with t's strides)."""
    return 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) if t.numel() else 0


def _device_of(kwargs):
    import torch

    for value in kwargs.values():
        if isinstance(value, torch.Tensor):
            return value
    return None


def launch(run, grid, warmup, kwargs, shadows, use_partial: bool):
    """Runs the backward (`run` is JITFunction.run) with the workspace parameters
    filled in; with partial buffers, launches G programs and sums the slots into
    the shadows afterwards."""
    import torch

    given = [p for p in WORKSPACE_PARAMS if kwargs.get(p) is not None]
    if given:
        raise TypeError(f"{given} are set by tritonad's launch path; do not pass them")
    any_tensor = _device_of(kwargs)
    programs = _programs_along_axis0(grid, kwargs) if grid is not None else 0
    if not use_partial or any_tensor is None or programs <= 1 or \
            not any(isinstance(kwargs.get(s), torch.Tensor) for s in shadows):
        kwargs.update(tritonad_workspace=None, tritonad_slot=0, tritonad_programs=programs)
        return run(grid=grid, warmup=warmup, **kwargs)
    # The workspace's dtype is part of the kernel's signature: fp64 slots for
    # fp64 gradients (gradcheck), fp32 otherwise.
    wide = any(isinstance(kwargs.get(s), torch.Tensor) and kwargs[s].dtype == torch.float64
               for s in shadows)
    dtype = torch.float64 if wide else torch.float32
    device = any_tensor.device
    # Which shadows get partial buffers is decided when the kernel is derived:
    # compile first (or take it from the cache) with a placeholder workspace.
    placeholder = torch.empty(16, dtype=dtype, device=device)
    kwargs.update(tritonad_workspace=placeholder, tritonad_slot=16,
                  tritonad_programs=programs)
    kernel = run(grid=grid, warmup=True, **kwargs)
    recorded = getattr(getattr(kernel, "metadata", None), "tritonad_partial", None) or {}
    partial = [name for names in recorded.values() for name in names]
    if warmup or not partial:
        return kernel if warmup else run(grid=grid, warmup=False, **kwargs)

    targets = [kwargs[name] for name in partial]
    slot = max(_span(t) for t in targets)
    slot = (slot + 15) // 16 * 16  # (aligned slots: vectorized stores)
    workers = min(programs, _workers(device.index if device.index is not None
                                     else torch.cuda.current_device()))
    # Zeros: a program stores only the addresses its loads touched.
    workspace = torch.zeros(len(partial), workers, slot, dtype=dtype, device=device)
    kwargs.update(tritonad_workspace=workspace, tritonad_slot=slot)
    if callable(grid):
        grid = grid(kwargs)
    kernel = run(grid=(workers, *tuple(grid)[1:]), warmup=False, **kwargs)
    for group, shadow in enumerate(targets):
        span = _span(shadow)
        if shadow.is_contiguous():
            _add_slot_sums[(triton.cdiv(span, _SUM_COLS),)](
                workspace[group], shadow, workers, slot, span, ROWS=_SUM_ROWS, COLS=_SUM_COLS)
        else:
            summed = workspace[group, :, :span].sum(dim=0)
            shadow.add_(summed.as_strided(shadow.shape, shadow.stride()))
    return kernel
