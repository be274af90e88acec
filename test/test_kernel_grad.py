"""tritonad.grad / tritonad.autograd on whole Triton kernels.

GPU tests (marked ``gpu``) launch real forward kernels (tutorial style, from the
corpus: corpus/user_kernels.py, GELU in corpus/kernels.py) and their derived backward, and compare the gradients with
torch.autograd (fresh random inputs, sizes that are NOT multiples of the block, so
the masked tails are exercised).

CPU companions (not marked) compile every derived backward to PTX for
GPUTarget("cuda", 90, 32) and check what can be checked without a GPU: the schedule
(plain vs atomic accumulation), that the forward's stores are not replayed (every
store of the backward goes to a shadow), and the errors.

Tests marked ``xfail`` document bugs found while writing this file (see each reason).
"""

import inspect
import os
import re

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

import torch.nn.functional as F  # noqa: E402
import triton.language as tl  # noqa: E402

from compile_util import compile_backward, parse_schedule  # noqa: E402
from corpus.kernels import gelu_kernel  # noqa: E402
from corpus.kernels import matmul_kernel  # noqa: E402  (the tutorial's: a_ptrs += ...)
from corpus.user_kernels import (CASES, F16, F32, attention_kernel, branch_kernel,  # noqa: E402
                                 cross_entropy_gather_kernel, cross_entropy_kernel,
                                 exp2d_kernel, gelu_autotuned_kernel, gelu_heuristics_kernel,
                                 layer_norm_kernel, layer_norm_loop_kernel, linear_kernel,
                                 online_logsumexp_kernel, overwrite_kernel,
                                 pointer_increment_kernel, pointer_walk_kernel, rms_norm_kernel,
                                 scale_inplace_kernel, softmax_kernel, sum_loop_kernel,
                                 swiglu_autotuned_kernel, swiglu_kernel, while_sum_kernel)
from gpu_util import requires_gpu  # noqa: E402


pytestmark = pytest.mark.usefixtures("always_compile")


# ---------------------------------------------------------------------------
# CPU helpers
# ---------------------------------------------------------------------------

# Expected schedule per pointer: "plain!" plain with no atomic fallback at all,
# "plain" plain (possibly only when a runtime check passes), "read" the forward
# stores it, "any" whatever tritonad chooses (numbers are checked on the GPU).
SCHEDULES = {
    "gelu": {"x_ptr": "plain!", "y_ptr": "read"},
    "swiglu": {"a_ptr": "plain!", "b_ptr": "plain!", "c_ptr": "read"},
    "softmax": {"in_ptr": "plain", "out_ptr": "read"},
    "layer_norm": {"X": "plain", "W": "any", "B": "any", "Y": "read"},
    "rms_norm": {"X": "plain", "W": "any", "Y": "read"},
    "cross_entropy": {"logits_ptr": "plain", "loss_ptr": "read"},
    "cross_entropy_gather": {"logits_ptr": "any", "loss_ptr": "read"},
    "linear": {"w_ptr": "plain", "x_ptr": "any", "out_ptr": "read"},
    "exp2d": {"x_ptr": "any", "y_ptr": "read"},
    "sum_loop": {"x_ptr": "plain", "out_ptr": "read"},
    "layer_norm_loop": {"X": "any", "W": "any", "B": "any", "Y": "read"},
    "matmul": {"a_ptr": "any", "b_ptr": "any", "c_ptr": "read"},
    "pointer_increment": {"x_ptr": "any", "out_ptr": "read"},
    "while_sum": {"x_ptr": "any", "out_ptr": "read"},
    "branch": {"x_ptr": "plain", "y_ptr": "read"},
    "online_logsumexp": {"x_ptr": "any", "out_ptr": "read"},
    "attention": {"Q": "any", "K": "any", "V": "any", "Out": "read"},
}
ELEMENTWISE = ("gelu", "swiglu")


_DEF = re.compile(r"^\s*(%[\w.$-]+)(?::\d+)? = ([\w.\"]+)\s*(.*)$")
_ARG = re.compile(r"%([\w.$-]+): !tt\.ptr")
_PTR_OPS = ("tt.addptr", "tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape")


def store_roots(ir):
    """For each tt.store / tt.atomic_rmw of the derived IR, the function argument its
    pointer operand is derived from (through addptr/splat/broadcast/expand_dims).
    SSA names repeat across sibling regions: a use sees the latest definition of
    its name in the same or an enclosing region."""
    header = ir[:ir.index("{")]
    args = set(_ARG.findall(header))
    lines = ir.splitlines()[1:]
    scopes, stack, counter = [], [0], 0
    for line in lines:
        text = line.strip()
        if text.startswith("}"):
            stack.pop()
        scopes.append(tuple(stack))
        if text.endswith("{"):
            counter += 1
            stack.append(counter)
    defs = {}
    for i, line in enumerate(lines):
        m = _DEF.match(line)
        if m:
            defs.setdefault(m.group(1), []).append((i, m.group(2), m.group(3)))

    def root(value, at):
        for _ in range(100):
            if value[1:] in args:
                return value[1:]
            visible = [(i, op, rest) for i, op, rest in defs.get(value, ())
                       if i < at and scopes[at][:len(scopes[i])] == scopes[i]]
            if not visible:
                return None
            at, op, rest = visible[-1]
            if op not in _PTR_OPS:
                return None
            value = re.match(r"(%[\w.$-]+)", rest).group(1)
        return None

    roots = []
    for i, line in enumerate(lines):
        text = line.strip()
        m = re.match(r"tt\.store (%[\w.$-]+),", text)
        if m is None:
            m = re.search(r"tt\.atomic_rmw \w+, \w+, \w+, (%[\w.$-]+),", text)
        if m:
            roots.append(root(m.group(1), i))
    return roots


def derive(name, **grad_options):
    kernel, types, constexprs, none = CASES[name]
    bwd = tritonad.grad(kernel, **grad_options)
    compiled = compile_backward(bwd, types, constexprs,
                                none=[n for n in none if n in bwd.launch_signature])
    return bwd, compiled


# ---------------------------------------------------------------------------
# CPU companions
# ---------------------------------------------------------------------------

def test_differentiation_error_is_value_error():
    assert issubclass(tritonad.DifferentiationError, ValueError)


@pytest.mark.parametrize("name", list(CASES))
def test_backward_compiles_and_schedule(name):
    bwd, compiled = derive(name)
    assert "ptx" in compiled.asm and ".entry" in compiled.asm["ptx"]
    kernel, types, constexprs, _ = CASES[name]
    # Signature: runtime forward params, shadows, constexpr params.
    runtime = [n for n in types]
    assert list(bwd.launch_signature[:len(runtime)]) == runtime
    assert list(bwd.launch_signature[-len(constexprs):]) == list(constexprs)
    assert set(bwd.launch_signature[len(runtime):-len(constexprs)]) == set(bwd.shadows.values())
    assert all(s == "d" + p for p, s in bwd.shadows.items())

    schedule = parse_schedule(bwd.schedule())
    for ptr, want in SCHEDULES[name].items():
        assert ptr in schedule, (ptr, bwd.schedule())
        got = schedule[ptr]
        if want == "plain!":
            assert got.startswith("plain") and "atomic" not in got, (ptr, got)
        elif want == "plain":
            assert got.startswith("plain"), (ptr, got)
        elif want == "read":
            assert got.startswith("output"), (ptr, got)
        else:
            assert got, (ptr, got)


