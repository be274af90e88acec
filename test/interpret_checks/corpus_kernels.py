"""Kernels of the corpus (corpus/kernels.py) at small odd sizes; the variant without
masks picked per launch; programs reading columns in deterministic mode; half casts.
"""

import math

import torch
import triton
import triton.language as tl

from corpus import kernels as K
from interpret_checks import check, check_both, tolerance
from interpreter_util import GEN, jit_from_source, kernel_gradients, randn


@check("corpus_vector_add")
def _():
    n = 301
    x, y = randn(n), randn(n)
    kernel_gradients(K.vector_add_kernel, (triton.cdiv(n, 64),), {"x_ptr": x, "y_ptr": y},
                     {"out_ptr": torch.empty(n)}, {"n": n}, {"BLOCK": 64},
                     lambda x_ptr, y_ptr: {"out_ptr": x_ptr + y_ptr})


@check_both("corpus_softmax")
def _(dtype):
    rows, cols = 5, 37
    x = randn(rows, cols, dtype=dtype)
    kernel_gradients(K.softmax_kernel, (rows,), {"in_ptr": x},
                     {"out_ptr": torch.empty_like(x)},
                     {"in_row_stride": cols, "out_row_stride": cols, "n_cols": cols},
                     {"BLOCK": 64}, lambda in_ptr: {"out_ptr": torch.softmax(in_ptr, 1)},
                     **tolerance(dtype))


def _layer_norm(x, w, b, eps):
    mean = x.mean(1)
    rstd = 1 / torch.sqrt(x.var(1, unbiased=False) + eps)
    return mean, rstd, (x - mean[:, None]) * rstd[:, None] * w + b


@check("corpus_layer_norm_loops_atomics")
def _(dtype=torch.float32):
    # three accumulating loops over column blocks; dW, dB shared by all rows (atomics)
    M, N = 3, 70
    x, w, b = randn(M, N, dtype=dtype), randn(N, dtype=dtype), randn(N, dtype=dtype)

    def reference(x_ptr, w_ptr, b_ptr):
        mean, rstd, y = _layer_norm(x_ptr, w_ptr, b_ptr, 1e-5)
        return {"y_ptr": y, "mean_ptr": mean, "rstd_ptr": rstd}
    bwd = kernel_gradients(
        K.layer_norm_fwd_kernel, (M,), {"x_ptr": x, "w_ptr": w, "b_ptr": b},
        {"y_ptr": torch.empty_like(x), "mean_ptr": torch.empty(M, dtype=dtype),
         "rstd_ptr": torch.empty(M, dtype=dtype)},
        {"stride": N, "N": N, "eps": 1e-5}, {"BLOCK": 32}, reference, **tolerance(dtype))
    assert "tl.atomic_add" in bwd.source() and "for " in bwd.source()


@check("corpus_layer_norm_dwdb_2d_loop")
def _():
    M, N = 11, 45
    dw, db = randn(M, N), randn(M, N)
    kernel_gradients(K.layer_norm_bwd_dwdb_kernel, (triton.cdiv(N, 16),),
                     {"dw_partial_ptr": dw, "db_partial_ptr": db},
                     {"dw_ptr": torch.empty(N), "db_ptr": torch.empty(N)}, {"M": M, "N": N},
                     {"BLOCK_M": 4, "BLOCK_N": 16},
                     lambda dw_partial_ptr, db_partial_ptr: {"dw_ptr": dw_partial_ptr.sum(0),
                                                             "db_ptr": db_partial_ptr.sum(0)})


@check("corpus_rms_norm")
def _():
    M, N = 4, 77
    x, w = randn(M, N), randn(N)

    def reference(x_ptr, w_ptr):
        rstd = torch.rsqrt((x_ptr * x_ptr).mean(1) + 1e-6)
        return {"y_ptr": x_ptr * rstd[:, None] * w_ptr, "rstd_ptr": rstd}
    kernel_gradients(K.rms_norm_fwd_kernel, (M,), {"x_ptr": x, "w_ptr": w},
                     {"y_ptr": torch.empty_like(x), "rstd_ptr": torch.empty(M)},
                     {"stride": N, "N": N, "eps": 1e-6}, {"BLOCK": 128}, reference)


