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
from interpreter_util import corpus_cases_interpreted  # noqa: E402

TOLERANCE = {"float32": 1e-5, "bfloat16": 2e-2}

@pytest.fixture(scope="module")
def interpreted():
    return corpus_cases_interpreted("load_other")


@pytest.mark.parametrize("mode", ["auto", "deterministic"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", load_other.CASES)
def test_load_other_interpreted(interpreted, case, dtype, mode):
    seed, results = interpreted
    errors = results[f"{case}/{dtype}/{mode}"]
    assert isinstance(errors, dict), f"(TRITONAD_TEST_SEED={seed}) {errors}"
    assert max(errors.values()) <= TOLERANCE[dtype], \
        f"(TRITONAD_TEST_SEED={seed}) {case} {dtype} {mode}: {errors}"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", load_other.CASES)
def test_load_other_gpu(case, dtype):
    errors = load_other.check(case, getattr(torch, dtype), "cuda")
    assert max(errors.values()) <= TOLERANCE[dtype], (case, dtype, errors)