@pytest.mark.parametrize("name", list(CASES))
def test_forward_stores_not_replayed(name):
    bwd, _ = derive(name)
    ir = bwd.derived_ir()
    assert ir is not None and "tt.func" in ir
    loaded = {p for p, what in SCHEDULES[name].items() if what != "read"}
    stored = {p for p, what in SCHEDULES[name].items() if what == "read"}
    roots = store_roots(ir)
    assert roots, ir
    # Every write of the backward goes to the shadow of a loaded pointer ...
    assert None not in roots, ir
    assert set(roots) <= {bwd.shadows[p] for p in loaded}, (roots, ir)
    # ... each of them gets one, and nothing is written through a forward pointer
    # or the shadow of an output.
    assert set(roots) == {bwd.shadows[p] for p in loaded}
    assert not set(roots) & (set(bwd.shadows) | {bwd.shadows[p] for p in stored})
    if name in ELEMENTWISE:
        assert "tt.atomic_rmw" not in ir
        assert ir.count("tt.store") == len(loaded)
    # The upstream gradient is read from the output's shadow.
    body = ir[ir.index("{"):]
    for p in stored:
        assert re.search(r"(tt\.splat|tt\.addptr|tt\.load) %" + re.escape(bwd.shadows[p]) + r"\b",
                         body), (p, ir)


def test_several_accumulations_into_one_shadow_are_all_atomic():
    # Threads of one program are not ordered between two accesses: the scalar
    # target-logit gradient and the row gradient both go to dlogits, so both
    # must be atomic (a plain read-add-write could lose the other's update).
    bwd, compiled = derive("cross_entropy_gather")
    assert parse_schedule(bwd.schedule())["logits_ptr"].startswith("atomic")
    ptx = compiled.asm["ptx"]
    assert "atom.global" in ptx or "red.global" in ptx
    body = bwd.derived_ir()
    assert body.count("tt.atomic_rmw") >= 2


def test_elementwise_schedule_has_no_runtime_branch():
    bwd, _ = derive("gelu")
    assert "proven" in parse_schedule(bwd.schedule())["x_ptr"]


def test_fp64_backward_compiles():
    kernel, types, constexprs, _ = CASES["gelu"]
    bwd = tritonad.grad(kernel)
    compile_backward(bwd, dict(x_ptr="*fp64", y_ptr="*fp64", n="i32"), dict(BLOCK=16))
    ir = bwd.derived_ir()
    assert "f64" in ir and "f32>" not in ir
    # erf' = 2/sqrt(pi) exp(-u^2): the constant must be the double one.
    assert "1.1283791670955126" in ir
    kernel, types, constexprs, _ = CASES["softmax"]
    bwd = tritonad.grad(kernel)
    types = {k: ("*fp64" if v == F32 else v) for k, v in types.items()}
    compile_backward(bwd, types, dict(BLOCK_N=64))


def test_mode_atomic_uses_atomics():
    bwd, _ = derive("gelu", mode="atomic")
    assert parse_schedule(bwd.schedule())["x_ptr"].startswith("atomic")
    ir = bwd.derived_ir()
    assert "tt.atomic_rmw fadd" in ir
    assert [r for r in store_roots(ir)] == ["dx_ptr"]


def test_mode_deterministic_elementwise():
    bwd, _ = derive("gelu", mode="deterministic")
    assert parse_schedule(bwd.schedule())["x_ptr"].startswith("plain")
    assert "tt.atomic_rmw" not in bwd.derived_ir()


