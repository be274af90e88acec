"""Grids of two and three axes whose programs share inputs along an axis other than 0
(a row scale that every program along axis 1 reads, a per-batch factor that the
programs of a batch read): in mode="deterministic" each such input's gradient goes to
a partial buffer with a slot per program along the axes that share it; the programs
along the other axes write disjoint addresses of one slot, so the workspace holds a
copy of the shadow per program of the sharing axes only. The slots are summed after
the kernel in a fixed order, in fp32, and rounded once: no atomics, bitwise
reproducible. And a transposed view (stride 1 along a tile's rows), whose tiles the
launch proves disjoint with its rows as the inner dim.

``check(name, dtype, device, mode)`` launches one kernel through ``tritonad.autograd``
on fresh random inputs of odd sizes and returns the largest error of each gradient
against fp64 torch, relative to its magnitude; ``gradients`` the gradients themselves;
``schedule_of`` what deriving it on the CPU needs.
"""

import torch
import triton
import triton.language as tl

import tritonad


@triton.jit
def row_col_scale_2d(Y, X, R, W, stride, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """y = x * r[m] + w[n] * x * x on a 2-D grid of tiles: r indexed by the tile's rows
    (programs along axis 1 share it), w by its columns (programs along axis 0 share it)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * stride + rn[None, :], mask=mask, other=0.0).to(tl.float32)
    r = tl.load(R + rm, mask=rm < M, other=0.0).to(tl.float32)
    w = tl.load(W + rn, mask=rn < N, other=0.0).to(tl.float32)
    y = x * r[:, None] + w[None, :] * x * x
    tl.store(Y + rm[:, None] * stride + rn[None, :], y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def batched_scales_3d(Y, X, R, W, U, stride_b, stride_m, M, N, BM: tl.constexpr,
                      BN: tl.constexpr):
    """y[b] = tanh(x[b] * r[m] + w[n]) * u[b] on a grid (m tiles, n tiles, batches): r is
    shared along axes 1 and 2, w along 0 and 2, u along 0 and 1."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_b = tl.program_id(2)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    offsets = pid_b * stride_b + rm[:, None] * stride_m + rn[None, :]
    x = tl.load(X + offsets, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(R + rm, mask=rm < M, other=0.0).to(tl.float32)
    w = tl.load(W + rn, mask=rn < N, other=0.0).to(tl.float32)
    u = tl.load(U + pid_b).to(tl.float32)
    y = _tanh(x * r[:, None] + w[None, :]) * u
    tl.store(Y + offsets, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def transposed_scale_2d(Y, X, R, stride_xm, stride_xn, M, N, BM: tl.constexpr,
                        BN: tl.constexpr):
    """y = exp(x * r[m]) * 0.5 with x read through strides (stride_xm, stride_xn), here a
    transposed view (stride 1 along m): its tiles are disjoint only with dim 0 taken as
    the inner one, which the launch checks; r is shared along axis 1."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * stride_xm + rn[None, :] * stride_xn, mask=mask,
                other=0.0).to(tl.float32)
    r = tl.load(R + rm, mask=rm < M, other=0.0).to(tl.float32)
    y = tl.exp(x * r[:, None]) * 0.5
    tl.store(Y + rm[:, None] * N + rn[None, :], y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _tanh(z):
    # (smooth at 0: the spelling through abs(z) has abs's subgradient 0 there, which
    # torch.autograd gives too, but bf16 inputs make z exactly 0 now and then)
    return 2.0 * tl.sigmoid(2.0 * z) - 1.0


def _row_col(dtype, device, mode, rows=45, cols=83, bm=16, bn=32):
    x = torch.randn(rows, cols, device=device).to(dtype).requires_grad_()
    r = torch.randn(rows, device=device).to(dtype).requires_grad_()
    w = torch.randn(cols, device=device).to(dtype).requires_grad_()
    f = tritonad.autograd(row_col_scale_2d, outputs=("Y",), mode=mode)
    y = f[(triton.cdiv(rows, bm), triton.cdiv(cols, bn))](torch.empty_like(x), x, r, w,
                                                          x.stride(0), rows, cols, BM=bm, BN=bn)
    upstream = torch.randn(rows, cols, device=device).to(dtype)
    y.backward(upstream)
    x64, r64, w64 = (t.detach().double().requires_grad_() for t in (x, r, w))
    (x64 * r64[:, None] + w64 * x64 * x64).backward(upstream.double())
    return [("x", x.grad, x64.grad), ("r", r.grad, r64.grad), ("w", w.grad, w64.grad)]


def _batched(dtype, device, mode, batches=3, rows=37, cols=51, bm=16, bn=16):
    x = torch.randn(batches, rows, cols, device=device).to(dtype).requires_grad_()
    r, w, u = (torch.randn(n, device=device).to(dtype).requires_grad_()
               for n in (rows, cols, batches))
    f = tritonad.autograd(batched_scales_3d, outputs=("Y",), mode=mode)
    grid = (triton.cdiv(rows, bm), triton.cdiv(cols, bn), batches)
    y = f[grid](torch.empty_like(x), x, r, w, u, x.stride(0), x.stride(1), rows, cols,
                BM=bm, BN=bn)
    upstream = torch.randn(batches, rows, cols, device=device).to(dtype)
    y.backward(upstream)
    x64, r64, w64, u64 = (t.detach().double().requires_grad_() for t in (x, r, w, u))
    (torch.tanh(x64 * r64[:, None] + w64) * u64[:, None, None]).backward(upstream.double())
    return [("x", x.grad, x64.grad), ("r", r.grad, r64.grad), ("w", w.grad, w64.grad),
            ("u", u.grad, u64.grad)]


def _transposed(dtype, device, mode, rows=39, cols=45, bm=16, bn=16):
    x = torch.randn(cols, rows, device=device).to(dtype).t().requires_grad_()
    r = (torch.rand(rows, device=device) - 0.5).to(dtype).requires_grad_()
    f = tritonad.autograd(transposed_scale_2d, outputs=("Y",), mode=mode)
    y = f[(triton.cdiv(rows, bm), triton.cdiv(cols, bn))](
        torch.empty(rows, cols, device=device, dtype=dtype), x, r, x.stride(0), x.stride(1),
        rows, cols, BM=bm, BN=bn)
    upstream = torch.randn(rows, cols, device=device).to(dtype)
    y.backward(upstream)
    x64, r64 = (t.detach().double().requires_grad_() for t in (x, r))
    (torch.exp(x64 * r64[:, None]) * 0.5).backward(upstream.double())
    return [("x", x.grad, x64.grad), ("r", r.grad, r64.grad)]


_RUNS = {"row_col": _row_col, "batched": _batched, "transposed": _transposed}
CASES = list(_RUNS)


def check(name, dtype, device, mode="deterministic"):
    """The largest relative error of each gradient of case `name`."""
    return {grad_name: ((got.double() - want).abs().max()
                        / want.abs().max().clamp_min(1e-30)).item()
            for grad_name, got, want in _RUNS[name](dtype, device, mode)}


def gradients(name, dtype, device, mode="deterministic"):
    """The gradients case `name` computes (for comparing two runs bitwise)."""
    return {grad_name: got for grad_name, got, _ in _RUNS[name](dtype, device, mode)}


def schedule_of(name, mode, dtype="fp32"):
    """The backward of case `name`, its argument types and constexprs (for
    compile_util.compile_on_cpu)."""
    pointer = f"*{dtype}"
    if name == "row_col":
        bwd = tritonad.grad(row_col_scale_2d, mode=mode)
        args = dict(Y=pointer, X=pointer, R=pointer, W=pointer, stride="i32", M="i32",
                    N="i32")
        return bwd, args, dict(BM=16, BN=32)
    if name == "transposed":
        bwd = tritonad.grad(transposed_scale_2d, mode=mode)
        args = dict(Y=pointer, X=pointer, R=pointer, stride_xm="i32", stride_xn="i32",
                    M="i32", N="i32")
        return bwd, args, dict(BM=16, BN=16)
    bwd = tritonad.grad(batched_scales_3d, mode=mode)
    args = dict(Y=pointer, X=pointer, R=pointer, W=pointer, U=pointer, stride_b="i32",
                stride_m="i32", M="i32", N="i32")
    return bwd, args, dict(BM=16, BN=16)
