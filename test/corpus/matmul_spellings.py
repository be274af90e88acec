"""Matmul kernels written the ways people write them (issue 41): one product of
tiles, spelled with different grids, masks, strides, pointer arithmetic,
block pointers, autotuning and epilogues. The re-parallelized schedule must
recognize every one from the IR's structure; test/test_dot_spellings.py
checks that it does (schedule on the CPU, gradients in the interpreter and on
the GPU) and benchmarks/matmul_spellings.py times each against cuBLAS,
torch.compile and a hand-written Triton backward.

Each `Spelling` knows how to launch its kernel on (a, b[, extras]) and the
same computation in torch (`reference`), which gives the gradients to compare
with. Operands: a is (M, K) or (batch, M, K); b is (K, N) or (batch, K, N)
(a linear layer's weight is passed as W.t(), a view: strides say the rest);
c is a's dtype, accumulated in fp32.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, NamedTuple, Optional, Tuple

import triton
import triton.language as tl

# ---------------------------------------------------------------------------
# Helpers the kernels share (device functions, inlined by Triton).
# ---------------------------------------------------------------------------


@triton.jit
def _grouped_ids(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 GROUP_M: tl.constexpr):
    # Triton's matmul tutorial: programs walk GROUP_M rows of tiles column by column.
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def _gelu_tanh(x):
    # GELU, tanh approximation, as x * sigmoid(2 * inner) (= 0.5 x (1 + tanh(inner)))
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return x * tl.sigmoid(2.0 * inner)


# ---------------------------------------------------------------------------
# Plain products
# ---------------------------------------------------------------------------


@triton.jit
def grouped_1d_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                      stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # The tutorial: 1-D grid in grouped order, masks, pointers advanced by +=.
    pid_m, pid_n = _grouped_ids(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = accumulator.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def plain_1d_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                    stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    BLOCK_K: tl.constexpr):
    # 1-D grid, row-major program order, masks, offsets recomputed from k.
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn,
             acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def grid_2d_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                   stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr):
    # 2-D grid (issue 41's): pid_m on axis 0, pid_n on axis 1, masks, pointer increments.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K),
                    other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BLOCK_K) & (offs_n[None, :] < N),
                    other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def grid_2d_nomask_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                          stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # 2-D grid, no masks (sizes multiples of the tiles), index arithmetic.
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K // BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k * BLOCK_K + rk)[None, :] * stride_ak)
        b = tl.load(b_ptr + (k * BLOCK_K + rk)[:, None] * stride_bk + rn[None, :] * stride_bn)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn,
             acc.to(c_ptr.dtype.element_ty))


@triton.jit
def grid_2d_constexpr_strides_kernel(a_ptr, b_ptr, c_ptr, M, N, K: tl.constexpr,
                                     STRIDE_AM: tl.constexpr, STRIDE_BK: tl.constexpr,
                                     STRIDE_CM: tl.constexpr, BLOCK_M: tl.constexpr,
                                     BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # 2-D grid, contiguous operands with their row strides (and K) as constants, masks.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + offs_m[:, None] * STRIDE_AM + (k + offs_k)[None, :],
                    mask=(offs_m[:, None] < M) & ((k + offs_k)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + offs_k)[:, None] * STRIDE_BK + offs_n[None, :],
                    mask=((k + offs_k)[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs_m[:, None] * STRIDE_CM + offs_n[None, :],
             acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def batched_3d_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_ab, stride_am, stride_ak, stride_bb,
                      stride_bk, stride_bn, stride_cb, stride_cm, stride_cn,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # 3-D grid: (m tile, n tile, batch), pointers offset by the batch once.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_b = tl.program_id(2)
    a_ptr += pid_b * stride_ab
    b_ptr += pid_b * stride_bb
    c_ptr += pid_b * stride_cb
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K),
                    other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BLOCK_K) & (offs_n[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn,
             acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def block_ptr_2d_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                        stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # Block pointers (tl.make_block_ptr / tl.advance) on a 2-D grid, boundary-checked.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_block = tl.make_block_ptr(a_ptr, shape=(M, K), strides=(stride_am, stride_ak),
                                offsets=(pid_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_K),
                                order=(1, 0))
    b_block = tl.make_block_ptr(b_ptr, shape=(K, N), strides=(stride_bk, stride_bn),
                                offsets=(0, pid_n * BLOCK_N), block_shape=(BLOCK_K, BLOCK_N),
                                order=(1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        a = tl.load(a_block, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_block, boundary_check=(0, 1), padding_option="zero")
        acc += tl.dot(a, b)
        a_block = tl.advance(a_block, (0, BLOCK_K))
        b_block = tl.advance(b_block, (BLOCK_K, 0))
    c_block = tl.make_block_ptr(c_ptr, shape=(M, N), strides=(stride_cm, stride_cn),
                                offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                                block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tl.store(c_block, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))


@triton.jit
def block_ptr_grouped_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                             stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr):
    # Block pointers in the tutorial's grouped order (1-D grid).
    pid_m, pid_n = _grouped_ids(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    a_block = tl.make_block_ptr(a_ptr, (M, K), (stride_am, stride_ak), (pid_m * BLOCK_M, 0),
                                (BLOCK_M, BLOCK_K), (1, 0))
    b_block = tl.make_block_ptr(b_ptr, (K, N), (stride_bk, stride_bn), (0, pid_n * BLOCK_N),
                                (BLOCK_K, BLOCK_N), (1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_block, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_block, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_block = tl.advance(a_block, (0, BLOCK_K))
        b_block = tl.advance(b_block, (BLOCK_K, 0))
    c_block = tl.make_block_ptr(c_ptr, (M, N), (stride_cm, stride_cn),
                                (pid_m * BLOCK_M, pid_n * BLOCK_N), (BLOCK_M, BLOCK_N), (1, 0))
    tl.store(c_block, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))


# ---------------------------------------------------------------------------
# Linear layers with epilogues (2-D grids unless said otherwise)
# ---------------------------------------------------------------------------


@triton.jit
def linear_epilogue_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, aux_ptr, M, N, K, stride_am,
                           stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, stride_xm,
                           stride_xn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           BLOCK_K: tl.constexpr, EPILOGUE: tl.constexpr):
    # c = epilogue(a @ b): "bias" (+ bias[n]), "gelu" (erf form), "silu_gate"
    # (silu(acc) * gate[m, n], the gate in aux), "residual" (+ aux[m, n]).
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K),
                    other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BLOCK_K) & (offs_n[None, :] < N),
                    other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    aux_ptrs = aux_ptr + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn
    if EPILOGUE == "bias":
        acc += tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    elif EPILOGUE == "gelu":
        acc = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
    elif EPILOGUE == "silu_gate":
        gate = tl.load(aux_ptrs, mask=mask, other=0.0).to(tl.float32)
        acc = acc * tl.sigmoid(acc) * gate
    elif EPILOGUE == "residual":
        acc += tl.load(aux_ptrs, mask=mask, other=0.0).to(tl.float32)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn,
             acc.to(c_ptr.dtype.element_ty), mask=mask)


def _autotune_configs():
    # (the pruning below keeps the benchmark's sizes to the tiles that fit)
    return [triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8},
                          num_warps=8, num_stages=3),
            triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8},
                          num_warps=4, num_stages=4),
            triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8},
                          num_warps=4, num_stages=4)]


@triton.autotune(configs=_autotune_configs(), key=["M", "N", "K"])
@triton.jit
def autotuned_grouped_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                             stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr):
    # @triton.autotune over tiles, grouped 1-D grid, masks on every side.
    pid_m, pid_n = _grouped_ids(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
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
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn,
             acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.autotune(configs=_autotune_configs(), key=["M", "N", "K"])
@triton.jit
def autotuned_linear_bias_gelu_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K, stride_xm,
                                      stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                      BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # A library's fused linear (x @ W^T, W as (N, K)) + bias + GELU (tanh form),
    # autotuned, grouped 1-D grid.
    pid_m, pid_n = _grouped_ids(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_mask = offs_k < K - k * BLOCK_K
        x = tl.load(x_ptrs, mask=(offs_m[:, None] < M) & k_mask[None, :], other=0.0)
        w = tl.load(w_ptrs, mask=k_mask[:, None] & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    y = _gelu_tanh(acc + bias[None, :])
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn,
             y.to(y_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


# ---------------------------------------------------------------------------
# The spellings as data
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Spelling:
    """One way of writing the product. `launch(kernel, tensors, tiles)` gives
    (grid, positional arguments, keyword arguments) for `tensors` (a, b, c
    and the epilogue's inputs by name); `reference(a, b, **extras)` the same
    computation in torch; `extras` the epilogue's inputs and their shapes
    ('n': (N,), 'mn': like c)."""
    name: str
    how: str
    kernel: object
    launch: Callable
    reference: Callable
    tiles: Dict[str, int] = field(default_factory=dict)  # the GPU benchmark's (fixed configs)
    small_tiles: Dict[str, int] = field(default_factory=dict)  # the interpreter's
    extras: Tuple[Tuple[str, str], ...] = ()
    batched: bool = False
    divisible: bool = False  # no masks: sizes must be multiples of the tiles
    # Offsets wrap at the tensor's extent (`% M`, the tutorial's): only at
    # multiples of the tiles does each element of dA, dB have one writer.
    wraps: bool = False
    autotuned: bool = False
    outputs: Tuple[str, ...] = ("c_ptr",)
    # The hand-written Triton backward with the same tiles (dA = dC @ B^T,
    # dB = A^T @ dC by the forward's kernel) where the spelling is a plain product.
    hand: bool = True
    # Why the re-parallelized schedule does not take it yet (test_dot_spellings
    # marks it xfail(strict=True) with this reason); None: it must.
    not_yet: Optional[str] = None

    def with_configs(self, configs):
        """An autotuned spelling's kernel with other configs (the interpreter's small tiles)."""
        return triton.autotune(configs=configs, key=["M", "N", "K"])(self.kernel.fn)


def _strides2(t):
    return t.stride(-2), t.stride(-1)


def _mm_args(t):
    a, b, c = t["a"], t["b"], t["c"]
    M, K = a.shape[-2:]
    N = b.shape[-1]
    return [a, b, c, M, N, K, *_strides2(a), *_strides2(b), *_strides2(c)]


def _cdiv(x, y):
    return (x + y - 1) // y


def _grid_1d(t, tiles):
    M, N = t["a"].shape[-2], t["b"].shape[-1]
    return lambda meta: (_cdiv(M, meta["BLOCK_M"]) * _cdiv(N, meta["BLOCK_N"]),)


def _grid_2d(t, tiles):
    M, N = t["a"].shape[-2], t["b"].shape[-1]
    return lambda meta: (_cdiv(M, meta["BLOCK_M"]), _cdiv(N, meta["BLOCK_N"]))


def _launch_plain(grid):
    def launch(kernel, t, tiles):
        return grid(t, tiles), _mm_args(t), dict(tiles)
    return launch


def _launch_constexpr_strides(kernel, t, tiles):
    a, b, c = t["a"], t["b"], t["c"]
    M, K = a.shape
    N = b.shape[1]
    assert a.stride(1) == 1 and b.stride(1) == 1 and c.stride(1) == 1, "contiguous rows"
    return _grid_2d(t, tiles), [a, b, c, M, N], dict(tiles, K=K, STRIDE_AM=a.stride(0),
                                                     STRIDE_BK=b.stride(0),
                                                     STRIDE_CM=c.stride(0))


def _launch_batched(kernel, t, tiles):
    a, b, c = t["a"], t["b"], t["c"]
    batch, M, K = a.shape
    N = b.shape[-1]
    grid = lambda meta: (_cdiv(M, meta["BLOCK_M"]), _cdiv(N, meta["BLOCK_N"]), batch)  # noqa: E731
    return grid, [a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride()], dict(tiles)


def _launch_epilogue(epilogue):
    def launch(kernel, t, tiles):
        a, b, c = t["a"], t["b"], t["c"]
        # (an input the epilogue does not read: a separate one-element tensor)
        unused = c.new_empty(1)
        aux = t.get("gate", t.get("residual"))
        bias = t.get("bias", unused)
        M, K = a.shape
        N = b.shape[1]
        aux_strides = _strides2(aux) if aux is not None else (0, 0)
        return _grid_2d(t, tiles), [a, b, c, bias, unused if aux is None else aux, M, N, K,
                                    *_strides2(a), *_strides2(b), *_strides2(c), *aux_strides], \
            dict(tiles, EPILOGUE=epilogue)
    return launch


def _launch_linear_bias_gelu(kernel, t, tiles):
    x, w_t, y, bias = t["a"], t["b"], t["c"], t["bias"]
    M, K = x.shape
    N = w_t.shape[1]
    # (w_t is (K, N): W.t() of a linear layer's (N, K) weight; stride_wn, stride_wk)
    return _grid_1d(t, tiles), [x, w_t, bias, y, M, N, K, *_strides2(x), w_t.stride(1),
                                w_t.stride(0), *_strides2(y)], dict(tiles)


def _product(a, b, **_):
    return (a.float() @ b.float()) if a.dtype != b.dtype else a @ b


def _gelu_tanh_torch(x):
    import torch
    return torch.nn.functional.gelu(x, approximate="tanh")


TILES = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64)
SMALL = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)

SPELLINGS = [
    Spelling("grouped_1d", "the tutorial: 1-D grid, GROUP_M swizzle, rows wrap % M, ptr +=",
             grouped_1d_kernel, _launch_plain(_grid_1d), _product,
             dict(TILES, GROUP_M=8), dict(SMALL, GROUP_M=2), wraps=True),
    Spelling("plain_1d", "1-D grid, row-major order, masks, index arithmetic",
             plain_1d_kernel, _launch_plain(_grid_1d), _product, TILES, SMALL),
    Spelling("grid_2d", "2-D grid (pid_m, pid_n), masks, ptr +=, acc += dot",
             grid_2d_kernel, _launch_plain(_grid_2d), _product, TILES, SMALL),
    Spelling("grid_2d_nomask", "2-D grid, no masks, index arithmetic",
             grid_2d_nomask_kernel, _launch_plain(_grid_2d), _product, TILES, SMALL,
             divisible=True),
    Spelling("grid_2d_constexpr", "2-D grid, K and row strides constexpr, masks",
             grid_2d_constexpr_strides_kernel, _launch_constexpr_strides, _product, TILES, SMALL),
    Spelling("batched_3d", "3-D grid (m, n, batch), base pointers += batch offset",
             batched_3d_kernel, _launch_batched, _product, TILES, SMALL, batched=True),
    Spelling("block_ptr_2d", "block pointers, 2-D grid, boundary_check",
             block_ptr_2d_kernel, _launch_plain(_grid_2d), _product, TILES, SMALL),
    Spelling("block_ptr_grouped", "block pointers, GROUP_M swizzle",
             block_ptr_grouped_kernel, _launch_plain(_grid_1d), _product,
             dict(TILES, GROUP_M=8), dict(SMALL, GROUP_M=2)),
    Spelling("autotuned_grouped", "@triton.autotune over 3 configs, GROUP_M, masks",
             autotuned_grouped_kernel, _launch_plain(_grid_1d), _product,
             {}, dict(SMALL, GROUP_M=2), autotuned=True),
    Spelling("linear_bias", "2-D grid, + bias[n] epilogue",
             linear_epilogue_kernel, _launch_epilogue("bias"),
             lambda a, b, bias: _product(a, b) + bias, TILES, SMALL, extras=(("bias", "n"),),
             hand=False),
    Spelling("linear_gelu", "2-D grid, GELU (erf) epilogue",
             linear_epilogue_kernel, _launch_epilogue("gelu"),
             lambda a, b: __import__("torch").nn.functional.gelu(_product(a, b)), TILES, SMALL,
             hand=False),
    Spelling("linear_silu_gate", "2-D grid, silu(acc) * gate epilogue",
             linear_epilogue_kernel, _launch_epilogue("silu_gate"),
             lambda a, b, gate: __import__("torch").nn.functional.silu(_product(a, b)) * gate,
             TILES, SMALL, extras=(("gate", "mn"),), hand=False),
    Spelling("linear_residual", "2-D grid, + residual[m, n] epilogue",
             linear_epilogue_kernel, _launch_epilogue("residual"),
             lambda a, b, residual: _product(a, b) + residual, TILES, SMALL,
             extras=(("residual", "mn"),), hand=False),
    Spelling("autotuned_bias_gelu", "library-style autotuned x @ W^T + bias, GELU (tanh)",
             autotuned_linear_bias_gelu_kernel, _launch_linear_bias_gelu,
             lambda a, b, bias: _gelu_tanh_torch(_product(a, b) + bias), {},
             dict(SMALL, GROUP_M=2), extras=(("bias", "n"),), autotuned=True, hand=False,
             outputs=("y_ptr",)),
]

BY_NAME = {s.name: s for s in SPELLINGS}


# ---------------------------------------------------------------------------
# The schedule tritonad picks, derived on the CPU
# ---------------------------------------------------------------------------

DESCRIBE_SHAPE = (1000, 1000, 1536)     # M, N, K (odd tile counts, masks)
DESCRIBE_DIVISIBLE = (1024, 1152, 1536)  # for spellings without masks, or that wrap
DESCRIBE_BATCH = 3


def describe_shape(spelling):
    return DESCRIBE_DIVISIBLE if spelling.divisible or spelling.wraps else DESCRIBE_SHAPE


def inputs(spelling, M, N, K, dtype, device, batch=DESCRIBE_BATCH, requires_grad=False,
           scale=None):
    """{a, b, c, extras...}: random operands (a, b scaled by K^-1/4 so that
    products stay O(1)), c empty; the extras at their shapes."""
    import torch

    lead = (batch,) if spelling.batched else ()
    scale = K ** -0.25 if scale is None else scale
    t = dict(a=torch.randn(*lead, M, K, device=device, dtype=dtype) * scale,
             b=torch.randn(*lead, K, N, device=device, dtype=dtype) * scale)
    if spelling.name == "autotuned_bias_gelu":  # (a linear layer's (N, K) weight, as W.t())
        t["b"] = (torch.randn(N, K, device=device, dtype=dtype) * scale).t()
    for name, shape in spelling.extras:
        t[name] = torch.randn(*((N,) if shape == "n" else (*lead, M, N)), device=device,
                              dtype=dtype)
    if requires_grad:
        t = {k: v.detach().requires_grad_() for k, v in t.items()}
    t["c"] = torch.empty(*lead, M, N, device=device, dtype=dtype)
    return t


def _placeholder_of(kernel):
    """The JITFunction under autotune/heuristics wrappers."""
    from triton.runtime.jit import JITFunction

    while not isinstance(kernel, JITFunction):
        kernel = kernel.fn
    return kernel


def config_tiles(spelling, config_index=0):
    """The constexprs of a launch: the spelling's fixed tiles, or an autotuned
    kernel's config `config_index` (its kwargs)."""
    if spelling.autotuned:
        return dict(spelling.kernel.configs[config_index].kwargs)
    return dict(spelling.tiles)


