"""Gradient buffers without a zero fill: where the derived backward stores every
element of a shadow once, the bridge passes it uninitialized.

CPU: the coverage the pass records for real kernels, evaluated by
``_coverage.covers`` against tensors laid out every way a caller may pass them
(covered exactly; a wider tensor, a grid too small, a mask that stops short,
gaps between rows, a failing run-time exclusivity check: not covered), and the
launch path's zero fill of uncovered shadows. GPU: gradients through the bridge
equal torch.autograd's where the stores cover the input and where they do not
(the untouched elements must come out zero, not garbage).
"""

import os
import sys

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

import triton.language as tl  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from gpu_util import requires_gpu  # noqa: E402
from compile_util import compile_backward  # noqa: E402
from corpus.user_kernels import CASES, gelu_kernel, softmax_kernel  # noqa: E402
from tritonad import _coverage, _partial  # noqa: E402


pytestmark = pytest.mark.usefixtures("always_compile")


def coverage_of(name):
    kernel, types, constexprs, none = CASES[name]
    bwd = tritonad.grad(kernel, accumulate=False)
    compile_backward(bwd, types, constexprs, none=[n for n in none if n in bwd.launch_signature])
    return bwd.coverage(), bwd.schedule()


def test_elementwise_coverage_is_recorded_and_reported():
    coverage, schedule = coverage_of("gelu")
    assert set(coverage) == {"dx_ptr"}
    assert "no zero fill where these stores reach every element" in schedule


@pytest.mark.parametrize("size, n, grid, covered", [
    (1000, 1000, 4, True),     # 4 programs of 256 reach [0, 1024) clamped to n
    (1024, 1024, 4, True),
    (1, 1, 1, True),
    (1000, 1000, 3, False),    # too few programs: [768, 1000) untouched
    (1000, 900, 4, False),     # the mask stops short of the tensor
    (1000, 1024, 4, False),    # stores beyond the tensor: not the tensor's elements
])
def test_elementwise_coverage_evaluates_grid_and_mask(size, n, grid, covered):
    record = coverage_of("gelu")[0]["dx_ptr"]
    x = torch.empty(size)
    assert _coverage.covers(record, x, {"n": n}, (grid,)) is covered


def test_elementwise_coverage_refuses_a_strided_tensor():
    record = coverage_of("gelu")[0]["dx_ptr"]
    x = torch.empty(2000)[::2]   # the kernel addresses x_ptr + offs, contiguous
    assert not _coverage.covers(record, x, {"n": 1000}, (4,))


def test_row_coverage_follows_strides_and_runtime_check():
    record = coverage_of("softmax")[0]["din_ptr"]    # BLOCK_N = 1024 (CASES)
    rows = torch.empty(7, 300)
    args = {"in_row_stride": 300, "out_row_stride": 300, "n_cols": 300}
    assert _coverage.covers(record, rows, args, (7,))
    # a column slice: rows 400 apart, 300 columns each (gaps stay untouched, and
    # are no element of the tensor)
    sliced = torch.empty(7, 400)[:, :300]
    assert _coverage.covers(record, sliced, dict(args, in_row_stride=400), (7,))
    assert not _coverage.covers(record, rows, dict(args, n_cols=299), (7,))
    assert not _coverage.covers(record, rows, args, (6,))
    # rows overlapping: the kernel's run-time check picks atomics, which need zeros
    assert not _coverage.covers(record, torch.empty(7, 300), dict(args, in_row_stride=100),
                                (7,))


def test_coverage_decisions_are_remembered_per_launch_values():
    """covers() is asked at every launch and remembers its answer per record,
    layout, grid and the values of the arguments the record reads: a change of
    any of them is a new question."""
    record = coverage_of("softmax")[0]["din_ptr"]
    assert set(_coverage._names_in(record)) >= {"in_row_stride", "n_cols"}
    rows = torch.empty(7, 300)
    args = {"in_row_stride": 300, "out_row_stride": 300, "n_cols": 300}
    answers = [_coverage.covers(record, rows, a, (7,))
               for a in (args, dict(args, n_cols=299), args, dict(args, in_row_stride=100))]
    assert answers == [True, False, True, False]
    assert not _coverage.covers(record, torch.empty(7, 301)[:, :300], args, (7,))
    assert not _coverage.covers(record, rows, args, (8,))
    assert _coverage.covers(record, rows, args, (7,))


def test_expressions_follow_arith_semantics():
    e = ("divs", ("const", -7), ("const", 2))
    assert _coverage.evaluate(e, {}, ()) == -3
    assert _coverage.evaluate(("rems", ("const", -7), ("const", 2)), {}, ()) == -1
    assert _coverage.evaluate(("select", ("lt", ("arg", "a"), ("const", 3)), ("const", 1),
                               ("programs", 2)), {"a": 5}, (4, 1, 9)) == 9
    with pytest.raises(KeyError):
        _coverage.evaluate(("arg", "missing"), {}, ())


