"""Gradient checks run in Triton's CPU interpreter (TRITON_INTERPRET=1).

test_interpret.py runs this module in a fresh Python with TRITON_INTERPRET=1
set before Triton is imported (Triton decides between JITFunction and
InterpretedFunction when ``@triton.jit`` runs, and its own library functions
are made at import). Each check derives a backward kernel (or a VJP) through
tritonad, which renders it as Triton Python and interprets that rendering; the
gradients are compared with torch.autograd in float64 on fresh random inputs
(the seed is printed with a failure). Sizes are odd, so masks matter.

    TRITON_INTERPRET=1 python test/interpret_checks.py [out.json [seed [name ...]]]
"""

from __future__ import annotations

import json
import linecache
import math
import os
import subprocess
import sys
import time
import traceback
import zlib
from typing import Callable, Dict

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import tritonad  # noqa: E402
from corpus import kernels as K  # noqa: E402
import test_grad_rules as rules  # noqa: E402

CHECKS: Dict[str, Callable] = {}
GEN = torch.Generator()


def check(name):
    def register(fn):
        assert name not in CHECKS, name
        CHECKS[name] = fn
        return fn
    return register


def jit_from_source(source, name, env):
    """A @triton.jit function from source (registered with linecache: Triton
    and its interpreter read functions through inspect)."""
    filename = f"<interpret_checks-{name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": "interpret_checks_generated", **env}
    exec(compile(source, filename, "exec"), namespace)
    return triton.jit(namespace[name])


def randn(*shape, dtype=torch.float32):
    return torch.randn(tuple(shape), generator=GEN, dtype=torch.float64).to(dtype)


def assert_close(name, got, want, rtol, atol):
    got, want = got.double(), want.double()
    bad = ~torch.isclose(got, want, rtol=rtol, atol=atol)
    if bad.any():
        at = bad.nonzero()[0].tolist()
        raise AssertionError(
            f"gradient of {name}: {int(bad.sum())} of {got.numel()} elements differ, e.g. at "
            f"{at}: got {got[tuple(at)].item():.10g}, expected {want[tuple(at)].item():.10g}; "
            f"max abs error {(got - want).abs().max().item():.3g}")


def kernel_gradients(kernel, grid, inputs, outputs, scalars, constexprs, reference,
                     rtol=1e-4, atol=1e-5, **grad_options):
    """Launches tritonad.grad(kernel) in the interpreter on `inputs` (name ->
    tensor), with random upstream gradients for `outputs` (name -> tensor of the
    output's shape and dtype), and compares the input shadows with
    torch.autograd of `reference(**inputs)` (-> {output name: tensor})."""
    bwd = tritonad.grad(kernel, **grad_options)
    primal = bwd.tritonad_primal
    upstream = {name: randn(*t.shape, dtype=t.dtype) for name, t in outputs.items()}
    shadows = {}
    for pointer, shadow in bwd.shadows.items():
        if pointer in inputs:
            shadows[shadow] = torch.zeros_like(inputs[pointer])
        elif pointer in upstream:
            shadows[shadow] = upstream[pointer].clone()
    values = {**inputs, **outputs, **scalars}
    args = [values[p.name] for p in primal.params if not p.is_constexpr]
    bwd[grid](*args, **shadows, **constexprs)

    leaves = {k: v.detach().double().requires_grad_() for k, v in inputs.items()}
    produced = reference(**leaves)
    total = sum((produced[k] * upstream[k].double()).sum() for k in produced)
    total.backward()
    for name, leaf in leaves.items():
        shadow = bwd.shadows.get(name)
        if shadow is None:
            continue
        want = leaf.grad if leaf.grad is not None else torch.zeros_like(leaf)
        assert_close(name, shadows[shadow], want, rtol, atol)
    return bwd


# ---------------------------------------------------------------------------
# The elementwise rule set (test_grad_rules.py), as kernels over a masked range
# ---------------------------------------------------------------------------

_ELEMENTWISE_KERNEL = """
def {name}({inputs}, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
{loads}
    tl.store(Y + offs, f({args}), mask=mask)
"""


def _elementwise_cases():
    cases = []
    for case in rules.CASES:
        if case.id.startswith(("cumsum", "cumprod")):  # (along an axis: not elementwise)
            continue
        shapes = {a.shape for a in case.args}
        if shapes != {(rules.M, rules.N)}:
            continue
        out_shapes, out_dtypes = rules._outputs_meta(case)
        if len(out_shapes) != 1 or out_shapes[0] != (rules.M, rules.N):
            continue
        cases.append(case)
    return cases


def _elementwise_check(case, dtype):
    def run():
        n = rules.M * rules.N - 5
        names = [f"X{i}" for i in range(len(case.args))]
        source = _ELEMENTWISE_KERNEL.format(
            name=f"k_{case.id}", inputs=", ".join(names),
            loads="\n".join(f"    x{i} = tl.load(X{i} + offs, mask=mask, other=1.0)"
                            for i in range(len(names))),
            args=", ".join(f"x{i}" for i in range(len(names))))
        kernel = jit_from_source(source, f"k_{case.id}", {"tl": tl, "f": case.fn})
        inputs = {}
        for name, arg in zip(names, case.args):
            sample = rules._SAMPLERS[arg.domain]((n,), GEN)
            inputs[name] = sample.to(dtype if arg.dtype == torch.float32 else arg.dtype)
        out_dtype = rules._outputs_meta(case)[1][0]
        if out_dtype == torch.float32:
            out_dtype = dtype
        wide = dtype == torch.float64 and all(a.dtype == torch.float32 for a in case.args)
        tolerance = dict(rtol=1e-9, atol=1e-9) if wide else \
            dict(rtol=max(case.rtol, 1e-4), atol=max(case.atol, 1e-5))

        def reference(**xs):
            return {"Y": case.ref(*[xs[k] for k in names])}
        kernel_gradients(kernel, (triton.cdiv(n, 128),), inputs,
                         {"Y": torch.empty(n, dtype=out_dtype)}, {"n": n}, {"BLOCK": 128},
                         reference, **tolerance)
    return run


# Triton has no fp64 tl.div_rn / tl.sqrt_rn; tritonad has no rule for __nv_ddiv_rn.
_FP64_UNSUPPORTED = {"precise_divf", "precise_sqrt", "ld_fdiv_rn"}

for _case in _elementwise_cases():
    check(f"rule_{_case.id}_fp32")(_elementwise_check(_case, torch.float32))
    if all(a.dtype == torch.float32 for a in _case.args) and _case.id not in _FP64_UNSUPPORTED:
        check(f"rule_{_case.id}_fp64")(_elementwise_check(_case, torch.float64))


# ---------------------------------------------------------------------------
# Every rule of the table through its VJP (tritonad.grad of a device function),
# called from an interpreted kernel: test_grad_rules' generated kernels
# ---------------------------------------------------------------------------

def _vjp_check(case):
    def run():
        built = rules._build(case.id)
        inputs = [arg.sample(GEN, "cpu") for arg in case.args]
        cotangents = [randn(*shape, dtype=dtype)
                      for shape, dtype in zip(built.out_shapes, built.out_dtypes)]
        grads = [torch.full_like(x, float("nan")) for x in inputs]
        built.kernel[(1,)](*inputs, *cotangents, *grads)
        leaves = [x.detach().double().requires_grad_() for x in inputs]
        outs = case.ref(*leaves)
        outs = outs if isinstance(outs, tuple) else (outs,)
        expected = torch.autograd.grad(outs, leaves, [c.double() for c in cotangents],
                                       allow_unused=True)
        for i, (got, want, x) in enumerate(zip(grads, expected, inputs)):
            want = torch.zeros_like(x, dtype=torch.float64) if want is None else want
            # (the interpreter computes tl.dot exactly, whatever its input precision)
            tolerance = dict(rtol=max(case.rtol, 1e-4), atol=max(case.atol, 1e-5))
            if "tf32" in case.id:
                tolerance = dict(rules.IEEE)
            assert_close(f"argument {i}", got, want, **tolerance)
    return run


# Triton 3.6's interpreter computes a bf16 tl.dot wrongly (plain Triton, without tritonad)
_VJP_INTERPRETER_BROKEN = {"dot_bf16"}

for _case in rules.CASES:
    if _case.id not in _VJP_INTERPRETER_BROKEN:
        check(f"vjp_{_case.id}")(_vjp_check(_case))

# ---------------------------------------------------------------------------
# Kernels of the corpus (test/corpus/kernels.py), small odd sizes
# ---------------------------------------------------------------------------

def _both(name):
    """Registers a check for float32 and float64 inputs."""
    def register(fn):
        check(f"{name}_fp32")(lambda: fn(torch.float32))
        check(f"{name}_fp64")(lambda: fn(torch.float64))
        return fn
    return register


