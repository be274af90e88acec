"""Programs that read a transposed view: program `col` reads column `col` of a
row-major x, ``x[rows, col]`` at ``col * stride_c + rows * stride_r``, with stride_c = 1
and the row stride between its lanes. Its addresses are disjoint from every other
program's, but with the programs as the inner digit of the address, not the lanes.

The access analysis stacks the address's digits in either order where a runtime stride
separates the lanes (Analysis/AccessAnalysis.cpp; lit: AutoDiff/kernel-exclusive-
transposed.mlir), and the launch checks the disjunction: the gradient into x is a plain
read-add-write for the transposed and the row-major reading alike, an atomic add where
the programs do share addresses (a column broadcast over them, stride 0), and
``mode="deterministic"`` takes the first two and refuses the third at launch. (Before,
the transposed reading got atomics, and deterministic mode refused it.)

CPU: the schedule. GPU: gradients against torch.autograd in each layout, fp32 and bf16,
odd sizes, and bitwise-equal deterministic launches.
"""

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

import triton.language as tl  # noqa: E402

from gpu_util import requires_gpu  # noqa: E402
from compile_util import compile_for_schedule  # noqa: E402
from corpus.norms import column_rms_kernel, column_silu_constexpr_kernel  # noqa: E402


TYPES = dict(X="*fp32", Y="*fp32", stride_r="i32", stride_c="i32", M="i32", eps="fp32")


def test_transposed_reading_is_checked_at_launch(always_compile):
    for mode in ("auto", "deterministic"):
        bwd = tritonad.grad(column_rms_kernel, mode=mode)
        schedule = compile_for_schedule(bwd, TYPES, dict(BLOCK_M=64))
        line = next(l for l in schedule.splitlines() if l.startswith("X: "))
        assert "strides, masks and grid keep tiles disjoint" in line, schedule
        ir = bwd.derived_ir()
        assert "arith.ori" in ir  # either order of the digits
        assert ir.count("tt.atomic_rmw") == (1 if mode == "auto" else 0), mode


def _inputs(layout, M, N, dtype):
    if layout == "transposed":   # x row-major [M, N]: programs innermost
        x = torch.randn(M, N, device="cuda", dtype=dtype)
        return x, torch.zeros_like(x), lambda t: t
    if layout == "row_major":    # x = t.T with t row-major [N, M]: lanes innermost
        t = torch.randn(N, M, device="cuda", dtype=dtype)
        return t.T, torch.zeros_like(t).T, lambda t: t
    # one column broadcast to every program: stride_c = 0, a shared gradient
    x = torch.randn(M, 1, device="cuda", dtype=dtype)
    return x, torch.zeros_like(x), lambda t: t.expand(M, N)


def _launch(bwd, x, dx, expand, dy, M, N):
    xs, dxs = expand(x), expand(dx)
    y = torch.empty(N, M, device="cuda", dtype=x.dtype)
    bwd[(N,)](xs, y, xs.stride(0), xs.stride(1), M, 1e-5,
              **{bwd.shadows["X"]: dxs, bwd.shadows["Y"]: dy.clone()}, BLOCK_M=64)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", ["transposed", "row_major", "broadcast"])
@pytest.mark.parametrize("mode", ["auto", "deterministic"])
def test_column_rms_grads_match_torch(dtype, layout, mode):
    M, N = 45, 37
    x, dx, expand = _inputs(layout, M, N, dtype)
    dy = torch.randn(N, M, device="cuda", dtype=dtype)
    bwd = tritonad.grad(column_rms_kernel, mode=mode)
    # (a broadcast column: every program adds to it, in deterministic mode through
    # scatter slots into the broadcast buffer's memory; a refused launch before them)
    _launch(bwd, x, dx, expand, dy, M, N)
    leaf = x.detach().double().requires_grad_()
    xd = expand(leaf)
    out = (xd * torch.rsqrt((xd * xd).mean(0, keepdim=True) + 1e-5)).T
    (want,) = torch.autograd.grad(out, leaf, dy.double())
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    assert (dx.double() - want).abs().max().item() <= tol * want.abs().max().item()
    if mode == "deterministic":
        again = torch.zeros_like(dx)
        _launch(bwd, x, again, expand, dy, M, N)
        assert torch.equal(again, dx)


@triton.jit
def block_pointer_rows_kernel(X, Y, stride, N, BLOCK_N: tl.constexpr):
    # One row per program through a block pointer; rows `stride` apart, stride < BLOCK_N
    row = tl.program_id(0)
    bp = tl.make_block_ptr(base=X + row * stride, shape=(N,), strides=(1,), offsets=(0,),
                           block_shape=(BLOCK_N,), order=(0,))
    x = tl.load(bp, boundary_check=(0,), padding_option="zero").to(tl.float32)
    cols = tl.arange(0, BLOCK_N)
    tl.store(Y + row * N + cols, (x * tl.sigmoid(x)).to(Y.dtype.element_ty), mask=cols < N)