def launch_signature(spelling, dtype="fp16", shape=None, tiles=None, mode="auto",
                     programs="main", full_masks=False):
    """What a GPU launch of tritonad.autograd's backward for this spelling
    compiles, built on the CPU: (op, placeholder, signature, constants, attrs,
    values, grid). The launch path's hidden parameters (the re-parallelization
    table, scratch, residuals, partial-buffer workspace) are present as at a
    launch; integers and pointers get Triton's divisibility specialization;
    `programs` 'main' or 'parts' is the kernel the launch compiles for each
    of its two launches (its selector 1, a constant); `full_masks` the variant
    without the masks the launch's arguments make always true (_masks.py)."""
    import torch
    from triton.runtime.jit import mangle_type

    import tritonad
    from tritonad import _masks
    from tritonad._partial import WORKSPACE_TYPES
    from tritonad._residuals import RESIDUALS

    torch_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32,
                   "fp32": torch.float32}[dtype]
    M, N, K = shape or describe_shape(spelling)
    t = inputs(spelling, M, N, K, torch_dtype, "cpu")
    tiles = config_tiles(spelling) if tiles is None else tiles
    grid, args, kwargs = spelling.launch(spelling.kernel, t, tiles)
    op = tritonad.autograd(spelling.kernel, outputs=spelling.outputs, mode=mode)
    bwd = _placeholder_of(op.backward_kernel)
    values = dict(zip(_placeholder_of(spelling.kernel).arg_names, args))
    constants = dict(kwargs)
    constants[f"tritonad_{programs}_only"] = 1
    constants[_masks.variant(full_masks) and (_masks.FULL_MASKS if full_masks
                                              else _masks.KEEP_MASKS)] = 1
    hidden = dict(WORKSPACE_TYPES, **{RESIDUALS: "*i8"})
    signature, attrs = {}, {}
    for index, name in enumerate(bwd.arg_names):
        pointer = next((p for p, s in bwd.shadows.items() if s == name), None)
        value = values.get(name, values.get(pointer))
        if name in constants:
            signature[name] = "constexpr"
            continue
        if isinstance(value, int) and not isinstance(value, bool) and value == 1:
            # (Triton's launcher compiles an integer argument equal to 1 as a constant)
            constants[name] = 1
            signature[name] = "constexpr"
            continue
        if name in hidden:
            signature[name] = hidden[name]
        elif value is not None:
            signature[name] = mangle_type(value)
        else:
            constants[name] = None
            signature[name] = "constexpr"
            continue
        # (Triton's specialization: pointers 16-byte aligned, integers
        # divisible by 16; hidden integers are 0 at the launch)
        if signature[name].startswith("*") or (isinstance(value, int) and value % 16 == 0) \
                or (name in hidden and not hidden[name].startswith("*")):
            attrs[(index,)] = [["tt.divisibility", 16]]
    return op, bwd, signature, constants, attrs, values, grid_of(spelling, t, tiles)


