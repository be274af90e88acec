"""Longest programs first: the launch order of a derived backward whose loops'
trip counts vary by program (cpp/include/tritonad/AutoDiff/ProgramOrder.h).

A causal attention's backward has one program per query block, and the
program of block i loops over i + 1 key blocks. Launched in the grid's order,
the longest programs start last, and with a few hundred programs the GPU idles
behind them. The compiled kernel records, per program, an expression of its
work (loop trips times the ops of an iteration); the launch evaluates it for
every program of the grid (vectorized, on the host; cached per grid and
arguments), sorts the programs by decreasing work (ties in grid order) and
passes the permutation as ``tritonad_regrid``: launch index i runs program
``table[i]`` (numbered x fastest), whose ids the kernel reads from it. The
gradients are the same in any order, up to the order of atomic additions.
"""

from __future__ import annotations

from typing import Dict, Sequence

from tritonad import _coverage

METADATA = "tritonad_program_order"
# Beyond this many programs the work is not evaluated: the launch keeps the
# grid's order (the host's evaluation and sort are linear-ish in the programs).
PROGRAM_LIMIT = 1 << 22
_CACHE: Dict[tuple, object] = {}
_CACHE_LIMIT = 256


def work_of(kernel):
    """The compiled backward's recorded work per program, or None."""
    recorded = getattr(getattr(kernel, "metadata", None), METADATA, None) or {}
    works = [w for w in recorded.values() if w]
    return works[0] if works else None


def table(kernel, kwargs, grid: Sequence[int], device):
    """The launch order for `kernel` on `grid`: an int64 tensor on `device`
    (launch index -> program, numbered x fastest), or None where the kernel
    reads its program ids as launched."""
    import torch

    work = work_of(kernel)
    if work is None:
        return None
    grid = tuple(int(g) for g in (list(grid) + [1, 1, 1])[:3])
    text, names = _coverage.described(work, lambda: [work])
    key = (text, grid, tuple((n, kwargs.get(n)) for n in names), str(device))
    cached = _CACHE.get(key)
    if cached is None:
        programs = grid[0] * grid[1] * grid[2]
        order = torch.arange(programs, dtype=torch.int64)
        if 1 < programs <= PROGRAM_LIMIT:
            try:
                each = _coverage.evaluate(work, kwargs, grid, _coverage.program_ids(grid))
            except (KeyError, TypeError, ZeroDivisionError):
                each = 0  # (arguments that do not determine it: the grid's order)
            if not isinstance(each, int):
                order = torch.sort(-each, stable=True).indices
        cached = order.to(device)
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = cached
    return cached
