"""tritonad's mends to Triton 3.6's CPU interpreter (python/tritonad/_interpreter_mends.py):
an atomic add of a reversed view (tl.cumsum(..., reverse=True), the adjoint of a cumsum)
adds the right values, and a runtime loop bound works under numpy >= 2.4. Each check runs
in a fresh Python with TRITON_INTERPRET=1, with and without tritonad imported (without,
the atomic is Triton's own, wrong: the check can fail)."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")

from interpreter_util import run_interpreted  # noqa: E402

_SCRIPT = """
import json, sys, torch, triton, triton.language as tl
if sys.argv[1] == "mended":
    import tritonad

@triton.jit
def reversed_cumsum_added(X, Y, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    tl.atomic_add(Y + r, tl.cumsum(tl.load(X + r), axis=0, reverse=True))

@triton.jit
def runtime_bound_sum(X, Y, n, BLOCK: tl.constexpr):
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        r = start + tl.arange(0, BLOCK)
        total += tl.load(X + r, mask=r < n, other=0.0)
    tl.store(Y, tl.sum(total, axis=0))

x = torch.randn(16)
y = torch.zeros(16)
reversed_cumsum_added[(1,)](x, y, BLOCK=16)
results = {"atomic": (y - x.flip(0).cumsum(0).flip(0)).abs().max().item()}
try:
    x = torch.randn(77)
    s = torch.zeros(1)
    runtime_bound_sum[(1,)](x, s, 77, BLOCK=16)
    results["bound"] = abs(s.item() - x.sum().item())
except Exception as error:
    results["bound"] = repr(error)
print(json.dumps(results))
"""


def _run(mode):
    return run_interpreted(_SCRIPT, mode)


def test_interpreter_mended():
    results = _run("mended")
    assert results["atomic"] < 1e-5, results
    assert isinstance(results["bound"], float) and results["bound"] < 1e-4, results


def test_interpreter_unmended_atomic_is_wrong():
    """(The check above can fail: Triton's own interpreter adds the wrong memory.)"""
    assert _run("plain")["atomic"] > 1e-3
