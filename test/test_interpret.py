"""tritonad under Triton's CPU interpreter (TRITON_INTERPRET=1), checked against
torch.autograd: the elementwise rule set as kernels (float32 and float64), every
rule through its VJP, kernels of the corpus (softmax, layer norm, reductions,
accumulating loops, online-softmax recomputation, atomics, dot, scans, dropout's
integer random stream), while loops, tritonad.autograd, wrappers, located
errors and the integer semantics of the rendering.

Triton reads TRITON_INTERPRET when ``@triton.jit`` runs, and makes its own
library functions when it is imported, so the checks (the interpret_checks package) run
in one fresh Python with the variable set; each check is one test here. The
inputs are fresh random numbers: a failure prints the seed, and
TRITONAD_TEST_SEED=<seed> replays it.
"""

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")

import interpret_checks  # noqa: E402
from interpreter_util import run_in_interpreter  # noqa: E402


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    out = tmp_path_factory.mktemp("interpret") / "results.json"
    return run_in_interpreter(interpret_checks.PACKAGE, out)


@pytest.mark.parametrize("name", sorted(interpret_checks.CHECKS))
def test_interpreted(interpreted, name):
    result = interpreted[name]
    assert result["ok"], f"(TRITONAD_TEST_SEED={result['seed']}) {result['error']}"
