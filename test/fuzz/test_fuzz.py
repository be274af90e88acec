"""Randomized differential tests of tritonad.grad (see gen.py and run.py).

* CPU (not marked): ~30 random kernels, plus a few using each of tl.dot, the dot's K
  loop, scf.while and 2-D tiles in a loop, derived and compiled to PTX for sm_90 without
  a GPU; tritonad may refuse some with a located error, but must never crash. Also: the
  generator is deterministic, and on ~20 seeds (and those) its forward kernels (run by
  Triton's interpreter) agree with their torch references -- a fuzzer whose two halves
  disagree would report false mismatches; and the rounding model of the tolerance bounds
  an emulated fp16 accumulation whose load sites cancel (seed 2085), where the earlier
  per-program model did not.
* Issue 39's classes (gen.ISSUE39_FEATURES: -inf padding, shared fp16/bf16 weights,
  autotune, heuristics, early exits, persistent loops, constexpr defaults, launch-keyword
  names), a few seeds each: forward agreement in the interpreter, derivation for sm_90
  (located refusals counted per class, each class derived at least once), gradients
  compared in the interpreter (fp32 / fp16), the backward's launches checked for data
  races there (test/interpreter_races.py: the interpreter's serial order hides them),
  also for the seeds whose backwards raced on a GPU (RACED_ON_A_GPU); and the fp32-shadow
  tolerance reports an emulated bf16 sum across programs as a mismatch.
* Features drawn from streams of their own (gen.OWN_STREAM_FEATURES): each is drawn,
  switchable, and leaves the seeds that do not draw it unchanged; gradients compared in
  the interpreter for a row_table seed, three overwrite_const seeds (a later store of
  a constant over some columns of an output: wrong before it took their gradient away)
  three other_active seeds (a masked load padded with a differentiated value, summed
  over its padding lanes: the value's gradient was dropped before) and four saturating
  seeds (sigmoid-family functions whose exp overflows: NaN before).
* GPU (marked gpu): ~130 random kernels (every issue-39 class at least 4 times); forward
  + derived backward against torch.autograd; zero mismatches (silently wrong gradients)
  and zero crashes. Plus every minimized case kept in regressions.py.

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
NEW_FEATURES = ("dot", "dot_kloop", "while", "tileloop", "pid_decode")
ISSUE39 = gen.ISSUE39_FEATURES
# Features added after the seeds below were chosen (each from its own stream): a seed
# that draws none of them generates the kernel it did before they existed.
# (reused_pointer_name is not one: it respells addresses, the kernels compute the same.)
LATER_FEATURES = {"row_table", "pid_nested", "overwrite_const", "other_active", "saturating"}


def _seeds_using(features, per_feature, start, accept=lambda case: True):
    """The first `per_feature` seeds from `start` whose cases use each of `features`
    (and pass `accept`), passing over those that draw a LATER_FEATURES one not asked
    for (so that each class keeps the kernels chosen for it)."""
    found, seed = {f: [] for f in features}, start
    while any(len(v) < per_feature for v in found.values()):
        case = gen.generate(seed)
        used = set(case.features)
        if used & set(features) and accept(case) and not (used & LATER_FEATURES) - set(features):
            for f in features:
                if f in used and len(found[f]) < per_feature:
                    found[f].append(seed)
        seed += 1
    return sorted({s for v in found.values() for s in v})


# (every issue-39 class at least 4 times, besides those the range draws)
GPU_SEEDS = sorted(set(range(0, 100)) | set(_seeds_using(ISSUE39, 4, 60_000)))


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
    for seed in range(40):
        case = gen.generate(seed, sorted(gen.ALL_FEATURES - set(NEW_FEATURES)))
        assert not set(NEW_FEATURES) & set(case.features), seed
        assert "tl.dot" not in case.source and "while " not in case.source, seed
        # the later features draw from their own stream: turning them off leaves a seed
        # that does not use them as it was
        full = gen.generate(seed)
        if not set(NEW_FEATURES) & set(full.features):
            assert full.source == case.source, seed


def test_issue39_features_are_switchable_and_leave_other_seeds_unchanged():
    for seed in range(40):
        full = gen.generate(seed)
        without = gen.generate(seed, sorted(gen.ALL_FEATURES - set(ISSUE39)))
        assert not set(ISSUE39) & set(without.features), seed
        assert "@triton.autotune" not in without.source and "float(\"inf\")" not in \
            without.source, seed
        if not set(ISSUE39) & set(full.features):
            assert full.source == without.source, seed
    for feature in ISSUE39:   # each one off alone is not used
        for seed in _seeds_using((feature,), 3, 70_000):
            case = gen.generate(seed, sorted(gen.ALL_FEATURES - {feature}))
            assert feature not in case.features, (feature, seed)


# What each feature drawing from a stream of its own writes into a kernel.
OWN_STREAM_MARKS = {"reload_loop": "for _rl in", "row_table": "tl.load(row_order + ",
                    "pid_nested": "pid_m = rest % num_pid_m", "overwrite_const": "mask=mask & (",
                    "reused_pointer_name": "p_reused = ", "other_active": "o = tl.load(",
                    "saturating": "saturated", "dot_wrap": "rmw = rm % M"}


@pytest.mark.parametrize("feature", gen.OWN_STREAM_FEATURES)
def test_own_stream_feature_is_drawn_switchable_and_leaves_other_seeds_unchanged(feature):
    mark, drawn = OWN_STREAM_MARKS[feature], 0
    for seed in range(60):
        full = gen.generate(seed)
        without = gen.generate(seed, sorted(gen.ALL_FEATURES - {feature}))
        assert feature not in without.features and mark not in without.source, seed
        if feature in full.features:
            drawn += 1
            assert mark in full.source, seed
        else:
            assert full.source == without.source, seed
    assert drawn >= 3, (feature, drawn)


def test_row_table_reaches_every_row_layout():
    """row_table in rows, loop, tileloop and persistent rows; the table is a permutation
    of the rows (row blocks), with a sentinel per extra program of a bound early exit."""
    layouts = set()
    for seed in range(300):
        case = gen.generate(seed)
        if "row_table" not in case.features:
            continue
        layouts.add(case.meta["layout"] + ("+persistent" if "persistent" in case.features
                                           else ""))
        (table,) = [p["value"] for p in case.meta["params"] if p["kind"] == "table"]
        s = case.sizes
        rows = -(-s["M"] // s["BM"]) if case.meta["layout"] == "tileloop" else s["M"]
        assert sorted(t for t in table if t < rows) == list(range(rows)), seed
        slots = rows if "persistent" in case.features else case.meta["grid"][0]
        assert len(table) == slots and min(table) >= 0, seed
    assert layouts == {"rows", "loop", "tileloop", "rows+persistent"}, layouts


def test_reused_pointer_name_is_not_in_place():
    """reused_pointer_name: the loads and the stores of a kernel go through one name
    (p_reused), assigned each input's and each output's address in turn, also across
    loops and branches; tritonad's pointer roles still tell inputs (loaded) from outputs
    (stored), so tritonad.autograd takes the outputs (no false in-place refusal)."""
    import tritonad
    from tritonad._source import pointer_roles

    both = 0
    for seed in range(120):
        case = gen.generate(seed)
        if "reused_pointer_name" not in case.features:
            continue
        kernel = case.load().kernel
        roles = {p["name"]: {"in": {"load"}, "out": {"store"}}[p["role"]]
                 for p in case.meta["params"] if p["kind"] == "ptr"}
        found = pointer_roles(tritonad._kernel_grad.unwrap(kernel)[0])
        assert {n: found.get(n) for n in roles} == roles, seed
        through = {role for line in case.source.splitlines() if "p_reused = " in line
                   for role in roles[line.split("= ", 1)[1].split(" ")[0]]}
        if through == {"load", "store"}:
            both += 1
            tritonad.autograd(kernel, outputs=[n for n, r in roles.items() if r == {"store"}])
    assert both >= 5, both


def _plain_reload(case):
    """An fp32 case whose reloads read the same addresses, tiles apart per program."""
    unrelated = {"shifted_load", "overlap", "pid_decode", "transposed", "grid2d", "while"}
    return case.meta["dtype"] == "fp32" and not unrelated & set(case.features)


def test_load_sites_match_in_interpreter_in_both_modes():
    """An input loaded at two places at the same addresses (a reload, a reload inside a
    loop): its gradient matches in the default mode and in deterministic mode (which
    refused these: "loaded at N places ... needs atomics"), plain after barriers."""
    seeds = _seeds_using(("reload", "reload_loop"), 2, 50_000, _plain_reload)
    for schedule in (None, "deterministic"):
        env = _schedule_env(schedule) if schedule else {}
        results = run.run_tasks([dict(seed=s) for s in seeds], "interpret-grad", _workers(2),
                                timeout=300, env=env)
        bad, text = _report(results, ("mismatch", "crash", "gen-error", "fwd-mismatch",
                                      "located-error", "launch-refused"))
        assert not bad, f"{schedule or 'default'}: {len(bad)} of {len(results)}:\n{text}"
        assert all(r["outcome"] == "match" for r in results), [r["outcome"] for r in results]


@pytest.mark.gpu
@requires_gpu
def test_backwards_that_raced_on_a_gpu_gpu():
    """RACED_ON_A_GPU (below) on a GPU under each schedule they raced in: atomics or a
    refused launch where rows overlap, never a wrong gradient."""
    for seed in RACED_ON_A_GPU:
        for options in RACED_UNDER:
            env = {"TRITON_ALWAYS_COMPILE": "1"}
            if options:
                env[run.GRAD_OPTIONS_ENV] = run.json.dumps(options)
            results = run.run_tasks([dict(seed=seed)], "gpu", 1, timeout=600, env=env)
            bad, text = _report(results, ("mismatch", "crash", "gen-error", "fwd-mismatch"))
            assert not bad, f"seed {seed} {options}:\n{text}"


def test_cause_key_is_short_and_linear():
    msg = "x.py:3:4: error: pointer argument 'x_ptr' is both loaded and stored\n" + "a" * 10**6
    assert run.cause_key(msg) == "pointer argument <name> is both loaded and stored"
    assert run.classify_exception(ValueError(msg))[0] == "located-error"
    assert run.classify_exception(RuntimeError(msg))[0] == "crash"
    assert run.classify_exception(ValueError("no location"))[0] == "crash"
    for prefix in run._LAUNCH_REFUSAL:
        refusal = RuntimeError(prefix + " 'dx' without atomics, ...")
        assert run.classify_exception(refusal)[0] == "launch-refused"
    assert run.classify_exception(RuntimeError("tritonad: other"))[0] == "crash"


def test_fuzz_cpu_compile_never_crashes():
    seeds = sorted(set(CPU_SEEDS) | set(_seeds_using(NEW_FEATURES, 2, 30_000)))
    tasks = [dict(seed=s) for s in seeds]
    # always compile: a backward served from Triton's cache would skip the derivation
    results = run.run_tasks(tasks, "cpu", _workers(4), timeout=300,
                            env={"TRITON_ALWAYS_COMPILE": "1"})
    bad, text = _report(results, ("crash", "gen-error"))
    assert not bad, f"{len(bad)} of {len(results)} kernels crashed:\n{text}"


# The schedules other than the default, each fuzzed on its own: the deterministic one
# (programs of their own, no atomics) and fresh gradient buffers (stores where one
# writer is proven).
SCHEDULES = {"deterministic": {"mode": "deterministic"}, "fresh": {"accumulate": False}}


def _schedule_env(schedule):
    """The workers' environment for fuzzing `schedule`, always compiling."""
    return {"TRITON_ALWAYS_COMPILE": "1",
            run.GRAD_OPTIONS_ENV: run.json.dumps(SCHEDULES[schedule])}


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_fuzz_cpu_compile_never_crashes_under_each_schedule(schedule):
    seeds = sorted(set(range(11_000, 11_012)) | set(_seeds_using(("dot", "dot_kloop"), 2, 31_000)))
    results = run.run_tasks([dict(seed=s) for s in seeds], "cpu", _workers(4), timeout=300,
                            env=_schedule_env(schedule))
    bad, text = _report(results, ("crash", "gen-error"))
    assert not bad, f"{len(bad)} of {len(results)} kernels crashed:\n{text}"
    # the options reached the workers: each schedule leaves its mark
    notes = "\n".join(r.get("schedule") or r.get("detail") or "" for r in results)
    mark = "deterministic mode" if schedule == "deterministic" else "overwrite"
    assert mark in notes, notes[:3000]