@check("transposed_reading_deterministic")
def _():
    """Programs reading columns of a row-major x (test_transposed_access.py):
    disjoint with the programs innermost, which deterministic mode now takes
    (checked at launch) where it refused before."""
    from corpus.norms import column_rms_kernel

    M, N = 45, 37
    x = randn(M, N)

    def reference(X):
        return {"Y": (X * torch.rsqrt((X * X).mean(0, keepdim=True) + 1e-5)).T}
    kernel_gradients(column_rms_kernel, (N,), {"X": x}, {"Y": torch.empty(N, M)},
                     {"stride_r": N, "stride_c": 1, "M": M, "eps": 1e-5}, {"BLOCK_M": 64},
                     reference, mode="deterministic")


@check("corpus_matmul_fp16_dot_loop")
def _():
    M, N, Kd = 37, 20, 45
    a, b = randn(M, Kd, dtype=torch.float16), randn(Kd, N, dtype=torch.float16)
    c = torch.empty(M, N, dtype=torch.float16)
    grid = (triton.cdiv(M, 16) * triton.cdiv(N, 16),)
    kernel_gradients(K.matmul_kernel, grid, {"a_ptr": a, "b_ptr": b}, {"c_ptr": c},
                     {"M": M, "N": N, "K": Kd, "stride_am": Kd, "stride_ak": 1, "stride_bk": N,
                      "stride_bn": 1, "stride_cm": N, "stride_cn": 1},
                     {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2},
                     lambda a_ptr, b_ptr: {"c_ptr": a_ptr @ b_ptr}, rtol=1e-2, atol=1e-2)


@check("full_masks_variant_by_launch")
def _():
    """The backward without masks runs where the launch's sizes make them true
    everywhere (multiples of the blocks), the masked one elsewhere (odd
    sizes, a K tail): gradients against torch in both, and the variant the
    launch path picked, per launch. Random sizes of both kinds."""
    from tritonad import _masks

    picked = []
    original = _masks.choose

    def recording(kernel, kwargs, grid):
        original(kernel, kwargs, grid)
        picked.append(kwargs[_masks.FULL_MASKS])
    _masks.choose = recording
    try:
        for aligned in (True, False, True, False):
            tiles = [int(v) for v in torch.randint(1, 4, (3,), generator=GEN)]
            M, N, Kd = (16 * t for t in tiles)
            if not aligned:  # (one of the three off the block)
                which = int(torch.randint(0, 3, (1,), generator=GEN))
                tail = int(torch.randint(1, 16, (1,), generator=GEN))
                M, N, Kd = ((v - tail if i == which else v) for i, v in enumerate((M, N, Kd)))
            a, b = randn(M, Kd, dtype=torch.float16), randn(Kd, N, dtype=torch.float16)
            c = torch.empty(M, N, dtype=torch.float16)
            grid = (triton.cdiv(M, 16) * triton.cdiv(N, 16),)
            picked.clear()
            kernel_gradients(K.matmul_kernel, grid, {"a_ptr": a, "b_ptr": b}, {"c_ptr": c},
                             {"M": M, "N": N, "K": Kd, "stride_am": Kd, "stride_ak": 1,
                              "stride_bk": N, "stride_bn": 1, "stride_cm": N, "stride_cn": 1},
                             {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2},
                             lambda a_ptr, b_ptr: {"c_ptr": a_ptr @ b_ptr}, rtol=1e-2, atol=1e-2)
            assert picked and set(picked) == {int(aligned)}, (M, N, Kd, picked)

            n = 64 * tiles[0] - (0 if aligned else tiles[1])
            x, y = randn(n), randn(n)
            picked.clear()
            kernel_gradients(K.vector_add_kernel, (triton.cdiv(n, 64),),
                             {"x_ptr": x, "y_ptr": y}, {"out_ptr": torch.empty(n)}, {"n": n},
                             {"BLOCK": 64}, lambda x_ptr, y_ptr: {"out_ptr": x_ptr + y_ptr})
            assert picked and set(picked) == {int(aligned)}, (n, picked)
    finally:
        _masks.choose = original