def _tolerance(dtype):
    return dict(rtol=1e-9, atol=1e-9) if dtype == torch.float64 else dict(rtol=1e-4, atol=1e-5)


@check("corpus_vector_add")
def _():
    n = 301
    x, y = randn(n), randn(n)
    kernel_gradients(K.vector_add_kernel, (triton.cdiv(n, 64),), {"x_ptr": x, "y_ptr": y},
                     {"out_ptr": torch.empty(n)}, {"n": n}, {"BLOCK": 64},
                     lambda x_ptr, y_ptr: {"out_ptr": x_ptr + y_ptr})


@_both("corpus_softmax")
def _(dtype):
    rows, cols = 5, 37
    x = randn(rows, cols, dtype=dtype)
    kernel_gradients(K.softmax_kernel, (rows,), {"in_ptr": x},
                     {"out_ptr": torch.empty_like(x)},
                     {"in_row_stride": cols, "out_row_stride": cols, "n_cols": cols},
                     {"BLOCK": 64}, lambda in_ptr: {"out_ptr": torch.softmax(in_ptr, 1)},
                     **_tolerance(dtype))


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
        {"stride": N, "N": N, "eps": 1e-5}, {"BLOCK": 32}, reference, **_tolerance(dtype))
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
    from test_transposed_access import column_rms_kernel

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


# ---------------------------------------------------------------------------
# Beyond the corpus: while loops, autograd, wrappers, errors, integer semantics
# ---------------------------------------------------------------------------

@triton.jit
def while_accumulate_kernel(x_ptr, y_ptr, n_blocks, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=x_ptr.dtype.element_ty)
    i = 0
    while i < n_blocks:
        cols = i * BLOCK + tl.arange(0, BLOCK)
        acc += tl.exp(tl.load(x_ptr + row * n + cols, mask=cols < n, other=float("-inf")))
        i += 1
    tl.store(y_ptr + row * BLOCK + tl.arange(0, BLOCK), acc)


@_both("while_loop_accumulation")
def _(dtype):
    rows, n, block = 3, 45, 16
    blocks = triton.cdiv(n, block)
    x = randn(rows, n, dtype=dtype)

    def reference(x_ptr):
        padded = torch.full((rows, blocks * block), float("-inf"), dtype=x_ptr.dtype)
        padded = torch.cat([x_ptr, padded[:, n:]], dim=1)
        return {"y_ptr": torch.exp(padded).reshape(rows, blocks, block).sum(1)}
    bwd = kernel_gradients(while_accumulate_kernel, (rows,), {"x_ptr": x},
                           {"y_ptr": torch.empty(rows, block, dtype=dtype)},
                           {"n_blocks": blocks, "n": n}, {"BLOCK": block}, reference,
                           **_tolerance(dtype))
    assert "while " in bwd.source(), bwd.source()


@check("autograd_gelu")
def _():
    gelu = tritonad.autograd(K.gelu_kernel, outputs=("y_ptr",))
    n = 301
    x = randn(n).requires_grad_()
    y = gelu[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, torch.empty(n), n, BLOCK=64)
    upstream = randn(n)
    y.backward(upstream)
    reference = x.detach().double().requires_grad_()
    torch.nn.functional.gelu(reference).backward(upstream.double())
    assert_close("x", x.grad, reference.grad, 1e-5, 1e-6)
    # float64 through torch.autograd.gradcheck (small: each probe is a launch)
    x64 = torch.randn(7, dtype=torch.float64, generator=GEN, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda t: gelu[(1,)](t, torch.empty(7, dtype=torch.float64), 7, BLOCK=8), (x64,))


@triton.heuristics({"BLOCK": lambda args: 32 if args["n"] < 100 else 64})
@triton.jit
def scale_heuristic_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, alpha * tl.sin(tl.load(x_ptr + offs, mask=mask)), mask=mask)


@check("heuristics_wrapper")
def _():
    n = 301
    x = randn(n)
    bwd = tritonad.grad(scale_heuristic_kernel)
    dx, dy = torch.zeros(n), randn(n)
    bwd[(triton.cdiv(n, 64),)](x, torch.empty(n), n, 1.5, dx, dy)
    assert_close("x", dx, 1.5 * torch.cos(x.double()) * dy.double(), 1e-5, 1e-6)
    assert "64" in bwd.source()  # the block the heuristic chose is compiled in


@triton.jit
def f16_products_summed(x_ptr, w_ptr, out_ptr, n_blocks, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r)  # f16, read by every iteration
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(n_blocks):
        acc += (x * tl.load(w_ptr + i * BLOCK + r)).to(tl.float32)  # f16 products
    tl.store(out_ptr + r, acc)


@check("f16_adjoints_sum_in_f32")
def _():
    # dx = sum_i w_i: integers, exact in f16 one by one, whose running sum
    # passes 2048 (f16's spacing grows to 2, then 4): summed in f16 it would
    # round hundreds of times; summed in f32 and rounded once, it is the exact
    # sum rounded to f16.
    n_blocks, block = 517, 16
    x = torch.ones(block, dtype=torch.float16)
    w = torch.randint(8, 17, (n_blocks * block,)).to(torch.float16)  # (sums >= 517 * 8)
    bwd = tritonad.grad(f16_products_summed)
    dx = torch.zeros_like(x)
    bwd[(1,)](x, w, torch.empty(block), n_blocks, dx_ptr=dx, dout_ptr=torch.ones(block),
                BLOCK=block)
    exact = w.double().view(n_blocks, block).sum(0)
    assert float(exact.min()) > 4096, exact
    assert torch.equal(dx, exact.half()), (dx, exact)


@triton.jit
def prefix_blocks_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Program (b, h) sums exp(x) * (index + 1) over the blocks 0..b of row h:
    # its loop's trip count grows with b, as a causal attention's does.
    b = tl.program_id(0)
    h = tl.program_id(1)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, (b + 1) * BLOCK, BLOCK):
        at = start + offs
        x = tl.load(x_ptr + h * n + at, mask=at < n, other=0.0).to(tl.float32)
        acc += tl.exp(x) * (at + 1).to(tl.float32)  # (tl.exp: fp32 / fp64 only)
    tl.store(out_ptr + (h * tl.num_programs(0) + b) * BLOCK + offs, acc)


