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

from tritonad import _contract, _coverage

METADATA = _contract.metadata_key("program_order")
# The table: a word per launched program (LaunchContract.h, kProgramOrder); this
# fails at import where the core reads another row.
_contract.filled("program_order", "row", {"program": 0})
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
    word = getattr(torch, _contract.table_dtype("program_order"))
    programs = 1
    for g in list(grid)[:3]:
        programs *= int(g)

    def longest_first(each):
        # (the grid's order where the work does not vary or is not determined)
        if each is None or isinstance(each, int):
            return torch.arange(programs, dtype=word).to(device)
        return torch.sort(-each, stable=True).indices.to(word).to(device)

    return _coverage.per_program_cached(work, kwargs, grid, _CACHE, _CACHE_LIMIT, PROGRAM_LIMIT,
                                        longest_first, extra_key=(str(device),))