def test_fuzz_generator_forward_matches_reference_in_interpreter():
    seeds = sorted(set(INTERPRET_SEEDS) | set(_seeds_using(NEW_FEATURES, 2, 40_000)))
    tasks = [dict(seed=s) for s in seeds]
    results = run.run_tasks(tasks, "interpret", _workers(4), timeout=300)
    bad, text = _report(results, ("fwd-mismatch", "gen-error", "crash"))
    assert not bad, f"generated kernels disagree with their references:\n{text}"


# Issue 39's classes (gen.ISSUE39_FEATURES), a few seeds each, on the CPU: the generator
# agrees with its references under the interpreter, every backward derives and compiles
# for sm_90 (located refusals allowed, counted), and where the interpreter runs the
# backward (not bf16: its bf16 arithmetic is wrong) the gradients match.
ISSUE39_SEEDS = _seeds_using(ISSUE39, 2, 50_000)


def _small(case):
    """At most 8000 elements and 64 programs (the interpreter runs programs one by one;
    the reference differentiates each program's outputs)."""
    s = case.sizes
    programs = 1
    for g in case.meta["grid"]:
        programs *= g
    return (s.get("n") or s["M"] * s["N"]) <= 8_000 and programs <= 64


def _interpreted_tasks(dtypes):
    """Two small cases of each class in `dtypes`; shared_weight, hundreds of programs by
    design, as two of its row-layout cases cut to 40 programs (rows) whose row vector is
    still summed across all of them."""
    tasks = [dict(seed=s) for s in _seeds_using(
        ISSUE39, 2, 50_000, lambda c: _small(c) and c.meta["dtype"] in dtypes)
        if "shared_weight" not in gen.generate(s).features]
    rows = _seeds_using(("shared_weight",), 2, 50_000, lambda c: c.meta["layout"] == "rows"
                        and c.meta["dtype"] in dtypes and c.sizes["N"] <= 128)
    return tasks + [dict(seed=s, sizes={"M": 40}) for s in rows]