def prefix_blocks_reference(x, dout, block):
    """dx of prefix_blocks_kernel, by torch.autograd in fp64."""
    rows, n = x.shape
    blocks = -(-n // block)
    x = x.double().requires_grad_(True)
    padded = torch.nn.functional.pad(x, (0, blocks * block - n), value=float("-inf"))
    terms = (padded.exp() * torch.arange(1, blocks * block + 1, dtype=torch.float64))
    sums = terms.view(rows, blocks, block).cumsum(1)  # (program b: blocks 0..b)
    (sums * dout.double().view(rows, blocks, block)).sum().backward()
    return x.grad


@check("longest_programs_first")
def _():
    # The backward's programs are launched by decreasing trip count: the
    # gradient is the same (up to the atomics' order), the schedule says so,
    # and the launch's order is a permutation, longest first.
    from tritonad import _order

    rows, n, block = 3, 203, 16
    blocks = -(-n // block)
    x = randn(rows, n) * 0.5
    dout = randn(rows * blocks * block)
    bwd = tritonad.grad(prefix_blocks_kernel)
    dx = torch.zeros_like(x)
    bwd[(blocks, rows)](x, torch.empty(rows * blocks * block), n, dx_ptr=dx, dout_ptr=dout,
                        BLOCK=block)
    assert_close("x", dx, prefix_blocks_reference(x, dout, block), 1e-4, 1e-4)
    entries = [e for e in bwd.schedule().entries if e.kind == "programs"]
    assert [e.strategy for e in entries] == ["longest-first"], bwd.schedule()
    orders = [t for t in _order._CACHE.values() if len(t) == rows * blocks]
    assert orders, "the launch computed no order"
    order = orders[-1].tolist()
    assert sorted(order) == list(range(rows * blocks)), order
    # x fastest: program p is block p % blocks, whose loop runs p % blocks + 1 times
    trips = [p % blocks + 1 for p in order]
    assert trips == sorted(trips, reverse=True), trips
    assert order[:rows] == [blocks - 1 + r * blocks for r in range(rows)], order


@triton.jit
def _multiply(a, b):
    return a * b


@triton.jit
def row_product_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=1.0)
    tl.store(out_ptr + row, tl.reduce(x, 0, _multiply))


@check("product_reduce")
def _():
    # Rows with no zero, one zero and two zeros: torch.prod's gradient is finite
    # in each (the product of the other elements), which a division would not give.
    rows, cols = 5, 37
    x = 0.5 + torch.rand(rows, cols, generator=GEN)
    x[1, 7] = 0.0
    x[2, 3] = x[2, 30] = 0.0
    kernel_gradients(row_product_kernel, (rows,), {"x_ptr": x}, {"out_ptr": torch.empty(rows)},
                     {"n_cols": cols}, {"BLOCK": 64},
                     lambda x_ptr: {"out_ptr": x_ptr.prod(1)}, rtol=1e-4, atol=1e-6)


@triton.jit
def atomic_max_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_max(out_ptr, tl.max(x * x, axis=0))


@check("errors_stay_located")
def _():
    import inspect

    bwd = tritonad.grad(atomic_max_kernel)
    lines, first = inspect.getsourcelines(atomic_max_kernel.fn)
    line = first + next(i for i, text in enumerate(lines) if "tl.atomic_max" in text)
    try:
        bwd[(1,)](torch.zeros(8), torch.zeros(1), 8, torch.zeros(8), torch.ones(1), BLOCK=8)
    except tritonad.DifferentiationError as error:
        assert f"interpret_checks.py:{line}:" in str(error), str(error)
        assert "tl.atomic_max" in str(error), str(error)
    else:
        raise AssertionError("no DifferentiationError")


# ---------------------------------------------------------------------------
# Atomic adds into a differentiated output (test_atomic_outputs.py has them on
# the GPU): each add's value reads the upstream at its addresses
# ---------------------------------------------------------------------------

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


@check("atomic_add_outputs")
def _():
    # a sum of squares over programs into one scalar (the corpus's atomic_sum)
    n = 301
    x = randn(n)
    bwd = kernel_gradients(K.atomic_sum_kernel, (triton.cdiv(n, 64),), {"x_ptr": x},
                           {"out_ptr": torch.zeros(1)}, {"n": n}, {"BLOCK": 64},
                           lambda x_ptr: {"out_ptr": (x_ptr * x_ptr).sum().reshape(1)})
    schedule = bwd.schedule()
    assert "out_ptr: output, atomically added to" in schedule, schedule
    # programs along an axis the kernel never reads each add again
    kernel_gradients(K.atomic_sum_kernel, (triton.cdiv(n, 64), 3), {"x_ptr": x},
                     {"out_ptr": torch.zeros(1)}, {"n": n}, {"BLOCK": 64},
                     lambda x_ptr: {"out_ptr": 3 * (x_ptr * x_ptr).sum().reshape(1)})
    # a scatter-add with repeated indices and a masked tail
    n, D, rows = 45, 8, 6
    idx = torch.randint(0, rows, (n,), generator=GEN, dtype=torch.int32)

    def scatter(x_ptr, w_ptr):
        out = torch.zeros(rows, D, dtype=x_ptr.dtype)
        return {"out_ptr": out.index_add(0, idx.long(), x_ptr * torch.sigmoid(w_ptr)[:, None])}

    kernel_gradients(scatter_add_kernel, (triton.cdiv(n, 16),),
                     {"x_ptr": randn(n, D), "w_ptr": randn(n)}, {"out_ptr": torch.zeros(rows, D)},
                     {"idx_ptr": idx, "n": n}, {"D": D, "BLOCK": 16}, scatter)
    # split-K: programs along axis 2 add partial products into each tile
    M, N, Kd, per_split = 37, 29, 53, 16
    kernel_gradients(split_k_matmul_kernel,
                     (triton.cdiv(M, 16), triton.cdiv(N, 16), triton.cdiv(Kd, per_split)),
                     {"a_ptr": randn(M, Kd), "b_ptr": randn(Kd, N)},
                     {"c_ptr": torch.zeros(M, N)},
                     {"M": M, "N": N, "K": Kd, "K_PER_SPLIT": per_split},
                     {"BM": 16, "BN": 16, "BK": 16}, lambda a_ptr, b_ptr: {"c_ptr": a_ptr @ b_ptr},
                     rtol=1e-4, atol=1e-4)


@triton.jit
def _affine_then(a_left, b_left, a_right, b_right):
    return a_left * a_right, a_right * b_left + b_right


@triton.jit
def recurrence_kernel(a_ptr, b_ptr, h_ptr, p_ptr, stride, n_cols, BLOCK: tl.constexpr,
                      REVERSE: tl.constexpr):
    # h_k = a_k h_{k-1} + b_k along each row (from the right when REVERSE), and the
    # running product of a
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    a = tl.load(a_ptr + row * stride + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + row * stride + cols, mask=mask, other=0.0)
    # (the masked tail is the identity map: a reverse scan meets it first)
    p, h = tl.associative_scan((tl.where(mask, tl.sigmoid(a), 1.0), b * b), axis=0,
                               combine_fn=_affine_then, reverse=REVERSE)
    tl.store(h_ptr + row * stride + cols, h, mask=mask)
    tl.store(p_ptr + row * stride + cols, p, mask=mask)


def _recurrence_reference(a, b, reverse):
    a, b = torch.sigmoid(a), b * b
    if reverse:
        a, b = a.flip(-1), b.flip(-1)
    h, p, hs, ps = torch.zeros_like(a[:, 0]), torch.ones_like(a[:, 0]), [], []
    for k in range(a.shape[-1]):
        h, p = a[:, k] * h + b[:, k], p * a[:, k]
        hs.append(h)
        ps.append(p)
    h, p = torch.stack(hs, -1), torch.stack(ps, -1)
    return (h.flip(-1), p.flip(-1)) if reverse else (h, p)


@check("linear_recurrence_scan")
def _():
    """tl.associative_scan with the affine-map combiner: a first-order linear
    recurrence, forward and reverse, with a masked tail, against a loop in torch."""
    rows, cols = 5, 43
    for reverse in (False, True):
        a = randn(rows, cols) * 2
        a[0, 7] = -30.0  # sigmoid(a) = 1e-13: the recurrence all but restarts
        b = randn(rows, cols)

        def reference(a_ptr, b_ptr):
            h, p = _recurrence_reference(a_ptr, b_ptr, reverse)
            return {"h_ptr": h, "p_ptr": p}

        kernel_gradients(recurrence_kernel, (rows,), {"a_ptr": a, "b_ptr": b},
                         {"h_ptr": torch.empty(rows, cols), "p_ptr": torch.empty(rows, cols)},
                         {"stride": cols, "n_cols": cols}, {"BLOCK": 64, "REVERSE": reverse},
                         reference, rtol=1e-4, atol=1e-5)


INTEGER_TTIR = """
module {
  tt.func private @mix(%x: tensor<64xi32>, %y: tensor<64xi32>) -> tensor<64xi32> {
    %0 = arith.xori %x, %y : tensor<64xi32>
    %1 = arith.shli %0, %y : tensor<64xi32>
    tt.return %1 : tensor<64xi32>
  }
  tt.func public @integers(%a_ptr: !tt.ptr<i32>, %b_ptr: !tt.ptr<i32>, %o_ptr: !tt.ptr<i32>,
                           %f_ptr: !tt.ptr<f32>, %w_ptr: !tt.ptr<i64>) {
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %c3 = arith.constant dense<3> : tensor<64xi32>
    %c7 = arith.constant dense<7> : tensor<64xi32>
    %c64 = arith.constant dense<64> : tensor<64xi32>
    %ap = tt.splat %a_ptr : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
    %ap1 = tt.addptr %ap, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    %a = tt.load %ap1 : tensor<64x!tt.ptr<i32>>
    %bp = tt.splat %b_ptr : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
    %bp1 = tt.addptr %bp, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    %b = tt.load %bp1 : tensor<64x!tt.ptr<i32>>
    %v0 = arith.divui %a, %b : tensor<64xi32>
    %v1 = arith.remui %a, %b : tensor<64xi32>
    %v2 = arith.shrui %a, %c3 : tensor<64xi32>
    %p3 = arith.cmpi ult, %a, %b : tensor<64xi32>
    %v3 = arith.extui %p3 : tensor<64xi1> to tensor<64xi32>
    %v4 = arith.maxui %a, %b : tensor<64xi32>
    %v5 = arith.minui %a, %b : tensor<64xi32>
    %v6 = arith.divsi %a, %b : tensor<64xi32>
    %v7 = arith.remsi %a, %b : tensor<64xi32>
    %v8 = arith.shrsi %a, %c3 : tensor<64xi32>
    %v9 = tt.mulhiui %a, %b : tensor<64xi32>
    %p10 = arith.cmpi uge, %a, %b : tensor<64xi32>
    %v10 = arith.select %p10, %a, %b : tensor<64xi1>, tensor<64xi32>
    %t11 = arith.trunci %a : tensor<64xi32> to tensor<64xi1>
    %v11 = arith.extsi %t11 : tensor<64xi1> to tensor<64xi32>
    %v12 = tt.call @mix(%a, %c7) : (tensor<64xi32>, tensor<64xi32>) -> tensor<64xi32>
    %results = tt.splat %o_ptr : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
    %o0 = tt.addptr %results, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o0, %v0 : tensor<64x!tt.ptr<i32>>
    %o1 = tt.addptr %o0, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o1, %v1 : tensor<64x!tt.ptr<i32>>
    %o2 = tt.addptr %o1, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o2, %v2 : tensor<64x!tt.ptr<i32>>
    %o3 = tt.addptr %o2, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o3, %v3 : tensor<64x!tt.ptr<i32>>
    %o4 = tt.addptr %o3, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o4, %v4 : tensor<64x!tt.ptr<i32>>
    %o5 = tt.addptr %o4, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o5, %v5 : tensor<64x!tt.ptr<i32>>
    %o6 = tt.addptr %o5, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o6, %v6 : tensor<64x!tt.ptr<i32>>
    %o7 = tt.addptr %o6, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o7, %v7 : tensor<64x!tt.ptr<i32>>
    %o8 = tt.addptr %o7, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o8, %v8 : tensor<64x!tt.ptr<i32>>
    %o9 = tt.addptr %o8, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o9, %v9 : tensor<64x!tt.ptr<i32>>
    %o10 = tt.addptr %o9, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o10, %v10 : tensor<64x!tt.ptr<i32>>
    %o11 = tt.addptr %o10, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o11, %v11 : tensor<64x!tt.ptr<i32>>
    %o12 = tt.addptr %o11, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o12, %v12 : tensor<64x!tt.ptr<i32>>
    %f = arith.uitofp %a : tensor<64xi32> to tensor<64xf32>
    %fp = tt.splat %f_ptr : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %fp1 = tt.addptr %fp, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %fp1, %f : tensor<64x!tt.ptr<f32>>
    %w = arith.extui %a : tensor<64xi32> to tensor<64xi64>
    %wp = tt.splat %w_ptr : !tt.ptr<i64> -> tensor<64x!tt.ptr<i64>>
    %wp1 = tt.addptr %wp, %r : tensor<64x!tt.ptr<i64>>, tensor<64xi32>
    tt.store %wp1, %w : tensor<64x!tt.ptr<i64>>
    tt.return
  }
}
"""


def integer_reference(a, b):
    """What INTEGER_TTIR stores, computed with numpy's fixed-width integers."""
    import numpy as np

    a, b = a.numpy(), b.numpy()
    ua, ub = a.view(np.uint32), b.view(np.uint32)
    c_div = (np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))) * np.sign(a) * np.sign(b)
    c_rem = a.astype(np.int64) - c_div * b.astype(np.int64)
    rows = [ua // ub, ua % ub, ua >> 3, (ua < ub).astype(np.uint32), np.maximum(ua, ub),
            np.minimum(ua, ub), c_div, c_rem, a >> 3,
            ((ua.astype(np.uint64) * ub.astype(np.uint64)) >> 32),
            np.where(ua >= ub, a, b), -(a & 1), (a ^ 7) << 7]
    out = np.stack([np.asarray(r).astype(np.int64).astype(np.uint32).view(np.int32)
                    for r in rows])
    return torch.from_numpy(out), torch.from_numpy(ua.astype(np.float32)), \
        torch.from_numpy(ua.astype(np.int64))


