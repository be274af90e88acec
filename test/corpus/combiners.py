"""Kernels with the ops real kernels need beyond sums and maxima: tl.flip, tl.gather,
and tl.reduce with combiners of several values (Welford's (mean, m2, count) and
logsumexp's (max, sum) pairs); each with its fp64 torch reference and a `check_*`
returning the gradient's largest error relative to its largest magnitude (used by
test_coverage_ops.py, in the interpreter and on the GPU).

Every kernel is one program over a 2-D tile of odd sizes (masked lanes included) and
computes in fp32 whatever dtype its buffers hold.
"""

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

import tritonad


@triton.jit
def _tile(X, n_rows, n_cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, other):
    rows = tl.arange(0, BLOCK_R)[:, None]
    cols = tl.arange(0, BLOCK_C)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    offsets = rows * n_cols + cols
    return tl.load(X + offsets, mask=mask, other=other).to(tl.float32), offsets, mask


@triton.jit
def flip_kernel(X, Y, n_rows, n_cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
                DIM: tl.constexpr):
    x, offsets, mask = _tile(X, n_rows, n_cols, BLOCK_R, BLOCK_C, 0.0)
    y = tl.flip(x, DIM) * x + tl.sin(x)
    tl.store(Y + offsets, y.to(Y.dtype.element_ty), mask=mask)


def flip_reference(x, block, dim):
    # the tile padded with zeros, flipped whole (tl.flip flips the block, padding
    # included), cropped back
    padded = F.pad(x, (0, block[1] - x.shape[1], 0, block[0] - x.shape[0]))
    y = torch.flip(padded, [dim]) * padded + torch.sin(padded)
    return y[:x.shape[0], :x.shape[1]]


@triton.jit
def gather_kernel(X, I, Y, n_rows, n_cols, n_index, BLOCK_R: tl.constexpr,
                  BLOCK_C: tl.constexpr, BLOCK_I: tl.constexpr, AXIS: tl.constexpr):
    # out = gather(x, index, AXIS) * x_row_or_col_scale: index picks (with repeats)
    # positions of x along AXIS; its other dim matches x's
    x, _, _ = _tile(X, n_rows, n_cols, BLOCK_R, BLOCK_C, 0.0)
    if AXIS == 1:
        rows = tl.arange(0, BLOCK_R)[:, None]
        picks = tl.arange(0, BLOCK_I)[None, :]
        imask = (rows < n_rows) & (picks < n_index)
        ioffsets = rows * n_index + picks
    else:
        picks = tl.arange(0, BLOCK_I)[:, None]
        cols = tl.arange(0, BLOCK_C)[None, :]
        imask = (picks < n_index) & (cols < n_cols)
        ioffsets = picks * n_cols + cols
    index = tl.load(I + ioffsets, mask=imask, other=0)
    y = tl.gather(x, index, AXIS)
    tl.store(Y + ioffsets, (y * y + 2.0 * y).to(Y.dtype.element_ty), mask=imask)


def gather_reference(x, index, axis):
    y = torch.gather(x, axis, index)
    return y * y + 2.0 * y


