"""A reversed loop carries the running sum of an f16 or bf16 value's adjoint in f32.

A gradient that many iterations reach (an input every iteration of a loop reads, a
query tile's dQ over every key block of an attention loop) was summed in the value's own
dtype: every iteration rounded the running sum. The reversed loop now carries it in f32
and rounds it once after the loop (each iteration's contribution keeps its own rounding:
see summedType in GradientUtils.h and addToSum in ScfRules.cpp for what the alternatives
cost). The check: integer contributions, each exact in f16 / bf16, whose sum passes the
dtype's exact-integer range, so that the gradient must equal the exact sum rounded once
(summed in the dtype, it is off by tens). CPU: the interpreter's check
``f16_adjoints_sum_in_f32``; lit: AutoDiff/f16-adjoint-sums.mlir. GPU: below.
"""

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

from gpu_util import requires_gpu  # noqa: E402
from corpus.small_kernels import f16_products_summed  # noqa: E402


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype, n_blocks, past", [(torch.float16, 517, 4096),
                                                   (torch.bfloat16, 101, 512)])
def test_many_contributions_are_rounded_once(dtype, n_blocks, past):
    block = 16
    x = torch.ones(block, dtype=dtype, device="cuda")
    w = torch.randint(8, 17, (n_blocks * block,), device="cuda").to(dtype)  # (sums >= 8 n_blocks)
    exact = w.double().view(n_blocks, block).sum(0)
    assert float(exact.min()) > past
    bwd = tritonad.grad(f16_products_summed)
    dx = torch.zeros_like(x)
    bwd[(1,)](x, w, torch.empty(block, device="cuda"), n_blocks, dx_ptr=dx,
              dout_ptr=torch.ones(block, device="cuda"), BLOCK=block)
    torch.testing.assert_close(dx, exact.to(dtype), rtol=0, atol=0)
