"""tritonad's Python API can be trusted: arguments are checked like jax.grad's,
``wrt`` never drops an output's shadow, pointers are found through helpers,
torch.autograd gets the right gradient for strided tensors, and Triton's
on-disk cache never serves a backward derived with other options (nor hides
its schedule).

CPU tests compile backward kernels to PTX (no GPU needed) or drive
``tritonad.autograd`` with stand-in kernels written in torch; the subprocess
tests share one TRITON_CACHE_DIR between two fresh processes. GPU tests (marked
``gpu``) check the numbers against torch.autograd.
"""

import json
import os
import re
import subprocess
import sys
import types

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from gpu_util import requires_gpu  # noqa: E402
from corpus.kernels import gelu_kernel  # noqa: E402
from corpus.user_kernels import layer_norm_kernel, softmax_kernel  # noqa: E402
from tritonad._source import pointer_params, pointer_roles  # noqa: E402
from tritonad._torch import shadow_like  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
F32 = "*fp32"


pytestmark = pytest.mark.usefixtures("always_compile")


def compile_backward(bwd, types_, constexprs, none=()):
    """The backward to PTX on the CPU; shadows take their pointer's type unless
    listed in `types_`; `none` shadows are passed as None."""
    types_ = dict(types_)
    for ptr, shadow in bwd.shadows.items():
        types_.setdefault(shadow, types_[ptr])
    signature, consts = {}, dict(constexprs)
    for name in bwd.launch_signature:
        if name in constexprs or name in none:
            signature[name] = "constexpr"
            consts.setdefault(name, None)
        else:
            signature[name] = types_[name]
    return triton.compile(ASTSource(bwd, signature, consts), target=TARGET)


def schedule_of(bwd):
    return {line.partition(":")[0].strip(): line.partition(":")[2].strip()
            for line in bwd.schedule().strip().splitlines() if not line.startswith("loop ")}


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------

@triton.jit
def f_exp_mul(x, y):
    return tl.exp(x) * y


@triton.jit
def f_two_returns(x, y):
    # (returns of different lengths: grad cannot count its outputs; never compiled)
    if x > 0:
        return x * y, y
    return x


LN_TYPES = dict(X=F32, W=F32, B=F32, Y=F32, Mean=F32, Rstd=F32, stride="i32", N="i32",
                eps="fp32")