def test_block_pointer_boundary_check_bounds_the_rows(always_compile):
    """The boundary check's `index < N` clamps the row's span (its i32 offset widened to
    i64 is the constant it is): rows 138 apart with N = 133 < BLOCK_N = 256 are disjoint,
    which deterministic mode once refused at launch (the fuzz's seed 208). The
    condition now decides whether the launch needs the scatter slots that take the
    rows where they overlap (none where it holds)."""
    from tritonad import _coverage
    from compile_util import compile_on_cpu

    bwd = tritonad.grad(block_pointer_rows_kernel, mode="deterministic")
    compiled = compile_on_cpu(bwd, dict(X="*fp32", Y="*fp32", stride="i32", N="i32"),
                              dict(BLOCK_N=256))
    assert not [r for rs in compiled.metadata.tritonad_requirements.values() for r in rs]
    (condition,) = [r["unused"] for r in compiled.metadata.tritonad_scatter.values() if r]
    holds = lambda stride, n: _coverage.evaluate(condition, dict(stride=stride, N=n),  # noqa: E731
                                                 (20, 1, 1))
    assert holds(138, 133) and holds(133, 133) and not holds(132, 133), condition


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("mode", ["auto", "deterministic"])
def test_block_pointer_rows_match_torch(dtype, mode):
    M, N, stride = 21, 133, 138
    buf = torch.randn(M, stride, device="cuda", dtype=dtype)
    dbuf = torch.zeros_like(buf)
    dy = torch.randn(M, N, device="cuda", dtype=dtype)
    bwd = tritonad.grad(block_pointer_rows_kernel, mode=mode)
    shadows = {bwd.shadows["X"]: dbuf, bwd.shadows["Y"]: dy.clone()}
    bwd[(M,)](buf, torch.empty(M, N, device="cuda", dtype=dtype), stride, N, **shadows,
              BLOCK_N=256)
    x = buf[:, :N].double().requires_grad_()
    (want,) = torch.autograd.grad(x * torch.sigmoid(x), x, dy.double())
    tol = 1e-4 if dtype == torch.float32 else 2e-2
    assert (dbuf[:, :N].double() - want).abs().max().item() <= tol * want.abs().max().item()
    assert not dbuf[:, N:].any()  # the gap between rows is no one's
    if mode == "deterministic":
        assert "tt.atomic_rmw" not in bwd.derived_ir()


def _constexpr_columns(mode):
    from compile_util import compile_on_cpu

    bwd = tritonad.grad(column_silu_constexpr_kernel, mode=mode)
    compiled = compile_on_cpu(bwd, dict(X="*fp32", Y="*fp32", M="i32"),
                              dict(N=37, BLOCK_M=64))
    return bwd, compiled


@pytest.mark.parametrize("mode", ["auto", "deterministic"])
def test_constant_strides_stack_in_stride_order(mode, always_compile):
    """With every stride a constant, the digits also stack by stride (programs first):
    plain where the launch keeps the programs within the N columns (grid <= N), checked
    at launch; deterministic mode has no atomics (the lanes-first order alone had the
    programs' stride 1 below the lanes' span, statically)."""
    from tritonad import _coverage

    bwd, compiled = _constexpr_columns(mode)
    line = next(l for l in bwd.schedule().splitlines() if l.startswith("X: "))
    assert "strides, masks and grid keep tiles disjoint" in line, line
    assert bwd.derived_ir().count("tt.atomic_rmw") == (1 if mode == "auto" else 0)
    if mode == "deterministic":  # (where it fails, scatter slots: none allocated where it holds)
        (condition,) = [r["unused"] for r in compiled.metadata.tritonad_scatter.values() if r]
        holds = lambda grid: _coverage.evaluate(condition, dict(M=45), (grid, 1, 1))  # noqa: E731
        assert holds(37) and holds(1) and not holds(38), condition


_CONSTEXPR_COLUMNS = """
import json, torch, tritonad
from interpreter_races import RaceCheck
from corpus.norms import column_silu_constexpr_kernel
M, N = 45, 37
errors = {}
for mode in ("auto", "deterministic"):
    torch.manual_seed(3)
    x = torch.randn(M, N)
    dx, dy = torch.zeros_like(x), torch.randn(N, M)
    bwd = tritonad.grad(column_silu_constexpr_kernel, mode=mode)
    with RaceCheck() as races:
        bwd[(N,)](x, torch.empty(N, M), M, N=N, BLOCK_M=64,
                  **{bwd.shadows["X"]: dx, bwd.shadows["Y"]: dy})
    leaf = x.double().requires_grad_()
    (want,) = torch.autograd.grad((leaf * torch.sigmoid(leaf)).T, leaf, dy.double())
    errors[mode] = [((dx.double() - want).abs().max() / want.abs().max()).item(),
                    len(races.races)]
print(json.dumps(errors))
"""


def test_constant_strides_stack_in_stride_order_interpreted():
    from interpreter_util import run_interpreted

    for mode, (error, races) in run_interpreted(_CONSTEXPR_COLUMNS).items():
        assert error <= 1e-6 and races == 0, (mode, error, races)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("mode", ["auto", "deterministic"])
def test_constant_strides_grads_match_torch(dtype, mode):
    M, N = 45, 37
    x = torch.randn(M, N, device="cuda", dtype=dtype)
    dx = torch.zeros_like(x)
    dy = torch.randn(N, M, device="cuda", dtype=dtype)
    bwd = tritonad.grad(column_silu_constexpr_kernel, mode=mode)
    bwd[(N,)](x, torch.empty(N, M, device="cuda", dtype=dtype), M, N=N, BLOCK_M=64,
              **{bwd.shadows["X"]: dx, bwd.shadows["Y"]: dy.clone()})
    leaf = x.double().requires_grad_()
    (want,) = torch.autograd.grad((leaf * torch.sigmoid(leaf)).T, leaf, dy.double())
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-5
    assert (dx.double() - want).abs().max().item() <= tol * want.abs().max().item()
