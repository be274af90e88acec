"""The API's contract, checked where a call would otherwise go wrong without a
word (issue 39): a second derivative asked of tritonad.autograd, outputs= naming
something the kernel does not store through, in-place kernels, run_pipeline's
``builtin.module(...)`` spelling, decorated launchers under TRITON_INTERPRET=1,
constexpr defaults, parameters named like Triton's launch keywords
(``num_stages``, ``num_warps``, ``grid``), shadows too small or laid out
otherwise than their tensors, and derivations in several threads at once.

CPU tests run in this process (refusals before any launch, torch stand-ins for
the kernels, backward kernels compiled to PTX), or under TRITON_INTERPRET=1 in a
fresh Python with this file as the script (the ``interpret_*`` checks, compared
with torch.autograd in float64):

    TRITON_INTERPRET=1 python test/test_contract_checks.py [out.json [seed [name ...]]]

GPU tests (marked ``gpu``) launch the real kernels in float32 and bfloat16.
"""

import os
import sys
import threading

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from gpu_util import requires_gpu  # noqa: E402
from tritonad._kernel_grad import unwrap  # noqa: E402
from tritonad._source import pointer_roles  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------

@triton.jit
def mul_kernel(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    w = tl.load(w_ptr + offs, mask=m)
    tl.store(y_ptr + offs, (x * w).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, (alpha * tl.load(x_ptr + offs, mask=m)).to(y_ptr.dtype.element_ty),
             mask=m)


@triton.jit
def rope_in_place_kernel(q_ptr, k_ptr, cos_ptr, sin_ptr, stride_q, stride_k,
                         HALF: tl.constexpr):
    # Rotates q and k in place (each row: its two halves), as many RoPE kernels do.
    row = tl.program_id(0)
    offs = tl.arange(0, HALF)
    cos = tl.load(cos_ptr + row * HALF + offs)
    sin = tl.load(sin_ptr + row * HALF + offs)
    q1 = tl.load(q_ptr + row * stride_q + offs)
    q2 = tl.load(q_ptr + row * stride_q + HALF + offs)
    tl.store(q_ptr + row * stride_q + offs, q1 * cos - q2 * sin)
    tl.store(q_ptr + row * stride_q + HALF + offs, q2 * cos + q1 * sin)
    k1 = tl.load(k_ptr + row * stride_k + offs)
    k2 = tl.load(k_ptr + row * stride_k + HALF + offs)
    tl.store(k_ptr + row * stride_k + offs, k1 * cos - k2 * sin)
    tl.store(k_ptr + row * stride_k + HALF + offs, k2 * cos + k1 * sin)


@triton.jit
def running_sum_kernel(x_ptr, total_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # total_ptr is loaded and stored (total += x); y = x * total (the old total).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    total = tl.load(total_ptr + offs, mask=m)
    tl.store(total_ptr + offs, total + x, mask=m)
    tl.store(y_ptr + offs, x * total, mask=m)


@triton.jit
def scaled_square_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, SCALE: tl.constexpr = 2.0,
                         BACKWARD_PASS: tl.constexpr = False):
    # Constexprs with defaults, left out at the launch.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    if BACKWARD_PASS:
        x = -x
    tl.store(y_ptr + offs, (SCALE * x * x).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def softmax_stages_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                          BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    # The Triton tutorial's softmax signature (num_stages a constexpr it passes to
    # tl.range), over column blocks: max, sum, then the normalized values.
    row = tl.program_id(0)
    x_row = input_ptr + row * input_row_stride
    y_row = output_ptr + row * output_row_stride
    running = tl.full([BLOCK_SIZE], float("-inf"), tl.float32)
    for start in tl.range(0, n_cols, BLOCK_SIZE, num_stages=num_stages):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        running = tl.maximum(running, x)
    row_max = tl.max(running, axis=0)
    total = tl.zeros([BLOCK_SIZE], tl.float32)
    for start in tl.range(0, n_cols, BLOCK_SIZE, num_stages=num_stages):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        total += tl.exp(x - row_max)
    denominator = tl.sum(total, axis=0)
    for start in tl.range(0, n_cols, BLOCK_SIZE, num_stages=num_stages):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - row_max) / denominator
        tl.store(y_row + cols, y.to(output_ptr.dtype.element_ty), mask=cols < n_cols)


@triton.jit
def launch_names_kernel(x_ptr, y_ptr, grid, n, BLOCK: tl.constexpr, num_warps: tl.constexpr):
    # A runtime parameter named grid, a constexpr named num_warps.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    tl.store(y_ptr + offs, (grid * num_warps * tl.sin(x)).to(y_ptr.dtype.element_ty), mask=m)


# Wrappers that fill a parameter before one named like a launch keyword: the
# parameters after the filled one cannot go by position (fuzz seeds 14, 128, 256).
@triton.jit
def _store_scaled_sin(x_ptr, y_ptr, n, BLOCK: tl.constexpr, scale):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0).to(tl.float32)
    tl.store(y_ptr + offs, (scale * tl.sin(x)).to(y_ptr.dtype.element_ty), mask=m)


@triton.heuristics({"BLOCK": lambda args: 8 * args["num_warps"]})
@triton.jit
def heuristic_block_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, num_warps: tl.constexpr):
    _store_scaled_sin(x_ptr, y_ptr, n, BLOCK, num_warps)


# (one config: the interpreter cannot benchmark several)
@triton.autotune(configs=[triton.Config({"BLOCK": 32})], key=["n"])
@triton.jit
def tuned_block_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, maxnreg: tl.constexpr):
    _store_scaled_sin(x_ptr, y_ptr, n, BLOCK, maxnreg)


@triton.heuristics({"BLOCK": lambda args: 16})
@triton.jit
def heuristic_then_grid_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, grid: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, grid * tl.load(x_ptr + offs, mask=m), mask=m)


WRAPPED_KERNELS = {  # kernel -> (its keyword-named parameter, the value the tests give it)
    "heuristic_block_kernel": ("num_warps", 4),
    "tuned_block_kernel": ("maxnreg", 3),
}


def wrapped_launch(name, x):
    kernel = globals()[name]
    keyword, value = WRAPPED_KERNELS[name]
    y = torch.empty_like(x)
    kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, x.numel(),
                                                                   **{keyword: value})
    return y


@triton.jit
def exp_sum_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # helper_load_kernel without the helper (triton.language's own @jit functions only).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = 2.0 * tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, tl.exp(x) + tl.sum(tl.where(m, x, 0.0), axis=0), mask=m)


@triton.jit
def _load_scaled(ptr, offs, mask):
    return 2.0 * tl.load(ptr + offs, mask=mask)