@triton.jit
def _attn_fwd_inner(acc, l_i, m_i, q, K_ptr, V_ptr, stride_k, stride_v, n_ctx, sm_scale,
                    offs_d, BLOCK_N: tl.constexpr):
    # The flash-attention tutorial's split: K and V are loaded only in here.
    for start_n in range(0, n_ctx, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(K_ptr + offs_n[:, None] * stride_k + offs_d[None, :],
                    mask=offs_n[:, None] < n_ctx, other=0.0)
        v = tl.load(V_ptr + offs_n[:, None] * stride_v + offs_d[None, :],
                    mask=offs_n[:, None] < n_ctx, other=0.0)
        qk = tl.dot(q, tl.trans(k)) * sm_scale
        qk = tl.where(offs_n[None, :] < n_ctx, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attention_split_kernel(Q, K, V, Out, stride_q, stride_k, stride_v, stride_o, n_ctx,
                           sm_scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           HEAD_DIM: tl.constexpr):
    start_m = tl.program_id(0)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + offs_m[:, None] * stride_q + offs_d[None, :], mask=offs_m[:, None] < n_ctx,
                other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K, V, stride_k, stride_v, n_ctx,
                                    sm_scale, offs_d, BLOCK_N)
    acc = acc / l_i[:, None]
    tl.store(Out + offs_m[:, None] * stride_o + offs_d[None, :], acc, mask=offs_m[:, None] < n_ctx)


ATTN_TYPES = dict(Q=F32, K=F32, V=F32, Out=F32, stride_q="i32", stride_k="i32", stride_v="i32",
                  stride_o="i32", n_ctx="i32", sm_scale="fp32")
ATTN_CONSTS = dict(BLOCK_M=32, BLOCK_N=32, HEAD_DIM=16)


@triton.jit
def _load_row(ptr, row, stride, N, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    return tl.load(ptr + row * stride + cols, mask=cols < N, other=0.0)


@triton.jit
def _row_ptrs(base, row, stride, BLOCK: tl.constexpr):
    return base + row * stride + tl.arange(0, BLOCK)


# A helper reached as `module.helper` (a module object the kernel's globals name).
helpers = types.ModuleType("tritonad_test_api_trust_helpers")
helpers.load_row = _load_row
sys.modules[helpers.__name__] = helpers


@triton.jit
def exp_rows_module_helper_kernel(X, Y, stride, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x = helpers.load_row(X, row, stride, N, BLOCK)
    cols = tl.arange(0, BLOCK)
    tl.store(Y + row * stride + cols, tl.exp(x), mask=cols < N)


@triton.jit
def exp_rows_address_helper_kernel(X, Y, stride, N, BLOCK: tl.constexpr):
    # The addresses are built by a helper: its returned value carries X (and Y).
    row = tl.program_id(0)
    mask = tl.arange(0, BLOCK) < N
    x = tl.load(_row_ptrs(X, row, stride, BLOCK), mask=mask, other=0.0)
    tl.store(_row_ptrs(Y, row, stride, BLOCK), tl.exp(x), mask=mask)


def _closure_kernel():
    inner = _load_row

    @triton.jit
    def exp_rows_closure_kernel(X, Y, stride, N, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        x = inner(X, row, stride, N, BLOCK)
        cols = tl.arange(0, BLOCK)
        tl.store(Y + row * stride + cols, tl.exp(x), mask=cols < N)

    return exp_rows_closure_kernel


exp_rows_closure_kernel = _closure_kernel()
EXP_ROWS_TYPES = dict(X=F32, Y=F32, stride="i32", N="i32")


@triton.jit
def constexpr_offset_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, HALF: tl.constexpr):
    # HALF is a constexpr added into the address: never a pointer.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs + HALF, mask=mask, other=0.0)
    tl.store(y_ptr + offs, x * x, mask=mask)


@triton.jit
def integer_uses_kernel(x_ptr, y_ptr, lo, hi, scale, n, BLOCK: tl.constexpr):
    # lo is a range bound and scale a factor: integers, though added into addresses.
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for r in range(lo, hi):
        acc += tl.load(x_ptr + lo + scale + r * n + cols, mask=cols < n, other=0.0)
    tl.store(y_ptr + cols + scale * 0, acc, mask=cols < n)


@triton.jit
def runtime_offset_kernel(x_ptr, y_ptr, start, n, BLOCK: tl.constexpr):
    # start is a runtime int added into an address: ambiguous from the source.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + start + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.exp(x), mask=mask)


@triton.jit
def _cycle_a(p, n):
    return _cycle_b(p, n)


@triton.jit
def _cycle_b(p, n):
    x = tl.load(p + n)
    return _cycle_a(p, n) + x


@triton.jit
def cycle_kernel(x_ptr, y_ptr):
    # Never compiled (Triton has no recursion): the pointer analysis must end.
    tl.store(y_ptr, _cycle_a(x_ptr, 0))


@triton.jit
def scale_rows_kernel(x_ptr, y_ptr, unused_ptr, M, N, stride_x, stride_y,
                      BLOCK: tl.constexpr):
    # y = 3 x on an M x N view: x and y may be column slices of wider tensors.
    # (unused_ptr is never mentioned: a parameter the kernel does not read)
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride_y + cols, 3.0 * x, mask=mask)


# ---------------------------------------------------------------------------
# 1. Arguments checked like jax.grad
# ---------------------------------------------------------------------------

def test_grad_of_grad_function_is_refused():
    with pytest.raises(TypeError, match="higher-order derivatives are not supported") as info:
        tritonad.grad(tritonad.grad(f_exp_mul))
    assert "f_exp_mul" in str(info.value)


def test_grad_of_grad_kernel_is_refused():
    with pytest.raises(TypeError, match="higher-order derivatives are not supported"):
        tritonad.grad(tritonad.grad(gelu_kernel))


@pytest.mark.parametrize("wrt", [True, False, [True], ["X", False]])
def test_bool_wrt_is_refused(wrt):
    # bool is an int: wrt=True would silently mean parameter 1.
    with pytest.raises(TypeError, match="bool"):
        tritonad.grad(layer_norm_kernel, wrt=wrt)
    with pytest.raises(TypeError, match="bool"):
        tritonad.grad(f_exp_mul, wrt=wrt)


@pytest.mark.parametrize("wrt, error, match", [
    ([], ValueError, "wrt is empty"),
    ((), ValueError, "wrt is empty"),
    (1.5, TypeError, "parameter name or index"),
    ({"X"}, TypeError, "list/tuple"),
    ([None], TypeError, "parameter name or index"),
    (99, ValueError, "out of range"),
    ("nope", ValueError, "no parameter 'nope'"),
    ("BLOCK_N", ValueError, "constexpr"),
    ("stride", ValueError, "not a pointer parameter"),
    (6, ValueError, "not a pointer parameter"),      # index of `stride`
])
def test_bad_kernel_wrt(wrt, error, match):
    with pytest.raises(error, match=match) as info:
        tritonad.grad(layer_norm_kernel, wrt=wrt)
    if error is TypeError:  # says what is accepted
        assert "names or indices" in str(info.value)


def test_kernel_wrt_takes_indices():
    by_index = tritonad.grad(layer_norm_kernel, wrt=0)
    by_negative = tritonad.grad(layer_norm_kernel, wrt=[-10, 1])   # X, W
    assert set(by_index.shadows) == {"X", "Y", "Mean", "Rstd"}
    assert set(by_negative.shadows) == {"X", "W", "Y", "Mean", "Rstd"}
    compile_backward(by_index, LN_TYPES, dict(BLOCK_N=1024))
    assert set(schedule_of(by_index)) == {"X", "Y", "Mean", "Rstd"}


def test_function_wrt_names_and_indices():
    assert tritonad.grad(f_exp_mul, wrt=1).wrt == ("y",)
    assert tritonad.grad(f_exp_mul, wrt=["y", 0]).wrt == ("y", "x")
    with pytest.raises(ValueError, match="wrt is empty"):
        tritonad.grad(f_exp_mul, wrt=[])


@pytest.mark.parametrize("num_outputs, error", [(0, ValueError), (-1, ValueError),
                                                ("1", TypeError), (1.0, TypeError),
                                                (True, TypeError), (2, ValueError)])
def test_bad_num_outputs(num_outputs, error):
    with pytest.raises(error, match="num_outputs"):
        tritonad.grad(f_exp_mul, num_outputs=num_outputs)


def test_num_outputs_where_returns_differ_and_on_a_kernel():
    with pytest.raises(ValueError, match="pass num_outputs="):
        tritonad.grad(f_two_returns)
    assert tritonad.grad(f_two_returns, num_outputs=1) is not None
    with pytest.raises(TypeError, match="kernel"):
        tritonad.grad(gelu_kernel, num_outputs=1)


def test_kernel_options_on_a_function_are_refused():
    with pytest.raises(TypeError, match="mode"):
        tritonad.grad(f_exp_mul, mode="deterministic")


# ---------------------------------------------------------------------------
# 2. wrt selects inputs; outputs keep their shadows
# ---------------------------------------------------------------------------

def test_wrt_keeps_every_output_shadow():
    bwd = tritonad.grad(layer_norm_kernel, wrt=["X"])
    assert bwd.shadows == {"X": "dX", "Y": "dY", "Mean": "dMean", "Rstd": "dRstd"}
    assert bwd.launch_signature == tuple(LN_TYPES) + ("dX", "dY", "dMean", "dRstd", "BLOCK_N")
    compile_backward(bwd, LN_TYPES, dict(BLOCK_N=1024), none=("dMean", "dRstd"))
    schedule = schedule_of(bwd)
    assert schedule["X"].startswith("plain") and schedule["Y"].startswith("output")
    ir = bwd.derived_ir()
    # The gradient is really computed: dX is accumulated from dY (not an empty body).
    assert "%dX" in ir and "%dY" in ir and "tt.store" in ir


@pytest.mark.parametrize("wrt", ["Y", ["X", "Y"], [3]])
def test_wrt_naming_an_output_is_refused(wrt):
    with pytest.raises(ValueError, match="names an output") as info:
        tritonad.grad(layer_norm_kernel, wrt=wrt)
    assert "'Y'" in str(info.value) and "['X', 'W', 'B']" in str(info.value)


def test_wrt_with_explicit_pointers_keeps_unclassified_ones():
    # `pointers=` may name a pointer tritonad cannot classify: it keeps its shadow.
    bwd = tritonad.grad(gelu_kernel, wrt="x_ptr", pointers=("x_ptr", "y_ptr", "n"))
    assert set(bwd.shadows) == {"x_ptr", "y_ptr", "n"}
    assert bwd.pointer_roles["n"] == frozenset()


# ---------------------------------------------------------------------------
# 3. Pointer discovery
# ---------------------------------------------------------------------------

def test_pointers_loaded_in_a_helper_are_found():
    assert pointer_roles(attention_split_kernel) == {"Q": {"load"}, "K": {"load"},
                                                     "V": {"load"}, "Out": {"store"}}
    bwd = tritonad.grad(attention_split_kernel)
    assert set(bwd.shadows) == {"Q", "K", "V", "Out"}
    compile_backward(bwd, ATTN_TYPES, ATTN_CONSTS)
    schedule = schedule_of(bwd)
    assert {"Q", "K", "V"} <= set(schedule) and schedule["Out"].startswith("output")
    ir = bwd.derived_ir()
    assert "%dK" in ir and "%dV" in ir


@pytest.mark.parametrize("kernel", [exp_rows_module_helper_kernel, exp_rows_closure_kernel,
                                    exp_rows_address_helper_kernel])
def test_helpers_reached_by_attribute_closure_and_returned_address(kernel):
    assert pointer_roles(kernel) == {"X": {"load"}, "Y": {"store"}}
    bwd = tritonad.grad(kernel)
    compile_backward(bwd, EXP_ROWS_TYPES, dict(BLOCK=128))
    assert schedule_of(bwd)["X"].startswith("plain")


def test_constexpr_in_an_address_is_not_a_pointer():
    assert pointer_params(constexpr_offset_kernel) == ["x_ptr", "y_ptr"]
    bwd = tritonad.grad(constexpr_offset_kernel)
    compile_backward(bwd, dict(x_ptr=F32, y_ptr=F32, n="i32"), dict(BLOCK=128, HALF=64))
    assert set(schedule_of(bwd)) == {"x_ptr", "y_ptr"}


def test_factors_and_range_bounds_are_integers():
    assert pointer_params(integer_uses_kernel) == ["x_ptr", "y_ptr"]
    bwd = tritonad.grad(integer_uses_kernel)
    compile_backward(bwd, dict(x_ptr=F32, y_ptr=F32, lo="i32", hi="i32", scale="i32", n="i32"),
                     dict(BLOCK=128))


def test_recursive_helpers_end():
    assert pointer_roles(cycle_kernel) == {"x_ptr": {"load"}, "y_ptr": {"store"}}


def test_runtime_int_in_an_address_stays_a_candidate():
    assert pointer_params(runtime_offset_kernel) == ["x_ptr", "y_ptr", "start"]
    bwd = tritonad.grad(runtime_offset_kernel)
    # Launched as usual (no dstart given: None), the binding is dropped.
    compile_backward(bwd, dict(x_ptr=F32, y_ptr=F32, start="i32", n="i32"), dict(BLOCK=128),
                     none=("dstart",))
    assert set(schedule_of(bwd)) == {"x_ptr", "y_ptr"}


def test_runtime_int_in_an_address_with_a_shadow_given():
    # The core ignores a binding whose forward argument is not a pointer.
    bwd = tritonad.grad(runtime_offset_kernel)
    compile_backward(bwd, dict(x_ptr=F32, y_ptr=F32, start="i32", n="i32", dstart="i32"),
                     dict(BLOCK=128))
    assert set(schedule_of(bwd)) == {"x_ptr", "y_ptr"}


# ---------------------------------------------------------------------------
# 4. tritonad.autograd: strides, overlap, inputs the kernel does not read
# ---------------------------------------------------------------------------

def test_shadow_like_keeps_strides_dtype_and_span():
    wide = torch.randn(5, 12, dtype=torch.float16)
    x = wide[:, 2:9]                          # a column slice: not dense
    g = shadow_like(x, torch)
    assert g.stride() == x.stride() and g.dtype == torch.float16 and g.shape == x.shape
    assert torch.count_nonzero(g) == 0
    # Every address the kernel may touch through these strides is allocated (and zero).
    span = (5 - 1) * 12 + 7
    assert g.untyped_storage().nbytes() == span * 2
    assert torch.count_nonzero(g.as_strided((span,), (1,))) == 0
    up = shadow_like(x, torch, upstream=torch.ones(7).expand(5, 7))   # expanded upstream
    assert up.stride() == x.stride() and torch.equal(up, torch.ones(5, 7, dtype=torch.float16))
    t = torch.randn(6, 4).t()                 # transposed
    assert shadow_like(t, torch).stride() == t.stride()
    assert shadow_like(torch.empty(0, 3), torch).shape == (0, 3)


class _StandIn:
    """A kernel stand-in for the CPU: `launch[grid](**kwargs)` calls `body(kwargs)`."""

    def __init__(self, body, **attrs):
        self.body = body
        self.calls = 0
        self.__dict__.update(attrs)

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.calls += 1
            self.body(kwargs)
        return launch


def _rows(ptr, M, N, stride):
    """What `ptr + row * stride + cols` addresses, as a tensor view (pointer arithmetic
    from the tensor's first element, as the kernel does)."""
    return ptr.as_strided((M, N), (stride, 1), ptr.storage_offset())


def _scale_rows_op(**grad_options):
    """tritonad.autograd(scale_rows_kernel) whose forward and backward kernels are
    replaced by torch code addressing memory exactly as the kernels do."""
    op = tritonad.autograd(scale_rows_kernel, outputs=("y_ptr",), **grad_options)
    bwd = op.backward_kernel

    def forward(a):
        _rows(a["y_ptr"], a["M"], a["N"], a["stride_y"]).copy_(
            3.0 * _rows(a["x_ptr"], a["M"], a["N"], a["stride_x"]))

    def backward(a):
        if a["dx_ptr"] is not None:
            _rows(a["dx_ptr"], a["M"], a["N"], a["stride_x"]).add_(
                3.0 * _rows(a["dy_ptr"], a["M"], a["N"], a["stride_y"]))

    op.kernel = _StandIn(forward)
    op.backward_kernel = _StandIn(backward, shadows=bwd.shadows,
                                  pointer_roles=bwd.pointer_roles)
    return op


def _launch_scale_rows(op, x, y, unused):
    M, N = x.shape
    return op[(M,)](x, y, unused, M, N, x.stride(0), y.stride(0), BLOCK=16)


def test_autograd_column_slices_get_the_right_gradient():
    torch.manual_seed(0)
    op = _scale_rows_op()
    base = torch.randn(6, 11, requires_grad=True)
    x = base[:, 3:10]                         # input: a column slice of a wider tensor
    y_wide = torch.zeros(6, 20)
    y = _launch_scale_rows(op, x, y_wide[:, 5:12], torch.zeros(3))   # output: a slice too
    assert torch.equal(y.detach(), 3.0 * x.detach())
    g = torch.randn(6, 7)
    y.backward(g)
    expected = torch.zeros(6, 11)
    expected[:, 3:10] = 3.0 * g
    torch.testing.assert_close(base.grad, expected)
    assert op.backward_kernel.calls == 1


def test_autograd_input_never_read_gets_a_zero_gradient():
    op = _scale_rows_op()
    x = torch.randn(4, 5, requires_grad=True)
    unused = torch.randn(3, requires_grad=True)
    y = _launch_scale_rows(op, x, torch.empty(4, 5), unused)
    y.sum().backward()
    torch.testing.assert_close(x.grad, torch.full((4, 5), 3.0))
    assert unused.grad is not None and torch.count_nonzero(unused.grad) == 0


def test_autograd_only_unread_inputs_require_grad():
    op = _scale_rows_op()
    unused = torch.randn(3, requires_grad=True)
    y = _launch_scale_rows(op, torch.randn(4, 5), torch.empty(4, 5), unused)
    assert y.grad_fn is not None
    y.sum().backward()                        # not "element 0 ... does not require grad"
    assert torch.equal(unused.grad, torch.zeros(3))
    assert op.backward_kernel.calls == 0      # nothing to compute


def test_autograd_refuses_an_overlapping_input_that_needs_grad():
    op = _scale_rows_op()
    row = torch.randn(1, 5, requires_grad=True)
    with pytest.raises(ValueError, match=r"'x_ptr'.*share memory.*contiguous\(\)"):
        _launch_scale_rows(op, row.expand(4, 5), torch.empty(4, 5), torch.zeros(3))
    assert op.kernel.calls == 0               # refused before the launch
    # Not needing a gradient, it is fine.
    _launch_scale_rows(op, row.detach().expand(4, 5), torch.empty(4, 5), torch.zeros(3))


def test_autograd_refuses_an_overlapping_output():
    op = _scale_rows_op()
    with pytest.raises(ValueError, match="output 'y_ptr'.*share memory"):
        _launch_scale_rows(op, torch.randn(4, 5, requires_grad=True),
                           torch.empty(1, 5).expand(4, 5), torch.zeros(3))


def test_autograd_refuses_an_input_left_out_by_wrt():
    op = tritonad.autograd(layer_norm_kernel, outputs=("Y",), wrt=["X"])
    X, W, B = (torch.randn(3, 8, requires_grad=True), torch.randn(8, requires_grad=True),
               torch.randn(8))
    with pytest.raises(ValueError, match="'W'.*wrt= leaves it out"):
        op[(3,)](X, W, B, torch.empty(3, 8), torch.empty(3), torch.empty(3), 8, 8, 1e-5,
                 BLOCK_N=8)


def test_autograd_refuses_an_input_tritonad_does_not_see_read():
    op = tritonad.autograd(layer_norm_kernel, outputs=("Y",), pointers=("X", "Y"))
    with pytest.raises(ValueError, match="'W'.*pointers= leaves it out"):
        op[(3,)](torch.randn(3, 8), torch.randn(8, requires_grad=True), torch.randn(8),
                 torch.empty(3, 8), torch.empty(3), torch.empty(3), 8, 8, 1e-5, BLOCK_N=8)


def test_autograd_refuses_an_unlisted_output_that_requires_grad():
    op = tritonad.autograd(layer_norm_kernel, outputs=("Y",))
    with pytest.raises(ValueError, match="'Mean'.*stores to it.*outputs="):
        op[(3,)](torch.randn(3, 8), torch.randn(8), torch.randn(8), torch.empty(3, 8),
                 torch.zeros(3, requires_grad=True), torch.empty(3), 8, 8, 1e-5, BLOCK_N=8)


# ---------------------------------------------------------------------------
# 5 and 6. Triton's on-disk cache (two fresh processes, one TRITON_CACHE_DIR)
# ---------------------------------------------------------------------------

_SCRIPT_HEAD = '''
import json, sys
import triton, triton.language as tl, tritonad
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

F32 = "*fp32"
TARGET = GPUTarget("cuda", 90, 32)


def compile_backward(bwd, types, constexprs, none=()):
    types = dict(types)
    for ptr, shadow in bwd.shadows.items():
        types.setdefault(shadow, types[ptr])
    signature, consts = {}, dict(constexprs)
    for name in bwd.launch_signature:
        if name in constexprs or name in none:
            signature[name] = "constexpr"
            consts.setdefault(name, None)
        else:
            signature[name] = types[name]
    return triton.compile(ASTSource(bwd, signature, consts), target=TARGET)
'''

_LAYER_NORM_SCRIPT = _SCRIPT_HEAD + '''

@triton.jit
def layer_norm_kernel(X, W, B, Y, Mean, Rstd, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask, other=0.0)
    b = tl.load(B + cols, mask=mask, other=0.0)
    tl.store(Y + row * stride + cols, xc * rstd * w + b, mask=mask)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)


bwd = tritonad.grad(layer_norm_kernel, mode=sys.argv[1])
types = dict(X=F32, W=F32, B=F32, Y=F32, Mean=F32, Rstd=F32, stride="i32", N="i32", eps="fp32")
try:
    compile_backward(bwd, types, dict(BLOCK_N=1024), none=("dMean", "dRstd"))
    result = dict(error=None, schedule=bwd.schedule(), derived=bwd.derived_ir())
except tritonad.DifferentiationError as error:
    result = dict(error=str(error))
print("RESULT " + json.dumps(result))
'''

# A device function and a kernel calling its VJP (in both scripts below).
_VJP_CALLER = '''
@triton.jit
def f(x, y):
    return tl.exp(x) * y


f_vjp = tritonad.grad(f)


@triton.jit
def f_backward(X, Y, DZ, DX, DY, N: tl.constexpr):
    r = tl.arange(0, N)
    dx, dy = f_vjp(tl.load(X + r), tl.load(Y + r), tl.load(DZ + r))
    tl.store(DX + r, dx)
    tl.store(DY + r, dy)
'''

_VJP_SCRIPT = _SCRIPT_HEAD + '\n' + _VJP_CALLER + '''

signature = dict(X=F32, Y=F32, DZ=F32, DX=F32, DY=F32, N="constexpr")
triton.compile(ASTSource(f_backward, signature, dict(N=16)), target=TARGET)
print("RESULT " + json.dumps(dict(derived=f_vjp.derived_ir())))
'''


def _run_script(tmp_path, name, source, *args, cache_dir, env=None):
    """Runs `source` in a fresh python with TRITON_CACHE_DIR=cache_dir (Triton's
    cache used, not bypassed); returns (RESULT json, stderr)."""
    path = tmp_path / name
    path.write_text(source)
    environ = {k: v for k, v in os.environ.items()
               if k not in ("TRITON_ALWAYS_COMPILE", "TRITONAD_DUMP")}
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(tritonad.__file__)))
    environ["PYTHONPATH"] = os.pathsep.join([package_root, environ.get("PYTHONPATH", "")])
    environ["TRITON_CACHE_DIR"] = str(cache_dir)
    environ.update(env or {})
    done = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True,
                          env=environ, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    line = next(l for l in done.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):]), done.stderr