def _by_feature(results, features):
    """{feature: Counter of outcomes} over the results of cases using it."""
    import collections
    table = {f: collections.Counter() for f in features}
    for r in results:
        for f in set(r["features"]) & set(features):
            table[f][r["outcome"]] += 1
    return table


def _each_class_gets(results, outcome, what):
    """Prints each issue-39 class's count of `outcome` and of located refusals; asserts
    that each class got `outcome` at least once (refusals are counted, not all of it)."""
    table = _by_feature(results, ISSUE39)
    print(f"\nissue-39 classes, {what} ({outcome} / located refusals):")
    for f in ISSUE39:
        print(f"  {f:20s} {table[f][outcome]:3d} {table[f]['located-error']:3d}")
    assert all(table[f][outcome] for f in ISSUE39), table


def test_issue39_classes_forward_matches_reference_in_interpreter():
    results = run.run_tasks(_interpreted_tasks(("fp32", "fp16", "bf16")), "interpret",
                            _workers(2), timeout=300)
    bad, text = _report(results, ("fwd-mismatch", "gen-error", "crash"))
    assert not bad, f"generated kernels disagree with their references:\n{text}"
    assert all(_by_feature(results, ISSUE39)[f]["match"] for f in ISSUE39)


def test_issue39_classes_derive_and_compile_without_crash():
    results = run.run_tasks([dict(seed=s) for s in ISSUE39_SEEDS], "cpu", _workers(2),
                            timeout=300, env={"TRITON_ALWAYS_COMPILE": "1"})
    bad, text = _report(results, ("crash", "gen-error"))
    assert not bad, f"{len(bad)} of {len(results)} kernels crashed:\n{text}"
    _each_class_gets(results, "compiled", "derived and compiled for sm_90")


