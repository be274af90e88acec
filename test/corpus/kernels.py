"""Corpus of real Triton kernels for tritonad tests.

Every entry of ``CORPUS`` is a ``CorpusKernel``: a ``@triton.jit`` kernel, the
signature / constexpr values needed to compile it with
``triton.compiler.ASTSource`` (no GPU needed for that), and ``make_args`` which
builds fresh random inputs for a launch on a device.

Conventions
-----------
* ``signature`` lists EVERY parameter of the kernel in order, constexpr ones as
  ``"constexpr"``; ``constexprs`` maps constexpr parameter NAMES to values.
* ``make_args(device)`` returns ``(args, grid)``: ``args`` are the RUNTIME
  arguments only (constexprs left out), in parameter order; ``grid`` is a
  3-tuple. Random tensors come from the global torch RNG (the caller seeds it).
* ``outputs`` are indices into ``args`` of the tensors the kernel writes.
* Sizes are deliberately not multiples of the block sizes, so masks matter.
* No pointer attributes (``tt.divisibility``) are given, so TTIR carries none.

Launching: with the normal JIT, ``entry.fn[grid](*args, **entry.constexprs)``;
see ``runtime_args_with_constexprs`` for a ``CompiledKernel`` made from an
``ASTSource`` (its launcher wants a placeholder in each constexpr slot).

Checked once on an H100 (triton 3.6.0, torch 2.11): every entry, launched three
ways (JIT, ASTSource CompiledKernel, IRSource from its asm["ttir"]), matched a
torch reference (fp32 ~1e-6, fp16/bf16 outputs within 2e-3).
"""

import math
from dataclasses import dataclass
from typing import Callable

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@dataclass(frozen=True)
class CorpusKernel:
    name: str  # unique, snake_case
    fn: object  # the @triton.jit kernel
    signature: dict  # {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr", ...}
    constexprs: dict  # {"BLOCK": 128, ...}
    make_args: Callable  # make_args(device) -> (args, grid)
    outputs: tuple  # indices into args of the tensors the kernel writes


def _cdiv(a, b):
    return (a + b - 1) // b


# ---------------------------------------------------------------------------
# 1. masked vector add
# ---------------------------------------------------------------------------
@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def _args_vector_add(device):
    n = 1000
    x = torch.randn(n, device=device)
    y = torch.randn(n, device=device)
    out = torch.empty(n, device=device)
    return [x, y, out, n], (_cdiv(n, 256), 1, 1)


# ---------------------------------------------------------------------------
# 2. fused row-wise softmax, one row per program
# ---------------------------------------------------------------------------
@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x_max = tl.max(x, axis=0)
    num = tl.exp(x - x_max)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)


def _args_softmax(device):
    rows, cols = 37, 300
    x = torch.randn(rows, cols, device=device)
    out = torch.empty_like(x)
    return [out, x, x.stride(0), out.stride(0), cols], (rows, 1, 1)