@triton.jit
def helper_load_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # x_ptr is loaded only inside a helper.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = _load_scaled(x_ptr, offs, m)
    tl.store(y_ptr + offs, tl.exp(x) + tl.sum(tl.where(m, x, 0.0), axis=0), mask=m)


# ---------------------------------------------------------------------------
# Launchers
# ---------------------------------------------------------------------------

def scale_then_mul(x, w, alpha=1.5):
    """y = (alpha * x) * w through an intermediate buffer (two launches)."""
    n = x.numel()
    h = torch.empty_like(x)
    scale_kernel[(triton.cdiv(n, 32),)](x, h, n, alpha, BLOCK=32)
    y = torch.empty_like(x)
    mul_kernel[lambda META: (triton.cdiv(n, META["BLOCK"]),)](h, w, y, n, BLOCK=32)
    return y


def scale_then_mul_with_out(x, w):
    """scale_then_mul, then a torch op with out= on an input that requires grad (as a
    fused linear + cross-entropy forward accumulates a weight gradient with addmm)."""
    y = scale_then_mul(x, w)
    torch.mul(w, 2.0, out=torch.empty_like(w))
    return y


def rope_in_place(q, k, cos, sin):
    rope_in_place_kernel[(q.shape[0],)](q, k, cos, sin, q.stride(0), k.stride(0),
                                        HALF=q.shape[1] // 2)
    return q, k


def launch_names(x, scale):
    y = torch.empty_like(x)
    launch_names_kernel[(triton.cdiv(x.numel(), 16),)](x, y, scale, x.numel(), BLOCK=16,
                                                       num_warps=2)
    return y


def rope_reference(q, k, cos, sin):
    half = q.shape[1] // 2

    def rotate(t):
        a, b = t[:, :half], t[:, half:]
        return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=1)
    return rotate(q), rotate(k)


def softmax_reference(x):
    return torch.softmax(x.double(), dim=1)


def launch_names_reference(x, scale, warps=2):
    return scale * warps * torch.sin(x.double())


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def compile_backward(bwd, types_, constexprs, none=()):
    """The backward to PTX on the CPU, its parameters under the placeholder's names
    (a parameter named like a launch keyword is renamed there)."""
    renamed = bwd.tritonad_renamed
    types_ = dict(types_)
    for ptr, shadow in bwd.shadows.items():
        types_.setdefault(shadow, types_[ptr])
    signature, consts = {}, {}
    for name in bwd.launch_signature:
        inner = renamed.get(name, name)
        if name in constexprs or name in none:
            signature[inner] = "constexpr"
            consts[inner] = constexprs.get(name)
        else:
            signature[inner] = types_[name]
    return triton.compile(ASTSource(bwd, signature, consts), target=TARGET)


class _StandIn:
    """A kernel's launch interface whose launch runs `body(arguments by name)`."""

    def __init__(self, body, **attributes):
        self.body, self.calls = body, 0
        self.__dict__.update(attributes)

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            assert not args
            self.calls += 1
            self.body(kwargs)
        return launch


def _flat(t, n):
    return t.as_strided((n,), (1,), t.storage_offset())


def mul_op_with_stand_ins():
    """tritonad.autograd(mul_kernel) whose forward and backward kernels are torch
    code addressing memory as the kernels do."""
    op = tritonad.autograd(mul_kernel, outputs=("y_ptr",))
    real = op.backward_kernel

    def forward(a):
        n = a["n"]
        _flat(a["y_ptr"], n).copy_(_flat(a["x_ptr"], n) * _flat(a["w_ptr"], n))

    def backward(a):
        n, dy = a["n"], _flat(a["dy_ptr"], a["n"])
        if a["dx_ptr"] is not None:
            _flat(a["dx_ptr"], n).add_(dy * _flat(a["w_ptr"], n))
        if a["dw_ptr"] is not None:
            _flat(a["dw_ptr"], n).add_(dy * _flat(a["x_ptr"], n))

    op.kernel = _StandIn(forward)
    op.backward_kernel = _StandIn(backward, shadows=real.shadows,
                                  pointer_roles=real.pointer_roles)
    return op


# ---------------------------------------------------------------------------
# 1. A second derivative is refused, never a first-order gradient taken as a constant
# ---------------------------------------------------------------------------