# Seeds whose backwards raced on an H100 under a change the interpreter matched (plain
# read-add-writes of an input loaded at two places, rows that overlap): 62 and 60007 in
# the default mode, 252 in deterministic mode with accumulate=False.
RACED_ON_A_GPU = (62, 252, 60_007)
RACED_UNDER = ({}, {"mode": "deterministic"}, {"mode": "deterministic", "accumulate": False})


# A row_table kernel (fp32, 13 rows, row = tl.load(row_order + pid).to(tl.int64)) whose
# second column loop stores each chunk at row * stride + cols: the loop's addresses start
# at the loaded row, fixed through its iterations.
ROW_TABLE_LOOP_STORE_SEED = 93

# overwrite_const kernels whose gradients were silently wrong before the constant's store
# took the upstream gradient away from the elements it overwrites: 35 (grid2d fp16, a
# tl.full constant under `if pid_m % 2 == 1:`), 22 (a column loop, a store of
# tl.zeros_like(t) + 0.5 under `if flag > 0:` in each iteration after the chunk's own),
# 65 (rows fp32, a scalar constant stored twice by a loop).
OVERWRITE_CONST_SEEDS = (35, 22, 65)

# other_active kernels whose gradients were silently wrong before a masked load's
# differentiated `other` got the adjoint of the lanes the mask turns off: 7 (rows fp32,
# other=c0 * -1.0, a per-row value, under a sum of squares), 126 (grid2d fp32, other=t3,
# a [BM, 1] value computed from the inputs, under a sum of exp over axis 1), 213 (flat
# fp32, other=t9, a per-program sum, under a plain sum of the padded block).
OTHER_ACTIVE_SEEDS = (7, 126, 213)

