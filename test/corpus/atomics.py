"""Kernels that write their outputs with atomics: an atomic max (refused: its
gradient is not defined by tritonad), a scatter-add with repeated indices, a
split-K matmul.
"""

import triton
import triton.language as tl


@triton.jit
def atomic_max_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_max(out_ptr, tl.max(x * x, axis=0))


@triton.jit
def scatter_add_kernel(x_ptr, w_ptr, idx_ptr, out_ptr, n, D: tl.constexpr,
                       BLOCK: tl.constexpr):
    # out[idx[i], :] += w[i] * x[i, :] (an embedding bag's sum; indices repeat)
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.arange(0, D)
    mask = (rows < n)[:, None]
    x = tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=mask, other=0.0)
    w = tl.load(w_ptr + rows, mask=rows < n, other=0.0).to(tl.float32)
    target = tl.load(idx_ptr + rows, mask=rows < n, other=0)
    added = x.to(tl.float32) * tl.sigmoid(w)[:, None]
    tl.atomic_add(out_ptr + target[:, None] * D + cols[None, :],
                  added.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def split_k_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, K_PER_SPLIT, BM: tl.constexpr,
                          BN: tl.constexpr, BK: tl.constexpr):
    # c += a[:, ks] @ b[ks, :] for this program's share ks of K (split-K;
    # K_PER_SPLIT a multiple of BK)
    pid_m, pid_n, split = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], tl.float32)
    for k in range(split * K_PER_SPLIT, tl.minimum((split + 1) * K_PER_SPLIT, K), BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :],
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :],
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.atomic_add(c_ptr + rm[:, None] * N + rn[None, :], acc,
                  mask=(rm[:, None] < M) & (rn[None, :] < N))
