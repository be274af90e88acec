"""Stores in a loop whose addresses start at an offset the access analysis has no
affine form for, fixed within a program: a digit of a program id's digit (the
(tile, batch, head) decode of flash-linear-attention's chunk kernels) or an index
loaded before the loop. Each iteration's tile is compared with the others by what
moves and what spreads; the fixed offset drops out. These stores were refused
("addresses may repeat across iterations"); fla's chunk_fwd_kernel_h and
fused_chunk_fwd_kernel were refused for this. Kernels: corpus/fixed_offsets.py.
Interpreter (fp32) and GPU (fp32, bf16) against fp64 torch.autograd. Lit:
AutoDiff/kernel-store-loop-fixed-offset.mlir (and overlapping tiles still refused).

Across programs the offsets stay unanalyzable: the input gradient is accumulated
by atomics, and in mode="deterministic" through scatter slots (a located error
before them)."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")

from corpus import fixed_offsets  # noqa: E402
from gpu_util import requires_gpu  # noqa: E402
from interpreter_util import run_interpreted  # noqa: E402

TOLERANCE = {"float32": 1e-5, "bfloat16": 3e-2}

_INTERPRETED = """
import json, torch
from corpus import fixed_offsets
results = {}
for name in fixed_offsets.CASES:
    results[name] = fixed_offsets.check(name, torch.float32, "cpu")
    results[name + "/deterministic"] = fixed_offsets.check(name, torch.float32, "cpu",
                                                           mode="deterministic")
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def interpreted():
    return run_interpreted(_INTERPRETED)


@pytest.mark.parametrize("case", fixed_offsets.CASES)
def test_fixed_offset_stores_interpreted(interpreted, case):
    errors = interpreted[case]
    assert max(errors.values()) <= TOLERANCE["float32"], (case, errors)


@pytest.mark.parametrize("case", fixed_offsets.CASES)
def test_fixed_offsets_deterministic_interpreted(interpreted, case):
    # (the programs' offsets are not analyzable across programs: atomics, which
    # deterministic mode replaces by scatter slots)
    errors = interpreted[case + "/deterministic"]
    assert max(errors.values()) <= TOLERANCE["float32"], (case, errors)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("mode", ["auto", "deterministic"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", fixed_offsets.CASES)
def test_fixed_offset_stores_gpu(case, dtype, mode):
    errors = fixed_offsets.check(case, getattr(torch, dtype), "cuda", mode=mode)
    assert max(errors.values()) <= TOLERANCE[dtype], (case, dtype, errors)
