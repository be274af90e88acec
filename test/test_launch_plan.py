"""Launch plans (python/tritonad/_launch_plan.py): a derived backward's launch is
decided once per key and replayed after.

CPU: what the key tells apart, where a recording finds each argument.
GPU: for each kind of schedule (plain, partial buffers, residuals, a loop tape,
re-parallelized dot, launcher), backward launches with fresh inputs of one
layout (one plan, replayed) and of another (a second plan) against torch; the
same steps captured in a CUDA graph and replayed on new data; tensors on a
second GPU.
"""

import os
import sys

import pytest
import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tritonad  # noqa: E402
from tritonad import _launch_plan  # noqa: E402
from gpu_util import captured, requires_gpu  # noqa: E402
from corpus import kernels as corpus  # noqa: E402


# ---------------------------------------------------------------------------
# CPU: keys and sources
# ---------------------------------------------------------------------------

def test_key_tells_apart_what_decisions_depend_on():
    x = torch.randn(6, 8)
    base = _launch_plan.key_of({"x": x, "n": 8, "eps": 1e-5}, (6,), ("g",))
    assert base == _launch_plan.key_of({"x": torch.randn(6, 8), "n": 8, "eps": 1e-5}, (6,),
                                       ("g",))
    others = [
        ({"x": torch.randn(6, 9), "n": 8, "eps": 1e-5}, (6,)),           # shape
        ({"x": torch.randn(8, 6).t(), "n": 8, "eps": 1e-5}, (6,)),       # strides
        ({"x": x.double(), "n": 8, "eps": 1e-5}, (6,)),                  # dtype
        ({"x": x, "n": 9, "eps": 1e-5}, (6,)),                           # an integer
        ({"x": x, "n": True, "eps": 1e-5}, (6,)),                        # its type
        ({"x": x, "n": 8, "eps": 1e-6}, (6,)),                           # a float
        ({"x": x, "n": 8, "eps": 1e-5}, (7,)),                           # the grid
        ({"x": torch.randn(49)[1:].view(6, 8), "n": 8, "eps": 1e-5}, (6,)),  # alignment
    ]
    for kwargs, grid in others:
        assert _launch_plan.key_of(kwargs, grid, ("g",)) != base
    assert _launch_plan.key_of({"x": x, "n": 8, "eps": 1e-5}, (6,), ("h",)) != base
    assert _launch_plan.key_of({"x": x, "options": [1, 2]}, (6,), ()) is None


def test_recording_finds_each_argument():
    x, y = torch.randn(4), torch.randn(4)
    recorder, token = _launch_plan.begin({"x": x, "y": y, "n": 4})
    try:
        workspace = _launch_plan.allocate("workspace", torch.zeros, (2, 3, 16), torch.float32,
                                          torch.device("cpu"))
        table = torch.arange(4)
        assert recorder.source("x", x, {}) == ("call", "x")
        assert recorder.source("out_ptr", y, {"out_ptr": "y"}) == ("call", "y")
        assert recorder.source("slots", workspace, {}) == ("alloc", "workspace")
        assert recorder.source("slots", workspace[1], {}) == ("row", "workspace", 1)
        assert recorder.source("n", 4, {}) == ("const", 4)
        assert recorder.source("table", table, {})[0] == "const"
        assert recorder.plannable
        recorder.source("z", x, {})  # (the call's tensor under another name: no replay)
        assert not recorder.plannable
    finally:
        _launch_plan.end(token)
    assert _launch_plan.recording() is None


def test_contract_declared_once():
    """The hidden parameters of a placeholder and the record fields the launch path
    reads are the core's declaration (cpp/include/tritonad/LaunchContract.h)."""
    import inspect

    from tritonad import _C, _contract, _kernel_grad, _partial, _residuals

    declared = _C.launch_contract()
    names = [p["name"] for p in declared["hidden"]]
    bwd = tritonad.grad(corpus.vector_add_kernel)
    assert list(inspect.signature(bwd.fn).parameters)[-len(names):] == names
    assert set(_partial.WORKSPACE_PARAMS) | {_residuals.RESIDUALS} == set(names)
    assert set(_partial.SPECIALIZED_INTEGERS) == {
        p["name"] for p in declared["hidden"] if p["passing"] == "selector"}
    fields = {f["name"] for f in declared["backward_record"]}
    assert set(_kernel_grad._SPEC_FIELDS) <= fields
    assert all(f["meaning"] for f in declared["backward_record"])
    assert _contract.metadata_key("residuals") == "tritonad_residuals"


