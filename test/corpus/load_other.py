"""Masked loads whose `other` is a differentiated value: the lanes the mask turns off
read it, so their gradient is its own (`tl.load(x + offs, mask=m, other=w)` pads with
a loaded weight). tritonad dropped it before (the load's adjoint went to memory only):
a silently wrong gradient, 0 for w.

``check(name, dtype, device, mode)`` launches one kernel through ``tritonad.autograd``
on fresh random inputs of odd sizes and returns the largest error of each gradient
against fp64 torch, relative to its magnitude.
"""

import torch
import triton
import triton.language as tl

import tritonad
from corpus import fixed_offsets


@triton.jit
def padded_by_weight(X, W, Y, n, BLOCK: tl.constexpr):
    """y = x * x over n lanes, then 7 more lanes that read w (the mask's `other`)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    w = tl.load(W).to(tl.float32)
    x = tl.load(X + offs, mask=offs < n, other=w)
    tl.store(Y + offs, (x * x).to(Y.dtype.element_ty), mask=offs < n + 7)


@triton.jit
def rows_padded_by_bias(X, B, Y, n, stride, BLOCK: tl.constexpr):
    """y[r] = sum over BLOCK lanes of exp(v), v = x[r, c] for c < n, else b[r]."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    b = tl.load(B + row)
    v = tl.load(X + row * stride + cols, mask=cols < n, other=b).to(tl.float32)
    tl.store(Y + row, tl.sum(tl.exp(v), axis=0).to(Y.dtype.element_ty))


def _padded_by_weight(dtype, device, mode, n=101, block=64):
    x = torch.randn(n, device=device).to(dtype).requires_grad_()
    w = torch.randn(1, device=device).to(dtype).requires_grad_()
    f = tritonad.autograd(padded_by_weight, outputs=("Y",), mode=mode)
    y = f[(triton.cdiv(n + 7, block),)](x, w, torch.empty(n + 7, device=device, dtype=dtype),
                                        n, BLOCK=block)
    upstream = torch.randn(n + 7, device=device)
    # (w's gradient, a single sum of 7 terms, is measured against itself: positive
    # terms keep it from cancelling to near 0, where fp32's rounding of the terms
    # would be a large fraction of it)
    upstream[n:] = upstream[n:].abs() + 0.5
    upstream = upstream.to(dtype)
    y.backward(upstream)
    x64, w64 = (t.detach().double().requires_grad_() for t in (x, w))
    (torch.cat([x64, w64.expand(7)]) ** 2).backward(upstream.double())
    return [("x", x.grad, x64.grad), ("w", w.grad, w64.grad)]


def _rows_padded_by_bias(dtype, device, mode, rows=13, n=45, block=64):
    x = torch.randn(rows, n, device=device).to(dtype).requires_grad_()
    b = torch.randn(rows, device=device).to(dtype).requires_grad_()
    f = tritonad.autograd(rows_padded_by_bias, outputs=("Y",), mode=mode)
    y = f[(rows,)](x, b, torch.empty(rows, device=device, dtype=dtype), n, x.stride(0),
                   BLOCK=block)
    upstream = torch.randn(rows, device=device).to(dtype)
    y.backward(upstream)
    x64, b64 = (t.detach().double().requires_grad_() for t in (x, b))
    (torch.exp(x64).sum(1) + (block - n) * torch.exp(b64)).backward(upstream.double())
    return [("x", x.grad, x64.grad), ("b", b.grad, b64.grad)]


_RUNS = {"padded_by_weight": _padded_by_weight, "rows_padded_by_bias": _rows_padded_by_bias}
CASES = list(_RUNS)


def check(name, dtype, device, mode="auto"):
    """The largest error of each gradient of case `name`, relative to its magnitude."""
    return fixed_offsets.relative_errors(_RUNS[name](dtype, device, mode))
