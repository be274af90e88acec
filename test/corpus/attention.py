"""Flash attention in two loops, as Triton's tutorial writes it (the off-diagonal
key blocks, then the diagonal ones), in two spellings, and a check of its
gradients through tritonad.autograd(mode="deterministic") against fp64 torch;
`attention_grads_match_torch`, the same check of the corpus's one-loop
attention_fwd_kernel on the GPU.
"""

import torch
import triton
import triton.language as tl

import tritonad
from corpus.kernels import attention_fwd_kernel
from interpreter_util import assert_close, randn


@triton.jit
def _online_softmax_step(acc, l_i, m_i, q, k, v, offs_m, offs_n, seq_len, qk_scale,
                         CAUSAL: tl.constexpr):
    # One key block of flash attention's online softmax (exp2 domain); CAUSAL
    # masks the keys after each query (the diagonal block).
    qk = tl.dot(q, tl.trans(k)) * qk_scale
    if CAUSAL:
        qk = tl.where((offs_m[:, None] >= offs_n[None, :]) & (offs_n[None, :] < seq_len),
                      qk, float("-inf"))
    m_ij = tl.maximum(m_i, tl.max(qk, 1))
    p = tl.math.exp2(qk - m_ij[:, None])
    alpha = tl.math.exp2(m_i - m_ij)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None]
    acc = tl.dot(p, v, acc)
    return acc, l_i, m_ij


@triton.jit
def _two_stage_inner(acc, l_i, m_i, q, K, V, offs_m, offs_d, start, end, seq_len, qk_scale,
                     MASKED: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    for start_n in range(start, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(K + offs_n[:, None] * HEAD_DIM + offs_d[None, :],
                    mask=offs_n[:, None] < seq_len, other=0.0)
        v = tl.load(V + offs_n[:, None] * HEAD_DIM + offs_d[None, :],
                    mask=offs_n[:, None] < seq_len, other=0.0)
        acc, l_i, m_i = _online_softmax_step(acc, l_i, m_i, q, k, v, offs_m, offs_n, seq_len,
                                             qk_scale, MASKED)
    return acc, l_i, m_i


@triton.jit
def two_stage_attention(Q, K, V, O, M, L0, seq_len, qk_scale, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
                        LOADED_L: tl.constexpr):
    start_m = tl.program_id(0)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < seq_len,
                other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32) + 1.0
    if LOADED_L:
        l_i = l_i * tl.load(L0)  # (rescaled by 0 in the first iteration: no gradient)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    acc, l_i, m_i = _two_stage_inner(acc, l_i, m_i, q, K, V, offs_m, offs_d, 0,
                                     start_m * BLOCK_M, seq_len, qk_scale, False, BLOCK_N,
                                     HEAD_DIM)
    acc, l_i, m_i = _two_stage_inner(acc, l_i, m_i, q, K, V, offs_m, offs_d, start_m * BLOCK_M,
                                     (start_m + 1) * BLOCK_M, seq_len, qk_scale, True, BLOCK_N,
                                     HEAD_DIM)
    m_i += tl.math.log2(l_i)
    tl.store(M + offs_m, m_i, mask=offs_m < seq_len)
    tl.store(O + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc / l_i[:, None],
             mask=offs_m[:, None] < seq_len)


# Deterministic two-loop attention: dK and dV summed by programs of their own
# for each loop (the off-band key blocks, then the diagonal ones, whose loop
# starts at the program's own block), the second loop's parts in a launch
# after the first's. Two spellings: key offsets from the induction variable,
# and pointers advanced per iteration (as Triton's tutorial's block pointers).

@triton.jit
def _two_loop_blocks(acc, l_i, m_i, q, K, V, head, offs_m, offs_d, lo, hi, seq_len, qk_scale,
                     ON_DIAGONAL: tl.constexpr, ADVANCE: tl.constexpr, BLOCK_N: tl.constexpr,
                     HEAD_DIM: tl.constexpr):
    k_ptrs = K + head + (lo + tl.arange(0, BLOCK_N))[:, None] * HEAD_DIM + offs_d[None, :]
    v_ptrs = V + head + (lo + tl.arange(0, BLOCK_N))[:, None] * HEAD_DIM + offs_d[None, :]
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        keys_in = offs_n[:, None] < seq_len
        if ADVANCE:
            k = tl.load(k_ptrs, mask=keys_in, other=0.0)
            v = tl.load(v_ptrs, mask=keys_in, other=0.0)
            k_ptrs += BLOCK_N * HEAD_DIM
            v_ptrs += BLOCK_N * HEAD_DIM
        else:
            k = tl.load(K + head + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=keys_in,
                        other=0.0)
            v = tl.load(V + head + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=keys_in,
                        other=0.0)
        acc, l_i, m_i = _online_softmax_step(acc, l_i, m_i, q, k, v, offs_m, offs_n, seq_len,
                                             qk_scale, ON_DIAGONAL)
    return acc, l_i, m_i


