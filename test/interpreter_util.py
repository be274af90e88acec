"""Running gradient checks in Triton's CPU interpreter (TRITON_INTERPRET=1).

Triton reads TRITON_INTERPRET when ``@triton.jit`` runs, and makes its own library
functions when it is imported, so interpreter checks run in a fresh Python with the
variable set: `run_interpreted` runs a script string and returns the JSON its last
line prints; `run_in_interpreter` runs a file of registered checks (name -> function,
see interpret_checks/) through `main`, which seeds `GEN` per check and reports
{name: {ok, error, seed, seconds}}; a check whose derived backwards race
(interpreter_races.py; TRITONAD_RACE_CHECK=0 turns the check off) fails. The helpers
the checks share: `randn` (from `GEN`), `assert_close`, `kernel_gradients`
(tritonad.grad of a kernel against torch.autograd of a reference), `jit_from_source`.
"""

import json
import linecache
import os
import subprocess
import sys
import time
import traceback
import zlib

import torch
import triton

import tritonad

GEN = torch.Generator()


def replayable_seed() -> int:
    """TRITONAD_TEST_SEED, or a fresh random seed: a test's failure prints it, and
    TRITONAD_TEST_SEED=<seed> replays it."""
    given = os.environ.get("TRITONAD_TEST_SEED")
    return int(given) if given else int.from_bytes(os.urandom(4), "little")


def run_interpreted(script: str, *argv: str, timeout: int = 300):
    """Runs `script` (Python source; test/ and this process's paths importable) under
    TRITON_INTERPRET=1 with `argv`, and returns the JSON its last printed line holds."""
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", script, *argv], env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


_CORPUS_CASES = """
import json, sys, torch
import interpreter_bf16
interpreter_bf16.install()
corpus = __import__("corpus." + sys.argv[1], fromlist=["CASES"])
torch.manual_seed(int(sys.argv[2]))
results = {}
for name in corpus.CASES:
    for dtype in ("float32", "bfloat16"):
        for mode in ("auto", "deterministic"):
            try:
                results[f"{name}/{dtype}/{mode}"] = corpus.check(
                    name, getattr(torch, dtype), "cpu", mode)
            except Exception as error:
                results[f"{name}/{dtype}/{mode}"] = f"{type(error).__name__}: {error}"
print(json.dumps(results))
"""


def corpus_cases_interpreted(module: str):
    """Every case of test/corpus/<module>.py (its CASES and `check(name, dtype, device,
    mode)`: the largest error of each gradient) in the interpreter, in float32 and
    bfloat16 (interpreter_bf16 installed) and both modes, on inputs drawn from
    replayable_seed(): (seed, {"case/dtype/mode": errors, or the refusal's text})."""
    seed = replayable_seed()
    return seed, run_interpreted(_CORPUS_CASES, module, str(seed))


def counting_atomic_lanes():
    """From now on, counts the lanes of every atomic read-modify-write that Triton's
    interpreter executes, into the one-element list returned (the caller resets it): a
    schedule that claims no atomics is checked by what ran."""
    from triton.runtime import interpreter
    count = [0]
    rmw = interpreter.InterpreterBuilder.create_atomic_rmw

    def counting(self, op, ptr, val, mask, *rest):
        count[0] += int(mask.data.sum())
        return rmw(self, op, ptr, val, mask, *rest)

    interpreter.InterpreterBuilder.create_atomic_rmw = counting
    return count


def jit_from_source(source, name, env):
    """A @triton.jit function from source (registered with linecache: Triton
    and its interpreter read functions through inspect)."""
    filename = f"<interpret_checks-{name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": "interpret_checks_generated", **env}
    exec(compile(source, filename, "exec"), namespace)
    return triton.jit(namespace[name])


def randn(*shape, dtype=torch.float32):
    return torch.randn(tuple(shape), generator=GEN, dtype=torch.float64).to(dtype)


def assert_close(name, got, want, rtol, atol):
    got, want = got.double(), want.double()
    bad = ~torch.isclose(got, want, rtol=rtol, atol=atol)
    if bad.any():
        at = bad.nonzero()[0].tolist()
        raise AssertionError(
            f"gradient of {name}: {int(bad.sum())} of {got.numel()} elements differ, e.g. at "
            f"{at}: got {got[tuple(at)].item():.10g}, expected {want[tuple(at)].item():.10g}; "
            f"max abs error {(got - want).abs().max().item():.3g}")


