"""Backward kernels derived by tritonad, measured against hand-written ones.

For three workloads (GELU, softmax, layer norm) this script

  1. defines the forward Triton kernel,
  2. derives its backward with ``tritonad.grad(forward)``,
  3. defines a hand-written Triton backward kernel (the baseline), and
  4. uses torch eager autograd (``torch.autograd.grad`` on the torch reference,
     graph kept with ``retain_graph=True``; only the backward is timed),

checks that the gradients agree, then times the three backward versions with
``triton.testing.do_bench`` (median of the repetitions) and prints a markdown
table.

    python3 benchmarks/bench.py                  # GPU: check, time, print the table
    python3 benchmarks/bench.py --out FILE       # ... and write the table to FILE
    python3 benchmarks/bench.py --compile-only   # any machine: compile every kernel for sm_90

The derived backward ADDS into its (zero-initialized) shadow buffers. The
column "tritonad ms" times the backward kernel alone; "tritonad+zero ms" adds
the ``zero_()`` of the shadows it accumulates into, which a caller has to pay.

The forward kernels load in the storage dtype, compute in fp32 and store in the
output's dtype; the hand-written backward kernels do the same (fp32 partial
buffers). This script runs them in fp32 only; benchmarks/user_level.py also runs
them in bf16, with SwiGLU and RMSNorm (whose kernels are defined here too).

Effective bandwidth counts the bytes a backward must move at the least (fp32):
  GELU       read x, dy; write dx                          -> 3 * N * 4
  softmax    read y (or x), dy; write dx                   -> 3 * M * N * 4
  layer norm read x, dy, w; write dx, dw, db               -> (3 * M * N + 3 * N) * 4
             (the 2 * M floats of mean / rstd are left out)
"""

from __future__ import annotations

import argparse
import functools
import sys
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import torch
import triton
import triton.language as tl

import tritonad

DEVICE = "cuda"