def test_cache_never_serves_a_backward_of_another_mode(tmp_path):
    cache = tmp_path / "cache"
    first, _ = _run_script(tmp_path, "ln.py", _LAYER_NORM_SCRIPT, "auto", cache_dir=cache)
    assert first["error"] is None and "atomic" in first["schedule"]
    # dW / dB need atomics in auto mode: deterministic mode gets its own
    # derivation (plain writes, checked at launch), not the cached kernel.
    second, _ = _run_script(tmp_path, "ln.py", _LAYER_NORM_SCRIPT, "deterministic",
                            cache_dir=cache)
    assert second["error"] is None and "deterministic mode" in second["schedule"], second
    assert "tt.atomic_rmw" not in second["derived"], second
    # And the auto kernel is still served from the cache (its schedule with it).
    third, stderr = _run_script(tmp_path, "ln.py", _LAYER_NORM_SCRIPT, "auto", cache_dir=cache,
                                env={"TRITONAD_DUMP": "1"})
    assert "// tritonad: backward of" not in stderr, "expected a cache hit"
    assert third == first


def test_schedule_and_derived_ir_survive_a_cache_hit(tmp_path):
    cache = tmp_path / "cache"
    first, stderr = _run_script(tmp_path, "ln.py", _LAYER_NORM_SCRIPT, "auto", cache_dir=cache,
                                env={"TRITONAD_DUMP": "1"})
    assert "// tritonad: backward of" in stderr       # derived in this process
    second, stderr = _run_script(tmp_path, "ln.py", _LAYER_NORM_SCRIPT, "auto", cache_dir=cache,
                                 env={"TRITONAD_DUMP": "1"})
    assert "// tritonad: backward of" not in stderr   # served from the cache
    assert second["schedule"] and second["schedule"] == first["schedule"]
    assert second["derived"] and second["derived"] == first["derived"]


