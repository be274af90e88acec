"""Gradients summed over all rows (a DyT layer's alpha, gamma and beta; corpus/
shared_weights.py; block_m=None: one row per program, atomics) are accumulated in fp32
and rounded once: in bf16 their error
against fp64 is that of one rounding (2^-8 relative, with margin), not of a sum rounded
at every step (the 3.7e-2 a bf16 reduction gave). Lit: AutoDiff/f16-broadcast-sums.mlir."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")

from gpu_util import requires_gpu  # noqa: E402
from interpreter_util import run_interpreted  # noqa: E402

# One rounding of each input and of the result (bf16: 2^-8 relative each).
TOLERANCE = {"float32": 1e-4, "bfloat16": 1.6e-2}


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("block_m", [1, 8, None])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_shared_weight_sums(dtype, block_m):
    from corpus import shared_weights
    errors = shared_weights.check(getattr(torch, dtype), "cuda", block_m=block_m)
    assert max(errors.values()) <= TOLERANCE[dtype], errors


def test_shared_weight_sums_interpreted():
    """fp32 in Triton's CPU interpreter (it has no bf16 arithmetic)."""
    script = ("import json, torch\nfrom corpus import shared_weights\n"
              "print(json.dumps([shared_weights.check(torch.float32, 'cpu', rows=37, n=23, "
              "block_m=m) for m in (4, None)]))")
    for errors in run_interpreted(script):
        assert max(errors.values()) <= TOLERANCE["float32"], errors
