"""Kernels whose programs may add to the same elements in ways no analysis can
prove apart, as users write them: rows gathered through a table (an embedding's
lookup, a MoE's token permutation), columns gathered in a loop of a runtime trip
count, a row table beside a weight every program shares, and rows a runtime
stride apart that may overlap. The default mode adds their gradients with
atomics; mode="deterministic" sums them through scatter slots
(cpp/include/tritonad/AutoDiff/ScatterSums.h): the same bits on every run.

``check(name, ...)`` launches one kernel through ``tritonad.autograd`` on fresh
random inputs of odd sizes (tables with repeated rows) and returns the largest
error of each gradient against fp64 torch, relative to its magnitude;
``gradients`` returns them (for comparing runs bitwise); ``schedule_of`` gives
what deriving it on the CPU needs.
"""

import torch
import triton
import triton.language as tl

import tritonad


@triton.jit
def gather_rows(Y, X, ROWS, stride, N, BLOCK: tl.constexpr):
    """y[p] = silu(x[rows[p]]): an embedding's lookup (rows repeat)."""
    p = tl.program_id(0)
    row = tl.load(ROWS + p).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + p * N + cols, (x * tl.sigmoid(x)).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def gather_rows_looped(Y, X, ROWS, stride, N, BLOCK: tl.constexpr):
    """The same lookup over column blocks (a loop of a runtime trip count), the
    row scaled by the sum of its squares."""
    p = tl.program_id(0)
    row = tl.load(ROWS + p).to(tl.int64)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + row * stride + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    scale = tl.sum(acc, axis=0) / N
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(Y + p * N + cols, (x * scale).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def gather_rows_scaled(Y, X, W, ROWS, stride, N, BLOCK: tl.constexpr):
    """y[p] = x[rows[p]] * w: the lookup times a weight every program shares
    (its gradient in partial buffers: the backward's programs stride over the
    forward's)."""
    p = tl.program_id(0)
    row = tl.load(ROWS + p).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + p * N + cols, (x * w).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def strided_windows(Y, X, stride, N, BLOCK: tl.constexpr):
    """y[p] = sin(x[p * stride : p * stride + N]): windows a runtime stride apart,
    which overlap where stride < N (the launch decides)."""
    p = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + p * stride + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + p * N + cols, tl.sin(x).to(Y.dtype.element_ty), mask=mask)


def _table(programs, rows, device):
    # (every row at least once where programs >= rows, and some twice or more)
    table = torch.randint(0, rows, (programs,), device=device, dtype=torch.int32)
    table[: min(rows, programs)] = torch.arange(min(rows, programs), device=device)
    return table[torch.randperm(programs, device=device)]


def _gathered(kernel, reference, dtype, device, mode, rows, programs, cols, block):
    """x's gradient through tritonad.autograd(kernel) of a gather of `programs` rows of
    x through a table, beside that of `reference(gathered rows in fp64, cols)`."""
    x = torch.randn(rows, cols, device=device).to(dtype).requires_grad_()
    table = _table(programs, rows, device)
    f = tritonad.autograd(kernel, outputs=("Y",), mode=mode)
    y = f[(programs,)](torch.empty(programs, cols, device=device, dtype=dtype), x, table,
                       x.stride(0), cols, BLOCK=block)
    upstream = torch.randn(y.shape, device=device).to(dtype)
    y.backward(upstream)
    x64 = x.detach().double().requires_grad_()
    reference(x64[table.long()], cols).backward(upstream.double())
    return [("x", x.grad, x64.grad)]


def _gather(dtype, device, mode):
    return _gathered(gather_rows, lambda g, cols: g * torch.sigmoid(g), dtype, device, mode,
                     rows=23, programs=61, cols=77, block=128)


def _gather_looped(dtype, device, mode):
    return _gathered(gather_rows_looped, lambda g, cols: g * (g * g).sum(1, keepdim=True) / cols,
                     dtype, device, mode, rows=19, programs=37, cols=150, block=32)


def _gather_scaled(dtype, device, mode, rows=17, programs=45, cols=71):
    x = torch.randn(rows, cols, device=device).to(dtype).requires_grad_()
    w = torch.randn(cols, device=device).to(dtype).requires_grad_()
    table = _table(programs, rows, device)
    f = tritonad.autograd(gather_rows_scaled, outputs=("Y",), mode=mode)
    y = f[(programs,)](torch.empty(programs, cols, device=device, dtype=dtype), x, w, table,
                       x.stride(0), cols, BLOCK=128)
    upstream = torch.randn(y.shape, device=device).to(dtype)
    y.backward(upstream)
    x64, w64 = (t.detach().double().requires_grad_() for t in (x, w))
    (x64[table.long()] * w64).backward(upstream.double())
    return [("x", x.grad, x64.grad), ("w", w.grad, w64.grad)]


def _windows(dtype, device, mode, programs=29, cols=77, stride=50):
    x = torch.randn((programs - 1) * stride + cols, device=device).to(dtype).requires_grad_()
    f = tritonad.autograd(strided_windows, outputs=("Y",), mode=mode)
    y = f[(programs,)](torch.empty(programs, cols, device=device, dtype=dtype), x, stride, cols,
                       BLOCK=128)
    upstream = torch.randn(y.shape, device=device).to(dtype)
    y.backward(upstream)
    x64 = x.detach().double().requires_grad_()
    torch.sin(x64.as_strided((programs, cols), (stride, 1))).backward(upstream.double())
    return [("x", x.grad, x64.grad)]


_RUNS = {"gather": _gather, "gather_looped": _gather_looped, "gather_scaled": _gather_scaled,
         "windows": _windows}
CASES = list(_RUNS)


def _relative_errors(results):
    return {name: ((got.double() - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()
            for name, got, want in results}


def check(name, dtype, device, mode="deterministic"):
    """The largest error of each gradient of case `name`, relative to its magnitude."""
    return _relative_errors(_RUNS[name](dtype, device, mode=mode))


def gradients(name, dtype, device, mode="deterministic", seed=0):
    """The gradients case `name` computes from the inputs `seed` draws."""
    torch.manual_seed(seed)
    return {grad_name: got for grad_name, got, _ in _RUNS[name](dtype, device, mode=mode)}


_SCHEDULED = {
    "gather": (gather_rows, dict(Y="P", X="P", ROWS="*i32", stride="i32", N="i32"),
               dict(BLOCK=128)),
    "gather_looped": (gather_rows_looped, dict(Y="P", X="P", ROWS="*i32", stride="i32",
                                               N="i32"), dict(BLOCK=32)),
    "gather_scaled": (gather_rows_scaled, dict(Y="P", X="P", W="P", ROWS="*i32", stride="i32",
                                               N="i32"), dict(BLOCK=128)),
    "windows": (strided_windows, dict(Y="P", X="P", stride="i32", N="i32"), dict(BLOCK=128)),
}


def schedule_of(name, mode="deterministic", dtype="fp32"):
    """The backward of case `name`, its argument types and constexprs (for
    compile_util.compile_on_cpu)."""
    kernel, types, constexprs = _SCHEDULED[name]
    args = {n: f"*{dtype}" if kind == "P" else kind for n, kind in types.items()}
    return tritonad.grad(kernel, mode=mode), args, dict(constexprs)