@check("corpus_attention_online_softmax_stabilized")
def _(dtype=torch.float32):
    BH, S, D = 2, 37, 16
    q, k, v = (randn(BH, S, D, dtype=dtype) for _ in range(3))
    scale = 1 / math.sqrt(D)

    def reference(q_ptr, k_ptr, v_ptr):
        scores = q_ptr @ k_ptr.transpose(1, 2) * scale
        return {"out_ptr": torch.softmax(scores, -1) @ v_ptr,
                "lse_ptr": torch.logsumexp(scores, -1)}
    bwd = kernel_gradients(
        K.attention_fwd_kernel, (triton.cdiv(S, 16), BH), {"q_ptr": q, "k_ptr": k, "v_ptr": v},
        {"out_ptr": torch.empty_like(q), "lse_ptr": torch.empty(BH, S, dtype=dtype)},
        {"sm_scale": scale, "seq_len": S, "stride_bh": S * D, "stride_s": D},
        {"HEAD_DIM": D, "BLOCK_M": 16, "BLOCK_N": 16}, reference, rtol=1e-4, atol=1e-4)
    # The running max only stabilizes (lse = m + log(l) cancels it too): the
    # key loop is reversed once, in forward order, not replayed per iteration.
    schedule = bwd.schedule()
    assert "only stabilizes exponentials" in schedule and "n(n-1)/2" not in schedule, schedule


@check("corpus_dropout_integer_philox")
def _():
    # The backward recomputes tl.rand: its philox rounds are unsigned 32-bit
    # arithmetic (umulhi, shrui). The mask it draws must be the forward's.
    n, p = 301, 0.3
    x = randn(n)
    out = torch.empty(n)
    K.dropout_kernel[(triton.cdiv(n, 64),)](x, out, n, p, 1234, BLOCK=64)
    keep = out != 0
    assert 0 < int(keep.sum()) < n
    kernel_gradients(K.dropout_kernel, (triton.cdiv(n, 64),), {"x_ptr": x},
                     {"out_ptr": torch.empty(n)}, {"n": n, "p": p, "seed": 1234}, {"BLOCK": 64},
                     lambda x_ptr: {"out_ptr": torch.where(keep, x_ptr / (1 - p), 0.0)})


@check("corpus_cumsum_scan")
def _():
    rows, cols = 5, 45
    x = randn(rows, cols)
    kernel_gradients(K.cumsum_kernel, (rows,), {"x_ptr": x}, {"out_ptr": torch.empty_like(x)},
                     {"stride": cols, "n_cols": cols}, {"BLOCK": 64},
                     lambda x_ptr: {"out_ptr": x_ptr.cumsum(1)})


@check("corpus_row_sum_2d_loop")
def _():
    M, N = 9, 45
    x = randn(M, N)
    kernel_gradients(K.row_sum_kernel, (triton.cdiv(M, 4),), {"x_ptr": x},
                     {"out_ptr": torch.empty(M)}, {"M": M, "N": N, "stride": N},
                     {"BLOCK_M": 4, "BLOCK_N": 16}, lambda x_ptr: {"out_ptr": x_ptr.sum(1)})


@check("corpus_row_max_min")
def _():
    M, N = 6, 45
    x = randn(M, N)
    for kernel, reduce in ((K.row_max_kernel, torch.amax), (K.row_min_kernel, torch.amin)):
        kernel_gradients(kernel, (M,), {"x_ptr": x}, {"out_ptr": torch.empty(M)},
                         {"stride": N, "n_cols": N}, {"BLOCK": 64},
                         lambda x_ptr: {"out_ptr": reduce(x_ptr, 1)})


