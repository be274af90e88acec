"""Stores in a loop that write one column of a tile per iteration: lanes spread
along rows at a constant stride S, the loop moving the column by one, for a trip
count that a constant bounds (`for j in range(0, min(BC, n - start))`, as
flash-linear-attention's chunk_gla_fwd_A_kernel_intra_sub_intra writes its intra-chunk
scores). The iterations interleave inside the rows: distinct addresses when S is at
least the columns they span. Refused before ("addresses may repeat across
iterations"); a trip bound past S still is.

``check(name, dtype, device, mode)`` launches one kernel through
``tritonad.autograd`` on fresh random inputs of odd sizes and returns the largest
error of each gradient against fp64 torch, relative to its magnitude.
"""

import torch
import triton
import triton.language as tl

import tritonad
from corpus import fixed_offsets


@triton.jit
def causal_block_scores(X, W, A, n_rows, D: tl.constexpr, BC: tl.constexpr):
    """a[r, j] = x[r] . w[start + j] for the j <= r - start of r's block of BC rows
    (start its first row), 0 above the diagonal: one column per iteration of a loop
    over the block's rows, then the upper triangle zeroed by a second store."""
    pid = tl.program_id(0)
    start = pid * BC
    rows = start + tl.arange(0, BC)
    cols = tl.arange(0, BC)
    d = tl.arange(0, D)
    in_rows = rows < n_rows
    x = tl.load(X + rows[:, None] * D + d[None, :], mask=in_rows[:, None], other=0.0)
    x = x.to(tl.float32)
    w_ptr = W + start * D + d
    for j in range(0, min(BC, n_rows - start)):
        w = tl.load(w_ptr).to(tl.float32)
        score = tl.sum(x * w[None, :], 1)
        tl.store(A + rows * BC + j, score.to(A.dtype.element_ty), mask=in_rows)
        w_ptr += D
    zeros = tl.zeros([BC, BC], dtype=tl.float32)
    tl.store(A + rows[:, None] * BC + cols[None, :], zeros.to(A.dtype.element_ty),
             mask=in_rows[:, None] & (cols[None, :] > tl.arange(0, BC)[:, None]))


@triton.jit
def wrapping_columns(X, A, n_rows, BC: tl.constexpr):
    """a[r, j] = x[r] * (j + 1) with columns j < min(2 * BC, ...) at row stride BC: the
    columns of row r run into row r + 1's, whose iterations overwrite them (refused)."""
    pid = tl.program_id(0)
    rows = pid * BC + tl.arange(0, BC)
    x = tl.load(X + rows, mask=rows < n_rows, other=0.0)
    for j in range(0, min(2 * BC, n_rows)):
        tl.store(A + rows * BC + j, x * (j + 1.0), mask=rows < n_rows)


@triton.jit
def overwritten_by_constant(X, Y, n, PLACE: tl.constexpr, BLOCK: tl.constexpr):
    """y = x * x, then every third element overwritten by a constant: right after
    (PLACE 0), under a branch on the program (1), or by a loop's last iteration (2).
    The constant carries no gradient, and it takes the upstream gradient away from
    the elements it overwrites."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + offs, (x * x).to(Y.dtype.element_ty), mask=mask)
    third = mask & (offs % 3 == 0)
    fill = tl.full([BLOCK], 0.5, tl.float32).to(Y.dtype.element_ty)
    if PLACE == 0:
        tl.store(Y + offs, fill, mask=third)
    if PLACE == 1:
        if tl.program_id(0) >= 0:
            tl.store(Y + offs, fill, mask=third)
    if PLACE == 2:
        for _ in range(0, 2):
            tl.store(Y + offs, fill, mask=third)


@triton.jit
def rewritten_each_iteration(X, Y, n, K: tl.constexpr, BLOCK: tl.constexpr):
    """Every iteration stores y = x * (k + 1), then a constant over every third
    element: only the last iteration's values survive, and of them the constant's."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask, other=0.0).to(tl.float32)
    for k in range(K):
        tl.store(Y + offs, (x * (k + 1.0)).to(Y.dtype.element_ty), mask=mask)
        tl.store(Y + offs, (tl.zeros_like(x) + 0.5).to(Y.dtype.element_ty),
                 mask=mask & (offs % 3 == 0))