@triton.jit
def _fp8_scale_kernel(x_ptr, w_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    w = tl.load(w_ptr).to(tl.float32)   # every program's: an atomic, or a launch check
    tl.store(out_ptr + offs, x * w, mask=mask)


_FP8_TYPES = dict(x_ptr="*fp8e4nv", w_ptr="*fp8e4nv", out_ptr=F32, n="i32")


@pytest.mark.parametrize("mode", ["auto", "atomic"])
def test_fp8_gradient_that_needs_atomics_is_a_located_error(mode):
    # GPUs have no fp8 atomic add: the planned atomic is refused, naming the
    # pointer and the load's line, before anything is emitted.
    bwd = tritonad.grad(_fp8_scale_kernel, mode=mode)
    with pytest.raises(ValueError) as error:
        compile_backward(bwd, _FP8_TYPES, dict(BLOCK=64))
    line = inspect.getsourcelines(_fp8_scale_kernel.fn)[1] + 5
    assert f"test_kernel_grad.py:{line}:" in str(error.value)
    assert "cannot accumulate the gradient of 'w_ptr' with atomics" in str(error.value)


def test_fp8_gradient_in_deterministic_mode_is_plain_without_an_atomic_twin():
    bwd = tritonad.grad(_fp8_scale_kernel, mode="deterministic")
    compile_backward(bwd, _FP8_TYPES, dict(BLOCK=64))
    schedule = parse_schedule(bwd.schedule())
    assert schedule["x_ptr"].startswith("plain (proven")
    assert schedule["w_ptr"].startswith("plain (deterministic mode")
    assert "tt.atomic_rmw" not in bwd.derived_ir()


def _requirements(compiled, kwargs, grid):
    """The error _partial's launch check raises for these arguments, or None."""
    from tritonad._partial import _check_requirements
    try:
        _check_requirements(compiled, kwargs, grid)
    except RuntimeError as error:
        return str(error)
    return None


def test_mode_deterministic_layer_norm_checks_shared_weights_at_launch():
    # dW / dB are added to by every row program. Without partial buffers (no
    # workspace in this signature) the only writes without atomics are plain
    # ones, exclusive for a single program: deterministic mode writes them and
    # the launch refuses any other grid, naming the gradient.
    bwd, compiled = derive("layer_norm", mode="deterministic")
    assert "tt.atomic_rmw" not in bwd.derived_ir()
    kwargs = dict(stride=1024, N=1000, eps=1e-5)
    assert _requirements(compiled, kwargs, (1,)) is None
    message = _requirements(compiled, kwargs, (8,))
    assert message and re.search(r"'d(W|B)'", message) and "mode='auto'" in message, message


def test_mode_deterministic_softmax_checks_row_stride_at_launch():
    # The plain write to in_ptr's shadow is exclusive where rows do not overlap
    # (row stride >= row length): deterministic mode writes it plainly and the
    # launch checks the condition, refusing overlapping rows.
    bwd, compiled = derive("softmax", mode="deterministic")
    line = parse_schedule(bwd.schedule())["in_ptr"]
    assert "deterministic mode" in line and "the launch checks" in line, line
    assert "tt.atomic_rmw" not in bwd.derived_ir()
    kwargs = dict(in_row_stride=1000, out_row_stride=1000, n_cols=1000)
    assert _requirements(compiled, kwargs, (7,)) is None
    message = _requirements(compiled, dict(kwargs, in_row_stride=500), (7,))
    assert message and "'din_ptr'" in message, message


def test_bad_mode():
    with pytest.raises(ValueError, match="mode"):
        tritonad.grad(gelu_kernel, mode="fast")


def test_none_shadow_of_an_input():
    kernel, types, constexprs, none = CASES["layer_norm"]
    bwd = tritonad.grad(kernel)
    compile_backward(bwd, types, constexprs, none=none + ("dW",))
    ir = bwd.derived_ir()
    assert "%dW" not in ir
    roots = store_roots(ir)
    assert set(roots) == {"dX", "dB"}
    schedule = parse_schedule(bwd.schedule())
    assert schedule["X"].startswith("plain") and "W" not in schedule


def test_none_shadow_of_the_output_gives_an_empty_backward():
    kernel, types, constexprs, none = CASES["layer_norm"]
    bwd = tritonad.grad(kernel)
    compile_backward(bwd, types, constexprs, none=none + ("dY",))
    ir = bwd.derived_ir()
    assert "tt.store" not in ir and "tt.atomic_rmw" not in ir


def test_schedule_labels_loaded_pointers_without_gradient():
    kernel, types, constexprs, _ = CASES["cross_entropy"]
    bwd = tritonad.grad(kernel)
    compile_backward(bwd, types, constexprs)          # dtarget_ptr passed as *i64
    assert "stores" not in parse_schedule(bwd.schedule())["target_ptr"]


def test_wrt_restricts_shadows():
    # wrt picks the inputs that get gradients; outputs always keep their shadows.
    kernel, types, constexprs, none = CASES["layer_norm"]
    bwd = tritonad.grad(kernel, wrt=["X"])
    assert bwd.shadows == {"X": "dX", "Y": "dY", "Mean": "dMean", "Rstd": "dRstd"}
    assert bwd.launch_signature == tuple(types) + ("dX", "dY", "dMean", "dRstd", "BLOCK_N")
    compile_backward(bwd, types, constexprs, none=none)
    assert set(store_roots(bwd.derived_ir())) == {"dX"}
    with pytest.raises(ValueError, match="not a pointer parameter"):
        tritonad.grad(kernel, wrt="eps")
    with pytest.raises(ValueError, match="names an output"):
        tritonad.grad(kernel, wrt=["X", "Y"])


def test_unknown_pointers_name():
    with pytest.raises(ValueError, match="nope"):
        tritonad.grad(gelu_kernel, pointers=["x_ptr", "nope"])
    with pytest.raises(ValueError, match="BLOCK"):
        tritonad.grad(gelu_kernel, pointers=["x_ptr", "BLOCK"])   # a constexpr


@pytest.mark.parametrize("shadow, type_", [("dx_ptr", "*fp16"), ("dx_ptr", "*i32"),
                                           ("dy_ptr", "*bf16"), ("dx_ptr", "fp32")])
def test_wrong_shadow_dtype(shadow, type_):
    kernel, types, constexprs, _ = CASES["gelu"]
    bwd = tritonad.grad(kernel)
    with pytest.raises(tritonad.DifferentiationError,
                       match=rf"shadow '{shadow}' has type .* same dtype"):
        compile_backward(bwd, types, constexprs, overrides={shadow: type_})


def test_in_place_kernel_is_refused():
    bwd = tritonad.grad(scale_inplace_kernel)
    with pytest.raises(tritonad.DifferentiationError, match="in place") as info:
        compile_backward(bwd, dict(x_ptr=F32, n="i32"), dict(BLOCK=256))
    assert "'x_ptr'" in str(info.value)


def test_in_place_kernel_with_none_shadow_is_allowed():
    # The message suggests passing None for the shadow: that must then compile.
    bwd = tritonad.grad(scale_inplace_kernel)
    compile_backward(bwd, dict(x_ptr=F32, n="i32"), dict(BLOCK=256), none=("dx_ptr",))


def _for_lines(kernel):
    lines, start = inspect.getsourcelines(kernel.fn)
    return {start + i for i, text in enumerate(lines) if text.strip().startswith("for ")}


@triton.jit
def running_max_kept_kernel(x_ptr, out_ptr, max_ptr, stride, N, BLOCK: tl.constexpr):
    # online_logsumexp_kernel that also stores its running max: the max is now
    # a result, not only a stabilizer.
    row = tl.program_id(0)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=float("-inf"))
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    big = tl.max(m, axis=0)
    tl.store(out_ptr + row, big + tl.log(tl.sum(s * tl.exp(m - big), axis=0)))
    tl.store(max_ptr + row, big)


def _loop_notes(bwd):
    return [line for line in bwd.schedule().splitlines() if line.startswith("loop scf.for")]


def test_loop_carrying_a_stabilizing_max_is_reversed_in_one_pass():
    bwd = tritonad.grad(online_logsumexp_kernel)
    compile_backward(bwd, dict(x_ptr=F32, out_ptr=F32, stride="i32", N="i32"), dict(BLOCK=256))
    # The schedule names the loop (by its line) and the strategy chosen for it.
    notes = _loop_notes(bwd)
    assert len(notes) == 1 and "only stabilizes exponentials" in notes[0], bwd.schedule()
    line = re.search(r"user_kernels\.py:(\d+):\d+: ", notes[0])
    assert line and int(line.group(1)) in _for_lines(online_logsumexp_kernel), notes[0]
    # Both maxima (the loop's per-lane one and the max over lanes) are named.
    assert bwd.schedule().count("stabilizer at ") == 2, bwd.schedule()
    ir = bwd.derived_ir()
    # The recomputed forward loop (its results feed the epilogue) and one
    # reverse loop: no replay nested inside it.
    assert ir.count("scf.for") == 2, ir


def test_loop_carrying_a_stored_max_is_reversed_by_recomputation():
    bwd = tritonad.grad(running_max_kept_kernel)
    compile_backward(bwd, dict(x_ptr=F32, out_ptr=F32, max_ptr=F32, stride="i32", N="i32"),
                     dict(BLOCK=256))
    notes = _loop_notes(bwd)
    assert len(notes) == 1 and "recomputed by replaying" in notes[0], bwd.schedule()
    assert "stabilizer at " not in bwd.schedule(), bwd.schedule()
    # The recomputed forward loop, the reverse loop and the replay inside it.
    assert bwd.derived_ir().count("scf.for") == 3, bwd.derived_ir()


def test_loop_carrying_a_stored_max_is_taped_when_launched_with_a_tape():
    # The launch path passes `tritonad_tape`: the loop's state is taped, not replayed,
    # and the compiled kernel says how much scratch a launch needs.
    from compile_util import compile_for_schedule
    from tritonad import _coverage

    bwd = tritonad.grad(running_max_kept_kernel)
    types_ = dict(x_ptr=F32, out_ptr=F32, max_ptr=F32, stride="i32", N="i32")
    schedule = compile_for_schedule(bwd, types_, dict(BLOCK=256))
    notes = _loop_notes(bwd)
    assert len(notes) == 1 and "tapes each iteration's carried state" in notes[0], schedule
    (tape,) = bwd.tapes()
    where, bytes_per_iteration, trips = tape
    assert os.path.basename(__file__) in where
    assert bytes_per_iteration == 2 * 256 * 4  # m and s, 256 lanes of fp32
    assert _coverage.evaluate(trips, {"N": 1000}, (7,)) == 4
    assert _coverage.evaluate(trips, {"N": 0}, (7,)) == 0
    ir = bwd.derived_ir()
    # the recomputed forward (storing every k-th state), the reverse, and in it the
    # replay from the nearest kept state (no iteration when k = 1)
    assert ir.count("scf.for") == 3 and "gpu.barrier" in ir and "arith.remsi" in ir, ir


