"""The elementwise rule table: for each `Case`, a pure @triton.jit function `f`, the
shapes, dtypes and domains of its arguments, the same math in torch (`ref`), and the
ops its derivative must contain; `_build(case_id)` generates the kernel that loads
every argument and one cotangent per output, calls ``tritonad.grad(f)`` and stores
every gradient. test_grad_rules.py runs the cases (PTX on the CPU, numbers on the
GPU); interpret_checks/rules.py runs them in Triton's interpreter.
"""

from __future__ import annotations

import functools
import itertools
import linecache
import zlib
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Tuple

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

import tritonad

M, N = 16, 32  # the default tile: dims differ so transposed/broadcast mistakes show

# ---------------------------------------------------------------------------
# Arguments and their domains
# ---------------------------------------------------------------------------

_SAMPLERS = {
    "any": lambda s, g: torch.randn(s, generator=g),
    # away from 0 (log, sqrt, rsqrt, pow base, divisors)
    "pos": lambda s, g: 0.5 + 2.0 * torch.rand(s, generator=g),
    "nonzero": lambda s, g: torch.where(torch.rand(s, generator=g) < 0.5, -1.0, 1.0)
    * (0.5 + torch.rand(s, generator=g) * 1.5),
    # |x| < 0.9 (asin, acos, atanh)
    "unit": lambda s, g: 1.8 * torch.rand(s, generator=g) - 0.9,
    # |x| < 1.2 (tan)
    "tan": lambda s, g: 2.4 * torch.rand(s, generator=g) - 1.2,
    # x > 1.2 (acosh)
    "gt1": lambda s, g: 1.2 + 2.0 * torch.rand(s, generator=g),
    # cumprod factors: |x| in [0.8, 1.25], random sign -- products stay O(1), never 0
    "near1": lambda s, g: torch.where(torch.rand(s, generator=g) < 0.5, -1.0, 1.0)
    * (0.8 + 0.45 * torch.rand(s, generator=g)),
    # clamp bounds: lo < 0 < hi, so lo < hi always (tl.clamp requires lo <= hi)
    "lo": lambda s, g: -0.1 - torch.rand(s, generator=g),
    "hi": lambda s, g: 0.1 + torch.rand(s, generator=g),
    # many exact ties (a dedicated max-with-ties test)
    "ties": lambda s, g: torch.randint(-2, 3, s, generator=g).float(),
    # wider values for fmod / floor / ceil (several periods; the jumps themselves
    # are hit with probability ~0 and both sides compute them in fp32)
    "wide": lambda s, g: 4.0 * torch.randn(s, generator=g),
    # where exp(-x) and exp(x) overflow fp32 (|x| > 88) in about half the lanes:
    # sigmoid and softplus saturate, their gradients must not
    "saturating": lambda s, g: 120.0 * torch.randn(s, generator=g),
}

_TL_DTYPE = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}


@dataclass(frozen=True)
class Arg:
    shape: Tuple[int, ...]
    dtype: torch.dtype = torch.float32
    domain: str = "any"

    def sample(self, generator: torch.Generator, device: str) -> torch.Tensor:
        return _SAMPLERS[self.domain](self.shape, generator).to(self.dtype).to(device)


def T(*shape, dtype=torch.float32, domain="any") -> Arg:
    return Arg(tuple(shape), dtype, domain)


X2 = T(M, N)  # a 16x32 fp32 tile of randn


@dataclass
class Case:
    id: str
    fn: Callable  # the @triton.jit primal
    args: Sequence[Arg]
    ref: Callable  # the same math on torch tensors; returns a tensor or a tuple
    expect: Sequence[str]  # substrings of f_vjp.derived_ir()
    rtol: float = 1e-5
    atol: float = 1e-5
    marks: Sequence = field(default_factory=tuple)


# ---------------------------------------------------------------------------
# The primal functions (pure, return their outputs)
# ---------------------------------------------------------------------------

# arith
@triton.jit
def f_add(x, y):
    return x + y


@triton.jit
def f_sub(x, y):
    return x - y


