"""Masked lanes padded with -inf meet products and unary ops (corpus/padded.py): the gradients stay
finite and match fp64 torch.autograd on the real lanes, on the GPU (fp32, bf16) and in
Triton's CPU interpreter. Also a user's sum combiner over padded lanes, and key tiles padded
with -inf / NaN whose dot's adjoint meets the masked scores' zero gradient (dQ was NaN). The
lit side is test/lit/AutoDiff/padding.mlir and padding-dot.mlir."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")

from gpu_util import requires_gpu  # noqa: E402
from interpreter_util import run_interpreted  # noqa: E402

CASES = ("scaled_by_sum", "softmax_times_x", "masked_entropy", "expected_logit",
         "divided_by_absmax", "custom_max_softmax", "softmax_times_x_then_sigmoid",
         "softmax_times_x_then_sin_exp", "pow_of_softmax_times_x", "softmax_times_x_over_norm",
         "exp_of_mean_through_nan", "scaled_by_custom_sum")
SCORE_CASES = ("padded_scores", "padded_scores_nan_first")
# Row widths: odd, and fuzz seed 160's 101 (a 128-lane block, 27 lanes padded).
WIDTHS = (37, 101)
# fp32 math in both dtypes; bf16 inputs and upstream round at 2^-8.
TOLERANCE = {"float32": 1e-4, "bfloat16": 3e-2}

_INTERPRETED = """
import json, sys, torch
from corpus import padded
results = {}
for name in padded.CASES:
    if name in padded.GPU_ONLY:
        continue
    for n in (37, 101):
        try:
            results[f"{name}/{n}"] = padded.check(name, torch.float32, "cpu", n=n)
        except Exception as error:  # reported per case
            results[f"{name}/{n}"] = f"{type(error).__name__}: {error}"
for name in padded.SCORE_CASES:
    try:
        results[name] = padded.check_scores(name, torch.float32, "cpu")
    except Exception as error:
        results[name] = f"{type(error).__name__}: {error}"
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def interpreted():
    return run_interpreted(_INTERPRETED)


@pytest.mark.parametrize("n", WIDTHS)
@pytest.mark.parametrize("name", [c for c in CASES if c != "pow_of_softmax_times_x"])
def test_padding_interpreted(interpreted, name, n):
    error = interpreted[f"{name}/{n}"]
    assert not isinstance(error, str), error
    assert error <= TOLERANCE["float32"], f"{name}: error {error}"


@pytest.mark.parametrize("name", SCORE_CASES)
def test_padded_scores_interpreted(interpreted, name):
    errors = interpreted[name]
    assert not isinstance(errors, str), errors
    assert max(errors.values()) <= TOLERANCE["float32"], f"{name}: errors {errors}"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("keys", [21, 77])
@pytest.mark.parametrize("name", SCORE_CASES)
def test_padded_scores_gpu(name, dtype, keys):
    from corpus import padded
    errors = padded.check_scores(name, getattr(torch, dtype), "cuda", m=101, n=keys)
    assert max(errors.values()) <= TOLERANCE[dtype], f"{name} {dtype}: errors {errors}"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("n", WIDTHS)
@pytest.mark.parametrize("name", CASES)
def test_padding_gpu(name, dtype, n):
    from corpus import padded
    error = padded.check(name, getattr(torch, dtype), "cuda", n=n)
    assert error <= TOLERANCE[dtype], f"{name} {dtype}: error {error}"
