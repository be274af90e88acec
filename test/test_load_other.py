"""Masked loads padded with a differentiated `other` (corpus/load_other.py): the lanes
the mask turns off take their gradient to `other` (a weight read by the padding lanes
of a vector, a per-row bias padding a row that is summed). Dropped before: w's and b's
gradients were 0. Interpreter (fp32, bf16, both modes) and GPU (fp32, bf16) against
fp64 torch.autograd. Lit: AutoDiff/load-other.mlir."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")

from corpus import load_other  # noqa: E402
from gpu_util import requires_gpu  # noqa: E402
from interpreter_util import run_interpreted  # noqa: E402

TOLERANCE = {"float32": 1e-5, "bfloat16": 2e-2}

_INTERPRETED = """
import json, torch
import interpreter_bf16
from corpus import load_other
interpreter_bf16.install()
results = {}
for name in load_other.CASES:
    for dtype in ("float32", "bfloat16"):
        for mode in ("auto", "deterministic"):
            results[f"{name}/{dtype}/{mode}"] = load_other.check(
                name, getattr(torch, dtype), "cpu", mode)
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def interpreted():
    return run_interpreted(_INTERPRETED)


@pytest.mark.parametrize("mode", ["auto", "deterministic"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", load_other.CASES)
def test_load_other_interpreted(interpreted, case, dtype, mode):
    errors = interpreted[f"{case}/{dtype}/{mode}"]
    assert max(errors.values()) <= TOLERANCE[dtype], (case, dtype, mode, errors)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", load_other.CASES)
def test_load_other_gpu(case, dtype):
    errors = load_other.check(case, getattr(torch, dtype), "cuda")
    assert max(errors.values()) <= TOLERANCE[dtype], (case, dtype, errors)