def test_autograd_second_derivative_raises_naming_the_kernel():
    op = mul_op_with_stand_ins()
    n = 37
    x = torch.randn(n, requires_grad=True)
    w = torch.randn(n, requires_grad=True)
    y = op[(1,)](x, w, torch.empty(n), n, BLOCK=64)
    (gx,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    torch.testing.assert_close(gx.detach(), w.detach())   # the first derivative stays right
    penalty = gx.square().sum() + w.sum()   # d/dw needs 2w from the gx term: not derived
    with pytest.raises(RuntimeError, match=r"tritonad\.autograd\(mul_kernel\).*second "
                                           r"derivative.*create_graph=True"):
        penalty.backward()
    # Without create_graph nothing changes.
    x.grad = w.grad = None
    y = op[(1,)](x, w, torch.empty(n), n, BLOCK=64)
    upstream = torch.randn(n)
    y.backward(upstream)
    torch.testing.assert_close(x.grad, upstream * w.detach())
    torch.testing.assert_close(w.grad, upstream * x.detach())


def test_autograd_gradgradcheck_raises():
    op = mul_op_with_stand_ins()
    n = 9
    x = torch.randn(n, dtype=torch.float64, requires_grad=True)
    w = torch.randn(n, dtype=torch.float64, requires_grad=True)

    def f(x, w):
        return op[(1,)](x, w, torch.empty(n, dtype=torch.float64), n, BLOCK=16)
    assert torch.autograd.gradcheck(f, (x, w))
    with pytest.raises(RuntimeError, match="second derivative"):
        torch.autograd.gradgradcheck(f, (x, w))


# ---------------------------------------------------------------------------
# 2. outputs= names pointers the kernel stores through
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("outputs, error, match", [
    (("x_ptr",), ValueError, r"'x_ptr'.*only loads.*\['y_ptr'\]"),
    ((), ValueError, r"outputs=\(\) names no output.*\['y_ptr'\]"),
    (("n",), ValueError, r"'n'.*not a pointer.*\['y_ptr'\]"),
    (("BLOCK",), ValueError, r"'BLOCK', a tl.constexpr"),
    (("y_ptr", "y_ptr"), ValueError, r"more than once"),
    (("z_ptr",), ValueError, r"no parameter 'z_ptr'"),
    ((3,), TypeError, r"names of the pointer parameters"),
])
def test_autograd_outputs_must_be_stored_pointers(outputs, error, match):
    with pytest.raises(error, match=match):
        tritonad.autograd(mul_kernel, outputs=outputs)


def test_autograd_outputs_with_pointers_given():
    op = tritonad.autograd(mul_kernel, outputs="y_ptr", pointers=("x_ptr", "w_ptr", "y_ptr"))
    assert op.outputs == ("y_ptr",)
    with pytest.raises(ValueError, match="'w_ptr', which mul_kernel only loads"):
        tritonad.autograd(mul_kernel, outputs=("w_ptr",), pointers=("x_ptr", "w_ptr", "y_ptr"))


def test_autograd_output_must_be_a_tensor():
    op = mul_op_with_stand_ins()
    with pytest.raises(TypeError, match=r"output 'y_ptr' of mul_kernel.*got int"):
        op[(1,)](torch.randn(5, requires_grad=True), torch.randn(5), 0, 5, BLOCK=8)
    assert op.kernel.calls == 0


# ---------------------------------------------------------------------------
# 3. In-place kernels are refused with the pointer named
# ---------------------------------------------------------------------------

def test_autograd_refuses_in_place_outputs():
    with pytest.raises(ValueError, match=r"rope_in_place_kernel loads and stores through "
                                         r"'q_ptr' \(in place\).*separate output"):
        tritonad.autograd(rope_in_place_kernel, outputs=("q_ptr", "k_ptr"))


def test_autograd_refuses_an_input_updated_in_place():
    with pytest.raises(ValueError, match=r"'k_ptr' \(in place\)"):
        tritonad.autograd(rope_in_place_kernel, outputs=("k_ptr",))
    op = tritonad.autograd(running_sum_kernel, outputs=("y_ptr",))
    op.kernel = _StandIn(lambda a: None)
    n = 13
    with pytest.raises(ValueError, match=r"'total_ptr' of running_sum_kernel requires grad: "
                                         r"running_sum_kernel loads and stores through "
                                         r"'total_ptr' \(in place\).*separate output"):
        op[(1,)](torch.randn(n), torch.randn(n, requires_grad=True), torch.empty(n), n,
                 BLOCK=16)
    # Not requiring grad, it is still overwritten before the backward reads it.
    with pytest.raises(ValueError, match=r"loads and stores through 'total_ptr' \(in place\)"):
        op[(1,)](torch.randn(n, requires_grad=True), torch.randn(n), torch.empty(n), n,
                 BLOCK=16)
    assert op.kernel.calls == 0
    with torch.no_grad():   # (no gradient, no graph: it runs)
        op[(1,)](torch.randn(n, requires_grad=True), torch.randn(n), torch.empty(n), n,
                 BLOCK=16)
    assert op.kernel.calls == 1


def test_autograd_refuses_an_output_aliasing_an_input():
    op = mul_op_with_stand_ins()
    x = torch.randn(11)
    w = torch.randn(11, requires_grad=True)
    with pytest.raises(ValueError, match=r"output 'y_ptr' of mul_kernel shares memory with "
                                         r"argument 'x_ptr' \(in place"):
        op[(1,)](x, w, x, 11, BLOCK=16)              # y = x * w written over x
    wide = torch.randn(20)
    with pytest.raises(ValueError, match="shares memory"):
        op[(1,)](wide[:11], w, wide[5:16], 11, BLOCK=16)   # overlapping slices
    assert op.kernel.calls == 0
    y = op[(1,)](wide[:11], w, wide[11:], 9, BLOCK=16)      # disjoint slices: fine
    assert y.grad_fn is not None


# ---------------------------------------------------------------------------
# 4. run_pipeline takes mlir-opt's builtin.module(...) spelling
# ---------------------------------------------------------------------------

_DUPLICATES = """module {
  tt.func @f(%a: i32) -> i32 {
    %0 = arith.addi %a, %a : i32
    %1 = arith.addi %a, %a : i32
    %2 = arith.muli %0, %1 : i32
    tt.return %2 : i32
  }
}"""


@pytest.mark.parametrize("pipeline", ["builtin.module(cse)",
                                      " builtin.module( canonicalize, cse ) ", "cse",
                                      "builtin.module(tt.func(cse))"])
def test_run_pipeline_module_anchor_runs_the_passes(pipeline):
    before = tritonad.run_pipeline(_DUPLICATES, "", debug_info=False)
    after = tritonad.run_pipeline(_DUPLICATES, pipeline, debug_info=False)
    assert before.count("arith.addi") == 2
    assert after.count("arith.addi") == 1, after       # cse ran
    assert "arith.muli %0, %0" in after


def test_run_pipeline_module_anchor_beside_other_passes_is_refused():
    with pytest.raises(ValueError, match=r"builtin.module\(\.\.\.\) must wrap the whole"):
        tritonad.run_pipeline(_DUPLICATES, "builtin.module(cse),canonicalize")
    # Malformed text still gets MLIR's located message on the text as given.
    with pytest.raises(tritonad.MLIRError, match=r"builtin.module\(cse,\)"):
        tritonad.run_pipeline(_DUPLICATES, "builtin.module(cse,)")


# ---------------------------------------------------------------------------
# 6 and 7. Constexpr defaults; parameters named like launch keywords (PTX, CPU)
# ---------------------------------------------------------------------------

@pytest.mark.usefixtures("always_compile")
@pytest.mark.parametrize("pointer", ["*fp32", "*bf16"])
def test_backward_of_a_kernel_with_constexpr_defaults_compiles(pointer):
    # (Triton evaluates every default's source when it compiles, given or not)
    bwd = tritonad.grad(scaled_square_kernel)
    compiled = compile_backward(bwd, dict(x_ptr=pointer, y_ptr=pointer, n="i32"),
                                dict(BLOCK=64, SCALE=2.0, BACKWARD_PASS=False))
    assert "ld.global" in compiled.asm["ptx"]
    forward = tritonad.autograd(scaled_square_kernel, outputs=("y_ptr",)).residual_forward.get()
    triton.compile(ASTSource(forward, {"x_ptr": pointer, "y_ptr": pointer, "n": "i32",
                                       "BLOCK": "constexpr", "SCALE": "constexpr",
                                       "BACKWARD_PASS": "constexpr",
                                       "tritonad_residuals": "*i8"},
                             {"BLOCK": 64, "SCALE": 3.0, "BACKWARD_PASS": True}), target=TARGET)


@pytest.mark.usefixtures("always_compile")
@pytest.mark.parametrize("pointer", ["*fp32", "*bf16"])
def test_backward_of_launch_keyword_parameters_compiles(pointer):
    bwd = tritonad.grad(launch_names_kernel)
    assert bwd.launch_signature == ("x_ptr", "y_ptr", "grid", "n", "dx_ptr", "dy_ptr", "BLOCK",
                                    "num_warps")
    assert set(bwd.tritonad_renamed) == {"grid", "num_warps"}
    compile_backward(bwd, dict(x_ptr=pointer, y_ptr=pointer, grid="fp32", n="i32"),
                     dict(BLOCK=64, num_warps=2))
    stages = tritonad.grad(softmax_stages_kernel)
    compile_backward(stages, dict(output_ptr=pointer, input_ptr=pointer, input_row_stride="i32",
                                  output_row_stride="i32", n_cols="i32"),
                     dict(BLOCK_SIZE=32, num_stages=3))


# ---------------------------------------------------------------------------
# 8. Shadows: size, layout and device checked at launch
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("bad, match", [
    ("small", r"shadow 'dx_ptr' of mul_kernel \(the gradient of 'x_ptr'\) holds 36 elements"
              r".*37 elements.*out of bounds"),
    ("strides", r"shadow 'dx_ptr'.*strides \(1, 5\) but 'x_ptr' has \(7, 1\)"),
    ("device", r"shadow 'dx_ptr'.*is on meta but 'x_ptr' is on cpu"),
    ("upstream", r"shadow 'dy_ptr' of mul_kernel \(the gradient of 'y_ptr'\) holds 30"),
])
def test_shadow_checked_before_launch(bad, match):
    bwd = tritonad.grad(mul_kernel)
    x, w, y = torch.randn(37), torch.randn(37), torch.empty(37)
    dx, dw, dy = torch.zeros(37), torch.zeros(37), torch.randn(37)
    if bad == "small":
        dx = torch.zeros(36)
    elif bad == "strides":
        x = torch.randn(37 * 7)[:35].view(5, 7)
        dx = torch.zeros(7, 5).t()
    elif bad == "device":
        dx = torch.zeros(37, device="meta")
    else:
        dy = torch.randn(40)[10:]
    with pytest.raises(ValueError, match=match):
        bwd[(1,)](x, w, y, 37, dx, dw, dy, BLOCK=64)


def test_shadow_view_into_a_larger_buffer_passes_the_check():
    from tritonad._kernel_grad import check_shadows

    x = torch.randn(6, 11)[:, 2:9]                   # a column slice: span 5 * 11 + 7
    buffer = torch.zeros(80)
    check_shadows("k", {"x_ptr": x, "dx_ptr": buffer[5:].as_strided(x.shape, x.stride())},
                  {"x_ptr": "dx_ptr"}, {})
    with pytest.raises(ValueError, match="holds 61 elements.*62 elements"):
        check_shadows("k", {"x_ptr": x, "dx_ptr": buffer[19:]}, {"x_ptr": "dx_ptr"}, {})


# ---------------------------------------------------------------------------
# 9. Pointer discovery through helpers (also under the interpreter, below)
# ---------------------------------------------------------------------------

def test_pointers_loaded_in_a_helper_are_found():
    assert pointer_roles(unwrap(helper_load_kernel)[0]) == {"x_ptr": {"load"},
                                                            "y_ptr": {"store"}}



@triton.jit
def reused_pointer_name_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    pointers = x_ptr + offsets
    values = tl.load(pointers, mask=mask)
    pointers = y_ptr + offsets  # (the name reused: fla's chunk_delta_h does so with p_v)
    tl.store(pointers, 2.0 * values, mask=mask)


@triton.jit
def reused_pointer_name_recurrence_kernel(x_ptr, w_ptr, y_ptr, n_cols, stride,
                                          SAVE: tl.constexpr, BLOCK: tl.constexpr):
    """Per row, over column blocks: h = decay * h + x * w, y = h; `p` addresses
    x, then (under a constexpr) y in the same iteration, as fla's state kernels do."""
    row = tl.program_id(0)
    h = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < n_cols
        p = x_ptr + row * stride + offsets
        x = tl.load(p, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        h = 0.5 * h + x * w
        if SAVE:
            p = y_ptr + row * stride + offsets
            tl.store(p, h.to(p.dtype.element_ty), mask=mask)


def recurrence_reference(x, w, block):
    """reused_pointer_name_recurrence_kernel in torch (columns padded to blocks)."""
    rows, cols = x.shape
    blocks = -(-cols // block)
    pad = blocks * block - cols
    xw = torch.nn.functional.pad(x * w, (0, pad)).reshape(rows, blocks, block)
    h, out = torch.zeros_like(xw[:, 0]), []
    for j in range(blocks):
        h = 0.5 * h + xw[:, j]
        out.append(h)
    return torch.stack(out, 1).reshape(rows, blocks * block)[:, :cols]


# Look-alikes of the reused name that ARE in place: still refused.

@triton.jit
def pointer_name_carried_to_the_next_iteration_kernel(x_ptr, y_ptr, n, iters,
                                                      BLOCK: tl.constexpr):
    # From the second iteration on, the load reads what the last one stored into y.
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    p = x_ptr + offsets
    for _ in range(iters):
        values = tl.load(p, mask=mask)
        p = y_ptr + offsets
        tl.store(p, 2.0 * values, mask=mask)


@triton.jit
def pointer_name_reassigned_in_one_branch_kernel(x_ptr, y_ptr, n, from_x,
                                                 BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    p = y_ptr + offsets
    if from_x > 0:
        p = x_ptr + offsets
    values = tl.load(p, mask=mask)  # (y's own values where from_x <= 0)
    tl.store(y_ptr + offsets, 2.0 * values, mask=mask)


@triton.jit
def _store_doubled(pointers, values, mask):
    tl.store(pointers, 2.0 * values, mask=mask)


@triton.jit
def pointer_name_stored_through_by_a_helper_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    p = x_ptr + offsets
    values = tl.load(p, mask=mask)
    _store_doubled(p, values, mask)  # (x overwritten)
    p = y_ptr + offsets
    tl.store(p, values, mask=mask)


def test_a_pointer_name_reassigned_from_an_input_to_an_output_is_not_in_place():
    assert pointer_roles(unwrap(reused_pointer_name_kernel)[0]) == {"x_ptr": {"load"},
                                                                    "y_ptr": {"store"}}
    tritonad.autograd(reused_pointer_name_kernel, outputs=("y_ptr",))
    assert pointer_roles(reused_pointer_name_recurrence_kernel) == {
        "x_ptr": {"load"}, "w_ptr": {"load"}, "y_ptr": {"store"}}
    tritonad.autograd(reused_pointer_name_recurrence_kernel, outputs=("y_ptr",))


@pytest.mark.parametrize("kernel, in_place, roles", [
    (pointer_name_carried_to_the_next_iteration_kernel, "y_ptr",
     {"x_ptr": {"load"}, "y_ptr": {"load", "store"}}),
    (pointer_name_reassigned_in_one_branch_kernel, "y_ptr",
     {"x_ptr": {"load"}, "y_ptr": {"load", "store"}}),
    (pointer_name_stored_through_by_a_helper_kernel, "x_ptr",
     {"x_ptr": {"load", "store"}, "y_ptr": {"store"}}),
], ids=lambda v: getattr(v, "__name__", None))
def test_a_reused_pointer_name_that_is_in_place_is_still_refused(kernel, in_place, roles):
    assert pointer_roles(kernel) == roles
    name = kernel.__name__
    with pytest.raises(ValueError, match=rf"{name} loads and stores through '{in_place}' "
                                         r"\(in place\)"):
        tritonad.autograd(kernel, outputs=(in_place,))


def test_an_input_a_helper_stores_through_is_refused_at_the_launch():
    kernel = pointer_name_stored_through_by_a_helper_kernel
    op = tritonad.autograd(kernel, outputs=("y_ptr",))
    op.kernel = _StandIn(lambda a: None)
    with pytest.raises(ValueError, match=r"'x_ptr' of pointer_name_stored_through_by_a_helper_"
                                         r"kernel requires grad: .* loads and stores through "
                                         r"'x_ptr' \(in place\)"):
        op[(1,)](torch.randn(13, requires_grad=True), torch.empty(13), 13, BLOCK=16)
    assert op.kernel.calls == 0

# ---------------------------------------------------------------------------
# CPU interpreter (TRITON_INTERPRET=1): this file run as a script in a fresh Python
# ---------------------------------------------------------------------------

INTERPRET_CHECKS = {}


def interpret_check(fn):
    INTERPRET_CHECKS[fn.__name__] = fn
    return fn


def _ic():
    import interpreter_util
    return interpreter_util


def near(name, got, want, tol):
    """|got - want| <= tol * (|want| + max|want|), elementwise: float32 sums
    round relative to the largest terms, not to an element that cancels."""
    want = want.double()
    _ic().assert_close(name, got, want, tol, tol * max(want.abs().max().item(), 1e-30))


@interpret_check
def interpret_launcher_gradients_match_torch():
    """5. A decorated launcher under the interpreter joins the graph: its term is in
    the gradient of a larger expression."""
    ic = _ic()
    launcher = tritonad.autograd(scale_then_mul)
    for dtype, tol in ((torch.float32, 1e-5), (torch.float64, 1e-12)):
        n = 77
        x = ic.randn(n, dtype=dtype).requires_grad_()
        w = ic.randn(n, dtype=dtype).requires_grad_()
        c = ic.randn(n, dtype=dtype)
        y = launcher(x, w)
        assert y.grad_fn is not None, "the launcher's output has no grad_fn"
        ((y * c).sum() + (x * x).sum()).backward()
        xr, wr = (t.detach().double().requires_grad_() for t in (x, w))
        ((1.5 * xr * wr * c.double()).sum() + (xr * xr).sum()).backward()
        near("x", x.grad, xr.grad, tol)
        near("w", w.grad, wr.grad, tol)


@interpret_check
def interpret_reused_pointer_name_gradients_match_torch():
    """A pointer name reused for an input, then an output (fla's chunk_delta_h): no
    in-place refusal, and tritonad.autograd's gradients are torch's."""
    ic = _ic()
    import interpreter_bf16
    interpreter_bf16.install()  # (bf16 rounded as a GPU does: see interpreter_bf16.py)
    op = tritonad.autograd(reused_pointer_name_recurrence_kernel, outputs=("y_ptr",))
    block = 16
    for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 2e-2)):
        rows, cols = 5, 53
        x = ic.randn(rows, cols, dtype=dtype).requires_grad_()
        w = ic.randn(cols, dtype=dtype).requires_grad_()
        y = torch.empty(rows, cols, dtype=dtype)
        out = op[(rows,)](x, w, y, cols, x.stride(0), SAVE=True, BLOCK=block)
        upstream = ic.randn(rows, cols)
        (out.float() * upstream).sum().backward()
        xr, wr = (t.detach().double().requires_grad_() for t in (x, w))
        want = recurrence_reference(xr, wr, block)
        near("y", out.detach(), want.detach(), tol)
        (want * upstream.double()).sum().backward()
        near("x", x.grad, xr.grad, tol)
        near("w", w.grad, wr.grad, tol)


@interpret_check
def interpret_launcher_torch_out_op_is_refused():
    """A torch op with out= inside a launcher, on an input that requires grad (torch
    refuses it with grad mode on, which a launcher runs with): a ValueError naming
    the op and the launcher's line, not torch's bare RuntimeError."""
    ic = _ic()
    x = ic.randn(33).requires_grad_()
    w = ic.randn(33).requires_grad_()
    try:
        tritonad.autograd(scale_then_mul_with_out)(x, w)
    except ValueError as error:
        message = str(error)
        assert "torch mul(..., out=...)" in message and "test_contract_checks.py:" in message \
            and "scale_then_mul_with_out" in message, message
    else:
        raise AssertionError("a torch out= op on an input that requires grad passed")


@interpret_check
def interpret_second_derivative_raises():
    """1. Through a launcher and through tritonad.autograd(kernel), real derived
    kernels: gradgradcheck raises, naming what was differentiated."""
    ic = _ic()
    n = 9
    x = ic.randn(n, dtype=torch.float64).requires_grad_()
    w = ic.randn(n, dtype=torch.float64).requires_grad_()
    launcher = tritonad.autograd(scale_then_mul)
    assert torch.autograd.gradcheck(launcher, (x, w))
    try:
        torch.autograd.gradgradcheck(launcher, (x, w))
    except RuntimeError as error:
        assert "tritonad.autograd(" in str(error) and "scale_then_mul" in str(error) and \
            "second derivative" in str(error), error
    else:
        raise AssertionError("gradgradcheck of a launcher passed")
    op = tritonad.autograd(mul_kernel, outputs=("y_ptr",))

    def f(x, w):
        return op[(1,)](x, w, torch.empty(n, dtype=torch.float64), n, BLOCK=16)
    (gx,) = torch.autograd.grad(f(x, w).sum(), x, create_graph=True)
    near("dx", gx.detach(), w.detach(), 1e-12)
    try:
        (gx.square().sum() + w.sum()).backward()
    except RuntimeError as error:
        assert "tritonad.autograd(mul_kernel)" in str(error), error
    else:
        raise AssertionError("a gradient penalty through tritonad.autograd passed")


@interpret_check
def interpret_launcher_refuses_in_place_kernels():
    """3. A launcher that rotates q and k in place is refused, naming the pointer."""
    ic = _ic()
    launcher = tritonad.autograd(rope_in_place)
    base = ic.randn(5, 8).requires_grad_()
    q, k = base * 1.0, ic.randn(5, 8)
    cos, sin = ic.randn(5, 4), ic.randn(5, 4)
    try:
        launcher(q, k, cos, sin)
    except ValueError as error:
        assert "rope_in_place_kernel (launch 1) loads and stores through 'q_ptr' (in place)" \
            in str(error) and "separate output" in str(error), error
    else:
        raise AssertionError("an in-place launcher was accepted")
    # cos requiring grad, q and k not: the kernel still overwrites what its backward reads.
    try:
        launcher(ic.randn(5, 8), ic.randn(5, 8), cos.requires_grad_(), sin)
    except ValueError as error:
        assert "loads and stores through 'q_ptr' (in place)" in str(error), error
    else:
        raise AssertionError("an in-place launcher was accepted")
    # Without grad mode it runs as it is.
    q, k = ic.randn(5, 8), ic.randn(5, 8)
    want_q, want_k = rope_reference(q, k, cos.detach(), sin)
    with torch.no_grad():
        launcher(q, k, cos, sin)
    near("q", q, want_q, 1e-5)
    near("k", k, want_k, 1e-5)


@interpret_check
def interpret_constexpr_defaults():
    """6. SCALE and BACKWARD_PASS left out (their defaults) and given."""
    ic = _ic()
    n = 53
    for given, scale, sign in (({}, 2.0, 1.0), ({"SCALE": 3.0}, 3.0, 1.0),
                               ({"BACKWARD_PASS": True}, 2.0, -1.0)):
        x, upstream = ic.randn(n), ic.randn(n)
        bwd = tritonad.grad(scaled_square_kernel)
        dx = torch.zeros(n)
        bwd[(2,)](x, torch.empty(n), n, dx, upstream.clone(), BLOCK=32, **given)
        near("dx", dx, 2 * scale * x.double() * upstream.double(), 1e-5)
        op = tritonad.autograd(scaled_square_kernel, outputs=("y_ptr",))
        leaf = x.clone().requires_grad_()
        y = op[(2,)](leaf, torch.empty(n), n, BLOCK=32, **given)
        near("y", y.detach(), scale * (sign * x.double()) ** 2, 1e-5)
        y.backward(upstream)
        near("x.grad", leaf.grad, 2 * scale * x.double() * upstream.double(), 1e-5)


@interpret_check
def interpret_launch_keyword_parameters():
    """7. num_stages / num_warps constexprs and a parameter named grid: through
    tritonad.grad, tritonad.autograd(kernel) and a launcher."""
    ic = _ic()
    rows, cols = 5, 37
    x, upstream = ic.randn(rows, cols), ic.randn(rows, cols)
    leaf = x.double().requires_grad_()
    softmax_reference(leaf).backward(upstream.double())
    bwd = tritonad.grad(softmax_stages_kernel)
    dx = torch.zeros(rows, cols)
    bwd[(rows,)](torch.empty(rows, cols), x, cols, cols, cols, upstream.clone(), dx,
                 BLOCK_SIZE=16, num_stages=2)
    near("dx (grad)", dx, leaf.grad, 1e-5)
    op = tritonad.autograd(softmax_stages_kernel, outputs=("output_ptr",))
    xg = x.clone().requires_grad_()
    y = op[(rows,)](torch.empty(rows, cols), xg, cols, cols, cols, BLOCK_SIZE=16,
                    num_stages=3)
    near("softmax", y.detach(), softmax_reference(x), 1e-5)
    y.backward(upstream)
    near("dx (autograd)", xg.grad, leaf.grad, 1e-5)

    n, scale = 45, 0.75
    x, upstream = ic.randn(n), ic.randn(n)
    want = torch.cos(x.double()) * scale * 2 * upstream.double()
    bwd = tritonad.grad(launch_names_kernel)
    dx = torch.zeros(n)
    bwd[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, torch.empty(n), scale, n, dx,
                                                       upstream.clone(), BLOCK=16, num_warps=2)
    near("dx (grad)", dx, want, 1e-5)
    op = tritonad.autograd(launch_names_kernel, outputs=("y_ptr",))
    xg = x.clone().requires_grad_()
    y = op[(3,)](x_ptr=xg, y_ptr=torch.empty(n), grid=scale, n=n, BLOCK=16, num_warps=2)
    near("y", y.detach(), launch_names_reference(x, scale), 1e-5)
    y.backward(upstream)
    near("dx (autograd)", xg.grad, want, 1e-5)
    xl = x.clone().requires_grad_()
    tritonad.autograd(launch_names)(xl, scale).backward(upstream)
    near("dx (launcher)", xl.grad, want, 1e-5)


@interpret_check
def interpret_launch_keyword_parameters_after_filled_ones():
    """7b. A heuristic / an autotune config fills BLOCK, which comes before a
    constexpr named num_warps / maxnreg: bwd.forward, tritonad.grad,
    tritonad.autograd(kernel) and a launcher; a parameter named grid there is
    refused with what to change."""
    ic = _ic()
    n = 45
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    for name, (keyword, value) in WRAPPED_KERNELS.items():
        kernel = globals()[name]
        x, upstream = ic.randn(n), ic.randn(n)
        want_y = value * torch.sin(x.double())
        want = value * torch.cos(x.double()) * upstream.double()
        bwd = tritonad.grad(kernel)
        y = torch.empty(n)
        bwd.forward[grid](x, y, n, **{keyword: value})
        near(f"{name}: y (bwd.forward)", y, want_y, 1e-5)
        dx = torch.zeros(n)
        bwd[grid](x, y, n, dx, upstream.clone(), **{keyword: value})
        near(f"{name}: dx (grad)", dx, want, 1e-5)
        op = tritonad.autograd(kernel, outputs=("y_ptr",))
        xg = x.clone().requires_grad_()
        y = op[grid](xg, torch.empty(n), n, **{keyword: value})
        near(f"{name}: y (autograd)", y.detach(), want_y, 1e-5)
        y.backward(upstream)
        near(f"{name}: dx (autograd)", xg.grad, want, 1e-5)
        xl = x.clone().requires_grad_()
        tritonad.autograd(wrapped_launch)(name, xl).backward(upstream)
        near(f"{name}: dx (launcher)", xl.grad, want, 1e-5)
    bwd = tritonad.grad(heuristic_then_grid_kernel)
    try:
        bwd.forward[(3,)](ic.randn(n), torch.empty(n), n, grid=2.0)
    except TypeError as error:
        assert "'grid' comes after 'BLOCK'" in str(error) and "rename 'grid'" in str(error), \
            str(error)
    else:
        raise AssertionError("a grid parameter after a filled one was launched")


@interpret_check
def interpret_shadow_checks():
    """8. A shadow smaller than its tensor is refused before the launch; a right
    one gives the gradient."""
    ic = _ic()
    n = 29
    x, w, upstream = ic.randn(n), ic.randn(n), ic.randn(n)
    bwd = tritonad.grad(mul_kernel)
    for name, shadows in (("dx_ptr", dict(dx_ptr=torch.zeros(n - 1))),
                          ("dy_ptr", dict(dy_ptr=upstream[:n - 3].clone()))):
        arguments = dict(dx_ptr=torch.zeros(n), dw_ptr=torch.zeros(n), dy_ptr=upstream.clone())
        arguments.update(shadows)
        try:
            bwd[(1,)](x, w, torch.empty(n), n, **arguments, BLOCK=32)
        except ValueError as error:
            assert f"shadow {name!r} of mul_kernel" in str(error), error
        else:
            raise AssertionError(f"a short {name} was accepted")
    dx, dw = torch.zeros(n), torch.zeros(n)
    bwd[(1,)](x, w, torch.empty(n), n, dx_ptr=dx, dw_ptr=dw, dy_ptr=upstream.clone(), BLOCK=32)
    near("dx", dx, upstream.double() * w.double(), 1e-5)
    near("dw", dw, upstream.double() * x.double(), 1e-5)


@interpret_check
def interpret_pointers_through_helpers():
    """9. A pointer loaded only inside a helper is found under the interpreter too."""
    ic = _ic()
    roles = pointer_roles(unwrap(helper_load_kernel)[0])
    assert roles == {"x_ptr": {"load"}, "y_ptr": {"store"}}, roles
    n = 41
    x, upstream = ic.randn(n), ic.randn(n)
    bwd = tritonad.grad(helper_load_kernel)
    dx = torch.zeros(n)
    bwd[(1,)](x, torch.empty(n), n, dx_ptr=dx, dy_ptr=upstream.clone(), BLOCK=64)
    _check_exp_sum_gradient(ic, "dx", x, upstream, dx)


def _check_exp_sum_gradient(ic, name, x, upstream, dx):
    leaf = x.double().requires_grad_()
    z = 2 * leaf
    (torch.exp(z) + z.sum()).backward(upstream.double())
    near(name, dx, leaf.grad, 1e-5)


@interpret_check
def interpret_threads_derive_at_once():
    """9. Eight threads deriving and launching at once each get their gradient, and
    leave no twin of tritonad's behind (later derivations work)."""
    ic = _ic()
    from tritonad._interpret import _language_objects

    inputs = [(ic.randn(30 + i), ic.randn(30 + i)) for i in range(9)]
    results, barrier = {}, threading.Barrier(8)

    def derive_and_launch(i):
        try:
            x, upstream = inputs[i]
            bwd = tritonad.grad(exp_sum_kernel)
            dx = torch.zeros_like(x)
            if i < 8:
                barrier.wait(timeout=60)
            bwd[(1,)](x, torch.empty_like(x), x.numel(), dx_ptr=dx, dy_ptr=upstream.clone(),
                      BLOCK=64)
            results[i] = dx
        except Exception as error:  # noqa: BLE001  (reported below)
            results[i] = error

    threads = [threading.Thread(target=derive_and_launch, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    derive_and_launch(8)                        # a later derivation in this process
    for i, (x, upstream) in enumerate(inputs):
        got = results.get(i)
        assert isinstance(got, torch.Tensor), f"{'thread' if i < 8 else 'after'} {i}: {got!r}"
        _check_exp_sum_gradient(ic, f"dx ({i})", x, upstream, got)
    # (the interpreter itself patches triton.language as it runs; tritonad's
    # JITFunction twins must all be gone)
    for obj in _language_objects():
        left = sorted(k for k, v in vars(obj).items()
                      if getattr(v, "tritonad_interpreted", None) is not None)
        assert not left, f"{obj} left holding tritonad's twins: {left[:8]}"


@pytest.fixture(scope="module")
def interpreter_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("interpret_contract") / "results.json"
    return _ic().run_in_interpreter(os.path.abspath(__file__), out)


@pytest.mark.parametrize("name", sorted(INTERPRET_CHECKS))
def test_interpreted(interpreter_results, name):
    result = interpreter_results[name]
    assert result["ok"], f"(TRITONAD_TEST_SEED={result['seed']}) {result['error']}"


# ---------------------------------------------------------------------------
# GPU: the same contracts with compiled kernels, float32 and bfloat16
# ---------------------------------------------------------------------------

GPU_DTYPES = [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)]


def _gpu_randn(*shape, dtype=torch.float32):
    return torch.randn(shape, device="cuda", dtype=torch.float32).to(dtype)


def _assert_near(name, got, want, tol):
    assert torch.isfinite(got).all(), f"{name}: non-finite values"
    near(name, got.cpu(), want.cpu(), tol)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype,tol", GPU_DTYPES)
@pytest.mark.parametrize("name", sorted(WRAPPED_KERNELS))
def test_gpu_launch_keyword_parameters_after_filled_ones(name, dtype, tol):
    kernel = globals()[name]
    keyword, value = WRAPPED_KERNELS[name]
    n = 5003
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    x, upstream = _gpu_randn(n, dtype=dtype), _gpu_randn(n, dtype=dtype)
    want_y = value * torch.sin(x.double())
    want = value * torch.cos(x.double()) * upstream.double()
    bwd = tritonad.grad(kernel)
    y = torch.empty_like(x)
    bwd.forward[grid](x, y, n, **{keyword: value})
    _assert_near("y (bwd.forward)", y, want_y, tol)
    xg = x.clone().requires_grad_()
    op = tritonad.autograd(kernel, outputs=("y_ptr",))
    op[grid](xg, torch.empty_like(x), n, **{keyword: value}).backward(upstream)
    _assert_near("dx (autograd)", xg.grad, want, tol)
    xl = x.clone().requires_grad_()
    tritonad.autograd(wrapped_launch)(name, xl).backward(upstream)
    _assert_near("dx (launcher)", xl.grad, want, tol)


@pytest.mark.gpu
@requires_gpu
def test_gpu_second_derivative_raises():
    n = 1000
    x = torch.randn(n, device="cuda", dtype=torch.float64, requires_grad=True)
    w = torch.randn(n, device="cuda", dtype=torch.float64, requires_grad=True)
    op = tritonad.autograd(mul_kernel, outputs=("y_ptr",))
    y = op[(triton.cdiv(n, 128),)](x, w, torch.empty_like(x), n, BLOCK=128)
    (gx,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    torch.testing.assert_close(gx.detach(), w.detach())
    with pytest.raises(RuntimeError, match=r"tritonad\.autograd\(mul_kernel\).*second"):
        (gx.square().sum() + w.sum()).backward()
    launcher = tritonad.autograd(scale_then_mul)
    with pytest.raises(RuntimeError, match="scale_then_mul.*second derivative"):
        torch.autograd.gradgradcheck(launcher, (x[:37].detach().requires_grad_(),
                                                w[:37].detach().requires_grad_()))


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype, tol", GPU_DTYPES)
def test_gpu_constexpr_defaults(dtype, tol):
    n = 3001
    x, upstream = _gpu_randn(n, dtype=dtype), _gpu_randn(n, dtype=dtype)
    want = 2 * 2.0 * x.double() * upstream.double()
    bwd = tritonad.grad(scaled_square_kernel)
    dx = torch.zeros_like(x)
    bwd[(triton.cdiv(n, 256),)](x, torch.empty_like(x), n, dx, upstream.clone(), BLOCK=256)
    _assert_near("dx (grad)", dx, want, tol)
    op = tritonad.autograd(scaled_square_kernel, outputs=("y_ptr",))
    leaf = x.clone().requires_grad_()
    op[(triton.cdiv(n, 256),)](leaf, torch.empty_like(x), n, BLOCK=256).backward(upstream)
    _assert_near("dx (autograd)", leaf.grad, want, tol)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype, tol", GPU_DTYPES)
def test_gpu_launch_keyword_parameters(dtype, tol):
    rows, cols = 67, 1001
    x, upstream = _gpu_randn(rows, cols, dtype=dtype), _gpu_randn(rows, cols, dtype=dtype)
    leaf = x.double().requires_grad_()
    softmax_reference(leaf).backward(upstream.double())
    op = tritonad.autograd(softmax_stages_kernel, outputs=("output_ptr",))
    xg = x.clone().requires_grad_()
    y = op[(rows,)](torch.empty_like(x), xg, cols, cols, cols, BLOCK_SIZE=256, num_stages=3)
    _assert_near("softmax", y.detach(), softmax_reference(x), tol)
    y.backward(upstream)
    _assert_near("dx (autograd)", xg.grad, leaf.grad, tol)
    bwd = tritonad.grad(softmax_stages_kernel, tune=True)   # (tuned num_stages: its own)
    dx = torch.zeros_like(x)
    bwd[(rows,)](torch.empty_like(x), x, cols, cols, cols, upstream.clone(), dx,
                 BLOCK_SIZE=256, num_stages=2)
    _assert_near("dx (grad)", dx, leaf.grad, tol)

    n, scale = 5003, 0.75
    x, upstream = _gpu_randn(n, dtype=dtype), _gpu_randn(n, dtype=dtype)
    want = torch.cos(x.double()) * scale * 2 * upstream.double()
    xg = x.clone().requires_grad_()
    op = tritonad.autograd(launch_names_kernel, outputs=("y_ptr",))
    op[(triton.cdiv(n, 16),)](x_ptr=xg, y_ptr=torch.empty_like(x), grid=scale, n=n, BLOCK=16,
                              num_warps=2).backward(upstream)
    _assert_near("dx (autograd)", xg.grad, want, tol)
    xl = x.clone().requires_grad_()
    tritonad.autograd(launch_names)(xl, scale).backward(upstream)
    _assert_near("dx (launcher)", xl.grad, want, tol)


@pytest.mark.gpu
@requires_gpu
def test_gpu_shadow_checks():
    n = 4097
    x, w = _gpu_randn(n), _gpu_randn(n)
    bwd = tritonad.grad(mul_kernel)
    with pytest.raises(ValueError, match="shadow 'dx_ptr'.*out of bounds"):
        bwd[(triton.cdiv(n, 256),)](x, w, torch.empty_like(x), n, torch.zeros(n - 100,
                                    device="cuda"), torch.zeros_like(w), _gpu_randn(n),
                                    BLOCK=256)
    with pytest.raises(ValueError, match="shadow 'dw_ptr'.*is on cpu but 'w_ptr' is on cuda"):
        bwd[(triton.cdiv(n, 256),)](x, w, torch.empty_like(x), n, torch.zeros_like(x),
                                    torch.zeros(n), _gpu_randn(n), BLOCK=256)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_in_place_kernels_are_refused(dtype):
    q = _gpu_randn(33, 64, dtype=dtype).requires_grad_()
    q_view, k = q * 1, _gpu_randn(33, 64, dtype=dtype)
    cos, sin = _gpu_randn(33, 32, dtype=dtype), _gpu_randn(33, 32, dtype=dtype)
    with pytest.raises(ValueError, match=r"'q_ptr' \(in place\)"):
        tritonad.autograd(rope_in_place)(q_view, k, cos, sin)
    with pytest.raises(ValueError, match=r"'q_ptr' \(in place\)"):
        tritonad.autograd(rope_in_place_kernel, outputs=("q_ptr", "k_ptr"))


if __name__ == "__main__":
    _ic().main(sys.argv[1:], INTERPRET_CHECKS)


@triton.jit
def named_like_a_shadow_kernel(X_ptr, dX_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """A parameter named as X_ptr's shadow would be (Liger's JSD has both)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X_ptr + offs, mask=mask)
    d = tl.load(dX_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * d, mask=mask)


def test_shadow_names_step_around_the_kernels_own_names():
    bwd = tritonad.grad(named_like_a_shadow_kernel)
    assert bwd.shadows == {"X_ptr": "ddX_ptr", "dX_ptr": "dddX_ptr", "y_ptr": "dy_ptr"}
    assert bwd.launch_signature == ("X_ptr", "dX_ptr", "y_ptr", "n", "ddX_ptr", "dddX_ptr",
                                    "dy_ptr", "BLOCK")
    compile_backward(bwd, dict(X_ptr="*fp32", dX_ptr="*fp32", y_ptr="*fp32", n="i32"),
                     dict(BLOCK=128))
    assert "tt.atomic_rmw" not in bwd.derived_ir()
