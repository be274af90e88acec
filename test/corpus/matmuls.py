"""Matmuls whose dA/dB are re-parallelized: epilogues (a scaled, biased batched matmul;
a gated one), and the helpers that launch corpus.kernels.matmul_kernel (fp16 types,
grid, arguments, a half-precision tolerance, gradients added into given shadows).
"""

import torch
import triton
import triton.language as tl

import tritonad
from corpus.kernels import matmul_kernel
from interpreter_util import jit_from_source


MATMUL_TYPES = dict(a_ptr="*fp16", b_ptr="*fp16", c_ptr="*fp16", M="i32", N="i32", K="i32",
                    stride_am="i32", stride_ak="i32", stride_bk="i32", stride_bn="i32",
                    stride_cm="i32", stride_cn="i32")

_BIASED = []


def biased_matmul_kernel():
    """The corpus's batched matmul with a scaled, biased epilogue (c = 0.5 * a @ b
    + bias[n]): dC * 0.5 feeds the re-parallelized dA/dB; the bias's gradient
    (a column sum every row of programs and every batch adds to) gets a part of
    its own, grouped by the column of tiles alone."""
    import inspect

    if not _BIASED:
        from corpus.kernels import batched_matmul_kernel

        source = inspect.getsource(batched_matmul_kernel.fn).replace("@triton.jit\n", "")
        source = source.replace("def batched_matmul_kernel(a_ptr, b_ptr, c_ptr,",
                                "def biased_matmul_kernel(a_ptr, b_ptr, bias_ptr, c_ptr,")
        source = source.replace("tl.store(c_ptrs, acc.to(", "tl.store(c_ptrs, (acc * 0.5 + tl.load("
                                "bias_ptr + offs_n, mask=offs_n < N, other=0.0)[None, :]).to(")
        _BIASED.append(jit_from_source(source, "biased_matmul_kernel", {"tl": tl, "triton": triton}))
    return _BIASED[0]


@triton.jit
def gated_matmul_kernel(a_ptr, b_ptr, g_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                         stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, EXP: tl.constexpr):
    # c = (a @ b) * gate, the gate g or exp(g): dC * gate, computed before the
    # loop, feeds both products (the exp, or the two tiles, are staged)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        ks = k * BLOCK_K + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + ks[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=(ks[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    gate = tl.load(g_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, mask=mask,
                   other=0.0)
    if EXP:
        gate = tl.exp(gate)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc * gate,
             mask=mask)


def matmul_grid(M, N, tiles):
    """The grid of corpus.kernels.matmul_kernel (grouped tiles, one axis)."""
    return (triton.cdiv(M, tiles["BLOCK_M"]) * triton.cdiv(N, tiles["BLOCK_N"]),)


def matmul_args(a, b, c):
    """matmul_kernel's runtime arguments for c = a @ b."""
    return [a, b, c, a.shape[0], b.shape[1], a.shape[1], a.stride(0), a.stride(1), b.stride(0),
            b.stride(1), c.stride(0), c.stride(1)]


def assert_close_half(got, ref):
    """fp16/bf16 results of fp32 sums: within one rounding of the largest magnitude."""
    scale = ref.abs().max().item()
    tol = (1e-2 if got.dtype == torch.bfloat16 else 2e-3) * scale
    assert (got.double() - ref.double()).abs().max().item() <= tol


def grads_into_shadows(a, b, dc, tiles, ref_a, ref_b):
    """tritonad.grad(matmul_kernel), adding into given shadows (read-add-writes),
    checked against the references; the backward."""
    M, N = a.shape[0], b.shape[1]
    bwd = tritonad.grad(matmul_kernel)
    da, db = torch.full_like(a, 0.5), torch.zeros_like(b)
    c = torch.empty(M, N, device=a.device, dtype=a.dtype)
    bwd[matmul_grid(M, N, tiles)](*matmul_args(a, b, c), da, db, dc, **tiles)
    assert_close_half(da - 0.5, ref_a)
    assert_close_half(db, ref_b)
    return bwd
