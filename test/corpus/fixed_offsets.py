"""Kernels whose addresses start at an offset the access analysis cannot express
as an affine form of program ids and lanes, but which is fixed within a program:
a digit of a program id's digit (``(pid // NV) % H``, a head decoded after a
value tile, as flash-linear-attention's chunk kernels decode (tile, batch, head)
from one grid axis), or an index loaded once before the loop. A loop over the
sequence's chunks then stores each chunk's output at its own addresses: the
iterations are compared by what moves and what spreads, whatever the fixed
offset is (before, such stores were refused as "addresses may repeat across
iterations").

``check(name, dtype, device, mode)`` launches one kernel through
``tritonad.autograd`` on fresh random inputs of odd sizes and returns the largest
error of each gradient against fp64 torch, relative to its magnitude.
"""

import torch
import triton
import triton.language as tl

import tritonad

SIZES = dict(batch=2, length=45, heads=3, width=40, chunk=16, tile=32)


@triton.jit
def _tile_batch_head(NUM_TILES, H: tl.constexpr):
    """(value tile, batch, head) of this program: one grid axis, value tiles innermost."""
    pid = tl.program_id(0)
    rest = pid // NUM_TILES
    return pid % NUM_TILES, rest // H, rest % H


@triton.jit
def decayed_chunk_state(X, Y, decay, T, H: tl.constexpr, V: tl.constexpr, BT: tl.constexpr,
                        BV: tl.constexpr):
    """X, Y: [batch, T, H, V]. Per (batch, head, value column), a state carried over
    the sequence's chunks: state = decay * state + (the chunk's column sums); each
    chunk's output is x * (the state before the chunk), stored chunk by chunk."""
    i_v, i_b, i_h = _tile_batch_head(tl.cdiv(V, BV), H)
    base = (i_b * T).to(tl.int64) * H * V + i_h * V
    cols = i_v * BV + tl.arange(0, BV)
    state = tl.zeros([BV], dtype=tl.float32)
    for i_t in range(0, tl.cdiv(T, BT)):
        rows = i_t * BT + tl.arange(0, BT)
        offsets = base + rows[:, None] * (H * V) + cols[None, :]
        mask = (rows[:, None] < T) & (cols[None, :] < V)
        x = tl.load(X + offsets, mask=mask, other=0.0).to(tl.float32)
        tl.store(Y + offsets, (x * state[None, :]).to(Y.dtype.element_ty), mask=mask)
        state = state * decay + tl.sum(x, axis=0)


@triton.jit
def gathered_row_blocks(X, Y, START, T, V: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr):
    """X, Y: [rows, V]. Program p copies the squares of T rows starting at the row
    START[p] holds (loaded once, before the loop) in chunks of BT rows."""
    pid = tl.program_id(0)
    start = tl.load(START + pid).to(tl.int64)
    cols = tl.arange(0, BV)
    for i_t in range(0, tl.cdiv(T, BT)):
        rows = i_t * BT + tl.arange(0, BT)
        offsets = (start + rows[:, None]) * V + cols[None, :]
        mask = (rows[:, None] < T) & (cols[None, :] < V)
        x = tl.load(X + offsets, mask=mask, other=0.0).to(tl.float32)
        tl.store(Y + offsets, (x * x).to(Y.dtype.element_ty), mask=mask)


def _decayed_reference(x, decay, chunk):
    state = torch.zeros(x.shape[0], x.shape[2], x.shape[3], dtype=x.dtype, device=x.device)
    outputs = []
    for t0 in range(0, x.shape[1], chunk):
        piece = x[:, t0:t0 + chunk]
        outputs.append(piece * state[:, None])
        state = state * decay + piece.sum(1)
    return torch.cat(outputs, 1)


def _decayed(dtype, device, mode):
    b, t, h, v, bt, bv = (SIZES[k] for k in ("batch", "length", "heads", "width", "chunk",
                                              "tile"))
    decay = 0.75
    x = torch.randn(b, t, h, v, device=device).to(dtype).requires_grad_()
    y = torch.empty_like(x)
    f = tritonad.autograd(decayed_chunk_state, outputs=("Y",), mode=mode)
    f[(triton.cdiv(v, bv) * b * h,)](x, y, decay, t, H=h, V=v, BT=bt, BV=bv)
    upstream = torch.randn(y.shape, device=device).to(dtype)
    y.backward(upstream)
    x64 = x.detach().double().requires_grad_()
    _decayed_reference(x64, decay, bt).backward(upstream.double())
    return [("x", x.grad, x64.grad)]


def _gathered(dtype, device, mode):
    t, v, bt, bv = 21, 40, 8, 64
    programs = 5
    # (disjoint blocks of rows, in a shuffled order)
    starts = (torch.randperm(programs) * (t + 3)).to(torch.int32).to(device)
    x = torch.randn(programs * (t + 3), v, device=device).to(dtype).requires_grad_()
    y = torch.zeros_like(x)
    f = tritonad.autograd(gathered_row_blocks, outputs=("Y",), mode=mode)
    f[(programs,)](x, y, starts, t, V=v, BT=bt, BV=bv)
    upstream = torch.randn(y.shape, device=device).to(dtype)
    y.backward(upstream)
    x64 = x.detach().double().requires_grad_()
    covered = torch.zeros(x.shape[0], 1, dtype=torch.float64, device=device)
    for s in starts.tolist():
        covered[s:s + t] = 1
    (x64 * x64 * covered).backward(upstream.double())
    return [("x", x.grad, x64.grad)]


_RUNS = {"decayed_chunk_state": _decayed, "gathered_row_blocks": _gathered}
CASES = list(_RUNS)


def relative_errors(runs):
    """{gradient: its largest error relative to its magnitude} of (name, got, want)
    triples."""
    errors = {}
    for grad_name, got, want in runs:
        scale = want.abs().max().item() or 1.0
        errors[grad_name] = (got.double() - want).abs().max().item() / scale
    return errors


def check(name, dtype, device, mode="auto"):
    """The largest error of each gradient of case `name`, relative to its magnitude."""
    return relative_errors(_RUNS[name](dtype, device, mode))
