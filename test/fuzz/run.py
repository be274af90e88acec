"""Differential fuzzing of tritonad.grad against torch.autograd.

For each seed: generate a random kernel and its torch reference (gen.py), derive
``tritonad.grad``, launch forward + backward on the GPU, and compare every input
gradient with ``torch.autograd.grad`` of the reference (float64, same rounded inputs,
random upstream gradients). Outcomes:

  match          every gradient within tolerance
  mismatch       a silently wrong gradient (the worst outcome): wrong values, NaN/inf where
                 torch is finite, a zero or missing gradient, a write outside a buffer or
                 into a primal buffer
  race           (--race-check, interpreter only) the backward's launches race: two
                 accesses to one address a GPU does not order (test/interpreter_races.py),
                 as bad as a mismatch: the interpreter's serial order hides what a GPU's
                 order may compute
  located-error  tritonad refused with a DifferentiationError/ValueError whose message has
                 a source location; grouped by a short cause key
  launch-refused a backward refused the launch's arguments: deterministic mode's, under which
                 programs may write the same gradient addresses, or a loop's stores whose
                 row stride is an argument, under which rows overlap (checked per launch): safe;
                 right where they do (overlapping rows, an input a 2-D grid's programs
                 share along an axis its address ignores), a false refusal where the check
                 is conservative (seed 208 under --grad-options '{"mode": "deterministic"}'
                 was one until a block pointer's boundary_check bounded its lanes)
  crash          any other exception (or a dead / hung worker): a bug
  gen-error      the generated forward kernel or reference itself failed (a bug here)
  fwd-mismatch   the forward kernel disagrees with its reference (a bug here, or Triton's)
  skipped        no data drawn kept every max/min/where/if decision away from a tie
  compiled       (--cpu-only) forward and backward compiled to PTX; reference ran

Modes: default GPU; ``--cpu-only`` derives and compiles to PTX for sm_90 without a GPU
(the launch path's hidden parameters present, so re-parallelized parts are derived and
compiled as at a launch) and runs the reference on the CPU; ``--interpret`` runs the
forward kernels with Triton's interpreter on the CPU against their references (checks
the generator); ``--interpret-grad`` runs forward and derived backward in the
interpreter and compares the gradients as on a GPU (bf16 cases skipped: the
interpreter's bf16 math is wrong);
``--calibrate`` emulates the backward's accumulation with float32 torch gradients (each
addition rounded into the shadow dtype, see below) against the float64 reference (how
much of the tolerance rounding alone uses);
``--selftest [drop|scale|nan|stray|oob]`` runs the GPU path on the CPU with a torch
"oracle" backward, correct or wrong on purpose (checks this runner's plumbing and that
wrong gradients are caught); ``--export DIR`` derives and compiles every backward to a
sm_90 cubin here, ``--imported DIR`` runs the GPU comparison on those cases elsewhere
without importing tritonad (for a GPU machine where tritonad's compiled core does not
load, e.g. another Python version). ``--cpu-only --dump-derived DIR`` also writes each
case's derived TTIR, schedule and launch records (or its error) to DIR, for a `diff -r`
of two builds of the core.

  PYTHONPATH=python python3 test/fuzz/run.py --cpu-only --count 200
  python3 test/fuzz/run.py --count 200 --grad-options '{"mode": "deterministic"}'   # a schedule
  python3 test/fuzz/run.py --count 500 --workers 16 --json fuzz.json      # on a GPU
  python3 test/fuzz/run.py --seeds 0:2000 --jobs 16 --always-compile --json fuzz.json
  python3 test/fuzz/run.py --seeds 0:20000 --require pad_inf --jobs 16    # one class only

The summary ends with a table per feature of match / refused / mismatch / crash (issue
39's classes, gen.ISSUE39_FEATURES, first). Launches are a user's: runtime arguments by
position, constexprs set by autotune configs, heuristics or defaults left out, the grid a
callable of META where sizes are tuned; an autotuned case whose configs change the layout
gets the generated config (its reference's) through the autotuner's own key and cache
(`pin_autotune`), one whose configs differ in num_warps / num_stages only is tuned for
real on a GPU. The backward is launched the same way, after the forward (an autotuned
forward's backward runs with the config it chose).
  PYTHONPATH=python python3 test/fuzz/run.py --export /tmp/cases --count 600   # here,
  python3 test/fuzz/run.py --imported /tmp/cases --workers 16                  # there

Data: inputs uniform in [-2, 2] or [0.5, 2] (rounded to the case dtype), upstream
gradients uniform in [-1, 1] everywhere in each output buffer (gaps and never-written
rows too: the backward must ignore them); input shadows are fp32 (for fp16 / bf16 inputs
too, unless --lowp-shadows native: see TOL_FP32_SHADOW) and pre-filled with random
values (the gradient must be ADDED); every buffer sits between guard bands (a write
outside is a mismatch), and the backward must leave the forward's buffers untouched
(row_table's int32 table of rows too: a parameter of kind "table", not differentiated).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import re
import sys
import time
import traceback
import warnings

FUZZ_DIR = os.path.dirname(os.path.abspath(__file__))
TEST_DIR = os.path.dirname(FUZZ_DIR)
for _p in (FUZZ_DIR, TEST_DIR):
    if _p not in sys.path:
        sys.path.insert(0, _p)

# Gradient tolerance, per element e of an input's gradient (`tolerance_slack`):
#   rtol * |ref| + afrac * max|ref|                      (rtol, afrac) = TOL[dtype]
#   + NOISE_FACTOR * max|torch float32 grad - float64 grad|      float32 math noise
#   + gamma_(k+1) * sum_i |c_i| + (1 + gamma_k) k eta    the shadow's accumulation (below)
#   + gamma_k * |f|                                      fp32: the shadow starts at f != 0
#   + (u |dC| + eta) @ |B|^T   (|A|^T @ (u |dC| + eta))  fp16/bf16 tl.dot (below)
# with u = UNIT_ROUNDOFF[dtype], eta = UNDERFLOW[dtype] (a rounding's absolute error below
# the normal range), gamma_k = k u / (1 - k u).
#
# The accumulation model. The backward adds into an input's shadow once per (program, load
# site, lane): every tl.load / block-pointer load of the input pointer in the kernel is an
# accumulation of its own (atomic, or read-add-write), and a lane of a site adds one value.
# A value c_i is computed in float32, rounded to the shadow dtype (error <= u |c_i| + eta)
# and added, the sum rounded to the shadow dtype. With k additions into element e,
# recursive summation (Higham, Accuracy and Stability of Numerical Algorithms, sec. 4.2)
# gives |computed - exact| <= u sum|c_i| + k eta + gamma_k (|f| + (1 + u) sum|c_i| + k eta)
# <= gamma_(k+1) sum|c_i| + (1 + gamma_k) k eta + gamma_k |f|, in any order (atomics):
# rigorous, given the c_i; their own float32 errors are the noise term's. The reference
# supplies k and the c_i: it reads every load site through `R.load` (fuzz_ref), a copy of
# the input per site (the reference gradient stays their sum), and the gradient of program
# p's outputs with respect to site s is what p adds through s (`additions`), lane by lane
# for full-shape inputs (two lanes of one tile reading one element are two additions:
# overlapping rows), one value per program for a row / column vector or a scalar (its
# adjoint is reduced in float32 in registers first). So sites that cancel within a program
# count at full magnitude: x[offs] and x[offs + 1], or x / x-reloaded, add large opposite
# values whose small sum is rounded twice. (The earlier per-program bound,
# u (k + 1) sum_p |sum_s c_(p,s)|, was not a bound there: seed 2085, fp16, x0 / x0 reloaded,
# 5.6e-4 off on a 0.031 scale on the GPU against a 1.2e-4 limit; `--calibrate` reproduces
# the 5.6e-4 on the CPU.) Counting too many additions only loosens the bound: tritonad
# merges a load that repeats an earlier one exactly (same addresses, mask, padding, no
# store in between) into one site, whose one addition of c1 + c2 errs by at most
# u |c1 + c2| + eta, within the two-site bound. Not modeled: a load executed in several
# iterations of a loop at the same addresses (one site, several additions); the generator
# emits none. A reference without sites (an old regression module) falls back to one site
# per input and program.
#
# Low-precision dots: tritonad's backward of tl.dot(a, b) on fp16/bf16 operands rounds the
# float32 adjoint dC of the product to the operand dtype before dA = dC b^T and
# dB = a^T dC (each accumulated in float32): a perturbation of at most u |dC| + eta per
# element of dC, hence the last term (`dot_rounding`, from the dots `R.dot` records).
#
# `--calibrate` checks the model: it emulates exactly these additions (float32 values,
# rounded to the shadow dtype, added in it) and reports tol_used and acc_used (the largest
# |emulated - exact| / accumulation bound, for fp16 / bf16; the emulated values carry
# their own float32 error, the noise term's share, so this can approach 1 where that error
# is comparable to a subnormal's rounding: at most 0.986 on seeds 0-299, seed 142).
#
# fp32 shadows for fp16 / bf16 inputs (the default; `--lowp-shadows native` keeps shadows
# of the input's dtype): tritonad.grad accepts them, tritonad.autograd allocates them where
# programs share a gradient, and the contract (issue 39) is that sums across programs,
# loop iterations and reductions are accumulated in fp32 and rounded once. The kernels'
# math is fp32 from the loaded (rounded) inputs, so such a gradient is as exact as an fp32
# case's: the accumulation term above with the fp32 u and eta, and TOL_FP32_SHADOW, about
# one rounding of the input's dtype, instead of TOL. A gradient summed in the input's
# dtype over hundreds of programs (shared_weight) errs by about u sqrt(k) of its scale,
# far beyond it (test_fuzz.py checks that an emulated bf16 sum is reported).
TOL = {"fp32": (1e-4, 1e-4), "fp16": (2e-3, 1e-3), "bf16": (1.6e-2, 8e-3)}
TOL_FP32_SHADOW = {"fp16": (2.0 ** -11, 2.0 ** -12), "bf16": (2.0 ** -8, 2.0 ** -9)}
LOWP_SHADOWS_ENV = "TRITONAD_FUZZ_LOWP_SHADOWS"
UNIT_ROUNDOFF = {"fp32": 2.0 ** -24, "fp16": 2.0 ** -11, "bf16": 2.0 ** -8}
UNDERFLOW = {"fp32": 2.0 ** -150, "fp16": 2.0 ** -25, "bf16": 2.0 ** -134}   # half the
                                       # smallest subnormal: a rounding's absolute error there
NOISE_FACTOR = 30.0
FWD_TOL = {"fp32": (2e-4, 2e-4), "fp16": (2e-3, 2e-3), "bf16": (1.6e-2, 1.6e-2)}
GAP_MIN = 3e-5        # selections (max/min/where/if) closer to a tie: data re-drawn
                      # (values are <= 12 in magnitude: ~20 fp32 ulps)
DATA_TRIES = 8
GUARD = 64            # elements of guard band around every buffer (keeps 16B alignment)
OUTCOMES = ("match", "compiled", "mismatch", "race", "located-error", "launch-refused",
            "crash", "gen-error", "fwd-mismatch", "skipped")
# The per-feature table's columns (outcomes grouped).
FEATURE_TABLE = {"match": ("match", "compiled"), "refused": ("located-error", "launch-refused"),
                 "mismatch": ("mismatch", "race"), "crash": ("crash", "gen-error", "fwd-mismatch")}
# What a launch raises when its arguments break a condition the backward was derived
# under (deterministic mode: each address written by one program; a loop's iterations
# storing rows apart where the row stride is an argument; checked per launch).
_LAUNCH_REFUSAL = ("tritonad: mode='deterministic' writes the gradient",
                   "tritonad: this launch breaks a condition its backward was derived under")
_LOCATION = re.compile(r":\d+:\d+: (?:error|warning|note|remark)")
_RENDER_LOCATION = re.compile(r"cannot render \S+ at \S+:\d+:\d+")


def shadow_dtype(meta, policy=None):
    """The dtype name of the input shadows (see TOL_FP32_SHADOW): fp32 for fp16 / bf16
    inputs unless the policy (LOWP_SHADOWS_ENV, --lowp-shadows) is "native"."""
    policy = policy or os.environ.get(LOWP_SHADOWS_ENV) or "fp32"
    if policy not in ("fp32", "native"):
        raise ValueError(f"{LOWP_SHADOWS_ENV}={policy!r}: fp32 or native")
    return "fp32" if policy == "fp32" else meta["dtype"]


def grad_tolerance(meta, shadow=None):
    """(rtol, afrac) of the gradient comparison for shadows of dtype `shadow`."""
    shadow = shadow or shadow_dtype(meta)
    if meta["dtype"] != "fp32" and shadow == "fp32":
        return TOL_FP32_SHADOW[meta["dtype"]]
    return TOL[meta["dtype"]]


# ---------------------------------------------------------------------------
# classification
# ---------------------------------------------------------------------------

def cause_key(message: str) -> str:
    """A short key for grouping errors: the first `error:` line, with quoted names and
    numbers replaced (string scans only: linear in the message)."""
    text = message[:200_000]
    at = text.find("error: ")
    line = text[at + 7:] if at >= 0 else text
    line = line.split("\n", 1)[0]
    out, i, n = [], 0, len(line)
    while i < n:
        ch = line[i]
        if ch in "'\"`":
            j = line.find(ch, i + 1)
            if j < 0:
                out.append(line[i:])
                break
            out.append("<name>")
            i = j + 1
        else:
            out.append(ch)
            i += 1
    key = re.sub(r"\d+", "N", "".join(out)).strip()
    return key[:100] or "<empty message>"


def classify_exception(exc: BaseException):
    """(outcome, cause) of an exception raised while deriving / compiling the backward."""
    msg = str(exc)
    if isinstance(exc, ValueError) and _LOCATION.search(msg[:200_000]):
        return "located-error", cause_key(msg)
    if isinstance(exc, RuntimeError) and msg.startswith(_LAUNCH_REFUSAL):
        return "launch-refused", cause_key(msg)
    if type(exc).__name__ == "RenderError" and _RENDER_LOCATION.search(msg[:2000]):
        # (under the interpreter the backward runs as rendered Python: an op with no
        # Python spelling is refused, naming it and the kernel's line)
        return "located-error", cause_key(re.sub(r" at \S+:\d+:\d+", " at <line>", msg[:2000]))
    first = msg.strip().split("\n", 1)[0][:160]
    return "crash", f"{type(exc).__name__}: {first}"


# ---------------------------------------------------------------------------
# compiling for sm_90 without a GPU
# ---------------------------------------------------------------------------

def _types(meta):
    types, values = {}, {}
    for p in meta["params"]:
        if p["kind"] == "ptr":
            types[p["name"]] = "*" + meta["dtype"]
            types["d" + p["name"]] = "*" + meta["dtype"]
        elif p["kind"] == "table":   # (not in _derive's pointers: no shadow)
            types[p["name"]] = "*i32"
        else:
            types[p["name"]] = p["kind"]
            values[p["name"]] = p["value"]
    return types, values


def compile_ptx(fn, meta, arg_names, hidden=False):
    """triton.compile for GPUTarget("cuda", 90, 32), specialised like a launch would be:
    integer arguments equal to 1 become constants, pointers and integers divisible by 16
    get Triton's divisibility hint. With `hidden`, a derived backward's hidden
    parameters (its workspace, tables and scratch: the launch path's) are present as
    at a launch of the user's forward, so its re-parallelized parts are derived and
    compiled too; without, they are left out (--export: the importer launches with
    the launch signature only)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from tritonad._partial import WORKSPACE_TYPES
    from tritonad._residuals import RESIDUALS

    fn = jit_of(fn)
    # (a parameter named like a launch keyword has another name in a derived backward)
    renamed = getattr(fn, "tritonad_renamed", None) or {}
    types, values = _types(meta)
    signature, consts, attrs = {}, {}, {}
    position = {name: i for i, name in enumerate(fn.arg_names)}
    for name in arg_names:
        inner = renamed.get(name, name)
        i = position[inner]
        if name in meta["constexprs"]:
            signature[inner] = "constexpr"
            consts[inner] = meta["constexprs"][name]
        elif name in values and types[name] == "i32" and values[name] == 1:
            signature[inner] = "constexpr"
            consts[inner] = 1
        else:
            signature[inner] = types[name]
            if types[name].startswith("*") or (types[name] == "i32" and values[name] % 16 == 0):
                attrs[(i,)] = [["tt.divisibility", 16]]
    for inner in fn.arg_names if hidden else ():
        if inner in WORKSPACE_TYPES and inner not in signature:
            signature[inner] = WORKSPACE_TYPES[inner]
            if signature[inner].startswith("*"):
                attrs[(position[inner],)] = [["tt.divisibility", 16]]
        elif inner == RESIDUALS and inner not in signature:
            # (no residuals: the user launches the forward, tritonad.autograd does not)
            signature[inner] = "constexpr"
            consts[inner] = None
    return triton.compile(ASTSource(fn, signature, consts, attrs),
                          target=GPUTarget("cuda", 90, 32))


def jit_of(kernel):
    """The @triton.jit function under autotune / heuristics wrappers (and a derived
    backward's wrappers of them)."""
    while type(kernel).__name__ in ("Autotuner", "Heuristics", "FollowsForwardConfig"):
        kernel = kernel.fn
    return kernel


def launch_constexprs(meta):
    """The constexprs a user passes at launch: not those an autotune config or a
    heuristic sets, nor those left at their defaults."""
    return dict(meta.get("launch_constexprs", meta["constexprs"]))


def launch_grid(module):
    """The launch grid: the module's callable of META where sizes are tuned or computed
    by heuristics, else META's tuple."""
    return getattr(module, "launch_grid", None) or tuple(module.META["grid"])


def pin_autotune(module, real_tuning):
    """An autotuned case's reference is written for the generated config: where the
    configs change the layout (or no GPU benchmarks them), the autotuner's benchmark is
    replaced so that it picks that config; its key, cache and launch stay Triton's."""
    tune = module.META.get("autotune")
    if not tune or (real_tuning and tune["layout_free"]):
        return
    chosen = module.CONFIGS[tune["chosen"]].all_kwargs()

    def bench(*args, config, **kwargs):
        return [0.0, 0.0, 0.0] if config.all_kwargs() == chosen else [1.0, 1.0, 1.0]

    module.kernel._bench = bench


# ---------------------------------------------------------------------------
# data and comparison
# ---------------------------------------------------------------------------

def _torch_dtype(name):
    import torch
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


class Buffer:
    """A tensor inside a guard band: `base` is what the kernel gets."""

    def __init__(self, shape, dtype, device, fill, gen):
        import torch
        numel = math.prod(shape)
        self.store = torch.empty(numel + 2 * GUARD, dtype=dtype, device=device)
        guard = (torch.rand(2 * GUARD, generator=gen, dtype=torch.float64) * 100 + 100)
        self.store[:GUARD] = guard[:GUARD].to(dtype).to(device)
        self.store[GUARD + numel:] = guard[GUARD:].to(dtype).to(device)
        self.base = self.store[GUARD:GUARD + numel].view(*shape)
        self.base.copy_(fill.to(dtype).to(device))
        self.snapshot = self.store.clone()

    def guards_intact(self):
        import torch
        n = self.store.numel()
        return (torch.equal(self.store[:GUARD], self.snapshot[:GUARD]) and
                torch.equal(self.store[n - GUARD:], self.snapshot[n - GUARD:]))

    def unchanged(self):
        import torch
        return torch.equal(self.store, self.snapshot)


def _uniform(shape, lo, hi, gen):
    import torch
    return torch.rand(*shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo


def draw_inputs(meta, attempt):
    """CPU float64 values (already rounded to the case dtype) of every input pointer."""
    import torch
    from gen import DOMAINS

    gen = torch.Generator().manual_seed(meta["seed"] * 1009 + attempt)
    dt = _torch_dtype(meta["dtype"])
    out = {}
    for p in meta["params"]:
        if p["kind"] == "ptr" and p["role"] == "in":
            lo, hi = DOMAINS[p["domain"]]
            out[p["name"]] = _uniform(p["shape"], lo, hi, gen).to(dt).double()
    return out, gen


def reference(module, values, device, dtype=None):
    """Runs the reference on leaves made from `values`; returns (leaves, outputs, ctx)."""
    import torch
    import fuzz_ref as R

    dtype = dtype or torch.float64
    leaves = {k: v.to(device=device, dtype=dtype).requires_grad_() for k, v in values.items()}
    scalars = {p["name"]: p["value"] for p in module.META["params"] if p["kind"] != "ptr"}
    ctx = R.Ctx()
    outs = module.reference(leaves, scalars, ctx)
    return leaves, outs, ctx


def _vwp(out):
    """(value, written, program ids or None) of a reference output."""
    return (tuple(out) + (None,))[:3]


def _loss(outs, upstream, program=None):
    """sum over outputs of value * upstream * written (program: only the elements that
    program writes); 0 when nothing is differentiable."""
    loss = 0
    for name, out in outs.items():
        value, written, pid = _vwp(out)
        if program is not None:
            written = written & (pid == program)
        loss = loss + (value * upstream[name].to(value) * written).sum()
    return loss


def reference_grads(leaves, outs, upstream, program=None, retain=False):
    """d(sum over outputs of value * upstream * written)/d(leaves); zeros where unused.
    program: only the elements written by that program."""
    import torch

    loss = _loss(outs, upstream, program)
    names = list(leaves)
    if not torch.is_tensor(loss) or not loss.requires_grad:
        return {n: torch.zeros_like(leaves[n]).detach() for n in names}
    grads = torch.autograd.grad(loss, [leaves[n] for n in names], allow_unused=True,
                                retain_graph=retain)
    return {n: (g if g is not None else torch.zeros_like(leaves[n])).detach()
            for n, g in zip(names, grads)}


def _programs(outs):
    """The ids of the programs that write some output element (None: ids unknown)."""
    import torch

    pids = set()
    for out in outs.values():
        value, written, pid = _vwp(out)
        if pid is None:
            return None
        pids.update(torch.unique(pid[written]).tolist())
    return sorted(pids)


def additions(leaves, outs, upstream, ctx):
    """The additions the backward makes into the input shadows, as the reference models
    them: yields (input name, flat buffer indices, values), one batch per (program, load
    site), entry i being the addition of values[i] into element indices[i] (one per lane
    of the site; zeros are no addition). The gradient of a leaf that its sites do not
    account for (a direct use of T[...], as in a module written before sites existed) is
    yielded as one more site per program read at the leaf's own elements, the coarser
    per-program model. Nothing when the outputs carry no program ids."""
    import torch

    pids = _programs(outs)
    if pids is None:
        return
    sites = list(ctx.sites) if ctx is not None else []
    names = list(leaves)
    targets = [t for _, t, _ in sites] + [leaves[n] for n in names]
    for p in pids:
        loss = _loss(outs, upstream, p)
        if not torch.is_tensor(loss) or not loss.requires_grad:
            continue
        grads = torch.autograd.grad(loss, targets, allow_unused=True, retain_graph=True)
        mapped = {n: torch.zeros(leaves[n].numel(), dtype=leaves[n].dtype,
                                 device=leaves[n].device) for n in names}
        size = {n: torch.zeros_like(mapped[n]) for n in names}
        for (n, _, index), g in zip(sites, grads[:len(sites)]):
            if g is None:
                continue
            g = g.detach().reshape(-1)
            index = index.reshape(-1)
            mapped[n].index_add_(0, index, g)
            size[n].index_add_(0, index, g.abs())
            yield n, index, g
        for n, g in zip(names, grads[len(sites):]):
            if g is None:
                continue
            rest = g.detach().reshape(-1) - mapped[n]
            # float64 rounding of the sum over sites is not a direct use
            eps = 1e-9 if rest.dtype == torch.float64 else 1e-4
            rest = torch.where(rest.abs() > eps * (size[n] + g.detach().reshape(-1).abs()),
                               rest, torch.zeros_like(rest))
            if bool((rest != 0).any()):
                yield n, torch.arange(rest.numel(), device=rest.device), rest


def site_contributions(leaves, outs, upstream, ctx):
    """Per input: (sum over the additions into each shadow element of |added value|,
    number of those additions), elementwise in the buffer's shape; None when the outputs
    carry no program ids."""
    import torch

    if _programs(outs) is None:
        return None
    total = {n: torch.zeros(v.numel(), dtype=v.dtype, device=v.device)
             for n, v in leaves.items()}
    count = {n: torch.zeros_like(t) for n, t in total.items()}
    for n, index, g in additions(leaves, outs, upstream, ctx):
        total[n].index_add_(0, index, g.abs())
        count[n].index_add_(0, index, (g != 0).to(total[n].dtype))
    return {n: (total[n].reshape(leaves[n].shape), count[n].reshape(leaves[n].shape))
            for n in leaves}


def unmodeled_loads(leaves, outs, upstream, ctx):
    """Inputs whose gradient the reference's load sites do not account for (a use of
    T[...] that is not a `R.load`): a generator bug that would make the rounding bound
    coarser than the kernel's accumulation."""
    import torch

    sites = list(ctx.sites)
    names = list(leaves)
    loss = _loss(outs, upstream)
    if not torch.is_tensor(loss) or not loss.requires_grad:
        return []
    grads = torch.autograd.grad(loss, [t for _, t, _ in sites] + [leaves[n] for n in names],
                                allow_unused=True, retain_graph=True)
    mapped = {n: torch.zeros(leaves[n].numel(), dtype=leaves[n].dtype,
                             device=leaves[n].device) for n in names}
    for (n, _, index), g in zip(sites, grads[:len(sites)]):
        if g is not None:
            mapped[n].index_add_(0, index.reshape(-1), g.detach().reshape(-1))
    bad = []
    for n, g in zip(names, grads[len(sites):]):
        if g is None:
            continue
        g = g.detach().reshape(-1)
        if (g - mapped[n]).abs().max() > 1e-9 * (g.abs().max() + 1e-300):
            bad.append(n)
    return bad


def dot_rounding(leaves, outs, upstream, ctx, u, eta=0.0):
    """Per input (elementwise, buffer shape): the bound (u |dC| + eta) @ |B|^T for A and
    |A|^T @ (u |dC| + eta) for B of every recorded dot C = A @ B, mapped to the buffer
    elements A's / B's load sites read: a low-precision tl.dot's backward rounds C's
    float32 adjoint dC to the operand dtype (relative error u, absolute eta where it
    underflows) before its two dots."""
    import torch

    dots = list(ctx.dots)
    loss = _loss(outs, upstream)
    if not dots or not torch.is_tensor(loss) or not loss.requires_grad:
        return {}
    grads = torch.autograd.grad(loss, [c for _, _, c in dots], allow_unused=True,
                                retain_graph=True)
    site_of = {id(t): (n, index) for n, t, index in ctx.sites}
    extra = {}
    for (a, b, _), dc in zip(dots, grads):
        if dc is None:
            continue
        dc = u * dc.detach().abs() + eta
        for operand, bound in ((a, dc @ b.detach().abs().T), (b, a.detach().abs().T @ dc)):
            if id(operand) not in site_of:
                raise ValueError("a dot operand that is not a load site (R.load)")
            n, index = site_of[id(operand)]
            e = extra.setdefault(n, torch.zeros(leaves[n].numel(), dtype=bound.dtype,
                                                device=bound.device))
            e.index_add_(0, index.reshape(-1), bound.reshape(-1))
    return {n: e.reshape(leaves[n].shape) for n, e in extra.items()}


def _gamma(k, u):
    """gamma_k = k u / (1 - k u) elementwise (inf where k u >= 1)."""
    import torch

    x = k * u
    return torch.where(x < 1, x / (1 - x).clamp_min(1e-300), torch.full_like(x, math.inf))


def tolerance_slack(meta, module, values, leaves, outs, upstream, ref, device,
                    noise=True, ctx=None, prefill=None, shadow=None):
    """Per input: the elementwise slack added to TOL (see the header of this file):
    gamma_(k+1) * sum over the k additions of |added value| + (1 + gamma_k) k eta
    (u and eta of the shadow's dtype `shadow`), gamma_k * |prefill|, the low-precision
    dots' adjoint rounding, float32 noise."""
    import torch

    shadow = shadow or shadow_dtype(meta)
    u, eta = UNIT_ROUNDOFF[shadow], UNDERFLOW[shadow]
    contrib = site_contributions(leaves, outs, upstream, ctx)
    du, deta = UNIT_ROUNDOFF[meta["dtype"]], UNDERFLOW[meta["dtype"]]
    dots = dot_rounding(leaves, outs, upstream, ctx, du, deta) if ctx is not None and \
        meta["dtype"] != "fp32" else {}
    slack = {}
    if noise:
        l32, o32, _ = reference(module, values, device, torch.float32)
        g32 = reference_grads(l32, o32, upstream)
    for n, g in ref.items():
        s = torch.zeros_like(g)
        if contrib is not None:
            total, count = contrib[n]
            s = s + _gamma(count + 1, u) * total + (1 + _gamma(count, u)) * count * eta
            if prefill is not None and n in prefill:
                s = s + _gamma(count, u) * prefill[n].to(s).abs()
        if n in dots:
            s = s + dots[n].to(s)
        if noise:
            s = s + NOISE_FACTOR * (g32[n].double() - g).abs().max()
        slack[n] = s
    return slack


def _tol_used(got, ref, tol, slack):
    """max over elements of |got - ref| / tolerance (1.0: at the limit)."""
    rtol, afrac = tol
    scale = ref.abs().max().item() if ref.numel() else 0.0
    atol = (afrac * scale if scale > 0 else 1e-6) + slack
    return ((got - ref).abs() / (atol + rtol * ref.abs())).max().item() if ref.numel() else 0.0


def compare(got, ref, tol, slack=0.0):
    """None when got matches ref (float64 tensors); else (kind, description)."""
    import torch

    rtol, afrac = tol
    scale = ref.abs().max().item() if ref.numel() else 0.0
    finite = torch.isfinite(got)
    if not finite.all():
        bad = (~finite).nonzero()[0].tolist()
        return ("nan", f"{int((~finite).sum())} non-finite values where torch is finite "
                       f"(first at {tuple(bad)})")
    atol = (afrac * scale if scale > 0 else 1e-6) + slack
    err = (got - ref).abs()
    bad = err > atol + rtol * ref.abs()
    # an all-zero gradient is a mismatch of its own kind, but only where the tolerance
    # excludes 0: contributions that cancel can round to exactly 0 (seed 6085, bf16: three
    # programs' dw0 of +-5e-3 summing to 9e-6, within the accumulation bound 1.6e-4)
    if scale > 0 and got.abs().max().item() == 0 and bad.any():
        return "zero", f"zero gradient (torch's max |grad| is {scale:.3g})"
    if bad.any():
        i = int(torch.argmax(torch.where(bad, err, torch.zeros_like(err))))
        idx = tuple(int(j) for j in torch.unravel_index(torch.tensor(i), got.shape))
        return ("values", f"{int(bad.sum())}/{got.numel()} elements off, max error "
                          f"{err.max().item():.3g} (scale {scale:.3g}); at {idx}: got "
                          f"{got[idx].item():.6g}, torch {ref[idx].item():.6g}")
    return None


# ---------------------------------------------------------------------------
# one case
# ---------------------------------------------------------------------------

def _result(case, outcome, cause="", detail="", **extra):
    r = dict(seed=case.seed if case else None, outcome=outcome, cause=cause, detail=detail,
             features=list(case.features) if case else [],
             layout=case.meta["layout"] if case else None,
             dtype=case.meta["dtype"] if case else None,
             sizes=dict(case.sizes) if case else {}, n_ops=case.n_ops if case else None)
    r.update(extra)
    return r


def _discovery(fn, pointers):
    try:
        from tritonad._source import pointer_params
        return sorted(set(pointers) - set(pointer_params(fn)))
    except Exception:  # noqa: BLE001  (a private helper: only informative)
        return []


def run_case(task, mode):
    """task: dict(seed, features, sizes, n_ops), dict(source=..., name=...) or
    dict(imported=<directory written by --export>); with grad_options=, tritonad.grad's
    options for this task (instead of the workers' --grad-options)."""
    if "grad_options" not in task:
        return _run_case(task, mode)
    before = os.environ.get(GRAD_OPTIONS_ENV)
    os.environ[GRAD_OPTIONS_ENV] = json.dumps(task["grad_options"])
    try:
        return _run_case(task, mode)
    finally:
        if before is None:
            del os.environ[GRAD_OPTIONS_ENV]
        else:
            os.environ[GRAD_OPTIONS_ENV] = before


def _run_case(task, mode):
    import gen

    case = None
    try:
        if "imported" in task:
            with open(os.path.join(task["imported"], "module.py")) as f:
                task = dict(task, source=f.read(), name=os.path.basename(task["imported"]))
        if "source" in task:
            module = gen.load_source(task["source"], task.get("name", "regression"))
            meta = module.META
            case = gen.Case(seed=meta["seed"], source=task["source"], meta=meta,
                            features=meta["features"], enabled=meta["features"],
                            sizes=meta["sizes"], n_ops=-1)
        else:
            case = gen.generate(task["seed"], task.get("features"), task.get("sizes"),
                                task.get("n_ops"))
            module = case.load()
    except Exception as e:  # noqa: BLE001
        return _result(case, "gen-error", f"generate: {type(e).__name__}: {e}"[:200],
                       traceback.format_exc())
    t0 = time.time()
    try:
        if mode == "cpu":
            res = _run_cpu(case, module)
        elif mode == "interpret":
            res = _run_interpret(case, module)
        elif mode == "interpret-grad":
            if case.meta["dtype"] == "bf16":   # (the interpreter's bf16 math is wrong)
                res = _result(case, "skipped", "bf16 under Triton's interpreter")
            else:
                res = _run_gpu(case, module, device="cpu")
        elif mode.split(":")[0] == "calibrate":   # calibrate[:SHADOW POLICY[:SUMMED IN]]
            res = _run_calibrate(case, module, *mode.split(":")[1:])
        elif mode.startswith("selftest"):
            module.libdevice = __import__("fuzz_ref").libdevice_shim
            corrupt = mode.split(":", 1)[1] if ":" in mode else None
            res = _run_gpu(case, module, OracleBackward(module, corrupt), device="cpu")
        elif mode.startswith("export:"):
            res = _run_export(case, module, mode[len("export:"):])
        elif "imported" in task:
            try:
                imported = ImportedBackward(task["imported"])
            except Exception as e:  # noqa: BLE001
                return _result(case, "crash", f"loading the exported backward: {e}"[:160],
                               traceback.format_exc())
            res = _run_gpu(case, module, imported)
        else:
            res = _run_gpu(case, module)
    except Exception as e:  # noqa: BLE001  (a failure of this runner: report, go on)
        res = _result(case, "crash", f"runner: {type(e).__name__}: {str(e)[:120]}",
                      traceback.format_exc())
    res["time"] = round(time.time() - t0, 3)
    return res


GRAD_OPTIONS_ENV = "TRITONAD_FUZZ_GRAD_OPTIONS"
RACE_CHECK_ENV = "TRITONAD_FUZZ_RACE_CHECK"
DUMP_DERIVED_ENV = "TRITONAD_FUZZ_DUMP_DERIVED"


def _race_check(device):
    """The interpreter's race check (test/interpreter_races.py) around a backward's
    launches where --race-check asked for it (interpreter runs only: a GPU's races show
    as wrong values or not at all), else a stand-in whose `races` stays empty."""
    if device == "cpu" and os.environ.get(RACE_CHECK_ENV) == "1":
        from interpreter_races import RaceCheck
        return RaceCheck()
    return contextlib.nullcontext(argparse.Namespace(races=[]))


def grad_options():
    """tritonad.grad's keyword options for every case (--grad-options, a JSON object
    passed to the workers through the environment): e.g. {"mode": "deterministic"} or
    {"accumulate": false}, so the fuzz checks each schedule, not only the default."""
    text = os.environ.get(GRAD_OPTIONS_ENV)
    return json.loads(text) if text else {}


def _derive(case, module):
    """tritonad.grad with the pointers named explicitly (tritonad's own reading of the
    source misses pointers only loaded in helpers: reported as `undiscovered`)."""
    import tritonad

    pointers = [p["name"] for p in case.meta["params"] if p["kind"] == "ptr"]
    return (tritonad.grad(module.kernel, pointers=pointers, **grad_options()),
            _discovery(module.kernel, pointers))


def _check_reference_cpu(case, module):
    import torch

    values, gen_ = draw_inputs(case.meta, 0)
    leaves, outs, ctx = reference(module, values, "cpu")
    up = {n: torch.rand(out[0].shape, generator=gen_, dtype=torch.float64) * 2 - 1
          for n, out in outs.items()}
    grads = reference_grads(leaves, outs, up, retain=True)
    for n, out in outs.items():
        v, w, _ = _vwp(out)
        if not torch.isfinite(v[w]).all():
            return f"reference output {n} is not finite"
    for n, g in grads.items():
        if not torch.isfinite(g).all():
            return f"reference gradient of {n} is not finite"
    bad = unmodeled_loads(leaves, outs, up, ctx)
    if bad:
        return f"reference uses {', '.join(bad)} outside its load sites (R.load)"
    return None


def _dump_derived(case, bwd=None, compiled=None, error=None):
    """--dump-derived: the derived TTIR, schedule and the records the launch path reads
    of this case (or the error that refused it), to compare two builds of the core byte
    for byte."""
    directory = os.environ.get(DUMP_DERIVED_ENV)
    if not directory:
        return
    os.makedirs(directory, exist_ok=True)
    stem = os.path.join(directory, f"seed_{case.seed}")
    if error is not None:
        with open(stem + ".error", "w") as f:
            f.write(f"{type(error).__name__}: {error}\n")
        return
    from compile_util import comparable_dump

    records = {k: v for k, v in compiled.metadata._asdict().items() if k.startswith("tritonad")}
    for suffix, text in ((".ttir", bwd.derived_ir()), (".schedule", str(bwd.schedule()) + "\n"),
                         (".records", json.dumps(records, indent=1, sort_keys=True, default=str))):
        with open(stem + suffix, "w") as f:
            f.write(comparable_dump(text))


def _run_cpu(case, module):
    try:
        bwd, undiscovered = _derive(case, module)
        compiled = compile_ptx(bwd, case.meta, list(bwd.launch_signature), hidden=True)
        _dump_derived(case, bwd, compiled)
    except Exception as e:  # noqa: BLE001
        _dump_derived(case, error=e)
        outcome, cause = classify_exception(e)
        detail = str(e)[:4000]
        if outcome == "crash":
            try:
                compile_ptx(module.kernel, case.meta, module.kernel.arg_names)
            except Exception as e2:  # noqa: BLE001
                return _result(case, "gen-error", "forward: " + classify_exception(e2)[1],
                               str(e2)[:4000])
            detail = traceback.format_exc()[-6000:]
        return _result(case, outcome, cause, detail)
    try:
        problem = _check_reference_cpu(case, module)
    except Exception as e:  # noqa: BLE001
        return _result(case, "gen-error", f"reference: {type(e).__name__}: {str(e)[:100]}",
                       traceback.format_exc())
    if problem:
        return _result(case, "gen-error", problem)
    return _result(case, "compiled", undiscovered=undiscovered, schedule=bwd.schedule())


def _setup(case, module, device):
    """Draws data until every selection is clear of ties: (values, leaves, outs, ctx, gen)."""
    best = None
    for attempt in range(DATA_TRIES):
        values, gen_ = draw_inputs(case.meta, attempt)
        leaves, outs, ctx = reference(module, values, device)
        if ctx.min_gap() >= GAP_MIN:
            return values, leaves, outs, ctx, gen_
        best = ctx
    return None, None, None, best, None


def _launch_forward(case, module, values, device, forward=None):
    """Allocates guarded buffers, runs the forward kernel (or `forward`, a
    derived backward's forward launch: its residuals are returned):
    (buffers, args, residuals)."""
    import torch

    meta = case.meta
    dt = _torch_dtype(meta["dtype"])
    gen_ = torch.Generator().manual_seed(meta["seed"] * 7 + 1)
    bufs, args = {}, {}
    for p in meta["params"]:
        if p["kind"] == "ptr":
            fill = values[p["name"]] if p["role"] == "in" else torch.zeros(p["shape"])
            bufs[p["name"]] = Buffer(p["shape"], dt, device, fill, gen_)
            args[p["name"]] = bufs[p["name"]].base
        elif p["kind"] == "table":   # row_table's int32 rows (guarded, kept unchanged)
            table = torch.tensor(p["value"], dtype=torch.int32)
            bufs[p["name"]] = Buffer(table.shape, torch.int32, device, table, gen_)
            args[p["name"]] = bufs[p["name"]].base
        else:
            args[p["name"]] = p["value"]
    # as a user launches: runtime arguments by position (a parameter may be named like a
    # launch keyword, `grid`), the constexprs not set by autotune / heuristics / defaults
    # by name, the grid a callable of META where sizes are tuned
    positional = [args[p["name"]] for p in meta["params"]]
    residuals = (forward or module.kernel)[launch_grid(module)](*positional,
                                                                **launch_constexprs(meta))
    if device != "cpu":
        torch.cuda.synchronize()
    return bufs, args, residuals if forward is not None else None


def _check_forward(case, bufs, outs):
    import fuzz_ref as R

    meta = case.meta
    for p in meta["params"]:
        if p["kind"] == "ptr" and p["role"] == "out":
            value, written, _ = _vwp(outs[p["name"]])
            got = R.view(bufs[p["name"]].base, p["view"]).double().cpu()
            want = value.detach().double().cpu()
            w = written.cpu()
            bad = compare(got[w], want[w], FWD_TOL[meta["dtype"]])
            if bad:
                return f"{p['name']}: {bad[1]}"
    for name, b in bufs.items():
        if not b.guards_intact():
            return f"forward wrote outside {name}"
    return None


def _upstream(case, outs, gen_):
    """Random upstream gradients for every output buffer (its whole base, gaps too)."""
    import torch

    dt = _torch_dtype(case.meta["dtype"])
    up_base, up_logical = {}, {}
    import fuzz_ref as R
    for p in case.meta["params"]:
        if p["kind"] == "ptr" and p["role"] == "out":
            u = (torch.rand(p["shape"], generator=gen_, dtype=torch.float64) * 2 - 1).to(dt)
            up_base[p["name"]] = u
            up_logical[p["name"]] = R.view(u, p["view"]).double()
    return up_base, up_logical


def _run_gpu(case, module, imported=None, device="cuda"):
    """imported: an ImportedBackward (a backward derived and compiled elsewhere, see
    --export) used instead of deriving here. device="cpu" for --selftest and
    --interpret-grad (Triton's interpreter runs both kernels).
    A backward that matches is run again on the residuals of its own forward
    launch (bwd.forward), as tritonad.autograd runs it."""
    import torch

    meta = case.meta
    values, leaves, outs, ctx, gen_ = _setup(case, module, device)
    if values is None:
        return _result(case, "skipped", f"ties: {min(ctx.gaps, key=lambda g: g[1])}")
    pin_autotune(module, real_tuning=device != "cpu")
    up_base = up_dev = ref = None
    passes = [None] if imported is not None or device == "cpu" else [None, "residuals"]
    for with_residuals in passes:
        try:
            forward = bwd.forward if with_residuals else None
            with _interpreter_libdevice(module, device):
                bufs, args, residuals = _launch_forward(case, module, values, device,
                                                        forward)
        except Exception as e:  # noqa: BLE001
            if with_residuals:   # (tritonad's bwd.forward, not the generated kernel)
                outcome, cause = classify_exception(e)
                return _result(case, outcome, "bwd.forward: " + cause,
                               traceback.format_exc()[-4000:], fatal=_is_cuda_error(e))
            return _result(case, "gen-error", "forward launch: " + classify_exception(e)[1],
                           traceback.format_exc()[-4000:], fatal=_is_cuda_error(e))
        bad = _check_forward(case, bufs, outs)
        if bad:
            return _result(case, "fwd-mismatch", bad.split(":")[0], bad)
        for b in bufs.values():      # the backward must leave inputs and outputs as they are
            b.snapshot = b.store.clone()
        if ref is None:
            up_base, up_logical = _upstream(case, outs, gen_)
            up_dev = {n: u.to(device) for n, u in up_logical.items()}
            ref = reference_grads(leaves, outs, up_dev, retain=True)
        try:
            if with_residuals is None:
                if imported is not None:
                    bwd, undiscovered = imported, imported.undiscovered
                else:
                    bwd, undiscovered = _derive(case, module)
            with _race_check(device) as check:
                shadows, prefill = _launch_backward(case, module, bwd, args, ref, up_base,
                                                    gen_, device, residuals)
        except Exception as e:  # noqa: BLE001
            outcome, cause = classify_exception(e)
            return _result(case, outcome, cause, str(e)[:4000] if outcome != "crash"
                           else traceback.format_exc()[-6000:], fatal=_is_cuda_error(e))
        slack = tolerance_slack(meta, module, values, leaves, outs, up_dev, ref, device,
                                ctx=ctx, prefill=prefill)
        problems, tol_used = _compare_backward(case, bwd, bufs, shadows, prefill, ref, slack)
        extra = dict(undiscovered=undiscovered, schedule=bwd.schedule(),
                     min_gap=ctx.min_gap(), tol_used=tol_used)
        if check.races:   # (as bad as a mismatch: the GPU may compute another value)
            first = check.races[0]
            return _result(case, "race", f"{first.kind}: {first.first.op} / {first.second.op}",
                           check.report() + "".join(f"\n(and: {d})" for _, d in problems),
                           **extra)
        if problems:
            kinds = sorted({k for k, _ in problems})
            read = " (backward reading its forward's residuals)" if residuals is not None \
                else ""
            return _result(case, "mismatch", ",".join(kinds),
                           "\n".join(d + read for _, d in problems), **extra)
    return _result(case, "match", **extra)


def _launch_backward(case, module, bwd, args, ref, up_base, gen_, device, residuals):
    """Launches `bwd` into fresh guarded shadows: (shadows, prefill)."""
    import torch

    meta = case.meta
    dt = _torch_dtype(meta["dtype"])
    sdt = _torch_dtype(shadow_dtype(meta))
    shadows, prefill = {}, {}
    # the gradient must be ADDED to what is there, unless the contract is fresh
    # (zeroed) gradient buffers
    prefilled = sdt == torch.float32 and grad_options().get("accumulate", True)
    for p in meta["params"]:
        if p["kind"] != "ptr":
            continue
        name = p["name"]
        if p["role"] == "in":
            scale = ref[name].abs().max().item() or 1.0
            if prefilled:
                fill = (torch.rand(p["shape"], generator=gen_, dtype=torch.float64)
                        * 2 - 1) * scale
            else:
                fill = torch.zeros(p["shape"], dtype=torch.float64)
            shadows[name] = Buffer(p["shape"], sdt, device, fill, gen_)
            prefill[name] = shadows[name].base.double().clone()
        else:
            shadows[name] = Buffer(p["shape"], dt, device, up_base[name], gen_)
    bargs = dict(args)
    for name, b in shadows.items():
        bargs[bwd.shadows.get(name, "d" + name)] = b.base
    extra = {} if residuals is None else {"tritonad_residuals": residuals}
    if isinstance(bwd, (ImportedBackward, OracleBackward)):   # (not Triton launchers)
        bwd[tuple(meta["grid"])](**bargs, **meta["constexprs"], **extra)
    else:
        # the launch, as a user writes it: bwd[grid](*forward args, *shadows, **constexprs)
        # (runtime arguments by position: the constexprs come last in launch_signature)
        positional = []
        for name in bwd.launch_signature:
            if name in meta["constexprs"]:
                break
            positional.append(bargs.get(name))
        bwd[launch_grid(module)](*positional, **launch_constexprs(meta), **extra)
    if device != "cpu":
        torch.cuda.synchronize()
    return shadows, prefill


def _compare_backward(case, bwd, bufs, shadows, prefill, ref, slack):
    """(problems, tolerance used) of a backward's shadows against the reference."""
    meta = case.meta
    problems = []
    for name, b in list(bufs.items()) + [("d" + n, b) for n, b in shadows.items()]:
        if not b.guards_intact():
            problems.append(("oob", f"backward wrote outside {name}"))
    for name, b in bufs.items():
        if not b.unchanged():
            problems.append(("clobbered", f"backward modified the primal buffer {name}"))
    tol_used = 0.0
    for p in meta["params"]:
        if p["kind"] == "ptr" and p["role"] == "in":
            name = p["name"]
            if name not in bwd.shadows:
                problems.append(("missing", f"no shadow for {name}"))
                continue
            got = shadows[name].base.double() - prefill[name]
            tol = grad_tolerance(meta)
            bad = compare(got, ref[name].double(), tol, slack[name])
            if bad:
                problems.append((bad[0], f"d{name}: {bad[1]}"))
            else:
                tol_used = max(tol_used, _tol_used(got, ref[name].double(), tol, slack[name]))
    return problems, tol_used


class ImportedBackward:
    """A backward kernel derived and compiled to a cubin on another machine (--export),
    launched through Triton's own launcher without importing tritonad (whose compiled
    core may not load here, e.g. another Python version)."""

    def __init__(self, directory):
        from types import SimpleNamespace

        from triton.compiler.compiler import CompiledKernel

        with open(os.path.join(directory, "bwd.json")) as f:
            info = json.load(f)
        self.arg_names = info["arg_names"]
        self.shadows = info["shadows"]
        self.undiscovered = info.get("undiscovered", [])
        self._schedule = info.get("schedule")
        src = SimpleNamespace(signature=info["signature"], constants=info["constants"],
                              fn=SimpleNamespace(arg_names=self.arg_names, launch_metadata=None))
        group = {name: os.path.join(directory, name) for name in info["files"]}
        self.kernel = CompiledKernel(src, group, info["hash"])

    def schedule(self):
        return self._schedule

    def __getitem__(self, grid):
        grid = tuple(grid) + (1,) * (3 - len(grid))

        def launch(**kwargs):
            self.kernel[grid](*[kwargs.get(n) for n in self.arg_names])
        return launch


class OracleBackward:
    """--selftest: stands in for a derived backward on the CPU. It reads the forward's
    inputs and the upstream shadows the way a kernel would, computes float32 gradients
    of the reference with torch, and adds them into the input shadows; `corrupt` makes it
    wrong on purpose (the comparison must then report a mismatch)."""

    def __init__(self, module, corrupt=None):
        self.module = module
        self.meta = module.META
        self.corrupt = corrupt
        self.shadows = {p["name"]: "d" + p["name"] for p in self.meta["params"]
                        if p["kind"] == "ptr"}
        self.undiscovered = []

    def schedule(self):
        return "oracle"

    def __getitem__(self, grid):
        def launch(**kw):
            import torch
            import fuzz_ref as R

            ins = [p for p in self.meta["params"] if p["kind"] == "ptr" and p["role"] == "in"]
            values = {p["name"]: kw[p["name"]].double() for p in ins}
            leaves, outs, _ = reference(self.module, values, "cpu", torch.float32)
            up = {p["name"]: R.view(kw["d" + p["name"]], p["view"]).double()
                  for p in self.meta["params"] if p["kind"] == "ptr" and p["role"] == "out"}
            grads = reference_grads(leaves, outs, up)
            # corrupt the first input whose gradient is not 0 (dropping or scaling a zero
            # gradient, e.g. of an input only read by a tl.where condition, changes nothing)
            first = next((i for i, p in enumerate(ins) if grads[p["name"]].abs().max() > 0), 0)
            for i, p in enumerate(ins):
                g = grads[p["name"]]
                if self.corrupt == "drop" and i == first:
                    continue
                if self.corrupt == "scale" and i == first:
                    g = g * 1.001 if self.meta["dtype"] == "fp32" else g * 1.2
                if self.corrupt == "nan" and i == 0:
                    g = g.clone().reshape(-1)
                    g[-1] = float("nan")
                    g = g.reshape(grads[p["name"]].shape)
                if self.corrupt == "stray" and i == 0:
                    kw["d" + p["name"]].reshape(-1)[0] += 1.0 + g.abs().max()
                shadow = kw["d" + p["name"]]
                shadow.copy_((shadow.double() + g).to(shadow.dtype))
            if self.corrupt == "oob":
                store = kw["d" + ins[0]["name"]]
                torch.as_strided(store, (1,), (1,), store.storage_offset() + store.numel()).add_(1)
        return launch


def _run_export(case, module, directory):
    """Derives and compiles the backward for sm_90 here; writes what --imported needs."""
    import shutil

    try:
        bwd, undiscovered = _derive(case, module)
        names = list(bwd.launch_signature)
        compiled = compile_ptx(bwd, case.meta, names)
    except Exception as e:  # noqa: BLE001
        res = _run_cpu(case, module)     # classifies (and tells generator errors apart)
        return res
    out = os.path.join(directory, f"case_{case.seed}")
    os.makedirs(out, exist_ok=True)
    files = []
    for name, path in compiled.metadata_group.items():
        if name.endswith(".json") or name.endswith(".cubin"):
            shutil.copy(path, os.path.join(out, name))
            files.append(name)
    src = compiled.src
    info = dict(arg_names=names, signature=dict(src.signature),
                constants={n: v for n, v in _constexpr_values(case.meta, names, src).items()},
                files=files, hash=compiled.hash, shadows=dict(bwd.shadows),
                schedule=bwd.schedule(), undiscovered=undiscovered)
    with open(os.path.join(out, "bwd.json"), "w") as f:
        json.dump(info, f, indent=1)
    with open(os.path.join(out, "module.py"), "w") as f:
        f.write(case.source)
    return _result(case, "compiled", undiscovered=undiscovered, schedule=bwd.schedule(),
                   exported=out)


def _constexpr_values(meta, names, src):
    consts = {}
    for key, value in src.constants.items():
        index = key[0] if isinstance(key, tuple) else names.index(key)
        consts[names[index]] = value
    return consts


def _is_cuda_error(e):
    text = f"{type(e).__name__}: {e}"
    return "CUDA" in text or "cuda" in type(e).__module__


@contextlib.contextmanager
def _interpreter_libdevice(module, device):
    """Under Triton's interpreter (which has no libdevice), the forward kernel runs with
    fuzz_ref's stand-ins; a derived backward is compiled from the real calls."""
    if device != "cpu" or os.environ.get("TRITON_INTERPRET") != "1":
        yield
        return
    import fuzz_ref as R

    real = module.libdevice
    module.libdevice = R.libdevice_shim
    try:
        yield
    finally:
        module.libdevice = real


def _run_interpret(case, module):
    import fuzz_ref as R

    module.libdevice = R.libdevice_shim
    values, leaves, outs, ctx, _ = _setup(case, module, "cpu")
    if values is None:
        return _result(case, "skipped", f"ties: {min(ctx.gaps, key=lambda g: g[1])}")
    pin_autotune(module, real_tuning=False)
    try:
        bufs, _, _ = _launch_forward(case, module, values, "cpu")
    except Exception as e:  # noqa: BLE001
        return _result(case, "gen-error", "interpreter: " + classify_exception(e)[1],
                       traceback.format_exc()[-4000:])
    bad = _check_forward(case, bufs, outs)
    if bad:
        return _result(case, "fwd-mismatch", bad.split(":")[0], bad)
    return _result(case, "match", min_gap=ctx.min_gap())


def _run_calibrate(case, module, shadow="native", summed=None):
    """The comparator against an emulated backward (a stand-in for a correct kernel):
    every addition the reference models (per program and load site, see `additions`) is
    computed in float32 by torch, rounded to the dtype `summed` and added into a shadow of
    that dtype, one after the other, programs in order; low-precision dots see their
    output adjoint rounded to the operand dtype first. The tolerance is that of shadows of
    policy `shadow` ("native": the input's dtype, each addition rounded; "fp32": see
    TOL_FP32_SHADOW); `summed` defaults to their dtype (another one emulates a backward
    summing otherwise: a bf16 sum judged by the fp32 model must be a mismatch). Measures
    how much of each tolerance rounding alone uses (tol_used), and how much of the
    accumulation bound (acc_used: |emulated - exact| / (gamma_(k+1) sum |c| +
    gamma_k |prefill| + dot term))."""
    import torch

    meta = case.meta
    model = shadow_dtype(meta, shadow)
    summed = summed or model
    values, leaves, outs, ctx, gen_ = _setup(case, module, "cpu")
    if values is None:
        return _result(case, "skipped", f"ties: {min(ctx.gaps, key=lambda g: g[1])}")
    up_base, up_logical = _upstream(case, outs, gen_)
    ref = reference_grads(leaves, outs, up_logical, retain=True)
    dt = _torch_dtype(meta["dtype"])
    sdt = _torch_dtype(summed)
    shadows, prefill = {}, {}
    for name, g in ref.items():
        scale = g.abs().max().item()
        fill = (torch.rand(g.shape, generator=gen_, dtype=torch.float64) * 2 - 1) * (scale or 1)
        if summed != "fp32":
            fill = torch.zeros_like(fill)
        shadows[name] = fill.to(sdt).reshape(-1)
        prefill[name] = shadows[name].double().reshape(g.shape)
    slack = tolerance_slack(meta, module, values, leaves, outs, up_logical, ref, "cpu",
                            noise=False, ctx=ctx, prefill=prefill,
                            shadow=model)   # the bound alone
    leaves32, outs32, ctx32 = reference(module, values, "cpu", torch.float32)
    if meta["dtype"] != "fp32" and ctx32.dots:
        _round_dot_adjoints(ctx32, dt)
    for name, index, g in additions(leaves32, outs32, up_logical, ctx32):
        sh = shadows[name]
        sh.index_put_((index,), g.to(sdt), accumulate=True)
    worst = acc = 0.0
    tol = grad_tolerance(meta, model)
    for name, g in ref.items():
        got = shadows[name].double().reshape(g.shape) - prefill[name]
        scale = g.abs().max().item()
        rtol, afrac = tol
        if scale > 0:
            used = ((got - g).abs() / (afrac * scale + rtol * g.abs() + slack[name])).max().item()
            worst = max(worst, used)
            if model != "fp32":   # (in fp32 the float32 math dominates instead)
                b = slack[name]
                ratio = (got - g).abs() / torch.where(b > 0, b, torch.full_like(b, 1e-300))
                acc = max(acc, ratio.clamp(max=1e6).max().item())
        bad = compare(got, g, tol, slack[name])
        if bad:
            return _result(case, "mismatch", bad[0], f"d{name}: {bad[1]}", tol_used=worst,
                           acc_used=acc)
    return _result(case, "match", tol_used=worst, acc_used=acc, min_gap=ctx.min_gap())


def _round_dot_adjoints(ctx, dt):
    """Makes every recorded dot's backward see its output adjoint rounded to dt (what a
    low-precision tl.dot's backward does), by hooking the dot outputs."""
    for _, _, out in ctx.dots:
        out.register_hook(lambda g: g.to(dt).to(g.dtype))


# ---------------------------------------------------------------------------
# worker processes
# ---------------------------------------------------------------------------

def _worker_main(conn, mode, env):
    os.environ.update(env)
    if mode in ("interpret", "interpret-grad") or mode.startswith("selftest"):
        os.environ["TRITON_INTERPRET"] = "1"
        # (numpy's warnings about the padding's -inf / NaN in masked lanes)
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        _patch_interpreter()
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        res = run_case(task, mode)
        res["task"] = task
        conn.send(res)
        if res.get("fatal"):     # a CUDA error poisons this process's context
            conn.close()
            os._exit(0)


def _patch_interpreter():
    """Triton 3.6's interpreter does int() on a 1-element array (an error with NumPy 2),
    and multiplies bf16 tl.dot operands as their raw uint16 bits: both fixed here."""
    import numpy as np
    import triton.language as tl
    import triton.runtime.interpreter as interp

    original = interp._patch_lang_tensor

    def patched(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__",
                       lambda self: int(np.asarray(self.handle.data).reshape(-1)[0]))

    interp._patch_lang_tensor = patched

    create_dot = interp.InterpreterBuilder.create_dot

    def bf16_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        def widen(h):
            if h.dtype.scalar == tl.bfloat16:     # uint16 bits -> float32 (exact)
                bits = (h.data.astype(np.uint32) << 16).view(np.float32)
                return interp.TensorHandle(bits, tl.float32)
            return h
        return create_dot(self, widen(a), widen(b), d, input_precision, max_num_imprecise_acc)

    if not getattr(create_dot, "_fuzz_bf16", False):
        bf16_dot._fuzz_bf16 = True
        interp.InterpreterBuilder.create_dot = bf16_dot


def _lost(task, cause, detail):
    """The result of a case whose worker died or hung (regenerated for its features)."""
    try:
        import gen
        case = (gen.generate(task["seed"], task.get("features"), task.get("sizes"),
                             task.get("n_ops")) if "seed" in task else None)
    except Exception:  # noqa: BLE001
        case = None
    res = _result(case, "crash", cause, detail)
    res["seed"] = task.get("seed", res["seed"])
    res["task"] = task
    return res


def run_tasks(tasks, mode, workers, timeout=600.0, env=None, on_result=None):
    """Runs tasks on `workers` spawned processes; a worker that dies or hangs makes its
    task a crash and is replaced. Returns the results in task order."""
    env = dict(env or {})
    ctx = multiprocessing.get_context("spawn")
    pending = collections.deque(enumerate(tasks))
    results = [None] * len(tasks)

    def spawn():
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker_main, args=(child, mode, env), daemon=True)
        proc.start()
        child.close()
        return dict(proc=proc, conn=parent, job=None, start=0.0)

    slots = [spawn() for _ in range(max(1, min(workers, len(tasks))))]

    def finish(slot, res):
        index, task = slot["job"]
        res.setdefault("task", task)
        results[index] = res
        slot["job"] = None
        if on_result:
            on_result(res)

    try:
        while pending or any(s["job"] for s in slots):
            for s in slots:
                if s["job"] is None and pending:
                    s["job"] = pending.popleft()
                    s["start"] = time.time()
                    s["conn"].send(s["job"][1])
            busy = [s for s in slots if s["job"]]
            waits = [s["conn"] for s in busy] + [s["proc"].sentinel for s in busy]
            ready = multiprocessing.connection.wait(waits, timeout=1.0)
            for i, s in enumerate(slots):
                if not s["job"]:
                    continue
                if s["conn"] in ready or s["proc"].sentinel in ready:
                    try:
                        res = s["conn"].recv()
                        finish(s, res)
                        if res.get("fatal"):
                            s["proc"].join(5)
                            slots[i] = spawn()
                    except (EOFError, OSError):
                        s["proc"].join(5)
                        code = s["proc"].exitcode
                        task = s["job"][1]
                        finish(s, _lost(task, f"worker died (exit code {code})",
                                        "the process running this case died: an "
                                        "abort/segfault in the compiler or the driver"))
                        slots[i] = spawn()
                elif time.time() - s["start"] > timeout:
                    s["proc"].kill()
                    s["proc"].join(5)
                    task = s["job"][1]
                    finish(s, _lost(task, f"timeout after {timeout:.0f}s", ""))
                    slots[i] = spawn()
    finally:
        for s in slots:
            try:
                s["conn"].send(None)
            except (OSError, BrokenPipeError):
                pass
        for s in slots:
            s["proc"].join(10)
            if s["proc"].is_alive():
                s["proc"].kill()
    return results


# ---------------------------------------------------------------------------
# minimizer
# ---------------------------------------------------------------------------

_MIN_SIZES = {"BLOCK": 16, "BM": 16, "BN": 16, "n": 2, "M": 1, "N": 2, "BK": 16, "K": 16}


def _same_failure(res, target):
    return res["outcome"] == target["outcome"] and (
        res["outcome"] != "located-error" or res["cause"] == target["cause"])


def minimize(result, mode, workers, log=print, env=None, timeout=600.0):
    """Greedy: turn features off one at a time, lower the op count, shrink sizes, while
    the failure (same outcome; same cause for located errors) persists. Each round
    tries every candidate in parallel and takes the first (in that order) that fails."""
    task = dict(result["task"])
    import gen

    base = gen.generate(task["seed"], task.get("features"), task.get("sizes"), task.get("n_ops"))
    current = dict(seed=task["seed"], features=sorted(base.features), sizes=dict(base.sizes),
                   n_ops=base.n_ops)
    probe = run_tasks([current], mode, 1, timeout, env)[0]
    if not _same_failure(probe, result):   # the unused features mattered after all
        current = dict(seed=task["seed"], features=sorted(task.get("features") or gen.ALL_FEATURES),
                       sizes=dict(base.sizes), n_ops=base.n_ops)
        probe = result
    best = probe
    for _ in range(60):
        cands = []
        for f in current["features"]:
            cands.append(dict(current, features=[g for g in current["features"] if g != f]))
        if current["n_ops"] > 1:
            cands.append(dict(current, n_ops=max(1, current["n_ops"] // 2)))
            cands.append(dict(current, n_ops=current["n_ops"] - 1))
        for key, value in sorted(current["sizes"].items()):
            low = _MIN_SIZES.get(key)
            if low is None or value <= low:
                continue
            smaller = max(low, value // 2)
            if key in ("BLOCK", "BM", "BN"):
                smaller = max(low, _pow2_floor(smaller))
            cands.append(dict(current, sizes=dict(current["sizes"], **{key: smaller})))
        if not cands:
            break
        results = run_tasks(cands, mode, workers, timeout, env)
        for cand, res in zip(cands, results):
            if _same_failure(res, result):
                current, best = cand, res
                break
        else:
            break
    final = gen.generate(current["seed"], current["features"], current["sizes"],
                         current["n_ops"])
    log(f"minimized seed {current['seed']}: features {final.features}, sizes {final.sizes}, "
        f"n_ops {final.n_ops}\n  {best['outcome']}: {best['cause']}\n  {best['detail']}")
    log(final.source)
    return dict(task=current, result=best, source=final.source)


def _pow2_floor(n):
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


# ---------------------------------------------------------------------------
# reporting
# ---------------------------------------------------------------------------

def summarize(results):
    counts = collections.Counter(r["outcome"] for r in results)
    causes = collections.defaultdict(list)
    for r in results:
        if r["outcome"] in ("located-error", "launch-refused", "crash", "gen-error",
                            "fwd-mismatch", "skipped", "mismatch", "race"):
            causes[(r["outcome"], r["cause"])].append(r["seed"])
    by_feature = collections.defaultdict(collections.Counter)
    for r in results:
        for f in r.get("features", []):
            by_feature[f][r["outcome"]] += 1
    undiscovered = [r["seed"] for r in results if r.get("undiscovered")]
    return dict(tried=len(results), counts=dict(counts),
                causes=[dict(outcome=o, cause=c, count=len(s), seeds=s)
                        for (o, c), s in sorted(causes.items(), key=lambda kv: (kv[0][0], -len(kv[1])))],
                by_feature={f: dict(c) for f, c in sorted(by_feature.items())},
                undiscovered_pointers=undiscovered)


def print_summary(summary, results, out=sys.stdout):
    p = lambda s="": print(s, file=out)
    c = summary["counts"]
    p(f"kernels tried: {summary['tried']}")
    for o in OUTCOMES:
        if c.get(o):
            p(f"  {o:14s} {c[o]}")
    for outcome, title in (("mismatch", "MISMATCHES (silently wrong gradients)"),
                           ("race", "RACES (gradients a GPU may get wrong)")):
        bad = [r for r in results if r["outcome"] == outcome]
        if bad:
            p(f"\n{title}:")
        for r in bad:
            p(f"  seed {r['seed']}: {r['cause']}  [{r['layout']}, {r['dtype']}] "
              f"features: {' '.join(r['features'])}")
            for line in r["detail"].splitlines()[:4]:
                p(f"      {line}")
    for outcome in ("located-error", "launch-refused", "crash", "gen-error", "fwd-mismatch",
                    "skipped"):
        rows = [x for x in summary["causes"] if x["outcome"] == outcome]
        if not rows:
            continue
        p(f"\n{outcome} by cause:")
        for x in rows:
            seeds = " ".join(str(s) for s in x["seeds"][:8]) + (" ..." if x["count"] > 8 else "")
            p(f"  {x['count']:4d}  {x['cause']}\n        seeds: {seeds}")
    if summary["undiscovered_pointers"]:
        s = summary["undiscovered_pointers"]
        p(f"\nnote: tritonad's source reading missed a pointer parameter in {len(s)} kernels "
          f"(passed with pointers=...): seeds {' '.join(map(str, s[:10]))}"
          + (" ..." if len(s) > 10 else ""))
    p("\nby feature (kernels using it; * issue 39's classes):")
    p(f"  {'feature':21s}" + "".join(f"{g:>10s}" for g in FEATURE_TABLE) + f"{'other':>10s}")
    import gen
    for f, cnt in sorted(summary["by_feature"].items(),
                         key=lambda kv: (kv[0] not in gen.ISSUE39_FEATURES, kv[0])):
        row = [sum(cnt.get(o, 0) for o in group) for group in FEATURE_TABLE.values()]
        other = sum(cnt.values()) - sum(row)
        mark = "*" if f in gen.ISSUE39_FEATURES else " "
        p(f"  {mark}{f:20s}" + "".join(f"{n:10d}" for n in row) + f"{other:10d}")
    p("  (match: gradients within tolerance, or compiled in --cpu-only mode; refused: a "
      "located error or a refused launch; crash: crash, gen-error, fwd-mismatch; other: "
      "skipped)")


def _seed_spec(text):
    """A seed (`7`) or a range of seeds (`0:2000`, stop excluded)."""
    if ":" in text:
        start, stop = text.split(":", 1)
        return range(int(start), int(stop))
    return [int(text)]


def main(argv=None):
    import gen

    ap = argparse.ArgumentParser(description="Differential fuzzing of tritonad.grad.",
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--seeds", type=_seed_spec, nargs="*",
                    help="explicit seeds or ranges START:STOP (instead of --start/--count)")
    ap.add_argument("--workers", "--jobs", type=int, default=min(16, os.cpu_count() or 1))
    ap.add_argument("--features", nargs="*", help="enable only these features")
    ap.add_argument("--disable", nargs="*", default=[], help="features to turn off")
    ap.add_argument("--require", nargs="*", default=[],
                    help="run only the seeds whose kernel uses all of these features (e.g. "
                         "one of issue 39's: " + " ".join(gen.ISSUE39_FEATURES) + ")")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--cpu-only", action="store_true")
    mode.add_argument("--interpret", action="store_true")
    mode.add_argument("--interpret-grad", action="store_true",
                      help="forward and derived backward in Triton's interpreter on the "
                           "CPU, gradients compared as on a GPU (bf16 cases skipped)")
    mode.add_argument("--calibrate", action="store_true")
    mode.add_argument("--selftest", nargs="?", const="ok", metavar="CORRUPTION",
                      help="the GPU path on the CPU (interpreter forward, torch 'oracle' "
                           "backward); with drop / scale / nan / stray / oob the oracle is "
                           "wrong on purpose and every case must come out a mismatch")
    mode.add_argument("--export", metavar="DIR",
                      help="derive + compile each backward to a sm_90 cubin here (no GPU) "
                           "and write it with its case to DIR/case_<seed>/")
    mode.add_argument("--imported", metavar="DIR",
                      help="run the GPU comparison on the cases of DIR (from --export) with "
                           "their precompiled backward kernels, without importing tritonad")
    ap.add_argument("--regressions", action="store_true", help="run regressions.py's cases")
    ap.add_argument("--no-minimize", action="store_true")
    ap.add_argument("--minimize-crashes", action="store_true")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per case")
    ap.add_argument("--always-compile", action="store_true",
                    help="TRITON_ALWAYS_COMPILE=1: never serve a backward from Triton's cache")
    ap.add_argument("--grad-options", type=json.loads, default={}, metavar="JSON",
                    help='tritonad.grad keyword options for every case, e.g. '
                         '\'{"mode": "deterministic"}\' or \'{"accumulate": false}\'')
    ap.add_argument("--lowp-shadows", choices=("fp32", "native"), default=None,
                    help="shadows of fp16 / bf16 inputs: fp32 (default; the tolerance of "
                         "an fp32 accumulation rounded once) or native (the input's dtype, "
                         "each addition rounded: the looser per-addition model)")
    ap.add_argument("--race-check", action="store_true",
                    help="with --interpret-grad: check the backward's launches for data "
                         "races (test/interpreter_races.py); a race is the outcome `race`")
    ap.add_argument("--dump-derived", metavar="DIR",
                    help="with --cpu-only: write each case's derived TTIR and schedule (or "
                         "its error) to DIR/seed_<seed>.* (diff two builds of the core)")
    ap.add_argument("--json")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--show", type=int, help="print the generated module of this seed and exit")
    args = ap.parse_args(argv)

    if args.show is not None:
        print(gen.generate(args.show, args.features).source)
        return 0
    features = set(args.features) if args.features else set(gen.ALL_FEATURES)
    unknown = (features | set(args.disable) | set(args.require)) - gen.ALL_FEATURES
    if unknown:
        ap.error(f"unknown features {sorted(unknown)}; known: {' '.join(sorted(gen.ALL_FEATURES))}")
    features -= set(args.disable)
    mode_name = ("cpu" if args.cpu_only else "interpret" if args.interpret else
                 "interpret-grad" if args.interpret_grad else
                 ("calibrate" + (f":{args.lowp_shadows}" if args.lowp_shadows else ""))
                 if args.calibrate else
                 ("selftest" + ("" if args.selftest == "ok" else ":" + args.selftest))
                 if args.selftest else
                 f"export:{os.path.abspath(args.export)}" if args.export else "gpu")
    if args.imported:
        tasks = [dict(imported=os.path.join(args.imported, d))
                 for d in sorted(os.listdir(args.imported), key=lambda d: (len(d), d))
                 if os.path.exists(os.path.join(args.imported, d, "bwd.json"))]
    elif args.regressions:
        import regressions
        tasks = [dict(source=src, name=name) for name, src in regressions.CASES.items()]
    else:
        seeds = [x for spec in args.seeds for x in spec] if args.seeds else \
            range(args.start, args.start + args.count)
        fl = None if features == set(gen.ALL_FEATURES) else sorted(features)
        if args.require:
            seeds = [s for s in seeds
                     if set(args.require) <= set(gen.generate(s, fl).features)]
        tasks = [dict(seed=s, features=fl) for s in seeds]
    t0 = time.time()

    def progress(res):
        if args.verbose or res["outcome"] in ("mismatch", "race", "crash"):
            print(f"seed {res.get('seed')}: {res['outcome']} {res.get('cause', '')}"
                  f" ({res.get('time', 0):.1f}s)", flush=True)

    env = {"TRITON_ALWAYS_COMPILE": "1"} if args.always_compile else {}
    if args.race_check:
        if mode_name != "interpret-grad":
            ap.error("--race-check needs --interpret-grad (the interpreter runs the backward)")
        env[RACE_CHECK_ENV] = "1"
    if args.dump_derived:
        if mode_name != "cpu":
            ap.error("--dump-derived needs --cpu-only")
        env[DUMP_DERIVED_ENV] = os.path.abspath(args.dump_derived)
    if args.lowp_shadows:
        env[LOWP_SHADOWS_ENV] = args.lowp_shadows
    if args.grad_options:
        if not isinstance(args.grad_options, dict):
            ap.error("--grad-options takes a JSON object")
        env[GRAD_OPTIONS_ENV] = json.dumps(args.grad_options)
        if args.imported:
            ap.error("--grad-options applies where the backward is derived, not to --imported")
    results = run_tasks(tasks, mode_name, args.workers, args.timeout, env=env,
                        on_result=progress)
    summary = summarize(results)
    summary["mode"] = mode_name
    summary["grad_options"] = args.grad_options
    summary["seconds"] = round(time.time() - t0, 1)
    print()
    print_summary(summary, results)
    options = f", tritonad.grad options {json.dumps(args.grad_options)}" if args.grad_options \
        else ""
    print(f"\n({mode_name} mode{options}, {summary['seconds']}s, {args.workers} workers)")
    minimized = []
    if not args.no_minimize and not args.regressions and not args.imported and \
            mode_name in ("gpu", "cpu", "interpret", "interpret-grad"):
        targets = [r for r in results if r["outcome"] == "mismatch" or
                   (args.minimize_crashes and r["outcome"] == "crash")]
        for r in targets:
            print(f"\n=== minimizing seed {r['seed']} ({r['outcome']}: {r['cause']}) ===")
            minimized.append(minimize(r, mode_name, args.workers, timeout=args.timeout,
                                      env=env))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(summary=summary, results=results, minimized=minimized), f, indent=1,
                      default=str)
    bad = sum(summary["counts"].get(o, 0) for o in ("mismatch", "race", "crash"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