def num_warps_for(block: int) -> int:
    """Warps for a kernel that holds one block of `block` fp32 values per program."""
    return max(4, min(16, block // 256))


# ---------------------------------------------------------------------------
# GELU (exact, erf form): y = x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2)))
# ---------------------------------------------------------------------------

@triton.jit
def gelu_fwd(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def gelu_bwd_hand(x_ptr, dy_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    # dy/dx = Phi(x) + x * phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    cdf = 0.5 * (1.0 + tl.erf(x * 0.7071067811865476))
    pdf = tl.exp(-0.5 * x * x) * 0.3989422804014327
    tl.store(dx_ptr + offs, (dy * (cdf + x * pdf)).to(dx_ptr.dtype.element_ty), mask=mask)


# ---------------------------------------------------------------------------
# Softmax over the rows of an (M, N) matrix, one program per row
# ---------------------------------------------------------------------------

@triton.jit
def softmax_fwd(y_ptr, x_ptr, x_stride, y_stride, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * y_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_bwd_hand(dx_ptr, y_ptr, dy_ptr, stride, n_cols, BLOCK_N: tl.constexpr):
    # dx = y * (dy - sum(dy * y))
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    y = tl.load(y_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    dot = tl.sum(dy * y, axis=0)
    tl.store(dx_ptr + row * stride + cols, (y * (dy - dot)).to(dx_ptr.dtype.element_ty),
             mask=mask)


# ---------------------------------------------------------------------------
# Layer norm over the rows of an (M, N) matrix with weight and bias
# ---------------------------------------------------------------------------

@triton.jit
def layernorm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B + cols, mask=mask, other=0.0).to(tl.float32)
    y = xc * rstd * w + b
    tl.store(Y + row * stride + cols, y.to(Y.dtype.element_ty), mask=mask)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)


@triton.jit
def layernorm_bwd_hand_dx(X, DY, DX, W, Mean, Rstd, PDW, PDB, stride, M, N, n_groups,
                          BLOCK_N: tl.constexpr):
    # Program g handles rows g, g + n_groups, g + 2 n_groups, ...: it writes dx of
    # each row and keeps the row sums of dw and db in registers, stored at the end
    # as row g of the (n_groups, N) partial buffers. No atomics. fp32 math and fp32
    # partial buffers whatever the storage dtype; dx is stored in DX's dtype.
    g = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    dw_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    db_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for row in range(g, M, n_groups):
        x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(DY + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(Mean + row)
        rstd = tl.load(Rstd + row)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        wdy = w * dy
        c1 = tl.sum(xhat * wdy, axis=0) / N
        c2 = tl.sum(wdy, axis=0) / N
        dx = (wdy - (xhat * c1 + c2)) * rstd
        tl.store(DX + row * stride + cols, dx.to(DX.dtype.element_ty), mask=mask)
        dw_acc += dy * xhat
        db_acc += dy
    tl.store(PDW + g * N + cols, dw_acc, mask=mask)
    tl.store(PDB + g * N + cols, db_acc, mask=mask)


@triton.jit
def layernorm_bwd_hand_dwdb(PDW, PDB, DW, DB, n_groups, N,
                            BLOCK_G: tl.constexpr, BLOCK_C: tl.constexpr):
    # Sums the (n_groups, N) partial buffers over their rows, BLOCK_C columns per program.
    pid = tl.program_id(0)
    cols = pid * BLOCK_C + tl.arange(0, BLOCK_C)
    dw = tl.zeros([BLOCK_G, BLOCK_C], dtype=tl.float32)
    db = tl.zeros([BLOCK_G, BLOCK_C], dtype=tl.float32)
    for g0 in range(0, n_groups, BLOCK_G):
        rows = g0 + tl.arange(0, BLOCK_G)
        mask = (rows[:, None] < n_groups) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(PDW + offs, mask=mask, other=0.0)
        db += tl.load(PDB + offs, mask=mask, other=0.0)
    tl.store(DW + cols, tl.sum(dw, axis=0).to(DW.dtype.element_ty), mask=cols < N)
    tl.store(DB + cols, tl.sum(db, axis=0).to(DB.dtype.element_ty), mask=cols < N)


LN_EPS = 1e-5
LN_BLOCK_G, LN_BLOCK_C = 32, 128


# ---------------------------------------------------------------------------
# SwiGLU: y = silu(a) * b = a * sigmoid(a) * b, elementwise over two inputs
# ---------------------------------------------------------------------------

@triton.jit
def swiglu_fwd(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = a * tl.sigmoid(a) * b
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def swiglu_bwd_hand(a_ptr, b_ptr, dy_ptr, da_ptr, db_ptr, n, BLOCK: tl.constexpr):
    # s = sigmoid(a): d silu(a)/da = s * (1 + a * (1 - s)); da = dy * b * that,
    # db = dy * silu(a). fp32 math, stored in the gradients' dtype.
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    s = tl.sigmoid(a)
    silu = a * s
    da = dy * b * (s * (1.0 + a * (1.0 - s)))
    db = dy * silu
    tl.store(da_ptr + offs, da.to(da_ptr.dtype.element_ty), mask=mask)
    tl.store(db_ptr + offs, db.to(db_ptr.dtype.element_ty), mask=mask)


# ---------------------------------------------------------------------------
# RMSNorm over the rows of an (M, N) matrix with weight: y = x * rstd * w,
# rstd = 1 / sqrt(mean(x^2) + eps)
# ---------------------------------------------------------------------------

@triton.jit
def rmsnorm_fwd(X, Y, W, Rstd, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * rstd * w
    tl.store(Y + row * stride + cols, y.to(Y.dtype.element_ty), mask=mask)
    tl.store(Rstd + row, rstd)


@triton.jit
def rmsnorm_bwd_hand_dx(X, DY, DX, W, Rstd, PDW, stride, M, N, n_groups,
                        BLOCK_N: tl.constexpr):
    # As layernorm_bwd_hand_dx: program g handles rows g, g + n_groups, ...; it
    # writes dx of each row, dx = rstd * (w dy - xhat * mean(xhat * w dy)), and
    # stores the sum of dy * xhat over its rows as row g of the (n_groups, N) fp32
    # partial buffer PDW. No atomics.
    g = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    dw_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for row in range(g, M, n_groups):
        x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(DY + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(Rstd + row)
        xhat = x * rstd
        wdy = w * dy
        c1 = tl.sum(xhat * wdy, axis=0) / N
        dx = (wdy - xhat * c1) * rstd
        tl.store(DX + row * stride + cols, dx.to(DX.dtype.element_ty), mask=mask)
        dw_acc += dy * xhat
    tl.store(PDW + g * N + cols, dw_acc, mask=mask)


@triton.jit
def rmsnorm_bwd_hand_dw(PDW, DW, n_groups, N, BLOCK_G: tl.constexpr, BLOCK_C: tl.constexpr):
    # Sums the (n_groups, N) fp32 partial buffer over its rows, BLOCK_C columns per
    # program; stored in DW's dtype.
    pid = tl.program_id(0)
    cols = pid * BLOCK_C + tl.arange(0, BLOCK_C)
    dw = tl.zeros([BLOCK_G, BLOCK_C], dtype=tl.float32)
    for g0 in range(0, n_groups, BLOCK_G):
        rows = g0 + tl.arange(0, BLOCK_G)
        mask = (rows[:, None] < n_groups) & (cols[None, :] < N)
        dw += tl.load(PDW + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
    tl.store(DW + cols, tl.sum(dw, axis=0).to(DW.dtype.element_ty), mask=cols < N)


@triton.jit
def matmul_fwd(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
               stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Tutorial style: grouped program order, pointers advanced by += in the K loop,
    # fp16 in, fp32 accumulate, fp16 out.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pids_per_group = GROUP_M * num_pid_n
    first_m = (pid // pids_per_group) * GROUP_M
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
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def matmul_act_fwd(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                   stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr):
    # matmul_fwd with an activation epilogue, as a fused linear layer computes
    # it (ACTIVATION as Triton's matmul tutorial spells it): c = gelu(a @ b)
    # (erf form) or leaky_relu(a @ b).
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pids_per_group = GROUP_M * num_pid_n
    first_m = (pid // pids_per_group) * GROUP_M
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
    if ACTIVATION == "gelu":
        y = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
    else:
        y = tl.where(acc >= 0, acc, 0.01 * acc)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, y.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


MM_BLOCKS = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8)


def matmul_launch(a, b, c):
    """c = a @ b with matmul_fwd (any strides: the hand-written backward passes
    transposed views)."""
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, MM_BLOCKS["BLOCK_M"]) * triton.cdiv(N, MM_BLOCKS["BLOCK_N"]),)
    matmul_fwd[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                     c.stride(0), c.stride(1), **MM_BLOCKS, num_warps=4)


# ---------------------------------------------------------------------------
# The derived backward kernels
# ---------------------------------------------------------------------------

gelu_bwd_ad = tritonad.grad(gelu_fwd)
softmax_bwd_ad = tritonad.grad(softmax_fwd)
layernorm_bwd_ad = tritonad.grad(layernorm_fwd)
matmul_bwd_ad = tritonad.grad(matmul_fwd)


def schedule_lines(schedule: Optional[str]) -> List[str]:
    """The lines of a bwd.schedule() report, one per pointer, sorted by pointer name."""
    return sorted((schedule or "(none reported)").splitlines())


def launch_derived(bwd, grid, values: Dict[str, object], constexprs: Dict[str, object],
                   num_warps: int):
    """bwd[grid](*forward args, *shadows, **constexprs), arguments taken by name in the
    order bwd.launch_signature gives; a shadow missing from `values` is passed as None."""
    args = [values.get(name) for name in bwd.launch_signature if name not in constexprs]
    bwd[grid](*args, **constexprs, num_warps=num_warps)


def row_block(n: int) -> tuple:
    """(BLOCK_N, num_warps) for a kernel that holds a whole row of n values per program."""
    block = triton.next_power_of_2(n)
    return block, num_warps_for(block)


# ---------------------------------------------------------------------------
# Workloads: data, the four ways to compute the gradient, bytes, checks
# ---------------------------------------------------------------------------

@dataclass
class Case:
    workload: str
    size: str
    nbytes: int                             # bytes a backward must move, at the least
    derived: Callable[[], None]             # tritonad backward, kernel only
    zero_shadows: Callable[[], None]        # zero the shadows it accumulates into
    hand: Callable[[], None]                # hand-written Triton backward
    torch_bwd: Callable[[], None]           # torch eager backward
    # name -> (tritonad result, hand-written result, torch result), read after running
    # zero_shadows + derived, hand and torch_bwd once
    outputs: Callable[[], Dict[str, tuple]]
    forward_check: Callable[[], tuple]      # (triton forward output, torch forward output)
    schedule: Callable[[], Optional[str]]
    tol: Dict[str, tuple] = field(default_factory=dict)  # name -> (rtol, atol relative to max|ref|)


def gelu_case(n: int) -> Case:
    BLOCK = 1024
    nw = 4
    x = torch.randn(n, device=DEVICE)
    y = torch.empty_like(x)
    grid = (triton.cdiv(n, BLOCK),)
    gelu_fwd[grid](x, y, n, BLOCK=BLOCK, num_warps=nw)
    dy = torch.randn_like(x)
    dx_ad, dx_hand = torch.zeros_like(x), torch.empty_like(x)

    xt = x.clone().requires_grad_()
    yt = torch.nn.functional.gelu(xt)
    grads = {}

    def torch_bwd():
        grads["dx"], = torch.autograd.grad(yt, (xt,), dy, retain_graph=True)

    return Case(
        workload="GELU", size=f"{n >> 20}M" if n % 2**20 == 0 else str(n), nbytes=3 * n * 4,
        derived=lambda: launch_derived(gelu_bwd_ad, grid, dict(
            x_ptr=x, y_ptr=y, n=n, dx_ptr=dx_ad, dy_ptr=dy), dict(BLOCK=BLOCK), nw),
        zero_shadows=lambda: dx_ad.zero_(),
        hand=lambda: gelu_bwd_hand[grid](x, dy, dx_hand, n, BLOCK=BLOCK, num_warps=nw),
        torch_bwd=torch_bwd,
        outputs=lambda: {"dx": (dx_ad, dx_hand, grads["dx"])},
        forward_check=lambda: (y, yt.detach()),
        schedule=gelu_bwd_ad.schedule,
        tol={"dx": (1e-5, 1e-6)},
    )


def softmax_case(m: int, n: int) -> Case:
    BLOCK_N, nw = row_block(n)
    x = torch.randn(m, n, device=DEVICE)
    y = torch.empty_like(x)
    grid = (m,)
    softmax_fwd[grid](y, x, x.stride(0), y.stride(0), n, BLOCK_N=BLOCK_N, num_warps=nw)
    dy = torch.randn_like(x)
    dx_ad, dx_hand = torch.zeros_like(x), torch.empty_like(x)

    xt = x.clone().requires_grad_()
    yt = torch.softmax(xt, dim=-1)
    grads = {}

    def torch_bwd():
        grads["dx"], = torch.autograd.grad(yt, (xt,), dy, retain_graph=True)

    return Case(
        workload="softmax", size=f"{m}x{n}", nbytes=3 * m * n * 4,
        derived=lambda: launch_derived(softmax_bwd_ad, grid, dict(
            y_ptr=y, x_ptr=x, x_stride=x.stride(0), y_stride=y.stride(0), n_cols=n,
            dy_ptr=dy, dx_ptr=dx_ad), dict(BLOCK_N=BLOCK_N), nw),
        zero_shadows=lambda: dx_ad.zero_(),
        hand=lambda: softmax_bwd_hand[grid](dx_hand, y, dy, x.stride(0), n, BLOCK_N=BLOCK_N,
                                            num_warps=nw),
        torch_bwd=torch_bwd,
        outputs=lambda: {"dx": (dx_ad, dx_hand, grads["dx"])},
        forward_check=lambda: (y, yt.detach()),
        schedule=softmax_bwd_ad.schedule,
        tol={"dx": (1e-4, 1e-5)},
    )


def layernorm_case(m: int, n: int) -> Case:
    BLOCK_N, nw = row_block(n)
    x = torch.randn(m, n, device=DEVICE)
    w = 1.0 + 0.1 * torch.randn(n, device=DEVICE)
    b = 0.1 * torch.randn(n, device=DEVICE)
    y = torch.empty_like(x)
    mean = torch.empty(m, device=DEVICE)
    rstd = torch.empty(m, device=DEVICE)
    grid = (m,)
    layernorm_fwd[grid](x, y, w, b, mean, rstd, x.stride(0), n, LN_EPS, BLOCK_N=BLOCK_N,
                        num_warps=nw)
    dy = torch.randn_like(x)
    dx_ad, dw_ad, db_ad = torch.zeros_like(x), torch.zeros_like(w), torch.zeros_like(b)

    # Hand-written: a partial-sum buffer of n_groups rows (two programs per SM).
    sms = torch.cuda.get_device_properties(0).multi_processor_count if DEVICE == "cuda" else 4
    n_groups = min(m, 2 * sms)
    pdw = torch.empty(n_groups, n, device=DEVICE)
    pdb = torch.empty(n_groups, n, device=DEVICE)
    dx_hand, dw_hand, db_hand = torch.empty_like(x), torch.empty_like(w), torch.empty_like(b)

    def hand():
        layernorm_bwd_hand_dx[(n_groups,)](x, dy, dx_hand, w, mean, rstd, pdw, pdb,
                                           x.stride(0), m, n, n_groups, BLOCK_N=BLOCK_N,
                                           num_warps=nw)
        layernorm_bwd_hand_dwdb[(triton.cdiv(n, LN_BLOCK_C),)](
            pdw, pdb, dw_hand, db_hand, n_groups, n, BLOCK_G=LN_BLOCK_G, BLOCK_C=LN_BLOCK_C)

    def zero_shadows():
        dx_ad.zero_()
        dw_ad.zero_()
        db_ad.zero_()

    xt, wt, bt = (t.clone().requires_grad_() for t in (x, w, b))
    yt = torch.nn.functional.layer_norm(xt, (n,), wt, bt, LN_EPS)
    grads = {}

    def torch_bwd():
        grads["dx"], grads["dw"], grads["db"] = torch.autograd.grad(
            yt, (xt, wt, bt), dy, retain_graph=True)

    return Case(
        workload="layer norm", size=f"{m}x{n}", nbytes=(3 * m * n + 3 * n) * 4,
        # Only dY flows back: dMean and dRstd are None (no upstream gradient).
        derived=lambda: launch_derived(layernorm_bwd_ad, grid, dict(
            X=x, Y=y, W=w, B=b, Mean=mean, Rstd=rstd, stride=x.stride(0), N=n, eps=LN_EPS,
            dX=dx_ad, dY=dy, dW=dw_ad, dB=db_ad), dict(BLOCK_N=BLOCK_N), nw),
        zero_shadows=zero_shadows,
        hand=hand,
        torch_bwd=torch_bwd,
        outputs=lambda: {"dx": (dx_ad, dx_hand, grads["dx"]),
                         "dw": (dw_ad, dw_hand, grads["dw"]),
                         "db": (db_ad, db_hand, grads["db"])},
        forward_check=lambda: (y, yt.detach()),
        schedule=layernorm_bwd_ad.schedule,
        # dw and db are sums over m rows, in a different order each way (and, with
        # atomics, in a different order each run).
        tol={"dx": (1e-4, 1e-5), "dw": (1e-4, 1e-5), "db": (1e-4, 1e-5)},
    )


def matmul_case(m: int, n: int, k: int) -> Case:
    a = torch.randn(m, k, device=DEVICE, dtype=torch.float16)
    b = torch.randn(k, n, device=DEVICE, dtype=torch.float16)
    c = torch.empty(m, n, device=DEVICE, dtype=torch.float16)
    matmul_launch(a, b, c)
    dc = torch.randn_like(c)
    da_ad, db_ad = torch.zeros_like(a), torch.zeros_like(b)
    da_hand, db_hand = torch.empty_like(a), torch.empty_like(b)
    grid = (triton.cdiv(m, MM_BLOCKS["BLOCK_M"]) * triton.cdiv(n, MM_BLOCKS["BLOCK_N"]),)

    def hand():  # the usual hand-written backward: the forward kernel on transposed views
        matmul_launch(dc, b.t(), da_hand)
        matmul_launch(a.t(), dc, db_hand)

    def zero_shadows():
        da_ad.zero_()
        db_ad.zero_()

    at, bt = a.clone().requires_grad_(), b.clone().requires_grad_()
    ct = at @ bt
    grads = {}

    def torch_bwd():
        grads["da"], grads["db"] = torch.autograd.grad(ct, (at, bt), dc, retain_graph=True)

    return Case(
        workload="matmul fp16", size=f"{m}x{n}x{k}",
        nbytes=2 * (2 * m * k + 2 * k * n + m * n),
        derived=lambda: launch_derived(matmul_bwd_ad, grid, dict(
            a_ptr=a, b_ptr=b, c_ptr=c, M=m, N=n, K=k, stride_am=a.stride(0),
            stride_ak=a.stride(1), stride_bk=b.stride(0), stride_bn=b.stride(1),
            stride_cm=c.stride(0), stride_cn=c.stride(1), da_ptr=da_ad, db_ptr=db_ad,
            dc_ptr=dc), MM_BLOCKS, 4),
        zero_shadows=zero_shadows,
        hand=hand,
        torch_bwd=torch_bwd,
        outputs=lambda: {"da": (da_ad, da_hand, grads["da"]),
                         "db": (db_ad, db_hand, grads["db"])},
        forward_check=lambda: (c.float(), ct.detach().float()),
        schedule=matmul_bwd_ad.schedule,
        # fp16 results; tritonad adds fp16 partial products of n/BLOCK_N (dA) or
        # m/BLOCK_M (dB) programs with atomics, each rounded to fp16.
        tol={"da": (1e-2, 1e-2), "db": (1e-2, 1e-2)},
    )


SIZES = [
    ("GELU", gelu_case, [(2**22,), (2**24,), (2**26,)]),
    ("softmax", softmax_case, [(4096, 1024), (4096, 4096), (8192, 8192)]),
    ("layer norm", layernorm_case, [(4096, 1024), (4096, 4096), (8192, 8192)]),
    ("matmul", matmul_case, [(1024, 1024, 1024), (2048, 2048, 2048)]),
]


# ---------------------------------------------------------------------------
# Checking and timing
# ---------------------------------------------------------------------------

def close(got: torch.Tensor, want: torch.Tensor, rtol: float, atol_rel: float):
    """allclose with an absolute tolerance relative to the largest reference value;
    returns (ok, max abs error, max |want|)."""
    scale = want.abs().max().item()
    err = (got - want).abs().max().item()
    ok = bool(torch.allclose(got, want, rtol=rtol, atol=atol_rel * scale + 1e-30))
    return ok, err, scale


def check(case: Case) -> tuple:
    """Runs every backward once and compares; prints one line per comparison.

    Returns (gradients agree, tritonad bitwise reproducible or None when the derived
    backward did not run). The derived backward is run twice from zeroed shadows:
    results that differ bit for bit between the two runs come from atomic adds."""
    ok = True
    got, want = case.forward_check()
    good, err, scale = close(got, want, *((1e-2, 1e-2) if got.dtype == torch.float32 and
                                          case.workload.startswith("matmul") else (1e-5, 1e-6)))
    ok &= good
    print(f"  forward vs torch: max abs err {err:.2e} (max |ref| {scale:.2e}) "
          f"{'ok' if good else 'MISMATCH'}")
    case.hand()
    case.torch_bwd()
    first = None
    try:
        case.zero_shadows()
        case.derived()
        first = {name: ad.clone() for name, (ad, _, _) in case.outputs().items()}
        case.zero_shadows()
        case.derived()
    finally:
        if DEVICE == "cuda":
            torch.cuda.synchronize()
    deterministic = True
    for name, (ad, hand, ref) in case.outputs().items():
        rtol, atol_rel = case.tol[name]
        for other, label in ((hand, "hand-written"), (ref, "torch")):
            good, err, scale = close(ad, other, rtol, atol_rel)
            ok &= good
            print(f"  {name}: tritonad vs {label}: max abs err {err:.2e} (max |ref| "
                  f"{scale:.2e}, rtol {rtol:g}, atol {atol_rel:g}*max|ref|) "
                  f"{'ok' if good else 'MISMATCH'}")
        good, err, scale = close(hand, ref, rtol, atol_rel)
        ok &= good
        print(f"  {name}: hand-written vs torch: max abs err {err:.2e} "
              f"{'ok' if good else 'MISMATCH'}")
        same = torch.equal(first[name], ad)
        deterministic &= same
        print(f"  {name}: tritonad run-to-run: "
              f"{'bitwise identical' if same else 'DIFFERS (atomic accumulation)'}")
    return ok, deterministic


def bench_ms(fn) -> float:
    return triton.testing.do_bench(fn, return_mode="median")


def fmt(v: Optional[float], spec: str = ".3f") -> str:
    return "n/a" if v is None else format(v, spec)


def _zero_then_derived(case: Case) -> None:
    case.zero_shadows()
    case.derived()


def measure(sizes=None) -> tuple:
    """Checks, then times, every (workload, size) of `sizes` (default SIZES): (rows,
    failures). A row is a dict: workload, size, ok, and per backward (t_ad: the derived
    kernel alone, t_ad_zero: with the zero fill of its shadows, t_hand, t_torch) the
    median do_bench time in ms, and gpu_us: {"tritonad" (with the fill), "hand", "eager":
    torch-profiler GPU us per call}; times of a backward that did not run are None, and
    `error` says why. Used by main and benchmarks/results.py."""
    import user_level  # (its profiler timing; user_level imports this module)

    torch.manual_seed(0)
    failures: List[str] = []
    rows = []
    for workload, make, case_sizes in sizes or SIZES:
        for size in case_sizes:
            label = f"{workload} {'x'.join(map(str, size))}"
            print(f"\n== {label}")
            case, error = None, None
            try:
                case = make(*size)
                ok, deterministic = check(case)
            except Exception as exc:  # e.g. a kernel tritonad cannot differentiate yet
                error = f"{type(exc).__name__}: {exc}"
                print(f"  FAILED: {error}")
                failures.append(f"{label}: {type(exc).__name__}")
                if case is None:
                    rows.append(dict(workload=workload, size="x".join(map(str, size)),
                                     ok=False, error=error))
                    continue
                ok, deterministic = False, None
            print("  schedule (tritonad.grad):")
            for line in schedule_lines(case.schedule()):
                print(f"    {line}")
            if ok is False and deterministic is not None:
                failures.append(f"{label}: gradient mismatch")
                error = "gradients disagree with torch (timed anyway)"
                print("  CHECK FAILED: gradients disagree (timings still reported)")
            t_ad = t_ad_zero = None
            with_fill = functools.partial(_zero_then_derived, case)
            gpu_us = {}
            if deterministic is not None:
                t_ad = bench_ms(case.derived)
                t_ad_zero = bench_ms(with_fill)
                gpu_us["tritonad"] = user_level.gpu_time_us(with_fill)[0]
            t_hand = bench_ms(case.hand)
            t_torch = bench_ms(case.torch_bwd)
            gpu_us["hand"] = user_level.gpu_time_us(case.hand)[0]
            gpu_us["eager"] = user_level.gpu_time_us(case.torch_bwd)[0]
            rows.append(dict(
                workload=case.workload, size=case.size, ok=ok, error=error,
                t_ad=t_ad, t_ad_zero=t_ad_zero, t_hand=t_hand, t_torch=t_torch, gpu_us=gpu_us,
                gbs=None if t_ad is None else case.nbytes / (t_ad * 1e-3) / 1e9,
                gbs_hand=case.nbytes / (t_hand * 1e-3) / 1e9,
                r_hand=None if t_ad is None else t_ad / t_hand,
                r_torch=None if t_ad is None else t_ad / t_torch,
                det={None: "n/a", True: "yes", False: "no (atomics)"}[deterministic]))
            print(f"  tritonad {fmt(t_ad)} ms ({fmt(rows[-1]['gbs'], '.0f')} GB/s), "
                  f"+zero {fmt(t_ad_zero)} ms, hand-written {t_hand:.3f} ms, "
                  f"torch {t_torch:.3f} ms")
            del case
            if DEVICE == "cuda":
                torch.cuda.empty_cache()
    return rows, failures


def run_benchmarks(out_path: Optional[str]) -> int:
    rows, failures = measure()
    rows = [r for r in rows if "t_hand" in r]
    header = ("| workload | size | tritonad ms | hand-written ms | torch ms | tritonad GB/s "
              "| tritonad / hand-written | tritonad / torch | tritonad+zero ms "
              "| hand-written GB/s | tritonad bitwise reproducible |")
    lines = [
        f"Backward kernels on {torch.cuda.get_device_name(0)} (triton {triton.__version__}, "
        f"torch {torch.__version__}; fp32, matmul fp16 with fp32 accumulation). Times: median of triton.testing.do_bench.",
        "torch = eager torch.autograd.grad on the torch reference (F.gelu, torch.softmax, "
        "F.layer_norm) with retain_graph=True; only the backward is timed.",
        "Ratios are times: above 1 means tritonad is slower. tritonad ms is the derived "
        "kernel alone; tritonad+zero ms adds zeroing the shadows it accumulates into.",
        "GB/s: minimum bytes moved / time (GELU 3*N*4, softmax 3*M*N*4, "
        "layer norm (3*M*N + 3*N)*4, matmul fp16 2*(2MK + 2KN + MN)). Reproducible: two runs of the derived backward give "
        "bit-identical gradients (atomic float adds usually do not).",
        "",
        header,
        "|" + "---|" * header.count(" | ") + "---|",
    ]
    for r in rows:
        lines.append(f"| {r['workload']} | {r['size']}{'' if r['ok'] else ' (FAILED)'} | "
                     f"{fmt(r['t_ad'])} | {r['t_hand']:.3f} | "
                     f"{r['t_torch']:.3f} | {fmt(r['gbs'], '.0f')} | {fmt(r['r_hand'], '.2f')} | "
                     f"{fmt(r['r_torch'], '.2f')} | {fmt(r['t_ad_zero'])} | "
                     f"{r['gbs_hand']:.0f} | {r['det']} |")
    schedules = [("gelu_fwd", gelu_bwd_ad), ("softmax_fwd", softmax_bwd_ad),
                 ("layernorm_fwd", layernorm_bwd_ad), ("matmul_fwd", matmul_bwd_ad)]
    lines += ["", "Schedules chosen by tritonad (last compile):", ""]
    for name, bwd in schedules:
        lines.append(f"- {name}: " + "; ".join(schedule_lines(bwd.schedule())))
    if failures:
        lines += ["", "FAILED: " + "; ".join(failures)]
    table = "\n".join(lines) + "\n"
    print("\n" + table)
    if out_path:
        with open(out_path, "w") as f:
            f.write(table)
        print(f"written to {out_path}")
    if failures:
        print("CHECKS FAILED:\n  " + "\n  ".join(failures))
        return 1
    return 0


# ---------------------------------------------------------------------------
# --compile-only: every kernel compiled for sm_90 (no GPU needed)
# ---------------------------------------------------------------------------

def attempt(label: str, failed: List[str], action: Callable[[], None]) -> None:
    """Runs action() (a compile); an error is printed and `label` added to `failed`, so
    that the other kernels still compile. Shared with benchmarks/user_level.py."""
    try:
        action()
    except Exception as error:  # noqa: BLE001
        failed.append(label)
        print(f"  {label}: FAILED: {type(error).__name__}: {error}")


def with_none_shadows(constexprs: Dict[str, object], none_shadows) -> Dict[str, object]:
    """A derived backward's constexprs: shadows without an upstream gradient are None."""
    return {**constexprs, **{shadow: None for shadow in none_shadows}}


def compile_exit_code(failed: List[str]) -> int:
    if failed:
        print("FAILED to compile: " + ", ".join(failed))
        return 1
    print("all kernels compiled")
    return 0


def compile_only() -> int:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    target = GPUTarget("cuda", 90, 32)
    P, I, F = "*fp32", "i32", "fp32"
    # (kernel, runtime parameter types, constexprs, num_warps); one entry per size class
    kernels = []
    for block in (1024,):
        kernels.append((gelu_fwd, dict(x_ptr=P, y_ptr=P, n=I), dict(BLOCK=block), 4))
        kernels.append((gelu_bwd_hand, dict(x_ptr=P, dy_ptr=P, dx_ptr=P, n=I),
                        dict(BLOCK=block), 4))
    for block in (1024, 4096, 8192):
        nw = num_warps_for(block)
        kernels.append((softmax_fwd, dict(y_ptr=P, x_ptr=P, x_stride=I, y_stride=I, n_cols=I),
                        dict(BLOCK_N=block), nw))
        kernels.append((softmax_bwd_hand, dict(dx_ptr=P, y_ptr=P, dy_ptr=P, stride=I,
                                               n_cols=I), dict(BLOCK_N=block), nw))
        kernels.append((layernorm_fwd, dict(X=P, Y=P, W=P, B=P, Mean=P, Rstd=P, stride=I,
                                            N=I, eps=F), dict(BLOCK_N=block), nw))
        kernels.append((layernorm_bwd_hand_dx, dict(X=P, DY=P, DX=P, W=P, Mean=P, Rstd=P,
                                                    PDW=P, PDB=P, stride=I, M=I, N=I,
                                                    n_groups=I), dict(BLOCK_N=block), nw))
    kernels.append((layernorm_bwd_hand_dwdb, dict(PDW=P, PDB=P, DW=P, DB=P, n_groups=I, N=I),
                    dict(BLOCK_G=LN_BLOCK_G, BLOCK_C=LN_BLOCK_C), 4))
    # the kernels only benchmarks/user_level.py runs (fp32 and bf16 storage; fp32 Rstd and
    # partial buffers)
    for Q in (P, "*bf16"):
        kernels.append((swiglu_fwd, dict(a_ptr=Q, b_ptr=Q, y_ptr=Q, n=I), dict(BLOCK=1024), 4))
        kernels.append((swiglu_bwd_hand, dict(a_ptr=Q, b_ptr=Q, dy_ptr=Q, da_ptr=Q, db_ptr=Q,
                                              n=I), dict(BLOCK=1024), 4))
        kernels.append((rmsnorm_fwd, dict(X=Q, Y=Q, W=Q, Rstd=P, stride=I, N=I, eps=F),
                        dict(BLOCK_N=4096), num_warps_for(4096)))
        kernels.append((rmsnorm_bwd_hand_dx, dict(X=Q, DY=Q, DX=Q, W=Q, Rstd=P, PDW=P, stride=I,
                                                  M=I, N=I, n_groups=I), dict(BLOCK_N=4096),
                        num_warps_for(4096)))
        kernels.append((rmsnorm_bwd_hand_dw, dict(PDW=P, DW=Q, n_groups=I, N=I),
                        dict(BLOCK_G=LN_BLOCK_G, BLOCK_C=LN_BLOCK_C), 4))
    H = "*fp16"
    kernels.append((matmul_fwd, dict(a_ptr=H, b_ptr=H, c_ptr=H, M=I, N=I, K=I, stride_am=I,
                                     stride_ak=I, stride_bk=I, stride_bn=I, stride_cm=I,
                                     stride_cn=I), dict(MM_BLOCKS), 4))

    derived = {gelu_fwd: (gelu_bwd_ad, set()), softmax_fwd: (softmax_bwd_ad, set()),
               # as launched: no upstream gradient for Mean / Rstd
               layernorm_fwd: (layernorm_bwd_ad, {"dMean", "dRstd"}),
               matmul_fwd: (matmul_bwd_ad, set())}

    def build(fn, types, constexprs, nw, label):
        signature = {name: types.get(name, "constexpr") for name in fn.arg_names}
        compiled = triton.compile(ASTSource(fn, signature, constexprs), target=target,
                                  options={"num_warps": nw})
        print(f"  {label:<44} {str(constexprs):<34} {len(compiled.asm['cubin']):>7} bytes cubin")

    failed = []
    print(f"Compiling for {target} (no launch):")
    for fn, types, constexprs, nw in kernels:
        attempt(fn.__name__, failed, lambda: build(fn, types, constexprs, nw, fn.__name__))
        if fn in derived:
            bwd, none_shadows = derived[fn]
            label = f"tritonad.grad({fn.__name__})"
            bwd_types = dict(types)
            for ptr, shadow in bwd.shadows.items():
                if shadow not in none_shadows:
                    bwd_types[shadow] = types[ptr]

            def build_derived():
                build(bwd, bwd_types, with_none_shadows(constexprs, none_shadows), nw, label)
                print("    schedule: " + "\n              ".join(
                    schedule_lines(bwd.schedule())))
            attempt(label, failed, build_derived)
    return compile_exit_code(failed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--compile-only", action="store_true",
                        help="compile every kernel for sm_90 and print the derived schedules")
    parser.add_argument("--out", help="also write the table here (benchmarks/results.py "
                        "writes the project's results page, RESULTS.md)")
    args = parser.parse_args()
    if args.compile_only:
        return compile_only()
    if not torch.cuda.is_available():
        print("no GPU: benchmarks skipped")
        return 0
    return run_benchmarks(args.out)


if __name__ == "__main__":
    sys.exit(main())
