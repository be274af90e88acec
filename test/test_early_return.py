"""A kernel that returns early for some programs (a cross-entropy's ignored rows:
`if y == ignore_index: store 0; return`) before an online-logsumexp loop over the
vocabulary and a load of the target logit `X + y`: the gradients of the valid rows match
fp64 torch.autograd and are the same from run to run, through tritonad.autograd and
tritonad.grad; ignored rows get zero gradient. Interpreter (fp32) and GPU (fp32, bf16)."""

import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
pytest.importorskip("tritonad")

from gpu_util import requires_gpu  # noqa: E402

_CHECK = """
import json, sys, torch
from corpus import early_return
print(json.dumps(early_return.check(torch.float32, "cpu", sys.argv[1], rows=9, vocab=77,
                                    block=32)))
"""


@pytest.mark.parametrize("path", ["autograd", "grad"])
def test_early_return_interpreted(path):
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", _CHECK, path], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    error = json.loads(done.stdout.strip().splitlines()[-1])
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