@check("integer_semantics")
def _():
    from tritonad import _render

    source = _render.render(INTEGER_TTIR, "integers")
    kernel = _render.load(source)
    a = torch.randint(-2**31, 2**31, (64,), dtype=torch.int64, generator=GEN).to(torch.int32)
    b = torch.randint(-2**31, 2**31, (64,), dtype=torch.int64, generator=GEN).to(torch.int32)
    b[b == 0] = 1
    a[:4] = torch.tensor([-7, 7, -2**31, 5], dtype=torch.int32)
    b[:4] = torch.tensor([2, -2, -1, 9], dtype=torch.int32)
    out = torch.zeros(13, 64, dtype=torch.int32)
    floats = torch.zeros(64)
    wide = torch.zeros(64, dtype=torch.int64)
    kernel[(1,)](a, b, out, floats, wide)
    want, want_floats, want_wide = integer_reference(a, b)
    names = ["divui", "remui", "shrui", "cmpi ult", "maxui", "minui", "divsi", "remsi",
             "shrsi", "mulhiui", "cmpi uge + select", "trunci i1 + extsi", "tt.call"]
    for row, name in enumerate(names):
        bad = (out[row] != want[row]).nonzero()
        assert not len(bad), f"{name}: a={a[bad[0]].item()} b={b[bad[0]].item()} gives " \
                             f"{out[row, bad[0]].item()}, expected {want[row, bad[0]].item()}\n{source}"
    assert torch.equal(floats, want_floats), "uitofp"
    assert torch.equal(wide, want_wide), "extui"



FLOAT_PREDICATES = ["oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge",
                    "ult", "ule", "une", "uno"]


def float_ttir() -> str:
    """Every float predicate (those Triton has no operator for are composed),
    negf (the sign of zero), a half-precision division and remainder."""
    lines = ["module {",
             "  tt.func public @floats(%a_ptr: !tt.ptr<f32>, %b_ptr: !tt.ptr<f32>, "
             "%o_ptr: !tt.ptr<i8>, %n_ptr: !tt.ptr<f32>, %h_ptr: !tt.ptr<f16>) {",
             "    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>",
             "    %c64 = arith.constant dense<64> : tensor<64xi32>"]
    for name, ty in (("a", "f32"), ("b", "f32")):
        lines += [f"    %{name}p = tt.splat %{name}_ptr : !tt.ptr<{ty}> -> tensor<64x!tt.ptr<{ty}>>",
                  f"    %{name}q = tt.addptr %{name}p, %r : tensor<64x!tt.ptr<{ty}>>, tensor<64xi32>",
                  f"    %{name} = tt.load %{name}q : tensor<64x!tt.ptr<{ty}>>"]
    lines += ["    %op = tt.splat %o_ptr : !tt.ptr<i8> -> tensor<64x!tt.ptr<i8>>",
              "    %o0 = tt.addptr %op, %r : tensor<64x!tt.ptr<i8>>, tensor<64xi32>"]
    for i, predicate in enumerate(FLOAT_PREDICATES):
        lines += [f"    %p{i} = arith.cmpf {predicate}, %a, %b : tensor<64xf32>",
                  f"    %e{i} = arith.extui %p{i} : tensor<64xi1> to tensor<64xi8>",
                  f"    tt.store %o{i}, %e{i} : tensor<64x!tt.ptr<i8>>",
                  f"    %o{i + 1} = tt.addptr %o{i}, %c64 : tensor<64x!tt.ptr<i8>>, tensor<64xi32>"]
    lines += ["    %neg = arith.negf %a : tensor<64xf32>",
              "    %np = tt.splat %n_ptr : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>",
              "    %nq = tt.addptr %np, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>",
              "    tt.store %nq, %neg : tensor<64x!tt.ptr<f32>>",
              "    %ha = arith.truncf %a : tensor<64xf32> to tensor<64xf16>",
              "    %hb = arith.truncf %b : tensor<64xf32> to tensor<64xf16>",
              "    %hd = arith.divf %ha, %hb : tensor<64xf16>",
              "    %hr = arith.remf %ha, %hb : tensor<64xf16>",
              "    %hp = tt.splat %h_ptr : !tt.ptr<f16> -> tensor<64x!tt.ptr<f16>>",
              "    %hq = tt.addptr %hp, %r : tensor<64x!tt.ptr<f16>>, tensor<64xi32>",
              "    tt.store %hq, %hd : tensor<64x!tt.ptr<f16>>",
              "    %hq2 = tt.addptr %hq, %c64 : tensor<64x!tt.ptr<f16>>, tensor<64xi32>",
              "    tt.store %hq2, %hr : tensor<64x!tt.ptr<f16>>",
              "    tt.return", "  }", "}"]
    return "\n".join(lines) + "\n"