# ---------------------------------------------------------------------------
# 3. layer norm forward: loops over column blocks, stores mean and rstd
# ---------------------------------------------------------------------------
@triton.jit
def layer_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, N, eps,
                          BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride
    y_row = y_ptr + row * stride
    # mean
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < N, other=0.0)
    mean = tl.sum(acc, axis=0) / N
    # variance
    acc_var = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0)
        diff = tl.where(cols < N, x - mean, 0.0)
        acc_var += diff * diff
    var = tl.sum(acc_var, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    # normalize and apply the affine transform
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        x_hat = (x - mean) * rstd
        tl.store(y_row + cols, x_hat * w + b, mask=mask)


def _args_layer_norm_fwd(device):
    M, N = 23, 700
    x = torch.randn(M, N, device=device)
    y = torch.empty_like(x)
    w = torch.randn(N, device=device)
    b = torch.randn(N, device=device)
    mean = torch.empty(M, device=device)
    rstd = torch.empty(M, device=device)
    return [x, y, w, b, mean, rstd, x.stride(0), N, 1e-5], (M, 1, 1)


# ---------------------------------------------------------------------------
# 4a. layer norm backward, per-program partial dW/dB rows (deterministic)
# ---------------------------------------------------------------------------
@triton.jit
def layer_norm_bwd_dx_partial_kernel(dx_ptr, dy_ptr, dw_partial_ptr, db_partial_ptr, x_ptr, w_ptr,
                                     mean_ptr, rstd_ptr, stride, M, N, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    num_progs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    dw_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    db_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for row in range(pid, M, num_progs):
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        x_hat = tl.where(mask, (x - mean) * rstd, 0.0)
        w_dy = w * dy
        c1 = tl.sum(x_hat * w_dy, axis=0) / N
        c2 = tl.sum(w_dy, axis=0) / N
        dx = (w_dy - (x_hat * c1 + c2)) * rstd
        tl.store(dx_ptr + row * stride + cols, dx, mask=mask)
        dw_acc += dy * x_hat
        db_acc += dy
    tl.store(dw_partial_ptr + pid * N + cols, dw_acc, mask=mask)
    tl.store(db_partial_ptr + pid * N + cols, db_acc, mask=mask)


_LN_BWD_PROGRAMS = 8


def _ln_bwd_inputs(device, M, N):
    x = torch.randn(M, N, device=device)
    dy = torch.randn(M, N, device=device)
    w = torch.randn(N, device=device)
    mean = x.mean(dim=1)
    rstd = 1.0 / torch.sqrt(x.var(dim=1, unbiased=False) + 1e-5)
    return x, dy, w, mean, rstd


def _args_layer_norm_bwd_dx_partial(device):
    M, N, G = 50, 300, _LN_BWD_PROGRAMS
    x, dy, w, mean, rstd = _ln_bwd_inputs(device, M, N)
    dx = torch.empty_like(x)
    dw_partial = torch.empty(G, N, device=device)
    db_partial = torch.empty(G, N, device=device)
    return [dx, dy, dw_partial, db_partial, x, w, mean, rstd, x.stride(0), M, N], (G, 1, 1)


# ---------------------------------------------------------------------------
# 4b. layer norm backward, tutorial style: spin lock (atomic_cas) protecting
#     GROUP_M partial dW/dB rows; one row per program
# ---------------------------------------------------------------------------
@triton.jit
def layer_norm_bwd_dx_lock_kernel(dx_ptr, dy_ptr, dw_partial_ptr, db_partial_ptr, x_ptr, w_ptr, mean_ptr,
                                  rstd_ptr, lock_ptr, stride, N, GROUP_M: tl.constexpr,
                                  BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    dy = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    x_hat = tl.where(mask, (x - mean) * rstd, 0.0)
    w_dy = w * dy
    c1 = tl.sum(x_hat * w_dy, axis=0) / N
    c2 = tl.sum(w_dy, axis=0) / N
    dx = (w_dy - (x_hat * c1 + c2)) * rstd
    tl.store(dx_ptr + row * stride + cols, dx, mask=mask)
    # accumulate this row's contribution into partial row `row % GROUP_M`
    group = row % GROUP_M
    lock = lock_ptr + group
    count_ptr = lock_ptr + GROUP_M + group
    dw_ptrs = dw_partial_ptr + group * N + cols
    db_ptrs = db_partial_ptr + group * N + cols
    part_dw = dy * x_hat
    part_db = dy
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    count = tl.load(count_ptr)
    if count == 0:
        tl.atomic_xchg(count_ptr, 1)
    else:
        part_dw += tl.load(dw_ptrs, mask=mask, other=0.0)
        part_db += tl.load(db_ptrs, mask=mask, other=0.0)
    tl.store(dw_ptrs, part_dw, mask=mask)
    tl.store(db_ptrs, part_db, mask=mask)
    tl.atomic_xchg(lock, 0)


_LN_GROUP_M = 8


def _args_layer_norm_bwd_dx_lock(device):
    M, N = 50, 300
    x, dy, w, mean, rstd = _ln_bwd_inputs(device, M, N)
    dx = torch.empty_like(x)
    dw_partial = torch.empty(_LN_GROUP_M, N, device=device)
    db_partial = torch.empty(_LN_GROUP_M, N, device=device)
    locks = torch.zeros(2 * _LN_GROUP_M, dtype=torch.int32, device=device)  # locks then counters
    return [dx, dy, dw_partial, db_partial, x, w, mean, rstd, locks, x.stride(0), N], (M, 1, 1)


# ---------------------------------------------------------------------------
# 5. layer norm backward: sum the partial dW/dB rows
# ---------------------------------------------------------------------------
@triton.jit
def layer_norm_bwd_dwdb_kernel(dw_partial_ptr, db_partial_ptr, dw_ptr, db_ptr, M, N, BLOCK_M: tl.constexpr,
                               BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    dw = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    db = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for start in range(0, M, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(dw_partial_ptr + offs, mask=mask, other=0.0)
        db += tl.load(db_partial_ptr + offs, mask=mask, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(dw, axis=0), mask=cols < N)
    tl.store(db_ptr + cols, tl.sum(db, axis=0), mask=cols < N)


def _args_layer_norm_bwd_dwdb(device):
    M, N = 11, 300
    dw_partial = torch.randn(M, N, device=device)
    db_partial = torch.randn(M, N, device=device)
    dw = torch.empty(N, device=device)
    db = torch.empty(N, device=device)
    return [dw_partial, db_partial, dw, db, M, N], (_cdiv(N, 64), 1, 1)


# ---------------------------------------------------------------------------
# 6. RMSNorm forward
# ---------------------------------------------------------------------------
@triton.jit
def rms_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, rstd_ptr, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    mean_sq = tl.sum(x * x, axis=0) / N
    rstd = tl.rsqrt(mean_sq + eps)
    tl.store(rstd_ptr + row, rstd)
    tl.store(y_ptr + row * stride + cols, x * rstd * w, mask=mask)


def _args_rms_norm_fwd(device):
    M, N = 19, 777
    x = torch.randn(M, N, device=device)
    y = torch.empty_like(x)
    w = torch.randn(N, device=device)
    rstd = torch.empty(M, device=device)
    return [x, y, w, rstd, x.stride(0), N, 1e-6], (M, 1, 1)


# ---------------------------------------------------------------------------
# 7. matmul: fp16 in, fp32 accumulate, fp16 out; K loop with masks, grouped order
# ---------------------------------------------------------------------------
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                  stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pids_per_group = GROUP_M * num_pid_n
    group = pid // pids_per_group
    first_m = group * GROUP_M
    group_rows = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % pids_per_group) % group_rows
    pid_n = (pid % pids_per_group) // group_rows

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(tl.float16)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def batched_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_ab, stride_am, stride_ak,
                          stride_bb, stride_bk, stride_bn, stride_cb, stride_cm, stride_cn,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # (m, n) tiles on axes 0 and 1, the batch on axis 2
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    batch = tl.program_id(2)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + batch * stride_ab + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + batch * stride_bb + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + batch * stride_cb + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _args_matmul(device):
    M, N, K = 100, 72, 90
    a = torch.randn(M, K, device=device, dtype=torch.float16)
    b = torch.randn(K, N, device=device, dtype=torch.float16)
    c = torch.empty(M, N, device=device, dtype=torch.float16)
    grid = (_cdiv(M, 32) * _cdiv(N, 32), 1, 1)
    return [a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1)], grid


# ---------------------------------------------------------------------------
# 8. attention forward, online softmax over key blocks (fp32, exact dots)
#    q, k, v, out: [BH, S, D] contiguous; lse: [BH, S]; grid (cdiv(S, BLOCK_M), BH)
# ---------------------------------------------------------------------------
@triton.jit
def attention_fwd_kernel(q_ptr, k_ptr, v_ptr, out_ptr, lse_ptr, sm_scale, seq_len, stride_bh, stride_s,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    base = bh * stride_bh
    q = tl.load(q_ptr + base + offs_m[:, None] * stride_s + offs_d[None, :], mask=offs_m[:, None] < seq_len,
                other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, seq_len, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_mask = offs_n[:, None] < seq_len
        k = tl.load(k_ptr + base + offs_n[:, None] * stride_s + offs_d[None, :], mask=kv_mask, other=0.0)
        qk = tl.dot(q, tl.trans(k), input_precision="ieee") * sm_scale
        qk = tl.where(offs_n[None, :] < seq_len, qk, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + offs_n[:, None] * stride_s + offs_d[None, :], mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    acc = acc / l_i[:, None]
    row_mask = offs_m < seq_len
    tl.store(out_ptr + base + offs_m[:, None] * stride_s + offs_d[None, :], acc, mask=row_mask[:, None])
    tl.store(lse_ptr + bh * seq_len + offs_m, m_i + tl.log(l_i), mask=row_mask)


def _args_attention_fwd(device):
    BH, S, D = 3, 100, 32
    q = torch.randn(BH, S, D, device=device)
    k = torch.randn(BH, S, D, device=device)
    v = torch.randn(BH, S, D, device=device)
    out = torch.empty_like(q)
    lse = torch.empty(BH, S, device=device)
    return [q, k, v, out, lse, 1.0 / math.sqrt(D), S, q.stride(0), q.stride(1)], (_cdiv(S, 32), BH, 1)


# ---------------------------------------------------------------------------
# 9. dropout with tl.rand
# ---------------------------------------------------------------------------
@triton.jit
def dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    r = tl.rand(seed, offs)
    keep = r > p
    out = tl.where(keep, x / (1 - p), 0.0)
    tl.store(out_ptr + offs, out, mask=mask)


def _args_dropout(device):
    n = 1000
    x = torch.randn(n, device=device)
    out = torch.empty_like(x)
    return [x, out, n, 0.3, 1234], (_cdiv(n, 256), 1, 1)


# ---------------------------------------------------------------------------
# 10. row-wise cumsum
# ---------------------------------------------------------------------------
@triton.jit
def cumsum_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    y = tl.cumsum(x, axis=0)
    tl.store(out_ptr + row * stride + cols, y, mask=mask)


def _args_cumsum(device):
    rows, cols = 13, 200
    x = torch.randn(rows, cols, device=device)
    out = torch.empty_like(x)
    return [x, out, x.stride(0), cols], (rows, 1, 1)


# ---------------------------------------------------------------------------
# 11. custom associative scan: linear recurrence h_t = a_t * h_{t-1} + b_t
# ---------------------------------------------------------------------------
@triton.jit
def _affine_combine(a_left, b_left, a_right, b_right):
    # composition of h -> a_left*h + b_left followed by h -> a_right*h + b_right
    return a_left * a_right, b_left * a_right + b_right


@triton.jit
def linear_recurrence_scan_kernel(a_ptr, b_ptr, h_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    a = tl.load(a_ptr + row * stride + cols, mask=mask, other=1.0)
    b = tl.load(b_ptr + row * stride + cols, mask=mask, other=0.0)
    _, h = tl.associative_scan((a, b), axis=0, combine_fn=_affine_combine)
    tl.store(h_ptr + row * stride + cols, h, mask=mask)


def _args_linear_recurrence_scan(device):
    rows, cols = 7, 100
    a = torch.rand(rows, cols, device=device) * 0.5 + 0.5
    b = torch.randn(rows, cols, device=device)
    h = torch.empty_like(b)
    return [a, b, h, a.stride(0), cols], (rows, 1, 1)


# ---------------------------------------------------------------------------
# 12-15. reductions: sum (2D tile, column loop), max, min, argmax
# ---------------------------------------------------------------------------
@triton.jit
def row_sum_kernel(x_ptr, out_ptr, M, N, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    acc = tl.zeros([BLOCK_M], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0)
        acc += tl.sum(x, axis=1)
    tl.store(out_ptr + rows, acc, mask=rows < M)


def _args_row_sum(device):
    M, N = 45, 300
    x = torch.randn(M, N, device=device)
    out = torch.empty(M, device=device)
    return [x, out, M, N, x.stride(0)], (_cdiv(M, 16), 1, 1)


@triton.jit
def row_max_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(out_ptr + row, tl.max(x, axis=0))


@triton.jit
def row_min_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=float("inf"))
    tl.store(out_ptr + row, tl.min(x, axis=0))


@triton.jit
def row_argmax_kernel(x_ptr, idx_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(idx_ptr + row, tl.argmax(x, axis=0))


def _args_row_reduce(out_dtype):

    def make(device):
        rows, cols = 20, 300
        x = torch.randn(rows, cols, device=device)
        out = torch.empty(rows, device=device, dtype=out_dtype)
        return [x, out, x.stride(0), cols], (rows, 1, 1)

    return make


# ---------------------------------------------------------------------------
# 16. atomic_add: float sum into a scalar, integer histogram
# ---------------------------------------------------------------------------
@triton.jit
def atomic_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x * x, axis=0))


def _args_atomic_sum(device):
    n = 1000
    x = torch.randn(n, device=device)
    out = torch.zeros(1, device=device)
    return [x, out, n], (_cdiv(n, 256), 1, 1)


@triton.jit
def histogram_kernel(x_ptr, hist_ptr, n, BLOCK: tl.constexpr, NUM_BINS: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask, other=0)
    v = tl.minimum(tl.maximum(v, 0), NUM_BINS - 1)
    tl.atomic_add(hist_ptr + v, 1, mask=mask)


def _args_histogram(device):
    n = 1000
    x = torch.randint(0, 16, (n, ), device=device, dtype=torch.int32)
    hist = torch.zeros(16, device=device, dtype=torch.int32)
    return [x, hist, n], (_cdiv(n, 256), 1, 1)


# ---------------------------------------------------------------------------
# 17. scf.if on program_id
# ---------------------------------------------------------------------------
@triton.jit
def first_program_branch_kernel(x_ptr, y_ptr, extra_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if pid == 0:
        y = x * 2.0
        tl.store(extra_ptr, tl.sum(x * x, axis=0))
    else:
        y = x + tl.sin(x)
    tl.store(y_ptr + offs, y, mask=mask)


def _args_first_program_branch(device):
    n = 1000
    x = torch.randn(n, device=device)
    y = torch.empty_like(x)
    extra = torch.empty(1, device=device)
    return [x, y, extra, n], (_cdiv(n, 256), 1, 1)


# ---------------------------------------------------------------------------
# 18. while loop: Newton iterations for sqrt until converged (bounded)
# ---------------------------------------------------------------------------
@triton.jit
def newton_sqrt_while_kernel(x_ptr, y_ptr, iters_ptr, n, tol, BLOCK: tl.constexpr, MAX_ITERS: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    y = x
    err = tl.max(tl.abs(y * y - x), axis=0)
    it = 0
    while (err > tol) & (it < MAX_ITERS):
        y = 0.5 * (y + x / y)
        err = tl.max(tl.abs(y * y - x), axis=0)
        it += 1
    tl.store(y_ptr + offs, y, mask=mask)
    tl.store(iters_ptr + pid, it)


def _args_newton_sqrt_while(device):
    n = 1000
    x = torch.rand(n, device=device) * 3.0 + 0.1
    y = torch.empty_like(x)
    iters = torch.empty(_cdiv(n, 256), device=device, dtype=torch.int32)
    return [x, y, iters, n, 1e-5], (_cdiv(n, 256), 1, 1)


# ---------------------------------------------------------------------------
# 19. tl.where: leaky relu followed by a clamp
# ---------------------------------------------------------------------------
@triton.jit
def leaky_relu_clamp_kernel(x_ptr, y_ptr, n, slope, hi, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.where(x > 0, x, slope * x)
    y = tl.where(y > hi, hi, y)
    tl.store(y_ptr + offs, y, mask=mask)


def _args_leaky_relu_clamp(device):
    n = 1000
    x = torch.randn(n, device=device) * 2.0
    y = torch.empty_like(x)
    return [x, y, n, 0.1, 1.5], (_cdiv(n, 256), 1, 1)


# ---------------------------------------------------------------------------
# 20. casts among fp16, bf16 and fp32
# ---------------------------------------------------------------------------
@triton.jit
def mixed_precision_kernel(x16_ptr, wbf_ptr, out_bf_ptr, out32_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x16 = tl.load(x16_ptr + offs, mask=mask, other=0.0)
    wbf = tl.load(wbf_ptr + offs, mask=mask, other=0.0)
    x = x16.to(tl.float32)
    w = wbf.to(tl.float32)
    y = x * w + tl.exp(-x * x)
    tl.store(out_bf_ptr + offs, y.to(tl.bfloat16), mask=mask)
    z = x16.to(tl.bfloat16).to(tl.float32) + wbf.to(tl.float16).to(tl.float32)
    tl.store(out32_ptr + offs, z, mask=mask)


def _args_mixed_precision(device):
    n = 1000
    x16 = torch.randn(n, device=device, dtype=torch.float16)
    wbf = torch.randn(n, device=device, dtype=torch.bfloat16)
    out_bf = torch.empty(n, device=device, dtype=torch.bfloat16)
    out32 = torch.empty(n, device=device, dtype=torch.float32)
    return [x16, wbf, out_bf, out32, n], (_cdiv(n, 256), 1, 1)


# ---------------------------------------------------------------------------
# 21. tl.split / tl.join: complex multiply on interleaved (re, im) pairs
# ---------------------------------------------------------------------------
@triton.jit
def complex_mul_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    pair = offs[:, None] * 2 + tl.arange(0, 2)[None, :]
    mask = pair < 2 * n
    a = tl.load(a_ptr + pair, mask=mask, other=0.0)
    b = tl.load(b_ptr + pair, mask=mask, other=0.0)
    a_re, a_im = tl.split(a)
    b_re, b_im = tl.split(b)
    re = a_re * b_re - a_im * b_im
    im = a_re * b_im + a_im * b_re
    tl.store(out_ptr + pair, tl.join(re, im), mask=mask)


def _args_complex_mul(device):
    n = 1000
    a = torch.randn(n, 2, device=device)
    b = torch.randn(n, 2, device=device)
    out = torch.empty_like(a)
    return [a, b, out, n], (_cdiv(n, 128), 1, 1)


# ---------------------------------------------------------------------------
# 22. tl.trans (2D tile transpose, 2D grid) and tl.permute (3D)
# ---------------------------------------------------------------------------
@triton.jit
def transpose_scale_kernel(x_ptr, y_ptr, M, N, stride_xm, stride_ym, BLOCK_M: tl.constexpr,
                           BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=(rows[:, None] < M) & (cols[None, :] < N),
                other=0.0)
    scale = (rows.to(tl.float32) + 1.0)[:, None]
    xt = tl.trans(x * scale)  # [BLOCK_N, BLOCK_M]
    tl.store(y_ptr + cols[:, None] * stride_ym + rows[None, :], xt, mask=(cols[:, None] < N) & (rows[None, :] < M))


def _args_transpose_scale(device):
    M, N = 70, 45
    x = torch.randn(M, N, device=device)
    y = torch.empty(N, M, device=device)
    return [x, y, M, N, x.stride(0), y.stride(0)], (_cdiv(M, 32), _cdiv(N, 16), 1)


@triton.jit
def permute3d_kernel(x_ptr, y_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    # x: [batch, A, B, C] -> y: [batch, C, A, B]
    batch = tl.program_id(0)
    ia = tl.arange(0, A)[:, None, None]
    ib = tl.arange(0, B)[None, :, None]
    ic = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + batch * A * B * C + ia * (B * C) + ib * C + ic)
    y = tl.permute(tl.exp(x), (2, 0, 1))  # [C, A, B]
    oc = tl.arange(0, C)[:, None, None]
    oa = tl.arange(0, A)[None, :, None]
    ob = tl.arange(0, B)[None, None, :]
    tl.store(y_ptr + batch * A * B * C + oc * (A * B) + oa * B + ob, y)


def _args_permute3d(device):
    batch = 5
    x = torch.randn(batch, 4, 8, 16, device=device)
    y = torch.empty(batch, 16, 4, 8, device=device)
    return [x, y], (batch, 1, 1)


# ---------------------------------------------------------------------------
# 23. tl.reshape: mean-pool groups of GROUP consecutive elements
# ---------------------------------------------------------------------------
@triton.jit
def reshape_group_mean_kernel(x_ptr, out_ptr, n_groups, GROUP: tl.constexpr, BLOCK_G: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_G * GROUP + tl.arange(0, BLOCK_G * GROUP)
    x = tl.load(x_ptr + offs, mask=offs < n_groups * GROUP, other=0.0)
    x2 = tl.reshape(x, (BLOCK_G, GROUP))
    mean = tl.sum(x2 * x2, axis=1) / GROUP
    g = pid * BLOCK_G + tl.arange(0, BLOCK_G)
    tl.store(out_ptr + g, mean, mask=g < n_groups)


def _args_reshape_group_mean(device):
    n_groups, group = 250, 4
    x = torch.randn(n_groups * group, device=device)
    out = torch.empty(n_groups, device=device)
    return [x, out, n_groups], (_cdiv(n_groups, 64), 1, 1)


# ---------------------------------------------------------------------------
# 24. noinline helpers called from a kernel. In Triton 3.6 a noinline function may
#     only take SCALAR arguments (pointers, ints, floats, constexprs); a tensor
#     argument is rejected ("called with non-scalar argument"). So the helper
#     does its own loads/stores and returns a scalar.
# ---------------------------------------------------------------------------
@triton.jit(noinline=True)
def _softplus_block(x_ptr, y_ptr, start, n, beta, BLOCK: tl.constexpr):
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.log(1.0 + tl.exp(beta * x)) / beta
    tl.store(y_ptr + offs, y, mask=mask)
    return tl.sum(tl.where(mask, y, 0.0), axis=0)


@triton.jit(noinline=True)
def _scalar_poly(s, beta):
    return s * s * beta + 1.0


@triton.jit
def softplus_noinline_kernel(x_ptr, y_ptr, sums_ptr, n, beta, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    start = pid * 2 * BLOCK
    s0 = _softplus_block(x_ptr, y_ptr, start, n, beta, BLOCK)
    s1 = _softplus_block(x_ptr, y_ptr, start + BLOCK, n, beta, BLOCK)
    tl.store(sums_ptr + pid, _scalar_poly(s0 + s1, beta))


def _args_softplus_noinline(device):
    n = 1000
    x = torch.randn(n, device=device)
    y = torch.empty_like(x)
    sums = torch.empty(_cdiv(n, 512), device=device)
    return [x, y, sums, n, 1.5], (_cdiv(n, 512), 1, 1)


# ---------------------------------------------------------------------------
# 25. GELU, erf form (tl.math.erf) and tanh form (libdevice.tanh)
# ---------------------------------------------------------------------------
@triton.jit
def gelu_erf_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def gelu_tanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    y = 0.5 * x * (1.0 + libdevice.tanh(inner))
    tl.store(y_ptr + offs, y, mask=mask)


def _args_unary_1000(device):
    n = 1000
    x = torch.randn(n, device=device)
    y = torch.empty_like(x)
    return [x, y, n], (_cdiv(n, 256), 1, 1)


# ---------------------------------------------------------------------------
# 26. SwiGLU: silu(a) * b with silu via tl.sigmoid (2D rows x cols)
# ---------------------------------------------------------------------------
@triton.jit
def swiglu_kernel(a_ptr, b_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    col_block = tl.program_id(1)
    cols = col_block * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    a = tl.load(a_ptr + row * stride + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + row * stride + cols, mask=mask, other=0.0)
    silu = a * tl.sigmoid(a)
    tl.store(out_ptr + row * stride + cols, silu * b, mask=mask)


def _args_swiglu(device):
    rows, cols = 9, 500
    a = torch.randn(rows, cols, device=device)
    b = torch.randn(rows, cols, device=device)
    out = torch.empty_like(a)
    return [a, b, out, a.stride(0), cols], (rows, _cdiv(cols, 128), 1)


# ---------------------------------------------------------------------------
# 27. cross-entropy forward: logsumexp(row) - row[target], int64 targets
# ---------------------------------------------------------------------------
@triton.jit
def cross_entropy_fwd_kernel(logits_ptr, targets_ptr, loss_ptr, lse_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    row_ptr = logits_ptr + row * stride
    x = tl.load(row_ptr + cols, mask=cols < n_cols, other=-float("inf"))
    m = tl.max(x, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(x - m), axis=0))
    target = tl.load(targets_ptr + row)
    x_target = tl.load(row_ptr + target)
    tl.store(lse_ptr + row, lse)
    tl.store(loss_ptr + row, lse - x_target)


def _args_cross_entropy_fwd(device):
    rows, cols = 16, 1000
    logits = torch.randn(rows, cols, device=device)
    targets = torch.randint(0, cols, (rows, ), device=device, dtype=torch.int64)
    loss = torch.empty(rows, device=device)
    lse = torch.empty(rows, device=device)
    return [logits, targets, loss, lse, logits.stride(0), cols], (rows, 1, 1)


# ---------------------------------------------------------------------------
# 28. integer and constexpr params, 2D grid, strided (transposed) input
# ---------------------------------------------------------------------------
@triton.jit
def affine_2d_kernel(x_ptr, bias_ptr, y_ptr, M, N, stride_xm, stride_xn, stride_ym, alpha, shift,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask, other=0.0)
    y = alpha * x + ((cols + shift) % 7).to(tl.float32)[None, :]
    if HAS_BIAS:
        y += tl.load(bias_ptr + cols, mask=cols < N, other=0.0)[None, :]
    if ACT == 1:
        y = tl.maximum(y, 0.0)
    elif ACT == 2:
        y = y * tl.sigmoid(y)
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], y, mask=mask)


def _args_affine_2d(device):
    M, N = 50, 70
    x = torch.randn(N, M, device=device).t()  # non-contiguous view: stride (1, M)
    bias = torch.randn(N, device=device)
    y = torch.empty(M, N, device=device)
    return [x, bias, y, M, N, x.stride(0), x.stride(1), y.stride(0), 0.75, 3], (_cdiv(M, 16), _cdiv(N, 32), 1)


# ---------------------------------------------------------------------------
# 29. elementwise math zoo (exp, log, sqrt, rsqrt, sin, cos, exp2, log2, abs, fma, ...)
# ---------------------------------------------------------------------------
@triton.jit
def math_zoo_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    a = tl.abs(x) + 0.5
    y = tl.exp(0.1 * x) + tl.log(a) + tl.sqrt(a) * tl.rsqrt(a + 1.0)
    y += tl.sin(x) * tl.cos(x) + tl.exp2(0.2 * x) + tl.log2(a)
    y += tl.fma(x, x, a) + tl.maximum(x, 0.5 * x) - tl.minimum(x, -x) + x / a
    y += libdevice.pow(a, 1.5) + tl.math.floor(x) * 0.25
    tl.store(y_ptr + offs, y, mask=mask)


# ---------------------------------------------------------------------------
# 30. softmax backward (row-wise), the classic companion of 2
# ---------------------------------------------------------------------------
@triton.jit
def softmax_bwd_kernel(dx_ptr, dy_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    y = tl.load(y_ptr + row * stride + cols, mask=mask, other=0.0)
    dy = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0)
    dot = tl.sum(y * dy, axis=0)
    tl.store(dx_ptr + row * stride + cols, y * (dy - dot), mask=mask)


def _args_softmax_bwd(device):
    rows, cols = 21, 300
    y = torch.softmax(torch.randn(rows, cols, device=device), dim=1)
    dy = torch.randn(rows, cols, device=device)
    dx = torch.empty_like(y)
    return [dx, dy, y, y.stride(0), cols], (rows, 1, 1)


# ---------------------------------------------------------------------------
# the corpus
# ---------------------------------------------------------------------------
_ROW_REDUCE_SIG = {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": "i32", "n_cols": "i32", "BLOCK": "constexpr"}

CORPUS = [
    CorpusKernel("vector_add", vector_add_kernel,
                 {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                 {"BLOCK": 256}, _args_vector_add, (2, )),
    CorpusKernel("softmax", softmax_kernel, {
        "out_ptr": "*fp32", "in_ptr": "*fp32", "in_row_stride": "i32", "out_row_stride": "i32", "n_cols": "i32",
        "BLOCK": "constexpr"
    }, {"BLOCK": 512}, _args_softmax, (0, )),
    CorpusKernel("layer_norm_fwd", layer_norm_fwd_kernel, {
        "x_ptr": "*fp32", "y_ptr": "*fp32", "w_ptr": "*fp32", "b_ptr": "*fp32", "mean_ptr": "*fp32", "rstd_ptr":
        "*fp32", "stride": "i32", "N": "i32", "eps": "fp32", "BLOCK": "constexpr"
    }, {"BLOCK": 256}, _args_layer_norm_fwd, (1, 4, 5)),
    CorpusKernel("layer_norm_bwd_dx_partial", layer_norm_bwd_dx_partial_kernel, {
        "dx_ptr": "*fp32", "dy_ptr": "*fp32", "dw_partial_ptr": "*fp32", "db_partial_ptr": "*fp32", "x_ptr": "*fp32",
        "w_ptr": "*fp32", "mean_ptr": "*fp32", "rstd_ptr": "*fp32", "stride": "i32", "M": "i32", "N": "i32",
        "BLOCK_N": "constexpr"
    }, {"BLOCK_N": 512}, _args_layer_norm_bwd_dx_partial, (0, 2, 3)),
    CorpusKernel("layer_norm_bwd_dx_lock", layer_norm_bwd_dx_lock_kernel, {
        "dx_ptr": "*fp32", "dy_ptr": "*fp32", "dw_partial_ptr": "*fp32", "db_partial_ptr": "*fp32", "x_ptr": "*fp32",
        "w_ptr": "*fp32", "mean_ptr": "*fp32", "rstd_ptr": "*fp32", "lock_ptr": "*i32", "stride": "i32", "N": "i32",
        "GROUP_M": "constexpr", "BLOCK_N": "constexpr"
    }, {"GROUP_M": _LN_GROUP_M, "BLOCK_N": 512}, _args_layer_norm_bwd_dx_lock, (0, 2, 3)),
    CorpusKernel("layer_norm_bwd_dwdb", layer_norm_bwd_dwdb_kernel, {
        "dw_partial_ptr": "*fp32", "db_partial_ptr": "*fp32", "dw_ptr": "*fp32", "db_ptr": "*fp32", "M": "i32",
        "N": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"
    }, {"BLOCK_M": 4, "BLOCK_N": 64}, _args_layer_norm_bwd_dwdb, (2, 3)),
    CorpusKernel("rms_norm_fwd", rms_norm_fwd_kernel, {
        "x_ptr": "*fp32", "y_ptr": "*fp32", "w_ptr": "*fp32", "rstd_ptr": "*fp32", "stride": "i32", "N": "i32",
        "eps": "fp32", "BLOCK": "constexpr"
    }, {"BLOCK": 1024}, _args_rms_norm_fwd, (1, 3)),
    CorpusKernel("matmul", matmul_kernel, {
        "a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
        "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32", "stride_cn": "i32",
        "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "GROUP_M": "constexpr"
    }, {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 2}, _args_matmul, (2, )),
    CorpusKernel("attention_fwd", attention_fwd_kernel, {
        "q_ptr": "*fp32", "k_ptr": "*fp32", "v_ptr": "*fp32", "out_ptr": "*fp32", "lse_ptr": "*fp32", "sm_scale":
        "fp32", "seq_len": "i32", "stride_bh": "i32", "stride_s": "i32", "HEAD_DIM": "constexpr", "BLOCK_M":
        "constexpr", "BLOCK_N": "constexpr"
    }, {"HEAD_DIM": 32, "BLOCK_M": 32, "BLOCK_N": 32}, _args_attention_fwd, (3, 4)),
    CorpusKernel("dropout", dropout_kernel, {
        "x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "p": "fp32", "seed": "i32", "BLOCK": "constexpr"
    }, {"BLOCK": 256}, _args_dropout, (1, )),
    CorpusKernel("cumsum", cumsum_kernel, {
        "x_ptr": "*fp32", "out_ptr": "*fp32", "stride": "i32", "n_cols": "i32", "BLOCK": "constexpr"
    }, {"BLOCK": 256}, _args_cumsum, (1, )),
    CorpusKernel("linear_recurrence_scan", linear_recurrence_scan_kernel, {
        "a_ptr": "*fp32", "b_ptr": "*fp32", "h_ptr": "*fp32", "stride": "i32", "n_cols": "i32", "BLOCK": "constexpr"
    }, {"BLOCK": 128}, _args_linear_recurrence_scan, (2, )),
    CorpusKernel("row_sum", row_sum_kernel, {
        "x_ptr": "*fp32", "out_ptr": "*fp32", "M": "i32", "N": "i32", "stride": "i32", "BLOCK_M": "constexpr",
        "BLOCK_N": "constexpr"
    }, {"BLOCK_M": 16, "BLOCK_N": 128}, _args_row_sum, (1, )),
    CorpusKernel("row_max", row_max_kernel, _ROW_REDUCE_SIG, {"BLOCK": 512}, _args_row_reduce(torch.float32), (1, )),
    CorpusKernel("row_min", row_min_kernel, _ROW_REDUCE_SIG, {"BLOCK": 512}, _args_row_reduce(torch.float32), (1, )),
    CorpusKernel("row_argmax", row_argmax_kernel, {
        "x_ptr": "*fp32", "idx_ptr": "*i32", "stride": "i32", "n_cols": "i32", "BLOCK": "constexpr"
    }, {"BLOCK": 512},
                 _args_row_reduce(torch.int32), (1, )),
    CorpusKernel("atomic_sum", atomic_sum_kernel, {
        "x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"
    }, {"BLOCK": 256}, _args_atomic_sum, (1, )),
    CorpusKernel("histogram", histogram_kernel, {
        "x_ptr": "*i32", "hist_ptr": "*i32", "n": "i32", "BLOCK": "constexpr", "NUM_BINS": "constexpr"
    }, {"BLOCK": 256, "NUM_BINS": 16}, _args_histogram, (1, )),
    CorpusKernel("first_program_branch", first_program_branch_kernel, {
        "x_ptr": "*fp32", "y_ptr": "*fp32", "extra_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"
    }, {"BLOCK": 256}, _args_first_program_branch, (1, 2)),
    CorpusKernel("newton_sqrt_while", newton_sqrt_while_kernel, {
        "x_ptr": "*fp32", "y_ptr": "*fp32", "iters_ptr": "*i32", "n": "i32", "tol": "fp32", "BLOCK": "constexpr",
        "MAX_ITERS": "constexpr"
    }, {"BLOCK": 256, "MAX_ITERS": 50}, _args_newton_sqrt_while, (1, 2)),
    CorpusKernel("leaky_relu_clamp", leaky_relu_clamp_kernel, {
        "x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "slope": "fp32", "hi": "fp32", "BLOCK": "constexpr"
    }, {"BLOCK": 256}, _args_leaky_relu_clamp, (1, )),
    CorpusKernel("mixed_precision", mixed_precision_kernel, {
        "x16_ptr": "*fp16", "wbf_ptr": "*bf16", "out_bf_ptr": "*bf16", "out32_ptr": "*fp32", "n": "i32", "BLOCK":
        "constexpr"
    }, {"BLOCK": 256}, _args_mixed_precision, (2, 3)),
    CorpusKernel("complex_mul", complex_mul_kernel, {
        "a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"
    }, {"BLOCK": 128}, _args_complex_mul, (2, )),
    CorpusKernel("transpose_scale", transpose_scale_kernel, {
        "x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32", "stride_xm": "i32", "stride_ym": "i32",
        "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"
    }, {"BLOCK_M": 32, "BLOCK_N": 16}, _args_transpose_scale, (1, )),
    CorpusKernel("permute3d", permute3d_kernel, {
        "x_ptr": "*fp32", "y_ptr": "*fp32", "A": "constexpr", "B": "constexpr", "C": "constexpr"
    }, {"A": 4, "B": 8, "C": 16}, _args_permute3d, (1, )),
    CorpusKernel("reshape_group_mean", reshape_group_mean_kernel, {
        "x_ptr": "*fp32", "out_ptr": "*fp32", "n_groups": "i32", "GROUP": "constexpr", "BLOCK_G": "constexpr"
    }, {"GROUP": 4, "BLOCK_G": 64}, _args_reshape_group_mean, (1, )),
    CorpusKernel("softplus_noinline", softplus_noinline_kernel, {
        "x_ptr": "*fp32", "y_ptr": "*fp32", "sums_ptr": "*fp32", "n": "i32", "beta": "fp32", "BLOCK": "constexpr"
    }, {"BLOCK": 256}, _args_softplus_noinline, (1, 2)),
    CorpusKernel("gelu_erf", gelu_erf_kernel, {
        "x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"
    }, {"BLOCK": 256}, _args_unary_1000, (1, )),
    CorpusKernel("gelu_tanh", gelu_tanh_kernel, {
        "x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"
    }, {"BLOCK": 256}, _args_unary_1000, (1, )),
    CorpusKernel("swiglu", swiglu_kernel, {
        "a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32", "stride": "i32", "n_cols": "i32", "BLOCK": "constexpr"
    }, {"BLOCK": 128}, _args_swiglu, (2, )),
    CorpusKernel("cross_entropy_fwd", cross_entropy_fwd_kernel, {
        "logits_ptr": "*fp32", "targets_ptr": "*i64", "loss_ptr": "*fp32", "lse_ptr": "*fp32", "stride": "i64",
        "n_cols": "i32", "BLOCK": "constexpr"
    }, {"BLOCK": 1024}, _args_cross_entropy_fwd, (2, 3)),
    CorpusKernel("affine_2d", affine_2d_kernel, {
        "x_ptr": "*fp32", "bias_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32", "stride_xm": "i32",
        "stride_xn": "i32", "stride_ym": "i32", "alpha": "fp32", "shift": "i32", "BLOCK_M": "constexpr", "BLOCK_N":
        "constexpr", "HAS_BIAS": "constexpr", "ACT": "constexpr"
    }, {"BLOCK_M": 16, "BLOCK_N": 32, "HAS_BIAS": True, "ACT": 2}, _args_affine_2d, (2, )),
    CorpusKernel("math_zoo", math_zoo_kernel, {
        "x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"
    }, {"BLOCK": 256}, _args_unary_1000, (1, )),
    CorpusKernel("softmax_bwd", softmax_bwd_kernel, {
        "dx_ptr": "*fp32", "dy_ptr": "*fp32", "y_ptr": "*fp32", "stride": "i32", "n_cols": "i32", "BLOCK": "constexpr"
    }, {"BLOCK": 512}, _args_softmax_bwd, (0, )),
]

CORPUS_BY_NAME = {k.name: k for k in CORPUS}
assert len(CORPUS_BY_NAME) == len(CORPUS), "duplicate corpus names"


def runtime_args_with_constexprs(entry, args):
    """Full positional argument list for launching an ASTSource-compiled CompiledKernel.

    Its generated launcher (triton/backends/nvidia/driver.py, make_launcher) parses one
    Python object per signature entry, constexprs included (ignored), so the constexpr
    values must be put back in their slots. An IRSource (.ttir) kernel takes ``args`` as is.
    """
    it = iter(args)
    full = []
    for pname, ty in entry.signature.items():
        full.append(entry.constexprs[pname] if ty == "constexpr" else next(it))
    rest = list(it)
    assert not rest, f"{entry.name}: {len(rest)} extra runtime args"
    return full


# ---------------------------------------------------------------------------
# Kernels shared by test files, outside CORPUS
# ---------------------------------------------------------------------------

@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y, mask=mask)
