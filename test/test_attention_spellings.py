"""Attention as people write it (issue 41): tritonad.autograd's dQ, dK, dV of
each forward of test/corpus/attention_spellings.py (the key loop in a helper
or inline, causal in one loop or with the diagonal split off, grouped-query
heads, the batch x heads grid on axis 1 or folded into axis 0, the
logsumexp saved or not), default and mode="deterministic".

Interpreter (CPU, TRITON_INTERPRET=1): tiny odd lengths, fp32 and bf16,
against fp64 torch; deterministic mode bitwise the same on a second
backward. A spelling tritonad refuses is in REFUSED with the error it must
raise: the test fails when the refusal goes away (then move it out).
GPU (marked gpu): L = 1000 and 2048, D = 64 and 128, fp16 and bf16, beside
SDPA's error against fp64; deterministic mode bitwise reproducible.
benchmarks/attention_spellings.py times them.
"""

import re
from typing import NamedTuple

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

from corpus import attention_spellings as spellings  # noqa: E402
from gpu_util import requires_gpu  # noqa: E402
from interpreter_util import replayable_seed, run_interpreted  # noqa: E402

ALL = [s.name for s in spellings.SPELLINGS]
MODES = ("auto", "deterministic")

class Refusal(NamedTuple):
    pattern: str                    # a regex of the error's text
    at_launch: bool = False         # refused by the launch (at odd lengths)
    interpreter_only: bool = False  # refused by the CPU interpreter's path only


# (spelling, mode): the refusal it gets today.
REFUSED = {}
# The derived backward keeps K's transposed block pointer (order (0, 1)),
# which the interpreter's rendering cannot spell; a GPU compiles it.
for _mode in MODES:
    REFUSED[("block_ptr_causal", _mode)] = Refusal(
        r"RenderError: cannot render tt.make_tensor_ptr at .*attention_spellings.py:\d+:\d+",
        interpreter_only=True)

# Interpreter sizes: odd lengths (a partial last block), 16 x 16 tiles.
LENGTH, HEAD_DIM = 37, 16

_INTERPRETED = r"""
import json, sys
import torch, tritonad
import interpreter_bf16
from corpus import attention_spellings as spellings

interpreter_bf16.install()
dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[sys.argv[1]]
length, head_dim = int(sys.argv[3]), int(sys.argv[4])
gen = torch.Generator().manual_seed(int(sys.argv[5]))
results = {}
for case in sys.argv[2].split(","):
    name, mode = case.split(":")
    spelling = spellings.BY_NAME[name]
    heads = 2 if spelling.gqa else 1  # (grouped-query: one K/V head for two)
    t = spellings.inputs(spelling, 1, heads, length, head_dim, dtype, "cpu", group=2,
                         generator=gen)
    try:
        got = spellings.autograd_gradients(spelling, t, spellings.SMALL_TILES, mode,
                                           twice=mode == "deterministic", generator=gen)
    except Exception as error:  # (the test compares it with REFUSED)
        results[case] = dict(refused=f"{type(error).__name__}: {error}")
        continue
    # torch in the same dtype, for scale: what rounding in this dtype costs
    same = [t[k].detach().clone().requires_grad_() for k in ("q", "k", "v")]
    out, lse = spelling.reference(*same, t["sm_scale"])
    torch_got = torch.autograd.grad([x for x in (out, lse) if x is not None], same,
                                    [x for x in got.upstream if x is not None])
    strategies = {e.subject: e.strategy for e in got.op.backward_kernel.schedule().entries
                  if e.kind == "shadow"}
    results[case] = dict(
        out=spellings.rel_err(got.out, got.want_out),
        errors=[spellings.rel_err(g, w) for g, w in zip(got.first, got.want)],
        torch_errors=[spellings.rel_err(g, w) for g, w in zip(torch_got, got.want)],
        finite=all(bool(torch.isfinite(g).all()) for g in got.first),
        same=None if got.again is None else
        all(torch.equal(x, y) for x, y in zip(got.first, got.again)),
        strategies=strategies)
print(json.dumps(results))
"""

