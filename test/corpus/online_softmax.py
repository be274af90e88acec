"""Loops that carry a running max used only to stabilize exponentials (an online
softmax), as users write them:

  a. causal_attention_fwd    flash attention forward, causal, exp2 domain, fp16/bf16
                             inputs fed to tl.dot, fp32 accumulators, stores Out and
                             Lse (log2 units); two_stage_causal_attention_fwd, the
                             same in two loops (off-diagonal, then diagonal blocks)
  b. attention_exp_fwd       non-causal, spelled with tl.exp, fp32, no Lse
  c. cross_entropy_fwd       one program per row, online logsumexp over vocabulary
                             blocks, the target logit picked inside the loop
  d. two_pass_softmax_fwd    a first loop computes the row's max and sum online, a
                             second loop writes exp(x - m) / s
  e. running_max_stored_fwd  NEGATIVE case: the running max is also stored, so it is
                             not only a stabilizer
  f. running_sum_stored_fwd  NEGATIVE case: m is not stored but s = sum(exp(x - m)) is,
                             which changes with m (no shift invariance)

Used by test_loops.py, test_residuals.py and benchmarks/loops.py.
"""

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634



@triton.jit
def causal_attention_fwd(Q, K, V, Out, Lse, sm_scale, seq_len, stride_bh, stride_s,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         HEAD_DIM: tl.constexpr):
    # q, k, v, out: (batch*heads, seq_len, HEAD_DIM), contiguous in the last dim.
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    base = bh.to(tl.int64) * stride_bh
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows_in = offs_m < seq_len
    q = tl.load(Q + base + offs_m[:, None] * stride_s + offs_d[None, :],
                mask=rows_in[:, None], other=0.0)
    qk_scale = sm_scale * 1.4426950408889634        # exp(x) = exp2(x * log2(e))
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    # keys up to the diagonal of this query block only
    hi = tl.minimum((start_m + 1) * BLOCK_M, seq_len)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        cols_in = offs_n < seq_len
        k = tl.load(K + base + offs_n[:, None] * stride_s + offs_d[None, :],
                    mask=cols_in[:, None], other=0.0)
        v = tl.load(V + base + offs_n[:, None] * stride_s + offs_d[None, :],
                    mask=cols_in[:, None], other=0.0)
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        visible = (offs_m[:, None] >= offs_n[None, :]) & cols_in[None, :]
        qk = tl.where(visible, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        alpha = tl.math.exp2(m_i - m_ij)
        p = tl.math.exp2(qk - m_ij[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    out = acc / l_i[:, None]
    tl.store(Out + base + offs_m[:, None] * stride_s + offs_d[None, :],
             out.to(Out.dtype.element_ty), mask=rows_in[:, None])
    tl.store(Lse + bh.to(tl.int64) * seq_len + offs_m, m_i + tl.math.log2(l_i), mask=rows_in)


@triton.jit
def _causal_blocks(acc, l_i, m_i, q, K, V, base, offs_m, offs_d, lo, hi, seq_len, stride_s,
                   qk_scale, ON_DIAGONAL: tl.constexpr, BLOCK_N: tl.constexpr):
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        cols_in = offs_n < seq_len
        k = tl.load(K + base + offs_n[:, None] * stride_s + offs_d[None, :],
                    mask=cols_in[:, None], other=0.0)
        v = tl.load(V + base + offs_n[:, None] * stride_s + offs_d[None, :],
                    mask=cols_in[:, None], other=0.0)
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        if ON_DIAGONAL:
            visible = (offs_m[:, None] >= offs_n[None, :]) & cols_in[None, :]
            qk = tl.where(visible, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def two_stage_causal_attention_fwd(Q, K, V, Out, Lse, sm_scale, seq_len, stride_bh, stride_s,
                                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                   HEAD_DIM: tl.constexpr):
    # causal_attention_fwd structured as Triton's tutorial: the key blocks left
    # of the diagonal in one loop, the diagonal blocks (masked) in a second,
    # l starting at 1. Needs BLOCK_M % BLOCK_N == 0.
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    base = bh.to(tl.int64) * stride_bh
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows_in = offs_m < seq_len
    q = tl.load(Q + base + offs_m[:, None] * stride_s + offs_d[None, :],
                mask=rows_in[:, None], other=0.0)
    qk_scale = sm_scale * 1.4426950408889634
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    acc, l_i, m_i = _causal_blocks(acc, l_i, m_i, q, K, V, base, offs_m, offs_d, 0,
                                   start_m * BLOCK_M, seq_len, stride_s, qk_scale, False,
                                   BLOCK_N)
    acc, l_i, m_i = _causal_blocks(acc, l_i, m_i, q, K, V, base, offs_m, offs_d,
                                   start_m * BLOCK_M, (start_m + 1) * BLOCK_M, seq_len,
                                   stride_s, qk_scale, True, BLOCK_N)
    out = acc / l_i[:, None]
    tl.store(Out + base + offs_m[:, None] * stride_s + offs_d[None, :],
             out.to(Out.dtype.element_ty), mask=rows_in[:, None])
    tl.store(Lse + bh.to(tl.int64) * seq_len + offs_m, m_i + tl.math.log2(l_i), mask=rows_in)


@triton.jit
def attention_exp_fwd(Q, K, V, Out, sm_scale, seq_len, stride_bh, stride_s,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    # Non-causal, natural exponentials, the update written in one line.
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    base = bh.to(tl.int64) * stride_bh
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows_in = offs_m < seq_len
    q = tl.load(Q + base + offs_m[:, None] * stride_s + offs_d[None, :],
                mask=rows_in[:, None], other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, seq_len, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        cols_in = offs_n < seq_len
        k = tl.load(K + base + offs_n[:, None] * stride_s + offs_d[None, :],
                    mask=cols_in[:, None], other=0.0)
        v = tl.load(V + base + offs_n[:, None] * stride_s + offs_d[None, :],
                    mask=cols_in[:, None], other=0.0)
        qk = tl.dot(q, tl.trans(k)) * sm_scale
        qk = tl.where(cols_in[None, :], qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m_i = m_new
    tl.store(Out + base + offs_m[:, None] * stride_s + offs_d[None, :], acc / l_i[:, None],
             mask=rows_in[:, None])


@triton.jit
def cross_entropy_fwd(logits, targets, loss, stride, V, BLOCK: tl.constexpr):
    # loss[row] = logsumexp(logits[row, :V]) - logits[row, target]; the row is read
    # once, in vocabulary blocks (the last one masked with -inf).
    row = tl.program_id(0)
    row_ptr = logits + row.to(tl.int64) * stride
    target = tl.load(targets + row).to(tl.int32)
    m = tl.full([], float("-inf"), tl.float32)
    s = tl.zeros([], dtype=tl.float32)
    picked = tl.zeros([], dtype=tl.float32)
    for off in range(0, V, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(row_ptr + cols, mask=cols < V, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, 0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), 0)
        picked += tl.sum(tl.where(cols == target, x, 0.0), 0)
        m = m_new
    tl.store(loss + row, m + tl.log(s) - picked)


@triton.jit
def two_pass_softmax_fwd(x, y, stride, N, BLOCK: tl.constexpr):
    # Pass 1: the row's max and sum of exponentials, online. Pass 2: y = exp(x - m) / s.
    row = tl.program_id(0)
    x_row = x + row.to(tl.int64) * stride
    y_row = y + row.to(tl.int64) * stride
    m = tl.full([], float("-inf"), tl.float32)
    s = tl.zeros([], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        v = tl.load(x_row + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(v, 0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(v - m_new), 0)
        m = m_new
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        v = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (tl.exp(v - m) / s).to(y.dtype.element_ty), mask=mask)


@triton.jit
def running_max_stored_fwd(x, lse, mx, stride, N, BLOCK: tl.constexpr):
    # An online logsumexp that also stores its running max: m is an output, so it
    # is more than a stabilizer (its gradient goes to the row's argmax).
    row = tl.program_id(0)
    x_row = x + row.to(tl.int64) * stride
    m = tl.full([], float("-inf"), tl.float32)
    s = tl.zeros([], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        v = tl.load(x_row + cols, mask=cols < N, other=float("-inf"))
        m_new = tl.maximum(m, tl.max(v, 0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(v - m_new), 0)
        m = m_new
    tl.store(lse + row, m + tl.log(s))
    tl.store(mx + row, m)


@triton.jit
def running_sum_stored_fwd(x, lse, s_out, stride, N, BLOCK: tl.constexpr):
    # NEGATIVE case, subtler: m is not stored, but the stored sum s = sum(exp(x - m))
    # changes with m (it is not shift invariant), so m is not only a stabilizer.
    row = tl.program_id(0)
    x_row = x + row.to(tl.int64) * stride
    m = tl.full([], float("-inf"), tl.float32)
    s = tl.zeros([], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        v = tl.load(x_row + cols, mask=cols < N, other=float("-inf"))
        m_new = tl.maximum(m, tl.max(v, 0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(v - m_new), 0)
        m = m_new
    tl.store(lse + row, m + tl.log(s))
    tl.store(s_out + row, s)


def attention_reference(q, k, v, sm_scale, causal):
    """(out, lse in log2 units) of softmax attention over the last two dims."""
    s = q @ k.transpose(-1, -2) * sm_scale
    if causal:
        L = q.shape[-2]
        keep = torch.ones(L, L, dtype=torch.bool, device=q.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    return torch.softmax(s, -1) @ v, torch.logsumexp(s, -1) * LOG2E


# fp16/bf16 attention: q, k, v are rounded to the storage dtype before both the
# kernel and the reference see them, so the difference comes from the kernel's own
# roundings: p cast to fp16/bf16 before the second dot (relative 2^-11 / 2^-8 per
# term), the backward's half-precision dot operands, and the shadows of K and V,
# which are half-precision tensors receiving up to seq_len / BLOCK_M additions (one
# per query block), each rounded. Relative to the largest gradient that stays well
# below 2e-2 for both dtypes (bf16's round-off is ~4e-3 per addition, a random walk
# over <= 16 additions); a wrong gradient (a missing or doubled block, a wrong
# weight) is off by O(1).
HALF_TOL = 2e-2
