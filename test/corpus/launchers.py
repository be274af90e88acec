"""Kernels and the Python launchers that call them (the Triton tutorial's matmul with
its autotuned and one-config forms, a linear layer through a transposed view, a
layer norm, chains of elementwise kernels): what ``tritonad.autograd(launcher)``
and torch.compile differentiate (test_launcher.py, test_compile.py).
"""

import torch
import triton
import triton.language as tl



@triton.jit
def scale_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, alpha * tl.load(x_ptr + offs, mask=m), mask=m)


@triton.jit
def mul_kernel(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    w = tl.load(w_ptr + offs, mask=m)
    tl.store(y_ptr + offs, x * w, mask=m)


@triton.heuristics({"BLOCK": lambda args: min(64, triton.next_power_of_2(args["n"]))})
@triton.jit
def mul_heuristic_kernel(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * tl.load(w_ptr + offs, mask=m),
             mask=m)


@triton.jit
def rows_scale_kernel(x_ptr, y_ptr, N, stride_x, stride_y, alpha, BLOCK: tl.constexpr):
    # One row per program: y[row, :N] = alpha * x[row, :N] (rows strided).
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=m)
    tl.store(y_ptr + row * stride_y + cols, alpha * x, mask=m)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, ACC: tl.constexpr, PRECISION: tl.constexpr):
    # The tutorial's shape: grouped program order, pointers advanced along K.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * num_pid_n
    first_m = (pid // in_group) * GROUP_M
    size_m = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % size_m
    pid_n = (pid % in_group) // size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BLOCK_K), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BLOCK_K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=ACC)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


matmul_autotuned = triton.autotune(
    configs=[triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 4},
                           num_warps=4),
             triton.Config({"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 8},
                           num_warps=4)],
    key=["M", "N", "K"])(matmul_kernel)

# One config: Triton runs it without benchmarking (the CPU tests' interpreter
# has no benchmarker).
matmul_one_config = triton.autotune(
    configs=[triton.Config({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2})],
    key=["M", "N", "K"])(matmul_kernel)


@triton.jit
def bias_add_kernel(t_ptr, b_ptr, y_ptr, N, stride_t, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    m = cols < N
    t = tl.load(t_ptr + row * stride_t + cols, mask=m)
    b = tl.load(b_ptr + cols, mask=m)
    tl.store(y_ptr + row * stride_y + cols, t + b, mask=m)


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    m = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    mean = tl.sum(x, axis=0) / N
    d = tl.where(m, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=m, other=0.0)
    b = tl.load(b_ptr + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * stride + cols, d * rstd * w + b, mask=m)


def _dot_options(dtype):
    # fp64 dot needs IEEE products and an fp64 accumulator; fp32 uses tf32 (Triton's
    # default); fp16 / bf16 products are exact in the fp32 accumulator.
    if dtype == torch.float64:
        return dict(ACC=tl.float64, PRECISION="ieee")
    return dict(ACC=tl.float32, PRECISION="tf32" if dtype == torch.float32 else None)


def matmul_into(a, b, c, kernel=matmul_autotuned, **blocks):
    """c = a @ b with the tutorial's launch: a grid of META, strides from the
    tensors (a and b may be views, e.g. w.T)."""
    M, K = a.shape
    N = b.shape[1]

    def grid(META):
        return (triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"]),)

    kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                 c.stride(0), c.stride(1), **_dot_options(a.dtype), **blocks)
    return c


def matmul(a, b, kernel=matmul_autotuned, **blocks):
    """The Triton tutorial's launcher: allocates the output, launches, returns it."""
    c = torch.empty((a.shape[0], b.shape[1]), device=a.device, dtype=a.dtype)
    return matmul_into(a, b, c, kernel, **blocks)


def linear(x, weight, bias, kernel=matmul_autotuned, **blocks):
    """y = x @ weight.T + bias: a matmul on a transposed view, then a bias kernel
    reading the intermediate."""
    M, N = x.shape[0], weight.shape[0]
    t = torch.empty((M, N), device=x.device, dtype=x.dtype)
    matmul_into(x, weight.T, t, kernel, **blocks)
    y = torch.empty_like(t)
    bias_add_kernel[(M, triton.cdiv(N, 32))](t, bias, y, N, t.stride(0), y.stride(0),
                                              BLOCK_N=32)
    return y


def scale_then_mul(x, w, alpha=3.0):
    """y = (alpha * x) * w in two launches through an intermediate; returns the
    size too (a non-tensor result)."""
    n = x.numel()
    h = torch.empty_like(x)
    scale_kernel[(triton.cdiv(n, 32),)](x, h, n, alpha, BLOCK=32)
    y = torch.empty_like(x)
    mul_kernel[lambda META: (triton.cdiv(n, META["BLOCK"]),)](h, w, y, n, BLOCK=32)
    return y, n