def test_accumulating_loop_is_reported_as_such():
    bwd, _ = derive("layer_norm_loop")
    notes = [line for line in bwd.schedule().splitlines() if line.startswith("loop scf.for")]
    assert notes and all("pure accumulations" in note for note in notes), bwd.schedule()


def test_pointer_advanced_in_a_loop_becomes_an_induction():
    # `ptrs += BLOCK` is rewritten as init + k * BLOCK inside the loop: the
    # backward needs no carried pointer and keeps the loop.
    bwd, _ = derive("pointer_increment")
    ir = bwd.derived_ir()
    assert ir.count("scf.for") >= 1
    assert set(store_roots(ir)) == {"dx_ptr"}


def test_matmul_backward_keeps_the_k_loop():
    bwd, _ = derive("matmul")
    ir = bwd.derived_ir()
    loops = re.findall(r"scf\.for", ir)
    assert len(loops) == 1, ir       # the reverse K loop, not unrolled
    assert ir.count("tt.dot") == 2   # dA = dC . B^T and dB = A^T . dC, per iteration
    assert set(store_roots(ir)) == {"da_ptr", "db_ptr"}


@pytest.mark.parametrize("dtype", [F32, F16])
def test_matmul_backward_compiles_with_pipelined_tf32_tiles(dtype):
    """Regression: the 64x32x32 tile puts a transposed fp32 operand in a
    pipelined loop; Triton 3.6's Hopper pipeliner failed when the dot's result
    was then consumed inside an scf.if (the shadow accumulations were branches,
    now they are predicated)."""
    _, types, _, _ = CASES["matmul"]
    types = dict(types, a_ptr=dtype, b_ptr=dtype, c_ptr=dtype)
    bwd = tritonad.grad(matmul_kernel)
    compiled = compile_backward(bwd, types, dict(BLOCK_M=64, BLOCK_N=32, BLOCK_K=32, GROUP_M=8))
    assert ".entry" in compiled.asm["ptx"]
    assert "scf.if" not in bwd.derived_ir()


def test_counted_while_loop_is_reversed_as_the_for_loop_it_spells():
    # `while start < length: ...; start += BLOCK` (length loaded: a data-dependent
    # trip count) is `for start in range(0, length, BLOCK)` (Prepare/CountedLoops.cpp)
    bwd, _ = derive("while_sum")
    ir = bwd.derived_ir()
    assert "scf.while" not in ir, ir
    assert ir.count("scf.for") == 1, ir   # the forward's loop, reversed as one
    assert set(store_roots(ir)) == {"dx_ptr"}


def test_pointer_carried_by_a_loop_otherwise_is_refused():
    bwd = tritonad.grad(pointer_walk_kernel)
    with pytest.raises(tritonad.DifferentiationError, match="carried by a loop") as info:
        compile_backward(bwd, dict(x_ptr=F32, out_ptr=F32, N="i32"), dict(BLOCK=256))
    assert "user_kernels.py" in str(info.value)  # (the kernel's file)


def test_loops_of_pure_accumulations_are_kept_as_loops():
    bwd, _ = derive("layer_norm_loop")
    ir = bwd.derived_ir()
    # Three forward loops recomputed/reversed, not unrolled (N is a runtime value).
    assert ir.count("scf.for") >= 3
    assert set(store_roots(ir)) == {"dX", "dW", "dB"}


def test_signature_attributes_survive_wrappers():
    from tritonad._forward_config import FollowsForwardConfig
    for kernel in (gelu_autotuned_kernel, gelu_heuristics_kernel):
        bwd = tritonad.grad(kernel)
        assert type(bwd) is (FollowsForwardConfig if kernel is gelu_autotuned_kernel
                             else type(kernel))
        assert bwd.launch_signature == ("x_ptr", "y_ptr", "n", "dx_ptr", "dy_ptr", "BLOCK")
        assert bwd.shadows == {"x_ptr": "dx_ptr", "y_ptr": "dy_ptr"}
        compile_backward(bwd.fn, dict(x_ptr=F32, y_ptr=F32, n="i32"), dict(BLOCK=128))
        assert parse_schedule(bwd.schedule())["x_ptr"].startswith("plain")
        assert "tt.atomic_rmw" not in bwd.derived_ir()
    bwd = tritonad.grad(gelu_autotuned_kernel)
    assert bwd.tuner is gelu_autotuned_kernel  # (never re-tuned: see test_forward_config.py)


def test_signature_is_the_positional_order():
    bwd = tritonad.grad(gelu_kernel)
    # (then the workspace parameters, which the launch path fills, and the
    # residuals, which tritonad.autograd's forward saves)
    assert list(bwd.arg_names) == list(bwd.launch_signature) + [
        "tritonad_workspace", "tritonad_slot", "tritonad_programs", "tritonad_tape",
        "tritonad_tape_every", "tritonad_scatter_index", "tritonad_scatter_values",
        "tritonad_regrid", "tritonad_main_only", "tritonad_parts_only",
        "tritonad_full_masks", "tritonad_keep_masks", "tritonad_residuals"]


# ---------------------------------------------------------------------------
# GPU: numbers against torch.autograd
# ---------------------------------------------------------------------------

def assert_close(actual, expected, rtol=1e-4, atol=1e-5):
    torch.testing.assert_close(actual, expected.to(actual.dtype), rtol=rtol, atol=atol)


def torch_grads(fn, inputs, upstream):
    """Gradients of sum(fn(*inputs) * upstream) in float64 (the reference)."""
    leaves = [t.detach().double().requires_grad_() for t in inputs]
    out = fn(*leaves)
    out.backward(upstream.double())
    return [t.grad for t in leaves]


@pytest.mark.gpu
@requires_gpu
def test_gelu_grad():
    torch.manual_seed(0)
    n, BLOCK = 1000, 256
    grid = (triton.cdiv(n, BLOCK),)
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    gelu_kernel[grid](x, y, n, BLOCK=BLOCK)
    assert_close(y, F.gelu(x.double()))
    dy = torch.randn_like(x)
    dx = torch.zeros_like(x)
    bwd = tritonad.grad(gelu_kernel)
    bwd[grid](x, y, n, dx_ptr=dx, dy_ptr=dy, BLOCK=BLOCK)
    (ref,) = torch_grads(F.gelu, [x], dy)
    assert_close(dx, ref)
    # The gradient is ADDED into the shadow; the upstream shadow is not modified.
    dy_before = dy.clone()
    bwd[grid](x, y, n, dx_ptr=dx, dy_ptr=dy, BLOCK=BLOCK)
    assert_close(dx, 2 * ref)
    assert torch.equal(dy, dy_before)
    torch.cuda.synchronize()


@pytest.mark.gpu
@requires_gpu
def test_gelu_modes_give_the_same_numbers():
    torch.manual_seed(1)
    n, BLOCK = 1000, 256
    grid = (triton.cdiv(n, BLOCK),)
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    dy = torch.randn_like(x)
    results = {}
    for mode in ("auto", "deterministic", "atomic"):
        dx = torch.zeros_like(x)
        tritonad.grad(gelu_kernel, mode=mode)[grid](x, y, n, dx_ptr=dx, dy_ptr=dy, BLOCK=BLOCK)
        results[mode] = dx
    # One contribution per address: atomics add it to zero exactly as plain code does.
    assert torch.equal(results["auto"], results["deterministic"])
    assert torch.equal(results["auto"], results["atomic"])
    (ref,) = torch_grads(F.gelu, [x], dy)
    assert_close(results["auto"], ref)