@check("float_semantics")
def _():
    import numpy as np

    from tritonad import _render

    source = _render.render(float_ttir(), "floats")
    kernel = _render.load(source)
    a, b = randn(64), randn(64)
    nan = float("nan")
    a[:8] = torch.tensor([nan, 1.0, nan, 0.0, -0.0, 2.0, 3.0, -1.0])
    b[:8] = torch.tensor([1.0, nan, nan, 0.0, 0.0, 2.0, -3.0, 5.0])
    flags = torch.zeros(len(FLOAT_PREDICATES), 64, dtype=torch.int8)
    negated = torch.zeros(64)
    halves = torch.zeros(2, 64, dtype=torch.float16)
    kernel[(1,)](a, b, flags, negated, halves)
    x, y = a.numpy(), b.numpy()
    unordered = np.isnan(x) | np.isnan(y)
    ordered = {"oeq": x == y, "ogt": x > y, "oge": x >= y, "olt": x < y, "ole": x <= y,
               "one": (x < y) | (x > y), "ord": ~unordered}
    for row, predicate in enumerate(FLOAT_PREDICATES):
        if predicate in ordered:
            want = ordered[predicate] & ~unordered
        elif predicate == "une":
            want = ~(x == y)
        elif predicate == "uno":
            want = unordered
        else:
            want = ordered["o" + predicate[1:]] | unordered
        got = flags[row].numpy().astype(bool)
        assert (got == want).all(), f"cmpf {predicate}: a={x[got != want][0]} " \
                                    f"b={y[got != want][0]}\n{source}"
    # (x * -1.0: the sign of a zero flips as with negf; a NaN stays a NaN)
    numbers = ~np.isnan(x)
    assert np.array_equal(np.signbit(negated.numpy())[numbers], ~np.signbit(x)[numbers]), \
        "negf: the sign of zero"
    assert np.isnan(negated.numpy()[~numbers]).all(), "negf of NaN"
    assert torch.equal(negated[8:], -a[8:]), "negf"
    ha, hb = x.astype(np.float16), y.astype(np.float16)
    with np.errstate(all="ignore"):
        want_div, want_rem = ha / hb, np.fmod(ha, hb)
    for got, want, name in ((halves[0], want_div, "f16 divf"), (halves[1], want_rem, "f16 remf")):
        assert np.array_equal(got.numpy(), want, equal_nan=True), name


@check("quickstart_examples")
def _():
    import re
    import runpy
    import tempfile

    path = os.path.join(os.path.dirname(_HERE), "docs", "quickstart.md")
    with open(path) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) >= 5, path
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "quickstart.py")
        with open(script, "w") as f:
            f.write("\n".join(blocks))
        runpy.run_path(script, run_name="__main__")


@triton.jit
def _cube(x):
    return x * x * x


_cube_vjp = tritonad.grad(_cube)


@triton.jit
def cube_slope_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, _cube_vjp(x, tl.full((BLOCK,), 1.0, tl.float32)), mask=mask)


@check("kernel_calling_a_vjp")
def _():
    # y = d(x^3)/dx = 3x^2 through the VJP, then the kernel's backward: 6x
    n = 101
    x = randn(n)
    kernel_gradients(cube_slope_kernel, (triton.cdiv(n, 32),), {"x_ptr": x},
                     {"y_ptr": torch.empty(n)}, {"n": n}, {"BLOCK": 32},
                     lambda x_ptr: {"y_ptr": 3 * x_ptr * x_ptr})


# ---------------------------------------------------------------------------
# Stabilizers (cpp/lib/Analysis/ShiftInvariance.cpp), differentially: random
# row kernels around a max subtracted before exponentiating, some whose
# results do not depend on the max (a stabilizer: held constant, its loop
# reversed once with the final max) and some that do (a wrong claim of
# invariance would drop a gradient). Gradients against torch in fp64, which
# differentiates through the max as written; the schedule must say
# "stabilizer" exactly for the invariant ones.
# ---------------------------------------------------------------------------

_STABILIZER_KERNEL = """
def {name}(X, W, Z, Y, C, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.full([], float("-inf"), tl.float32)
    s = tl.zeros([], dtype=tl.float32)
    acc = tl.zeros([], dtype=tl.float32)
    for off in range(0, C, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < C
        x = tl.load(X + row * C + cols, mask=mask, other=-1e30)
        w = tl.load(W + row * C + cols, mask=mask, other=0.0)
        m_new = tl.maximum(m, tl.max(x, 0))
        alpha = {alpha}
        p = tl.where(mask, {p}, 0.0)
        s = s * alpha + tl.sum(p, 0){s_extra}
        acc = acc * alpha + tl.sum(p * w, 0)
        m = m_new
    tl.store(Z + row, {out})
{tile}"""

_STABILIZER_TILE = """    cols = tl.arange(0, BLOCK)
    mask = cols < C
    x = tl.load(X + row * C + cols, mask=mask, other=-1e30)
    mt = tl.max(x, 0)
    e = tl.where(mask, {e}, 0.0)
    tl.store(Y + row * C + cols, {tile_out}, mask=mask)
"""


def _stabilizer_case(rng, invariant):
    """(kernel source pieces, torch reference, whether the loop's max and the
    tile's max only stabilize); `invariant` draws only loops whose results do
    not depend on their max, else anything."""
    base = rng.choice(["e", "2"])
    other = "2" if base == "e" else "e"
    exp = {"e": "tl.exp", "2": "tl.math.exp2"}
    log = {"e": "tl.log", "2": "tl.log2"}
    texp = {"e": torch.exp, "2": torch.exp2}
    tlog = {"e": torch.log, "2": torch.log2}
    alpha_base = base if invariant or rng.random() < 0.8 else other
    p_form = "plain" if invariant else rng.choice(["plain"] * 2 + ["scaled", "times_shift"])
    s_extra = not invariant and rng.random() < 0.2
    outs = {
        "ratio": ("acc / s", lambda m, s, acc: acc / s, True),
        "lse": (f"m + {log[base]}(s)", lambda m, s, acc: m + tlog[base](s), True),
        "both": (f"(m + {log[base]}(s)) * 0.5 + acc / s",
                 lambda m, s, acc: (m + tlog[base](s)) * 0.5 + acc / s, True),
        "log_only": (f"{log[base]}(s)", lambda m, s, acc: tlog[base](s), False),
        "unnormalized": ("acc", lambda m, s, acc: acc, False),
        "other_log": (f"m + {log[other]}(s)", lambda m, s, acc: m + tlog[other](s), False),
        "plus_max": ("acc / s + 0.3 * m", lambda m, s, acc: acc / s + 0.3 * m, False),
    }
    out_name = rng.choice(sorted(k for k in outs if outs[k][2] or not invariant))
    out_src, out_ref, out_invariant = outs[out_name]
    p_src = {"plain": f"{exp[base]}(x - m_new)", "scaled": f"{exp[base]}((x - m_new) * 0.5)",
             "times_shift": f"{exp[base]}(x - m_new) * (x - m_new + 4.0)"}[p_form]
    loop_invariant = (out_invariant and alpha_base == base and p_form == "plain"
                      and not s_extra)
    tiles = {
        "softmax": (f"e / tl.sum(e, 0)", True),
        "exp_only": ("e", False),
        "log_softmax": (f"x - mt - {log[base]}(tl.sum(e, 0))", True),
        "shifted_by_half": ("e / tl.sum(e, 0) + mt * 0.0 + (x - mt) * 0.5", False),
    }
    tile_name = rng.choice(sorted(tiles) + [None])
    pieces = dict(alpha=f"{exp[alpha_base]}(m - m_new)", p=p_src,
                  s_extra=" + 0.25" if s_extra else "", out=out_src, tile="")
    if tile_name:
        pieces["tile"] = _STABILIZER_TILE.format(e=f"{exp[base]}(x - mt)",
                                                 tile_out=tiles[tile_name][0])

    def reference(x, w, C, BLOCK):
        # x, w: [R, C] float64 leaves; the kernel's arithmetic, block by block.
        R = x.shape[0]
        pad = -C % BLOCK
        xp = torch.cat([x, torch.full((R, pad), -1e30, dtype=x.dtype)], 1)
        wp = torch.cat([w, torch.zeros((R, pad), dtype=w.dtype)], 1)
        m = torch.full((R,), float("-inf"), dtype=x.dtype)
        s = torch.zeros(R, dtype=x.dtype)
        acc = torch.zeros(R, dtype=x.dtype)
        for off in range(0, C, BLOCK):
            xb, wb = xp[:, off:off + BLOCK], wp[:, off:off + BLOCK]
            mask = (torch.arange(off, off + BLOCK) < C)[None, :]
            m_new = torch.maximum(m, xb.max(1).values)
            alpha = texp[alpha_base](m - m_new)
            shift = xb - m_new[:, None]
            p = {"plain": lambda: texp[base](shift), "scaled": lambda: texp[base](shift * 0.5),
                 "times_shift": lambda: texp[base](shift) * (shift + 4.0)}[p_form]()
            p = torch.where(mask, p, torch.zeros_like(p))
            s = s * alpha + p.sum(1) + (0.25 if s_extra else 0.0)
            acc = acc * alpha + (p * torch.where(mask, wb, torch.zeros_like(wb))).sum(1)
            m = m_new
        result = {"Z": out_ref(m, s, acc)}
        if tile_name:
            mt = x.max(1, keepdim=True).values
            e = texp[base](x - mt)
            result["Y"] = {"softmax": lambda: e / e.sum(1, keepdim=True),
                           "exp_only": lambda: e,
                           "log_softmax": lambda: x - mt - tlog[base](e.sum(1, keepdim=True)),
                           "shifted_by_half": lambda: e / e.sum(1, keepdim=True)
                           + (x - mt) * 0.5}[tile_name]()
        return result

    tile_invariant = tiles[tile_name][1] if tile_name else None
    label = (f"base={base} alpha={alpha_base} p={p_form} s_extra={s_extra} out={out_name} "
             f"tile={tile_name}")
    return pieces, reference, loop_invariant, tile_invariant, label