@triton.jit
def f_mul(x, y):
    return x * y


@triton.jit
def f_div(x, y):
    return x / y


@triton.jit
def f_neg(x):
    return -x


@triton.jit
def f_rem(x, y):
    return x % y


@triton.jit
def f_maxnum(x, y):
    return tl.maximum(x, y)


@triton.jit
def f_minnum(x, y):
    return tl.minimum(x, y)


@triton.jit
def f_maximum_nan(x, y):
    return tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def f_minimum_nan(x, y):
    return tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def f_where(x, y):
    return tl.where(x > y, x * 2.0, y * y)


@triton.jit
def f_ext_f16(x, y):
    return x.to(tl.float32) * y


@triton.jit
def f_ext_bf16(x, y):
    return x.to(tl.float32) * y


@triton.jit
def f_trunc_f16(x):
    return x.to(tl.float16)


@triton.jit
def f_trunc_bf16(x):
    return x.to(tl.bfloat16)


# math (the ops tl emits: math.exp, math.exp2, math.log, ...)
@triton.jit
def f_exp(x):
    return tl.exp(x)


@triton.jit
def f_exp2(x):
    return tl.exp2(x)


@triton.jit
def f_log(x):
    return tl.log(x)


@triton.jit
def f_log2(x):
    return tl.log2(x)


@triton.jit
def f_sqrt(x):
    return tl.sqrt(x)


@triton.jit
def f_rsqrt(x):
    return tl.rsqrt(x)


@triton.jit
def f_sin(x):
    return tl.sin(x)


@triton.jit
def f_cos(x):
    return tl.cos(x)


@triton.jit
def f_erf(x):
    return tl.erf(x)


@triton.jit
def f_abs(x):
    return tl.abs(x)


@triton.jit
def f_fma(x, y, z):
    return tl.fma(x, y, z)


@triton.jit
def f_floor(x, y):
    return tl.floor(x) * y


@triton.jit
def f_ceil(x, y):
    return tl.ceil(x) * y


@triton.jit
def f_sigmoid(x):
    return tl.sigmoid(x)


@triton.jit
def f_silu(x):
    return x * tl.sigmoid(x)


