"""Small kernels for test_interpreter_races.py, each run under the race check in Triton's
interpreter (run this module's `main` with TRITON_INTERPRET=1: it prints, as JSON, each
case's races as [kind, first op, second op, first line, second line])."""

import json
import os
import sys

import torch
import triton
import triton.language as tl

from interpreter_races import RaceCheck


@triton.jit
def add_rows(x_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    value = tl.load(x_ptr + row * stride + cols, mask=mask)          # line: rmw load
    tl.store(x_ptr + row * stride + cols, value + 1.0, mask=mask)     # line: rmw store


@triton.jit
def add_rows_two_passes(dx_ptr, g_ptr, n_cols, stride, BLOCK: tl.constexpr):
    """The reverted change's backward (fuzz seed 62): an input loaded by two passes gets
    two plain read-add-writes of its gradient, a barrier between them."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    at = dx_ptr + row * stride + cols
    g = tl.load(g_ptr + row * n_cols + cols, mask=mask)
    tl.store(at, tl.load(at, mask=mask) + g, mask=mask)               # line: first pass
    tl.debug_barrier()
    tl.store(at, tl.load(at, mask=mask) + 2.0 * g, mask=mask)         # line: second pass


@triton.jit
def add_rows_atomic(x_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    tl.atomic_add(x_ptr + row * stride + cols, 1.0, mask=cols < n_cols)


@triton.jit
def last_program_sums(x_ptr, partial_ptr, count_ptr, out_ptr, n, programs,
                      BLOCK: tl.constexpr, PROGRAMS: tl.constexpr, CHECK_COUNT: tl.constexpr,
                      SEM: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(partial_ptr + pid, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0)))
    tl.debug_barrier()   # (every thread's partial before the count: one thread's atomic)
    arrived = tl.atomic_add(count_ptr, 1, sem=SEM)
    if not CHECK_COUNT or arrived == programs - 1:
        every = tl.arange(0, PROGRAMS)
        partials = tl.load(partial_ptr + every, mask=every < programs, other=0.0)
        tl.store(out_ptr + pid, tl.sum(partials))                         # line: sum partials
        if CHECK_COUNT:
            tl.store(count_ptr, 0)   # (ready for the next launch)


@triton.jit
def store_then_shifted_load(x_ptr, y_ptr, n, BLOCK: tl.constexpr, BARRIER: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, offs * 2.0, mask=mask)          # line: first store
    if BARRIER:
        tl.debug_barrier()
    shifted = (offs + 1) % n
    tl.store(y_ptr + offs, tl.load(x_ptr + shifted, mask=mask), mask=mask)   # line: shifted


@triton.jit
def store_pairs(x_ptr, BLOCK: tl.constexpr, SAME_VALUES: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    value = (offs // 2) * 1.0 if SAME_VALUES else offs * 1.0
    tl.store(x_ptr + offs // 2, value)                       # line: pair store


@triton.jit
def scale_in_place(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(x_ptr + offs, x * 2.0, mask=mask)
    again = tl.load(x_ptr + offs, mask=mask)
    tl.atomic_add(y_ptr + offs, again, mask=mask)
    tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=mask) + 1.0, mask=mask)


@triton.jit
def atomic_then_plain_read(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if pid == 0:
        tl.atomic_add(x_ptr + offs, 1.0)                      # line: program 0 adds
    else:
        tl.store(out_ptr + pid * BLOCK + offs, tl.load(x_ptr + offs))   # line: others read


@triton.jit
def copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def square_rows(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols)
    tl.store(y_ptr + row * n_cols + cols, x * x, mask=cols < n_cols)


def _rand(*shape):
    return torch.rand(shape, dtype=torch.float32)


def cases(rng):
    """name -> a callable that launches the case's kernels."""
    n_cols = int(rng.integers(17, 64))          # odd widths: masked lanes too
    rows = int(rng.integers(3, 7))
    block = triton.next_power_of_2(n_cols)
    overlap = n_cols - int(rng.integers(1, n_cols // 2))   # row stride < columns
    programs = int(rng.integers(3, 9))
    size = int(rng.integers(2 * block + 1, 4 * block))
    shift_n = int(rng.integers(9, 16))

    def counter(check_count, sem="acq_rel"):
        n = programs * 16 - int(rng.integers(1, 16))
        last_program_sums[(programs,)](_rand(n), _rand(programs), torch.zeros(1, dtype=torch.int32),
                                       _rand(programs), n, programs, BLOCK=16,
                                       PROGRAMS=triton.next_power_of_2(programs),
                                       CHECK_COUNT=check_count, SEM=sem)

    def two_launches():
        x, y = _rand(size), _rand(size)
        copy[(triton.cdiv(size, 32),)](x, y, size, BLOCK=32)
        copy[(triton.cdiv(size, 32),)](y, x, size, BLOCK=32)

    return {
        "rmw_overlapping_rows": lambda: add_rows[(rows,)](_rand(rows * n_cols), n_cols, overlap,
                                                          BLOCK=block),
        "rmw_disjoint_rows": lambda: add_rows[(rows,)](_rand(rows * n_cols), n_cols, n_cols,
                                                       BLOCK=block),
        "two_passes_overlapping_rows": lambda: add_rows_two_passes[(rows,)](
            _rand(rows * n_cols), _rand(rows * n_cols), n_cols, overlap, BLOCK=block),
        "two_passes_rows_apart": lambda: add_rows_two_passes[(rows,)](
            _rand(rows * n_cols), _rand(rows * n_cols), n_cols, n_cols, BLOCK=block),
        "atomic_overlapping_rows": lambda: add_rows_atomic[(rows,)](_rand(rows * n_cols), n_cols,
                                                                    overlap, BLOCK=block),
        "last_program_sums": lambda: counter(True),
        "every_program_sums": lambda: counter(False),
        "relaxed_last_program_sums": lambda: counter(True, "relaxed"),
        "shifted_load_no_barrier": lambda: store_then_shifted_load[(1,)](
            _rand(16), _rand(16), shift_n, BLOCK=16, BARRIER=False),
        "shifted_load_barrier": lambda: store_then_shifted_load[(1,)](
            _rand(16), _rand(16), shift_n, BLOCK=16, BARRIER=True),
        "pair_store_different_values": lambda: store_pairs[(1,)](_rand(16), BLOCK=32,
                                                                 SAME_VALUES=False),
        "pair_store_same_values": lambda: store_pairs[(1,)](_rand(16), BLOCK=32,
                                                            SAME_VALUES=True),
        "elementwise_in_place": lambda: scale_in_place[(triton.cdiv(size, block),)](
            _rand(size), _rand(size), size, BLOCK=block),
        "atomic_then_plain_read": lambda: atomic_then_plain_read[(programs,)](
            _rand(32), _rand(32 * programs), BLOCK=32),
        "two_launches": two_launches,
    }


def derived(rng):
    """tritonad's backward of a kernel whose programs read overlapping rows (their
    gradients meet), checked alone: the forward launch is not selected.
    -> (races, launches checked, max gradient error)."""
    import tritonad
    from interpreter_races import derived_by_tritonad

    n_cols, rows = int(rng.integers(17, 40)), int(rng.integers(3, 6))
    stride = n_cols - int(rng.integers(1, n_cols // 2))
    block = triton.next_power_of_2(n_cols)
    x = _rand((rows - 1) * stride + n_cols)
    dy = _rand(rows * n_cols)
    dx = torch.zeros_like(x)
    with RaceCheck(select=derived_by_tritonad) as check:
        square_rows[(rows,)](x, torch.empty(rows * n_cols), n_cols, stride, BLOCK=block)
        tritonad.grad(square_rows)[(rows,)](x, torch.empty(rows * n_cols), n_cols, stride,
                                            dx, dy, BLOCK=block)
    want = torch.zeros_like(x)
    for row in range(rows):
        at = slice(row * stride, row * stride + n_cols)
        want[at] += 2 * x[at] * dy[row * n_cols:(row + 1) * n_cols]
    return check.races, check.launches, (dx - want).abs().max().item()


def _described(races):
    return [[r.kind, r.first.op, r.second.op, r.first.where, r.second.where, r.count]
            for r in races]


def main():
    import numpy as np

    seed = int(sys.argv[1]) if len(sys.argv) > 1 else int.from_bytes(os.urandom(4), "little")
    torch.manual_seed(seed)
    results = {}
    for name, launch in cases(np.random.default_rng(seed)).items():
        with RaceCheck() as check:
            launch()
        results[name] = _described(check.races)
    races, launches, error = derived(np.random.default_rng(seed))
    print(json.dumps({"seed": seed, "cases": results, "derived": [_described(races),
                                                                  launches, error]}))


if __name__ == "__main__":
    main()
