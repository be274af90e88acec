"""A cross-entropy whose ignored rows return early (the way library kernels write it),
and its check against fp64 torch (used by test_early_return.py)."""

import torch
import triton
import triton.language as tl

import tritonad

IGNORE = -100


@triton.jit
def cross_entropy_rows(X, Y, Loss, stride, n_cols, ignore_index, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    X += row * stride
    y = tl.load(Y + row)
    if y == ignore_index:
        tl.store(Loss + row, 0.0)
        return
    m = float("-inf")
    d = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        new_m = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp(m - new_m) + tl.sum(tl.exp(x - new_m), axis=0)
        m = new_m
    target_logit = tl.load(X + y).to(tl.float32)
    tl.store(Loss + row, m + tl.log(d) - target_logit)


def check(dtype, device, path, rows=203, vocab=5003, block=1024, seed=0):
    """The largest error of dL/dX (L = the sum of the rows' losses) against fp64 torch,
    relative to its largest magnitude; `path` is "autograd" or "grad"."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, vocab, generator=generator).to(device=device, dtype=dtype)
    y = torch.randint(0, vocab, (rows,), generator=generator)
    y[torch.rand(rows, generator=generator) < 0.3] = IGNORE
    y = y.to(device)
    loss = torch.empty(rows, device=device, dtype=torch.float32)
    upstream = torch.rand(rows, generator=generator).to(device)
    args = (y, loss, x.stride(0), vocab, IGNORE)
    if path == "autograd":
        x.requires_grad_()
        f = tritonad.autograd(cross_entropy_rows, outputs=("Loss",))
        f[(rows,)](x, *args, BLOCK=block).backward(upstream)
        got = x.grad
    else:
        cross_entropy_rows[(rows,)](x, *args, BLOCK=block)
        got = torch.zeros_like(x)
        bwd = tritonad.grad(cross_entropy_rows)
        bwd[(rows,)](x, *args, dX=got, dLoss=upstream.clone(), BLOCK=block)
    x64 = x.detach().double().requires_grad_()
    want = torch.nn.functional.cross_entropy(x64, y, ignore_index=IGNORE, reduction="none")
    want.backward(upstream.double())
    return ((got.double() - x64.grad).abs().max() / x64.grad.abs().max()).item()