@check("corpus_first_program_branch_if")
def _():
    n = 301
    x = randn(n)

    def reference(x_ptr):
        y = torch.cat([x_ptr[:64] * 2.0, x_ptr[64:] + torch.sin(x_ptr[64:])])
        return {"y_ptr": y, "extra_ptr": (x_ptr[:64] * x_ptr[:64]).sum().reshape(1)}
    kernel_gradients(K.first_program_branch_kernel, (triton.cdiv(n, 64),), {"x_ptr": x},
                     {"y_ptr": torch.empty(n), "extra_ptr": torch.empty(1)}, {"n": n},
                     {"BLOCK": 64}, reference)


@check("corpus_leaky_relu_clamp")
def _():
    n = 301
    x = randn(n) * 2
    kernel_gradients(K.leaky_relu_clamp_kernel, (triton.cdiv(n, 64),), {"x_ptr": x},
                     {"y_ptr": torch.empty(n)}, {"n": n, "slope": 0.1, "hi": 1.5}, {"BLOCK": 64},
                     lambda x_ptr: {"y_ptr": torch.clamp(
                         torch.where(x_ptr > 0, x_ptr, 0.1 * x_ptr), max=1.5)})


_HALF_KERNEL = """
def half_casts(x16_ptr, w_ptr, out16_ptr, out32_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x16 = tl.load(x16_ptr + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    x = x16.to(tl.float32)
    y = x * w + tl.exp(-x * x)
    tl.store(out16_ptr + offs, y.to(tl.float16), mask=mask)
    tl.store(out32_ptr + offs, x16 * w.to(tl.float16) + x16, mask=mask)
"""


@check("half_precision_casts")
def _():
    # (the corpus' mixed_precision kernel needs bf16 arithmetic, which Triton 3.6's
    # interpreter gets wrong by itself; this is its fp16 half)
    n = 301
    kernel = jit_from_source(_HALF_KERNEL, "half_casts", {"tl": tl})
    x16, w = randn(n, dtype=torch.float16), randn(n)

    def reference(x16_ptr, w_ptr):
        x = x16_ptr
        return {"out16_ptr": x * w_ptr + torch.exp(-x * x),
                "out32_ptr": x * w_ptr.half().double() + x}
    kernel_gradients(kernel, (triton.cdiv(n, 64),), {"x16_ptr": x16, "w_ptr": w},
                     {"out16_ptr": torch.empty(n, dtype=torch.float16),
                      "out32_ptr": torch.empty(n, dtype=torch.float16)}, {"n": n},
                     {"BLOCK": 64}, reference, rtol=1e-2, atol=1e-2)


@check("corpus_complex_mul_split_join")
def _():
    n = 101
    a, b = randn(n, 2), randn(n, 2)

    def reference(a_ptr, b_ptr):
        ac, bc = torch.view_as_complex(a_ptr.contiguous()), torch.view_as_complex(b_ptr.contiguous())
        return {"out_ptr": torch.view_as_real(ac * bc)}
    kernel_gradients(K.complex_mul_kernel, (triton.cdiv(n, 32),), {"a_ptr": a, "b_ptr": b},
                     {"out_ptr": torch.empty(n, 2)}, {"n": n}, {"BLOCK": 32}, reference)


@check("corpus_transpose_2d_grid")
def _():
    M, N = 37, 21
    x = randn(M, N)
    scale = torch.arange(1, M + 1, dtype=torch.float64)[:, None]
    kernel_gradients(K.transpose_scale_kernel, (triton.cdiv(M, 16), triton.cdiv(N, 16)),
                     {"x_ptr": x}, {"y_ptr": torch.empty(N, M)},
                     {"M": M, "N": N, "stride_xm": N, "stride_ym": M},
                     {"BLOCK_M": 16, "BLOCK_N": 16},
                     lambda x_ptr: {"y_ptr": (x_ptr * scale).t()})


@check("corpus_permute3d")
def _():
    A, B, C, batch = 2, 4, 8, 3
    x = randn(batch, A, B, C)
    kernel_gradients(K.permute3d_kernel, (batch,), {"x_ptr": x},
                     {"y_ptr": torch.empty(batch, C, A, B)}, {}, {"A": A, "B": B, "C": C},
                     lambda x_ptr: {"y_ptr": torch.exp(x_ptr).permute(0, 3, 1, 2)})