def test_record_fields_declared_once():
    """The records inside the backward record (coverage, regrid parts,
    requirements, residuals, schedule entries) have their fields declared by the
    core (LaunchContract.h); Python reads them through `_contract.fields`,
    resolved at import: a field the core does not declare fails there, naming
    it (compile_util.assert_records_declared checks the records a compile
    writes)."""
    from tritonad import _C, _contract, _coverage, _render

    declared = _C.launch_contract()
    records = declared["records"]
    assert set(records) == {"backward", "coverage", "regrid", "regrid_part", "requirement",
                            "residuals", "scatter", "scatter_columns", "schedule_entry"}
    assert all(f["meaning"] for fields in records.values() for f in fields)
    assert [f["name"] for f in records["backward"]] == [n for n, _ in _contract.BACKWARD_RECORD]
    assert [(r, f["name"]) for r, fields in records.items() for f in fields if f["optional"]] \
        == [("coverage", "wraps")]
    assert (_coverage.DIGITS, _coverage.CLAMPS, _coverage.WRAPS) == ("digits", "clamps", "wraps")
    with pytest.raises(ImportError, match=r"\['digit'\] of the 'coverage' record"):
        _contract.fields("coverage", "digits", "digit")
    with pytest.raises(ImportError, match="'tape' record"):
        _contract.field("tape", "loop")
    # the renderer's words for the hidden arguments are the core's
    pointers = set(_contract.passed_as("pointer"))
    for parameter in declared["hidden"]:
        assert parameter["meaning"] and parameter["travels_with"] in pointers | {""}
        assert _render._HIDDEN_MEANING[parameter["name"]] == parameter["meaning"]


_WITHOUT_A_FIELD = """
import glob, importlib.util, os, sys

# the real core, its contract less one field of the regrid part record
package = importlib.util.find_spec("tritonad").submodule_search_locations[0]
path, = glob.glob(os.path.join(package, "_C*.so"))
spec = importlib.util.spec_from_file_location("tritonad._C", path)
core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(core)
declared = core.launch_contract


def without_phase():
    contract = declared()
    contract["records"]["regrid_part"] = [
        f for f in contract["records"]["regrid_part"] if f["name"] != "phase"]
    return contract


core.launch_contract = without_phase
sys.modules["tritonad._C"] = core
try:
    import tritonad  # noqa: F401
except ImportError as error:
    print("refused:", error)
"""