# Relative to the largest gradient: fp32, the interpreter's products are
# exact fp32 (measured 1-6e-7); bf16, twice torch's own bf16 error on the same
# inputs, or at least the floor. torch's bf16 autograd reaches 2.2e-2 on these
# sizes (fa2_helper_causal over 2000 draws, mean 5.7e-3; emulated in torch,
# 1.8e-2 for tritonad's roundings): both round dP = dO V^T to bf16 (the adjoint
# of p.to(bf16)) before subtracting the row's dO.O, which cancels; a backward
# written by hand keeps dP in fp32 (1.0e-2). At 1.5e-2, 1 run in 11 failed
# (fa2_helper_causal dQ 1.57e-2, torch's 6.5e-3 on that draw).
_FLOOR = {"fp32": 1e-5, "bf16": 2.5e-2}
# The forward's output: P rounded to bf16 for P V, the output once (measured up to 4.1e-3).
_OUT_FLOOR = {"fp32": 1e-5, "bf16": 1e-2}
_results = {}


def _interpreted(dtype):
    """(seed, {"name:mode": result}) of the interpreter script; both dtypes'
    scripts run side by side on the first call."""
    if not _results:
        from concurrent.futures import ThreadPoolExecutor

        seed = replayable_seed()
        cases = ",".join(f"{name}:{mode}" for name in ALL for mode in MODES)
        with ThreadPoolExecutor(len(_FLOOR)) as pool:
            runs = {d: pool.submit(run_interpreted, _INTERPRETED, d, cases, str(LENGTH),
                                   str(HEAD_DIM), str(seed), timeout=600) for d in _FLOOR}
            _results.update({d: (seed, run.result()) for d, run in runs.items()})
    return _results[dtype]


def _check_refusal(name, mode, result):
    expected = REFUSED.get((name, mode))
    if expected is None:
        assert "refused" not in result, f"{name} {mode}: {result.get('refused')}"
        return False
    assert "refused" in result, (f"{name} {mode} is no longer refused: remove it from REFUSED "
                                 f"and check its gradients")
    assert re.search(expected.pattern, result["refused"], re.S), result["refused"]
    return True


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ALL)
def test_gradients_in_the_interpreter(name, mode, dtype):
    seed, results = _interpreted(dtype)
    result = results[f"{name}:{mode}"]
    if _check_refusal(name, mode, result):
        return
    assert result["finite"], name
    assert result["out"] <= _OUT_FLOOR[dtype], f"{name}: forward off by {result['out']:.2e}"
    for grad, error, theirs in zip(("dQ", "dK", "dV"), result["errors"],
                                   result["torch_errors"]):
        bound = max(2 * theirs, _FLOOR[dtype])
        assert error <= bound, (f"{name} {mode} {grad} ({dtype}, TRITONAD_TEST_SEED={seed}): "
                                f"error {error:.2e}, torch's in {dtype} {theirs:.2e}")
    if mode == "deterministic":
        assert result["same"], f"{name}: a second backward differs"
        for operand in ("K", "V"):
            assert result["strategies"][operand] == "re-parallelized", result["strategies"]


@pytest.mark.parametrize("name", ["fa2_running_lse", "fa2_running_lse_causal"])
def test_running_logsumexp_loop_is_reversed_through_its_stabilizer(name):
    """FlashAttention-2's max taken with the running logsumexp is a stabilizer, and the
    logsumexp, held against the final max, an accumulation of exp(lse - max): one
    forward-order pass over the keys, no tape, no replay (lit:
    AutoDiff/kernel-running-logsumexp.mlir)."""
    spelling = spellings.BY_NAME[name]
    t = spellings.inputs(spelling, 1, 4, 1000, 64, torch.float16, "cpu", requires_grad=False)
    _, args, kwargs = spelling.launch(spelling.kernel, t, spellings.GPU_TILES[64])
    schedule = str(tritonad.grad(spelling.kernel).schedule(*args, **kwargs))
    loops = [line for line in schedule.splitlines() if line.startswith("loop ")]
    assert loops and all("only stabilizes exponentials" in line and
                         "a running logsumexp, accumulated as exp(value - final max)" in line
                         for line in loops), schedule


# ---------------------------------------------------------------------------
# benchmarks/attention_spellings.py on the CPU
# ---------------------------------------------------------------------------

def _benchmark(*argv, interpret=False):
    import os
    import subprocess
    import sys

    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "benchmarks", "attention_spellings.py")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    return subprocess.run([sys.executable, script, *argv], env=env, capture_output=True,
                          text=True, timeout=600)