def test_launch_zero_fills_an_uncovered_shadow_and_leaves_a_covered_one():
    """The launch path with a stand-in for Triton's run: the compiled kernel's
    metadata carries the coverage; garbage must become zeros exactly where the
    stores do not reach."""
    record = coverage_of("gelu")[0]["dx_ptr"]

    class Kernel:
        class metadata:
            tritonad_coverage = {"bwd": {"dx_ptr": record}}

    def run(grid, warmup, **kwargs):
        return Kernel

    for n, covered in ((1000, True), (900, False)):
        dx = torch.full((1000,), float("nan"))
        with _partial.uninitialized([dx]):
            _partial.launch(run, (4,), False, {"n": n, "dx_ptr": dx, "BLOCK": 256},
                            ["dx_ptr"], use_partial=False)
        assert torch.isnan(dx).all() if covered else torch.count_nonzero(dx) == 0


def test_a_shadow_no_launch_reached_is_zeroed_on_exit():
    dx = torch.full((10,), float("nan"))
    with _partial.uninitialized([dx]):
        pass
    assert torch.count_nonzero(dx) == 0


# ---------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------

@triton.jit
def _head_scale_kernel(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    # reads only the first n_cols columns of each row
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, 2.0 * x * x, mask=m)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])   # (tl.erf: fp32/fp64)
@pytest.mark.parametrize("n", [1, 1000, 4097])
def test_gpu_covered_gradient_needs_no_zeros(dtype, n, monkeypatch):
    torch.manual_seed(n)
    op = tritonad.autograd(gelu_kernel, outputs=("y_ptr",))
    x = torch.randn(n, device="cuda", dtype=dtype, requires_grad=True)
    fills = []
    real_zero = torch.Tensor.zero_
    monkeypatch.setattr(torch.Tensor, "zero_", lambda t: fills.append(t.shape) or real_zero(t))
    y = op[(triton.cdiv(n, 256),)](x, torch.empty_like(x), n, BLOCK=256)
    g = torch.randn_like(y)
    y.backward(g)
    assert fills == []
    ref = x.detach().float().requires_grad_()
    torch.nn.functional.gelu(ref).backward(g.float())
    torch.testing.assert_close(x.grad.float(), ref.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("n_cols", [37, 64])
def test_gpu_partially_read_input_gets_zeros_elsewhere(n_cols):
    torch.manual_seed(0)
    op = tritonad.autograd(_head_scale_kernel, outputs=("y_ptr",))
    x = torch.randn(9, 64, device="cuda", requires_grad=True)
    y = op[(9,)](x, torch.empty(9, n_cols, device="cuda"), x.stride(0), n_cols, BLOCK=64)
    g = torch.randn_like(y)
    for _ in range(3):   # garbage from earlier allocations must never leak through
        x.grad = None
        y.backward(g, retain_graph=True)
        expected = torch.zeros_like(x)
        expected[:, :n_cols] = 4.0 * x.detach()[:, :n_cols] * g
        torch.testing.assert_close(x.grad, expected)


@pytest.mark.gpu
@requires_gpu
def test_gpu_softmax_rows_of_a_wider_buffer():
    torch.manual_seed(0)
    op = tritonad.autograd(softmax_kernel, outputs=("out_ptr",))
    base = torch.randn(33, 700, device="cuda")
    x = base[:, :513].clone().requires_grad_()
    wide = torch.empty(33, 700, device="cuda")[:, 100:613]   # the gradient of a view
    view = wide.copy_(x.detach()).requires_grad_()
    for inp in (x, view):
        out = torch.empty(33, 513, device="cuda")
        y = op[(33,)](out, inp, inp.stride(0), out.stride(0), 513, BLOCK_N=1024)
        g = torch.randn_like(y)
        y.backward(g)
        ref = inp.detach().clone().requires_grad_()
        torch.softmax(ref, dim=1).backward(g)
        torch.testing.assert_close(inp.grad, ref.grad, rtol=1e-5, atol=1e-6)


def test_rows_of_a_coarsened_kernel_are_covered_through_the_program_loop():
    """With partial buffers the backward loops over the forward's programs: the
    rows it stores are counted by its `tritonad_programs` argument."""
    from compile_util import compile_for_schedule
    from corpus.norms import NORM_TYPES, norm_kernel

    bwd = tritonad.grad(norm_kernel, accumulate=False)
    compile_for_schedule(bwd, NORM_TYPES, dict(HAS_MEAN=True, BLOCK_N=256))
    record = bwd.coverage()["dX"]
    x = torch.empty(5000, 200)
    args = {"stride": 200, "N": 200, "tritonad_programs": 5000}
    assert _coverage.covers(record, x, args, (264,))     # (264 programs launched)
    assert not _coverage.covers(record, x, dict(args, tritonad_programs=4999), (264,))
    # dW, dB: every program stores its whole slot, so the workspace needs no zeros
    assert set(bwd.coverage()) == {"dX", "dW", "dB"}
    assert _coverage.covers(bwd.coverage()["dW"], torch.empty(200), args, (264,))
