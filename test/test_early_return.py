"""A kernel that returns early for some programs (a cross-entropy's ignored rows:
`if y == ignore_index: store 0; return`) before an online-logsumexp loop over the
vocabulary and a load of the target logit `X + y`: the gradients of the valid rows match
fp64 torch.autograd and are the same from run to run, through tritonad.autograd and
tritonad.grad; ignored rows get zero gradient. Interpreter (fp32) and GPU (fp32, bf16)."""

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
pytest.importorskip("tritonad")

from gpu_util import requires_gpu  # noqa: E402
from interpreter_util import run_interpreted  # noqa: E402

_CHECK = """
import json, sys, torch
from corpus import early_return
print(json.dumps(early_return.check(torch.float32, "cpu", sys.argv[1], rows=9, vocab=77,
                                    block=32)))
"""


@pytest.mark.parametrize("path", ["autograd", "grad"])
def test_early_return_interpreted(path):
    error = run_interpreted(_CHECK, path)
    assert error <= 1e-5, error


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("path", ["autograd", "grad"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_early_return_gpu(dtype, path):
    from corpus import early_return
    dtype = getattr(torch, dtype)
    errors = [early_return.check(dtype, "cuda", path, seed=seed) for seed in (1, 1, 2)]
    assert errors[0] == errors[1], f"differs from run to run: {errors}"
    assert max(errors) <= (1e-5 if dtype == torch.float32 else 8e-3), errors