def test_vjp_derived_ir_survives_a_cache_hit(tmp_path):
    cache = tmp_path / "cache"
    first, stderr = _run_script(tmp_path, "vjp.py", _VJP_SCRIPT, cache_dir=cache,
                                env={"TRITONAD_DUMP": "1"})
    assert "// tritonad: derivative of" in stderr
    second, stderr = _run_script(tmp_path, "vjp.py", _VJP_SCRIPT, cache_dir=cache,
                                 env={"TRITONAD_DUMP": "1"})
    assert "// tritonad: derivative of" not in stderr
    assert second["derived"] and second["derived"] == first["derived"]
    assert "math.exp" in second["derived"]


# ---------------------------------------------------------------------------
# A kernel that calls a grad function, differentiated again
# ---------------------------------------------------------------------------

_SECOND_ORDER_SCRIPT = _SCRIPT_HEAD + '''

@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)


if sys.argv[1] == "backward_first":   # tritonad.grad of a kernel before the grad function
    tritonad.grad(gelu_kernel)

''' + _VJP_CALLER + '''

bwd = tritonad.grad(f_backward)
compile_backward(bwd, dict(X=F32, Y=F32, DZ=F32, DX=F32, DY=F32), dict(N=16))
print("RESULT " + json.dumps(dict(derived=bwd.derived_ir())))
'''