# saturating kernels (a sigmoid-family function whose exp overflows fp32 in part of the
# lanes), NaN before exp's partial became exactly 0 where its adjoint is: 4 (rows fp32,
# tl.sigmoid), 30 (grid2d fp32, x * tl.sigmoid(c x)), 60 (rows fp32, a thresholded
# softplus: the unselected branch's log(1 + exp(x)) overflows), 118 (grid2d fp32, a
# hand-written 1 / (1 + tl.exp(-x))).
SATURATING_SEEDS = (4, 30, 60, 118)


@pytest.fixture(scope="module")
def interpreted_gradients():
    """Forward and backward in the interpreter, in one pool of workers, the backward's
    launches checked for data races (run.py --race-check: a race is the outcome `race`):
    (results of the issue-39 classes' cases, {name: result} of the regression cases,
    results of RACED_ON_A_GPU's cases under each schedule they raced in, the result of
    ROW_TABLE_LOOP_STORE_SEED, results of OVERWRITE_CONST_SEEDS, results of
    OTHER_ACTIVE_SEEDS, results of SATURATING_SEEDS)."""
    names = sorted(regressions.CASES)
    tasks = _interpreted_tasks(("fp32", "fp16"))
    raced = [dict(seed=s, grad_options=o) for s in RACED_ON_A_GPU for o in RACED_UNDER]
    results = run.run_tasks(tasks + [dict(source=regressions.CASES[n], name=n) for n in names]
                            + raced + [dict(seed=ROW_TABLE_LOOP_STORE_SEED)]
                            + [dict(seed=s) for s in OVERWRITE_CONST_SEEDS + OTHER_ACTIVE_SEEDS
                               + SATURATING_SEEDS],
                            "interpret-grad", _workers(2), timeout=300,
                            env={run.RACE_CHECK_ENV: "1"})
    named = len(tasks) + len(names)
    saturating = -len(SATURATING_SEEDS)
    other = saturating - len(OTHER_ACTIVE_SEEDS)
    table = other - len(OVERWRITE_CONST_SEEDS) - 1
    return (results[:len(tasks)], dict(zip(names, results[len(tasks):named])),
            results[named:table], results[table], results[table + 1:other],
            results[other:saturating], results[saturating:])


def test_issue39_classes_gradients_match_in_interpreter(interpreted_gradients):
    results = interpreted_gradients[0]
    bad, text = _report(results, ("mismatch", "race", "crash", "gen-error", "fwd-mismatch"))
    assert not bad, (f"{len(bad)} of {len(results)} gradients wrong, racing or crashed:\n"
                     f"{text}\n(reproduce with `python3 test/fuzz/run.py --interpret-grad "
                     f"--race-check --seeds <seed>`)")
    _each_class_gets(results, "match", "gradients compared in the interpreter")


def test_backwards_that_raced_on_a_gpu_do_not_race_in_interpreter(interpreted_gradients):
    """RACED_ON_A_GPU under each schedule they raced in: right and race-free in the
    interpreter (run.py --race-check), or refused with a located error."""
    results = interpreted_gradients[2]
    assert len(results) == len(RACED_ON_A_GPU) * len(RACED_UNDER)
    bad, text = _report(results, ("mismatch", "race", "crash", "gen-error", "fwd-mismatch"))
    assert not bad, text