class Described(NamedTuple):
    schedule: object  # tritonad's Schedule (a str with .entries)
    table: dict       # the launch's: main programs, parts (see _launch_table)
    derived_ir: str


def derive_schedule(spelling, dtype="fp16", shape=None, tiles=None, mode="auto",
                    programs="main"):
    """The schedule of the backward tritonad.autograd runs for this spelling,
    derived on the CPU for sm_90 as a GPU launch derives it (`launch_signature`;
    only Triton's front end and tritonad run, to TTIR), and what the launch
    would do with its re-parallelized parts at the describe shape
    (`_launch_table`)."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend

    from tritonad._hook import _rewrite_module

    op, bwd, signature, constants, attrs, values, grid = launch_signature(
        spelling, dtype, shape, tiles, mode, programs)
    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    source = ASTSource(bwd, signature, constants, attrs)
    options = backend.parse_options(source.parse_options())
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    metadata: dict = {}
    module = source.make_ir(target, options, backend.get_codegen_implementation(options),
                            backend.get_module_map(), context)
    derived = _rewrite_module(module, metadata)
    return Described(bwd.schedule(), _launch_table(metadata, bwd, values, constants, grid),
                     derived.str())


def grid_of(spelling, t, tiles):
    """The launch grid (a tuple) of the spelling for tensors `t` and constexprs `tiles`."""
    grid, _, _ = spelling.launch(spelling.kernel, t, tiles)
    return tuple(grid(tiles) if callable(grid) else grid)


def _launch_table(metadata, bwd, values, constants, grid):
    """What the launch path would do at this launch (tritonad._regrid's table,
    on the host): {'main': the forward's programs launched before the parts
    (0: none), 'parts': [{'shadow', 'programs', 'groups', 'affine', 'plain'}]};
    None where nothing is re-parallelized."""
    from tritonad import _regrid

    records = [r for r in (metadata.get("tritonad_regrid") or {}).values() if r]
    if not records:
        return None
    arguments = dict(values, **constants)
    for pointer, shadow in bwd.shadows.items():
        if pointer in arguments:
            arguments[shadow] = arguments[pointer].new_empty(arguments[pointer].shape)
    words, _, _ = _regrid._table(records[-1], arguments, grid)
    return dict(main=int(words[0]),
                parts=[dict(described, shadow=part["shadow"]) for described, part in
                       zip(_regrid.describe(words), records[-1]["parts"])])


class Twice(NamedTuple):
    names: list      # the inputs' names, in the order of the gradients
    first: tuple     # tritonad's gradients
    again: tuple     # the same, from a second backward
    parts: list      # the parts of the second's launch (tritonad._regrid.describe)
    want: tuple      # torch.autograd's in fp64
    strategies: dict  # the backward's schedule: {pointer: strategy}
    upstream: object  # the upstream gradient (dC)


def gradients_twice(spelling, kernel, t, tiles, mode="auto", **launch):
    """The gradients of every input `t` holds (but c) through tritonad.autograd
    of `kernel` (the spelling's, or its autotuned one with a config of its
    own; `tiles` its fixed constexprs), taken twice with one upstream
    gradient, beside fp64 torch's."""
    import torch

    import tritonad
    from tritonad import _regrid

    names = [k for k in t if k != "c"]
    op = tritonad.autograd(kernel, outputs=spelling.outputs, mode=mode)
    grid, args, kwargs = spelling.launch(kernel, t, tiles)
    out = op[grid](*args, **kwargs, **launch)
    dc = torch.randn_like(out)
    leaves = [t[k] for k in names]
    first = torch.autograd.grad(out, leaves, dc, retain_graph=True)
    again = torch.autograd.grad(out, leaves, dc)
    parts = _regrid.describe(_regrid.last_table)
    wide = [x.detach().double().requires_grad_() for x in leaves]
    want = torch.autograd.grad(spelling.reference(*wide[:2], **dict(zip(names[2:], wide[2:]))),
                               wide, dc.double())
    strategies = {e.subject: e.strategy for e in op.backward_kernel.schedule().entries
                  if e.kind == "shadow"}
    return Twice(names, first, again, parts, want, strategies, dc)


