"""Kernels that load one input at several places (at the same addresses, or at
addresses a constant apart: a stencil's neighbour, RoPE's halves), or revisit its
addresses in a loop through other lanes: the gradients of the loads go to one shadow, as plain
read-add-writes ordered by a barrier where the union of the addresses is exclusive per
program (no atomics, deterministic), in the default mode and mode="deterministic" alike;
and a 2-D grid whose programs share a weight, a bias and a scale (mode="deterministic":
partial buffers, a slot per program along the axes that share each).

``check(name, ...)`` launches one kernel through ``tritonad.autograd`` on fresh random
inputs of odd sizes and returns the largest error of each gradient against fp64 torch,
relative to its magnitude; ``schedule_of`` gives what deriving it on the CPU needs.
"""

import torch
import triton
import triton.language as tl

import tritonad


@triton.jit
def layer_norm_three_pass(Y, X, W, B, stride, N, eps, BLOCK: tl.constexpr):
    """The Triton tutorial's layer norm as it is written (the row's pointers advanced
    by `X += row * stride`, fp32 math for any dtype; corpus/user_kernels.py has an
    index-arithmetic spelling in the input's dtype): x loaded in the mean loop, the
    variance loop and the normalizing loop (three loops with the same bounds); the
    weight and bias every program loads."""
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.0)
        acc += x * x
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        w = tl.load(W + cols, mask=mask).to(tl.float32)
        b = tl.load(B + cols, mask=mask).to(tl.float32)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(Y + cols, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def reload_rows(Y, X, stride, N, BLOCK: tl.constexpr):
    """x loaded twice at the same offsets, once through a block pointer: a statistic of
    the row, then the row scaled by it."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    block = tl.make_block_ptr(base=X + row * stride, shape=(N,), strides=(1,), offsets=(0,),
                              block_shape=(BLOCK,), order=(0,))
    first = tl.load(block, boundary_check=(0,), padding_option="zero").to(tl.float32)
    scale = tl.sum(tl.where(mask, tl.sin(first), 0.0), axis=0)
    again = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * stride + cols, (again * scale).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def powers_in_loop(Y, X, stride, N, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    """x loaded before a loop and again at the same addresses in every iteration:
    y = x ** (ITERS + 1) by repeated products."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    h = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    for _ in range(ITERS):
        h = h * tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * stride + cols, h.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def window_sums(Y, X, stride, N, WINDOWS, HALF: tl.constexpr):
    """Overlapping windows of a row: window j sums exp(x) over [j * HALF, j * HALF +
    2 * HALF): each iteration revisits, through other lanes, half of what the previous
    one read."""
    row = tl.program_id(0)
    lanes = tl.arange(0, 2 * HALF)
    for j in range(0, WINDOWS):
        cols = j * HALF + lanes
        x = tl.load(X + row * stride + cols, mask=cols < N, other=0.0).to(tl.float32)
        s = tl.sum(tl.where(cols < N, tl.exp(x), 0.0), axis=0)
        tl.store(Y + row * WINDOWS + j, s)


@triton.jit
def shifted_products(Y, X, stride, N, BLOCK: tl.constexpr):
    """x loaded at its columns and one column further (a stencil's neighbour, masked
    to the row): y[c] = exp(x[c]) * x[c + 1], 0 at the row's last column. The loads'
    addresses differ by a constant; each masks its own shifted column below N."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    here = tl.load(X + row * stride + cols, mask=cols < N, other=0.0).to(tl.float32)
    right = tl.load(X + row * stride + cols + 1, mask=cols + 1 < N, other=0.0).to(tl.float32)
    tl.store(Y + row * stride + cols, (tl.exp(here) * right).to(Y.dtype.element_ty),
             mask=cols < N)


@triton.jit
def rotate_halves(Y, X, COS, SIN, stride, HALF: tl.constexpr, BLOCK: tl.constexpr):
    """Rotary embedding as libraries write it: a row's two halves loaded at HALF apart
    under one mask, rotated by per-column angles."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < HALF
    x1 = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(X + row * stride + HALF + cols, mask=mask, other=0.0).to(tl.float32)
    c = tl.load(COS + cols, mask=mask, other=0.0)
    s = tl.load(SIN + cols, mask=mask, other=0.0)
    tl.store(Y + row * stride + cols, (x1 * c - x2 * s).to(Y.dtype.element_ty), mask=mask)
    tl.store(Y + row * stride + HALF + cols, (x2 * c + x1 * s).to(Y.dtype.element_ty),
             mask=mask)


@triton.jit
def previous_row_difference(Y, X, T, D: tl.constexpr, BD: tl.constexpr):
    """Token shift as sequence models write it: program (b, t) stores x[t - 1] - x[t]
    (-x[0] at t = 0, returned early), so x is loaded at two places a row apart, in
    different blocks; program t + 1 reads row t too (the launch check takes the
    atomics, or refuses the launch in mode="deterministic")."""
    b = tl.program_id(0).to(tl.int64)
    t = tl.program_id(1)
    cols = tl.arange(0, BD)
    mask = cols < D
    here = b * T * D + t * D + cols
    x = tl.load(X + here, mask=mask, other=0.0).to(tl.float32)
    if t == 0:
        tl.store(Y + here, (-x).to(Y.dtype.element_ty), mask=mask)
        return
    previous = tl.load(X + here - D, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + here, (previous - x).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def scale_shift_2d(Y, X, W, B, S, stride, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """A 2-D grid of tiles, y = s * sin(x) * w + b: the weight and bias indexed by the
    tile's columns (every program along axis 0 adds to their gradients), the scale s
    read by every program (deterministic mode: partial buffers with a slot per program
    along the axes that share each)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * stride + rn[None, :], mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W + rn, mask=rn < N, other=0.0).to(tl.float32)
    b = tl.load(B + rn, mask=rn < N, other=0.0).to(tl.float32)
    s = tl.load(S).to(tl.float32)
    y = s * tl.sin(x) * w[None, :] + b[None, :]
    tl.store(Y + rm[:, None] * stride + rn[None, :], y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def row_sums_of_squares(Y, X, stride, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Rows of a 2-D tile (BM rows per program), one load in a loop over the columns:
    the loop reaches N columns, so rows are apart only where stride >= N (not the
    tile's BN): rows of an input that overlap (stride < N) meet across programs."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    acc = tl.zeros([BM], dtype=tl.float32)
    for k in range(0, N, BN):
        cols = k + tl.arange(0, BN)
        mask = (rm[:, None] < M) & (cols[None, :] < N)
        x = tl.load(X + rm[:, None] * stride + cols[None, :], mask=mask, other=0.0)
        acc += tl.sum(x.to(tl.float32) * x.to(tl.float32), axis=1)
    tl.store(Y + rm, acc, mask=rm < M)


@triton.jit
def row_max_then_map(Y, R, X, stride, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Fuzz seed 62's class: a pass of row maxima through a pointer advanced by BN,
    then a second pass by index arithmetic (x loaded at two places, the same
    addresses), y = sin(x) * max."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    m = tl.full([BM], -float("inf"), tl.float32)
    p = X + rm[:, None] * stride + tl.arange(0, BN)[None, :]
    for k in range(0, N, BN):
        cols = k + tl.arange(0, BN)
        mask = (rm[:, None] < M) & (cols[None, :] < N)
        x = tl.load(p, mask=mask, other=-float("inf")).to(tl.float32)
        m = tl.maximum(m, tl.max(x, axis=1))
        p += BN
    for k in range(0, N, BN):
        cols = k + tl.arange(0, BN)
        mask = (rm[:, None] < M) & (cols[None, :] < N)
        x = tl.load(X + rm[:, None] * stride + cols[None, :], mask=mask, other=0.0)
        y = tl.sin(x.to(tl.float32)) * m[:, None]
        tl.store(Y + rm[:, None] * N + cols[None, :], y.to(Y.dtype.element_ty), mask=mask)
    tl.store(R + rm, m, mask=rm < M)


@triton.jit
def two_loads_one_loop(Y, X, stride, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Fuzz seed 60007's class: x loaded twice at the same offsets in one loop
    (different fill values, so they stay two loads), y = sum(exp(x / 2)) * sum(x^2)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    a = tl.zeros([BM], dtype=tl.float32)
    b = tl.zeros([BM], dtype=tl.float32)
    for k in range(0, N, BN):
        cols = k + tl.arange(0, BN)
        mask = (rm[:, None] < M) & (cols[None, :] < N)
        first = tl.load(X + rm[:, None] * stride + cols[None, :], mask=mask, other=-1e9)
        a += tl.sum(tl.exp(first.to(tl.float32) * 0.5), axis=1)
        again = tl.load(X + rm[:, None] * stride + cols[None, :], mask=mask, other=0.0)
        b += tl.sum(again.to(tl.float32) * again.to(tl.float32), axis=1)
    tl.store(Y + rm, a * b, mask=rm < M)


def _relative_errors(pairs):
    """max|got - want| over max|want|, or over the scale a pair gives as its fourth entry."""
    return {name: ((got.double() - want).abs().max()
                   / (scale[0] if scale else want.abs().max()).clamp_min(1e-30)).item()
            for name, got, want, *scale in pairs}


def _rows(rows, cols, pad, dtype, device):
    """A (rows, cols) view of a buffer with `pad` columns more per row."""
    base = torch.randn(rows, cols + pad, device=device).to(dtype)
    return base[:, :cols]


def _layer_norm(dtype, device, mode="auto", rows=37, cols=203, block=64, eps=1e-5):
    x = _rows(rows, cols, 0, dtype, device).contiguous().requires_grad_()
    w = torch.randn(cols, device=device).to(dtype).requires_grad_()
    b = torch.randn(cols, device=device).to(dtype).requires_grad_()
    y = torch.empty_like(x)
    f = tritonad.autograd(layer_norm_three_pass, outputs=("Y",), mode=mode)
    y = f[(rows,)](y, x, w, b, x.stride(0), cols, eps, BLOCK=block)
    upstream = torch.randn(rows, cols, device=device).to(dtype)
    y.backward(upstream)
    x64, w64, b64 = (t.detach().double().requires_grad_() for t in (x, w, b))
    torch.nn.functional.layer_norm(x64, (cols,), w64, b64, eps).backward(upstream.double())
    return [("x", x.grad, x64.grad), ("w", w.grad, w64.grad), ("b", b.grad, b64.grad)]


def _one_input(kernel, mode, x, y, launch, reference):
    """tritonad.autograd(kernel) of its one differentiable input `x`, stored into `y`
    by `launch(op, y)`: x's gradient for a fresh upstream gradient of y's shape and
    dtype, beside that of `reference(x in fp64)`."""
    op = tritonad.autograd(kernel, outputs=("Y",), mode=mode)
    y = launch(op, y)
    upstream = torch.randn(y.shape, device=y.device).to(y.dtype)
    y.backward(upstream)
    x64 = x.detach().double().requires_grad_()
    reference(x64).backward(upstream.double())
    return [("x", x.grad, x64.grad)]


def _reload(dtype, device, mode="auto", rows=29, cols=117):
    x = torch.randn(rows, cols, device=device).to(dtype).requires_grad_()
    return _one_input(
        reload_rows, mode, x, torch.empty_like(x),
        lambda op, y: op[(rows,)](y, x, x.stride(0), cols, BLOCK=triton.next_power_of_2(cols)),
        lambda x64: x64 * torch.sin(x64).sum(-1, keepdim=True))


def _powers(dtype, device, mode="auto", rows=23, cols=45, iters=3):
    # values near 1 keep x ** 4 well scaled
    x = (1 + 0.25 * torch.rand(rows, cols, device=device)).to(dtype).requires_grad_()
    return _one_input(
        powers_in_loop, mode, x, torch.empty_like(x),
        lambda op, y: op[(rows,)](y, x, x.stride(0), cols, ITERS=iters,
                                  BLOCK=triton.next_power_of_2(cols)),
        lambda x64: x64 ** (iters + 1))


def _windows(dtype, device, mode="auto", rows=19, cols=75, half=16):
    windows = triton.cdiv(cols, half)
    x = torch.randn(rows, cols, device=device).to(dtype).requires_grad_()

    def reference(x64):
        e = torch.nn.functional.pad(torch.exp(x64), (0, 2 * half * windows - cols))
        return torch.stack([e[:, j * half:j * half + 2 * half].sum(-1)
                            for j in range(windows)], -1)
    return _one_input(
        window_sums, mode, x, torch.empty(rows, windows, device=device, dtype=torch.float32),
        lambda op, y: op[(rows,)](y, x, x.stride(0), cols, windows, HALF=half), reference)


def _shifted(dtype, device, mode="auto", rows=31, cols=93):
    x = torch.randn(rows, cols, device=device).to(dtype).requires_grad_()
    return _one_input(
        shifted_products, mode, x, torch.empty_like(x),
        lambda op, y: op[(rows,)](y, x, x.stride(0), cols, BLOCK=triton.next_power_of_2(cols)),
        lambda x64: torch.exp(x64) * torch.nn.functional.pad(x64[:, 1:], (0, 1)))


def _rope(dtype, device, mode="auto", rows=27, half=40):
    # (rows of 2 * HALF, padded: the halves' shift and the row stride both matter)
    x = _rows(rows, 2 * half, 3, dtype, device).requires_grad_()
    angles = torch.rand(half, device=device) * 6.0
    cos, sin = torch.cos(angles), torch.sin(angles)

    def reference(x64):
        x1, x2 = x64[:, :half], x64[:, half:]
        c, s = cos.double(), sin.double()
        return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)
    # (the kernel addresses y with x's row stride)
    return _one_input(
        rotate_halves, mode, x,
        torch.empty_strided(x.shape, x.stride(), device=device, dtype=dtype),
        lambda op, y: op[(rows,)](y, x, cos, sin, x.stride(0), HALF=half,
                                  BLOCK=triton.next_power_of_2(half)),
        reference)


def _token_shift(dtype, device, mode="auto", batch=3, steps=21, dim=100):
    x = torch.randn(batch, steps, dim, device=device).to(dtype).requires_grad_()
    return _one_input(
        previous_row_difference, mode, x, torch.empty_like(x),
        lambda op, y: op[(batch, steps)](y, x, steps, D=dim, BD=triton.next_power_of_2(dim)),
        lambda x64: torch.nn.functional.pad(x64, (0, 0, 1, -1)) - x64)


def _grid2d(dtype, device, mode="auto", rows=45, cols=83, bm=16, bn=32):
    x = torch.randn(rows, cols, device=device).to(dtype).requires_grad_()
    w, b = (torch.randn(cols, device=device).to(dtype).requires_grad_() for _ in range(2))
    s = torch.rand(1, device=device).to(dtype).requires_grad_()
    y = torch.empty_like(x)
    f = tritonad.autograd(scale_shift_2d, outputs=("Y",), mode=mode)
    y = f[(triton.cdiv(rows, bm), triton.cdiv(cols, bn))](y, x, w, b, s, x.stride(0), rows,
                                                          cols, BM=bm, BN=bn)
    upstream = torch.randn(rows, cols, device=device).to(dtype)
    y.backward(upstream)
    x64, w64, b64, s64 = (t.detach().double().requires_grad_() for t in (x, w, b, s))
    (s64 * torch.sin(x64) * w64 + b64).backward(upstream.double())
    # s's gradient sums rows * cols terms of both signs: fp32 rounds it by 1e-6 to 8e-6
    # whatever the sum, which falls near 0 on some draws (0.11 where 40 is typical: 0.4
    # of the tolerance, relative to it): its error is taken relative to the terms'
    # 2-norm, the size of such a sum
    terms = upstream.double() * torch.sin(x64.detach()) * w64.detach()
    return [("x", x.grad, x64.grad), ("w", w.grad, w64.grad), ("b", b.grad, b64.grad),
            ("s", s.grad, s64.grad, terms.norm())]


# Rows of an input that may overlap: the kernels above on a flat buffer read as rows
# `stride` apart (stride < N: rows share elements, each read by two programs).
OVERLAP_CASES = ("row_sums", "row_max", "two_loads", "shifted")
OVERLAP_SIZES = dict(rows=13, cols=77, bm=4, bn=32)


def _overlap_reference(case, x):
    if case == "row_sums":
        return {"Y": (x * x).sum(-1)}
    if case == "row_max":
        m = x.max(-1).values
        return {"Y": torch.sin(x) * m[:, None], "R": m}
    if case == "shifted":  # (a row's neighbour column: the next row's first, masked off)
        return {"Y": torch.exp(x) * torch.nn.functional.pad(x[:, 1:], (0, 1))}
    return {"Y": torch.exp(x * 0.5).sum(-1) * (x * x).sum(-1)}


def overlap_gradients(case, dtype, device, stride, mode="auto", **options):
    """tritonad.grad of an overlap case launched directly (the input a flat buffer:
    its shadow too, in fp32), on fresh random data; returns (gradient, fp64
    reference gradient) of the buffer. Raises what the launch raises (a refused
    launch in mode="deterministic" where rows overlap)."""
    rows, cols, bm, bn = (OVERLAP_SIZES[k] for k in ("rows", "cols", "bm", "bn"))
    kernel = {"row_sums": row_sums_of_squares, "row_max": row_max_then_map,
              "two_loads": two_loads_one_loop, "shifted": shifted_products}[case]
    flat = torch.randn(stride * (rows - 1) + cols, device=device).to(dtype)
    x64 = flat.double().requires_grad_()
    outputs = _overlap_reference(case, x64.as_strided((rows, cols), (stride, 1)))
    upstream = {name: torch.randn(out.shape, device=device) for name, out in outputs.items()}
    if case == "shifted":  # (y's elements at its rows' addresses: overlapping rows share them)
        upstream["Y"] = torch.randn(flat.shape, device=device)
        upstream_of = {"Y": upstream["Y"].as_strided((rows, cols), (stride, 1))}
    else:
        upstream_of = upstream
    sum((out * upstream_of[name].double()).sum() for name, out in outputs.items()).backward()
    bwd = tritonad.grad(kernel, mode=mode, **options)
    accumulate = options.get("accumulate", True)
    # (added to what the shadow holds: random values where it accumulates)
    dx = (torch.randn if accumulate else torch.zeros)(flat.shape, device=device)
    before = dx.clone()
    y = torch.empty(rows, cols, device=device, dtype=dtype) if case == "row_max" else \
        torch.empty(rows, device=device)
    args = dict(Y=y, X=flat, stride=stride, M=rows, N=cols, BM=bm, BN=bn)
    if case == "shifted":  # (y's rows `stride` apart too: y is read as rows of its own)
        y = torch.empty(flat.shape, device=device, dtype=dtype)
        args = dict(Y=y, X=flat, stride=stride, N=cols, BLOCK=triton.next_power_of_2(cols))
    args[bwd.shadows["X"]] = dx
    args[bwd.shadows["Y"]] = upstream["Y"].to(y.dtype)
    if case == "row_max":
        args.update(R=torch.empty(rows, device=device))
        args[bwd.shadows["R"]] = upstream["R"].float()
    bwd[(rows if case == "shifted" else triton.cdiv(rows, bm),)](**args)
    return dx - before, x64.grad


_RUNS = {"layer_norm": _layer_norm, "reload": _reload, "powers": _powers, "windows": _windows,
         "shifted": _shifted, "rope": _rope, "token_shift": _token_shift, "grid2d": _grid2d}


def check(name, dtype, device, mode="auto"):
    """The largest relative error of each gradient of case `name`."""
    return _relative_errors(_RUNS[name](dtype, device, mode=mode))


def gradients(name, dtype, device, mode="deterministic"):
    """The gradients case `name` computes (for comparing two runs bitwise)."""
    return {grad_name: got for grad_name, got, *_ in _RUNS[name](dtype, device, mode=mode)}


CASES = list(_RUNS)


# Each case's kernel, argument types ("P": a pointer of the case's dtype) and
# constexprs, as schedule_of derives it on the CPU.
_SCHEDULED = {
    "layer_norm": (layer_norm_three_pass, dict(Y="P", X="P", W="P", B="P", stride="i32",
                                               N="i32", eps="fp32"), dict(BLOCK=64)),
    "reload": (reload_rows, dict(Y="P", X="P", stride="i32", N="i32"), dict(BLOCK=128)),
    "powers": (powers_in_loop, dict(Y="P", X="P", stride="i32", N="i32"),
               dict(ITERS=3, BLOCK=64)),
    "windows": (window_sums, dict(Y="*fp32", X="P", stride="i32", N="i32", WINDOWS="i32"),
                dict(HALF=16)),
    "shifted": (shifted_products, dict(Y="P", X="P", stride="i32", N="i32"), dict(BLOCK=128)),
    "rope": (rotate_halves, dict(Y="P", X="P", COS="*fp32", SIN="*fp32", stride="i32"),
             dict(HALF=40, BLOCK=64)),
    "token_shift": (previous_row_difference, dict(Y="P", X="P", T="i32"), dict(D=100, BD=128)),
    "grid2d": (scale_shift_2d, dict(Y="P", X="P", W="P", B="P", S="P", stride="i32", M="i32",
                                    N="i32"), dict(BM=16, BN=32)),
}


def schedule_of(kernel_name, mode, dtype="fp32"):
    """The backward of case `kernel_name`, its argument types and constexprs (for
    compile_util.compile_on_cpu)."""
    kernel, types, constexprs = _SCHEDULED[kernel_name]
    args = {name: f"*{dtype}" if kind == "P" else kind for name, kind in types.items()}
    return tritonad.grad(kernel, mode=mode), args, dict(constexprs)