@check("stabilizer_random_kernels")
def _():
    import random
    rng = random.Random(int(torch.randint(0, 2 ** 31, (1,), generator=GEN)))
    seen = {True: 0, False: 0}
    for case in range(24):
        pieces, reference, loop_invariant, tile_invariant, label = _stabilizer_case(
            rng, invariant=case % 3 == 0)
        name = f"stabilizer_case_{case}"
        kernel = jit_from_source(_STABILIZER_KERNEL.format(name=name, **pieces), name,
                                 {"tl": tl})
        R, C = 3, rng.choice([23, 37, 50])
        BLOCK = 16 if not pieces["tile"] else 64
        x, w = randn(R, C) * 2, randn(R, C)
        outputs, unused = {"Z": torch.empty(R)}, {}
        if pieces["tile"]:
            outputs["Y"] = torch.empty(R, C)
        else:
            unused = {"Y": torch.empty(1)}  # no store through it: no shadow needed
        try:
            bwd = kernel_gradients(
                kernel, (R,), {"X": x, "W": w}, outputs, {"C": C, **unused}, {"BLOCK": BLOCK},
                lambda X, W: reference(X, W, C, BLOCK), rtol=1e-4, atol=1e-5)
        except Exception as error:
            raise AssertionError(f"case {case} ({label}): {error}") from error
        schedule = bwd.schedule()
        loop_note = [line for line in schedule.splitlines() if line.startswith("loop ")]
        stabilized = bool(loop_note) and "only stabilizes exponentials" in loop_note[0]
        assert stabilized == loop_invariant, f"case {case} ({label}):\n{schedule}"
        seen[loop_invariant] += 1
        if tile_invariant is not None:
            lines = [line for line in schedule.splitlines()
                     if line.startswith("stabilizer at ") and "a loop's" not in line]
            # the tile's max, and the max of each block inside the loop when the
            # loop's max is one
            tile_lines = [line for line in lines if f":{_line_of(kernel, 'mt = ')}:" in line]
            assert bool(tile_lines) == tile_invariant, f"case {case} ({label}):\n{schedule}"
    assert seen[True] and seen[False], seen


def _line_of(kernel, text):
    """The line of the kernel's (generated) source that contains `text`."""
    source = linecache.getlines(kernel.fn.__code__.co_filename)
    for number, line in enumerate(source, 1):
        if text in line:
            return number
    raise AssertionError(text)


# ---------------------------------------------------------------------------
# Loop tapes: a loop carrying more than accumulations and stabilizers (a
# nonlinear recurrence, a stored per-lane running max, an integer count, a
# boolean flag) keeps each iteration's state on the launcher's tape.
# ---------------------------------------------------------------------------