def reparallelized(schedule, spelling):
    """{shadow of a and b: whether its strategy is re-parallelized}."""
    strategies = {e.subject: e.strategy for e in schedule.entries if e.kind == "shadow"}
    operands = _placeholder_of(spelling.kernel).arg_names[:2]
    return {name: strategies.get(name) == "re-parallelized" for name in operands}


def operand_names(spelling):
    """The forward's pointers of the product's two operands (a and b)."""
    import inspect

    kernel = spelling.kernel
    while hasattr(kernel, "fn"):  # (autotune, jit or interpreter wrappers)
        kernel = kernel.fn
    return tuple(inspect.signature(kernel).parameters)[:2]


class Verdict(NamedTuple):
    """Whether a spelling gets the re-parallelized dot schedule, and what it gets."""
    ok: bool
    reasons: list          # why not, one line each
    strategies: str        # the operands' strategies
    forward_programs: str  # what the forward's programs still do
    parts: str             # the parts at the describe shape's launch
    others: str            # the other gradients' strategies


def _rounded_products(ir: str) -> int:
    """Products whose result is rounded (truncf) before being summed."""
    import re

    dots = re.findall(r"(%[\w#]+) = tt\.dot ", ir)
    return sum(1 for name in dots if re.search(rf"arith\.truncf {re.escape(name)}\b", ir))