@triton.jit
def band_after_tiles(X, Y, N, BLOCK: tl.constexpr):
    """A row stored tile by tile (y = exp(x)), then -1 over the columns c < 2 * BLOCK
    with c % 5 == row % 5: a constant store spanning several tiles of the loop."""
    row = tl.program_id(0)
    for k in range(0, N, BLOCK):
        cols = k + tl.arange(0, BLOCK)
        x = tl.load(X + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
        tl.store(Y + row * N + cols, tl.exp(x).to(Y.dtype.element_ty), mask=cols < N)
    band = tl.arange(0, 2 * BLOCK)
    minus_one = tl.zeros([2 * BLOCK], tl.float32) - 1.0
    tl.store(Y + row * N + band, minus_one.to(Y.dtype.element_ty),
             mask=(band < N) & (band % 5 == row % 5))


def _rewritten_each_iteration(dtype, device, mode, n=301, block=64, k=3):
    x = torch.randn(n, device=device).to(dtype).requires_grad_()
    f = tritonad.autograd(rewritten_each_iteration, outputs=("Y",), mode=mode)
    y = f[(triton.cdiv(n, block),)](x, torch.empty_like(x), n, K=k, BLOCK=block)
    upstream = torch.randn(n, device=device).to(dtype)
    y.backward(upstream)
    x64 = x.detach().double().requires_grad_()
    kept = (torch.arange(n, device=device) % 3 != 0).double()
    (x64 * k * kept + 0.5 * (1 - kept)).backward(upstream.double())
    return [("x", x.grad, x64.grad)]


def _band_after_tiles(dtype, device, mode, rows=7, cols=100, block=16):
    x = torch.randn(rows, cols, device=device).to(dtype).requires_grad_()
    f = tritonad.autograd(band_after_tiles, outputs=("Y",), mode=mode)
    y = f[(rows,)](x, torch.empty_like(x), cols, BLOCK=block)
    upstream = torch.randn(rows, cols, device=device).to(dtype)
    y.backward(upstream)
    x64 = x.detach().double().requires_grad_()
    c = torch.arange(cols, device=device)
    band = torch.stack([(c < 2 * block) & (c % 5 == r % 5) for r in range(rows)]).double()
    (torch.exp(x64) * (1 - band) - band).backward(upstream.double())
    return [("x", x.grad, x64.grad)]


def _overwritten_by_constant(place):
    def run(dtype, device, mode, n=301, block=64):
        x = torch.randn(n, device=device).to(dtype).requires_grad_()
        f = tritonad.autograd(overwritten_by_constant, outputs=("Y",), mode=mode)
        y = f[(triton.cdiv(n, block),)](x, torch.empty_like(x), n, PLACE=place, BLOCK=block)
        upstream = torch.randn(n, device=device).to(dtype)
        saved = upstream.clone()
        y.backward(upstream)
        # (the backward consumes its copy of the upstream, not the caller's)
        assert torch.equal(upstream, saved), "the upstream gradient was modified"
        x64 = x.detach().double().requires_grad_()
        kept = (torch.arange(n, device=device) % 3 != 0).double()
        (x64 * x64 * kept + 0.5 * (1 - kept)).backward(upstream.double())
        return [("x", x.grad, x64.grad)]
    return run


def _causal_block_scores(dtype, device, mode, rows=45, d=16, bc=16):
    x, w = (torch.randn(rows, d, device=device).to(dtype).requires_grad_() for _ in range(2))
    f = tritonad.autograd(causal_block_scores, outputs=("A",), mode=mode)
    a = f[(triton.cdiv(rows, bc),)](x, w, torch.empty(rows, bc, device=device, dtype=dtype),
                                    rows, D=d, BC=bc)
    upstream = torch.randn(rows, bc, device=device).to(dtype)
    a.backward(upstream)
    x64, w64 = (t.detach().double().requires_grad_() for t in (x, w))
    blocks = []
    for start in range(0, rows, bc):
        scores = x64[start:start + bc] @ w64[start:start + bc].T
        blocks.append(torch.nn.functional.pad(scores.tril(), (0, bc - scores.shape[1])))
    torch.cat(blocks).backward(upstream.double())
    return [("x", x.grad, x64.grad), ("w", w.grad, w64.grad)]


_RUNS = {"causal_block_scores": _causal_block_scores,
         "overwritten_after": _overwritten_by_constant(0),
         "overwritten_in_branch": _overwritten_by_constant(1),
         "overwritten_in_loop": _overwritten_by_constant(2),
         "rewritten_each_iteration": _rewritten_each_iteration,
         "band_after_tiles": _band_after_tiles}
CASES = list(_RUNS)


def check(name, dtype, device, mode="auto"):
    """The largest error of each gradient of case `name`, relative to its magnitude."""
    return fixed_offsets.relative_errors(_RUNS[name](dtype, device, mode))
