"""The derived code rendered as Triton Python (``bwd.source()``, ``fn_vjp.source()``).

CPU only (no interpreter here; test_interpret.py runs renderings): each
corpus backward is derived inside Triton's compile, rendered from its TTIR
(tritonad._C.describe data), and the rendering compiled back through Triton's
front end for sm_90. After Triton's TTIR passes both kernels must hold the same
loads, stores, atomics, dots, loops, branches, reductions and arithmetic, op for
op. Hand-written TTIR checks that unsigned integer ops keep their signedness and
that an op without a rendering is an error naming it; a subprocess pair checks
that ``source()`` answers after a Triton cache hit.
"""

import collections
import json
import os
import re
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from corpus.kernels import CORPUS_BY_NAME  # noqa: E402
from corpus.ttir import INTEGER_TTIR, float_ttir  # noqa: E402
from tritonad import _render  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)

# Every op but constants (Triton gives an atomic without a mask an all-true one)
# and tt.bitcast (Triton spells a change of signedness as an i32 -> i32 bitcast).
_OPS = re.compile(r"\b(tt\.(?!bitcast)\w+|scf\.\w+|math\.\w+|arith\.(?!constant)\w+)\b")


pytestmark = pytest.mark.usefixtures("always_compile")


def ops(ttir: str) -> collections.Counter:
    return collections.Counter(m for m in _OPS.findall(ttir) if m not in ("tt.func", "tt.return"))


def backward_signature(bwd, entry):
    types = dict(entry.signature)
    for pointer, shadow in bwd.shadows.items():
        types[shadow] = entry.signature[pointer]
    signature = {n: "constexpr" if n in entry.constexprs else types[n]
                 for n in bwd.launch_signature}
    return signature, dict(entry.constexprs)


def compile_rendering(source, signature):
    kernel = _render.load(source)
    own = {p.name: signature[p.name] for p in kernel.params}
    return triton.compile(ASTSource(kernel, own, {}), target=TARGET)


CORPUS = ["vector_add", "softmax", "layer_norm_fwd", "layer_norm_bwd_dwdb", "rms_norm_fwd",
          "matmul", "attention_fwd", "dropout", "cumsum", "row_sum", "row_max",
          "first_program_branch", "leaky_relu_clamp", "mixed_precision", "complex_mul",
          "transpose_scale", "permute3d", "reshape_group_mean", "gelu_tanh", "swiglu",
          "cross_entropy_fwd", "affine_2d", "math_zoo"]


@pytest.mark.parametrize("name", CORPUS)
def test_rendered_backward_compiles_to_the_same_ops(name):
    entry = CORPUS_BY_NAME[name]
    bwd = tritonad.grad(entry.fn)
    signature, constexprs = backward_signature(bwd, entry)
    derived = triton.compile(ASTSource(bwd, signature, constexprs), target=TARGET)
    source = bwd.source()
    assert source.startswith("# Backward of corpus.kernels.")
    rendered = compile_rendering(source, signature)
    want, got = ops(derived.asm["ttir"]), ops(rendered.asm["ttir"])
    assert want["tt.store"] + want["tt.atomic_rmw"] > 0
    differ = {op: (want[op], got[op]) for op in set(want) | set(got) if want[op] != got[op]}
    assert not differ, f"(derived, rendered) counts differ: {differ}\n{source}"


def test_rendering_reads_like_the_forward():
    entry = CORPUS_BY_NAME["layer_norm_fwd"]
    bwd = tritonad.grad(entry.fn)
    triton.compile(ASTSource(bwd, *backward_signature(bwd, entry)), target=TARGET)
    source = bwd.source()
    lines = [line.strip() for line in source.splitlines()]
    # the forward's variables, its source lines as comments, loops as loops
    for name in ("row", "mean", "rstd", "x_hat", "cols", "mask"):
        assert any(line.startswith(f"{name} = ") for line in lines), (name, source)
    assert "# kernels.py:" in source and "x_hat = (x - mean) * rstd" in source
    assert sum(line.startswith("for ") and "in range(0, N, 256)" in line
               for line in lines) >= 3, source  # (the forward's three loops, not unrolled)
    assert "tl.atomic_add(" in source and "tl.sum(" in source
    assert "def layer_norm_fwd_kernel_backward(x_ptr, y_ptr, w_ptr, b_ptr" in source


