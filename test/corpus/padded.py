"""Kernels whose masked lanes hold non-finite padding (``other=-float("inf")``), the way
users write softmax-like rows, and the fp64 torch computation each one performs on the
real lanes. The padding meets a product in each forward (x * sum(exp(x)), softmax times
x, an entropy, an expected logit, a division by the row's maximum, a custom max
combiner); torch never sees those lanes, so its gradients are finite.

``check(name, dtype, device)`` launches one case through ``tritonad.autograd`` on fresh
random rows of an odd width and returns the largest error relative to the fp64
gradient's magnitude (inputs in ``dtype``, math in fp32). Used by test_padding.py on the
GPU and, in a fresh Python under TRITON_INTERPRET=1, on the CPU.
"""

import torch
import triton
import triton.language as tl

import tritonad
from triton.language.extra import libdevice

NEG_INF = float("-inf")


@triton.jit
def _max_of(a, b):
    return tl.where(a > b, a, b)


@triton.jit
def _padded_row(X, n, BLOCK: tl.constexpr):
    """This program's row of X, its masked lanes padded with -inf."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    return row, cols, mask, tl.load(X + row * n + cols, mask=mask,
                                    other=-float("inf")).to(tl.float32)


@triton.jit
def scaled_by_sum(X, Y, n, BLOCK: tl.constexpr):
    row, cols, mask, x = _padded_row(X, n, BLOCK)
    y = x * tl.sum(tl.exp(x), axis=0)
    tl.store(Y + row * n + cols, y, mask=mask)


@triton.jit
def softmax_times_x(X, Y, n, BLOCK: tl.constexpr):
    row, cols, mask, x = _padded_row(X, n, BLOCK)
    e = tl.exp(x - tl.max(x, axis=0))
    p = e / tl.sum(e, axis=0)
    tl.store(Y + row * n + cols, p * x, mask=mask)


@triton.jit
def masked_entropy(X, H, n, BLOCK: tl.constexpr):
    row, cols, mask, x = _padded_row(X, n, BLOCK)
    shifted = x - tl.max(x, axis=0)
    s = tl.sum(tl.exp(shifted), axis=0)
    logp = shifted - tl.log(s)
    p = tl.exp(logp)
    tl.store(H + row, -tl.sum(tl.where(mask, p * logp, 0.0), axis=0))


@triton.jit
def expected_logit(X, E, n, BLOCK: tl.constexpr):
    row, cols, mask, x = _padded_row(X, n, BLOCK)
    e = tl.exp(x - tl.max(x, axis=0))
    p = e / tl.sum(e, axis=0)
    tl.store(E + row, tl.sum(tl.where(mask, p * x, 0.0), axis=0))


@triton.jit
def divided_by_absmax(X, Y, n, BLOCK: tl.constexpr):
    row, cols, mask, x = _padded_row(X, n, BLOCK)
    scale = tl.max(tl.where(mask, tl.abs(x), 0.0), axis=0)
    tl.store(Y + row * n + cols, x / scale, mask=mask)


@triton.jit
def custom_max_softmax(X, Y, n, BLOCK: tl.constexpr):
    row, cols, mask, x = _padded_row(X, n, BLOCK)
    e = tl.exp(x - tl.reduce(x, 0, _max_of))
    tl.store(Y + row * n + cols, x * e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def _softmax_times_x(x):
    e = tl.exp(x - tl.max(x, axis=0))
    return e / tl.sum(e, axis=0) * x  # (0 * -inf = NaN in the masked lanes)


# A unary op of softmax(x) * x: its partial at a masked lane's NaN is NaN, times the
# masked store's zero adjoint (fuzz seed 160).
@triton.jit
def softmax_times_x_then_sigmoid(X, Y, n, BLOCK: tl.constexpr):
    row, cols, mask, x = _padded_row(X, n, BLOCK)
    tl.store(Y + row * n + cols, tl.sigmoid(_softmax_times_x(x)), mask=mask)


@triton.jit
def softmax_times_x_then_sin_exp(X, Y, n, BLOCK: tl.constexpr):
    row, cols, mask, x = _padded_row(X, n, BLOCK)
    t = _softmax_times_x(x)
    tl.store(Y + row * n + cols, tl.sin(t) + tl.exp(t) + tl.erf(t), mask=mask)


@triton.jit  # (libdevice: GPU only)
def pow_of_softmax_times_x(X, Y, n, BLOCK: tl.constexpr):
    row, cols, mask, x = _padded_row(X, n, BLOCK)
    base = tl.full([BLOCK], 2.0, tl.float32)
    tl.store(Y + row * n + cols, libdevice.pow(base, _softmax_times_x(x)), mask=mask)


@triton.jit
def softmax_times_x_over_norm(X, Y, n, BLOCK: tl.constexpr):
    # The divisor is uniform; the quotient, which its partial reads, is not.
    row, cols, mask, x = _padded_row(X, n, BLOCK)
    norm = tl.sum(tl.where(mask, x * x, 0.0), axis=0) + 1.0
    tl.store(Y + row * n + cols, _softmax_times_x(x) / norm, mask=mask)


@triton.jit
def exp_of_mean_through_nan(X, Y, n, BLOCK: tl.constexpr):
    # x * 0 is NaN in the masked lanes, exp of it too; the row's mean reaches every lane.
    row, cols, mask, x = _padded_row(X, n, BLOCK)
    mean = tl.sum(tl.where(mask, x, 0.0), axis=0) / n
    tl.store(Y + row * n + cols, tl.exp(x * 0.0 + mean), mask=mask)


def _softmax_x(x):
    return torch.softmax(x, -1) * x


def _entropy(x):
    logp = torch.log_softmax(x, -1)
    return -(logp.exp() * logp).sum(-1)


# name -> (kernel, per-row output (else per element), fp64 reference of the real lanes)
CASES = {
    "scaled_by_sum": (scaled_by_sum, False, lambda x: x * x.exp().sum(-1, keepdim=True)),
    "softmax_times_x": (softmax_times_x, False, lambda x: torch.softmax(x, -1) * x),
    "masked_entropy": (masked_entropy, True, _entropy),
    "expected_logit": (expected_logit, True, lambda x: (torch.softmax(x, -1) * x).sum(-1)),
    "divided_by_absmax": (divided_by_absmax, False,
                          lambda x: x / x.abs().amax(-1, keepdim=True)),
    "custom_max_softmax": (custom_max_softmax, False, lambda x: torch.softmax(x, -1) * x),
    "softmax_times_x_then_sigmoid": (softmax_times_x_then_sigmoid, False,
                                     lambda x: torch.sigmoid(_softmax_x(x))),
    "softmax_times_x_then_sin_exp": (
        softmax_times_x_then_sin_exp, False,
        lambda x: _softmax_x(x).sin() + _softmax_x(x).exp() + torch.erf(_softmax_x(x))),
    "pow_of_softmax_times_x": (pow_of_softmax_times_x, False,
                               lambda x: torch.pow(2.0, _softmax_x(x))),
    "softmax_times_x_over_norm": (softmax_times_x_over_norm, False,
                                  lambda x: _softmax_x(x) / ((x * x).sum(-1, keepdim=True) + 1)),
    "exp_of_mean_through_nan": (exp_of_mean_through_nan, False,
                                lambda x: (x * 0.0 + x.mean(-1, keepdim=True)).exp()),
}


# (libdevice calls, which the interpreter does not run here)
GPU_ONLY = ("pow_of_softmax_times_x",)


def check(name, dtype, device, rows=5, n=37):
    """The largest error of the case's gradient against fp64, relative to the fp64
    gradient's largest magnitude (NaN or inf anywhere: inf)."""
    kernel, per_row, reference = CASES[name]
    # Distinct magnitudes in each row, in any dtype: a tie of |x| would send the gradient
    # of the row's maximum to the first of them (tl.max, like torch.max(x, dim)), where
    # torch's amax in the reference splits it.
    magnitudes = (torch.rand(rows, n).argsort(-1) + 1.0) * (3.0 / n)
    signs = torch.randint(0, 2, (rows, n)) * 2.0 - 1.0
    x = (magnitudes * signs).to(device=device, dtype=dtype).requires_grad_()
    out = torch.empty(rows, device=device, dtype=dtype) if per_row else torch.empty_like(x)
    f = tritonad.autograd(kernel, outputs=(kernel.arg_names[1],))
    y = f[(rows,)](x, out, n, BLOCK=triton.next_power_of_2(n))
    upstream = torch.randn(y.shape, device=device)
    y.backward(upstream.to(dtype))
    x64 = x.detach().double().requires_grad_()
    reference(x64).backward(upstream.to(dtype).double())
    got = x.grad.double()
    if not torch.isfinite(got).all():
        return float("inf")
    return ((got - x64.grad).abs().max() / x64.grad.abs().max().clamp_min(1e-30)).item()
