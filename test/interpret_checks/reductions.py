"""Reductions and scans: f16 adjoints summed in f32, a product tl.reduce (rows with
zeros), a first-order linear recurrence through tl.associative_scan.
"""

import torch

import tritonad
from interpret_checks import check
from interpreter_util import GEN, assert_close, kernel_gradients, randn
from corpus.scans import recurrence_kernel, recurrence_reference
from corpus.small_kernels import f16_products_summed, row_product_kernel


@check("f16_adjoints_sum_in_f32")
def _():
    # dx = sum_i w_i: integers, exact in f16 one by one, whose running sum
    # passes 2048 (f16's spacing grows to 2, then 4): summed in f16 it would
    # round hundreds of times; summed in f32 and rounded once, it is the exact
    # sum rounded to f16.
    n_blocks, block = 517, 16
    x = torch.ones(block, dtype=torch.float16)
    w = torch.randint(8, 17, (n_blocks * block,)).to(torch.float16)  # (sums >= 517 * 8)
    bwd = tritonad.grad(f16_products_summed)
    dx = torch.zeros_like(x)
    bwd[(1,)](x, w, torch.empty(block), n_blocks, dx_ptr=dx, dout_ptr=torch.ones(block),
                BLOCK=block)
    exact = w.double().view(n_blocks, block).sum(0)
    assert float(exact.min()) > 4096, exact
    assert torch.equal(dx, exact.half()), (dx, exact)


@check("product_reduce")
def _():
    # Rows with no zero, one zero and two zeros: torch.prod's gradient is finite
    # in each (the product of the other elements), which a division would not give.
    rows, cols = 5, 37
    x = 0.5 + torch.rand(rows, cols, generator=GEN)
    x[1, 7] = 0.0
    x[2, 3] = x[2, 30] = 0.0
    kernel_gradients(row_product_kernel, (rows,), {"x_ptr": x}, {"out_ptr": torch.empty(rows)},
                     {"n_cols": cols}, {"BLOCK": 64},
                     lambda x_ptr: {"out_ptr": x_ptr.prod(1)}, rtol=1e-4, atol=1e-6)


@check("linear_recurrence_scan")
def _():
    """tl.associative_scan with the affine-map combiner: a first-order linear
    recurrence, forward and reverse, with a masked tail, against a loop in torch."""
    rows, cols = 5, 43
    for reverse in (False, True):
        a = randn(rows, cols) * 2
        a[0, 7] = -30.0  # sigmoid(a) = 1e-13: the recurrence all but restarts
        b = randn(rows, cols)

        def reference(a_ptr, b_ptr):
            h, p = recurrence_reference(a_ptr, b_ptr, reverse)
            return {"h_ptr": h, "p_ptr": p}

        kernel_gradients(recurrence_kernel, (rows,), {"a_ptr": a, "b_ptr": b},
                         {"h_ptr": torch.empty(rows, cols), "p_ptr": torch.empty(rows, cols)},
                         {"stride": cols, "n_cols": cols}, {"BLOCK": 64, "REVERSE": reverse},
                         reference, rtol=1e-4, atol=1e-5)


@check("partial_slot_sums")
def _():
    # The partial buffers' slots summed after a backward (_partial._sum_slots): five
    # buffers, one a strided view (summed by torch), the four contiguous ones in one
    # launch of _add_slot_sums; spans below the slot, some overwriting an
    # uninitialized shadow, others adding to what it holds.
    from tritonad import _partial

    workers, slot = 7, 48
    base = randn(20, 2)
    targets = [randn(45), randn(1), randn(3, 11), randn(48), base[:, 1]]
    names = [f"d{i}" for i in range(len(targets))]
    workspace = randn(len(targets), workers, slot)
    overwrite = {"d0", "d3", "d4"}
    before, other_column = [t.clone() for t in targets], base[:, 0].clone()
    _partial._sum_slots(workspace, names, targets, overwrite, workers, slot)
    for group, (name, target, old) in enumerate(zip(names, targets, before)):
        span = 1 + sum((n - 1) * s for n, s in zip(target.shape, target.stride()))
        summed = workspace[group, :, :span].double().sum(dim=0).as_strided(
            target.shape, target.stride())
        expected = summed if name in overwrite else old.double() + summed
        assert_close(name, target.double(), expected, rtol=1e-6, atol=1e-6)
    assert torch.equal(base[:, 0], other_column)