def test_attention_keeps_dot_precision_and_its_loops():
    entry = CORPUS_BY_NAME["attention_fwd"]
    bwd = tritonad.grad(entry.fn)
    triton.compile(ASTSource(bwd, *backward_signature(bwd, entry)), target=TARGET)
    source = bwd.source()
    assert source.count('input_precision="ieee"') >= 6 and "tf32" not in source
    assert "tl.max(" in source and "tl.exp(" in source
    # the forward's key loop and its reverse, in one pass each: the running max
    # only stabilizes, so no replay loop is nested in the reverse
    loops = [line for line in source.splitlines() if line.lstrip().startswith("for ")]
    nested = [line for line in source.splitlines() if line.startswith("        for ")]
    assert len(loops) == 2 and not nested, source


def test_integer_ops_keep_their_signedness():
    source = _render.render(INTEGER_TTIR, "integers")
    kernel = _render.load(source)
    types = ["*i32", "*i32", "*i32", "*fp32", "*i64"]
    compiled = triton.compile(ASTSource(kernel, {p.name: t for p, t in zip(kernel.params, types)},
                                        {}), target=TARGET)
    ttir = compiled.asm["ttir"]
    for op in ("arith.divui", "arith.remui", "arith.shrui", "arith.cmpi ult", "arith.maxui",
               "arith.minui", "arith.divsi", "arith.remsi", "arith.shrsi", "tt.mulhiui",
               "arith.cmpi uge", "arith.uitofp", "arith.extui"):
        assert op in ttir, f"{op} lost in\n{source}"
    # (the private helper is called, not inlined by the rendering)
    assert "@triton.jit\ndef mix(" in source and " = mix(" in source


def test_float_predicates_and_half_division_compile():
    source = _render.render(float_ttir(), "floats")
    kernel = _render.load(source)
    types = ["*fp32", "*fp32", "*i8", "*fp32", "*fp16"]
    ttir = triton.compile(ASTSource(kernel, {p.name: t for p, t in zip(kernel.params, types)},
                                    {}), target=TARGET).asm["ttir"]
    # Triton divides halves in fp32 (then rounds: the same half); unordered predicates
    # are negations of ordered ones
    assert "arith.divf" in ttir and "arith.truncf" in ttir and "arith.cmpf une" in ttir
    assert "~(" in source and ".to(tl.float32) / " in source


_UNRENDERABLE = """
module {
  tt.func public @k(%x_ptr: !tt.ptr<f32>) {
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %p = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %q = tt.addptr %p, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %x = tt.load %q : tensor<16x!tt.ptr<f32>>
    %y = math.tanh %x : tensor<16xf32> loc("kernel_file.py":12:8)
    tt.store %q, %y : tensor<16x!tt.ptr<f32>>
    tt.return
  }
}
"""


def test_an_op_without_rendering_is_an_error_naming_it():
    with pytest.raises(_render.RenderError) as error:
        _render.render(_UNRENDERABLE, "k")
    assert "math.tanh" in str(error.value) and "kernel_file.py:12:8" in str(error.value)
    assert isinstance(error.value, tritonad.RenderError)


@triton.jit
def _erf_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.erf(tl.load(x_ptr + offs, mask=mask)), mask=mask)


def test_a_rendering_failure_leaves_the_kernel_compiling(monkeypatch):
    monkeypatch.delitem(_render._HANDLERS, "math.exp")  # (erf's derivative holds an exp)
    bwd = tritonad.grad(_erf_kernel)
    compiled = triton.compile(ASTSource(bwd, {
        "x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "dx_ptr": "*fp32", "dy_ptr": "*fp32",
        "BLOCK": "constexpr"}, {"BLOCK": 64}), target=TARGET)
    assert ".entry" in compiled.asm["ptx"] and "math.exp" in bwd.derived_ir()
    with pytest.raises(tritonad.RenderError, match=r"math\.exp at .*test_render\.py:\d+"):
        bwd.source()


