"""Persistent row loops whose row strides are runtime arguments (corpus/persistent_rows.py:
the Triton tutorial's fused softmax, a Liger-style persistent RMSNorm with BLOCK_ROW rows
per iteration, Liger's blocked rows with pointers advanced by the row strides). The store inside the loop was refused ("addresses may repeat across
iterations"); it is differentiated under a condition each launch checks (the row stride
covers the row's extent), and a launch whose rows overlap is refused naming the stride.
The inputs' gradients are plain writes where the rows are apart (a grid-stride loop's rows
count as one digit over its programs and iterations), atomic where they overlap.
Interpreter (fp32) and GPU (fp32, bf16) against fp64 torch.autograd. Lit:
AutoDiff/kernel-grid-stride-runtime.mlir."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")

from gpu_util import requires_gpu  # noqa: E402
from interpreter_util import run_interpreted  # noqa: E402

TOLERANCE = {"float32": 1e-5, "bfloat16": 2e-2}

_INTERPRETED = """
import json, torch
from corpus import persistent_rows as p
results = {}
for programs in (1, 4, 64):  # (64: more programs than rows)
    results[f"softmax/{programs}"] = p.check_softmax(torch.float32, "cpu", programs=programs)
results["softmax/contiguous"] = p.check_softmax(torch.float32, "cpu", pad=0)
for programs in (1, 3):
    results[f"rms_norm/{programs}"] = p.check_rms_norm(torch.float32, "cpu", programs=programs)
for programs in (1, 5):
    results[f"blocked/{programs}"] = p.check_scaled_rows_blocked(torch.float32, "cpu",
                                                                 programs=programs)
results["overlapping_input"] = p.check_softmax_overlapping_input("cpu")
try:
    p.launch_overlapping_softmax("cpu")
    results["overlap"] = "launched"
except RuntimeError as error:
    results["overlap"] = str(error)
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def interpreted():
    return run_interpreted(_INTERPRETED)


@pytest.mark.parametrize("case", ["softmax/1", "softmax/4", "softmax/64", "softmax/contiguous",
                                  "rms_norm/1", "rms_norm/3", "blocked/1", "blocked/5"])
def test_persistent_rows_interpreted(interpreted, case):
    errors = interpreted[case]
    assert max(errors.values()) <= TOLERANCE["float32"], (case, errors)


def test_overlapping_input_rows_interpreted(interpreted):
    assert interpreted["overlapping_input"] <= TOLERANCE["float32"], interpreted


def test_overlapping_rows_refused_at_launch(interpreted):
    message = interpreted["overlap"]
    assert message.startswith("tritonad: this launch breaks a condition"), message
    # names the parameter, the kernel's line, and this launch's values
    assert "output_row_stride" in message and "output_row_stride=8" in message, message
    assert "persistent_rows.py:" in message, message


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("programs", [1, 7, 132])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("check", ["check_softmax", "check_rms_norm",
                                   "check_scaled_rows_blocked"])
def test_persistent_rows_gpu(check, dtype, programs):
    from corpus import persistent_rows
    errors = getattr(persistent_rows, check)(getattr(torch, dtype), "cuda", rows=1001, cols=203,
                                             programs=programs)
    assert max(errors.values()) <= TOLERANCE[dtype], errors


@pytest.mark.gpu
@requires_gpu
def test_overlapping_input_rows_gpu():
    from corpus import persistent_rows
    assert persistent_rows.check_softmax_overlapping_input("cuda") <= TOLERANCE["float32"]


@pytest.mark.gpu
@requires_gpu
def test_overlapping_rows_refused_gpu():
    from corpus import persistent_rows
    # (a launch with rows apart first: the refusal must not hide behind its launch plan)
    persistent_rows.check_softmax(torch.float32, "cuda", rows=9, cols=29, programs=4)
    with pytest.raises(RuntimeError, match="output_row_stride=8"):
        persistent_rows.launch_overlapping_softmax("cuda")


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_persistent_backwards_compile_for_sm90(dtype):
    """Both backwards through Triton's GPU pipeline to PTX on the CPU (sm_90), as a GPU
    launch derives them; the stores' launch condition is recorded, the row stride named."""
    import tritonad
    from compile_util import assert_records_declared, compile_on_cpu
    from corpus import persistent_rows

    pointer = f"*{dtype}"
    softmax = tritonad.grad(persistent_rows.softmax_rows)
    types = dict(output_ptr=pointer, input_ptr=pointer, input_row_stride="i32",
                 output_row_stride="i32", n_rows="i32", n_cols="i32")
    # (the placeholder renames the constexpr num_stages, a launch keyword of Triton's)
    stages = softmax.tritonad_renamed["num_stages"]
    compiled = compile_on_cpu(softmax, types, {"BLOCK_SIZE": 256, stages: 2})
    assert "ld.global" in compiled.asm["ptx"]
    requirements = [r for rs in compiled.metadata.tritonad_requirements.values() for r in rs]
    assert any("output_row_stride" in r["refusal"] for r in requirements), requirements
    assert assert_records_declared(compiled) >= len(requirements)

    rms = tritonad.grad(persistent_rows.rms_norm_persistent)
    types = dict(Y=pointer, Y_row_stride="i32", X=pointer, X_row_stride="i32", W=pointer,
                 RSTD="*fp32", n_rows="i32", n_cols="i32", eps="fp32")
    compiled = compile_on_cpu(rms, types, dict(BLOCK_SIZE=256, BLOCK_ROW=4))
    requirements = [r for rs in compiled.metadata.tritonad_requirements.values() for r in rs]
    assert [r["refusal"] for r in requirements if "Y_row_stride" in r["refusal"]], requirements