def test_kernel_calling_a_grad_function_is_differentiated_whatever_the_order(tmp_path):
    # The grad function's body must hold its derivative before the kernel's backward
    # is derived, whichever of the two tritonad.grad calls came first.
    results = [_run_script(tmp_path, "second.py", _SECOND_ORDER_SCRIPT, order,
                           cache_dir=tmp_path / order, env={"TRITON_ALWAYS_COMPILE": "1"})[0]
               for order in ("grad_function_first", "backward_first")]
    ir, other = (re.sub(r"__tritonad_bwd_\d+", "", r["derived"]) for r in results)
    assert ir == other
    # d/dX (exp(X) Y DZ . dDX + exp(X) DZ . dDY) needs exp; dX, dY and dDZ are written.
    assert "math.exp" in ir
    assert {"%dX", "%dY", "%dDZ"} <= set(ir.replace(" ", "\n").replace(",", "\n").split())


# ---------------------------------------------------------------------------
# GPU: numbers against torch.autograd
# ---------------------------------------------------------------------------

def _ln_ref(x, w, b, eps):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)


@pytest.mark.gpu
@requires_gpu
def test_wrt_inputs_only_grad():
    torch.manual_seed(31)
    M, N, eps = 37, 1000, 1e-5
    X, W, B = torch.randn(M, N, device="cuda"), torch.randn(N, device="cuda"), \
        torch.randn(N, device="cuda")
    Y, Mean, Rstd = torch.empty_like(X), torch.empty(M, device="cuda"), \
        torch.empty(M, device="cuda")
    args = (X, W, B, Y, Mean, Rstd, N, N, eps)
    layer_norm_kernel[(M,)](*args, BLOCK_N=1024)
    dY, dX = torch.randn_like(X), torch.zeros_like(X)
    tritonad.grad(layer_norm_kernel, wrt=["X"])[(M,)](*args, dX=dX, dY=dY, BLOCK_N=1024)
    x = X.clone().requires_grad_()
    (ref,) = torch.autograd.grad(_ln_ref(x, W, B, eps), x, dY)
    torch.testing.assert_close(dX, ref, atol=1e-4, rtol=1e-4)