def test_descriptions_before_any_compile_say_what_they_need():
    bwd = tritonad.grad(_erf_kernel)
    for describe in (bwd.source, bwd.derived_ir, bwd.schedule):
        with pytest.raises(tritonad.NotDerivedError, match=r"launch it once .*bwd\.\w+\(x_ptr"):
            describe()


def test_descriptions_from_launch_arguments_without_a_launch():
    """Given the launch's arguments (CPU tensors here), the backward is derived for
    their types on the CPU: no GPU, no launch."""
    import torch
    bwd = tritonad.grad(_erf_kernel)
    x = torch.zeros(100)
    schedule = bwd.schedule(x, torch.empty(100), 100, BLOCK=64)
    assert schedule.entries[0].subject == "x_ptr"
    assert "tt.func" in bwd.derived_ir() and "def " in bwd.source()


@triton.jit
def _f(x, y):
    a = tl.exp(x)
    b = tl.log(y[:, None])
    return a * b + tl.dot(a[None, :] + b, a[None, :] + b, input_precision="ieee")


def test_function_vjp_source_is_a_device_function_that_compiles():
    f_vjp = tritonad.grad(_f)

    @triton.jit
    def caller(X, Y, DZ, DX, DY, N: tl.constexpr):
        r = tl.arange(0, N)
        dx, dy = f_vjp(tl.load(X + r), tl.load(Y + r), tl.load(DZ + r[:, None] * N + r[None, :]))
        tl.store(DX + r, dx)
        tl.store(DY + r, dy)

    signature = {k: "*fp32" for k in ("X", "Y", "DZ", "DX", "DY")}
    derived = triton.compile(ASTSource(caller, {**signature, "N": "constexpr"}, {"N": 16}),
                             target=TARGET)
    source = f_vjp.source()
    assert "def _f_vjp(x, y, cotangent0):" in source and "return " in source
    vjp = _render.load(source)

    @triton.jit
    def rendered_caller(X, Y, DZ, DX, DY, N: tl.constexpr):
        r = tl.arange(0, N)
        dx, dy = vjp(tl.load(X + r), tl.load(Y + r), tl.load(DZ + r[:, None] * N + r[None, :]))
        tl.store(DX + r, dx)
        tl.store(DY + r, dy)

    rendered = triton.compile(ASTSource(rendered_caller, {**signature, "N": "constexpr"},
                                        {"N": 16}), target=TARGET)
    assert ops(rendered.asm["ttir"]) == ops(derived.asm["ttir"])


_CACHE_SCRIPT = r'''
import json
import triton, triton.language as tl, tritonad
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def gelu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, 0.5 * x * (1 + tl.erf(x * 0.7071067811865476)), mask=mask)


bwd = tritonad.grad(gelu)
signature = dict(x_ptr="*fp32", y_ptr="*fp32", n="i32", dx_ptr="*fp32", dy_ptr="*fp32",
                 BLOCK="constexpr")
triton.compile(ASTSource(bwd, signature, dict(BLOCK=128)), target=GPUTarget("cuda", 90, 32))
print("RESULT " + json.dumps(dict(source=bwd.source())))
'''


def _run(tmp_path, cache, env_extra):
    script = tmp_path / "gelu_source.py"
    script.write_text(_CACHE_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_ALWAYS_COMPILE",
                                                            "TRITONAD_DUMP")}
    root = os.path.dirname(os.path.dirname(os.path.abspath(tritonad.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    env["TRITON_CACHE_DIR"] = str(cache)
    env.update(env_extra)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    line = next(l for l in done.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])["source"], done.stderr


def test_source_survives_a_cache_hit(tmp_path):
    cache = tmp_path / "cache"
    first, stderr = _run(tmp_path, cache, {"TRITONAD_DUMP": "1"})
    assert "// tritonad: backward of" in stderr  # derived in this process
    second, stderr = _run(tmp_path, cache, {"TRITONAD_DUMP": "1"})
    assert "// tritonad: backward of" not in stderr  # served from Triton's cache
    assert first and second == first and "def gelu_backward(" in first
