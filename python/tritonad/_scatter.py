"""Scatter slots: deterministic mode's sums where programs may add to the same
elements (cpp/include/tritonad/AutoDiff/ScatterSums.h).

Where a backward would need atomic adds (addresses from a row table, addresses
the core cannot analyze, tiles that may overlap) and re-parallelization does
not remove them, each program of the derived backward stores every lane's
contribution and its element into rows of slots of its own: keys into
``tritonad_scatter_index``, `1 + offset` of an element (0: a lane the mask
leaves out, or a slot the program does not reach), and the values into
``tritonad_scatter_values``. Where an add's lanes step by one element along
their last axis (a gathered row), one key stands for the run of them: the
run's length + its first element, then its values, 0 for a lane the mask
leaves out. After the kernel each shadow's keys are sorted, stably, and each
element sums the values of the keys that cover it, in key order then slot
order (program, site, iteration, lane), in fp32, rounded once
(_launch_plan.slot_sums). The same bits on every run, whatever order the
programs ran in.

The compiled kernel's metadata says how many keys and values per program and
which columns each shadow has (a scatter record, LaunchContract.h); the launch
path allocates ``programs x keys`` and ``programs x values`` (the keys
zero-filled: slots a program does not reach add nothing), launches, then adds.
Where every slot is the twin of a plain write that the launch's arguments make
exclusive, no program writes one and none is allocated.
"""

from __future__ import annotations

import contextlib
import math

from tritonad import _contract, _coverage, _launch_plan

INDEX, VALUES = (_contract.declared(n) for n in ("tritonad_scatter_index",
                                                 "tritonad_scatter_values"))
_METADATA = _contract.metadata_key("scatter")
_PER_PROGRAM, _INDEX_PER_PROGRAM, _COLUMNS, _UNUSED = _contract.fields(
    "scatter", "per_program", "index_per_program", "columns", "unused")
_SHADOW, _BEGIN, _END, _INDEX_BEGIN, _INDEX_END, _LANES = _contract.fields(
    "scatter_columns", "shadow", "begin", "end", "index_begin", "index_end", "lanes")


def placeholders(device, wide: bool) -> dict:
    """The scatter parameters for the first compile (the core decides whether
    the kernel uses them); fp64 values for fp64 gradients (gradcheck)."""
    return {INDEX: _launch_plan.placeholder(device, "int64"),
            VALUES: _launch_plan.placeholder(device, "float64" if wide else "float32")}


def record_of(kernel):
    """The compiled backward's scatter record, or None where it has no slots."""
    recorded = getattr(getattr(kernel, "metadata", None), _METADATA, None) or {}
    records = [r for r in recorded.values() if r]
    return records[0] if records else None


@contextlib.contextmanager
def summed(kernel, kwargs, grid):
    """Around the launches of `kernel` on `grid` (the forward's): allocates the
    slots it writes into kwargs, then adds them into their shadows (nothing
    where the kernel has none: kwargs keep the placeholders, which it does not
    read)."""
    record = _allocate(kernel, kwargs, grid)
    yield
    if record is None:
        return
    groups = {}  # shadow -> its column groups, in the record's order
    for columns in record[_COLUMNS]:
        groups.setdefault(columns[_SHADOW], []).append(tuple(
            _coverage.evaluate(columns[key], kwargs, grid)
            for key in (_BEGIN, _END, _INDEX_BEGIN, _INDEX_END)) + (columns[_LANES],))
    for shadow, its_groups in groups.items():
        _launch_plan.note(("scatter", INDEX, VALUES, shadow, tuple(its_groups)))
        _launch_plan.add_scatter_slots(kwargs[INDEX], kwargs[VALUES], kwargs[shadow], its_groups)


def _allocate(kernel, kwargs, grid):
    """The slots `kernel` writes on `grid`, allocated into kwargs; its scatter
    record, or None where it writes none."""
    import torch

    record = record_of(kernel)
    if record is None:
        return None
    # (only launch-checked plain writes' twins, whose condition holds: no
    # program writes a slot, and the placeholders stay)
    if record[_UNUSED] is not None and _coverage.evaluate(record[_UNUSED], kwargs, grid):
        return None
    programs = math.prod(int(g) for g in grid) if grid else 1
    keys, values = (_coverage.evaluate(record[key], kwargs, grid)
                    for key in (_INDEX_PER_PROGRAM, _PER_PROGRAM))
    device = kwargs[INDEX].device
    kwargs[INDEX] = _launch_plan.allocate(INDEX, torch.zeros, (programs, keys), torch.int64,
                                          device)
    kwargs[VALUES] = _launch_plan.allocate(VALUES, torch.empty, (programs, values),
                                           kwargs[VALUES].dtype, device)
    return record