@triton.jit
def tape_recurrence(X, OUT, MX, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    h = tl.zeros([BLOCK], dtype=tl.float32)
    m = tl.full([BLOCK], -1e30, tl.float32)
    flag = lanes < 0
    count = 0
    for off in range(0, N, BLOCK):
        cols = off + lanes
        mask = cols < N
        x = tl.load(X + row * N + cols, mask=mask, other=0.0)
        h = tl.sin(h) * 0.5 + x
        m = tl.maximum(m, tl.where(mask, x, -1e30))
        flag = flag | (x > 1.0)
        count += 1
    scale = tl.where(flag, 2.0, 1.0) * count
    tl.store(OUT + row, tl.sum(h * scale, 0))
    tl.store(MX + row * BLOCK + lanes, m)


@check("tape_recurrence_and_stored_max")
def _():
    R, N, BLOCK = 3, 53, 16

    def reference(X):
        blocks = -(-N // BLOCK)
        xp = torch.cat([X, torch.zeros(R, blocks * BLOCK - N, dtype=X.dtype)], 1)
        h = torch.zeros(R, BLOCK, dtype=X.dtype)
        m = torch.full((R, BLOCK), -1e30, dtype=X.dtype)
        flag = torch.zeros(R, BLOCK, dtype=torch.bool)
        for b in range(blocks):
            x = xp[:, b * BLOCK:(b + 1) * BLOCK]
            mask = (torch.arange(b * BLOCK, (b + 1) * BLOCK) < N)[None, :]
            h = torch.sin(h) * 0.5 + x
            m = torch.maximum(m, torch.where(mask, x, torch.full_like(x, -1e30)))
            flag = flag | (x > 1.0)
        scale = torch.where(flag, 2.0, 1.0).to(X.dtype) * blocks
        return {"OUT": (h * scale).sum(1), "MX": m}

    bwd = kernel_gradients(tape_recurrence, (R,), {"X": randn(R, N)},
                           {"OUT": torch.empty(R), "MX": torch.empty(R, BLOCK)},
                           {"N": N}, {"BLOCK": BLOCK}, reference)
    schedule = bwd.schedule()
    assert "tapes each iteration's carried state" in schedule, schedule
    (tape,) = bwd.tapes()
    # h, m (16 floats each), flag (16 bytes), count (one i32, padded to 16)
    assert tape[1] == 64 + 64 + 16 + 16, tape
    # A tape of 3 programs * 4 iterations * 160 bytes = 1920 bytes. Under a
    # smaller budget it keeps every 2nd (1000) or every 4th (500) state and
    # replays the rest; with not even one state per program (400), or refused,
    # the loop is replayed from its start: the same gradients.
    for option, budget, taped in ((None, "1000", True), (None, "500", True),
                                  (None, "400", False), (False, None, False)):
        os.environ.pop("TRITONAD_TAPE_BUDGET", None)
        if budget is not None:
            os.environ["TRITONAD_TAPE_BUDGET"] = budget
        try:
            bwd = kernel_gradients(tape_recurrence, (R,), {"X": randn(R, N)},
                                   {"OUT": torch.empty(R), "MX": torch.empty(R, BLOCK)},
                                   {"N": N}, {"BLOCK": BLOCK}, reference, tape=option)
        finally:
            os.environ.pop("TRITONAD_TAPE_BUDGET", None)
        note = "tapes each iteration's carried state" if taped else "n(n-1)/2"
        assert note in bwd.schedule(), (budget, bwd.schedule())


@triton.jit
def tape_nested(X, FLAG, OUT, N, OUTER, BLOCK: tl.constexpr):
    # The taped loop inside a loop inside a data-dependent branch: each reverse
    # of the outer loop's body re-runs the inner forward, which rewrites the tape.
    row = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    if tl.load(FLAG + row) > 0:
        for o in range(0, OUTER):
            h = tl.zeros([BLOCK], dtype=tl.float32)
            for off in range(0, N, BLOCK):
                cols = off + lanes
                x = tl.load(X + row * N + cols, mask=cols < N, other=0.0)
                h = tl.sin(h) * 0.5 + x * (o + 1)
            total += h
    tl.store(OUT + row * BLOCK + lanes, total)


@check("tape_inside_branch_and_loop")
def _():
    R, N, BLOCK, OUTER = 3, 37, 16, 2
    flag = torch.tensor([1, 0, 1], dtype=torch.int32)

    def reference(X):
        blocks = -(-N // BLOCK)
        xp = torch.cat([X, torch.zeros(R, blocks * BLOCK - N, dtype=X.dtype)], 1)
        total = torch.zeros(R, BLOCK, dtype=X.dtype)
        for o in range(OUTER):
            h = torch.zeros(R, BLOCK, dtype=X.dtype)
            for b in range(blocks):
                h = torch.sin(h) * 0.5 + xp[:, b * BLOCK:(b + 1) * BLOCK] * (o + 1)
            total = total + h
        return {"OUT": total * (flag > 0).to(X.dtype)[:, None]}

    bwd = kernel_gradients(tape_nested, (R,), {"X": randn(R, N)}, {"OUT": torch.empty(R, BLOCK)},
                           {"N": N, "OUTER": OUTER, "FLAG": flag}, {"BLOCK": BLOCK}, reference)
    assert "tapes each iteration's carried state" in bwd.schedule(), bwd.schedule()


# ---------------------------------------------------------------------------
# Flash attention in two loops (the off-diagonal key blocks, then the diagonal
# ones, masked), threading m, l and acc from one to the other, l starting at 1
# as in Triton's tutorial: the two running maxima are one stabilizer family,
# and both loops are reversed with the family's final max.
# ---------------------------------------------------------------------------

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


@check("two_stage_attention_is_one_stabilizer_family")
def _():
    L, D, BLOCK = 45, 16, 16
    scale = 0.25
    log2e = 1.4426950408889634

    def reference(Q, K, V):
        scores = (Q @ K.T) * scale * log2e  # in log2 units, as the kernel
        causal = torch.ones(L, L, dtype=torch.bool).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        lse2 = torch.logsumexp(scores / log2e, -1) * log2e
        return {"O": torch.softmax(scores / log2e, -1) @ V, "M": lse2}

    # With l starting from a loaded value the family is refused (its gradient
    # would pass through the first iteration's rescaling by 0 turned into 1):
    # both loops are replayed, and the loaded value gets no gradient.
    for loaded in (False, True):
        bwd = kernel_gradients(
            two_stage_attention, (triton.cdiv(L, BLOCK),),
            {"Q": randn(L, D), "K": randn(L, D), "V": randn(L, D), "L0": randn(1).abs() + 1},
            {"O": torch.empty(L, D), "M": torch.empty(L)},
            {"seq_len": L, "qk_scale": scale * log2e},
            {"BLOCK_M": BLOCK, "BLOCK_N": BLOCK, "HEAD_DIM": D, "LOADED_L": loaded},
            lambda Q, K, V, L0: reference(Q, K, V), rtol=1e-4, atol=1e-4,
            pointers=("Q", "K", "V", "O", "M", "L0"))  # (loads in a helper the interpreter hides)
        notes = [line for line in bwd.schedule().splitlines() if line.startswith("loop ")]
        stabilized = [("only stabilizes exponentials" in note) for note in notes]
        assert stabilized == [not loaded] * 2, bwd.schedule()


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


def _scalar_index_in_interpreter():
    """Triton 3.6's interpreter turns a scalar into a loop bound with
    int(ndarray of shape (1,)), which numpy 2.4 refuses: a forward whose loop
    bounds depend on the program id (run as the user wrote it, by
    tritonad.autograd) fails in range() before tritonad is involved. Patched
    for the checks that launch such a forward."""
    import numpy as np
    from triton.runtime import interpreter

    original = interpreter._patch_lang_tensor
    if getattr(original, "tritonad_scalar_index", False) or \
            tuple(int(x) for x in np.__version__.split(".")[:2]) < (2, 4):
        return

    def patched(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))
    patched.tritonad_scalar_index = True
    interpreter._patch_lang_tensor = patched


@check("two_loop_attention_deterministic")
def _():
    _scalar_index_in_interpreter()
    for advance, (length, block_m, block_n) in ((False, (45, 16, 16)), (True, (53, 32, 16)),
                                                (False, (70, 32, 16)), (True, (16, 16, 16))):
        bwd, _ = two_loop_attention_grads(length, 2, advance, block_m, block_n)
        lines = {line.split(": ", 1)[0]: line for line in bwd.schedule().splitlines()}
        for name in ("K", "V"):
            assert lines[name].count("re-parallelized (programs of its own") == 2, lines[name]
            assert "launch 2 of the parts" in lines[name], lines[name]
            assert "atomic (" not in lines[name], lines[name]


# ---------------------------------------------------------------------------
# Re-parallelized gradients: matmul-class kernels whose dA/dB tiles are shared
# by a row/column of programs get programs of their own (cpp/lib/AutoDiff/
# Regrid.cpp), grouped on the host (python/tritonad/_regrid.py)
# ---------------------------------------------------------------------------

_BIASED = []


def biased_matmul_kernel():
    """The corpus's batched matmul with a scaled, biased epilogue (c = 0.5 * a @ b
    + bias[n]): dC * 0.5 feeds the re-parallelized dA/dB; the bias's gradient
    (a column sum every row of programs adds to) stays in the forward's
    schedule, which runs beside them."""
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


def _lines_of(schedule):
    return dict(line.split(": ", 1) for line in schedule.splitlines() if ": " in line)


def _regridded(schedule, *names):
    lines = _lines_of(schedule)
    for name in names:
        assert lines[name].startswith("re-parallelized"), schedule


@check("regrid_matmul_random")
def _():
    """Random sizes, tiles, group sizes and operand layouts (transposed views
    included) for the tutorial's grouped matmul, a batched 3-D-grid one, and
    the batched one with its n tiles in a permuted program order (the launch
    then reads each member's program id instead of computing its values):
    gradients against fp64 torch (tl.dot of fp32 is tf32: tolerances for an
    11-bit mantissa over K <= 70); the schedule must say re-parallelized."""
    import inspect

    from corpus.kernels import batched_matmul_kernel, matmul_kernel
    from tritonad import _regrid

    source = inspect.getsource(batched_matmul_kernel.fn).replace("@triton.jit\n", "")
    source = source.replace("def batched_matmul_kernel(", "def permuted_matmul_kernel(")
    source = source.replace("pid_n = tl.program_id(1)", "pid_n = tl.program_id(1)\n"
                            "    pid_n = tl.where((pid_n ^ 1) < tl.cdiv(N, BLOCK_N), pid_n ^ 1, pid_n)")
    permuted = jit_from_source(source, "permuted_matmul_kernel", {"tl": tl, "triton": triton})
    biased = biased_matmul_kernel()
    for case in range(8):
        M, N, K = (int(v) for v in torch.randint(5, 70, (3,), generator=GEN))
        # (64: a contraction deeper than 128 bytes of fp32, summed in passes)
        BM, BN, BK = ((16, 32, 64)[int(v)] for v in torch.randint(0, 3, (3,), generator=GEN))
        transposed = bool(torch.randint(0, 2, (1,), generator=GEN))
        a = randn(K, M).t() if transposed else randn(M, K)
        b = randn(K, N)
        if case % 4 == 3:
            batches = int(torch.randint(1, 3, (1,), generator=GEN))
            a = torch.stack([a] * batches) + randn(batches, M, K)
            b, bias = randn(batches, K, N), randn(N)
            c = torch.empty(batches, M, N)
            bwd = kernel_gradients(
                biased, (triton.cdiv(M, BM), triton.cdiv(N, BN), batches),
                {"a_ptr": a, "b_ptr": b, "bias_ptr": bias}, {"c_ptr": c},
                dict(M=M, N=N, K=K, stride_ab=a.stride(0), stride_am=a.stride(1),
                     stride_ak=a.stride(2), stride_bb=b.stride(0), stride_bk=b.stride(1),
                     stride_bn=b.stride(2), stride_cb=c.stride(0), stride_cm=c.stride(1),
                     stride_cn=c.stride(2)),
                dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK),
                lambda a_ptr, b_ptr, bias_ptr: {"c_ptr": 0.5 * (a_ptr @ b_ptr) + bias_ptr},
                rtol=1e-2, atol=2e-2)
            _regridded(bwd.schedule(), "a_ptr", "b_ptr")
            assert "re-parallelized" not in _lines_of(bwd.schedule())["bias_ptr"]
            assert int(_regrid.last_table[0]) > 0  # (the forward's programs ran too)
            continue
        if case % 4 == 0:
            group = int(torch.randint(1, 4, (1,), generator=GEN))
            c = torch.empty(M, N)
            grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
            bwd = kernel_gradients(
                matmul_kernel, grid, {"a_ptr": a, "b_ptr": b}, {"c_ptr": c},
                dict(M=M, N=N, K=K, stride_am=a.stride(0), stride_ak=a.stride(1),
                     stride_bk=b.stride(0), stride_bn=b.stride(1), stride_cm=c.stride(0),
                     stride_cn=c.stride(1)),
                dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=group),
                lambda a_ptr, b_ptr: {"c_ptr": a_ptr @ b_ptr}, rtol=1e-2, atol=2e-2)
            expect_affine = True
        else:
            kernel = batched_matmul_kernel if case % 4 == 1 else permuted
            batches = int(torch.randint(1, 4, (1,), generator=GEN))
            a = torch.stack([a] * batches) + randn(batches, M, K)
            b = randn(batches, K, N)
            c = torch.empty(batches, M, N)
            grid = (triton.cdiv(M, BM), triton.cdiv(N, BN), batches)
            bwd = kernel_gradients(
                kernel, grid, {"a_ptr": a, "b_ptr": b}, {"c_ptr": c},
                dict(M=M, N=N, K=K, stride_ab=a.stride(0), stride_am=a.stride(1),
                     stride_ak=a.stride(2), stride_bb=b.stride(0), stride_bk=b.stride(1),
                     stride_bn=b.stride(2), stride_cb=c.stride(0), stride_cm=c.stride(1),
                     stride_cn=c.stride(2)),
                dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK),
                lambda a_ptr, b_ptr: {"c_ptr": a_ptr @ b_ptr}, rtol=1e-2, atol=2e-2)
            # (permuted n tiles: dA's members are not affine once there are 3 or more)
            expect_affine = kernel is batched_matmul_kernel or triton.cdiv(N, BN) < 3
        _regridded(bwd.schedule(), "a_ptr", "b_ptr")
        lines = _lines_of(bwd.schedule())
        for name, contraction in (("a_ptr", BN), ("b_ptr", BM)):
            assert ("in 2 passes of 32" in lines[name]) == (contraction == 64), (case, lines)
        parts = _regrid.describe(_regrid.last_table)
        assert len(parts) == 2 and all(p["programs"] > 0 for p in parts), parts
        assert all(p["affine"] for p in parts) == expect_affine, (case, parts)
        # (each element of dA and dB is reached once: plain writes, no atomics)
        assert all(p["plain"] for p in parts), (case, parts)
    def small_matmul(M, N, K, programs, **options):
        a, b, c = randn(M, K), randn(K, N), torch.empty(M, N)
        return kernel_gradients(
            matmul_kernel, (programs,), {"a_ptr": a, "b_ptr": b}, {"c_ptr": c},
            dict(M=M, N=N, K=K, stride_am=a.stride(0), stride_ak=a.stride(1),
                 stride_bk=b.stride(0), stride_bn=b.stride(1), stride_cm=c.stride(0),
                 stride_cn=c.stride(1)),
            dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2),
            lambda a_ptr, b_ptr: {"c_ptr": a_ptr @ b_ptr}, rtol=1e-2, atol=2e-2, **options)

    # Where the launch cannot show each element reached once, the parts add
    # with atomics: the same gradients.
    reaches = _regrid._reaches_each_once
    _regrid._reaches_each_once = lambda *args: False
    _regrid._CACHE.clear()
    try:
        small_matmul(37, 45, 29, 3 * 3)
        assert not any(p["plain"] for p in _regrid.describe(_regrid.last_table))
    finally:
        _regrid._reaches_each_once = reaches
        _regrid._CACHE.clear()
    # Shadows to be overwritten (accumulate=False, as tritonad.autograd passes
    # them): the parts store their sums.
    bwd = small_matmul(40, 21, 33, 3 * 2, accumulate=False)
    assert "stores where the launch finds each element reached once" in bwd.schedule()
    assert all(p["plain"] for p in _regrid.describe(_regrid.last_table))
    # The atomic mode keeps the forward's schedule.
    bwd = tritonad.grad(matmul_kernel, mode="atomic")
    a, b, c = randn(20, 30), randn(30, 40), torch.empty(20, 40)
    dc = randn(20, 40)
    da, db = torch.zeros_like(a), torch.zeros_like(b)
    bwd[(2 * 3,)](a, b, c, 20, 40, 30, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                  c.stride(0), c.stride(1), da, db, dc.clone(), BLOCK_M=16, BLOCK_N=16,
                  BLOCK_K=16, GROUP_M=1)
    assert "re-parallelized" not in bwd.schedule()
    assert_close("a (atomic mode)", da, dc.double() @ b.double().t(), 1e-2, 2e-2)