def test_a_field_the_core_does_not_declare_fails_at_import():
    import subprocess

    result = subprocess.run([sys.executable, "-c", _WITHOUT_A_FIELD], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "refused:" in result.stdout, result.stdout
    assert "['phase'] of the 'regrid_part' record" in result.stdout, result.stdout


def test_table_layouts_declared_once():
    """The tables a derived kernel reads are filled word by word as the core declares
    them (LaunchContract.h: Regrid.cpp's loads use the declared positions): a word
    filled on one side only is refused when the table is built."""
    from tritonad import _C, _contract, _order, _regrid  # noqa: F401  (_order checks its row)

    declared = _C.launch_contract()["tables"]
    assert set(declared) == {"regrid", "program_order"}
    assert all(word["meaning"] for table in declared.values()
               for section, words in table.items() if section != "pointer" for word in words)
    header = _contract.table_words("regrid", "header")
    part = _contract.table_words("regrid", "part")
    assert (_regrid._HEADER, _regrid._PART_HEADER) == (len(header), len(part))
    assert part[_regrid._PROGRAMS] == "programs" and header[_regrid._MAIN] == "main_programs"
    words = {name: i for i, name in enumerate(part)}
    assert _contract.filled("regrid", "part", words) == list(range(len(part)))
    with pytest.raises(RuntimeError, match="disagree on its layout"):
        _contract.filled("regrid", "part", {**words, "extra_at": 0})
    missing = dict(words)
    missing.pop("counts_at")
    with pytest.raises(RuntimeError, match="counts_at"):
        _contract.filled("regrid", "part", missing)
    assert _contract.table_dtype("regrid") == "int64"
    assert _contract.table_words("program_order", "row") == ("program",)
    assert _regrid.describe(torch.tensor(_contract.filled("regrid", "header", dict(
        main_programs=0, grid_x=1, grid_y=1, grid_z=1, parts=1, slots_at=0)) +
        _contract.filled("regrid", "part", {**words, "programs": 6, "affine": 1}))) == [
        dict(programs=6, groups=words["groups"], trips=words["trips"], affine=True,
             plain=bool(words["plain"]))]


_NO_CYCLE = """
import gc, json, weakref
import torch
import tritonad
from corpus.kernels import vector_add_kernel

op = tritonad.autograd(vector_add_kernel, outputs=("out_ptr",))
x = torch.randn(50, requires_grad=True)
w = torch.randn(50, requires_grad=True)
gc.disable()
y = op[(2,)](x, w, torch.empty_like(x), 50, BLOCK=32)
alive = weakref.ref(y)
del y
freed_unused = alive() is None
y = op[(2,)](x, w, torch.empty_like(x), 50, BLOCK=32)
y.backward(torch.full_like(y, 2.0))
alive = weakref.ref(y)
del y
print(json.dumps([freed_unused, alive() is None, bool((w.grad == 2).all())]))
"""


def test_graph_freed_without_the_collector():
    """An output of tritonad.autograd and its graph are freed when the last reference
    goes (no reference cycle through the node): a graph kept alive longer holds memory,
    and its leaves' gradient accumulators keep the stream they were made on, which
    breaks a later CUDA graph capture."""
    from interpreter_util import run_interpreted

    assert run_interpreted(_NO_CYCLE) == [True, True, True]


# ---------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------

@triton.jit
def _scaled_tanh(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # y = tanh(x) * w[0]: w's gradient is a sum over every program
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr).to(tl.float32)
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    t = tl.where(x < 0, -t, t)
    tl.store(y_ptr + offs, (t * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _row_loop_norm(x_ptr, w_ptr, y_ptr, stride, N, BLOCK: tl.constexpr):
    # y = x * w / sqrt(mean(x^2) + 1): the mean in a loop (a tape or a replay),
    # w shared by every row (partial buffers)
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    r = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + 1.0)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride + cols, (x * r * w).to(y_ptr.dtype.element_ty), mask=mask)


_TANH = tritonad.autograd(_scaled_tanh, outputs=("y_ptr",))
_NORM = tritonad.autograd(_row_loop_norm, outputs=("y_ptr",))
_LAYER_NORM = tritonad.autograd(corpus.layer_norm_fwd_kernel, outputs=("y_ptr",),
                                wrt=("x_ptr", "w_ptr", "b_ptr"))


_TUNED_CONFIGS = [triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 256})]


@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def _scaled_tanh_even(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    # _scaled_tanh, without masks where BLOCK divides n
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(x_ptr + offs).to(tl.float32)
    else:
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    w = tl.load(w_ptr).to(tl.float32)
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    y = (tl.where(x < 0, -t, t) * w).to(y_ptr.dtype.element_ty)
    if EVEN:
        tl.store(y_ptr + offs, y)
    else:
        tl.store(y_ptr + offs, y, mask=offs < n)


_TUNED_TANH = tritonad.autograd(triton.autotune(_TUNED_CONFIGS, key=["n"])(_scaled_tanh_even),
                                outputs=("y_ptr",))


def _tuned_tanh(x, w):
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    return _TUNED_TANH[grid](x, w, torch.empty_like(x), n)


def _tanh(x, w):
    n = x.numel()
    return _TANH[(triton.cdiv(n, 128),)](x, w, torch.empty_like(x), n, BLOCK=128)


def _norm(x, w):
    return _NORM[(x.shape[0],)](x, w, torch.empty_like(x), x.stride(0), x.shape[1], BLOCK=64)


def _layer_norm(x, w, b):
    m, n = x.shape
    stats = [torch.empty(m, device=x.device) for _ in range(2)]
    return _LAYER_NORM[(m,)](x, torch.empty_like(x), w, b, *stats, x.stride(0), n, 1e-5,
                             BLOCK=128)


@tritonad.autograd
def _matmul(a, b):
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty(m, n, device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(m, 32) * triton.cdiv(n, 32),)
    corpus.matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0),
                               b.stride(1), c.stride(0), c.stride(1), BLOCK_M=32, BLOCK_N=32,
                               BLOCK_K=32, GROUP_M=4)
    return c


