"""tritonad under Triton's CPU interpreter (TRITON_INTERPRET=1), checked against
torch.autograd: the elementwise rule set as kernels (float32 and float64), every
rule through its VJP, kernels of the corpus (softmax, layer norm, reductions,
accumulating loops, online-softmax recomputation, atomics, dot, scans, dropout's
integer random stream), while loops, tritonad.autograd, wrappers, located
errors and the integer semantics of the rendering.

Triton reads TRITON_INTERPRET when ``@triton.jit`` runs, and makes its own
library functions when it is imported, so the checks (interpret_checks.py) run
in one fresh Python with the variable set; each check is one test here. The
inputs are fresh random numbers: a failure prints the seed, and
TRITONAD_TEST_SEED=<seed> replays it.
"""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")

import interpret_checks  # noqa: E402


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    out = tmp_path_factory.mktemp("interpret") / "results.json"
    seed = os.environ.get("TRITONAD_TEST_SEED") or str(int.from_bytes(os.urandom(4), "little"))
    env = {k: v for k, v in os.environ.items() if k not in ("TRITONAD_DUMP",)}
    env["TRITON_INTERPRET"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run([sys.executable, interpret_checks.__file__, str(out), seed],
                          env=env, capture_output=True, text=True, timeout=600)
    if not out.exists():
        pytest.fail(f"the interpreter run crashed (seed {seed}, exit {done.returncode}):\n"
                    f"{done.stderr[-6000:]}")
    return json.loads(out.read_text())


@pytest.mark.parametrize("name", sorted(interpret_checks.CHECKS))
def test_interpreted(interpreted, name):
    result = interpreted[name]
    assert result["ok"], f"(TRITONAD_TEST_SEED={result['seed']}) {result['error']}"