@pytest.mark.gpu
@requires_gpu
def test_swiglu_grad():
    torch.manual_seed(2)
    n, BLOCK = 1000, 256
    grid = (triton.cdiv(n, BLOCK),)
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    c = torch.empty_like(a)
    swiglu_kernel[grid](a, b, c, n, BLOCK=BLOCK)
    assert_close(c, F.silu(a.double()) * b.double())
    dc = torch.randn_like(a)
    da, db = torch.zeros_like(a), torch.zeros_like(b)
    bwd = tritonad.grad(swiglu_kernel)
    bwd[grid](a, b, c, n, da_ptr=da, db_ptr=db, dc_ptr=dc, BLOCK=BLOCK)
    ref_a, ref_b = torch_grads(lambda a, b: F.silu(a) * b, [a, b], dc)
    assert_close(da, ref_a)
    assert_close(db, ref_b)
    # Only one gradient wanted.
    db2 = torch.zeros_like(b)
    bwd[grid](a, b, c, n, da_ptr=None, db_ptr=db2, dc_ptr=dc, BLOCK=BLOCK)
    assert_close(db2, ref_b)


@pytest.mark.gpu
@requires_gpu
def test_softmax_grad_strided_input():
    torch.manual_seed(3)
    M, N, BLOCK_N = 37, 1000, 1024
    base = torch.randn(M, 1100, device="cuda")
    x = base[:, :N]                              # row stride 1100, not contiguous
    out = torch.empty(M, N, device="cuda")
    softmax_kernel[(M,)](out, x, x.stride(0), out.stride(0), N, BLOCK_N=BLOCK_N)
    assert_close(out, torch.softmax(x.double(), dim=-1))
    dout = torch.randn_like(out)
    din_full = torch.zeros_like(base)
    din = din_full[:, :N]                        # the shadow has the input's layout
    bwd = tritonad.grad(softmax_kernel)
    bwd[(M,)](out, x, x.stride(0), out.stride(0), N, dout_ptr=dout, din_ptr=din,
              BLOCK_N=BLOCK_N)
    (ref,) = torch_grads(lambda t: torch.softmax(t, dim=-1), [x], dout)
    assert_close(din, ref)
    assert torch.all(din_full[:, N:] == 0)       # the padding is never written


def _layer_norm_ref(x, w, b, eps):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


@pytest.mark.gpu
@requires_gpu
def test_layer_norm_grad():
    torch.manual_seed(4)
    M, N, BLOCK_N, eps = 37, 1000, 1024, 1e-5
    X = torch.randn(M, N, device="cuda")
    W = torch.randn(N, device="cuda")
    B = torch.randn(N, device="cuda")
    Y = torch.empty_like(X)
    Mean = torch.empty(M, device="cuda")
    Rstd = torch.empty(M, device="cuda")
    layer_norm_kernel[(M,)](X, W, B, Y, Mean, Rstd, X.stride(0), N, eps, BLOCK_N=BLOCK_N)
    assert_close(Y, _layer_norm_ref(X.double(), W.double(), B.double(), eps), atol=1e-4)
    assert_close(Mean, X.double().mean(-1))
    dY = torch.randn_like(X)
    dX, dW, dB = torch.zeros_like(X), torch.zeros_like(W), torch.zeros_like(B)
    bwd = tritonad.grad(layer_norm_kernel)
    bwd[(M,)](X, W, B, Y, Mean, Rstd, X.stride(0), N, eps,
              dX=dX, dW=dW, dB=dB, dY=dY, dMean=None, dRstd=None, BLOCK_N=BLOCK_N)
    refs = torch_grads(lambda x, w, b: _layer_norm_ref(x, w, b, eps), [X, W, B], dY)
    assert_close(dX, refs[0], atol=1e-4)
    assert_close(dW, refs[1], atol=1e-4)         # 37 programs add into dW: reordered sums
    assert_close(dB, refs[2], atol=1e-4)

    # dW not wanted: the others still match.
    dX2, dB2 = torch.zeros_like(X), torch.zeros_like(B)
    bwd[(M,)](X, W, B, Y, Mean, Rstd, X.stride(0), N, eps,
              dX=dX2, dW=None, dB=dB2, dY=dY, BLOCK_N=BLOCK_N)
    assert_close(dX2, refs[0], atol=1e-4)
    assert_close(dB2, refs[2], atol=1e-4)

    # mode="atomic": same numbers up to summation order.
    dX3, dW3, dB3 = torch.zeros_like(X), torch.zeros_like(W), torch.zeros_like(B)
    tritonad.grad(layer_norm_kernel, mode="atomic")[(M,)](
        X, W, B, Y, Mean, Rstd, X.stride(0), N, eps, dX=dX3, dW=dW3, dB=dB3, dY=dY,
        BLOCK_N=BLOCK_N)
    assert_close(dX3, refs[0], atol=1e-4)
    assert_close(dW3, refs[1], atol=1e-4)
    assert_close(dB3, refs[2], atol=1e-4)


@pytest.mark.gpu
@requires_gpu
def test_layer_norm_single_row_program():
    # One program: the runtime check lets dW/dB take the plain path.
    torch.manual_seed(5)
    N, BLOCK_N, eps = 1000, 1024, 1e-5
    X = torch.randn(1, N, device="cuda")
    W, B = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    Y, Mean, Rstd = torch.empty_like(X), torch.empty(1, device="cuda"), torch.empty(1, device="cuda")
    dY = torch.randn_like(X)
    dX, dW, dB = torch.zeros_like(X), torch.zeros_like(W), torch.zeros_like(B)
    tritonad.grad(layer_norm_kernel)[(1,)](X, W, B, Y, Mean, Rstd, N, N, eps, dX=dX, dW=dW,
                                           dB=dB, dY=dY, BLOCK_N=BLOCK_N)
    refs = torch_grads(lambda x, w, b: _layer_norm_ref(x, w, b, eps), [X, W, B], dY)
    assert_close(dX, refs[0], atol=1e-4)
    assert_close(dW, refs[1], atol=1e-4)
    assert_close(dB, refs[2], atol=1e-4)


