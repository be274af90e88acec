"""The peer cases that Triton's CPU interpreter runs (float32, CPU tensors): the
libraries' forward kernels, launched by the libraries' own code through
tritonad.autograd(kernel, outputs=...), against the libraries' backward (or,
where that does not run in the interpreter, torch's) and float64 torch.

Triton reads TRITON_INTERPRET when a kernel is defined, so the cases run in one
fresh Python (run_interpreted.py) with it set; each case is one test here. A
failure prints its seed: TRITONAD_TEST_SEED=<seed> replays it.
"""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")

import oracle  # noqa: E402
from cases import interpreted_cases  # noqa: E402

CASES = interpreted_cases()
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_interpreted.py")


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    out = tmp_path_factory.mktemp("peer") / "results.json"
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env.setdefault("TRITONAD_TEST_SEED", str(oracle.seed()))
    done = subprocess.run([sys.executable, SCRIPT, str(out), *sorted(CASES)], env=env,
                          capture_output=True, text=True, timeout=600)
    if not out.exists():
        pytest.fail(f"the interpreter run crashed (TRITONAD_TEST_SEED="
                    f"{env['TRITONAD_TEST_SEED']}, exit {done.returncode}):\n"
                    f"{done.stderr[-6000:]}")
    return json.loads(out.read_text())


@pytest.mark.skipif(not CASES, reason="no library of the peer suite is installed "
                    "(pip install liger-kernel fla-core)")
@pytest.mark.parametrize("name", sorted(CASES) or ["none"])
def test_interpreted(interpreted, name):
    oracle.report(oracle.Result(**interpreted[name]))