def test_describe_derives_every_spelling_at_the_gpu_tiles():
    # The schedule of each spelling at the benchmark's tiles (128 x 64, sm_90),
    # derived on the CPU: deterministic mode gives dK and dV programs of their
    # own (two parts each where the diagonal is split off), the default atomics.
    done = _benchmark("--describe")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    sections = done.stdout.split("\n## ")[1:]
    assert [section.split(":")[0] for section in sections] == ALL
    for section in sections:
        name = section.split(":")[0]
        auto, deterministic = section.split("\ndeterministic:\n")
        assert "refused" not in auto, auto
        refusal = REFUSED.get((name, "deterministic"))
        if refusal and not refusal.at_launch and not refusal.interpreter_only:
            assert re.search(refusal.pattern, deterministic), deterministic
            continue
        assert "refused" not in deterministic, deterministic
        lines = {line.strip().split(": ")[0]: line for line in deterministic.splitlines()
                 if line.startswith("    ")}
        q, k, v = (spellings.BY_NAME[name].kernel.arg_names[i] for i in range(3))
        two_loops = name in ("tutorial_two_loops", "fa2_helper_causal")
        for operand in (k, v):
            assert lines[operand].count("re-parallelized (programs of its own") == \
                (2 if two_loops else 1), (name, lines[operand])
        assert "atomic" in auto.split(f"    {k}: ")[1].split(" ")[0], (name, auto)


def test_benchmark_runs_in_the_interpreter():
    # --smoke: the GPU matrix's code path (launches, SDPA with enable_gqa,
    # the math torch.compile gets, checks, report) on one spelling, nothing timed.
    done = _benchmark("--smoke", "--spellings", "gqa", interpret=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (row,) = [line for line in done.stdout.splitlines() if line.startswith("| gqa ")]
    assert row.endswith("| True | atomic / parts, no atomics |"), row


# ---------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------

# (fp16: a few roundings of the result; bf16 8x that. SDPA's own error is
# the other side of the bound.)
_GPU_FLOOR = {"fp16": 4e-3, "bf16": 3e-2}
_GPU_SHAPES = [(1000, 64), (1000, 128), (2048, 128)]  # (L, D)


def sdpa_gradients(spelling, t, upstream):
    """SDPA's backward (4-D, enable_gqa where grouped; the backend torch picks)
    of the same attention's output."""
    import torch.nn.functional as F

    leaves = [t[k].detach().clone().requires_grad_() for k in ("q", "k", "v")]
    out = F.scaled_dot_product_attention(*leaves, is_causal=spelling.causal,
                                         scale=t["sm_scale"], enable_gqa=spelling.gqa)
    return torch.autograd.grad(out, leaves, upstream[0])


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("length,head_dim", _GPU_SHAPES)
@pytest.mark.parametrize("name", ALL)
def test_gradients_on_the_gpu(name, length, head_dim, dtype, mode):
    spelling = spellings.BY_NAME[name]
    torch_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    gen = torch.Generator().manual_seed(length * head_dim)
    t = spellings.inputs(spelling, 2, 8, length, head_dim, torch_dtype, "cuda", group=4,
                         generator=gen)
    tiles = spellings.GPU_TILES[head_dim]
    refusal = REFUSED.get((name, mode))
    if refusal and refusal.interpreter_only:
        refusal = None
    if refusal and (not refusal.at_launch or length % tiles["BLOCK_M"]):
        with pytest.raises(Exception, match=refusal.pattern):
            spellings.autograd_gradients(spelling, t, tiles, mode, generator=gen)
        return
    got = spellings.autograd_gradients(spelling, t, tiles, mode, twice=True, generator=gen,
                                       num_warps=8 if head_dim == 128 else 4, num_stages=2)
    flash = sdpa_gradients(spelling, t, got.upstream)
    assert spellings.rel_err(got.out, got.want_out) <= _GPU_FLOOR[dtype]
    for grad, mine, want, theirs in zip(("dQ", "dK", "dV"), got.first, got.want, flash):
        assert bool(torch.isfinite(mine).all()), grad
        error, their_error = spellings.rel_err(mine, want), spellings.rel_err(theirs, want)
        assert error <= max(2 * their_error, _GPU_FLOOR[dtype]), \
            f"{name} {grad}: error {error:.2e}, SDPA's {their_error:.2e}"
    if mode == "deterministic":
        assert all(torch.equal(x, y) for x, y in zip(got.first, got.again)), \
            "not bitwise reproducible"