@triton.jit
def two_loop_attention(Q, K, V, O, M, seq_len, qk_scale, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, ADVANCE: tl.constexpr):
    start_m = tl.program_id(0)
    head = tl.program_id(1) * seq_len * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows_in = offs_m[:, None] < seq_len
    q = tl.load(Q + head + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=rows_in, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    acc, l_i, m_i = _two_loop_blocks(acc, l_i, m_i, q, K, V, head, offs_m, offs_d, 0,
                                     start_m * BLOCK_M, seq_len, qk_scale, False, ADVANCE,
                                     BLOCK_N, HEAD_DIM)
    acc, l_i, m_i = _two_loop_blocks(acc, l_i, m_i, q, K, V, head, offs_m, offs_d,
                                     start_m * BLOCK_M, (start_m + 1) * BLOCK_M, seq_len,
                                     qk_scale, True, ADVANCE, BLOCK_N, HEAD_DIM)
    rows = tl.program_id(1) * seq_len + offs_m
    tl.store(M + rows, m_i + tl.math.log2(l_i), mask=offs_m < seq_len)
    tl.store(O + head + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc / l_i[:, None],
             mask=rows_in)


def two_loop_attention_grads(length, heads, advance, block_m, block_n, device="cpu", dtype=None,
                             rtol=1e-4, atol=1e-4):
    """tritonad.autograd(two_loop_attention, mode="deterministic")'s gradients of
    (O, M) against fp64 torch, on fresh random inputs; returns the backward."""
    D, scale, log2e = 16, 0.25, 1.4426950408889634
    dtype = dtype or torch.float32
    q, k, v = (randn(heads, length, D, dtype=dtype).to(device).requires_grad_() for _ in range(3))
    op = tritonad.autograd(two_loop_attention, outputs=("O", "M"), mode="deterministic",
                           pointers=("Q", "K", "V", "O", "M"))  # (loads in a helper)
    out, lse = op[(triton.cdiv(length, block_m), heads)](
        q, k, v, torch.empty_like(q), torch.empty(heads, length, device=device), length,
        scale * log2e, BLOCK_M=block_m, BLOCK_N=block_n, HEAD_DIM=D, ADVANCE=advance)
    do = randn(heads, length, D, dtype=dtype).to(device)
    dlse = randn(heads, length).to(device)
    got = torch.autograd.grad((out, lse), (q, k, v), (do, dlse))
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    scores = leaves[0] @ leaves[1].transpose(1, 2) * scale
    causal = torch.ones(length, length, dtype=torch.bool, device=device).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    want = torch.autograd.grad(
        (torch.softmax(scores, -1) @ leaves[2], torch.logsumexp(scores, -1) * log2e), leaves,
        (do.double(), dlse.double()))
    for name, g, w in zip("qkv", got, want):
        assert_close(name, g, w, rtol, atol)
    return op.backward_kernel, got


def attention_grads_match_torch(length, **options):
    """tritonad.autograd(attention_fwd_kernel, **options)'s gradients of (out,
    lse) against an fp64 torch reference, 3 heads of D = 32."""
    BH, D = 3, 32
    q, k, v = (torch.randn(BH, length, D, device="cuda", requires_grad=True) for _ in range(3))
    scale = D ** -0.5
    op = tritonad.autograd(attention_fwd_kernel, outputs=("out_ptr", "lse_ptr"), **options)
    out = torch.empty_like(q)
    lse = torch.empty(BH, length, device="cuda")
    out, lse = op[(triton.cdiv(length, 32), BH)](q, k, v, out, lse, scale, length, length * D, D,
                                                 HEAD_DIM=D, BLOCK_M=32, BLOCK_N=64)
    do, dlse = torch.randn_like(out), torch.randn_like(lse)
    got = torch.autograd.grad((out, lse), (q, k, v), (do, dlse))
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    scores = leaves[0] @ leaves[1].transpose(1, 2) * scale
    ref_out = torch.softmax(scores, -1) @ leaves[2]
    want = torch.autograd.grad((ref_out, torch.logsumexp(scores, -1)), leaves,
                               (do.double(), dlse.double()))
    for g, w in zip(got, want):
        torch.testing.assert_close(g.double(), w, rtol=1e-3, atol=1e-3)