@triton.jit
def f_sigmoid_by_hand(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def f_softplus_thresholded(x):
    return tl.where(x > 20.0, x, tl.log(1.0 + tl.exp(x)))


@triton.jit
def f_sqrt_rn(x):
    return tl.sqrt_rn(x)


@triton.jit
def f_div_rn(x, y):
    return tl.div_rn(x, y)


@triton.jit
def f_clamp(x, lo, hi):
    return tl.clamp(x, lo, hi)


# libdevice (tt.extern_elementwise)
@triton.jit
def f_ld_tanh(x):
    return libdevice.tanh(x)


@triton.jit
def f_ld_pow(x, y):
    return libdevice.pow(x, y)


@triton.jit
def f_ld_erf(x):
    return libdevice.erf(x)


@triton.jit
def f_ld_erfc(x):
    return libdevice.erfc(x)


@triton.jit
def f_ld_atan(x):
    return libdevice.atan(x)


@triton.jit
def f_ld_asin(x):
    return libdevice.asin(x)


@triton.jit
def f_ld_acos(x):
    return libdevice.acos(x)


@triton.jit
def f_ld_sinh(x):
    return libdevice.sinh(x)


@triton.jit
def f_ld_cosh(x):
    return libdevice.cosh(x)


@triton.jit
def f_ld_asinh(x):
    return libdevice.asinh(x)


@triton.jit
def f_ld_acosh(x):
    return libdevice.acosh(x)


@triton.jit
def f_ld_atanh(x):
    return libdevice.atanh(x)


@triton.jit
def f_ld_exp(x):
    return libdevice.exp(x)


@triton.jit
def f_ld_exp2(x):
    return libdevice.exp2(x)


@triton.jit
def f_ld_exp10(x):
    return libdevice.exp10(x)


@triton.jit
def f_ld_expm1(x):
    return libdevice.expm1(x)


@triton.jit
def f_ld_log(x):
    return libdevice.log(x)


@triton.jit
def f_ld_log2(x):
    return libdevice.log2(x)


@triton.jit
def f_ld_log10(x):
    return libdevice.log10(x)


@triton.jit
def f_ld_log1p(x):
    return libdevice.log1p(x)


@triton.jit
def f_ld_sqrt(x):
    return libdevice.sqrt(x)


@triton.jit
def f_ld_rsqrt(x):
    return libdevice.rsqrt(x)


@triton.jit
def f_ld_sin(x):
    return libdevice.sin(x)


@triton.jit
def f_ld_cos(x):
    return libdevice.cos(x)


@triton.jit
def f_ld_tan(x):
    return libdevice.tan(x)


@triton.jit
def f_ld_abs(x):
    return libdevice.abs(x)


@triton.jit
def f_ld_floor(x, y):
    return libdevice.floor(x) * y


@triton.jit
def f_ld_div_rn(x, y):
    return libdevice.div_rn(x, y)


@triton.jit
def f_ld_fma(x, y, z):
    return libdevice.fma(x, y, z)


# shapes
@triton.jit
def f_splat(s, y):
    return s * y  # the scalar is splat to the tile


@triton.jit
def f_broadcast(x, y):
    return x[:, None] + y[None, :] * 2.0


@triton.jit
def f_broadcast_to(x, w):
    return tl.broadcast_to(x, (16, 32)) * w


@triton.jit
def f_expand_dims(x, w):
    return tl.expand_dims(x, 1) * w


@triton.jit
def f_reshape(x, w):
    return tl.reshape(x, (8, 64)) * w


@triton.jit
def f_trans(x, w):
    return tl.trans(x) * w


@triton.jit
def f_permute(x, w):
    return tl.permute(x, (1, 2, 0)) * w


@triton.jit
def f_join(x, y, w):
    return tl.join(x, y) * w


@triton.jit
def f_split(x):
    a, b = tl.split(x)
    return a, b * b


# dot
@triton.jit
def f_dot_tf32(a, b):
    return tl.dot(a, b)


@triton.jit
def f_dot_ieee(a, b):
    return tl.dot(a, b, input_precision="ieee")


@triton.jit
def f_dot_acc_ieee(a, b, c):
    return tl.dot(a, b, c, input_precision="ieee")


@triton.jit
def f_dot_f16(a, b):
    return tl.dot(a, b)


@triton.jit
def f_dot_bf16(a, b):
    return tl.dot(a, b)


# reductions
@triton.jit
def f_sum0(x):
    return tl.sum(x, axis=0)


@triton.jit
def f_sum1(x):
    return tl.sum(x, axis=1)


@triton.jit
def f_sum_1d(x):
    return tl.sum(x, axis=0)


@triton.jit
def f_sum_all(x):
    return tl.sum(x)


@triton.jit
def f_max0(x):
    return tl.max(x, axis=0)


@triton.jit
def f_max1(x):
    return tl.max(x, axis=1)


@triton.jit
def f_min0(x):
    return tl.min(x, axis=0)


@triton.jit
def f_min1(x):
    return tl.min(x, axis=1)


@triton.jit
def f_argmax_value(x):
    v, i = tl.max(x, 1, return_indices=True)
    return v


@triton.jit
def f_argmin_value(x):
    v, i = tl.min(x, 0, return_indices=True)
    return v


# scans
@triton.jit
def f_cumsum0(x):
    return tl.cumsum(x, axis=0)


@triton.jit
def f_cumsum1_rev(x):
    return tl.cumsum(x, axis=1, reverse=True)


@triton.jit
def f_cumprod1(x):
    return tl.cumprod(x, axis=1)


@triton.jit
def f_cumprod0_rev(x):
    return tl.cumprod(x, axis=0, reverse=True)


@triton.jit
def _mul_combine(a, b):
    return a * b


@triton.jit
def f_prod1(x):
    return tl.reduce(x, 1, _mul_combine)


# ---------------------------------------------------------------------------
# torch references
# ---------------------------------------------------------------------------

def _flip_cumsum(x, dim):
    return torch.flip(torch.cumsum(torch.flip(x, [dim]), dim), [dim])


def _flip_cumprod(x, dim):
    return torch.flip(torch.cumprod(torch.flip(x, [dim]), dim), [dim])


def _matmul_fp32(a, b):
    return a.float() @ b.float()


LD = dict(rtol=1e-4, atol=1e-4)  # libdevice: reference and GPU differ by a few ulp per step
TF32 = dict(rtol=2e-2, atol=5e-2)
IEEE = dict(rtol=1e-4, atol=1e-4)
HALF = dict(rtol=1e-2, atol=1e-2)
BF16 = dict(rtol=2e-2, atol=2e-2)

# tritonad's Python path cleans the derivative up; -g is then spelled 0 - g.
NEG = "arith.subf %cst"

CASES = [
    # --- arith ---------------------------------------------------------------
    Case("addf", f_add, [X2, X2], lambda x, y: x + y, ["tt.return %arg2, %arg2"]),
    Case("subf", f_sub, [X2, X2], lambda x, y: x - y, [NEG]),
    Case("mulf", f_mul, [X2, X2], lambda x, y: x * y, ["arith.mulf"]),
    Case("divf", f_div, [X2, T(M, N, domain="nonzero")], lambda x, y: x / y,
         ["arith.divf", NEG]),
    # `-x` is emitted as 0 - x (arith.subf) by Triton; the rule of negf is in the lit tests
    Case("neg", f_neg, [X2], lambda x: -x, [NEG]),
    Case("remf", f_rem, [T(M, N, domain="wide"), T(M, N, domain="nonzero")],
         lambda x, y: torch.fmod(x, y), ["arith.remf", "arith.subf"]),
    Case("maxnumf", f_maxnum, [X2, X2], torch.maximum, ["arith.cmpf ogt", "arith.cmpf oeq"]),
    Case("minnumf", f_minnum, [X2, X2], torch.minimum, ["arith.cmpf olt", "arith.cmpf oeq"]),
    Case("maximumf", f_maximum_nan, [X2, X2], torch.maximum, ["arith.cmpf ogt", "arith.cmpf oeq"]),
    Case("minimumf", f_minimum_nan, [X2, X2], torch.minimum, ["arith.cmpf olt", "arith.cmpf oeq"]),
    Case("select", f_where, [X2, X2], lambda x, y: torch.where(x > y, x * 2.0, y * y),
         ["arith.select"]),
    Case("extf_f16", f_ext_f16, [T(M, N, dtype=torch.float16), X2],
         lambda x, y: x.float() * y, ["arith.truncf"], **HALF),
    Case("extf_bf16", f_ext_bf16, [T(M, N, dtype=torch.bfloat16), X2],
         lambda x, y: x.float() * y, ["arith.truncf"], **BF16),
    Case("truncf_f16", f_trunc_f16, [X2], lambda x: x.half(), ["arith.extf"]),
    Case("truncf_bf16", f_trunc_bf16, [X2], lambda x: x.bfloat16(),
         ["arith.extf"]),
    # --- math ----------------------------------------------------------------
    Case("exp", f_exp, [X2], torch.exp, ["math.exp"]),
    Case("exp2", f_exp2, [X2], torch.exp2, ["math.exp2", "0.693147"]),
    Case("log", f_log, [T(M, N, domain="pos")], torch.log, ["arith.divf"]),
    Case("log2", f_log2, [T(M, N, domain="pos")], torch.log2, ["0.693147", "arith.divf"]),
    Case("sqrt", f_sqrt, [T(M, N, domain="pos")], torch.sqrt, ["math.sqrt", "5.000000e-01"]),
    Case("rsqrt", f_rsqrt, [T(M, N, domain="pos")], torch.rsqrt, ["math.rsqrt", "-5.000000e-01"]),
    Case("sin", f_sin, [X2], torch.sin, ["math.cos"]),
    Case("cos", f_cos, [X2], torch.cos, ["math.sin", NEG]),
    Case("erf", f_erf, [X2], torch.erf, ["math.exp", "1.12837"]),
    Case("absf", f_abs, [X2], torch.abs, ["arith.select"]),
    Case("fma", f_fma, [X2, X2, X2], lambda x, y, z: x * y + z, ["arith.mulf"]),
    Case("floor", f_floor, [T(M, N, domain="wide"), X2], lambda x, y: torch.floor(x) * y,
         ["math.floor", "dense<0.000000e+00>"]),
    Case("ceil", f_ceil, [T(M, N, domain="wide"), X2], lambda x, y: torch.ceil(x) * y,
         ["math.ceil", "dense<0.000000e+00>"]),
    Case("sigmoid", f_sigmoid, [X2], torch.sigmoid, ["math.exp", "arith.divf", NEG]),
    # exp overflows to inf where the adjoint reaching it underflows to 0: the
    # gradient is 0 (or the selected branch's), not 0 * inf = NaN
    Case("sigmoid_saturating", f_sigmoid, [T(M, N, domain="saturating")], torch.sigmoid,
         ["math.exp", "arith.select"]),
    Case("silu_saturating", f_silu, [T(M, N, domain="saturating")],
         lambda x: x * torch.sigmoid(x), ["math.exp", "arith.select"]),
    Case("sigmoid_by_hand_saturating", f_sigmoid_by_hand, [T(M, N, domain="saturating")],
         torch.sigmoid, ["math.exp", "arith.select"]),
    Case("softplus_thresholded", f_softplus_thresholded, [T(M, N, domain="saturating")],
         lambda x: torch.nn.functional.softplus(x, threshold=20.0), ["math.exp", "arith.divf"]),
    Case("precise_sqrt", f_sqrt_rn, [T(M, N, domain="pos")], torch.sqrt,
         ["tt.precise_sqrt", "arith.divf"]),
    Case("precise_divf", f_div_rn, [X2, T(M, N, domain="nonzero")], lambda x, y: x / y,
         ["tt.precise_divf", NEG]),
    Case("clampf", f_clamp, [X2, T(M, N, domain="lo"), T(M, N, domain="hi")],
         lambda x, lo, hi: torch.clamp(x, lo, hi),
         ["arith.cmpf olt", "arith.cmpf ogt", "arith.select"]),
    # --- libdevice (tt.extern_elementwise) -----------------------------------
    Case("ld_tanh", f_ld_tanh, [X2], torch.tanh, ["__nv_tanhf", "arith.subf"], **LD),
    Case("ld_pow", f_ld_pow, [T(M, N, domain="pos"), X2], torch.pow, ["__nv_powf", "math.log"], **LD),
    Case("ld_erf", f_ld_erf, [X2], torch.erf, ["math.exp", "1.12837"], **LD),
    Case("ld_erfc", f_ld_erfc, [X2], torch.erfc, ["math.exp", NEG], **LD),
    Case("ld_atan", f_ld_atan, [X2], torch.atan, ["arith.divf", "arith.addf"], **LD),
    Case("ld_asin", f_ld_asin, [T(M, N, domain="unit")], torch.asin, ["math.sqrt", "arith.subf"],
         **LD),
    Case("ld_acos", f_ld_acos, [T(M, N, domain="unit")], torch.acos, ["math.sqrt", NEG],
         **LD),
    Case("ld_sinh", f_ld_sinh, [X2], torch.sinh, ["math.exp", "arith.addf"], **LD),
    Case("ld_cosh", f_ld_cosh, [X2], torch.cosh, ["math.exp", "arith.subf"], **LD),
    Case("ld_asinh", f_ld_asinh, [X2], torch.asinh, ["math.sqrt", "arith.addf"], **LD),
    Case("ld_acosh", f_ld_acosh, [T(M, N, domain="gt1")], torch.acosh,
         ["math.sqrt", "arith.subf"], **LD),
    Case("ld_atanh", f_ld_atanh, [T(M, N, domain="unit")], torch.atanh,
         ["arith.divf", "arith.subf"], **LD),
    Case("ld_exp", f_ld_exp, [X2], torch.exp, ["__nv_expf", "arith.mulf"], **LD),
    Case("ld_exp2", f_ld_exp2, [X2], torch.exp2, ["__nv_exp2f", "0.693147"], **LD),
    Case("ld_exp10", f_ld_exp10, [X2], lambda x: torch.pow(10.0, x), ["__nv_exp10f", "2.302585"],
         **LD),
    Case("ld_expm1", f_ld_expm1, [X2], torch.expm1, ["__nv_expm1f", "arith.addf"], **LD),
    Case("ld_log", f_ld_log, [T(M, N, domain="pos")], torch.log, ["arith.divf"],
         **LD),
    Case("ld_log2", f_ld_log2, [T(M, N, domain="pos")], torch.log2, ["0.693147", "arith.divf"],
         **LD),
    Case("ld_log10", f_ld_log10, [T(M, N, domain="pos")], torch.log10,
         ["2.302585", "arith.divf"], **LD),
    Case("ld_log1p", f_ld_log1p, [T(M, N, domain="pos")], torch.log1p,
         ["arith.addf", "arith.divf"], **LD),
    Case("ld_sqrt", f_ld_sqrt, [T(M, N, domain="pos")], torch.sqrt, ["__nv_sqrtf", "arith.divf"],
         **LD),
    Case("ld_rsqrt", f_ld_rsqrt, [T(M, N, domain="pos")], torch.rsqrt,
         ["__nv_rsqrtf", "-5.000000e-01"], **LD),
    Case("ld_sin", f_ld_sin, [X2], torch.sin, ["math.cos"], **LD),
    Case("ld_cos", f_ld_cos, [X2], torch.cos, ["math.sin", NEG], **LD),
    Case("ld_tan", f_ld_tan, [T(M, N, domain="tan")], torch.tan, ["__nv_tanf", "arith.addf"], **LD),
    Case("ld_fabs", f_ld_abs, [X2], torch.abs, ["arith.select", "arith.cmpf olt"], **LD),
    Case("ld_floor", f_ld_floor, [T(M, N, domain="wide"), X2], lambda x, y: torch.floor(x) * y,
         ["__nv_floorf"], **LD),
    Case("ld_fdiv_rn", f_ld_div_rn, [X2, T(M, N, domain="nonzero")], lambda x, y: x / y,
         ["__nv_fdiv_rn", NEG], **LD),
    Case("ld_fmaf", f_ld_fma, [X2, X2, X2], lambda x, y, z: x * y + z, ["arith.mulf"], **LD),
    # --- shapes --------------------------------------------------------------
    Case("splat", f_splat, [T(), X2], lambda s, y: s * y, ["tt.splat", "tt.reduce"]),
    Case("broadcast", f_broadcast, [T(M), T(N)], lambda x, y: x[:, None] + y[None, :] * 2.0,
         ["tt.reduce", "tt.reshape"]),
    Case("broadcast_to", f_broadcast_to, [T(1, N), X2], lambda x, w: x.expand(M, N) * w,
         ["tt.broadcast", "tt.reduce"]),
    Case("expand_dims", f_expand_dims, [T(M), X2], lambda x, w: x[:, None] * w,
         ["tt.expand_dims", "tt.reduce", "tt.reshape"]),
    Case("reshape", f_reshape, [X2, T(8, 64)], lambda x, w: x.reshape(8, 64) * w,
         ["tt.reshape"]),
    Case("trans", f_trans, [X2, T(N, M)], lambda x, w: x.t() * w, ["tt.trans"]),
    Case("permute3d", f_permute, [T(4, 8, 16), T(8, 16, 4)], lambda x, w: x.permute(1, 2, 0) * w,
         ["tt.trans", "array<i32: 2, 0, 1>"]),
    Case("join", f_join, [X2, X2, T(M, N, 2)], lambda x, y, w: torch.stack([x, y], -1) * w,
         ["tt.join", "tt.split"]),
    Case("split", f_split, [T(M, N, 2)], lambda x: (x[..., 0], x[..., 1] * x[..., 1]),
         ["tt.split", "tt.join"]),
    # --- tt.dot --------------------------------------------------------------
    Case("dot_tf32", f_dot_tf32, [T(16, 32), T(32, 64)], _matmul_fp32,
         ["tt.dot", "inputPrecision = tf32", "tt.trans"], **TF32),
    Case("dot_ieee", f_dot_ieee, [T(16, 32), T(32, 64)], _matmul_fp32, ["tt.dot", "tt.trans"],
         **IEEE),
    Case("dot_acc_ieee", f_dot_acc_ieee, [T(32, 16), T(16, 64), T(32, 64)],
         lambda a, b, c: a @ b + c, ["tt.dot", "tt.trans"], **IEEE),
    Case("dot_f16", f_dot_f16, [T(16, 32, dtype=torch.float16), T(32, 64, dtype=torch.float16)],
         _matmul_fp32, ["tt.dot", "arith.truncf", "xf16>"], **HALF),
    Case("dot_bf16", f_dot_bf16,
         [T(16, 32, dtype=torch.bfloat16), T(32, 64, dtype=torch.bfloat16)],
         _matmul_fp32, ["tt.dot", "arith.truncf", "xbf16>"], rtol=3e-2, atol=6e-2),
    # --- tt.reduce -----------------------------------------------------------
    Case("sum_axis0", f_sum0, [X2], lambda x: x.sum(0), ["tt.broadcast", "tt.expand_dims"]),
    Case("sum_axis1", f_sum1, [X2], lambda x: x.sum(1), ["tt.broadcast", "tt.expand_dims"]),
    Case("sum_1d", f_sum_1d, [T(64)], lambda x: x.sum(0), ["tt.splat"]),
    Case("sum_all", f_sum_all, [X2], lambda x: x.sum(), ["tt.splat"]),
    Case("sum_all_1d", f_sum_all, [T(64)], lambda x: x.sum(), ["tt.splat"]),
    # max/min: the gradient goes to the first extremal element, like torch.max(x, dim)
    # (placed by index equality: see TritonRules.cpp)
    Case("max_axis0", f_max0, [X2], lambda x: torch.max(x, 0).values, ["arith.cmpi eq"]),
    Case("max_axis1", f_max1, [X2], lambda x: torch.max(x, 1).values, ["arith.cmpi eq"]),
    Case("min_axis0", f_min0, [X2], lambda x: torch.min(x, 0).values, ["arith.cmpi eq"]),
    Case("min_axis1", f_min1, [X2], lambda x: torch.min(x, 1).values, ["arith.cmpi eq"]),
    # exact ties: all of it to the first (torch.max(dim) returns the first index)
    Case("max_ties", f_max1, [T(M, N, domain="ties")], lambda x: torch.max(x, 1).values,
         ["arith.cmpi eq"]),
    Case("argmax_value", f_argmax_value, [X2], lambda x: torch.max(x, 1).values,
         ["arith.cmpi eq"]),
    Case("argmin_value", f_argmin_value, [X2], lambda x: torch.min(x, 0).values,
         ["arith.cmpi eq"]),
    # --- tt.scan -------------------------------------------------------------
    Case("cumsum_axis0", f_cumsum0, [X2], lambda x: torch.cumsum(x, 0),
         ["tt.scan", "reverse = true"]),
    Case("cumsum_axis1_reverse", f_cumsum1_rev, [X2], lambda x: _flip_cumsum(x, 1),
         ["tt.scan", "reverse = false"]),
    Case("cumprod_axis1", f_cumprod1, [T(M, N, domain="near1")], lambda x: torch.cumprod(x, 1),
         ["tt.scan", "reverse = true", "-> (tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>)"],
         rtol=1e-4, atol=1e-5),
    Case("cumprod_axis0_reverse", f_cumprod0_rev, [T(M, N, domain="near1")],
         lambda x: _flip_cumprod(x, 0), ["tt.scan", "reverse = false"],
         rtol=1e-4, atol=1e-5),
    # a product tt.reduce: the exclusive products from both ends
    Case("prod_axis1", f_prod1, [T(M, N, domain="near1")], lambda x: torch.prod(x, 1),
         ["tt.scan", "reverse = false", "reverse = true"], rtol=1e-4, atol=1e-5),
]

_IDS = [c.id for c in CASES]
assert len(set(_IDS)) == len(_IDS), "duplicate case ids"


# ---------------------------------------------------------------------------
# Kernel generation
# ---------------------------------------------------------------------------

def _offsets(shape: Tuple[int, ...]) -> Optional[str]:
    """Row-major offsets of a contiguous tile of `shape` (None for a scalar)."""
    if not shape:
        return None
    strides, stride = [], 1
    for dim in reversed(shape):
        strides.insert(0, stride)
        stride *= dim
    terms = []
    for axis, (dim, step) in enumerate(zip(shape, strides)):
        index = ["None"] * len(shape)
        index[axis] = ":"
        term = f"tl.arange(0, {dim})"
        if len(shape) > 1:
            term += f"[{', '.join(index)}]"
        if step != 1:
            term += f" * {step}"
        terms.append(term)
    return " + ".join(terms)


def _address(pointer: str, shape) -> str:
    offsets = _offsets(tuple(shape))
    return pointer if offsets is None else f"{pointer} + ({offsets})"


_counter = itertools.count()


def _jit_from_source(source: str, name: str, env: dict):
    # Triton reads a function's source with inspect: register it with linecache.
    filename = f"<test_grad_rules-{next(_counter)}-{name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = dict(env)
    exec(compile(source, filename, "exec"), namespace)
    return triton.jit(namespace[name])


@dataclass
class Built:
    kernel: object
    vjp: object
    signature: dict
    out_shapes: list
    out_dtypes: list


def _outputs_meta(case: Case):
    """Shapes and dtypes of ref's outputs (computed on the meta device)."""
    inputs = [torch.empty(a.shape, dtype=a.dtype, device="meta") for a in case.args]
    outs = case.ref(*inputs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    return [tuple(o.shape) for o in outs], [o.dtype for o in outs]


@functools.lru_cache(maxsize=None)
def _build(case_id: str) -> Built:
    case = next(c for c in CASES if c.id == case_id)
    vjp = tritonad.grad(case.fn)
    out_shapes, out_dtypes = _outputs_meta(case)
    n_in, n_out = len(case.args), len(out_shapes)
    xs = [f"X{i}" for i in range(n_in)]
    gs = [f"G{i}" for i in range(n_out)]
    ds = [f"D{i}" for i in range(n_in)]
    lines = [f"def kernel_{case.id}({', '.join(xs + gs + ds)}):"]
    for i, arg in enumerate(case.args):
        lines.append(f"    x{i} = tl.load({_address(xs[i], arg.shape)})")
    for i, shape in enumerate(out_shapes):
        lines.append(f"    g{i} = tl.load({_address(gs[i], shape)})")
    call_args = ", ".join([f"x{i}" for i in range(n_in)] + [f"g{i}" for i in range(n_out)])
    targets = ", ".join(f"d{i}" for i in range(n_in))
    lines.append(f"    {targets} = f_vjp({call_args})")
    for i, arg in enumerate(case.args):
        lines.append(f"    tl.store({_address(ds[i], arg.shape)}, d{i})")
    source = "\n".join(lines) + "\n"
    kernel = _jit_from_source(source, f"kernel_{case.id}", {"tl": tl, "f_vjp": vjp})
    signature = {}
    for names, dtypes in ((xs, [a.dtype for a in case.args]), (gs, out_dtypes),
                          (ds, [a.dtype for a in case.args])):
        for name, dtype in zip(names, dtypes):
            signature[name] = "*" + _TL_DTYPE[dtype]
    return Built(kernel, vjp, signature, out_shapes, out_dtypes)


def _seed(case: Case) -> int:
    return zlib.crc32(case.id.encode())