@triton.jit
def _gated_matmul_kernel(a_ptr, b_ptr, g_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
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


@check("regrid_staged_epilogue")
def _():
    """c = (a @ b) * gate: the forward's programs stage dC * gate once into
    scratch, in a launch of their own, and the parts read it (random sizes
    and tiles; gate = g, two loaded tiles, or exp(g)); gradients against
    fp64 torch. Without scratch (tape=False) exp(g) keeps the atomics."""
    from tritonad import _regrid

    for case in range(4):
        exp = case % 2 == 1
        M, N, K = (int(v) for v in torch.randint(5, 60, (3,), generator=GEN))
        BM, BN, BK = ((16, 32)[int(v)] for v in torch.randint(0, 2, (3,), generator=GEN))
        a, b, g, c = randn(M, K), randn(K, N), randn(M, N), torch.empty(M, N)

        def reference(a_ptr, b_ptr, g_ptr):
            return {"c_ptr": (a_ptr @ b_ptr) * (torch.exp(g_ptr) if exp else g_ptr)}
        options = dict(tape=False) if case == 3 else {}
        bwd = kernel_gradients(
            _gated_matmul_kernel, (triton.cdiv(M, BM), triton.cdiv(N, BN)),
            {"a_ptr": a, "b_ptr": b, "g_ptr": g}, {"c_ptr": c},
            dict(M=M, N=N, K=K, stride_am=a.stride(0), stride_ak=a.stride(1),
                 stride_bk=b.stride(0), stride_bn=b.stride(1), stride_cm=c.stride(0),
                 stride_cn=c.stride(1)),
            dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, EXP=exp), reference, rtol=1e-4,
            atol=1e-4, **options)
        lines = _lines_of(bwd.schedule())
        for name in ("a_ptr", "b_ptr"):
            if case == 3:
                assert lines[name].startswith("atomic") and "(exp, erf, ...)" in lines[name], \
                    lines[name]
            else:
                assert lines[name].startswith("re-parallelized") and \
                    "from scratch" in lines[name], lines[name]
        if case != 3:
            assert int(_regrid.last_table[0]) > 0  # (the forward's programs staged the tiles)


def run_in_interpreter(script, out):
    """Runs `script` in a fresh Python under TRITON_INTERPRET=1 (Triton reads it when
    ``@triton.jit`` runs); its main writes {name: {ok, error, seed, seconds}} to `out`,
    which is returned. The seed is TRITONAD_TEST_SEED, or a random one. For the pytest
    fixtures of test_interpret.py and test_loops.py."""
    import pytest

    seed = os.environ.get("TRITONAD_TEST_SEED") or str(int.from_bytes(os.urandom(4), "little"))
    env = {k: v for k, v in os.environ.items() if k not in ("TRITONAD_DUMP",)}
    env["TRITON_INTERPRET"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run([sys.executable, script, str(out), seed],
                          env=env, capture_output=True, text=True, timeout=600)
    if not out.exists():
        pytest.fail(f"the interpreter run crashed (seed {seed}, exit {done.returncode}):\n"
                    f"{done.stderr[-6000:]}")
    return json.loads(out.read_text())


def main(argv, checks=None):
    """Runs `checks` (name -> check; this module's by default) as the command line
    `argv` says; see the module docstring."""
    import argparse

    checks = CHECKS if checks is None else checks
    parser = argparse.ArgumentParser(
        description="Gradient checks in Triton's CPU interpreter (set TRITON_INTERPRET=1).")
    parser.add_argument("out", nargs="?", help="write {name: {ok, error, seed, seconds}} "
                        "here as JSON (default: print a line per check)")
    parser.add_argument("seed", nargs="?", type=int, help="random seed (default: random)")
    parser.add_argument("names", nargs="*", metavar="name", help="checks to run (default: all)")
    args = parser.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET") != "1":
        parser.error("set TRITON_INTERPRET=1 before running the checks")
    unknown = [name for name in args.names if name not in checks]
    if unknown:
        parser.error(f"no check named {', '.join(unknown)}")
    out = args.out
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    wanted = args.names or sorted(checks)
    results = {}
    for name in wanted:
        GEN.manual_seed(seed ^ zlib.crc32(name.encode()))
        torch.manual_seed(seed)
        start = time.perf_counter()
        try:
            checks[name]()
            results[name] = {"ok": True}
        except Exception as error:  # noqa: BLE001  (reported per check)
            results[name] = {"ok": False, "error": f"{type(error).__name__}: {error}\n"
                                                   f"{traceback.format_exc()[-3000:]}"}
        results[name]["seconds"] = round(time.perf_counter() - start, 3)
        results[name]["seed"] = seed
    if out:
        with open(out, "w") as f:
            json.dump(results, f)
    else:
        for name, result in results.items():
            print(("ok  " if result["ok"] else "FAIL") + f" {result['seconds']:6.2f}s {name}")
            if not result["ok"]:
                print("     " + result["error"].replace("\n", "\n     ")[:1500])
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
