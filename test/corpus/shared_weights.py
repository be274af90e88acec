"""A DyT layer (y = gamma * tanh(alpha * x) + beta) over blocks of rows, or one row per
program: alpha, gamma and beta are shared by every row, so their gradients are sums over
all rows, within a program's block (the adjoint of a broadcast) and across programs
(partial buffers, or atomics into an fp32 buffer for f16/bf16). Such sums must be
accumulated in fp32 and rounded once, whatever the inputs' dtype.

``check(dtype, device)`` returns the largest error of each gradient against fp64 torch,
relative to the fp64 gradient's magnitude. Used by test_weight_sums.py.
"""

import torch
import triton
import triton.language as tl

import tritonad


@triton.jit
def dyt_rows(X, Alpha, Gamma, Beta, Y, rows, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    r = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    c = tl.arange(0, BLOCK_N)
    mask = (r[:, None] < rows) & (c[None, :] < n)
    x = tl.load(X + r[:, None] * n + c[None, :], mask=mask, other=0.0)
    alpha = tl.load(Alpha)
    gamma = tl.load(Gamma + c, mask=c < n, other=0.0)
    beta = tl.load(Beta + c, mask=c < n, other=0.0)
    z = (alpha * x).to(tl.float32)
    tanh = 2.0 * tl.sigmoid(2.0 * z) - 1.0
    y = gamma[None, :] * tanh.to(x.dtype) + beta[None, :]
    tl.store(Y + r[:, None] * n + c[None, :], y, mask=mask)


@triton.jit
def dyt_one_row(X, Alpha, Gamma, Beta, Y, rows, n, BLOCK_M: tl.constexpr,
                BLOCK_N: tl.constexpr):
    """One row per program along axis 1, column blocks along axis 0 (as Liger's DyT):
    every program adds its row's contribution to alpha, gamma and beta, with atomics."""
    c = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    row = tl.program_id(1).to(tl.int64)
    mask = c < n
    x = tl.load(X + row * n + c, mask=mask, other=0.0).to(tl.float32)
    alpha = tl.load(Alpha).to(tl.float32)
    gamma = tl.load(Gamma + c, mask=mask, other=0.0).to(tl.float32)
    beta = tl.load(Beta + c, mask=mask, other=0.0).to(tl.float32)
    z = alpha * x
    y = gamma * (2.0 * tl.sigmoid(2.0 * z) - 1.0) + beta
    tl.store(Y + row * n + c, y, mask=mask)


def check(dtype, device, rows=1037, n=203, block_m=8):
    # Positive inputs and upstream gradients: alpha's, gamma's and beta's sums then do not
    # cancel, so their error relative to their value measures how they were rounded (a
    # cancelling sum's relative error is unbounded whatever its accumulation: alpha's, a
    # single sum, drew 1.6e-2 to 4.1e-2 with random signs).
    x = (torch.rand(rows, n, device=device) * 2 + 0.05).to(dtype).requires_grad_()
    alpha = torch.full((1,), 0.7, device=device).to(dtype).requires_grad_()
    gamma = (torch.randn(n, device=device) * 0.5 + 1).to(dtype).requires_grad_()
    beta = torch.randn(n, device=device).to(dtype).requires_grad_()
    if block_m is None:  # one row per program, 2-D grid
        f = tritonad.autograd(dyt_one_row, outputs=("Y",))
        grid = (triton.cdiv(n, 64), rows)
        y = f[grid](x, alpha, gamma, beta, torch.empty_like(x), rows, n, BLOCK_M=1, BLOCK_N=64)
    else:
        f = tritonad.autograd(dyt_rows, outputs=("Y",))
        y = f[(triton.cdiv(rows, block_m),)](x, alpha, gamma, beta, torch.empty_like(x), rows,
                                             n, BLOCK_M=block_m,
                                             BLOCK_N=triton.next_power_of_2(n))
    upstream = (torch.rand(rows, n, device=device) + 0.05).to(dtype)
    y.backward(upstream)
    leaves = [t.detach().double().requires_grad_() for t in (x, alpha, gamma, beta)]
    x64, a64, g64, b64 = leaves
    (g64 * torch.tanh(a64 * x64) + b64).backward(upstream.double())
    errors = {}
    for name, got, want in zip(("x", "alpha", "gamma", "beta"), (x, alpha, gamma, beta),
                               leaves):
        errors[name] = ((got.grad.double() - want.grad).abs().max() /
                        want.grad.abs().max()).item()
    return errors