@pytest.mark.gpu
@requires_gpu
def test_attention_with_helper_grad():
    torch.manual_seed(32)
    n_ctx, D, BLOCK = 100, 16, 32
    q, k, v = (torch.randn(n_ctx, D, device="cuda") for _ in range(3))
    out = torch.empty_like(q)
    scale = D ** -0.5
    grid = (triton.cdiv(n_ctx, BLOCK),)
    args = (q, k, v, out, q.stride(0), k.stride(0), v.stride(0), out.stride(0), n_ctx, scale)
    attention_split_kernel[grid](*args, **ATTN_CONSTS)
    dout = torch.randn_like(out)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    tritonad.grad(attention_split_kernel)[grid](*args, dQ=dq, dK=dk, dV=dv, dOut=dout,
                                                **ATTN_CONSTS)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    ref = torch.softmax(leaves[0] @ leaves[1].T * scale, -1) @ leaves[2]
    refs = torch.autograd.grad(ref, leaves, dout)
    for got, want in zip((dq, dk, dv), refs):   # tf32 dots
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("kernel", [exp_rows_module_helper_kernel, exp_rows_closure_kernel,
                                    exp_rows_address_helper_kernel])
def test_helper_kernels_grad(kernel):
    torch.manual_seed(33)
    M, N = 7, 100
    x = torch.randn(M, N, device="cuda")
    y = torch.empty_like(x)
    kernel[(M,)](x, y, N, N, BLOCK=128)
    dy, dx = torch.randn_like(x), torch.zeros_like(x)
    tritonad.grad(kernel)[(M,)](x, y, N, N, dX=dx, dY=dy, BLOCK=128)
    torch.testing.assert_close(dx, torch.exp(x) * dy)


