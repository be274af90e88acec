"""Loops: while loops, programs launched longest first, loop tapes (a loop carrying
more than accumulations and stabilizers keeps each iteration's state on a tape).
"""

import os

import torch
import triton

import tritonad
from interpret_checks import check, check_both, tolerance
from interpreter_util import assert_close, kernel_gradients, randn
from corpus.loops import (prefix_blocks_kernel, prefix_blocks_reference, tape_nested,
                          tape_recurrence, tape_recurrence_reference,
                          while_accumulate_kernel, while_pointer_advance_kernel,
                          while_store_kernel)


@check_both("while_loop_accumulation")
def _(dtype):
    rows, n, block = 3, 45, 16
    blocks = triton.cdiv(n, block)
    x = randn(rows, n, dtype=dtype)

    def reference(x_ptr):
        padded = torch.full((rows, blocks * block), float("-inf"), dtype=x_ptr.dtype)
        padded = torch.cat([x_ptr, padded[:, n:]], dim=1)
        return {"y_ptr": torch.exp(padded).reshape(rows, blocks, block).sum(1)}
    bwd = kernel_gradients(while_accumulate_kernel, (rows,), {"x_ptr": x},
                           {"y_ptr": torch.empty(rows, block, dtype=dtype)},
                           {"n_blocks": blocks, "n": n}, {"BLOCK": block}, reference,
                           **tolerance(dtype))
    assert "while " in bwd.source(), bwd.source()


@check_both("while_loop_pointer_advance")
def _(dtype):
    # A pointer advanced in a while loop beside its counter (`p += BLOCK; k +=
    # BLOCK`) is init + (k / BLOCK) * BLOCK inside the loop (pointer induction):
    # refused before ("a pointer carried by a while loop").
    rows, n, block = 3, 45, 16
    x = randn(rows, n, dtype=dtype)

    def reference(x_ptr):
        return {"y_ptr": torch.exp(x_ptr).sum(1)}
    bwd = kernel_gradients(while_pointer_advance_kernel, (rows,), {"x_ptr": x},
                           {"y_ptr": torch.empty(rows, dtype=dtype)}, {"stride": n, "n": n},
                           {"BLOCK": block}, reference, **tolerance(dtype))
    assert "while " in bwd.source(), bwd.source()


@check_both("while_loop_stores_each_block")
def _(dtype):
    # A store in a counted while loop: the loop is the for loop it spells, each
    # iteration's block of y reaches its own block of x.
    rows, n, block = 3, 45, 16
    x = randn(rows, n, dtype=dtype)

    def reference(x_ptr):
        return {"y_ptr": torch.exp(x_ptr) * x_ptr}
    bwd = kernel_gradients(while_store_kernel, (rows,), {"x_ptr": x},
                           {"y_ptr": torch.empty(rows, n, dtype=dtype)}, {"stride": n, "n": n},
                           {"BLOCK": block}, reference, **tolerance(dtype))
    assert "while " in bwd.source(), bwd.source()
    assert "scf.while" not in bwd.derived_ir()


@check("longest_programs_first")
def _():
    # The backward's programs are launched by decreasing trip count: the
    # gradient is the same (up to the atomics' order), the schedule says so,
    # and the launch's order is a permutation, longest first.
    from tritonad import _order

    rows, n, block = 3, 203, 16
    blocks = -(-n // block)
    x = randn(rows, n) * 0.5
    dout = randn(rows * blocks * block)
    bwd = tritonad.grad(prefix_blocks_kernel)
    dx = torch.zeros_like(x)
    bwd[(blocks, rows)](x, torch.empty(rows * blocks * block), n, dx_ptr=dx, dout_ptr=dout,
                        BLOCK=block)
    assert_close("x", dx, prefix_blocks_reference(x, dout, block), 1e-4, 1e-4)
    entries = [e for e in bwd.schedule().entries if e.kind == "programs"]
    assert [e.strategy for e in entries] == ["longest-first"], bwd.schedule()
    orders = [t for t in _order._CACHE.values() if len(t) == rows * blocks]
    assert orders, "the launch computed no order"
    order = orders[-1].tolist()
    assert sorted(order) == list(range(rows * blocks)), order
    # x fastest: program p is block p % blocks, whose loop runs p % blocks + 1 times
    trips = [p % blocks + 1 for p in order]
    assert trips == sorted(trips, reverse=True), trips
    assert order[:rows] == [blocks - 1 + r * blocks for r in range(rows)], order


@check("tape_recurrence_and_stored_max")
def _():
    R, N, BLOCK = 3, 53, 16

    def reference(X):
        return tape_recurrence_reference(X, BLOCK)

    bwd = kernel_gradients(tape_recurrence, (R,), {"X": randn(R, N)},
                           {"OUT": torch.empty(R), "MX": torch.empty(R, BLOCK)},
                           {"N": N}, {"BLOCK": BLOCK}, reference)
    schedule = bwd.schedule()
    assert "tapes each iteration's carried state" in schedule, schedule
    (tape,) = bwd.tapes()
    # h, m (16 floats each), flag (16 bytes), count (one i32, padded to 16)
    assert tape[1] == 64 + 64 + 16 + 16, tape
    # A tape of 3 programs * 4 iterations * 160 bytes = 1920 bytes. Under a
    # smaller budget it keeps every 2nd (1000) or every 4th (500) state and
    # replays the rest; with not even one state per program (400), or refused,
    # the loop is replayed from its start: the same gradients.
    for option, budget, taped in ((None, "1000", True), (None, "500", True),
                                  (None, "400", False), (False, None, False)):
        os.environ.pop("TRITONAD_TAPE_BUDGET", None)
        if budget is not None:
            os.environ["TRITONAD_TAPE_BUDGET"] = budget
        try:
            bwd = kernel_gradients(tape_recurrence, (R,), {"X": randn(R, N)},
                                   {"OUT": torch.empty(R), "MX": torch.empty(R, BLOCK)},
                                   {"N": N}, {"BLOCK": BLOCK}, reference, tape=option)
        finally:
            os.environ.pop("TRITONAD_TAPE_BUDGET", None)
        note = "tapes each iteration's carried state" if taped else "n(n-1)/2"
        assert note in bwd.schedule(), (budget, bwd.schedule())


@check("tape_inside_branch_and_loop")
def _():
    R, N, BLOCK, OUTER = 3, 37, 16, 2
    flag = torch.tensor([1, 0, 1], dtype=torch.int32)

    def reference(X):
        blocks = -(-N // BLOCK)
        xp = torch.cat([X, torch.zeros(R, blocks * BLOCK - N, dtype=X.dtype)], 1)
        total = torch.zeros(R, BLOCK, dtype=X.dtype)
        for o in range(OUTER):
            h = torch.zeros(R, BLOCK, dtype=X.dtype)
            for b in range(blocks):
                h = torch.sin(h) * 0.5 + xp[:, b * BLOCK:(b + 1) * BLOCK] * (o + 1)
            total = total + h
        return {"OUT": total * (flag > 0).to(X.dtype)[:, None]}

    bwd = kernel_gradients(tape_nested, (R,), {"X": randn(R, N)}, {"OUT": torch.empty(R, BLOCK)},
                           {"N": N, "OUTER": OUTER, "FLAG": flag}, {"BLOCK": BLOCK}, reference)
    assert "tapes each iteration's carried state" in bwd.schedule(), bwd.schedule()