@tritonad.autograd
def _tanh_launcher(x, w):
    y = torch.empty_like(x)
    _scaled_tanh[lambda META: (triton.cdiv(x.numel(), META["BLOCK"]),)](x, w, y, x.numel(),
                                                                       BLOCK=128)
    return y


_TUNED_TANH_KERNEL = triton.autotune(_TUNED_CONFIGS, key=["n"])(_scaled_tanh_even)


@tritonad.autograd
def _tuned_tanh_launcher(x, w):
    # (heuristics inside autotune: a replay launches the compiled kernel of the
    # config the autotuner chose, with EVEN as the heuristic fills it in)
    y = torch.empty_like(x)
    n = x.numel()
    _TUNED_TANH_KERNEL[lambda META: (triton.cdiv(n, META["BLOCK"]),)](x, w, y, n)
    return y


@tritonad.autograd
def _norm_launcher(x, w):
    y = torch.empty_like(x)
    _row_loop_norm[(x.shape[0],)](x, w, y, x.stride(0), x.shape[1], BLOCK=64)
    return y


def _rms_like(x, w):
    return x * w / torch.sqrt((x * x).mean(-1, keepdim=True) + 1.0)


# name: (forward through tritonad, torch reference, leaf shapes per launch, fixed dtype)
CASES = {
    "elementwise, shared scalar": (_tanh, lambda x, w: torch.tanh(x) * w,
                                   [[(1000,), (1,)], [(1000,), (1,)], [(777,), (1,)]], None),
    "row loop, shared weight": (_norm, _rms_like,
                                [[(37, 300), (300,)], [(37, 300), (300,)], [(50, 129), (129,)]],
                                None),
    "layer norm with residuals": (
        _layer_norm, lambda x, w, b: torch.nn.functional.layer_norm(x, (x.shape[1],), w, b, 1e-5),
        [[(23, 700), (700,), (700,)], [(23, 700), (700,), (700,)], [(9, 1000), (1000,), (1000,)]],
        torch.float32),
    "matmul launcher": (_matmul, lambda a, b: a @ b,
                        [[(100, 90), (90, 72)], [(100, 90), (90, 72)], [(64, 33), (33, 40)]],
                        torch.float16),
    "autotuned, heuristics": (_tuned_tanh, lambda x, w: torch.tanh(x) * w,
                              [[(1024,), (1,)], [(1024,), (1,)], [(777,), (1,)]], None),
    "elementwise launcher": (_tanh_launcher, lambda x, w: torch.tanh(x) * w,
                             [[(1000,), (1,)], [(1000,), (1,)], [(777,), (1,)]], None),
    "row loop launcher": (_norm_launcher, _rms_like,
                          [[(37, 300), (300,)], [(37, 300), (300,)], [(50, 129), (129,)]], None),
    "autotuned launcher": (_tuned_tanh_launcher, lambda x, w: torch.tanh(x) * w,
                           [[(1024,), (1,)], [(1024,), (1,)], [(777,), (1,)]], None),
}


def _leaves(shapes, dtype):
    return [torch.randn(*shape, device="cuda", dtype=dtype, requires_grad=True)
            for shape in shapes]


def _check(leaves, y, reference):
    dy = torch.randn_like(y)
    y.backward(dy)
    _compare([t.grad for t in leaves], leaves, dy, reference)