def test_row_table_loop_store_gradients_match_in_interpreter(interpreted_gradients):
    res = interpreted_gradients[3]
    assert "row_table" in res["features"] and "loop_store" in res["features"], res["features"]
    assert res["outcome"] == "match", f"{res['outcome']}: {res['cause']}\n{res['detail']}"


def _assert_feature_seeds_match(results, seeds, feature):
    """The results of `seeds` (in order) each use `feature` and match."""
    assert [r["seed"] for r in results] == list(seeds)
    for res in results:
        assert feature in res["features"], (res["seed"], res["features"])
        assert res["outcome"] == "match", \
            f"seed {res['seed']}: {res['outcome']}: {res['cause']}\n{res['detail']}"


def test_overwrite_const_gradients_match_in_interpreter(interpreted_gradients):
    """A later store of a constant over some columns of an output (under a branch on the
    program, in a column loop under a runtime flag, twice by a loop): no gradient flows
    from the overwritten elements; right and race-free in the interpreter."""
    _assert_feature_seeds_match(interpreted_gradients[4], OVERWRITE_CONST_SEEDS,
                                "overwrite_const")


def test_other_active_gradients_match_in_interpreter(interpreted_gradients):
    """A masked load padded with a differentiated value (a per-row input, values computed
    from the inputs) and reduced over its padding lanes: the value gets the gradient of
    the lanes the mask turns off; right and race-free in the interpreter."""
    _assert_feature_seeds_match(interpreted_gradients[5], OTHER_ACTIVE_SEEDS, "other_active")


def test_saturating_gradients_match_in_interpreter(interpreted_gradients):
    """sigmoid, x * sigmoid(c x), a thresholded softplus and a hand-written sigmoid of
    values whose exp overflows fp32: the gradient is 0 (or the selected branch's) where
    the adjoint reaching exp underflows, not 0 * inf = NaN."""
    _assert_feature_seeds_match(interpreted_gradients[6], SATURATING_SEEDS, "saturating")


# while-loop kernels (`k = 0; while k < N: ...; k += BLOCK`) that derive since a counted
# while loop is the scf.for it spells: 152 stores inside its while loop (refused before:
# "cannot tell which iteration's value survives"); 0, 27, 152 and 171 were all refused in
# deterministic mode.
COUNTED_WHILE_SEEDS = (0, 27, 152, 171)


def test_counted_while_loops_derive_in_both_modes():
    """Kernels with counted while loops: right and race-free in the interpreter in the
    default mode and in deterministic mode (each uses the while feature)."""
    for schedule in (None, "deterministic"):
        env = dict(_schedule_env(schedule) if schedule else {"TRITON_ALWAYS_COMPILE": "1"},
                   **{run.RACE_CHECK_ENV: "1"})
        results = run.run_tasks([dict(seed=s) for s in COUNTED_WHILE_SEEDS], "interpret-grad",
                                _workers(2), timeout=300, env=env)
        for res in results:
            assert "while" in res["features"], (res["seed"], res["features"])
            assert res["outcome"] == "match", \
                f"{schedule or 'default'} seed {res['seed']}: {res['outcome']}: {res['cause']}"


# Rows with an input loaded one column further too (x[row, c] and x[row, c + 1]): the
# loads' addresses a constant apart, which deterministic mode refused ("its loads read
# different addresses") and the default accumulated with atomics.
SHIFTED_SEEDS = (114, 175, 232, 444)


def test_shifted_loads_derive_in_deterministic_mode():
    """Kernels reading an input at shifted columns of a row per program: plain
    read-add-writes in deterministic mode, right and race-free in the interpreter."""
    env = dict(_schedule_env("deterministic"), **{run.RACE_CHECK_ENV: "1"})
    results = run.run_tasks([dict(seed=s) for s in SHIFTED_SEEDS], "interpret-grad",
                            _workers(2), timeout=300, env=env)
    for res in results:
        assert "shifted_load" in res["features"], (res["seed"], res["features"])
        assert res["outcome"] == "match", f"seed {res['seed']}: {res['outcome']}: {res['cause']}"
        assert "loaded at" in res["schedule"], res["schedule"]


