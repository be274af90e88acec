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


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def scaled_by_custom_sum(X, Y, n, BLOCK: tl.constexpr):
    # A user's sum combiner over padded lanes (exp(-inf) = 0 there), times x.
    row, cols, mask, x = _padded_row(X, n, BLOCK)
    tl.store(Y + row * n + cols, x * tl.reduce(tl.exp(x), 0, _add), mask=mask)


@triton.jit
def padded_scores(Q, K, P, m, n, D: tl.constexpr, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr):
    """softmax(Q K^T) over n keys; the key tile's masked rows are padded with -inf, so
    the masked columns of the scores are NaN / inf until tl.where drops them. The
    dot's adjoint dQ = dS x K meets them: dS is 0 there."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    d = tl.arange(0, D)
    q = tl.load(Q + rows[:, None] * D + d[None, :], mask=rows[:, None] < m,
                other=0.0).to(tl.float32)
    k = tl.load(K + cols[:, None] * D + d[None, :], mask=cols[:, None] < n,
                other=-float("inf")).to(tl.float32)
    s = tl.dot(q, tl.trans(k), input_precision="ieee")
    s = tl.where(cols[None, :] < n, s, -float("inf"))
    e = tl.exp(s - tl.max(s, axis=1)[:, None])
    p = e / tl.sum(e, axis=1)[:, None]
    tl.store(P + rows[:, None] * n + cols[None, :], p,
             mask=(rows[:, None] < m) & (cols[None, :] < n))


@triton.jit
def padded_scores_nan_first(Q, K, P, m, n, D: tl.constexpr, BLOCK_M: tl.constexpr,
                            BLOCK_N: tl.constexpr):
    """The same scores transposed, S^T = K Q^T: the padded tile is the dot's first
    operand, which the adjoint's db = a^T x g (here dQ^T = K^T dS^T) reads; the key tile
    comes through a block pointer padded with NaN."""
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    keys = tl.make_block_ptr(K, shape=(n, D), strides=(D, 1), offsets=(0, 0),
                             block_shape=(BLOCK_N, D), order=(1, 0))
    k = tl.load(keys, boundary_check=(0,), padding_option="nan").to(tl.float32)
    d = tl.arange(0, D)
    q = tl.load(Q + rows[:, None] * D + d[None, :], mask=rows[:, None] < m,
                other=0.0).to(tl.float32)
    st = tl.dot(k, tl.trans(q), input_precision="ieee")
    st = tl.where(cols[:, None] < n, st, -float("inf"))
    e = tl.exp(st - tl.max(st, axis=0)[None, :])
    p = e / tl.sum(e, axis=0)[None, :]
    tl.store(P + rows[None, :] * n + cols[:, None], p,
             mask=(rows[None, :] < m) & (cols[:, None] < n))


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
    "scaled_by_custom_sum": (scaled_by_custom_sum, False,
                             lambda x: x * x.exp().sum(-1, keepdim=True)),
}

# name -> kernel of softmax(Q K^T) whose key tile is padded non-finite (check_scores)
SCORE_CASES = {"padded_scores": padded_scores,
               "padded_scores_nan_first": padded_scores_nan_first}


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


def check_scores(name, dtype, device, m=37, n=21, head=16, block_m=16):
    """The largest error of dQ and dK (relative to fp64's largest magnitude; NaN or
    inf anywhere: inf) of a SCORE_CASES kernel: P = softmax(Q K^T), m queries, n
    keys in one tile of the next power of two (at least 16, as tl.dot needs)."""
    kernel = SCORE_CASES[name]
    q = torch.randn(m, head, device=device).to(dtype).requires_grad_()
    k = torch.randn(n, head, device=device).to(dtype).requires_grad_()
    f = tritonad.autograd(kernel, outputs=("P",))
    p = f[(triton.cdiv(m, block_m),)](q, k, torch.empty(m, n, device=device, dtype=dtype), m,
                                      n, D=head, BLOCK_M=block_m,
                                      BLOCK_N=max(16, triton.next_power_of_2(n)))
    upstream = torch.randn(m, n, device=device).to(dtype)
    p.backward(upstream)
    q64, k64 = (t.detach().double().requires_grad_() for t in (q, k))
    torch.softmax(q64 @ k64.T, -1).backward(upstream.double())
    errors = {}
    for which, got, want in (("q", q.grad, q64.grad), ("k", k.grad, k64.grad)):
        finite = torch.isfinite(got).all()
        errors[which] = ((got.double() - want).abs().max() / want.abs().max()).item() \
            if finite else float("inf")
    return errors
