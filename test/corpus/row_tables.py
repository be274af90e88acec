"""Kernels whose programs may add to the same elements in ways no analysis can
prove apart, as users write them: rows gathered through a table (an embedding's
lookup, a MoE's token permutation), columns gathered in a loop of a runtime trip
count, a row table beside a weight every program shares, rows a runtime
stride apart that may overlap, loops whose trip counts vary by program (a
persistent kernel's rows, a causal prefix), and a stencil whose first tile
starts before its tensor. The default mode adds their gradients with
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


@triton.jit
def gathered_matmul(C, A, B, ROWS, M, N, K, stride_a, stride_b, stride_c, BM: tl.constexpr,
                    BN: tl.constexpr, BK: tl.constexpr):
    """C = A[rows] @ B on a 2-D grid (a mixture of experts' gathered tokens): B's
    gradient is a product of tiles (programs of their own, re-parallelized), A's
    lands on the gathered rows."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rows = tl.load(ROWS + rm, mask=rm < M, other=0).to(tl.int64)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(A + rows[:, None] * stride_a + rk[None, :],
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(B + rk[:, None] * stride_b + rn[None, :],
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(C + rm[:, None] * stride_c + rn[None, :], acc.to(C.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def persistent_gather(Y, X, ROWS, n_out, stride, N, BLOCK: tl.constexpr):
    """The lookup in a persistent kernel: program p takes outputs p, p + P, ...
    (its trip count depends on the program)."""
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    for i in range(tl.program_id(0), n_out, tl.num_programs(0)):
        row = tl.load(ROWS + i).to(tl.int64)
        x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(Y + i * N + cols, (x * tl.sigmoid(x)).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def persistent_gather_scaled(Y, X, W, ROWS, n_out, stride, N, BLOCK: tl.constexpr):
    """The persistent lookup times a weight every program shares: W's gradient
    in partial buffers, whose backward strides over the forward's programs,
    each of which runs a number of rows of its own."""
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    for i in range(tl.program_id(0), n_out, tl.num_programs(0)):
        row = tl.load(ROWS + i).to(tl.int64)
        x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(Y + i * N + cols, (x * w).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def prefix_gather(Y, X, ROWS, stride, N, BLOCK: tl.constexpr):
    """y[p] = sum over j <= p of sin(x[rows[j]]): a causal loop (program p runs
    p + 1 iterations) over gathered rows."""
    p = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for j in range(0, p + 1):
        row = tl.load(ROWS + j).to(tl.int64)
        acc += tl.sin(tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32))
    tl.store(Y + p * N + cols, acc.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def stencil(Y, X, n, BLOCK: tl.constexpr):
    """y[i] = sin(x[i - 1]) + 2 x[i] + x[i + 1]^2: each program's loads reach its
    neighbours' tiles, and the first program's left tile starts before x (its
    first lane masked off)."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    left = tl.load(X + i - 1, mask=(i >= 1) & (i - 1 < n), other=0.0).to(tl.float32)
    middle = tl.load(X + i, mask=i < n, other=0.0).to(tl.float32)
    right = tl.load(X + i + 1, mask=i + 1 < n, other=0.0).to(tl.float32)
    y = tl.sin(left) + 2.0 * middle + right * right
    tl.store(Y + i, y.to(Y.dtype.element_ty), mask=i < n)


def row_table(programs, rows, device):
    """A table of `programs` row indices below `rows`, in random order."""
    # (every row at least once where programs >= rows, and some twice or more)
    table = torch.randint(0, rows, (programs,), device=device, dtype=torch.int32)
    table[: min(rows, programs)] = torch.arange(min(rows, programs), device=device)
    return table[torch.randperm(programs, device=device)]


def _gathered(kernel, reference, dtype, device, mode, rows, lookups, cols, block,
              persistent=None):
    """x's gradient through tritonad.autograd(kernel) of a gather of `lookups` rows of
    x through a table, beside that of `reference(gathered rows in fp64, cols)`: one
    program per lookup, or `persistent` programs that stride over them (the kernel
    then takes their count after the table)."""
    x = torch.randn(rows, cols, device=device).to(dtype).requires_grad_()
    table = row_table(lookups, rows, device)
    f = tritonad.autograd(kernel, outputs=("Y",), mode=mode)
    counted = () if persistent is None else (lookups,)
    y = f[(persistent or lookups,)](torch.empty(lookups, cols, device=device, dtype=dtype), x,
                                    table, *counted, x.stride(0), cols, BLOCK=block)
    upstream = torch.randn(y.shape, device=device).to(dtype)
    y.backward(upstream)
    x64 = x.detach().double().requires_grad_()
    reference(x64[table.long()], cols).backward(upstream.double())
    return [("x", x.grad, x64.grad)]


def _silu(g, cols):
    return g * torch.sigmoid(g)


def _gather(dtype, device, mode):
    return _gathered(gather_rows, _silu, dtype, device, mode, rows=23, lookups=61, cols=77,
                     block=128)


def _gather_looped(dtype, device, mode):
    return _gathered(gather_rows_looped, lambda g, cols: g * (g * g).sum(1, keepdim=True) / cols,
                     dtype, device, mode, rows=19, lookups=37, cols=150, block=32)


def _scaled(kernel, dtype, device, mode, rows, lookups, cols, block, persistent=None):
    """x's and w's gradients of y = x[table] * w through tritonad.autograd(kernel)
    (as _gathered launches it), beside fp64 torch's."""
    x = torch.randn(rows, cols, device=device).to(dtype).requires_grad_()
    w = torch.randn(cols, device=device).to(dtype).requires_grad_()
    table = row_table(lookups, rows, device)
    f = tritonad.autograd(kernel, outputs=("Y",), mode=mode)
    counted = () if persistent is None else (lookups,)
    y = f[(persistent or lookups,)](torch.empty(lookups, cols, device=device, dtype=dtype), x,
                                    w, table, *counted, x.stride(0), cols, BLOCK=block)
    upstream = torch.randn(y.shape, device=device).to(dtype)
    y.backward(upstream)
    x64, w64 = (t.detach().double().requires_grad_() for t in (x, w))
    (x64[table.long()] * w64).backward(upstream.double())
    return [("x", x.grad, x64.grad), ("w", w.grad, w64.grad)]


def _gather_scaled(dtype, device, mode):
    return _scaled(gather_rows_scaled, dtype, device, mode, rows=17, lookups=45, cols=71,
                   block=128)


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


def _persistent(dtype, device, mode):
    return _gathered(persistent_gather, _silu, dtype, device, mode, rows=19, lookups=53,
                     cols=45, block=64, persistent=7)


def _persistent_scaled(dtype, device, mode):
    return _scaled(persistent_gather_scaled, dtype, device, mode, rows=17, lookups=41, cols=45,
                   block=64, persistent=6)


def _prefix(dtype, device, mode):
    return _gathered(prefix_gather, lambda g, cols: torch.sin(g).cumsum(0), dtype, device,
                     mode, rows=13, lookups=23, cols=37, block=64)


def _stencil(dtype, device, mode, n=83, block=16):
    x = torch.randn(n, device=device).to(dtype).requires_grad_()
    f = tritonad.autograd(stencil, outputs=("Y",), mode=mode)
    y = f[(triton.cdiv(n, block),)](torch.empty(n, device=device, dtype=dtype), x, n,
                                    BLOCK=block)
    upstream = torch.randn(y.shape, device=device).to(dtype)
    y.backward(upstream)
    x64 = x.detach().double().requires_grad_()
    zero = torch.zeros(1, dtype=torch.float64, device=device)
    left, right = torch.cat([zero, x64[:-1]]), torch.cat([x64[1:], zero])
    first = (torch.arange(n, device=device) >= 1).double()
    (torch.sin(left) * first + 2.0 * x64 + right * right).backward(upstream.double())
    return [("x", x.grad, x64.grad)]


def _matmul(dtype, device, mode, rows=29, m=45, n=37, k=40):
    a = torch.randn(rows, k, device=device).to(dtype).requires_grad_()
    b = torch.randn(k, n, device=device).to(dtype).requires_grad_()
    table = row_table(m, rows, device)
    f = tritonad.autograd(gathered_matmul, outputs=("C",), mode=mode)
    c = f[(triton.cdiv(m, 16), triton.cdiv(n, 16))](
        torch.empty(m, n, device=device, dtype=dtype), a, b, table, m, n, k, a.stride(0),
        b.stride(0), n, BM=16, BN=16, BK=16)
    upstream = torch.randn(c.shape, device=device).to(dtype)
    c.backward(upstream)
    a64, b64 = (t.detach().double().requires_grad_() for t in (a, b))
    (a64[table.long()] @ b64).backward(upstream.double())
    return [("a", a.grad, a64.grad), ("b", b.grad, b64.grad)]


_RUNS = {"gather": _gather, "gather_looped": _gather_looped, "gather_scaled": _gather_scaled,
         "windows": _windows, "matmul": _matmul, "persistent": _persistent,
         "persistent_scaled": _persistent_scaled, "prefix": _prefix, "stencil": _stencil}
CASES = list(_RUNS)
# The input whose gradient each case sums through scatter slots.
SCATTERED = {name: "A" if name == "matmul" else "X" for name in CASES}


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
    "matmul": (gathered_matmul, dict(C="P", A="P", B="P", ROWS="*i32", M="i32", N="i32",
                                     K="i32", stride_a="i32", stride_b="i32", stride_c="i32"),
               dict(BM=16, BN=16, BK=16)),
    "persistent": (persistent_gather, dict(Y="P", X="P", ROWS="*i32", n_out="i32",
                                           stride="i32", N="i32"), dict(BLOCK=64)),
    "persistent_scaled": (persistent_gather_scaled, dict(Y="P", X="P", W="P", ROWS="*i32",
                                                         n_out="i32", stride="i32", N="i32"),
                          dict(BLOCK=64)),
    "prefix": (prefix_gather, dict(Y="P", X="P", ROWS="*i32", stride="i32", N="i32"),
               dict(BLOCK=64)),
    "stencil": (stencil, dict(Y="P", X="P", n="i32"), dict(BLOCK=16)),
}


def schedule_of(name, mode="deterministic", dtype="fp32"):
    """The backward of case `name`, its argument types and constexprs (for
    compile_util.compile_on_cpu)."""
    kernel, types, constexprs = _SCHEDULED[name]
    args = {n: f"*{dtype}" if kind == "P" else kind for n, kind in types.items()}
    return tritonad.grad(kernel, mode=mode), args, dict(constexprs)
