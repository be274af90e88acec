"""Persistent (grid-stride) row loops, whose step is the runtime tl.num_programs(0): each
iteration stores its own row, so the store is differentiated (it was refused as "a store
inside a loop whose addresses may repeat"). corpus/grid_stride.py; interpreter (fp32) and
GPU (fp32, bf16) against fp64 torch.autograd. Lit: AutoDiff/kernel-grid-stride.mlir."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")

from gpu_util import requires_gpu  # noqa: E402
from interpreter_util import run_interpreted  # noqa: E402

TOLERANCE = {"float32": 1e-5, "bfloat16": 2e-2}

_CHECK = """
import json, torch
from corpus import grid_stride
print(json.dumps([grid_stride.check(torch.float32, "cpu", programs=p) for p in (1, 4, 64)]))
"""


def test_grid_stride_interpreted():
    for errors in run_interpreted(_CHECK):
        assert max(errors.values()) <= TOLERANCE["float32"], errors


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("programs", [1, 7, 132])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_grid_stride_gpu(dtype, programs):
    from corpus import grid_stride
    errors = grid_stride.check(getattr(torch, dtype), "cuda", rows=1001, n=203,
                               programs=programs)
    assert max(errors.values()) <= TOLERANCE[dtype], errors
