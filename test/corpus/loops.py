"""Loops: while loops (one advancing a pointer beside its counter, one storing each block), programs whose trip counts vary (longest first), loops
whose carried state is taped (a nonlinear recurrence, a stored running max, a
count and a flag; a taped loop inside a loop inside a branch).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def while_accumulate_kernel(x_ptr, y_ptr, n_blocks, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=x_ptr.dtype.element_ty)
    i = 0
    while i < n_blocks:
        cols = i * BLOCK + tl.arange(0, BLOCK)
        acc += tl.exp(tl.load(x_ptr + row * n + cols, mask=cols < n, other=float("-inf")))
        i += 1
    tl.store(y_ptr + row * BLOCK + tl.arange(0, BLOCK), acc)


@triton.jit
def while_pointer_advance_kernel(x_ptr, y_ptr, stride, n, BLOCK: tl.constexpr):
    # y[row] = sum(exp(x[row])): the pointer advanced beside the counter in a
    # while loop (`p += BLOCK; k += BLOCK`), as fuzz seeds 0, 6, 84 write it.
    row = tl.program_id(0)
    p = x_ptr + row * stride + tl.arange(0, BLOCK)
    acc = tl.zeros([], dtype=x_ptr.dtype.element_ty)
    k = 0
    while k < n:
        cols = k + tl.arange(0, BLOCK)
        x = tl.load(p, mask=cols < n, other=float("-inf"))
        acc += tl.sum(tl.exp(x), axis=0)
        p += BLOCK
        k += BLOCK
    tl.store(y_ptr + row, acc)


@triton.jit
def while_store_kernel(x_ptr, y_ptr, stride, n, BLOCK: tl.constexpr):
    # y = exp(x) * x, a block per iteration of a counted while loop that stores
    # (`while k < n: ...; tl.store(...); k += BLOCK`): refused before, as a store
    # in a while loop; the for loop it spells (Prepare/CountedLoops.cpp) derives.
    row = tl.program_id(0)
    k = 0
    while k < n:
        cols = k + tl.arange(0, BLOCK)
        # (in fp32 at least: bf16 promotes, fp64 stays fp64)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n, other=0.0) + \
            tl.zeros([BLOCK], dtype=tl.float32)
        y = tl.exp(x) * x
        tl.store(y_ptr + row * stride + cols, y.to(y_ptr.dtype.element_ty), mask=cols < n)
        k += BLOCK


@triton.jit
def prefix_blocks_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Program (b, h) sums exp(x) * (index + 1) over the blocks 0..b of row h:
    # its loop's trip count grows with b, as a causal attention's does.
    b = tl.program_id(0)
    h = tl.program_id(1)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, (b + 1) * BLOCK, BLOCK):
        at = start + offs
        x = tl.load(x_ptr + h * n + at, mask=at < n, other=0.0).to(tl.float32)
        acc += tl.exp(x) * (at + 1).to(tl.float32)  # (tl.exp: fp32 / fp64 only)
    tl.store(out_ptr + (h * tl.num_programs(0) + b) * BLOCK + offs, acc)


def prefix_blocks_reference(x, dout, block):
    """dx of prefix_blocks_kernel, by torch.autograd in fp64."""
    rows, n = x.shape
    blocks = -(-n // block)
    x = x.double().requires_grad_(True)
    padded = torch.nn.functional.pad(x, (0, blocks * block - n), value=float("-inf"))
    terms = (padded.exp() * torch.arange(1, blocks * block + 1, dtype=torch.float64))
    sums = terms.view(rows, blocks, block).cumsum(1)  # (program b: blocks 0..b)
    (sums * dout.double().view(rows, blocks, block)).sum().backward()
    return x.grad


@triton.jit
def tape_recurrence(X, OUT, MX, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    h = tl.zeros([BLOCK], dtype=tl.float32)
    m = tl.full([BLOCK], -1e30, tl.float32)
    flag = lanes < 0
    count = 0
    for off in range(0, N, BLOCK):
        cols = off + lanes
        mask = cols < N
        x = tl.load(X + row * N + cols, mask=mask, other=0.0)
        h = tl.sin(h) * 0.5 + x
        m = tl.maximum(m, tl.where(mask, x, -1e30))
        flag = flag | (x > 1.0)
        count += 1
    scale = tl.where(flag, 2.0, 1.0) * count
    tl.store(OUT + row, tl.sum(h * scale, 0))
    tl.store(MX + row * BLOCK + lanes, m)


def tape_recurrence_reference(X, BLOCK):
    """tape_recurrence's outputs {"OUT", "MX"} in torch (X: [rows, N])."""
    R, N = X.shape
    blocks = -(-N // BLOCK)
    xp = torch.cat([X, torch.zeros(R, blocks * BLOCK - N, dtype=X.dtype, device=X.device)], 1)
    h = torch.zeros(R, BLOCK, dtype=X.dtype, device=X.device)
    m = torch.full((R, BLOCK), -1e30, dtype=X.dtype, device=X.device)
    flag = torch.zeros(R, BLOCK, dtype=torch.bool, device=X.device)
    for b in range(blocks):
        x = xp[:, b * BLOCK:(b + 1) * BLOCK]
        mask = (torch.arange(b * BLOCK, (b + 1) * BLOCK, device=X.device) < N)[None, :]
        h = torch.sin(h) * 0.5 + x
        m = torch.maximum(m, torch.where(mask, x, torch.full_like(x, -1e30)))
        flag = flag | (x > 1.0)
    scale = torch.where(flag, 2.0, 1.0).to(X.dtype) * blocks
    return {"OUT": (h * scale).sum(1), "MX": m}


@triton.jit
def tape_nested(X, FLAG, OUT, N, OUTER, BLOCK: tl.constexpr):
    # The taped loop inside a loop inside a data-dependent branch: each reverse
    # of the outer loop's body re-runs the inner forward, which rewrites the tape.
    row = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    if tl.load(FLAG + row) > 0:
        for o in range(0, OUTER):
            h = tl.zeros([BLOCK], dtype=tl.float32)
            for off in range(0, N, BLOCK):
                cols = off + lanes
                x = tl.load(X + row * N + cols, mask=cols < N, other=0.0)
                h = tl.sin(h) * 0.5 + x * (o + 1)
            total += h
    tl.store(OUT + row * BLOCK + lanes, total)
