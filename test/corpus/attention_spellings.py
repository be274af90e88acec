"""Attention forwards written the ways people write them (issue 41): one
online softmax over key tiles, spelled with the key loop in a helper or
inline, causal as one masked loop or with the diagonal block split off (two
loops), grouped-query heads (several query heads read one K/V head), the
batch x heads grid on axis 1 or folded into axis 0, pointers recomputed per
iteration or advanced, natural or base-2 exponentials, and the logsumexp
saved or not. test/test_attention_spellings.py checks tritonad.autograd's
dQ, dK, dV of each against fp64 torch (the CPU interpreter and the GPU);
benchmarks/attention_spellings.py times each against torch's flash backward
and torch.compile.

Tensors: q and o are (batch, heads, L, D), k and v (batch, kv_heads, L, D),
heads = kv_heads * group; lse is (batch, heads, L) in fp32. Each `Spelling`
knows its kernel's launch (`launch`), what it stores (`outputs`) and the same
computation in torch (`reference`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, NamedTuple, Optional, Tuple

import torch
import triton
import triton.language as tl

import tritonad

from corpus.online_softmax import causal_attention_fwd, two_stage_causal_attention_fwd

LOG2E = 1.4426950408889634


# ---------------------------------------------------------------------------
# FA2 style: natural exponentials, the key loop in a helper, 4-D strides as
# arguments, a (query blocks, batch * heads) grid; causal splits the diagonal
# block off into a second call of the helper.
# ---------------------------------------------------------------------------


@triton.jit
def _fa2_key_blocks(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, offs_m, offs_d,
                    lo, hi, seq_len, sm_scale, ON_DIAGONAL: tl.constexpr,
                    BLOCK_N: tl.constexpr):
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        keys_in = offs_n < seq_len
        k = tl.load(k_base + offs_n[:, None] * stride_kn + offs_d[None, :],
                    mask=keys_in[:, None], other=0.0)
        qk = tl.dot(q, tl.trans(k)) * sm_scale
        qk = tl.where(keys_in[None, :], qk, float("-inf"))
        if ON_DIAGONAL:
            qk = tl.where(offs_m[:, None] >= offs_n[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_ij[:, None])
        alpha = tl.exp(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + offs_n[:, None] * stride_vn + offs_d[None, :],
                    mask=keys_in[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def fa2_attention_fwd(Q, K, V, O, LSE, sm_scale, stride_qb, stride_qh, stride_qm, stride_kb,
                      stride_kh, stride_kn, stride_vb, stride_vh, stride_vn, stride_ob,
                      stride_oh, stride_om, n_heads, seq_len, HEAD_DIM: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                      STORE_LSE: tl.constexpr):
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = off_bh // n_heads
    off_h = off_bh % n_heads
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows_in = offs_m < seq_len
    q = tl.load(Q + off_b * stride_qb + off_h * stride_qh + offs_m[:, None] * stride_qm
                + offs_d[None, :], mask=rows_in[:, None], other=0.0)
    k_base = K + off_b * stride_kb + off_h * stride_kh
    v_base = V + off_b * stride_vb + off_h * stride_vh
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    if CAUSAL:
        acc, l_i, m_i = _fa2_key_blocks(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn,
                                        offs_m, offs_d, 0, start_m * BLOCK_M, seq_len, sm_scale,
                                        False, BLOCK_N)
        acc, l_i, m_i = _fa2_key_blocks(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn,
                                        offs_m, offs_d, start_m * BLOCK_M,
                                        (start_m + 1) * BLOCK_M, seq_len, sm_scale, True,
                                        BLOCK_N)
    else:
        acc, l_i, m_i = _fa2_key_blocks(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn,
                                        offs_m, offs_d, 0, seq_len, seq_len, sm_scale, False,
                                        BLOCK_N)
    if STORE_LSE:
        tl.store(LSE + off_bh * seq_len + offs_m, m_i + tl.log(l_i), mask=rows_in)
    acc = acc / l_i[:, None]
    tl.store(O + off_b * stride_ob + off_h * stride_oh + offs_m[:, None] * stride_om
             + offs_d[None, :], acc.to(O.dtype.element_ty), mask=rows_in[:, None])


# ---------------------------------------------------------------------------
# FlashAttention-2's own Triton forward's update: the running logsumexp
# carried instead of the running sum (the max taken with it), the output
# rescaled by exp(m - lse) at the end; causal in one loop ending at the
# diagonal.
# ---------------------------------------------------------------------------


@triton.jit
def fa2_running_lse_fwd(Q, K, V, O, LSE, sm_scale, stride_qb, stride_qh, stride_qm, stride_kb,
                        stride_kh, stride_kn, stride_vb, stride_vh, stride_vn, stride_ob,
                        stride_oh, stride_om, n_heads, seq_len, HEAD_DIM: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    off_hb = tl.program_id(1)
    off_b = off_hb // n_heads
    off_h = off_hb % n_heads
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = Q + off_b * stride_qb + off_h * stride_qh + offs_m[:, None] * stride_qm \
        + offs_d[None, :]
    k_ptrs = K + off_b * stride_kb + off_h * stride_kh + offs_n[:, None] * stride_kn \
        + offs_d[None, :]
    v_ptrs = V + off_b * stride_vb + off_h * stride_vh + offs_n[:, None] * stride_vn \
        + offs_d[None, :]
    lse_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    acc_o = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    q = tl.load(q_ptrs, mask=offs_m[:, None] < seq_len, other=0.0)
    end_n = seq_len if not CAUSAL else tl.minimum((start_m + 1) * BLOCK_M, seq_len)
    for start_n in range(0, end_n, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.load(k_ptrs + start_n * stride_kn, mask=(start_n + offs_n)[:, None] < seq_len,
                    other=0.0)
        qk = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        qk += tl.dot(q, tl.trans(k))
        qk += tl.where((start_n + offs_n)[None, :] < seq_len, 0, float("-inf"))
        if CAUSAL:
            qk += tl.where(offs_m[:, None] >= (start_n + offs_n)[None, :], 0, float("-inf"))
        m_ij = tl.maximum(tl.max(qk, 1) * sm_scale, lse_i)
        p = tl.exp(qk * sm_scale - m_ij[:, None])
        l_ij = tl.sum(p, 1)
        acc_o_scale = tl.exp(m_i - m_ij)
        acc_o = acc_o * acc_o_scale[:, None]
        v = tl.load(v_ptrs + start_n * stride_vn, mask=(start_n + offs_n)[:, None] < seq_len,
                    other=0.0)
        p = p.to(v.dtype)
        acc_o += tl.dot(p, v)
        m_i = m_ij
        l_i_new = tl.exp(lse_i - m_ij) + l_ij
        lse_i = m_ij + tl.log(l_i_new)
    o_scale = tl.exp(m_i - lse_i)
    acc_o = acc_o * o_scale[:, None]
    tl.store(LSE + off_hb * seq_len + offs_m, lse_i, mask=offs_m < seq_len)
    out_ptrs = O + off_b * stride_ob + off_h * stride_oh + offs_m[:, None] * stride_om \
        + offs_d[None, :]
    tl.store(out_ptrs, acc_o.to(O.dtype.element_ty), mask=offs_m[:, None] < seq_len)


# ---------------------------------------------------------------------------
# Grouped-query attention: query head h reads K/V head h // group; base-2
# exponentials, K loaded as its transpose, one loop (causal: up to the
# diagonal, masked in every block).
# ---------------------------------------------------------------------------


@triton.jit
def gqa_attention_fwd(Q, K, V, O, LSE, sm_scale, stride_qb, stride_qh, stride_qm, stride_kb,
                      stride_kh, stride_kn, stride_vb, stride_vh, stride_vn, n_heads, group,
                      seq_len, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, STORE_LSE: tl.constexpr):
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = off_bh // n_heads
    head = off_bh % n_heads
    kv_head = head // group
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows_in = offs_m < seq_len
    q = tl.load(Q + off_b * stride_qb + head * stride_qh + offs_m[:, None] * stride_qm
                + offs_d[None, :], mask=rows_in[:, None], other=0.0)
    k_base = K + off_b * stride_kb + kv_head * stride_kh
    v_base = V + off_b * stride_vb + kv_head * stride_vh
    qk_scale = sm_scale * 1.4426950408889634
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, seq_len)
    else:
        hi = seq_len
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        keys_in = offs_n < seq_len
        kt = tl.load(k_base + offs_d[:, None] + offs_n[None, :] * stride_kn,
                     mask=keys_in[None, :], other=0.0)
        qk = tl.dot(q, kt) * qk_scale
        if CAUSAL:
            qk = tl.where((offs_m[:, None] >= offs_n[None, :]) & keys_in[None, :], qk,
                          float("-inf"))
        else:
            qk = tl.where(keys_in[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + offs_n[:, None] * stride_vn + offs_d[None, :],
                    mask=keys_in[:, None], other=0.0)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    if STORE_LSE:  # (log2 units, as the tutorial saves it)
        tl.store(LSE + off_bh * seq_len + offs_m, m_i + tl.math.log2(l_i), mask=rows_in)
    # (O laid out as Q)
    tl.store(O + off_b * stride_qb + head * stride_qh + offs_m[:, None] * stride_qm
             + offs_d[None, :], (acc / l_i[:, None]).to(O.dtype.element_ty),
             mask=rows_in[:, None])


# ---------------------------------------------------------------------------
# One program per (query block, batch * head) folded into axis 0, heads laid
# out as (batch * heads, L, D); K and V pointers advanced per iteration;
# causal in one loop.
# ---------------------------------------------------------------------------


@triton.jit
def folded_grid_attention_fwd(Q, K, V, O, LSE, sm_scale, stride_bh, stride_m, seq_len,
                              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                              BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    m_blocks = tl.cdiv(seq_len, BLOCK_M)
    off_bh = pid // m_blocks
    start_m = pid % m_blocks
    base = off_bh * stride_bh
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    rows_in = offs_m < seq_len
    q = tl.load(Q + base + offs_m[:, None] * stride_m + offs_d[None, :], mask=rows_in[:, None],
                other=0.0)
    k_ptrs = K + base + offs_n[:, None] * stride_m + offs_d[None, :]
    v_ptrs = V + base + offs_n[:, None] * stride_m + offs_d[None, :]
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    for start_n in range(0, (start_m + 1) * BLOCK_M, BLOCK_N):
        keys_in = start_n + offs_n < seq_len
        k = tl.load(k_ptrs, mask=keys_in[:, None], other=0.0)
        v = tl.load(v_ptrs, mask=keys_in[:, None], other=0.0)
        qk = tl.dot(q, tl.trans(k)) * sm_scale
        visible = (offs_m[:, None] >= start_n + offs_n[None, :]) & keys_in[None, :]
        qk = tl.where(visible, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_ij[:, None])
        alpha = tl.exp(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_ij
        k_ptrs += BLOCK_N * stride_m
        v_ptrs += BLOCK_N * stride_m
    tl.store(LSE + off_bh * seq_len + offs_m, m_i + tl.log(l_i), mask=rows_in)
    tl.store(O + base + offs_m[:, None] * stride_m + offs_d[None, :],
             (acc / l_i[:, None]).to(O.dtype.element_ty), mask=rows_in[:, None])


# ---------------------------------------------------------------------------
# Block pointers, as Triton's tutorial writes its forward: K read through a
# transposed block pointer, tl.advance per iteration, boundary checks with
# zero padding; the scores shifted by the max in place; (batch * heads, L, D).
# ---------------------------------------------------------------------------


@triton.jit
def block_ptr_attention_fwd(Q, K, V, O, LSE, sm_scale, seq_len, stride_bh, stride_m,
                            HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                            BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    base = off_bh.to(tl.int64) * stride_bh
    q_block = tl.make_block_ptr(Q + base, shape=(seq_len, HEAD_DIM), strides=(stride_m, 1),
                                offsets=(start_m * BLOCK_M, 0), block_shape=(BLOCK_M, HEAD_DIM),
                                order=(1, 0))
    kt_block = tl.make_block_ptr(K + base, shape=(HEAD_DIM, seq_len), strides=(1, stride_m),
                                 offsets=(0, 0), block_shape=(HEAD_DIM, BLOCK_N), order=(0, 1))
    v_block = tl.make_block_ptr(V + base, shape=(seq_len, HEAD_DIM), strides=(stride_m, 1),
                                offsets=(0, 0), block_shape=(BLOCK_N, HEAD_DIM), order=(1, 0))
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    qk_scale = sm_scale * 1.44269504
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    q = tl.load(q_block, boundary_check=(0,), padding_option="zero")
    hi = (start_m + 1) * BLOCK_M if CAUSAL else seq_len
    for start_n in range(0, hi, BLOCK_N):
        kt = tl.load(kt_block, boundary_check=(1,), padding_option="zero")
        qk = tl.dot(q, kt)
        keep = (start_n + offs_n)[None, :] < seq_len
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= (start_n + offs_n)[None, :])
        qk = tl.where(keep, qk * qk_scale, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        qk = qk - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_block, boundary_check=(0,), padding_option="zero")
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
        kt_block = tl.advance(kt_block, (0, BLOCK_N))
        v_block = tl.advance(v_block, (BLOCK_N, 0))
    m_i += tl.math.log2(l_i)
    tl.store(LSE + off_bh * seq_len + offs_m, m_i, mask=offs_m < seq_len)
    o_block = tl.make_block_ptr(O + base, shape=(seq_len, HEAD_DIM), strides=(stride_m, 1),
                                offsets=(start_m * BLOCK_M, 0), block_shape=(BLOCK_M, HEAD_DIM),
                                order=(1, 0))
    tl.store(o_block, (acc / l_i[:, None]).to(O.dtype.element_ty), boundary_check=(0,))


# ---------------------------------------------------------------------------
# The spellings
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Spelling:
    name: str
    how: str
    kernel: object
    causal: bool
    gqa: bool                # K/V have heads // group heads
    lse: Optional[str]       # None (not saved), "ln" or "log2": its units
    outputs: Tuple[str, ...]
    launch: Callable         # (kernel, t, tiles) -> (grid, args, kwargs)

    def reference(self, q, k, v, sm_scale):
        """(out, lse in the spelling's units or None) of the same attention."""
        return reference(q, k, v, sm_scale, self.causal, self.lse)


def reference(q, k, v, sm_scale, causal, lse_units="ln"):
    group = q.shape[1] // k.shape[1]
    if group > 1:
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = q @ k.transpose(-1, -2) * sm_scale
    if causal:
        L = q.shape[-2]
        keep = torch.ones(L, L, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    out = torch.softmax(scores, -1) @ v
    if lse_units is None:
        return out, None
    return out, torch.logsumexp(scores, -1) * (LOG2E if lse_units == "log2" else 1.0)


def _grid(t, tiles):
    B, H, L, _ = t["q"].shape
    return (triton.cdiv(L, tiles["BLOCK_M"]), B * H)


def _launch_bh_layout(kernel, t, tiles):
    # corpus/online_softmax.py's kernels: (batch * heads, L, D) contiguous
    q = t["q"]
    grid = _grid(t, tiles)
    args = (q, t["k"], t["v"], t["o"], t["lse"], t["sm_scale"], q.shape[2], q.stride(1),
            q.stride(2))
    return grid, args, dict(tiles, HEAD_DIM=q.shape[3])


def _launch_block_ptr(causal):
    def launch(kernel, t, tiles):
        grid, args, kwargs = _launch_bh_layout(kernel, t, tiles)
        return grid, args, dict(kwargs, CAUSAL=causal)
    return launch


def _launch_fa2(causal, store_lse):
    def launch(kernel, t, tiles):
        q, k, v, o = t["q"], t["k"], t["v"], t["o"]
        args = (q, k, v, o, t["lse"], t["sm_scale"], *q.stride()[:3], *k.stride()[:3],
                *v.stride()[:3], *o.stride()[:3], q.shape[1], q.shape[2])
        return _grid(t, tiles), args, dict(tiles, HEAD_DIM=q.shape[3], CAUSAL=causal,
                                           STORE_LSE=store_lse)
    return launch


def _launch_running_lse(causal):
    def launch(kernel, t, tiles):
        q, k, v, o = t["q"], t["k"], t["v"], t["o"]
        args = (q, k, v, o, t["lse"], t["sm_scale"], *q.stride()[:3], *k.stride()[:3],
                *v.stride()[:3], *o.stride()[:3], q.shape[1], q.shape[2])
        return _grid(t, tiles), args, dict(tiles, HEAD_DIM=q.shape[3], CAUSAL=causal)
    return launch


def _launch_gqa(causal, store_lse):
    def launch(kernel, t, tiles):
        q, k, v = t["q"], t["k"], t["v"]
        args = (q, k, v, t["o"], t["lse"], t["sm_scale"], *q.stride()[:3], *k.stride()[:3],
                *v.stride()[:3], q.shape[1], q.shape[1] // k.shape[1], q.shape[2])
        return _grid(t, tiles), args, dict(tiles, HEAD_DIM=q.shape[3], CAUSAL=causal,
                                           STORE_LSE=store_lse)
    return launch


def _launch_folded(kernel, t, tiles):
    q = t["q"]
    B, H, L, D = q.shape
    grid = (triton.cdiv(L, tiles["BLOCK_M"]) * B * H,)
    args = (q, t["k"], t["v"], t["o"], t["lse"], t["sm_scale"], q.stride(1), q.stride(2), L)
    return grid, args, dict(tiles, HEAD_DIM=D)


_WITH_LSE, _WITHOUT_LSE = ("O", "LSE"), ("O",)

SPELLINGS = [
    Spelling("one_loop_causal", "causal, one loop up to the diagonal, masked; exp2; "
             "(batch*heads, L, D); corpus causal_attention_fwd", causal_attention_fwd, True,
             False, "log2", ("Out", "Lse"), _launch_bh_layout),
    Spelling("tutorial_two_loops", "causal, the tutorial's two loops (off-band, then the "
             "diagonal) in a helper; exp2; corpus two_stage_causal_attention_fwd",
             two_stage_causal_attention_fwd, True, False, "log2", ("Out", "Lse"),
             _launch_bh_layout),
    Spelling("fa2_helper", "FA2 style: key loop in a helper, tl.exp, 4-D strides as "
             "arguments, grid (query blocks, batch*heads)", fa2_attention_fwd, False, False,
             "ln", _WITH_LSE, _launch_fa2(False, True)),
    Spelling("fa2_helper_no_lse", "fa2_helper without the logsumexp saved",
             fa2_attention_fwd, False, False, None, _WITHOUT_LSE, _launch_fa2(False, False)),
    Spelling("fa2_helper_causal", "fa2_helper, causal: the helper called for the off-band "
             "blocks, then the diagonal block (masked)", fa2_attention_fwd, True, False, "ln",
             _WITH_LSE, _launch_fa2(True, True)),
    Spelling("fa2_running_lse", "FlashAttention-2's Triton forward: the running logsumexp "
             "carried (the max taken with it), the output rescaled at the end",
             fa2_running_lse_fwd, False, False, "ln", _WITH_LSE, _launch_running_lse(False)),
    Spelling("fa2_running_lse_causal", "fa2_running_lse, causal in one loop ending at the "
             "diagonal, masks added to the scores", fa2_running_lse_fwd, True, False, "ln",
             _WITH_LSE, _launch_running_lse(True)),
    Spelling("gqa", "grouped-query: kv_head = head // group, K loaded transposed, exp2, "
             "logsumexp saved", gqa_attention_fwd, False, True, "log2", _WITH_LSE,
             _launch_gqa(False, True)),
    Spelling("gqa_causal_no_lse", "gqa, causal in one loop, no logsumexp saved",
             gqa_attention_fwd, True, True, None, _WITHOUT_LSE, _launch_gqa(True, False)),
    Spelling("block_ptr_causal", "the tutorial's way: block pointers (K transposed), "
             "tl.advance, boundary checks, exp2, l starting at 1; causal in one loop",
             block_ptr_attention_fwd, True, False, "log2", _WITH_LSE, _launch_block_ptr(True)),
    Spelling("folded_grid_causal", "causal, batch*heads folded into grid axis 0 "
             "(pid // query blocks), pointers advanced per iteration, tl.exp",
             folded_grid_attention_fwd, True, False, "ln", _WITH_LSE, _launch_folded),
]

BY_NAME: Dict[str, Spelling] = {s.name: s for s in SPELLINGS}

# The forward's tiles on a GPU by head dim (as the tutorial and FA2 pick them),
# and the interpreter's.
GPU_TILES = {64: dict(BLOCK_M=128, BLOCK_N=64), 128: dict(BLOCK_M=128, BLOCK_N=64)}
SMALL_TILES = dict(BLOCK_M=16, BLOCK_N=16)


def inputs(spelling, batch, heads, length, head_dim, dtype, device, group=2,
           requires_grad=True, generator=None):
    """q, k, v (leaves), o, lse, sm_scale for `spelling`: K/V with heads // group heads
    where the spelling is grouped-query."""
    kv_heads = heads // group if spelling.gqa else heads
    assert kv_heads * (group if spelling.gqa else 1) == heads, (heads, group)

    def normal(*shape):
        return torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype).to(device)
    t = {"q": normal(batch, heads, length, head_dim),
         "k": normal(batch, kv_heads, length, head_dim),
         "v": normal(batch, kv_heads, length, head_dim)}
    for name in ("q", "k", "v"):
        t[name].requires_grad_(requires_grad)
    t["o"] = torch.empty(batch, heads, length, head_dim, dtype=dtype, device=device)
    t["lse"] = torch.empty(batch, heads, length, dtype=torch.float32, device=device)
    t["sm_scale"] = 1.0 / math.sqrt(head_dim)
    return t


def outputs_of(spelling, results):
    """(out, lse or None) from what tritonad.autograd's launch returned."""
    results = results if isinstance(results, tuple) else (results,)
    return results[0], (results[1] if spelling.lse else None)


def rel_err(got, want):
    """max |got - want| / max |want| (in fp64)."""
    want = want.double()
    return (got.double() - want).abs().max().item() / max(want.abs().max().item(), 1e-30)


class Gradients(NamedTuple):
    op: object               # the tritonad.autograd operator
    out: torch.Tensor
    upstream: Tuple          # (dout, dlse or None)
    first: Tuple             # dQ, dK, dV
    again: Optional[Tuple]   # a second backward of the same graph (twice=True)
    want: Tuple              # fp64 torch's dQ, dK, dV
    want_out: torch.Tensor


def autograd_gradients(spelling, t, tiles, mode="auto", twice=False, generator=None, **launch):
    """tritonad.autograd(spelling's kernel, mode=mode)'s dQ, dK, dV on `t`
    (`inputs`), for random upstream gradients of what the kernel stores, beside
    fp64 torch's; a DifferentiationError or a launch's refusal propagates."""
    op = tritonad.autograd(spelling.kernel, outputs=spelling.outputs, mode=mode)
    grid, args, kwargs = spelling.launch(spelling.kernel, t, tiles)
    out, lse = outputs_of(spelling, op[grid](*args, **kwargs, **launch))

    def normal(like):
        return torch.randn(like.shape, generator=generator, dtype=torch.float64).to(
            like.dtype).to(like.device)
    dout, dlse = normal(out), (None if lse is None else normal(lse))
    results = [x for x in (out, lse) if x is not None]
    upstream = [x for x in (dout, dlse) if x is not None]
    leaves = [t[k] for k in ("q", "k", "v")]
    first = torch.autograd.grad(results, leaves, upstream, retain_graph=twice)
    again = torch.autograd.grad(results, leaves, upstream) if twice else None
    wide = [x.detach().double().requires_grad_() for x in leaves]
    want_out, want_lse = spelling.reference(*wide, t["sm_scale"])
    want = torch.autograd.grad([x for x in (want_out, want_lse) if x is not None], wide,
                               [x.double() for x in upstream])
    return Gradients(op, out, (dout, dlse), first, again, want, want_out.detach())