@triton.jit
def welford_combine(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    n = n_a + n_b
    delta = mean_b - mean_a
    w_b = tl.where(n == 0, 0.0, n_b / tl.where(n == 0, 1.0, n))
    return mean_a + delta * w_b, m2_a + m2_b + delta * delta * n_a * w_b, n


@triton.jit
def welford_norm_kernel(X, Y, n_rows, n_cols, eps, BLOCK_R: tl.constexpr,
                        BLOCK_C: tl.constexpr, AXIS: tl.constexpr):
    # (x - mean) / sqrt(var + eps) along AXIS, mean and variance from one Welford
    # reduction; masked lanes are (0, 0, count 0)
    x, offsets, mask = _tile(X, n_rows, n_cols, BLOCK_R, BLOCK_C, 0.0)
    count = tl.where(mask, 1.0, 0.0)
    mean, m2, n = tl.reduce((x, tl.zeros_like(x), count), AXIS, welford_combine,
                            keep_dims=True)
    y = (x - mean) / tl.sqrt(m2 / n + eps)
    tl.store(Y + offsets, y.to(Y.dtype.element_ty), mask=mask)


def welford_norm_reference(x, axis, eps):
    mean = x.mean(axis, keepdim=True)
    var = x.var(axis, unbiased=False, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps)


@triton.jit
def logsumexp_combine(m_a, s_a, m_b, s_b):
    # (running max, sum of exp(x - max)); two empty segments (-inf, 0) stay empty
    # instead of meeting -inf - -inf
    m = tl.maximum(m_a, m_b)
    empty = m == float("-inf")
    return m, (s_a * tl.exp(tl.where(empty, 0.0, m_a - m)) +
               s_b * tl.exp(tl.where(empty, 0.0, m_b - m)))


@triton.jit
def log_softmax_kernel(X, Y, n_rows, n_cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
                       AXIS: tl.constexpr):
    # x - logsumexp(x) along AXIS through one (max, sum) reduction; masked lanes
    # are (-inf, 0)
    x, offsets, mask = _tile(X, n_rows, n_cols, BLOCK_R, BLOCK_C, float("-inf"))
    m, s = tl.reduce((x, tl.where(mask, 1.0, 0.0)), AXIS, logsumexp_combine, keep_dims=True)
    y = x - (m + tl.log(s))
    tl.store(Y + offsets, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def affine_then(a_left, b_left, a_right, b_right):
    # (x -> a_left x + b_left) then (x -> a_right x + b_right): associative, not
    # commutative, so the gradient must keep the order of the lanes
    return a_left * a_right, a_right * b_left + b_right


@triton.jit
def affine_reduce_kernel(X, B, H, n_rows, n_cols, BLOCK_R: tl.constexpr,
                         BLOCK_C: tl.constexpr, AXIS: tl.constexpr):
    # h = the recurrence h_k = sigmoid(x_k) h_{k-1} + b_k (h_{-1} = 0) run along AXIS
    # to its end, one tl.reduce of affine maps; masked lanes are the identity map
    x, _, mask = _tile(X, n_rows, n_cols, BLOCK_R, BLOCK_C, 0.0)
    b, _, _ = _tile(B, n_rows, n_cols, BLOCK_R, BLOCK_C, 0.0)
    _, h = tl.reduce((tl.where(mask, tl.sigmoid(x), 1.0), b), AXIS, affine_then)
    if AXIS == 0:
        lanes = tl.arange(0, BLOCK_C)
        tl.store(H + lanes, h.to(H.dtype.element_ty), mask=lanes < n_cols)
    else:
        lanes = tl.arange(0, BLOCK_R)
        tl.store(H + lanes, h.to(H.dtype.element_ty), mask=lanes < n_rows)


def affine_reduce_reference(x, b, axis):
    x, b = (x, b) if axis == 1 else (x.T, b.T)
    a, h = torch.sigmoid(x), torch.zeros_like(x[:, 0])
    for k in range(x.shape[1]):
        h = a[:, k] * h + b[:, k]
    return h


def _relative_error(got, want):
    return ((got.double() - want).abs().max() / want.abs().max()).item()


def _grad_of(kernel, inputs, outputs, upstream, path, consts, grid=(1,)):
    """dL/d inputs["X"] (L = <upstream, Y>) through tritonad.grad or tritonad.autograd.
    `inputs` / `outputs`: the kernel's tensor arguments by name, in order, then its
    scalars in `consts` (constexprs included)."""
    x = inputs["X"]
    if path == "autograd":
        leaf = x.detach().clone().requires_grad_()
        forward = tritonad.autograd(kernel, outputs=tuple(outputs))
        args = {**inputs, "X": leaf, **outputs}
        result = forward[grid](*args.values(), **consts)
        result.backward(upstream)
        return leaf.grad
    kernel[grid](*inputs.values(), *outputs.values(), **consts)
    got = torch.zeros_like(x)
    bwd = tritonad.grad(kernel, wrt=("X",))
    shadows = {"d" + name: upstream.clone() for name in outputs}
    bwd[grid](*inputs.values(), *outputs.values(), dX=got, **shadows, **consts)
    return got


def _check_tile(kernel, reference, dtype, device, shape, block, path, seed, scale=1.0,
                shift=0.0, **scalars):
    """dL/dX of a kernel (X, Y, n_rows, n_cols, <scalars>, BLOCK_R, BLOCK_C, ...) mapping
    a tile to a tile, against `reference` on fp64."""
    generator = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, generator=generator) * scale + shift).to(device=device, dtype=dtype)
    upstream = torch.randn(shape, generator=generator).to(device=device, dtype=dtype)
    got = _grad_of(kernel, {"X": x}, {"Y": torch.empty_like(x)}, upstream, path,
                   dict(n_rows=shape[0], n_cols=shape[1], BLOCK_R=block[0], BLOCK_C=block[1],
                        **scalars))
    x64 = x.detach().double().requires_grad_()
    reference(x64).backward(upstream.double())
    return _relative_error(got, x64.grad)


