"""Randomized differential tests of tritonad.grad (see gen.py and run.py).

* CPU (not marked): ~30 random kernels derived and compiled to PTX for sm_90 without a
  GPU; tritonad may refuse some with a located error, but must never crash. Also: the
  generator is deterministic, and on ~20 seeds its forward kernels (run by Triton's
  interpreter) agree with their torch references -- a fuzzer whose two halves disagree
  would report false mismatches.
* GPU (marked gpu): ~100 random kernels; forward + derived backward against
  torch.autograd; zero mismatches (silently wrong gradients) and zero crashes. Plus
  every minimized case kept in regressions.py.

Each case runs in a worker process (a hard abort in the compiler is reported as a crash
of that seed instead of killing pytest).
"""

import os
import sys

import pytest

FUZZ_DIR = os.path.dirname(os.path.abspath(__file__))
TEST_DIR = os.path.dirname(FUZZ_DIR)
for _p in (FUZZ_DIR, TEST_DIR):
    if _p not in sys.path:
        sys.path.insert(0, _p)

pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")

import gen  # noqa: E402
import regressions  # noqa: E402
import run  # noqa: E402
from gpu_util import requires_gpu  # noqa: E402

CPU_SEEDS = range(10_000, 10_030)
INTERPRET_SEEDS = range(20_000, 20_020)
GPU_SEEDS = range(0, 100)


def _workers(limit):
    return max(1, min(limit, os.cpu_count() or 1))


def _report(results, outcomes):
    bad = [r for r in results if r["outcome"] in outcomes]
    lines = []
    for r in bad:
        lines.append(f"seed {r.get('seed')}: {r['outcome']}: {r.get('cause')}\n"
                     f"{(r.get('detail') or '')[:1500]}")
    return bad, "\n\n".join(lines)


def test_generator_is_deterministic_and_switchable():
    a, b = gen.generate(7), gen.generate(7)
    assert a.source == b.source
    # a feature turned off is not used
    for seed in range(20):
        case = gen.generate(seed, sorted(gen.ALL_FEATURES - {"exp", "grid2d", "helpers"}))
        assert not {"exp", "grid2d", "helpers"} & set(case.features), seed
        assert case.meta["layout"] != "grid2d" and "def _h" not in case.source, seed


def test_cause_key_is_short_and_linear():
    msg = "x.py:3:4: error: pointer argument 'x_ptr' is both loaded and stored\n" + "a" * 10**6
    assert run.cause_key(msg) == "pointer argument <name> is both loaded and stored"
    assert run.classify_exception(ValueError(msg))[0] == "located-error"
    assert run.classify_exception(RuntimeError(msg))[0] == "crash"
    assert run.classify_exception(ValueError("no location"))[0] == "crash"


def test_fuzz_cpu_compile_never_crashes():
    tasks = [dict(seed=s) for s in CPU_SEEDS]
    # always compile: a backward served from Triton's cache would skip the derivation
    results = run.run_tasks(tasks, "cpu", _workers(4), timeout=300,
                            env={"TRITON_ALWAYS_COMPILE": "1"})
    bad, text = _report(results, ("crash", "gen-error"))
    assert not bad, f"{len(bad)} of {len(results)} kernels crashed:\n{text}"


def test_fuzz_generator_forward_matches_reference_in_interpreter():
    tasks = [dict(seed=s) for s in INTERPRET_SEEDS]
    results = run.run_tasks(tasks, "interpret", _workers(4), timeout=300)
    bad, text = _report(results, ("fwd-mismatch", "gen-error", "crash"))
    assert not bad, f"generated kernels disagree with their references:\n{text}"


@pytest.mark.gpu
@requires_gpu
def test_fuzz_gpu_no_silently_wrong_gradient():
    tasks = [dict(seed=s) for s in GPU_SEEDS]
    results = run.run_tasks(tasks, "gpu", _workers(16), timeout=600,
                            env={"TRITON_ALWAYS_COMPILE": "1"})
    summary = run.summarize(results)
    bad, text = _report(results, ("mismatch", "crash", "gen-error", "fwd-mismatch"))
    assert not bad, (f"{summary['counts']}\n{text}\n(reproduce and minimize with "
                     f"`python3 test/fuzz/run.py --seeds <seed>`)")


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name", sorted(regressions.CASES))
def test_fuzz_regression(name):
    res = run.run_case(dict(source=regressions.CASES[name], name=name), "gpu")
    assert res["outcome"] in ("match", "skipped"), f"{res['outcome']}: {res['cause']}\n{res['detail']}"