def kernel_gradients(kernel, grid, inputs, outputs, scalars, constexprs, reference,
                     rtol=1e-4, atol=1e-5, **grad_options):
    """Launches tritonad.grad(kernel) in the interpreter on `inputs` (name ->
    tensor), with random upstream gradients for `outputs` (name -> tensor of the
    output's shape and dtype), and compares the input shadows with
    torch.autograd of `reference(**inputs)` (-> {output name: tensor})."""
    bwd = tritonad.grad(kernel, **grad_options)
    primal = bwd.tritonad_primal
    upstream = {name: randn(*t.shape, dtype=t.dtype) for name, t in outputs.items()}
    shadows = {}
    for pointer, shadow in bwd.shadows.items():
        if pointer in inputs:
            shadows[shadow] = torch.zeros_like(inputs[pointer])
        elif pointer in upstream:
            shadows[shadow] = upstream[pointer].clone()
    values = {**inputs, **outputs, **scalars}
    args = [values[p.name] for p in primal.params if not p.is_constexpr]
    bwd[grid](*args, **shadows, **constexprs)

    leaves = {k: v.detach().double().requires_grad_() for k, v in inputs.items()}
    produced = reference(**leaves)
    total = sum((produced[k] * upstream[k].double()).sum() for k in produced)
    total.backward()
    for name, leaf in leaves.items():
        shadow = bwd.shadows.get(name)
        if shadow is None:
            continue
        want = leaf.grad if leaf.grad is not None else torch.zeros_like(leaf)
        assert_close(name, shadows[shadow], want, rtol, atol)
    return bwd


def run_in_interpreter(script, out):
    """Runs `script` in a fresh Python under TRITON_INTERPRET=1 (Triton reads it when
    ``@triton.jit`` runs); its main writes {name: {ok, error, seed, seconds}} to `out`,
    which is returned. The seed is TRITONAD_TEST_SEED, or a random one. For the pytest
    fixtures of test_interpret.py, test_loops.py and test_contract_checks.py."""
    import pytest

    seed = str(replayable_seed())
    env = {k: v for k, v in os.environ.items() if k not in ("TRITONAD_DUMP",)}
    env["TRITON_INTERPRET"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run([sys.executable, script, str(out), seed],
                          env=env, capture_output=True, text=True, timeout=600)
    if not out.exists():
        pytest.fail(f"the interpreter run crashed (seed {seed}, exit {done.returncode}):\n"
                    f"{done.stderr[-6000:]}")
    return json.loads(out.read_text())


def _race_check():
    """The race check (interpreter_races.py) on every backward tritonad derives and the
    interpreter runs, unless TRITONAD_RACE_CHECK=0 (a user kernel of a check may race on
    purpose: only derived kernels are checked)."""
    import contextlib

    if os.environ.get("TRITONAD_RACE_CHECK", "1") == "0":
        return contextlib.nullcontext()
    from interpreter_races import RaceCheck, derived_by_tritonad
    return RaceCheck(select=derived_by_tritonad)


def main(argv, checks):
    """Runs `checks` (name -> check) as the command line `argv` says:
    [out.json [seed [name ...]]] (see interpret_checks/__init__.py)."""
    import argparse

    parser = argparse.ArgumentParser(
        description="Gradient checks in Triton's CPU interpreter (set TRITON_INTERPRET=1).")
    parser.add_argument("out", nargs="?", help="write {name: {ok, error, seed, seconds}} "
                        "here as JSON (default: print a line per check)")
    parser.add_argument("seed", nargs="?", type=int, help="random seed (default: random)")
    parser.add_argument("names", nargs="*", metavar="name", help="checks to run (default: all)")
    args = parser.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET") != "1":
        parser.error("set TRITON_INTERPRET=1 before running the checks")
    unknown = [name for name in args.names if name not in checks]
    if unknown:
        parser.error(f"no check named {', '.join(unknown)}")
    out = args.out
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    wanted = args.names or sorted(checks)
    results = {}
    for name in wanted:
        GEN.manual_seed(seed ^ zlib.crc32(name.encode()))
        torch.manual_seed(seed)
        start = time.perf_counter()
        try:
            with _race_check() as check:
                checks[name]()
            if check is not None and check.races:
                raise AssertionError("data races in a derived backward (the interpreter "
                                     "runs programs one by one; a GPU does not):\n"
                                     + check.report())
            results[name] = {"ok": True}
        except Exception as error:  # noqa: BLE001  (reported per check)
            results[name] = {"ok": False, "error": f"{type(error).__name__}: {error}\n"
                                                   f"{traceback.format_exc()[-3000:]}"}
        results[name]["seconds"] = round(time.perf_counter() - start, 3)
        results[name]["seed"] = seed
    if out:
        with open(out, "w") as f:
            json.dump(results, f)
    else:
        for name, result in results.items():
            print(("ok  " if result["ok"] else "FAIL") + f" {result['seconds']:6.2f}s {name}")
            if not result["ok"]:
                print("     " + result["error"].replace("\n", "\n     ")[:1500])
    return results