def dot_schedule(spelling, dtype="fp16", shape=None) -> Verdict:
    """The re-parallelized dot schedule, as the issue asks for it: dA and dB
    get programs of their own; the forward's programs compute no product (they
    run only where something else needs them: an epilogue's staged values, a
    bias); each part sums its members' products in the accumulator (no product
    rounded to the gradient's type before it is summed); and at the describe
    shape's launch every part takes the affine path and writes each element
    once without atomics."""
    main = derive_schedule(spelling, dtype, shape)
    parts = derive_schedule(spelling, dtype, shape, programs="parts")
    names = operand_names(spelling)
    strategies = {e.subject: e.strategy for e in main.schedule.entries if e.kind == "shadow"}
    reasons = [f"{name}: {strategies.get(name)}" for name in names
               if strategies.get(name) != "re-parallelized"]
    main_products = main.derived_ir.count("tt.dot ")
    if main_products:
        reasons.append(f"the forward's programs still compute {main_products} product(s)")
    rounded = _rounded_products(parts.derived_ir)
    if rounded:
        reasons.append(f"{rounded} product(s) rounded to the gradient's type before summing")
    table = main.table or {"main": None, "parts": []}
    for part in table["parts"]:
        if not part["plain"]:
            reasons.append(f"{part['shadow']}: atomic adds at this launch (each element "
                           f"written once is not proven)")
        if not part["affine"]:
            reasons.append(f"{part['shadow']}: members' ids read from the table")
    forward = "not launched" if not table["main"] else \
        f"{table['main']} launched" + (f", {main_products} product(s)" if main_products else
                                       ", no product")
    described_parts = ", ".join(
        f"{p['shadow']}: {p['programs']} programs, "
        f"{'affine' if p['affine'] else 'member list'}, {'plain' if p['plain'] else 'atomic'}"
        for p in table["parts"]) or "none"
    others = ", ".join(f"{name}: {strategy}" for name, strategy in strategies.items()
                       if name not in names and strategy not in ("output", "no-gradient"))
    return Verdict(not reasons, reasons,
                   ", ".join(f"{name}: {strategies.get(name)}" for name in names),
                   forward, described_parts, others or "-")
