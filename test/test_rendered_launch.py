"""``bwd.source()`` renders a kernel that launches as written, or says it does not.

Interpreter and GPU: for each case of corpus/rendered.py (elementwise GELU, a layer
norm with a shared weight, a taped loop, a re-parallelized matmul) the rendering of
``bwd.source(<launch arguments>)`` is saved, imported and launched with the
backward's documented arguments, and its gradients, like those of ``bwd[grid]``,
match fp64 torch.autograd; the launch path's own rendering (``bwd.source()`` after
the launch) says whether it launches alone, naming the hidden argument it reads,
and, launched with the documented arguments anyway, stops saying what it lacks.
CPU: renderings of backwards compiled as the GPU launch path compiles them (partial
buffers, residuals, the variant without masks) say they do not launch alone, and
``_render.launchable_source`` refuses them with what to do instead.
"""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

import triton  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from compile_util import TARGET  # noqa: E402
from corpus.norms import NORM_TYPES, norm_kernel  # noqa: E402
from gpu_util import requires_gpu  # noqa: E402
from interpreter_util import run_interpreted  # noqa: E402
from tritonad import _render  # noqa: E402
from tritonad._partial import WORKSPACE_TYPES  # noqa: E402
from tritonad._residuals import RESIDUALS  # noqa: E402

CASES = ("gelu", "layer_norm", "tape_loop", "matmul")
# fp32 against fp64; the matmul's tl.dot multiplies in tf32 (10-bit mantissa; the
# interpreter rounds its operands so too)
TOLERANCE = dict(dict.fromkeys(CASES, 1e-4), matmul=1e-2)
# What the launch path's rendering reads that only the launch path makes
LAUNCH_PATH_READS = {"cpu": dict(gelu=None, layer_norm="tritonad_workspace",
                                 tape_loop="tritonad_tape", matmul="tritonad_regrid"),
                     "cuda": dict(gelu=None, layer_norm="tritonad_workspace",
                                  tape_loop="tritonad_tape", matmul="tritonad_regrid")}

_INTERPRETED = """
import json, torch
from corpus import rendered
results = {}
for name in rendered.CASES:
    try:
        results[name] = rendered.check(name, "cpu")
    except Exception as error:  # reported per case
        results[name] = f"{type(error).__name__}: {error}"
print(json.dumps(results))
"""


def _assert_case(result, name, device):
    assert not isinstance(result, str), result
    for which in ("rendered", "launch_path"):
        for pointer, error in result[which].items():
            assert error <= TOLERANCE[name], (f"{name} ({which}): gradient of "
                                                      f"{pointer} off by {error:.3g}")
    assert result["says_how_to_launch"], f"{name}: the rendering's header does not show its launch"
    reads = LAUNCH_PATH_READS[device][name]
    if reads is None:
        assert result["launch_path_alone"] is None, result["launch_path_alone"]
    else:
        assert reads in (result["launch_path_alone"] or ""), result["launch_path_alone"]
        assert "bwd.source(<as bwd[grid](...) takes them>)" in result["launch_path_alone"]
        refused = result["launch_path_launched_alone"]
        assert refused and refused != "launched", refused
        if not (device == "cuda" and name == "matmul"):
            assert f"{reads} is made by tritonad's launch path" in refused, refused
        # (on a GPU the launch path's last rendering of a re-parallelized matmul is
        # its parts' kernel, compiled with the program selectors specialized away:
        # Triton's binder refuses the documented arguments before its first line runs)


@pytest.fixture(scope="module")
def interpreted():
    return run_interpreted(_INTERPRETED)


@pytest.mark.parametrize("name", CASES)
def test_rendering_launches_as_written_interpreted(interpreted, name):
    _assert_case(interpreted[name], name, "cpu")


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name", CASES)
def test_rendering_launches_as_written_gpu(name):
    from corpus import rendered
    _assert_case(rendered.check(name, "cuda"), name, "cuda")


def _compiled_as_launched(bwd, constants):
    """The norm's backward compiled on the CPU with the hidden arguments typed as
    the GPU launch path passes them (`constants`: those it passes as 1 or None)."""
    types = dict(NORM_TYPES, **WORKSPACE_TYPES, **{RESIDUALS: "*i8"})
    for pointer, shadow in bwd.shadows.items():
        types[shadow] = types[pointer]
    constants = dict(HAS_MEAN=True, BLOCK_N=256, **constants)
    signature = {n: "constexpr" if n in constants else types[n] for n in bwd.arg_names}
    triton.compile(ASTSource(bwd, signature, constants), target=TARGET)
    return list(bwd.source.records.values())[-1]


@pytest.mark.parametrize("constants, reads", [
    (dict(tritonad_residuals=None), "tritonad_workspace"),      # partial buffers
    (dict(tritonad_workspace=None), "tritonad_residuals"),      # tritonad.autograd's
    (dict(tritonad_workspace=None, tritonad_residuals=None,     # the variant without masks
          tritonad_full_masks=1), "no longer masked"),
])
def test_launch_path_renderings_say_they_do_not_launch_alone(always_compile, constants, reads):
    bwd = tritonad.grad(norm_kernel, accumulate=False)
    record = _compiled_as_launched(bwd, constants)
    source = _render.source_of(record)
    header = source[:source.index("import triton")]
    assert "NOT LAUNCHABLE ON ITS OWN" in header, header
    with pytest.raises(_render.NotLaunchableError) as error:
        _render.launchable_source(record)
    message = str(error.value)
    if reads == "no longer masked":
        assert "without those masks" in message, message
    else:
        assert f"it reads {reads}" in message, message
        # (the kernel keeps what it reads as its last parameters)
        signature = next(line for line in source.splitlines() if line.startswith("def "))
        assert reads in signature, signature
    assert "bwd.source(<as bwd[grid](...) takes them>)" in message, message


def test_hidden_arguments_the_body_does_not_read_are_left_out(always_compile):
    bwd = tritonad.grad(norm_kernel, accumulate=False, mode="atomic")
    record = _compiled_as_launched(bwd, dict(tritonad_residuals=None))
    source = _render.launchable_source(record)
    signature = next(line for line in source.splitlines() if line.startswith("def "))
    assert signature == "def norm_kernel_backward(X, W, B, Y, stride, N, eps, dX, dW, dB, dY):"
    assert "tritonad's launch path also passes tritonad_workspace" in source
    assert "#     norm_kernel_backward[grid](X, W, B, Y, stride, N, eps, dX, dW, dB, dY)" in source
