"""Forward kernels as users write them (tutorial style: SwiGLU, fused softmax, layer
norm, RMSNorm, cross-entropy, a row-times-vector "CustomLinear", loops, attention ...),
and ``CASES``: each one's runtime parameter types and constexprs for deriving its
backward on the CPU (compile_util.compile_backward). Kernels without casts, so fp64
works for gradcheck.
"""

import triton
import triton.language as tl

from corpus.kernels import gelu_kernel, matmul_kernel  # (in CASES)


@triton.jit
def swiglu_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    c = a * tl.sigmoid(a) * b
    tl.store(c_ptr + offs, c, mask=mask)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols,
                   BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, y, mask=mask)


@triton.jit
def layer_norm_kernel(X, W, B, Y, Mean, Rstd, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=mask, other=0.0)
    b = tl.load(B + cols, mask=mask, other=0.0)
    y = xc * rstd * w + b
    tl.store(Y + row * stride + cols, y, mask=mask)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)


@triton.jit
def rms_norm_kernel(X, W, Y, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0)
    ms = tl.sum(x * x, axis=0) / N
    rstd = 1.0 / tl.sqrt(ms + eps)
    w = tl.load(W + cols, mask=mask, other=0.0)
    tl.store(Y + row * stride + cols, x * rstd * w, mask=mask)


@triton.jit
def cross_entropy_kernel(logits_ptr, target_ptr, loss_ptr, stride, n_cols,
                         BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(logits_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    target = tl.load(target_ptr + row)
    m = tl.max(x, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(x - m), axis=0))
    x_target = tl.sum(tl.where(cols == target, x, 0.0), axis=0)
    tl.store(loss_ptr + row, lse - x_target)


@triton.jit
def cross_entropy_gather_kernel(logits_ptr, target_ptr, loss_ptr, stride, n_cols,
                                BLOCK_N: tl.constexpr):
    # Liger style: the target logit is a second (scalar, data-dependent) load of logits.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(logits_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    target = tl.load(target_ptr + row)
    x_target = tl.load(logits_ptr + row * stride + target)
    m = tl.max(x, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(x - m), axis=0))
    tl.store(loss_ptr + row, lse - x_target)


@triton.jit
def linear_kernel(w_ptr, x_ptr, out_ptr, stride_w, K, BLOCK_K: tl.constexpr):
    # CustomLinear: out[i] = sum_k w[i, k] * x[k], one row per program.
    i = tl.program_id(0)
    k = tl.arange(0, BLOCK_K)
    mask = k < K
    w = tl.load(w_ptr + i * stride_w + k, mask=mask, other=0.0)
    x = tl.load(x_ptr + k, mask=mask, other=0.0)
    tl.store(out_ptr + i, tl.sum(w * x, axis=0))


@triton.jit
def exp2d_kernel(x_ptr, y_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    offs = rm[:, None] * stride_m + rn[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.exp(x) * 2.0, mask=mask)


@triton.jit
def sum_loop_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    # One program reduces the whole vector in a loop.
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < N, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


@triton.jit
def layer_norm_loop_kernel(X, W, B, Y, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        acc += tl.load(X + row * stride + cols, mask=cols < N, other=0.0)
    mean = tl.sum(acc, axis=0) / N
    acc2 = tl.zeros([BLOCK_N], dtype=tl.float32)
    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        a = tl.load(X + row * stride + cols, mask=cols < N, other=0.0)
        a = tl.where(cols < N, a - mean, 0.0)
        acc2 += a * a
    rstd = 1.0 / tl.sqrt(tl.sum(acc2, axis=0) / N + eps)
    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + row * stride + cols, mask=mask, other=0.0)
        tl.store(Y + row * stride + cols, (x - mean) * rstd * w + b, mask=mask)


@triton.jit
def _gelu(x):
    return 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))


@triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 512})],
                 key=["n"])
@triton.jit
def gelu_autotuned_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, _gelu(tl.load(x_ptr + offs, mask=mask, other=0.0)), mask=mask)


@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n"]) // 8})
@triton.jit
def gelu_heuristics_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, _gelu(tl.load(x_ptr + offs, mask=mask, other=0.0)), mask=mask)


@triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 256})],
                 key=["n"])
@triton.jit
def swiglu_autotuned_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    tl.store(c_ptr + offs, a * tl.sigmoid(a) * b, mask=mask)


# Kernels tritonad must refuse (or, for the last one, get right).

@triton.jit
def scale_inplace_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(x_ptr + offs, x * 2.0, mask=mask)


@triton.jit
def online_logsumexp_kernel(x_ptr, out_ptr, stride, N, BLOCK: tl.constexpr):
    # The running max is carried by the loop: not a pure accumulation.
    row = tl.program_id(0)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=float("-inf"))
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    big = tl.max(m, axis=0)
    tl.store(out_ptr + row, big + tl.log(tl.sum(s * tl.exp(m - big), axis=0)))


@triton.jit
def pointer_increment_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    ptrs = x_ptr + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        acc += tl.load(ptrs, mask=off + tl.arange(0, BLOCK) < N, other=0.0)
        ptrs += BLOCK
    tl.store(out_ptr, tl.sum(acc, axis=0))