def _compare(grads, leaves, dy, reference):
    doubles = [t.detach().double().requires_grad_() for t in leaves]
    reference(*doubles).backward(dy.double())
    for got, want in zip(grads, doubles):
        scale = want.grad.abs().max().item() + 1e-12
        error = (got.double() - want.grad).abs().max().item() / scale
        bound = 1e-4 if got.dtype == torch.float32 else 2e-2
        assert error < bound, (tuple(got.shape), got.dtype, error)


def _plans(backward):
    return len(getattr(backward, _launch_plan._PLANS_ATTRIBUTE, None) or {})


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("case", list(CASES))
def test_replayed_launches_match_torch(case, dtype):
    forward, reference, launches, fixed = CASES[case]
    torch.manual_seed(0)
    for shapes in launches:  # (decided, replayed, decided for another layout)
        leaves = _leaves(shapes, fixed or dtype)
        _check(leaves, forward(*leaves), reference)


@pytest.mark.gpu
@requires_gpu
def test_one_plan_per_layout():
    torch.manual_seed(1)
    backward = _NORM.backward_kernel
    leaves = _leaves([(41, 200), (200,)], torch.float32)
    _check(leaves, _norm(*leaves), _rms_like)
    before = _plans(backward)
    assert before >= 1
    for _ in range(2):
        leaves = _leaves([(41, 200), (200,)], torch.float32)
        _check(leaves, _norm(*leaves), _rms_like)
    assert _plans(backward) == before  # (replayed)
    leaves = _leaves([(43, 200), (200,)], torch.float32)
    _check(leaves, _norm(*leaves), _rms_like)
    assert _plans(backward) == before + 1


def _call_plans(op):
    return [plan for plan in op.plans.values() if plan is not None]


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("case", ["elementwise, shared scalar", "row loop, shared weight",
                                  "layer norm with residuals", "autotuned, heuristics"])
def test_call_plans_replay_forward_and_backward(case, dtype):
    """tritonad.autograd's later calls with one layout replay the first one's
    decisions (the forward's compiled launch, the backward's buffers and launch):
    one call plan and one backward step, gradients matching torch each time; an
    upstream gradient of another layout (expanded, from .sum()) gets a step of
    its own. An autotuned forward's plan launches the config its autotuner chose,
    with the values its heuristics filled in."""
    forward, reference, launches, fixed = CASES[case]
    if fixed is not None and dtype != fixed:
        pytest.skip(f"{case} runs in {fixed} only")
    op = {"elementwise, shared scalar": _TANH, "row loop, shared weight": _NORM,
          "layer norm with residuals": _LAYER_NORM, "autotuned, heuristics": _TUNED_TANH}[case]
    torch.manual_seed(5)
    shapes = [(s[0] + 3,) + tuple(s[1:]) if i == 0 else s for i, s in enumerate(launches[0])]
    before = len(_call_plans(op))
    for _ in range(3):
        leaves = _leaves(shapes, fixed or dtype)
        _check(leaves, forward(*leaves), reference)
    plans = _call_plans(op)
    assert len(plans) == before + 1
    plan = plans[-1]
    steps = [step for step in plan.backwards.values() if step is not None]
    assert len(steps) == 1, plan.backwards
    leaves = _leaves(shapes, fixed or dtype)
    y = forward(*leaves)
    y.float().sum().backward()
    _compare([t.grad for t in leaves], leaves, torch.ones_like(y), reference)
    if op is _TUNED_TANH:
        tuner = op.kernel
        chosen = tuner.cache[(shapes[0][0],) + (str(fixed or dtype),) * 3]
        filled = plan.forward.filled
        assert filled["BLOCK"] == chosen.kwargs["BLOCK"], (filled, chosen)
        assert filled["EVEN"] == (shapes[0][0] % chosen.kwargs["BLOCK"] == 0)
        assert plan.forward.launch.grid[0] == triton.cdiv(shapes[0][0], filled["BLOCK"])


