"""Run the lit/FileCheck suite under test/lit from pytest, one pytest test per file.

CI reads pytest's summary, so every .mlir file under test/lit becomes one
parametrized test that runs `lit -v <file>` and fails (printing lit's output) when
lit reports anything but PASS / XFAIL. Skipped only when tritonad-opt cannot be
found ($TRITONAD_OPT, then PATH, then <repo>/build/dev/...), as lit.cfg.py does.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TEST_DIR = Path(__file__).resolve().parent
LIT_DIR = TEST_DIR / "lit"
REPO_ROOT = TEST_DIR.parent
IN_TREE_OPT = REPO_ROOT / "build" / "dev" / "cpp" / "tools" / "tritonad-opt" / "tritonad-opt"


def find_tritonad_opt():
    from_env = os.environ.get("TRITONAD_OPT")
    if from_env:
        return from_env if os.access(from_env, os.X_OK) else None
    on_path = shutil.which("tritonad-opt")
    if on_path:
        return on_path
    if os.access(IN_TREE_OPT, os.X_OK):
        return str(IN_TREE_OPT)
    return None


def lit_files():
    return sorted(p for p in LIT_DIR.rglob("*.mlir") if "Output" not in p.parts)


LIT_FILES = lit_files()


def run_lit(*args):
    opt = find_tritonad_opt()
    if opt is None:
        pytest.skip("tritonad-opt not found (set TRITONAD_OPT, put it on PATH, or build build/dev)")
    env = dict(os.environ, TRITONAD_OPT=opt)
    # `python -m lit` does not work with the registry's lit package (no __main__).
    cmd = [sys.executable, "-c", "import sys, lit.main; sys.argv[0] = 'lit'; lit.main.main()",
           "-v", "--no-progress-bar", *args]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    return proc, proc.stdout + proc.stderr


def test_lit_files_found():
    names = {p.relative_to(LIT_DIR).as_posix() for p in LIT_FILES}
    assert {"Dialect/ops.mlir", "Dialect/invalid.mlir", "Dialect/cleanup.mlir"} <= names, names


@pytest.mark.parametrize("path", LIT_FILES, ids=lambda p: p.relative_to(LIT_DIR).as_posix())
def test_lit_file(path):
    proc, output = run_lit(str(path))
    if proc.returncode != 0:
        pytest.fail(f"lit failed on {path.relative_to(REPO_ROOT)} (exit {proc.returncode}):\n"
                    f"{output}", pytrace=False)
    # Exactly one test ran, and it passed (or failed as expected, XFAIL).
    assert "Total Discovered Tests: 1" in output, output
    assert ("Passed: 1" in output or "Expectedly Failed: 1" in output), output