@pytest.mark.gpu
@requires_gpu
def test_rms_norm_grad():
    torch.manual_seed(6)
    M, N, BLOCK_N, eps = 37, 1000, 1024, 1e-6
    X = torch.randn(M, N, device="cuda")
    W = torch.randn(N, device="cuda")
    Y = torch.empty_like(X)
    rms_norm_kernel[(M,)](X, W, Y, X.stride(0), N, eps, BLOCK_N=BLOCK_N)

    def ref_fn(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

    assert_close(Y, ref_fn(X.double(), W.double()), atol=1e-4)
    dY = torch.randn_like(X)
    dX, dW = torch.zeros_like(X), torch.zeros_like(W)
    tritonad.grad(rms_norm_kernel)[(M,)](X, W, Y, X.stride(0), N, eps, dX=dX, dW=dW, dY=dY,
                                         BLOCK_N=BLOCK_N)
    ref_x, ref_w = torch_grads(ref_fn, [X, W], dY)
    assert_close(dX, ref_x, atol=1e-4)
    assert_close(dW, ref_w, atol=1e-4)


def _cross_entropy_case(kernel, M, N, seed):
    torch.manual_seed(seed)
    BLOCK_N = triton.next_power_of_2(N)
    logits = torch.randn(M, N, device="cuda")
    target = torch.randint(0, N, (M,), device="cuda", dtype=torch.int64)
    loss = torch.empty(M, device="cuda")
    kernel[(M,)](logits, target, loss, logits.stride(0), N, BLOCK_N=BLOCK_N)
    assert_close(loss, F.cross_entropy(logits.double(), target, reduction="none"), atol=1e-4)
    dloss = torch.randn(M, device="cuda")
    dlogits = torch.zeros_like(logits)
    tritonad.grad(kernel)[(M,)](logits, target, loss, logits.stride(0), N,
                                dlogits_ptr=dlogits, dtarget_ptr=None, dloss_ptr=dloss,
                                BLOCK_N=BLOCK_N)
    (ref,) = torch_grads(lambda t: F.cross_entropy(t, target, reduction="none"),
                         [logits], dloss)
    assert_close(dlogits, ref)


@pytest.mark.gpu
@requires_gpu
def test_cross_entropy_grad():
    _cross_entropy_case(cross_entropy_kernel, 37, 1000, seed=7)


@pytest.mark.gpu
@requires_gpu
def test_cross_entropy_gather_grad():
    # Two loads of logits in one program: the target logit's gradient is an atomic add
    # to a data-dependent address, the row's a plain read-add-write of the same row.
    # The derived PTX has no barrier between them (the scalar atom is issued by one
    # thread, the row is read by all): many rows make a lost update likely.
    _cross_entropy_case(cross_entropy_gather_kernel, 37, 1000, seed=8)
    _cross_entropy_case(cross_entropy_gather_kernel, 2048, 1000, seed=9)


@pytest.mark.gpu
@requires_gpu
def test_linear_grad():
    torch.manual_seed(10)
    M, K, BLOCK_K = 37, 1000, 1024
    w = torch.randn(M, K, device="cuda")
    x = torch.randn(K, device="cuda")
    out = torch.empty(M, device="cuda")
    linear_kernel[(M,)](w, x, out, w.stride(0), K, BLOCK_K=BLOCK_K)
    assert_close(out, w.double() @ x.double(), atol=1e-4)
    dout = torch.randn(M, device="cuda")
    dw, dx = torch.zeros_like(w), torch.zeros_like(x)
    tritonad.grad(linear_kernel)[(M,)](w, x, out, w.stride(0), K, dw_ptr=dw, dx_ptr=dx,
                                       dout_ptr=dout, BLOCK_K=BLOCK_K)
    ref_w, ref_x = torch_grads(lambda w, x: w @ x, [w, x], dout)
    assert_close(dw, ref_w)
    assert_close(dx, ref_x, atol=1e-4)           # 37 programs add into dx


@pytest.mark.gpu
@requires_gpu
def test_exp2d_grad():
    torch.manual_seed(11)
    M, N = 100, 130
    x = torch.randn(M, N, device="cuda")
    y = torch.empty_like(x)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 64))
    exp2d_kernel[grid](x, y, M, N, x.stride(0), BM=32, BN=64)
    dy = torch.randn_like(x)
    dx = torch.zeros_like(x)
    tritonad.grad(exp2d_kernel)[grid](x, y, M, N, x.stride(0), dx_ptr=dx, dy_ptr=dy,
                                      BM=32, BN=64)
    (ref,) = torch_grads(lambda t: torch.exp(t) * 2.0, [x], dy)
    assert_close(dx, ref)


@pytest.mark.gpu
@requires_gpu
def test_sum_loop_grad():
    torch.manual_seed(20)
    N = 1000
    x = torch.randn(N, device="cuda")
    out = torch.empty(1, device="cuda")
    sum_loop_kernel[(1,)](x, out, N, BLOCK=256)
    assert_close(out, x.double().sum().reshape(1), atol=1e-4)
    dout = torch.randn(1, device="cuda")
    dx = torch.zeros_like(x)
    tritonad.grad(sum_loop_kernel)[(1,)](x, out, N, dx_ptr=dx, dout_ptr=dout, BLOCK=256)
    assert_close(dx, dout.double().expand(N))


@pytest.mark.gpu
@requires_gpu
def test_layer_norm_loop_grad():
    torch.manual_seed(21)
    M, N, BLOCK_N, eps = 37, 1000, 256, 1e-5   # 4 column blocks, the last one masked
    X = torch.randn(M, N, device="cuda")
    W = torch.randn(N, device="cuda")
    B = torch.randn(N, device="cuda")
    Y = torch.empty_like(X)
    layer_norm_loop_kernel[(M,)](X, W, B, Y, X.stride(0), N, eps, BLOCK_N=BLOCK_N)
    assert_close(Y, _layer_norm_ref(X.double(), W.double(), B.double(), eps), atol=1e-4)
    dY = torch.randn_like(X)
    dX, dW, dB = torch.zeros_like(X), torch.zeros_like(W), torch.zeros_like(B)
    tritonad.grad(layer_norm_loop_kernel)[(M,)](X, W, B, Y, X.stride(0), N, eps, dX=dX, dW=dW,
                                                dB=dB, dY=dY, BLOCK_N=BLOCK_N)
    refs = torch_grads(lambda x, w, b: _layer_norm_ref(x, w, b, eps), [X, W, B], dY)
    assert_close(dX, refs[0], atol=1e-4)
    assert_close(dW, refs[1], atol=1e-4)
    assert_close(dB, refs[2], atol=1e-4)


@pytest.mark.gpu
@requires_gpu
def test_data_dependent_branch_grad():
    torch.manual_seed(27)
    R, N, BLOCK = 16, 100, 128
    x = torch.randn(R, N, device="cuda")
    y = torch.empty_like(x)
    branch_kernel[(R,)](x, y, x.stride(0), N, BLOCK=BLOCK)
    positive = x.sum(1, keepdim=True) > 0
    assert 0 < int(positive.sum()) < R, "both branches must be taken"

    def reference(t):
        return torch.where(positive, torch.exp(t) * t, torch.sin(t) * 2.0)

    assert_close(y, reference(x.double()), atol=1e-5)
    dy, dx = torch.randn_like(x), torch.zeros_like(x)
    tritonad.grad(branch_kernel)[(R,)](x, y, x.stride(0), N, dx_ptr=dx, dy_ptr=dy, BLOCK=BLOCK)
    (ref,) = torch_grads(reference, [x], dy)
    assert_close(dx, ref, atol=1e-5)


@pytest.mark.gpu
@requires_gpu
def test_online_logsumexp_grad():
    torch.manual_seed(25)
    R, N, BLOCK = 7, 1000, 256    # 4 column blocks, the last one masked
    x = torch.randn(R, N, device="cuda") * 3
    out = torch.empty(R, device="cuda")
    online_logsumexp_kernel[(R,)](x, out, x.stride(0), N, BLOCK=BLOCK)
    assert_close(out, torch.logsumexp(x.double(), 1), atol=1e-4)
    dout = torch.randn(R, device="cuda")
    dx = torch.zeros_like(x)
    tritonad.grad(online_logsumexp_kernel)[(R,)](x, out, x.stride(0), N, dx_ptr=dx,
                                                 dout_ptr=dout, BLOCK=BLOCK)
    (ref,) = torch_grads(lambda t: torch.logsumexp(t, 1), [x], dout)
    assert_close(dx, ref, atol=1e-5)


