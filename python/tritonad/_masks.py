"""Backward kernels without the masks a launch makes always true.

A derived backward repeats the forward's masks (``offs < n``, ``offs_k < K -
k * BLOCK_K``). For most launches of a tiled kernel they are true in every
lane: the sizes are multiples of the blocks. The core (cpp/lib/AutoDiff/
Schedule/FullMasks.cpp) records, per compiled backward, a condition on the
arguments and the grid, per program, under which every comparison it can
bound is true everywhere (None: there is none), and compiles the backward in
two variants, picked by two hidden arguments, one 1 and the other 0 (Triton
compiles an argument equal to 1 as a constant, absent from the signature the
core sees): ``tritonad_full_masks`` 1 drops the masks the condition covers,
``tritonad_keep_masks`` 1 keeps them. A compile that passes neither (both
absent) keeps them too. Triton then emits plain, vectorized, pipelined loads and
stores, as for a kernel written for aligned sizes.

The launch path evaluates the condition for every program of the grid the
kernel is launched on (vectorized, on the host; cached per grid and
arguments) and passes 1 only where it holds in all of them.
"""

from __future__ import annotations

from typing import Dict, Sequence

from tritonad import _contract, _coverage

FULL_MASKS = _contract.declared("tritonad_full_masks")
KEEP_MASKS = _contract.declared("tritonad_keep_masks")
METADATA = _contract.metadata_key("full_masks")
# Beyond this many programs the condition is not evaluated (the masks stay):
# the host's evaluation is linear in the programs.
PROGRAM_LIMIT = 1 << 22
_CACHE: Dict[tuple, bool] = {}
_CACHE_LIMIT = 1024


def variant(full: bool) -> Dict[str, int]:
    """The hidden arguments that pick a variant."""
    return {FULL_MASKS: int(full), KEEP_MASKS: int(not full)}


def variant_is_full(specialized_to_one) -> bool:
    """Whether a compile is of the variant without masks, given which hidden
    arguments it specialized to 1 (`specialized_to_one(name)`)."""
    return specialized_to_one(FULL_MASKS) and not specialized_to_one(KEEP_MASKS)


def condition_of(kernel):
    """The compiled backward's recorded condition, or None."""
    recorded = getattr(getattr(kernel, "metadata", None), METADATA, None) or {}
    conditions = [c for c in recorded.values() if c]
    return conditions[0] if conditions else None


def holds(condition, arguments, grid: Sequence[int]) -> bool:
    """Whether `condition` (per program) holds for every program of `grid`;
    False where the launch's arguments do not determine it."""
    def every(value):
        if value is None:
            return False
        return bool(value) if isinstance(value, int) else bool((value != 0).all())

    return _coverage.per_program_cached(condition, arguments, grid, _CACHE, _CACHE_LIMIT,
                                        PROGRAM_LIMIT, every)


def choose(kernel, kwargs, grid) -> None:
    """Sets ``tritonad_full_masks`` in `kwargs` for a launch of `kernel` (a
    compile of the backward with these arguments, either variant: both record
    the same condition) on `grid`: 1 where its condition holds for every
    program (or it has none: then both variants are the same), else 0."""
    condition = condition_of(kernel)
    kwargs.update(variant(condition is None or holds(condition, kwargs, grid)))