@pytest.mark.gpu
@requires_gpu
def test_call_plan_still_refuses_an_output_sharing_an_input():
    """A call whose tensors have the layouts of a planned call but share memory (the
    output is the input's storage) takes the deciding path, which refuses it."""
    torch.manual_seed(6)
    for _ in range(2):
        x, w = _leaves([(515,), (1,)], torch.float32)
        _TANH[(triton.cdiv(515, 128),)](x, w, torch.empty_like(x), 515, BLOCK=128)
    x, w = _leaves([(515,), (1,)], torch.float32)
    with pytest.raises(ValueError, match="shares memory"):
        _TANH[(triton.cdiv(515, 128),)](x, w, x.detach(), 515, BLOCK=128)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("case", ["elementwise launcher", "row loop launcher",
                                  "matmul launcher", "autotuned launcher"])
def test_launcher_plans_replay_forward_and_backward(case, dtype, monkeypatch):
    """A decorated launcher's later calls with one layout replay the first one's plan:
    one full path (watched, analysed) for four calls, the forward launched through its
    compiled kernel, one backward step whose derived backwards replay their launch
    plans, gradients matching torch each time; another layout: the full path again."""
    import tritonad._launcher as launcher_module

    forward, reference, launches, fixed = CASES[case]
    full = []
    analysed = launcher_module._analysed
    monkeypatch.setattr(launcher_module, "_analysed",
                        lambda *args: full.append(1) or analysed(*args))
    torch.manual_seed(7)

    def shapes(extra):  # (layouts no other test gives these launchers)
        return [(s[0] + extra,) + tuple(s[1:]) if i == 0 else s
                for i, s in enumerate(launches[0])]

    extra = 5 if dtype == torch.float32 else 6
    for _ in range(4):
        leaves = _leaves(shapes(extra), fixed or dtype)
        _check(leaves, forward(*leaves), reference)
    assert len(full) == 1
    plans = forward.tritonad_launcher.plans
    plan = list(plans.values())[-1]
    assert all(record.compiled is not None for record in plan.launches)
    (step,) = plan.backwards.values()
    assert step.replayed and all(entry[3] is not None for entry in step.launches)
    leaves = _leaves(shapes(extra + 4), fixed or dtype)
    _check(leaves, forward(*leaves), reference)
    assert len(full) == 2


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("case", ["elementwise, shared scalar", "row loop, shared weight",
                                  "matmul launcher", "elementwise launcher",
                                  "row loop launcher"])
def test_cuda_graph_capture_and_replay(case):
    """A forward + backward step through tritonad captured in a CUDA graph (warm-up on
    a side stream, as torch's documentation does) and replayed on new input data."""
    forward, reference, launches, fixed = CASES[case]
    torch.manual_seed(2)
    static = _leaves(launches[0], fixed or torch.float32)
    dy = torch.randn_like(forward(*static))

    def step():
        for t in static:
            t.grad = None
        forward(*static).backward(dy)

    graph = captured(step)
    for _ in range(2):
        with torch.no_grad():
            for t in static:
                t.copy_(torch.randn_like(t))
        graph.replay()
        torch.cuda.synchronize()
        _compare([t.grad.clone() for t in static], static, dy, reference)


@pytest.mark.gpu
@requires_gpu
def test_non_default_stream():
    torch.manual_seed(4)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            leaves = _leaves([(37, 300), (300,)], torch.float32)
            y = _norm(*leaves)
            dy = torch.randn_like(y)
            y.backward(dy)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    _compare([t.grad for t in leaves], leaves, dy, _rms_like)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                    reason="needs two CUDA GPUs")
def test_tensors_on_a_second_gpu():
    torch.manual_seed(3)
    for _ in range(2):
        leaves = [t.to("cuda:1").detach().requires_grad_()
                  for t in _leaves([(29, 300), (300,)], torch.float32)]
        with torch.cuda.device(1):  # (Triton launches the forward on the current device)
            y = _norm(*leaves)
        _check(leaves, y, _rms_like)  # (the backward: launched on cuda:1 whatever is current)
        assert all(t.grad.device == torch.device("cuda", 1) for t in leaves)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("case", ["elementwise, shared scalar", "matmul launcher"])