@pytest.mark.gpu
@requires_gpu
def test_constexpr_offset_and_runtime_offset_grad():
    torch.manual_seed(34)
    n, BLOCK = 1000, 256
    x = torch.randn(n + 64, device="cuda")
    y = torch.empty(n, device="cuda")
    grid = (triton.cdiv(n, BLOCK),)
    dy = torch.randn(n, device="cuda")
    dx = torch.zeros_like(x)
    tritonad.grad(constexpr_offset_kernel)[grid](x, y, n, dx_ptr=dx, dy_ptr=dy, BLOCK=BLOCK,
                                                 HALF=64)
    torch.testing.assert_close(dx[64:], 2 * x[64:] * dy)
    assert torch.count_nonzero(dx[:64]) == 0
    dx = torch.zeros_like(x)
    tritonad.grad(runtime_offset_kernel)[grid](x, y, 64, n, dx_ptr=dx, dy_ptr=dy, BLOCK=BLOCK)
    torch.testing.assert_close(dx[64:], torch.exp(x[64:]) * dy)


@pytest.mark.gpu
@requires_gpu
def test_autograd_strided_softmax_grad():
    # Input and output are column slices of wider tensors: the shadows must have
    # their strides (contiguous ones would be addressed wrongly).
    torch.manual_seed(35)
    M, N = 9, 37
    base = torch.randn(M, N + 11, device="cuda", dtype=torch.float64, requires_grad=True)
    x = base[:, 4:4 + N]
    out_wide = torch.empty(M, N + 20, device="cuda", dtype=torch.float64)
    out = out_wide[:, 7:7 + N]
    f = tritonad.autograd(softmax_kernel, outputs=("out_ptr",))
    y = f[(M,)](out, x, x.stride(0), out.stride(0), N, BLOCK_N=64)
    g = torch.randn(M, N, device="cuda", dtype=torch.float64)
    y.backward(g)
    leaf = base.detach().clone().requires_grad_()
    torch.softmax(leaf[:, 4:4 + N], -1).backward(g)
    torch.testing.assert_close(base.grad, leaf.grad)