@pytest.mark.gpu
@requires_gpu
def test_stored_running_max_grad():
    # The max is a result here: its gradient (to the first maximal element of
    # each row) adds to logsumexp's.
    torch.manual_seed(27)
    R, N, BLOCK = 5, 777, 256
    x = torch.randn(R, N, device="cuda") * 2
    out, big = torch.empty(R, device="cuda"), torch.empty(R, device="cuda")
    running_max_kept_kernel[(R,)](x, out, big, x.stride(0), N, BLOCK=BLOCK)
    dout, dbig = torch.randn(R, device="cuda"), torch.randn(R, device="cuda")
    dx = torch.zeros_like(x)
    tritonad.grad(running_max_kept_kernel)[(R,)](x, out, big, x.stride(0), N, dx_ptr=dx,
                                                 dout_ptr=dout, dmax_ptr=dbig, BLOCK=BLOCK)
    (ref,) = torch_grads(lambda t: torch.logsumexp(t, 1) * dout.double() +
                         t.max(1).values * dbig.double(), [x], torch.ones(R, device="cuda"))
    assert_close(dx, ref, atol=1e-5)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("n_ctx", [100, 64])
def test_attention_grad(n_ctx):
    # dQ, dK, dV of the online-softmax loop, against torch's softmax attention.
    torch.manual_seed(26)
    D, BLOCK = 16, 32
    q, k, v = (torch.randn(n_ctx, D, device="cuda") for _ in range(3))
    out = torch.empty_like(q)
    scale = D ** -0.5
    grid = (triton.cdiv(n_ctx, BLOCK),)
    args = (q, k, v, out, q.stride(0), k.stride(0), v.stride(0), out.stride(0), n_ctx, scale)
    attention_kernel[grid](*args, BLOCK_M=BLOCK, BLOCK_N=BLOCK, HEAD_DIM=D)

    def reference(q_, k_, v_):
        return torch.softmax(q_ @ k_.T * scale, -1) @ v_

    # tl.dot on fp32 is tf32 (10-bit mantissa): about 1e-3 relative per product.
    assert_close(out, reference(q.double(), k.double(), v.double()), rtol=1e-2, atol=1e-2)
    dout = torch.randn_like(out)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    bwd = tritonad.grad(attention_kernel)
    bwd[grid](*args, dQ=dq, dK=dk, dV=dv, dOut=dout, BLOCK_M=BLOCK, BLOCK_N=BLOCK, HEAD_DIM=D)
    ref_q, ref_k, ref_v = torch_grads(reference, [q, k, v], dout)
    assert_close(dq, ref_q, rtol=2e-2, atol=2e-2)
    assert_close(dk, ref_k, rtol=2e-2, atol=2e-2)
    assert_close(dv, ref_v, rtol=2e-2, atol=2e-2)


@pytest.mark.gpu
@requires_gpu
def test_while_sum_grad():
    torch.manual_seed(24)
    R, C, BLOCK = 9, 300, 64
    x = torch.randn(R, C, device="cuda")
    lens = torch.randint(0, C + 1, (R,), device="cuda", dtype=torch.int32)
    lens[0], lens[1] = 0, C        # no iteration; every column (tail masked)
    out = torch.empty(R, device="cuda")
    while_sum_kernel[(R,)](x, lens, out, x.stride(0), BLOCK=BLOCK)
    keep = torch.arange(C, device="cuda")[None, :] < lens[:, None].long()

    def reference(t):
        return torch.where(keep, torch.exp(t) * t, 0.0).sum(1)

    assert_close(out, reference(x.double()), atol=1e-4)
    dout = torch.randn(R, device="cuda")
    dx = torch.zeros_like(x)
    tritonad.grad(while_sum_kernel)[(R,)](x, lens, out, x.stride(0), dx_ptr=dx, dout_ptr=dout,
                                          BLOCK=BLOCK)
    (ref,) = torch_grads(reference, [x], dout)
    assert_close(dx, ref, atol=1e-4)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_store_in_counted_while_loop_grad(dtype):
    # `while k < n: ...; tl.store(...); k += BLOCK` derives as the for loop it spells
    # (Prepare/CountedLoops.cpp); tritonad.autograd against torch in fp64.
    from corpus.loops import while_store_kernel
    rows, n, block = 7, 333, 64
    x = torch.randn(rows, n, device="cuda", dtype=dtype, requires_grad=True)
    op = tritonad.autograd(while_store_kernel, outputs=["y_ptr"])
    y = op[(rows,)](x, torch.empty(rows, n, device="cuda", dtype=dtype), n, n, BLOCK=block)
    dy = torch.randn_like(y)
    (dx,) = torch.autograd.grad(y, x, dy)
    leaf = x.detach().double().requires_grad_()
    (want,) = torch.autograd.grad(torch.exp(leaf) * leaf, leaf, dy.double())
    error = (dx.double() - want).abs().max() / want.abs().max()
    assert error < (1e-2 if dtype == torch.bfloat16 else 1e-5), error
    assert "scf.while" not in op.backward_kernel.derived_ir()


@pytest.mark.gpu
@requires_gpu
def test_pointer_increment_grad():
    torch.manual_seed(22)
    N, BLOCK = 1000, 256
    x = torch.randn(N, device="cuda")
    out = torch.empty(1, device="cuda")
    pointer_increment_kernel[(1,)](x, out, N, BLOCK=BLOCK)
    assert_close(out[0], x.sum(), atol=1e-4)
    dout = torch.randn(1, device="cuda")
    dx = torch.zeros_like(x)
    tritonad.grad(pointer_increment_kernel)[(1,)](x, out, N, dx_ptr=dx, dout_ptr=dout,
                                                  BLOCK=BLOCK)
    assert_close(dx, dout.expand(N))


def _matmul_launch(kernel, a, b, c, grid, **shadows):
    M, K = a.shape
    N = b.shape[1]
    kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                 c.stride(0), c.stride(1), **shadows, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32,
                 GROUP_M=4)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("shape", [(100, 72, 90), (64, 160, 33)])
def test_matmul_grad(shape):
    # The tutorial's matmul (grouped order, a_ptrs += BLOCK_K * stride, masked tails,
    # fp16 in, fp32 accumulate, fp16 out): dA = dC B^T, dB = A^T dC.
    torch.manual_seed(23)
    M, N, K = shape
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(N, K, device="cuda", dtype=torch.float16).t()   # strided B
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(M, 32) * triton.cdiv(N, 32),)
    _matmul_launch(matmul_kernel, a, b, c, grid)
    assert_close(c, a.float() @ b.float(), rtol=1e-2, atol=1e-2)
    dc = torch.randn_like(c)
    da, db = torch.zeros_like(a), torch.zeros_like(b)
    _matmul_launch(tritonad.grad(matmul_kernel), a, b, c, grid, da_ptr=da, db_ptr=db,
                   dc_ptr=dc)
    ref_a, ref_b = torch_grads(lambda x, y: x @ y, [a.float(), b.float()], dc.float())
    # fp16 gradients, accumulated by several programs in fp16.
    assert_close(da, ref_a, rtol=1e-2, atol=3e-2)
    assert_close(db, ref_b, rtol=1e-2, atol=3e-2)


