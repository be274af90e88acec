"""Kernels over (batch, head) pairs decoded from one grid axis: ``off_z = pid // H``,
``off_h = pid % H``, as attention and normalization kernels address their inputs.

The access analysis reads the quotient and remainder as digits of the program id
(Analysis/AccessAnalysis.cpp; lit: Analysis/affine-access-program-digits.mlir), so a
gradient such a kernel adds into a per-(batch, head) tile is a plain read-add-write
where the launch's strides keep the tiles apart, and an atomic add where they do not
(an input broadcast over the batch, stride 0) or where the check cannot tell (heads
outermost in memory: disjoint, but not in the digits' order).

CPU: the schedule. GPU: gradients against torch.autograd in each of those layouts,
fp32 and bf16, odd sizes.
"""

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

import triton.language as tl  # noqa: E402

from gpu_util import requires_gpu  # noqa: E402
from compile_util import compile_for_schedule  # noqa: E402


@triton.jit
def head_rms_norm_kernel(X, W, Y, stride_xz, stride_xh, stride_xl, stride_yz, stride_yh,
                         stride_yl, H, D, eps, BLOCK_D: tl.constexpr):
    # One program per (row, batch * head), the batch and head decoded from axis 1.
    row = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    cols = tl.arange(0, BLOCK_D)
    mask = cols < D
    x_row = X + off_z.to(tl.int64) * stride_xz + off_h.to(tl.int64) * stride_xh + row * stride_xl
    x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * (1.0 / tl.sqrt(tl.sum(x * x, axis=0) / D + eps)) * w
    y_row = Y + off_z.to(tl.int64) * stride_yz + off_h.to(tl.int64) * stride_yh + row * stride_yl
    tl.store(y_row + cols, y.to(Y.dtype.element_ty), mask=mask)


TYPES = dict(X="*fp32", W="*fp32", Y="*fp32", stride_xz="i32", stride_xh="i32",
             stride_xl="i32", stride_yz="i32", stride_yh="i32", stride_yl="i32", H="i32",
             D="i32", eps="fp32")


def _lines(schedule):
    return dict(line.split(": ", 1) for line in schedule.strip().splitlines()
                if not line.startswith(("loop ", "stabilizer ", "programs: ")))


def test_decoded_batch_and_head_keep_tiles_apart(always_compile):
    bwd = tritonad.grad(head_rms_norm_kernel)
    lines = _lines(compile_for_schedule(bwd, TYPES, dict(BLOCK_D=64)))
    assert lines["X"].startswith("plain when strides, masks and grid keep tiles disjoint, "
                                 "else atomic"), lines["X"]


def _rms_norm(x, w, eps):
    x = x.double()
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w.double()


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", ["contiguous", "broadcast_batch", "heads_outermost"])
def test_decoded_batch_and_head_grads_match_torch(dtype, layout):
    Z, H, L, D, eps = 3, 5, 37, 50, 1e-5
    if layout == "contiguous":
        x = torch.randn(Z, H, L, D, device="cuda", dtype=dtype)
        dx = torch.zeros_like(x)
        expand = lambda t: t  # noqa: E731
    elif layout == "broadcast_batch":  # one x for every batch: stride 0, shared gradient
        x = torch.randn(1, H, L, D, device="cuda", dtype=dtype)
        dx = torch.zeros_like(x)
        expand = lambda t: t.expand(Z, H, L, D)  # noqa: E731
    else:  # [H, Z, L, D] memory seen as [Z, H, L, D]
        x = torch.randn(H, Z, L, D, device="cuda", dtype=dtype).transpose(0, 1)
        dx = torch.zeros_like(x)
        expand = lambda t: t  # noqa: E731
    # (W in fp32: its gradient is the sum of every row's, added by atomics; in
    # bf16 those 555 roundings alone exceed the tolerance)
    w = torch.randn(D, device="cuda", dtype=torch.float32)
    dw = torch.zeros_like(w)
    y = torch.empty(Z, H, L, D, device="cuda", dtype=dtype)
    dy = torch.randn_like(y)
    xs, dxs = expand(x), expand(dx)
    args = (xs, w, y, *xs.stride()[:3], *y.stride()[:3], H, D, eps)
    bwd = tritonad.grad(head_rms_norm_kernel)
    bwd[(L, Z * H)](*args, **{bwd.shadows["X"]: dxs, bwd.shadows["W"]: dw,
                              bwd.shadows["Y"]: dy}, BLOCK_D=64)
    leaves = [x.detach().double().requires_grad_(), w.detach().double().requires_grad_()]
    ref = torch.autograd.grad(_rms_norm(expand(leaves[0]), leaves[1], eps), leaves,
                              dy.double())
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    for got, want in zip((dx, dw), ref):
        scale = want.abs().max().item()
        assert (got.double() - want).abs().max().item() <= tol * scale