@pytest.mark.gpu
@requires_gpu
def test_autograd_unread_input_zero_grad():
    torch.manual_seed(36)
    M, N = 5, 40
    f = tritonad.autograd(scale_rows_kernel, outputs=("y_ptr",))
    x = torch.randn(M, N, device="cuda", requires_grad=True)
    unused = torch.randn(8, device="cuda", requires_grad=True)
    y = f[(M,)](x, torch.empty(M, N, device="cuda"), unused, M, N, N, N, BLOCK=64)
    y.sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 3.0))
    assert torch.equal(unused.grad, torch.zeros_like(unused))


_GPU_CACHE_SCRIPT = '''
import json, sys, torch, triton, triton.language as tl, tritonad
from triton import knobs


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476)), mask=mask)


bwd = tritonad.grad(gelu_kernel)
if sys.argv[1] == "no_listener":   # another library replaced tritonad's listener
    knobs.compilation.listener = None
x = torch.randn(1000, device="cuda")
dx, dy = torch.zeros_like(x), torch.randn_like(x)
bwd[(4,)](x, torch.empty_like(x), 1000, dx_ptr=dx, dy_ptr=dy, BLOCK=256)
torch.cuda.synchronize()
print("RESULT " + json.dumps(dict(schedule=bwd.schedule(), derived=bwd.derived_ir())))
'''


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("second", ["listener", "no_listener"])
def test_jit_launch_schedule_survives_a_cache_hit(tmp_path, second):
    cache = tmp_path / "cache"
    first, _ = _run_script(tmp_path, "gelu.py", _GPU_CACHE_SCRIPT, "listener", cache_dir=cache)
    again, stderr = _run_script(tmp_path, "gelu.py", _GPU_CACHE_SCRIPT, second, cache_dir=cache,
                                env={"TRITONAD_DUMP": "1"})
    assert "// tritonad: backward of" not in stderr
    assert again == first and first["schedule"]


@pytest.mark.gpu
@requires_gpu
def test_kernel_calling_a_grad_function_second_order_grad():
    @triton.jit
    def f_backward(X, Y, DZ, DX, DY, N: tl.constexpr):
        r = tl.arange(0, N)
        dx, dy = _f_vjp(tl.load(X + r), tl.load(Y + r), tl.load(DZ + r))
        tl.store(DX + r, dx)
        tl.store(DY + r, dy)

    torch.manual_seed(37)
    N = 16
    X, Y, DZ = (torch.randn(N, device="cuda", dtype=torch.float64) for _ in range(3))
    DX, DY = torch.empty_like(X), torch.empty_like(X)
    ddx, ddy = torch.randn_like(X), torch.randn_like(X)
    grads = [torch.zeros_like(X) for _ in range(3)]
    tritonad.grad(f_backward)[(1,)](X, Y, DZ, DX, DY, *grads, ddx, ddy, N=N)
    leaves = [t.clone().requires_grad_() for t in (X, Y, DZ)]
    x, y, dz = leaves
    first = torch.autograd.grad(torch.exp(x) * y, (x, y), dz, create_graph=True)
    refs = torch.autograd.grad(first, leaves, (ddx, ddy))
    for got, want in zip(grads, refs):
        torch.testing.assert_close(got, want)


_f_vjp = tritonad.grad(f_exp_mul)
