"""Longest programs first: a backward whose loops' trip counts vary by program reads its
program ids from the launch's order (cpp/include/tritonad/AutoDiff/ProgramOrder.h,
python/tritonad/_order.py). The gradients must not change, whatever the grid and the
dtype; the attention benchmarks measure what it buys (benchmarks/RESULTS.md). CPU: the
interpreter's check ``longest_programs_first``; lit: AutoDiff/order-programs.mlir.
"""

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

from gpu_util import requires_gpu  # noqa: E402
from corpus.loops import prefix_blocks_kernel, prefix_blocks_reference  # noqa: E402


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("rows, n, block", [(1, 1, 16), (3, 203, 16), (5, 1000, 64)])
def test_gradients_in_the_launch_order(dtype, rows, n, block):
    from tritonad import _order

    blocks = triton.cdiv(n, block)
    x = (torch.randn(rows, n, device="cuda") * 0.5).to(dtype)
    dout = torch.randn(rows * blocks * block, device="cuda")
    bwd = tritonad.grad(prefix_blocks_kernel)
    dx = torch.zeros_like(x)
    bwd[(blocks, rows)](x, torch.empty(rows * blocks * block, device="cuda"), n,
                        dx_ptr=dx, dout_ptr=dout, BLOCK=block)
    want = prefix_blocks_reference(x.float().cpu(), dout.cpu(), block)
    # Each element sums up to `blocks` programs' contributions of either sign, each
    # rounded to the gradient's dtype and added atomically (each add rounded): the error
    # is bounded by the contributions' magnitudes (the same sum of |contributions|), not
    # by the result, which cancellation may make small.
    magnitude = prefix_blocks_reference(x.float().cpu(), dout.abs().cpu(), block)
    eps = {torch.float32: 1e-6, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}[dtype]
    error = (dx.cpu().double() - want).abs()
    bound = (2 * blocks + 2) * eps * magnitude + 1e-30
    assert bool((error <= bound).all()), (float((error / bound).max()), blocks, dtype)
    strategies = [e.strategy for e in bwd.schedule().entries if e.kind == "programs"]
    assert strategies == ["longest-first"], bwd.schedule()
    order = [t for t in _order._CACHE.values() if len(t) == rows * blocks][-1].tolist()
    assert sorted(order) == list(range(rows * blocks))
    trips = [p % blocks + 1 for p in order]
    assert trips == sorted(trips, reverse=True)