def check_flip(dtype, device, dim, shape=(5, 13), block=(8, 16), path="grad", seed=0):
    return _check_tile(flip_kernel, lambda x: flip_reference(x, block, dim), dtype, device,
                       shape, block, path, seed, DIM=dim)


def check_gather(dtype, device, axis, shape=(5, 13), n_index=11, path="grad", seed=0):
    generator = torch.Generator().manual_seed(seed)
    rows, cols = shape
    x = torch.randn(shape, generator=generator).to(device=device, dtype=dtype)
    index_shape = (rows, n_index) if axis == 1 else (n_index, cols)
    index = torch.randint(0, shape[axis], index_shape, generator=generator,
                          dtype=torch.int32).to(device)
    upstream = torch.randn(index_shape, generator=generator).to(device=device, dtype=dtype)
    y = torch.empty(index_shape, device=device, dtype=dtype)
    blocks = dict(BLOCK_R=triton.next_power_of_2(rows), BLOCK_C=triton.next_power_of_2(cols),
                  BLOCK_I=triton.next_power_of_2(n_index))
    got = _grad_of(gather_kernel, {"X": x, "I": index}, {"Y": y}, upstream, path,
                   dict(n_rows=rows, n_cols=cols, n_index=n_index, AXIS=axis, **blocks))
    x64 = x.detach().double().requires_grad_()
    gather_reference(x64, index.long(), axis).backward(upstream.double())
    return _relative_error(got, x64.grad)


def check_welford(dtype, device, axis, shape=(5, 13), block=(8, 16), path="grad", seed=0,
                  eps=1e-5):
    return _check_tile(welford_norm_kernel, lambda x: welford_norm_reference(x, axis, eps),
                       dtype, device, shape, block, path, seed, scale=2.0, shift=0.5, eps=eps,
                       AXIS=axis)


def check_log_softmax(dtype, device, axis, shape=(5, 13), block=(8, 16), path="grad", seed=0):
    return _check_tile(log_softmax_kernel, lambda x: torch.log_softmax(x, axis), dtype, device,
                       shape, block, path, seed, scale=3.0, AXIS=axis)


@triton.jit
def _difference(a, b):
    return a - b


@triton.jit
def difference_reduce_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(Y, tl.reduce(x, 0, _difference))


def difference_reduce_refusal(device):
    """The message of tritonad's refusal of a reduction with `a - b` (not associative:
    its value depends on Triton's unspecified order), or "" if none."""
    x = torch.randn(16, device=device)
    y = torch.empty(1, device=device)
    bwd = tritonad.grad(difference_reduce_kernel)
    try:
        bwd[(1,)](x, y, dX=torch.zeros_like(x), dY=torch.ones_like(y), BLOCK=16)
    except Exception as error:  # noqa: BLE001  (the message is what is checked)
        return str(error)
    return ""


def check_affine_reduce(dtype, device, axis, shape=(5, 13), block=(8, 16), path="grad",
                        seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=generator).to(device=device, dtype=dtype)
    b = torch.randn(shape, generator=generator).to(device=device, dtype=dtype)
    upstream = torch.randn(shape[1 - axis], generator=generator).to(device=device, dtype=dtype)
    h = torch.empty(shape[1 - axis], device=device, dtype=dtype)
    got = _grad_of(affine_reduce_kernel, {"X": x, "B": b}, {"H": h}, upstream, path,
                   dict(n_rows=shape[0], n_cols=shape[1], BLOCK_R=block[0], BLOCK_C=block[1],
                        AXIS=axis))
    x64 = x.detach().double().requires_grad_()
    affine_reduce_reference(x64, b.double(), axis).backward(upstream.double())
    return _relative_error(got, x64.grad)