def test_torch_compile_reduce_overhead(case):
    """A training step with a tritonad op under torch.compile(mode="reduce-overhead"):
    Inductor's CUDA graph trees record and replay it; the gradients match torch."""
    import torch._functorch.config

    forward, reference, launches, fixed = CASES[case]
    torch.manual_seed(5)
    torch._functorch.config.donated_buffer = False

    def step(*leaves):
        return forward(*leaves).sum()

    compiled = torch.compile(step, mode="reduce-overhead")
    for _ in range(4):  # (warm-up, recording, replays)
        leaves = _leaves(launches[0], fixed or torch.float32)
        compiled(*leaves).backward()
        torch.cuda.synchronize()
        grads = [t.grad.clone() for t in leaves]
        _compare(grads, leaves, torch.ones((), device="cuda"), lambda *t: reference(*t).sum())


@triton.jit
def _tanh_and_square(x_ptr, y_ptr, square_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    tl.store(y_ptr + offs, tl.where(x < 0, -t, t).to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(square_ptr + offs, (x * x).to(square_ptr.dtype.element_ty), mask=mask)


@tritonad.autograd
def _tanh_keeping_squares(x):
    y, squares = torch.empty_like(x), torch.empty_like(x)
    _tanh_and_square[(triton.cdiv(x.numel(), 128),)](x, y, squares, x.numel(), BLOCK=128)
    return y  # (squares: an output the launcher does not return)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_launcher_backward_launches_no_fill(dtype):
    """A decorated launcher's replayed backward launches the derived backward and
    no fill (in fp32 nothing else): the input's gradient is a buffer of its launch alone, which its
    accumulate=False backward stores whole (uninitialized, no zero fill), and the
    output the launcher does not return gets no buffer (a None shadow, as
    tritonad.autograd of a kernel passes it)."""
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(3)
    n = 1000 + (dtype == torch.bfloat16)
    for _ in range(2):  # (decided, then replayed)
        x = torch.randn(n, device="cuda", dtype=dtype, requires_grad=True)
        _check([x], _tanh_keeping_squares(x), torch.tanh)
    plan = list(_tanh_keeping_squares.tritonad_launcher.plans.values())[-1]
    (step,) = plan.backwards.values()
    assert [how for how, *_ in step.buffers.values()].count("uninitialized") == 1
    assert len(step.buffers) == 2  # (x's gradient and the returned y's upstream, no squares')
    (entry,) = step.launches
    assert entry[5] and sum(view is None for _, view in entry[1]) == 1  # (fresh; squares: None)
    x = torch.randn(n, device="cuda", dtype=dtype, requires_grad=True)
    y = _tanh_keeping_squares(x)
    dy = torch.randn_like(y)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as profiled:
        y.backward(dy)
        torch.cuda.synchronize()
    kernels = [e.name for e in profiled.events()
               if e.device_type == torch.autograd.DeviceType.CUDA]
    # (bf16: the launcher sums gradients in fp32 buffers, so the upstream gradient is
    # copied in and the input's gradient rounded out: copies, never a fill)
    assert sum("tritonad_bwd" in k for k in kernels) == 1, kernels
    assert not any("fill" in k.lower() for k in kernels), kernels
    if dtype == torch.float32:
        assert len(kernels) == 1, kernels
    _compare([x.grad], [x], dy, torch.tanh)


@pytest.mark.gpu
@requires_gpu
def test_replayed_launches_honour_a_launch_hook():
    """Replays call the compiled kernel's launcher directly, without Triton's launch
    metadata, only while no launch hook is registered: a profiler's hook (Proton
    registers one) still sees every replayed launch."""
    from triton import knobs

    forward, reference, launches, _ = CASES["layer norm with residuals"]
    torch.manual_seed(5)
    seen = []

    def hook(metadata):
        seen.append(metadata.get()["name"])

    for hooked in (False, True, False):
        if hooked:
            knobs.runtime.launch_enter_hook.add(hook)
        try:
            leaves = _leaves(launches[0], torch.float32)
            _check(leaves, forward(*leaves), reference)
        finally:
            knobs.runtime.launch_enter_hook.remove(hook)
        names = list(seen)
        seen.clear()
        if hooked:
            assert any("tritonad_bwd" in name for name in names), names
        else:
            assert not names