@pytest.mark.gpu
@requires_gpu
def test_overwritten_store_contributes_nothing():
    torch.manual_seed(12)
    n, BLOCK = 1000, 256
    grid = (triton.cdiv(n, BLOCK),)
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    overwrite_kernel[grid](x, y, n, BLOCK=BLOCK)
    dy = torch.randn_like(x)
    expected = 3 * dy
    dx = torch.zeros_like(x)
    tritonad.grad(overwrite_kernel)[grid](x, y, n, dx_ptr=dx, dy_ptr=dy, BLOCK=BLOCK)
    assert_close(dx, expected)
    # The last store consumed the upstream gradient, so the first store saw zero.
    assert torch.count_nonzero(dy) == 0


@pytest.mark.gpu
@requires_gpu
def test_heuristics_grad():
    torch.manual_seed(13)
    n = 1000
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    gelu_heuristics_kernel[grid](x, y, n)
    dy, dx = torch.randn_like(x), torch.zeros_like(x)
    tritonad.grad(gelu_heuristics_kernel)[grid](x, y, n, dx_ptr=dx, dy_ptr=dy)
    (ref,) = torch_grads(F.gelu, [x], dy)
    assert_close(dx, ref)


@pytest.mark.gpu
@requires_gpu
def test_autotune_grad():
    torch.manual_seed(14)
    n = 1000
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    gelu_autotuned_kernel[grid](x, y, n)
    assert_close(y, F.gelu(x.double()))
    dy, dx = torch.randn_like(x), torch.zeros_like(x)
    bwd = tritonad.grad(gelu_autotuned_kernel)
    bwd[grid](x, y, n, dx_ptr=dx, dy_ptr=dy)      # tunes: the trials must not accumulate
    (ref,) = torch_grads(F.gelu, [x], dy)
    assert_close(dx, ref)
    bwd[grid](x, y, n, dx_ptr=dx, dy_ptr=dy)      # tuned: one more accumulation
    assert_close(dx, 2 * ref)


@pytest.mark.gpu
@requires_gpu
def test_autotune_grad_with_none_shadow():
    torch.manual_seed(15)
    n = 1000
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    c = torch.empty_like(a)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    swiglu_autotuned_kernel[grid](a, b, c, n)
    dc, da = torch.randn_like(a), torch.zeros_like(a)
    tritonad.grad(swiglu_autotuned_kernel)[grid](a, b, c, n, da_ptr=da, db_ptr=None, dc_ptr=dc)
    ref_a, _ = torch_grads(lambda a, b: F.silu(a) * b, [a, b], dc)
    assert_close(da, ref_a)


# ---------------------------------------------------------------------------
# GPU: tritonad.autograd
# ---------------------------------------------------------------------------

@pytest.mark.gpu
@requires_gpu
def test_autograd_gelu_accumulates_grad():
    torch.manual_seed(16)
    n, BLOCK = 1000, 256
    grid = (triton.cdiv(n, BLOCK),)
    f = tritonad.autograd(gelu_kernel, outputs=("y_ptr",))
    x = torch.randn(n, device="cuda", requires_grad=True)
    g = torch.randn(n, device="cuda")
    y = f[grid](x, torch.empty(n, device="cuda"), n, BLOCK=BLOCK)
    assert y.grad_fn is not None
    assert_close(y.detach(), F.gelu(x.detach().double()))
    (y * g).sum().backward()
    (ref,) = torch_grads(F.gelu, [x], g)
    assert_close(x.grad, ref)
    y = f[grid](x, torch.empty(n, device="cuda"), n, BLOCK=BLOCK)
    (y * g).sum().backward()
    assert_close(x.grad, 2 * ref)


@pytest.mark.gpu
@requires_gpu
def test_autograd_layer_norm():
    torch.manual_seed(17)
    M, N, BLOCK_N, eps = 37, 1000, 1024, 1e-5
    f = tritonad.autograd(layer_norm_kernel, outputs=("Y",))
    X = torch.randn(M, N, device="cuda", requires_grad=True)
    W = torch.randn(N, device="cuda", requires_grad=True)
    B = torch.randn(N, device="cuda", requires_grad=True)
    Mean, Rstd = torch.empty(M, device="cuda"), torch.empty(M, device="cuda")
    Y = f[(M,)](X, W, B, torch.empty(M, N, device="cuda"), Mean, Rstd, N, N, eps,
                BLOCK_N=BLOCK_N)
    dY = torch.randn(M, N, device="cuda")
    Y.backward(dY)
    refs = torch_grads(lambda x, w, b: _layer_norm_ref(x, w, b, eps), [X, W, B], dY)
    assert_close(X.grad, refs[0], atol=1e-4)
    assert_close(W.grad, refs[1], atol=1e-4)
    assert_close(B.grad, refs[2], atol=1e-4)
    # Composes with torch ops on both sides.
    X.grad = W.grad = B.grad = None
    Y = f[(M,)](X * 1.0, W, B, torch.empty(M, N, device="cuda"), Mean, Rstd, N, N, eps,
                BLOCK_N=BLOCK_N)
    (Y * dY).sum().backward()
    assert_close(X.grad, refs[0], atol=1e-4)
    assert B.grad is not None


@pytest.mark.gpu
@requires_gpu
def test_gradcheck_gelu_fp64():
    torch.manual_seed(18)
    n, BLOCK = 37, 16
    f = tritonad.autograd(gelu_kernel, outputs=("y_ptr",))
    x = torch.randn(n, device="cuda", dtype=torch.float64, requires_grad=True)

    def fn(t):
        return f[(triton.cdiv(n, BLOCK),)](t, torch.empty_like(t), n, BLOCK=BLOCK)

    assert torch.autograd.gradcheck(fn, (x,))


@pytest.mark.gpu
@requires_gpu
def test_gradcheck_softmax_fp64():
    torch.manual_seed(19)
    M, N, BLOCK_N = 5, 37, 64
    f = tritonad.autograd(softmax_kernel, outputs=("out_ptr",))
    x = torch.randn(M, N, device="cuda", dtype=torch.float64, requires_grad=True)

    def fn(t):
        out = torch.empty_like(t)
        return f[(M,)](out, t, t.stride(0), out.stride(0), N, BLOCK_N=BLOCK_N)

    assert torch.autograd.gradcheck(fn, (x,))


def test_a_triton_pass_failing_on_the_derived_backward_is_named(monkeypatch):
    # Triton's own passes can fail on a derived backward (fuzz seed 310222: an
    # i1 tensor Triton moves through shared memory for a dot operand); the
    # error says that the derivation succeeded and where to look.
    from tritonad import _partial

    def failing(*args, **kwargs):
        raise RuntimeError("PassManager::run failed")
    monkeypatch.setattr(_partial, "launch", failing)
    bwd = tritonad.grad(swiglu_kernel)
    with pytest.raises(RuntimeError, match=r"backward of swiglu_kernel was derived, but Triton"):
        bwd.run(None, None, None, 4, grid=(1,), warmup=True, BLOCK=4)
    monkeypatch.setattr(_partial, "launch", lambda *a, **k: (_ for _ in ()).throw(
        RuntimeError("other")))
    with pytest.raises(RuntimeError, match="^other$"):
        bwd.run(None, None, None, 4, grid=(1,), warmup=True, BLOCK=4)
