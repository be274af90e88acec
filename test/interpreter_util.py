"""Running a check in Triton's CPU interpreter: Triton reads TRITON_INTERPRET when
``@triton.jit`` runs, so the check runs in a fresh Python with the variable set."""

import json
import os
import subprocess
import sys


def run_interpreted(script: str, *argv: str, timeout: int = 300):
    """Runs `script` (Python source; test/ and this process's paths importable) under
    TRITON_INTERPRET=1 with `argv`, and returns the JSON its last printed line holds."""
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", script, *argv], env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