@check("corpus_gelu_erf_and_tanh_libdevice")
def _():
    n = 301
    x = randn(n)
    for kernel, approximate in ((K.gelu_erf_kernel, "none"), (K.gelu_tanh_kernel, "tanh")):
        kernel_gradients(kernel, (triton.cdiv(n, 64),), {"x_ptr": x}, {"y_ptr": torch.empty(n)},
                         {"n": n}, {"BLOCK": 64},
                         lambda x_ptr: {"y_ptr": torch.nn.functional.gelu(
                             x_ptr, approximate=approximate)})


@check("corpus_swiglu_2d_grid")
def _():
    rows, cols = 3, 150
    a, b = randn(rows, cols), randn(rows, cols)
    kernel_gradients(K.swiglu_kernel, (rows, triton.cdiv(cols, 64)), {"a_ptr": a, "b_ptr": b},
                     {"out_ptr": torch.empty(rows, cols)}, {"stride": cols, "n_cols": cols},
                     {"BLOCK": 64},
                     lambda a_ptr, b_ptr: {"out_ptr": a_ptr * torch.sigmoid(a_ptr) * b_ptr})


@check("corpus_cross_entropy_int64")
def _():
    rows, cols = 4, 100
    logits = randn(rows, cols)
    targets = torch.randint(0, cols, (rows,), generator=GEN)

    def reference(logits_ptr):
        lse = torch.logsumexp(logits_ptr, 1)
        return {"loss_ptr": lse - logits_ptr[torch.arange(rows), targets], "lse_ptr": lse}
    kernel_gradients(K.cross_entropy_fwd_kernel, (rows,), {"logits_ptr": logits},
                     {"loss_ptr": torch.empty(rows), "lse_ptr": torch.empty(rows)},
                     {"targets_ptr": targets, "stride": cols, "n_cols": cols}, {"BLOCK": 128},
                     reference)


@check("corpus_affine_2d_strided_view")
def _():
    M, N = 21, 37
    x = randn(N, M).t()  # a transposed view: strides (1, M)
    bias = randn(N)
    shift = 3

    def reference(x_ptr, bias_ptr):
        cols = torch.arange(N)
        y = 0.75 * x_ptr + ((cols + shift) % 7).double()[None, :] + bias_ptr[None, :]
        return {"y_ptr": y * torch.sigmoid(y)}
    kernel_gradients(K.affine_2d_kernel, (triton.cdiv(M, 16), triton.cdiv(N, 16)),
                     {"x_ptr": x, "bias_ptr": bias}, {"y_ptr": torch.empty(M, N)},
                     {"M": M, "N": N, "stride_xm": x.stride(0), "stride_xn": x.stride(1),
                      "stride_ym": N, "alpha": 0.75, "shift": shift},
                     {"BLOCK_M": 16, "BLOCK_N": 16, "HAS_BIAS": True, "ACT": 2}, reference)


@check("corpus_math_zoo")
def _():
    n = 301
    x = randn(n)

    def reference(x_ptr):
        x = x_ptr
        a = torch.abs(x) + 0.5
        y = torch.exp(0.1 * x) + torch.log(a) + torch.sqrt(a) * torch.rsqrt(a + 1.0)
        y = y + torch.sin(x) * torch.cos(x) + torch.exp2(0.2 * x) + torch.log2(a)
        y = y + (x * x + a) + torch.maximum(x, 0.5 * x) - torch.minimum(x, -x) + x / a
        y = y + torch.pow(a, 1.5) + torch.floor(x) * 0.25
        return {"y_ptr": y}
    kernel_gradients(K.math_zoo_kernel, (triton.cdiv(n, 64),), {"x_ptr": x},
                     {"y_ptr": torch.empty(n)}, {"n": n}, {"BLOCK": 64}, reference)