@triton.jit
def attention_kernel(Q, K, V, Out, stride_q, stride_k, stride_v, stride_o, n_ctx, sm_scale,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    # One head of non-causal attention with an online softmax over key blocks
    # (the flash-attention forward): m_i, l_i and acc are carried by the loop.
    start_m = tl.program_id(0)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + offs_m[:, None] * stride_q + offs_d[None, :], mask=offs_m[:, None] < n_ctx,
                other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, n_ctx, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(K + offs_n[:, None] * stride_k + offs_d[None, :],
                    mask=offs_n[:, None] < n_ctx, other=0.0)
        v = tl.load(V + offs_n[:, None] * stride_v + offs_d[None, :],
                    mask=offs_n[:, None] < n_ctx, other=0.0)
        qk = tl.dot(q, tl.trans(k)) * sm_scale
        qk = tl.where(offs_n[None, :] < n_ctx, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(Out + offs_m[:, None] * stride_o + offs_d[None, :], acc, mask=offs_m[:, None] < n_ctx)


@triton.jit
def branch_kernel(x_ptr, y_ptr, stride, N, BLOCK: tl.constexpr):
    # A data-dependent scf.if with results: each row takes one branch by its sum.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0)
    if tl.sum(x, axis=0) > 0:
        y = tl.exp(x) * x
    else:
        y = tl.sin(x) * 2.0
    tl.store(y_ptr + row * stride + cols, y, mask=cols < N)


@triton.jit
def while_sum_kernel(x_ptr, lens_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    # A data-dependent trip count: row r sums exp(x) * x over its first lens[r] columns.
    row = tl.program_id(0)
    length = tl.load(lens_ptr + row)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    start = 0
    while start < length:
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < length, other=0.0)
        acc += tl.exp(x) * x
        start += BLOCK
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def pointer_walk_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    # The step grows with the iteration: not an induction tritonad rewrites.
    ptrs = x_ptr + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        acc += tl.load(ptrs, mask=off + tl.arange(0, BLOCK) < N, other=0.0)
        ptrs += off
    tl.store(out_ptr, tl.sum(acc, axis=0))


@triton.jit
def overwrite_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # y is written twice at the same addresses: only the second value survives,
    # so dL/dx = 3 * dy (not 1 * dy + 3 * dy).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, x, mask=mask)
    tl.store(y_ptr + offs, x * 3.0, mask=mask)


F32 = "*fp32"
F16 = "*fp16"
MATMUL_TYPES = dict(a_ptr=F16, b_ptr=F16, c_ptr=F16, M="i32", N="i32", K="i32",
                    stride_am="i32", stride_ak="i32", stride_bk="i32", stride_bn="i32",
                    stride_cm="i32", stride_cn="i32")
CASES = {
    # name: (kernel, runtime parameter types, constexprs, shadows passed as None)
    "gelu": (gelu_kernel, dict(x_ptr=F32, y_ptr=F32, n="i32"), dict(BLOCK=256), ()),
    "swiglu": (swiglu_kernel, dict(a_ptr=F32, b_ptr=F32, c_ptr=F32, n="i32"),
               dict(BLOCK=256), ()),
    "softmax": (softmax_kernel, dict(out_ptr=F32, in_ptr=F32, in_row_stride="i32",
                                     out_row_stride="i32", n_cols="i32"),
                dict(BLOCK_N=1024), ()),
    "layer_norm": (layer_norm_kernel, dict(X=F32, W=F32, B=F32, Y=F32, Mean=F32, Rstd=F32,
                                           stride="i32", N="i32", eps="fp32"),
                   dict(BLOCK_N=1024), ("dMean", "dRstd")),
    "rms_norm": (rms_norm_kernel, dict(X=F32, W=F32, Y=F32, stride="i32", N="i32",
                                       eps="fp32"), dict(BLOCK_N=1024), ()),
    "cross_entropy": (cross_entropy_kernel, dict(logits_ptr=F32, target_ptr="*i64",
                                                 loss_ptr=F32, stride="i32", n_cols="i32"),
                      dict(BLOCK_N=1024), ("dtarget_ptr",)),
    "cross_entropy_gather": (cross_entropy_gather_kernel,
                             dict(logits_ptr=F32, target_ptr="*i64", loss_ptr=F32,
                                  stride="i32", n_cols="i32"),
                             dict(BLOCK_N=1024), ("dtarget_ptr",)),
    "linear": (linear_kernel, dict(w_ptr=F32, x_ptr=F32, out_ptr=F32, stride_w="i32",
                                   K="i32"), dict(BLOCK_K=1024), ()),
    "exp2d": (exp2d_kernel, dict(x_ptr=F32, y_ptr=F32, M="i32", N="i32", stride_m="i32"),
              dict(BM=32, BN=64), ()),
    "sum_loop": (sum_loop_kernel, dict(x_ptr=F32, out_ptr=F32, N="i32"), dict(BLOCK=256), ()),
    "layer_norm_loop": (layer_norm_loop_kernel, dict(X=F32, W=F32, B=F32, Y=F32, stride="i32",
                                                     N="i32", eps="fp32"),
                        dict(BLOCK_N=256), ()),
    "matmul": (matmul_kernel, MATMUL_TYPES, dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_M=4),
               ()),
    "pointer_increment": (pointer_increment_kernel, dict(x_ptr=F32, out_ptr=F32, N="i32"),
                          dict(BLOCK=256), ()),
    "while_sum": (while_sum_kernel, dict(x_ptr=F32, lens_ptr="*i32", out_ptr=F32, stride="i32"),
                  dict(BLOCK=64), ("dlens_ptr",)),
    "branch": (branch_kernel, dict(x_ptr=F32, y_ptr=F32, stride="i32", N="i32"),
               dict(BLOCK=128), ()),
    "online_logsumexp": (online_logsumexp_kernel, dict(x_ptr=F32, out_ptr=F32, stride="i32",
                                                       N="i32"), dict(BLOCK=256), ()),
    "attention": (attention_kernel, dict(Q=F32, K=F32, V=F32, Out=F32, stride_q="i32",
                                         stride_k="i32", stride_v="i32", stride_o="i32",
                                         n_ctx="i32", sm_scale="fp32"),
                  dict(BLOCK_M=32, BLOCK_N=32, HEAD_DIM=16), ()),
}
