"""Adjoints of f16 and bf16 values are summed in f32 and rounded once (GradientUtils).

A gradient that many contributions reach (a query tile's dQ over every key block of an
attention loop, an input read by each iteration) was summed in the value's own dtype:
every iteration rounded the running sum. It is now carried in f32 through the reversed
loop and rounded once after it, and the f32 operand of an f16 cast takes its result's
adjoint before rounding. The check: integer contributions, each exact in f16 / bf16, whose
sum passes the dtype's exact-integer range, so that the gradient must equal the exact sum
rounded once (summed in the dtype, it is off by tens). CPU: the interpreter's check
``f16_adjoints_sum_in_f32``; lit: AutoDiff/f16-adjoint-sums.mlir. GPU: below.
"""

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

from gpu_util import requires_gpu  # noqa: E402
from interpret_checks import f16_products_summed  # noqa: E402


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype, n_blocks, past", [(torch.float16, 517, 4096),
                                                   (torch.bfloat16, 101, 512)])
def test_many_contributions_are_rounded_once(dtype, n_blocks, past):
    block = 16
    x = torch.ones(block, dtype=dtype, device="cuda")
    w = torch.randint(1, 17, (n_blocks * block,), device="cuda").to(dtype)
    exact = w.double().view(n_blocks, block).sum(0)
    assert float(exact.min()) > past
    bwd = tritonad.grad(f16_products_summed)
    dx = torch.zeros_like(x)
    bwd[(1,)](x, w, torch.empty(block, device="cuda"), n_blocks, dx_ptr=dx,
              dout_ptr=torch.ones(block, device="cuda"), BLOCK=block)
    torch.testing.assert_close(dx, exact.to(dtype), rtol=0, atol=0)
