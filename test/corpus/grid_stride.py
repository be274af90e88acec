"""A persistent (grid-stride) row loop, the way Liger and Triton's tutorials write
kernels: each program handles rows pid, pid + P, pid + 2P, ... (P = tl.num_programs(0),
a runtime step) and stores each row; a weight shared by every row. ``check`` returns the
largest error of each gradient against fp64 torch, relative to its magnitude."""

import torch
import triton
import triton.language as tl

import tritonad


@triton.jit
def scaled_rows_persistent(X, W, Y, n_rows, N: tl.constexpr, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x = tl.load(X + row * N + cols, mask=mask, other=0.0).to(tl.float32)
        y = x * w / (1.0 + tl.sum(x * x, axis=0))
        tl.store(Y + row * N + cols, y, mask=mask)


def check(dtype, device, rows=37, n=29, programs=4):
    x = torch.randn(rows, n, device=device).to(dtype).requires_grad_()
    w = torch.randn(n, device=device).to(dtype).requires_grad_()
    f = tritonad.autograd(scaled_rows_persistent, outputs=("Y",))
    y = f[(programs,)](x, w, torch.empty_like(x), rows, N=n, BLOCK=triton.next_power_of_2(n))
    upstream = torch.randn(rows, n, device=device).to(dtype)
    y.backward(upstream)
    x64, w64 = (t.detach().double().requires_grad_() for t in (x, w))
    (x64 * w64 / (1 + (x64 * x64).sum(-1, keepdim=True))).backward(upstream.double())
    return {name: ((got.grad.double() - want.grad).abs().max() /
                   want.grad.abs().max()).item()
            for name, got, want in (("x", x, x64), ("w", w, w64))}