def test_gradient_summed_in_bf16_across_programs_is_a_mismatch():
    """The fp32-shadow tolerance (run.TOL_FP32_SHADOW): a shared weight's gradient,
    summed over 251 programs, emulated with fp32 accumulation (the contract) matches;
    the same sum accumulated in bf16 (each program's contribution rounded into a bf16
    sum, as a bf16 atomic does) is a mismatch -- which the per-addition model of native
    bf16 shadows accepts."""
    case = gen.generate(96, sorted(gen.ALL_FEATURES - LATER_FEATURES))
    assert {"shared_weight", "bf16", "rows"} <= set(case.features)
    assert case.meta["grid"][0] > 200 and any(p["name"] == "w0_ptr" for p in case.meta["params"])
    module = case.load()
    fp32 = run._run_calibrate(case, module, "fp32")
    assert fp32["outcome"] == "match", fp32
    summed_in_bf16 = run._run_calibrate(case, module, "fp32", "bf16")
    assert summed_in_bf16["outcome"] == "mismatch", summed_in_bf16
    assert summed_in_bf16["detail"].startswith("dw0_ptr"), summed_in_bf16
    assert run._run_calibrate(case, module, "native")["outcome"] == "match"


def test_feature_table_groups_outcomes():
    import io
    results = [dict(seed=1, outcome="match", features=["pad_inf"], cause=""),
               dict(seed=2, outcome="located-error", features=["pad_inf", "exp"], cause="c"),
               dict(seed=3, outcome="mismatch", features=["pad_inf"], cause="values",
                    layout="rows", dtype="fp32", detail="dx"),
               dict(seed=4, outcome="gen-error", features=["exp"], cause="g")]
    out = io.StringIO()
    run.print_summary(run.summarize(results), results, out)
    rows = {line.split()[0].lstrip("*"): line.split()[1:] for line in
            out.getvalue().split("by feature")[1].splitlines()[2:] if line.strip()
            and not line.strip().startswith("(")}
    #                 match refused mismatch crash other
    assert rows["pad_inf"] == ["1", "1", "1", "0", "0"], rows
    assert rows["exp"] == ["0", "1", "0", "1", "0"], rows


def test_rounding_model_bounds_cancelling_load_sites():
    """Seed 2085 (fp16): x0 / x0-reloaded, two load sites whose large contributions cancel.
    An emulated backward adding each (program, site) contribution into the fp16 shadow on
    its own (two roundings of large values; 5.6e-4 off on a 0.031 scale, as a GPU run
    found) is within the per-site bound, and beyond the earlier per-program one."""
    import torch

    case = gen.generate(2085)
    assert {"reload", "fp16"} <= set(case.features)
    module = case.load()
    values, leaves, outs, ctx, gen_ = run._setup(case, module, "cpu")
    _, up = run._upstream(case, outs, gen_)
    ref = run.reference_grads(leaves, outs, up, retain=True)
    assert [n for n, _, _ in ctx.sites].count("x0_ptr") == 2
    l32, o32, c32 = run.reference(module, values, "cpu", torch.float32)
    shadow = torch.zeros(ref["x0_ptr"].numel(), dtype=torch.float16)
    for name, index, g in run.additions(l32, o32, up, c32):
        if name == "x0_ptr":
            shadow.index_put_((index,), g.to(torch.float16), accumulate=True)
    err = (shadow.double() - ref["x0_ptr"]).abs()
    u, eta = run.UNIT_ROUNDOFF["fp16"], run.UNDERFLOW["fp16"]
    total, count = run.site_contributions(leaves, outs, up, ctx)["x0_ptr"]
    # without sites: one addition per program and input, the earlier model
    old_total, old_count = run.site_contributions(leaves, outs, up, None)["x0_ptr"]
    new_bound = run._gamma(count + 1, u) * total + (1 + run._gamma(count, u)) * count * eta
    old_bound = u * (old_count + 1) * old_total
    assert err.max() > 4e-4
    assert (err <= new_bound).all()
    assert not (err <= old_bound + 1e-3 * ref["x0_ptr"].abs().max()).all()
    res = run.run_case(dict(seed=2085), "calibrate")
    assert res["outcome"] == "match" and res["acc_used"] <= 1.0, res


def test_all_zero_gradient_within_rounding_is_not_a_mismatch():
    """Seed 6085 (bf16): three programs add +-5e-3 into each dw0 element, whose exact sum
    is 9e-6; in bf16 they sum to exactly 0 (a GPU run reported "zero gradient"). Zero is
    within the accumulation bound there, so it matches; a zero where the tolerance
    excludes 0 stays a mismatch of kind "zero"."""
    import torch

    res = run.run_case(dict(seed=6085), "calibrate")
    assert res["outcome"] == "match" and res["acc_used"] <= 1.0, res
    ref = torch.tensor([1.0, -0.5])
    assert run.compare(torch.zeros(2, dtype=torch.float64), ref.double(), (1e-3, 1e-3))[0] == "zero"
    assert run.compare(torch.zeros(2, dtype=torch.float64), ref.double(), (1e-3, 1e-3),
                       torch.full((2,), 2.0, dtype=torch.float64)) is None


@pytest.mark.gpu
@requires_gpu
def test_fuzz_gpu_no_silently_wrong_gradient():
    """GPU_SEEDS holds every issue-39 class (at least 4 seeds each); fp16 / bf16 inputs get
    fp32 shadows, so their gradients are held to an fp32 accumulation rounded once."""
    tasks = [dict(seed=s) for s in GPU_SEEDS]
    results = run.run_tasks(tasks, "gpu", _workers(16), timeout=600,
                            env={"TRITON_ALWAYS_COMPILE": "1"})
    summary = run.summarize(results)
    bad, text = _report(results, ("mismatch", "crash", "gen-error", "fwd-mismatch"))
    assert not bad, (f"{summary['counts']}\n{text}\n(reproduce and minimize with "
                     f"`python3 test/fuzz/run.py --seeds <seed>`)")


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_fuzz_gpu_no_silently_wrong_gradient_under_each_schedule(schedule):
    tasks = [dict(seed=s) for s in range(200, 260)]
    results = run.run_tasks(tasks, "gpu", _workers(16), timeout=600,
                            env=_schedule_env(schedule))
    summary = run.summarize(results)
    bad, text = _report(results, ("mismatch", "crash", "gen-error", "fwd-mismatch"))
    assert not bad, (f"{summary['counts']}\n{text}\n(reproduce and minimize with "
                     f"`python3 test/fuzz/run.py --seeds <seed> --grad-options "
                     f"'{run.json.dumps(SCHEDULES[schedule])}'`)")


def _regressions(mode):
    """The regression cases, those known to fail in `mode` as xfail(strict=True)."""
    params = []
    for name in sorted(regressions.CASES):
        reason, modes = regressions.KNOWN_FAILURES.get(name, (None, ()))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if mode in modes else []
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name", _regressions("gpu"))
def test_fuzz_regression(name):
    res = run.run_case(dict(source=regressions.CASES[name], name=name), "gpu")
    assert res["outcome"] in ("match", "skipped"), f"{res['outcome']}: {res['cause']}\n{res['detail']}"


@pytest.mark.parametrize("name", _regressions("interpret-grad"))
def test_fuzz_regression_interpreted(name, interpreted_gradients):
    """A regression case's gradients in the interpreter (bf16 cases are skipped there)."""
    res = interpreted_gradients[1][name]
    assert res["outcome"] in ("match", "skipped"), f"{res['outcome']}: {res['cause']}\n{res['detail']}"


# Kernels whose gradients the default mode adds with atomics because programs may meet
# (rows read from a table, tiles a runtime stride lets overlap): deterministic mode sums
# them through scatter slots, and derives wherever the default does (issue 41). Not bf16
# (the interpreter's bf16 arithmetic is wrong).
SCATTER_SEEDS = _seeds_using(("row_table", "overlap"), 4, 70_000,
                             accept=lambda case: "bf16" not in case.features)


def test_deterministic_mode_matches_wherever_the_default_does_interpreted():
    tasks = [dict(seed=s) for s in SCATTER_SEEDS]
    default = run.run_tasks(tasks, "interpret-grad", _workers(2), timeout=300,
                            env={"TRITON_ALWAYS_COMPILE": "1"})
    env = dict(_schedule_env("deterministic"), **{run.RACE_CHECK_ENV: "1"})
    deterministic = {r["seed"]: r for r in run.run_tasks(tasks, "interpret-grad", _workers(2),
                                                         timeout=300, env=env)}
    matched = [r["seed"] for r in default if r["outcome"] == "match"]
    assert matched, default
    for seed in matched:
        res = deterministic[seed]
        assert res["outcome"] == "match", f"seed {seed}: {res['outcome']}: {res['cause']}"
    assert any("scatter slots" in (deterministic[s].get("schedule") or "") for s in matched)
