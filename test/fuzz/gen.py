"""Random Triton kernels, each with an equivalent torch reference, for tritonad fuzzing.

``generate(seed, features=None, sizes=None, n_ops=None) -> Case`` builds ONE random
program and emits it twice, line for line with the same variable names: as a
``@triton.jit`` kernel and as a torch function (``reference``) computing the same outputs
from the same inputs in float64 on the kernel's *valid* elements only. ``Case.load()``
writes the module to a cache directory and imports it (Triton reads kernel sources with
``inspect``, so they must live in a real file).

A generated module holds:
  META        sizes, grid, constexprs and the runtime parameters in order; per pointer
              its role ("in": loaded, "out": stored), buffer shape, input domain and
              `view` (how the logical tensor sits in the buffer, see fuzz_ref.view); a
              parameter of kind "table" (row_table) is an int32 buffer of its `value`
  kernel      the @triton.jit kernel (plus @triton.jit helpers)
  reference(T, S, ctx)
              T: name -> float64 buffer of every input pointer, S: name -> scalar
              argument (a table's list of values), ctx: fuzz_ref.Ctx recording
              selection margins. Returns
              {output pointer: (logical value, written mask, id of the program that
              writes each element)}.

Grammar (each feature switchable, see FEATURES): a layout (flat 1-D blocks, one program
per row, 2-D tiles, a row loop over column chunks, or a row-block loop over 2-D column
tiles), loaded inputs (full tensors, row / column vectors, a one-element scalar, the
operands of a tl.dot), a chain of ops over them, outputs stored in the case's dtype
(overwrite_const: some columns of an output stored again, as a constant; other_active: a
masked load padded with a differentiated value, reduced over its padding lanes).
Well-conditioning is by construction: every value carries an interval, and an op whose
operand could leave its domain (log / sqrt / div / pow near 0, exp of large values) first
gets a smooth adapter (a*a*c + 0.5, sigmoid(a) + 0.5, a * c, ...); masked lanes load an
in-domain `other` so even they stay finite (a dot's operands load 0 there: the dot's
interval includes 0); reductions and dots are scaled by 1/blocksize (1/K). Selections
(max/min, tl.where on computed values, data-dependent if) record their distance from a tie
in ctx so the runner can re-draw data that is too close.

Load sites: the reference reads every input through `R.load` once per load the kernel
makes (a reload, the shifted load, each loop's own loads are each a new `R.load`), so the
runner can bound the rounding of the backward's accumulation per addition (run.py).

Random streams: `rng` draws the original grammar; the features added later (tileloop,
while, dot, dot_kloop) draw from `xrng` only, so a seed that does not use them generates
the same kernel as before they existed. Issue 39's features (ISSUE39_FEATURES: what
library kernels do and the grammar never produced) each draw from a stream of their own
(`frng[feature]`), likewise: a seed that uses none of them is unchanged; so do the
features added after them (OWN_STREAM_FEATURES: reload_loop, row_table, pid_nested,
overwrite_const, reused_pointer_name, other_active).

Launch (issue 39): META may name `launch_constexprs` (those a user passes: not the ones
an autotune config, a heuristic or a default sets), `autotune` (the index of the
generated config in the module's CONFIGS, the tuned names, whether the configs keep the
layout), `heuristics`; such a module defines `launch_grid(META)`. Persistent cases (`P`
in the reference) count programs modulo the grid.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import math
import os
import random
import sys
import tempfile
import types
from typing import Dict, List, Optional, Sequence

FUZZ_DIR = os.path.dirname(os.path.abspath(__file__))

FEATURES = {
    # layouts
    "flat": "1-D grid, one program per BLOCK elements of a vector",
    "rows": "1-D grid, one program per row, BLOCK_N >= N",
    "grid2d": "2-D grid of [BM, BN] tiles",
    "loop": "one program per row looping over column chunks: for k in range(0, N, BLOCK)",
    "tileloop": "one program per BLOCK_M rows looping over column blocks: a 2-D "
                "[BLOCK_M, BLOCK_N] tile per iteration, addressed with a row stride argument",
    # loops
    "loop_acc": "loop-carried accumulation acc += f(x) (vector or scalar)",
    "loop_max": "loop-carried running max / min (not an accumulation)",
    "loop_lse": "loop-carried online logsumexp (running max and rescaled sum)",
    "loop_decay": "loop-carried decaying sum acc = 0.75 * acc + f(x)",
    "loop_store": "a second loop storing each iteration's own block",
    "loop_running_store": "the running value stored every iteration",
    "loop_inner_store": "the carrying loop stores a block computed from the running value",
    "ptr_advance": "pointers advanced in the loop (p += BLOCK)",
    "while": "a `while k < N:` loop (scf.while; the condition on integers only) instead of "
             "`for k in range(...)`: the carrying loop (mostly with accumulations only), the "
             "dot's K loop, rarely a storing loop",
    # matrix products
    "dot": "tl.dot of a [BM, K] tile of a0 and a [K, BN] tile of b0 (grid2d; in tileloop "
           "with a0 loaded before the loop): fp32 with input_precision=\"ieee\", fp16 / "
           "bf16 operands with fp32 accumulation; K, BM, BN >= 16",
    "dot_kloop": "the dot's K dimension in a loop: acc = tl.dot(a, b, acc) (or acc += "
                 "tl.dot(a, b)) over K chunks, a masked K tail",
    # elementwise math
    "exp": "tl.exp", "log": "tl.log of positive values", "sqrt": "tl.sqrt of positive values",
    "rsqrt": "tl.rsqrt of positive values", "tanh": "libdevice.tanh",
    "sigmoid": "tl.sigmoid", "erf": "tl.erf", "trig": "tl.sin / tl.cos",
    "div": "division by values away from 0", "minmax": "tl.maximum / tl.minimum",
    "where_data": "tl.where on a comparison of data", "where_index": "tl.where on indices",
    "pow_int": "libdevice.pow with integer-valued exponents",
    "pow_frac": "libdevice.pow with fractional exponents of positive values",
    "pow_tensor": "libdevice.pow with a tensor exponent",
    "scalar_arg": "a runtime float argument in the math",
    # broadcasts
    "bcast_row": "row vectors w[N] broadcast over rows",
    "bcast_col": "column vectors c[M] broadcast over columns",
    "scalar_input": "a one-element input broadcast everywhere",
    # reductions and scans
    "reduce_sum": "tl.sum over an axis", "reduce_max": "tl.max over an axis",
    "reduce_min": "tl.min over an axis", "reduce_all": "reductions with no axis",
    "cumsum": "tl.cumsum",
    # addressing
    "mask_tail": "sizes that are not multiples of the block (masked tails)",
    "strided": "inputs / outputs with a row stride wider than the row (column slices)",
    "transposed": "inputs read through a transposed view (column stride argument)",
    "block_ptr": "tl.make_block_ptr / tl.advance / boundary_check / padding_option",
    "helper_load": "a @triton.jit helper receiving a pointer and loading through it",
    "reload": "one input loaded at two places",
    "shifted_load": "an input loaded again one element further or back (x[i+1], x[i-1]): "
                    "blocks overlap",
    "reload_loop": "an input loaded again at the same offsets inside a loop after its first "
                   "load (one load site outside a loop, one in it)",
    "overlap": "rows overlapping in memory (row stride < N, checked at run time)",
    # control flow and structure
    "if_runtime": "scf.if on a runtime integer argument",
    "if_data": "scf.if on a per-program data value",
    "early_return": "if pid >= limit: return",
    "pid_decode": "grid2d tiles from a 1-D grid: pid // n, pid % n (row- or column-major) or "
                  "the matmul tutorial's GROUP_M swizzle",
    "helpers": "@triton.jit math helpers",
    "multi_out": "several outputs",
    "atomic_out": "an output written by tl.atomic_add into its zeroed buffer (the same "
                  "values as a store: each element is added once)",
    # dtypes
    "fp16": "fp16 buffers (math in fp32)", "bf16": "bf16 buffers (math in fp32)",
    # what library kernels do and the features above never produced (issue 39); each
    # draws from its own stream (see ISSUE39_FEATURES)
    "pad_inf": "masked lanes loaded with other=-inf (or +inf) and used as padding: max / "
               "min reductions over them without a tl.where, softmax rows (p, p * x), a "
               "logsumexp, an entropy and an expected value (tl.where(mask, p * logp, 0)), "
               "x * sum(exp(x)); in row loops an online logsumexp over -inf-padded chunks "
               "starting from m = -inf",
    "shared_weight": "an fp16 / bf16 case whose row vector (or one-element scalar) is "
                     "shared by hundreds of programs, or whose rows are long: its gradient "
                     "is a long sum, which must be accumulated in fp32 and rounded once "
                     "(the runner's fp32-shadow tolerance allows no more)",
    "autotune": "the kernel under @triton.autotune over 2-3 configs (block sizes, "
                "num_warps, num_stages) and a grid callable of META; where the configs "
                "change the layout the runner makes the autotuner pick the generated one "
                "(its benchmark replaced), else it tunes for real on a GPU",
    "heuristics": "a block size computed by @triton.heuristics from the arguments "
                  "(not passed at launch; the grid a callable of META)",
    "early_exit": "an early return on a program condition: `if pid * BLOCK >= n: return` "
                  "with more programs than blocks, or `if pid % K == R: return`; at the top "
                  "(around the loops of loop layouts) or after the loads",
    "persistent": "a persistent grid-stride loop over rows (or blocks): for row in "
                  "range(tl.program_id(0), M, tl.num_programs(0)) storing each one, with "
                  "fewer programs than rows; shared vectors loaded once before the loop",
    "constexpr_default": "constexprs with default values, not passed at launch: a block "
                         "size, a SCALE in the math, a FLAG selecting a branch",
    "launch_kw_name": "parameters named like launch keywords: a constexpr num_stages "
                      "passed to tl.range (or num_warps used as a number), a runtime float "
                      "named grid (the runner launches with positional arguments)",
    "persistent_runtime_stride": "a persistent loop whose row length and strides are "
                                 "runtime arguments (the tutorial's softmax): its stores are "
                                 "differentiated under a condition each launch checks "
                                 "(marks persistent cases; no stream of its own)",
    "pad_dot": "a tl.dot operand (grid2d, K whole) whose masked rows / columns load -inf or "
               "NaN instead of 0; the product's masked lanes are dropped by tl.where(mask, "
               "., 0) as attention drops masked scores, and its adjoint meets the padding",
    "custom_combiner": "pad_inf's reductions over padded lanes through a user's combine_fn "
                       "(tl.reduce with a @triton.jit sum, or a max / min by tl.where)",
    "row_table": "the program's row (tileloop: row block) read from an int32 table "
                 "argument, row = tl.load(row_order + tl.program_id(0)), as gather / "
                 "scatter kernels (MoE token permutation, embedding rows) read it: a random "
                 "permutation of the rows (and, with a bound early exit, sentinel rows past "
                 "the end); everything indexed by row uses it (rows, loop, tileloop and "
                 "persistent rows: the grid-stride loop reads the table per iteration)",
    "pid_nested": "pid_decode's digit of a digit: rest = pid // num_pid_n, pid_n = pid % "
                  "num_pid_n, pid_m = rest % num_pid_m (flash-linear-attention's (tile, "
                  "batch, head) decode)",
    "overwrite_const": "after a full-shape output's store, a second store of a constant "
                       "(exact in fp16 / bf16) over the columns with index % k == r, under "
                       "mask & (...) (as flash-linear-attention's chunk_gla zeroes the upper "
                       "triangle of its scores): right after it, under a branch (always "
                       "true, on the program's row, on a runtime flag) or in a loop; the "
                       "constant takes the upstream gradient away from those elements "
                       "(not for block-pointer or atomic_add outputs)",
    "reused_pointer_name": "one local name for the addresses of the full-shape loads and "
                           "stores: p = x_ptr + offs; x = tl.load(p, ...); p = y_ptr + "
                           "offs; tl.store(p, ...) (fla's chunk_delta_h reuses p_v so): "
                           "not in place",
    "other_active": "a masked load of an input padded with a differentiated value, "
                    "tl.load(x + offs, mask=mask, other=v) (v a one-element input, a "
                    "per-row / per-column vector, a per-program value computed from the "
                    "inputs, maybe scaled), reduced over the padded axis without a tl.where "
                    "(sum, sum of squares, sum of exp, max / min): the lanes the mask turns "
                    "off reach the result, their gradient is v's (block layouts with "
                    "padding lanes; computed values in fp32 only: loaded ones are exact in "
                    "the buffer's dtype, which `other` is cast to)",
    "saturating": "a sigmoid-family function of a value scaled so that exp overflows fp32 "
                  "in part of the lanes (|argument| up to 200): tl.sigmoid, a hand-written "
                  "1 / (1 + tl.exp(-x)), x * tl.sigmoid(c x), a softplus thresholded with "
                  "tl.where(x > 20, x, tl.log(1 + tl.exp(x))): where exp overflows, the "
                  "adjoint reaching it underflows to 0, and the gradient there is 0 or the "
                  "selected branch's, not 0 * inf = NaN",
    "dot_wrap": "the matmul tutorial's wrapped operand tiles (grid2d dots): a0's rows "
                "addressed as rm % M and b0's columns as rn % N, loaded without a row / "
                "column mask (the lanes past the extent read the first rows again, and the "
                "stores mask them off): the gradients' re-parallelized parts leave those "
                "lanes' zero contributions out",
}
ALL_FEATURES = frozenset(FEATURES)
# Issue 39's features, in the order of their streams (each draws from its own, so turning
# one on or off changes no other's draws, and a seed that uses none of them generates the
# kernel it generated before they existed).
ISSUE39_FEATURES = ("pad_inf", "shared_weight", "autotune", "heuristics", "early_exit",
                    "persistent", "constexpr_default", "launch_kw_name", "pad_dot",
                    "custom_combiner")
# Features added later that draw from streams of their own too (after issue 39's).
OWN_STREAM_FEATURES = ("reload_loop", "row_table", "pid_nested", "overwrite_const",
                       "reused_pointer_name", "other_active", "saturating", "dot_wrap")
LAYOUTS = ("flat", "rows", "grid2d", "loop", "tileloop")
DTYPES = {"fp32": "tl.float32", "fp16": "tl.float16", "bf16": "tl.bfloat16"}
DOMAINS = {"any": (-2.0, 2.0), "pos": (0.5, 2.0)}
OTHER = 1.0           # masked lanes load this: inside every input domain

PRELUDE = '''import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

import fuzz_ref as R
'''


@dataclasses.dataclass
class Case:
    seed: int
    source: str                 # the module text
    meta: dict
    features: List[str]         # features the program actually uses
    enabled: List[str]          # features it was allowed to use
    sizes: Dict[str, int]
    n_ops: int

    @property
    def name(self):
        return self.meta["name"]

    def load(self, directory: Optional[str] = None):
        """Writes the module to a file and imports it (a fresh module each call)."""
        return load_source(self.source, f"fuzzcase_{self.seed}", directory)


def cache_dir() -> str:
    d = os.environ.get("TRITONAD_FUZZ_DIR") or os.path.join(
        tempfile.gettempdir(), f"tritonad-fuzz-{os.getuid() if hasattr(os, 'getuid') else 0}")
    os.makedirs(d, exist_ok=True)
    return d


def load_source(source: str, stem: str, directory: Optional[str] = None):
    if FUZZ_DIR not in sys.path:
        sys.path.insert(0, FUZZ_DIR)
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    name = f"{stem}_{digest}"
    path = os.path.join(directory or cache_dir(), name + ".py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------
# values and intervals
# ---------------------------------------------------------------------------

@dataclasses.dataclass
class V:
    name: str
    shape: tuple          # per kernel axis: does the value vary along it
    lo: float
    hi: float
    leaf: bool = False    # a loaded input: exactly equal in kernel and reference
    root: bool = False    # carries inputs of its own (a dot): folded into an output always
    used: bool = False
    # expressions this value may equal exactly on some lanes (itself, and for selections
    # -- where, max, min, if, max/min reductions -- whatever they select from): a max/min
    # of two values sharing one would tie by construction
    sel: frozenset = frozenset()

    def __post_init__(self):
        self.sel = frozenset(self.sel) | {self.name}

    @property
    def mag(self):
        return max(abs(self.lo), abs(self.hi))


def _c(x: float) -> float:
    """A constant as it will be printed (6 significant digits)."""
    return float(f"{x:.6g}")


def _lit(x: float) -> str:
    return repr(_c(x))


def _corners(f, a, b):
    vals = [f(x, y) for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
    return min(vals), max(vals)


def _or(*shapes):
    return tuple(any(s[i] for s in shapes) for i in range(len(shapes[0])))


def _next_pow2(n):
    p = 1
    while p < n:
        p *= 2
    return p


# ---------------------------------------------------------------------------
# the generator
# ---------------------------------------------------------------------------

class _Gen:
    def __init__(self, seed, enabled, sizes, n_ops):
        self.seed = seed
        self.rng = random.Random(seed)
        self.alt = random.Random(seed * 1000003 + 7)   # re-draws when a pick is disabled
        self.arng = random.Random(seed * 7919 + 3)     # adapters
        self.xrng = random.Random(seed * 1000033 + 17)  # tileloop / while / dot decisions
        self.drng = random.Random(seed * 1000037 + 29)  # pid_decode
        self.wrng = random.Random(seed * 1000039 + 31)  # atomic_out
        self.srng = random.Random(seed * 1000043 + 41)  # shifted_load's direction
        self.frng = {f: random.Random(seed * 1000081 + 37 * i + 1)
                     for i, f in enumerate(ISSUE39_FEATURES + OWN_STREAM_FEATURES)}
        self.enabled = set(enabled)
        self.used = set()
        self.size_override = dict(sizes or {})
        self.n_ops_override = n_ops
        self.k: List[str] = []      # kernel body lines
        self.t: List[str] = []      # reference body lines
        self.ki = 1                 # kernel indentation
        self.ti = 1
        self.count = 0
        self.helpers: Dict[str, str] = {}
        self.params: List[dict] = []
        self.int_params: List[dict] = []
        self.float_params: List[dict] = []
        self.outputs: Dict[str, str] = {}   # name -> torch expression of (value, written)
        self.index_ok = False               # cols / offs / rm / rn defined here
        self.seen = {}                      # (kernel expression, indent) -> V
        self.atomic_ptrs = set()            # outputs written by tl.atomic_add
        # (every full-shape address has one type in a kernel: the name may be reused
        # across loops and branches)
        self.reused_pointer_name = self.fwant("reused_pointer_name", 0.25)

    # -- bookkeeping ----------------------------------------------------------
    def want(self, feat, p):
        """One draw, always made (so later choices stay put when a feature is turned
        off): True when the draw hits and `feat` is enabled."""
        hit = self.rng.random() < p
        return hit and feat in self.enabled

    def xwant(self, feat, p):
        """Like `want`, drawing from xrng (the stream of the later features)."""
        hit = self.xrng.random() < p
        return hit and feat in self.enabled

    def fwant(self, feat, p):
        """Like `want`, drawing from `feat`'s own stream (the issue-39 features)."""
        hit = self.frng[feat].random() < p
        return hit and feat in self.enabled

    def use(self, feat):
        self.used.add(feat)

    def write(self, args, ptr=None):
        """The statement writing an output: tl.store(args), or (atomic_out, its own
        stream wrng) tl.atomic_add(args) into the zeroed buffer, the same values. (Not
        in bf16: Triton's interpreter, which checks the generator, has no bf16 atomics.)
        `ptr`: the output's parameter where args does not start with it."""
        if (self.wrng.random() < 0.25 and "atomic_out" in self.enabled
                and self.dtype != "bf16"):
            self.use("atomic_out")
            self.atomic_ptrs.add(ptr or args.split(" ", 1)[0])
            return f"tl.atomic_add({args})"
        return f"tl.store({args})"

    def pick_weighted(self, table, available):
        """table: [(key, weight)]; draws from the whole table, re-draws with `alt`
        among the available keys if the pick is not available."""
        total = sum(w for _, w in table)
        u = self.rng.random() * total
        acc = 0.0
        choice = table[-1][0]
        for key, w in table:
            acc += w
            if u < acc:
                choice = key
                break
        if choice in available:
            return choice
        avail = [(k, w) for k, w in table if k in available]
        if not avail:
            return None
        total = sum(w for _, w in avail)
        u = self.alt.random() * total
        acc = 0.0
        for key, w in avail:
            acc += w
            if u < acc:
                return key
        return avail[-1][0]

    def kl(self, s):
        self.k.append("    " * self.ki + s)

    def tl_(self, s):
        self.t.append("    " * self.ti + s)

    def fresh(self, prefix="t"):
        self.count += 1
        return f"{prefix}{self.count}"

    def assign(self, kexpr, texpr, shape, lo, hi, prefix="t"):
        name = self.fresh(prefix)
        self.kl(f"{name} = {kexpr}")
        self.tl_(f"{name} = {texpr}")
        out = V(name, tuple(shape), float(lo), float(hi))
        twin = self.seen.get((kexpr, self.ki))
        if twin is not None:   # the same expression again: equal everywhere
            out.sel |= twin.sel
        self.seen[(kexpr, self.ki)] = out
        return out

    # -- layout --------------------------------------------------------------
    def choose_layout(self):
        avail = [l for l in LAYOUTS if l in self.enabled]
        if "tileloop" in avail and "loop" not in avail:
            avail.append("loop")      # tileloop takes its share from loop's
        layout = self.pick_weighted([("flat", 2), ("rows", 3), ("grid2d", 3), ("loop", 3)],
                                    avail)
        tile = self.xrng.random() < 0.45
        if layout == "loop" and "tileloop" in self.enabled and (tile or "loop" not in self.enabled):
            layout = "tileloop"
        if layout is None:
            layout = "rows"
        else:
            self.use(layout)
        self.layout = layout
        self.ndim_k = 2 if layout in ("grid2d", "tileloop") else 1   # kernel axes
        # the later features' draws, made here in a fixed order (xrng)
        self.dot = self.xwant("dot", 0.4 if layout == "grid2d" else 0.3) and \
            layout in ("grid2d", "tileloop")
        self.dot_kloop = self.xwant("dot_kloop", 0.5) and self.dot and layout == "grid2d"
        self.while_draws = [self.xrng.random() for _ in range(3)]
        self.xdraws = [self.xrng.random() for _ in range(4)]
        # issue 39's features that depend on the layout only (each from its own stream)
        self.persistent = self.fwant("persistent", 0.2) and layout in ("rows", "flat")
        self.pad_dot = self.fwant("pad_dot", 0.4) and self.dot and layout == "grid2d" and \
            not self.dot_kloop
        self.dot_wrap = self.fwant("dot_wrap", 0.5) and self.dot and layout == "grid2d" and \
            not self.pad_dot
        self.custom_combiner = self.fwant("custom_combiner", 0.4)
        self.pad = self.fwant("pad_inf", 0.15)
        self.exit_draw = self.fwant("early_exit", 0.12) and not self.persistent
        self.autotune = self.fwant("autotune", 0.1)
        self.heuristics = self.fwant("heuristics", 0.08)
        cd = self.frng["constexpr_default"]
        self.defaults_draw = self.fwant("constexpr_default", 0.08)
        self.default_block, self.out_scale, self.out_flag = (
            cd.random() < 0.6, cd.choice([0.5, 0.75, 1.25, 1.5, 2.0]), cd.random() < 0.5)
        kw = self.frng["launch_kw_name"]
        keyword = self.fwant("launch_kw_name", 0.08)
        kind = kw.choice(["stages", "warps", "grid"])
        self.alpha_name = "grid" if keyword and kind == "grid" else "alpha"
        # a constexpr named num_stages passed to tl.range (loop layouts), or num_warps used
        # as a number; not under autotune (its configs set these options themselves)
        self.stages_param = keyword and kind == "stages" and layout in ("loop", "tileloop") \
            and not self.autotune
        self.warps_param = keyword and kind in ("stages", "warps") and not self.stages_param \
            and not self.autotune
        self.kw_value = kw.choice([1, 2, 3]) if self.stages_param else kw.choice([2, 4, 8])
        self.stages_used = False
        rt = self.frng["row_table"]
        self.row_table = self.fwant("row_table", 0.4) and layout in ("rows", "loop", "tileloop")
        # the loaded row cast to int64 (not a row block: tileloop's block pointers take
        # 32-bit offsets)
        self.row_table_wide = rt.random() < 0.5 and layout != "tileloop"

    def choose_dtype(self):
        r = self.rng.random()
        dt = "fp32" if r < 0.6 else ("fp16" if r < 0.8 else "bf16")
        if dt != "fp32" and dt not in self.enabled:
            dt = "fp32"
        # shared_weight: an fp16 / bf16 case (its own stream)
        self.shared = self.fwant("shared_weight", 0.1) and \
            self.layout in ("rows", "loop", "grid2d", "tileloop")
        low = [d for d in ("bf16", "fp16") if d in self.enabled]
        if self.shared and dt == "fp32":
            self.shared = bool(low)
            if low:
                dt = self.frng["shared_weight"].choice(low)
        if dt != "fp32":
            self.use(dt)
        self.dtype = dt
        self.DT = DTYPES[dt]

    def choose_sizes(self):
        r = self.rng
        tail = self.want("mask_tail", 0.8)
        low = self.dtype != "fp32"
        o = self.size_override
        s = {}
        if self.layout == "flat":
            s["BLOCK"] = r.choice([32, 64, 128, 256])
            nb = r.randint(1, 12)
            t = r.randint(1, s["BLOCK"] - 1)
            s["BLOCK"] = o.get("BLOCK", s["BLOCK"])
            s["n"] = o.get("n", s["BLOCK"] * nb + (t if tail else 0))
        elif self.layout == "rows":
            m = r.randint(2, 24 if low else 48)
            n_tail = r.randint(3, 300)
            n_pow = r.choice([16, 32, 64, 128, 256])
            s["M"] = o.get("M", m)
            s["N"] = o.get("N", n_tail if tail else n_pow)
            s["BLOCK_N"] = max(16, _next_pow2(s["N"]))
        elif self.layout == "grid2d":
            bm, bn = r.choice([(16, 16), (16, 32), (32, 16), (32, 32), (16, 64), (64, 16)])
            nbm, nbn = r.randint(1, 4 if low else 6), r.randint(1, 5)
            tm, tn = r.randint(1, bm - 1), r.randint(1, bn - 1)
            s["BM"], s["BN"] = o.get("BM", bm), o.get("BN", bn)
            s["M"] = o.get("M", s["BM"] * nbm + (tm if tail else 0))
            s["N"] = o.get("N", s["BN"] * nbn + (tn if tail else 0))
        elif self.layout == "tileloop":
            bm = r.choice([2, 4, 8, 16, 16]) if not self.dot else r.choice([16, 32])
            bn = r.choice([16, 32, 64])
            nch = r.randint(1, 4)
            nbm = r.randint(1, 3)
            tm, tn = r.randint(1, max(1, bm - 1)), r.randint(1, bn - 1)
            s["BM"], s["BN"] = o.get("BM", bm), o.get("BN", bn)
            s["M"] = o.get("M", s["BM"] * nbm + (tm if tail and s["BM"] > 1 else 0))
            s["N"] = o.get("N", s["BN"] * nch + (tn if tail else 0))
        else:
            b = r.choice([16, 32, 64])
            nch = r.randint(1, 5)
            t = r.randint(1, b - 1)
            m = r.randint(2, 16 if low else 32)
            s["BLOCK"] = o.get("BLOCK", b)
            s["M"] = o.get("M", m)
            s["N"] = o.get("N", s["BLOCK"] * nch + (t if tail else 0))
        if self.dot:   # the dot's K (xrng)
            x = self.xrng
            bk = x.choice([16, 32, 64] if self.layout == "grid2d" else [16, 32])
            nk, kt = x.randint(1, 3), x.randint(1, bk - 1)
            s["BK"] = o.get("BK", bk)
            if self.dot_kloop:
                s["K"] = o.get("K", s["BK"] * nk + (kt if tail and x.random() < 0.6 else 0))
        if self.shared:
            self.shared_sizes(s, o)
        for key in s:
            s[key] = max(1, int(s[key]))
        if self.layout in ("flat",):
            s["n"] = max(s["n"], 2)
        else:
            s["N"] = max(s["N"], 2)
        lay = self.layout
        if (lay == "flat" and s["n"] % s["BLOCK"]) or (lay == "rows" and s["N"] != s["BLOCK_N"]) \
                or (lay in ("grid2d", "tileloop") and (s["M"] % s["BM"] or s["N"] % s["BN"])) \
                or (lay == "loop" and s["N"] % s["BLOCK"]) or (s.get("K", 0) % s.get("BK", 1)):
            self.use("mask_tail")
        self.sizes = s
        if self.persistent:   # fewer programs than rows (blocks)
            count = s["M"] if lay == "rows" else -(-s["n"] // s["BLOCK"])
            f = self.frng["persistent"]
            self.programs = max(1, min(count - 1, f.choice([1, 2, 3, 4, 5, 7, count // 2])))
            self.persistent = count >= 2
            # the row length and strides as constexprs: tritonad proves the rows disjoint
            # from them; runtime ones (the tutorial's softmax) each launch checks
            self.const_sizes = f.random() < 0.6

    def shared_sizes(self, s, o):
        """shared_weight: hundreds of programs share the row vector (or scalar), or (row
        layouts) a few long rows; at most ~2e5 elements."""
        f = self.frng["shared_weight"]
        lay = self.layout
        kind = f.choice(["programs", "programs", "long_rows"]) if lay in ("rows", "loop") \
            else "programs"
        self.shared_kind = kind
        if kind == "long_rows":
            s["M"] = o.get("M", f.randint(3, 12))
            if lay == "rows":
                s["N"] = o.get("N", f.randint(700, 3000))
                s["BLOCK_N"] = _next_pow2(s["N"])
            else:
                s["N"] = o.get("N", s["BLOCK"] * f.randint(20, 60) + s["N"] % s["BLOCK"])
        elif lay in ("rows", "loop"):
            s["M"] = o.get("M", f.randint(160, min(480, 200_000 // s["N"])))
        else:
            bm = s["BM"]
            most = max(8, min(64, 200_000 // (bm * s["N"])))
            s["M"] = o.get("M", bm * f.randint(min(8, most), most) + s["M"] % bm)

    # -- geometry helpers (per layout) ---------------------------------------
    @property
    def SHAPE(self):
        s = self.sizes
        return (s["n"],) if self.layout == "flat" else (s["M"], s["N"])

    def bs_dims(self, axis):
        """(block shape, logical dims) of a reduction/scan over kernel `axis` (None: all)."""
        s = self.sizes
        if self.layout == "flat":
            return f"({s['BLOCK']},)", "(0,)", s["BLOCK"]
        if self.layout == "rows":
            return f"(1, {s['BLOCK_N']})", "(1,)", s["BLOCK_N"]
        bm, bn = s["BM"], s["BN"]
        if axis == 0:
            return f"({bm}, {bn})", "(0,)", bm
        if axis == 1:
            return f"({bm}, {bn})", "(1,)", bn
        return f"({bm}, {bn})", "(0, 1)", bm * bn

    def full_shape(self):
        return (True,) * self.ndim_k

    def scalar_shape(self):
        return (False,) * self.ndim_k

    # -- inputs ---------------------------------------------------------------
    def add_ptr(self, name, role, shape, view, domain=None):
        self.params.append(dict(name=name, kind="ptr", role=role, shape=list(shape),
                                view=list(view), domain=domain))

    def add_int(self, name, value):
        self.int_params.append(dict(name=name, kind="i32", value=int(value)))

    def matrix_input(self, i, domain):
        """A full-shape input: returns (name, address pieces)."""
        s = self.sizes
        name = f"x{i}"
        ptr = f"{name}_ptr"
        strided = self.want("strided", 0.3)
        transposed = self.layout != "flat" and self.want("transposed", 0.15)
        overlap = self.layout != "flat" and self.want("overlap", 0.12)
        info = dict(name=name, ptr=ptr, colstride="1", domain=domain)
        if self.layout == "flat":
            if strided:
                self.use("strided")
                k = self.rng.choice([2, 3])
                self.add_ptr(ptr, "in", (s["n"], k), ("col0",), domain)
                self.add_int(f"stride_{name}", k)
                info["stride"] = f"stride_{name}"
            else:
                self.add_ptr(ptr, "in", (s["n"],), ("full",), domain)
                info["stride"] = None
            return info
        m, n = s["M"], s["N"]
        if overlap and n >= 2:
            self.use("overlap")
            st = self.rng.randint(1, n - 1)
            self.add_ptr(ptr, "in", ((m - 1) * st + n,), ("overlap", m, n, st), domain)
            self.add_int(f"stride_{name}", st)
            info["stride"] = f"stride_{name}"
        elif transposed:
            self.use("transposed")
            self.add_ptr(ptr, "in", (n, m), ("t",), domain)
            self.add_int(f"stride_{name}", 1)
            self.add_int(f"stride_{name}n", m)
            info["stride"] = f"stride_{name}"
            info["colstride"] = f"stride_{name}n"
        elif strided:
            self.use("strided")
            pad = self.rng.randint(1, 5)
            self.add_ptr(ptr, "in", (m, n + pad), ("cols", n), domain)
            self.add_int(f"stride_{name}", n + pad)
            info["stride"] = f"stride_{name}"
        else:
            self.add_ptr(ptr, "in", (m, n), ("cols", n), domain)
            self.add_int(f"stride_{name}", n)
            info["stride"] = f"stride_{name}"
        return info

    def torch_load(self, ptr):
        """The torch expression of one load site of input `ptr`, in the logical shape
        (R.load records the site; vectors and scalars are broadcast after it)."""
        p = self.param(ptr)
        kind = ptr[0]
        shape = self.SHAPE
        if kind == "w":
            return f"R.load(ctx, T, {ptr!r})[None, :].expand({shape})"
        if kind == "c":
            return f"R.load(ctx, T, {ptr!r})[:, None].expand({shape})"
        if kind == "s":
            return f"R.load(ctx, T, {ptr!r}).reshape({(1,) * len(shape)}).expand({shape})"
        return f"R.load(ctx, T, {ptr!r}, {tuple(p['view'])!r})"

    def plain_offsets(self, info):
        """The offsets of a full-shape input's elements (pointer arithmetic, no block ptr)."""
        st, cs = info.get("stride"), info["colstride"]
        if self.layout == "flat":
            return f"offs * {st}" if st else "offs"
        step = f" * {cs}" if cs != "1" else ""
        if self.layout in ("rows", "loop"):
            return f"row * {st} + cols{step}"
        return f"rm[:, None] * {st} + rn[None, :]{step}"

    def load_full(self, info, block_ptr_ok=True, helper_ok=True):
        """Kernel lines loading a full-shape input into info['name'] (not the torch side)."""
        name, ptr, st, cs = info["name"], info["ptr"], info.get("stride"), info["colstride"]
        lay = self.layout
        if block_ptr_ok and self.want("block_ptr", 0.25):
            self.use("block_ptr")
            if lay == "flat":
                bp = (f"tl.make_block_ptr(base={ptr}, shape=(n,), strides=({st or 1},), "
                      f"offsets=(pid * BLOCK,), block_shape=(BLOCK,), order=(0,))")
                check = "(0,)"
            elif lay == "rows":
                bp = (f"tl.make_block_ptr(base={ptr} + row * {st}, shape=(N,), strides=({cs},), "
                      f"offsets=(0,), block_shape=(BLOCK_N,), order=(0,))")
                check = "(0,)"
            else:
                bp = (f"tl.make_block_ptr(base={ptr}, shape=(M, N), strides=({st}, {cs}), "
                      f"offsets=(pid_m * BM, pid_n * BN), block_shape=(BM, BN), order=(1, 0))")
                check = "(0, 1)"
            self.kl(f"bp_{name} = {bp}")
            self.kl(f"{name} = tl.load(bp_{name}, boundary_check={check}, "
                    f"padding_option=\"zero\").to(tl.float32)")
            self.kl(f"{name} = tl.where(mask, {name}, {OTHER})")
            return
        offs = self.plain_offsets(info)
        if helper_ok and self.want("helper_load", 0.2):
            self.use("helper_load")
            self.helpers["_load_f32"] = (
                "@triton.jit\n"
                "def _load_f32(ptr, offs, mask):\n"
                f"    return tl.load(ptr + offs, mask=mask, other={OTHER}).to(tl.float32)\n")
            self.kl(f"{name} = _load_f32({ptr}, {offs}, mask)")
        else:
            self.kl(f"{name} = tl.load({self.address(ptr, offs)}, mask=mask, "
                    f"other={OTHER}).to(tl.float32)")

    def address(self, ptr, offs):
        """`ptr + offs` as a plain load's or store's address: with reused_pointer_name,
        the name p_reused assigned it first (only the spelling differs)."""
        if not self.reused_pointer_name:
            return f"{ptr} + {offs}"
        self.use("reused_pointer_name")
        self.kl(f"p_reused = {ptr} + {offs}")
        return "p_reused"

    # -- op emission ---------------------------------------------------------
    def pick(self, pool, pred=lambda v: True, rng=None):
        rng = rng or self.rng
        cands = [v for v in pool if pred(v)]
        if not cands:
            return None
        weights = [i + 1 for i in range(len(cands))]
        v = rng.choices(cands, weights)[0]
        return v

    def cap(self, v, pool):
        if v.mag > 12.0:
            c = _c(6.0 / v.mag)
            v2 = self.assign(f"{v.name} * {_lit(c)}", f"{v.name} * {_lit(c)}", v.shape,
                             min(v.lo * c, v.hi * c), max(v.lo * c, v.hi * c))
            v.used = True
            pool.append(v2)
            return v2
        return v

    def ensure_pos(self, v, pool, hi_max=8.0):
        """A value >= 0.25 (and <= hi_max) computed smoothly from v."""
        if v.lo >= 0.25 and v.hi <= hi_max:
            return v
        options = ["square"]
        if "sigmoid" in self.enabled:
            options.append("sigmoid")
        if "exp" in self.enabled:
            options.append("exp")
        how = self.arng.choice(options)
        v.used = True
        if how == "square":
            sq = max(v.lo ** 2, v.hi ** 2, 1e-6)
            c = _c(2.0 / sq)
            out = self.assign(f"{v.name} * {v.name} * {_lit(c)} + 0.5",
                              f"{v.name} * {v.name} * {_lit(c)} + 0.5", v.shape, 0.5, 0.5 + c * sq)
        elif how == "sigmoid":
            self.use("sigmoid")
            sg = lambda x: 1.0 / (1.0 + math.exp(-x))
            c = _c(min(1.0, 4.0 / max(v.mag, 1e-6)))
            out = self.assign(f"tl.sigmoid({v.name} * {_lit(c)}) + 0.5",
                              f"torch.sigmoid({v.name} * {_lit(c)}) + 0.5",
                              v.shape, 0.5 + sg(min(v.lo * c, v.hi * c)),
                              0.5 + sg(max(v.lo * c, v.hi * c)))
        else:
            self.use("exp")
            c = _c(1.0 / max(v.mag, 1e-6))
            out = self.assign(f"tl.exp({v.name} * {_lit(c)})", f"torch.exp({v.name} * {_lit(c)})",
                              v.shape, math.exp(min(v.lo * c, v.hi * c)),
                              math.exp(max(v.lo * c, v.hi * c)))
        pool.append(out)
        return out

    def ensure_bounded(self, v, pool, bound):
        if v.mag <= bound:
            return v
        c = _c(bound / v.mag * 0.999)
        v.used = True
        out = self.assign(f"{v.name} * {_lit(c)}", f"{v.name} * {_lit(c)}", v.shape,
                          min(v.lo * c, v.hi * c), max(v.lo * c, v.hi * c))
        pool.append(out)
        return out

    def ensure_away(self, v, pool):
        if (v.lo >= 0.25 or v.hi <= -0.25) and v.mag <= 12:
            return v
        return self.ensure_pos(v, pool)

    UNARY = [("exp", 3), ("log", 3), ("sqrt", 2), ("rsqrt", 1), ("tanh", 2), ("sigmoid", 2),
             ("erf", 2), ("trig", 2), ("pow_int", 2), ("pow_frac", 2), ("scalar_arg", 1),
             ("arith1", 3)]
    BINARY = [("arith2", 8), ("div", 3), ("minmax", 2), ("pow_tensor", 1)]

    def op_expr(self, pool, base=None):
        """Chooses an elementwise op and operands (emitting adapters first); returns
        (kexpr, texpr, shape, lo, hi, gap_lines, operands) without assigning; a selection
        leaves what it selects from in self.sel_of_last."""
        self.sel_of_last = frozenset()
        table = self.UNARY + self.BINARY + [("where_data", 2), ("where_index", 2)]
        avail = {k for k, _ in table if k in self.enabled or k in ("arith1", "arith2")}
        if not self.index_ok:
            avail.discard("where_index")
        kind = self.pick_weighted(table, avail)
        r = self.rng
        gaps = []
        a = base if base is not None else self.pick(pool)
        a.used = True
        if kind in dict(self.UNARY):
            if kind == "exp":
                a = self.ensure_bounded(a, pool, 3.0)
                k, t = f"tl.exp({a.name})", f"torch.exp({a.name})"
                lo, hi = math.exp(a.lo), math.exp(a.hi)
            elif kind in ("log", "sqrt", "rsqrt"):
                a = self.ensure_pos(a, pool)
                f = {"log": math.log, "sqrt": math.sqrt, "rsqrt": lambda x: 1 / math.sqrt(x)}[kind]
                k, t = f"tl.{kind}({a.name})", f"torch.{kind}({a.name})"
                lo, hi = sorted((f(a.lo), f(a.hi)))
            elif kind == "tanh":   # |x| <= 4: 1 - tanh(x)^2 keeps fp32 precision
                a = self.ensure_bounded(a, pool, 4.0)
                k, t = f"libdevice.tanh({a.name})", f"torch.tanh({a.name})"
                lo, hi = math.tanh(a.lo), math.tanh(a.hi)
            elif kind == "sigmoid":   # |x| <= 4: s * (1 - s) keeps fp32 precision
                a = self.ensure_bounded(a, pool, 4.0)
                sg = lambda x: 1.0 / (1.0 + math.exp(-x))
                k, t = f"tl.sigmoid({a.name})", f"torch.sigmoid({a.name})"
                lo, hi = sg(a.lo), sg(a.hi)
            elif kind == "erf":
                k, t = f"tl.erf({a.name})", f"torch.erf({a.name})"
                lo, hi = math.erf(a.lo), math.erf(a.hi)
            elif kind == "trig":
                fn = r.choice(["sin", "cos"])
                k, t = f"tl.{fn}({a.name})", f"torch.{fn}({a.name})"
                lo, hi = -1.0, 1.0
            elif kind == "pow_int":
                p = r.choice([2.0, 3.0, 2.0, -1.0])
                if p < 0:
                    a = self.ensure_away(a, pool)
                else:
                    a = self.ensure_bounded(a, pool, 3.0)
                k, t = f"libdevice.pow({a.name}, {p!r})", f"torch.pow({a.name}, {p!r})"
                if p == 2.0:
                    lo = 0.0 if a.lo <= 0 <= a.hi else min(a.lo ** 2, a.hi ** 2)
                    hi = max(a.lo ** 2, a.hi ** 2)
                elif p == 3.0:
                    lo, hi = a.lo ** 3, a.hi ** 3
                else:
                    lo, hi = sorted((1 / a.lo, 1 / a.hi))
            elif kind == "pow_frac":
                p = r.choice([0.5, 1.5, -0.5, 2.5, 0.75, -1.25, 1.3])
                a = self.ensure_pos(a, pool)
                k, t = f"libdevice.pow({a.name}, {p!r})", f"torch.pow({a.name}, {p!r})"
                lo, hi = sorted((a.lo ** p, a.hi ** p))
            elif kind == "scalar_arg":
                self.need_alpha = True
                k, t = f"{a.name} * {self.alpha_name}", f"{a.name} * S[{self.alpha_name!r}]"
                lo, hi = sorted((a.lo * self.alpha, a.hi * self.alpha))
            else:
                which = r.choice(["scale", "shift", "square", "neg"])
                if which == "scale":
                    c = _c(r.choice([-1, 1]) * r.uniform(0.3, 1.7))
                    k = t = f"{a.name} * {_lit(c)}"
                    lo, hi = sorted((a.lo * c, a.hi * c))
                elif which == "shift":
                    c = _c(r.uniform(-1.5, 1.5))
                    k = t = f"{a.name} + {_lit(c)}"
                    lo, hi = a.lo + c, a.hi + c
                elif which == "square":
                    k = t = f"{a.name} * {a.name}"
                    lo = 0.0 if a.lo <= 0 <= a.hi else min(a.lo ** 2, a.hi ** 2)
                    hi = max(a.lo ** 2, a.hi ** 2)
                else:
                    k = t = f"-{a.name}"
                    lo, hi = -a.hi, -a.lo
            if kind != "arith1":
                self.use(kind)
            return k, t, a.shape, lo, hi, gaps, [a]
        if kind in ("where_data", "where_index"):
            b = self.pick(pool, lambda v: v is not a) or self.pick(pool)
            b.used = True
            if kind == "where_index":
                cond_k, cond_t, cshape = self.index_cond()
            else:
                c = self.pick(pool, lambda v: v.leaf) if r.random() < 0.6 else None
                c = c or self.pick(pool)
                c.used = True
                thr = _c(r.uniform(c.lo + 0.2 * (c.hi - c.lo), c.hi - 0.2 * (c.hi - c.lo)))
                if c.leaf:
                    thr = round(thr * 4) / 4   # dyadic: the comparison is exact on both sides
                cond_k, cond_t, cshape = f"{c.name} > {thr!r}", f"{c.name} > {thr!r}", c.shape
                if not c.leaf:
                    gaps.append(f"ctx.gap('where', ({c.name} - {thr!r}).abs())")
            self.use(kind)
            k = f"tl.where({cond_k}, {a.name}, {b.name})"
            t = f"torch.where({cond_t}, {a.name}, {b.name})"
            ops = [a, b] + ([c] if kind == "where_data" else [])
            self.sel_of_last = a.sel | b.sel
            return k, t, _or(a.shape, b.shape, cshape), min(a.lo, b.lo), max(a.hi, b.hi), gaps, ops
        if kind == "minmax":   # operands that cannot tie by construction
            b = self.pick(pool, lambda v: not (v.sel & a.sel))
            if b is None:
                kind = "arith2"
        if kind != "minmax":
            b = self.pick(pool)
            if b is a:   # a - a, a / a: constant, nothing to differentiate
                b = self.pick(pool, lambda v: v is not a)
            if b is None:   # a is the only value: a constant operand instead
                c = _c(self.rng.uniform(0.5, 1.5))
                b = V(_lit(c), a.shape, c, c)
        b.used = True
        if kind == "arith2":
            opc = r.choice(["+", "-", "*"])
            if opc == "*":
                a = self.ensure_bounded(a, pool, 4.0)
                b = self.ensure_bounded(b, pool, 4.0)
                lo, hi = _corners(lambda x, y: x * y, a, b)
            elif opc == "+":
                lo, hi = a.lo + b.lo, a.hi + b.hi
            else:
                lo, hi = a.lo - b.hi, a.hi - b.lo
            k = t = f"{a.name} {opc} {b.name}"
        elif kind == "div":
            b = self.ensure_away(b, pool)
            k = t = f"{a.name} / {b.name}"
            lo, hi = _corners(lambda x, y: x / y, a, b)
        elif kind == "minmax":
            fn = r.choice(["maximum", "minimum"])
            k, t = f"tl.{fn}({a.name}, {b.name})", f"torch.{fn}({a.name}, {b.name})"
            if fn == "maximum":
                lo, hi = max(a.lo, b.lo), max(a.hi, b.hi)
            else:
                lo, hi = min(a.lo, b.lo), min(a.hi, b.hi)
            gaps.append(f"ctx.gap({fn!r}, ({a.name} - {b.name}).abs())")
            self.sel_of_last = a.sel | b.sel
        else:  # pow_tensor
            a = self.ensure_pos(a, pool)
            b = self.ensure_bounded(b, pool, 2.0)
            k, t = f"libdevice.pow({a.name}, {b.name})", f"torch.pow({a.name}, {b.name})"
            lo, hi = _corners(lambda x, y: x ** y, a, b)
        if kind != "arith2":
            self.use(kind)
        return k, t, _or(a.shape, b.shape), lo, hi, gaps, [a, b]

    def index_cond(self):
        r = self.rng
        mod = r.choice([2, 3, 5])
        rem = r.randrange(mod)
        s = self.sizes
        if self.layout == "flat":
            idx_k, idx_t, shape = "offs", f"R.index({self.SHAPE}, 0, _like)", (True,)
        elif self.layout in ("rows", "loop"):
            idx_k, idx_t, shape = "cols", f"R.index({self.SHAPE}, 1, _like)", (True,)
        elif r.random() < 0.5:
            idx_k, idx_t, shape = "rn[None, :]", f"R.index({self.SHAPE}, 1, _like)", (False, True)
        else:
            idx_k, idx_t, shape = "rm[:, None]", f"R.index({self.SHAPE}, 0, _like)", (True, False)
        if r.random() < 0.5:
            return f"({idx_k} % {mod}) == {rem}", f"({idx_t} % {mod}) == {rem}", shape
        lim = r.randint(1, max(1, (s.get("n") or s.get("N")) - 1))
        return f"{idx_k} < {lim}", f"{idx_t} < {lim}", shape

    def emit_elementwise(self, pool):
        k, t, shape, lo, hi, gaps, ops = self.op_expr(pool)
        for g in gaps:
            self.tl_(g)
        if self.want("helpers", 0.2) and ("mask" not in k and "offs" not in k and
                                          "cols" not in k and self.alpha_name not in k and
                                          "rm[" not in k and "rn[" not in k):
            self.use("helpers")
            names = []
            for v in ops:
                if v.name not in names:
                    names.append(v.name)
            hname = f"_h{len(self.helpers)}"
            params = [f"a{i}" for i in range(len(names))]
            body = k
            # rename operands to parameters, longest names first (t12 before t1)
            order = sorted(range(len(names)), key=lambda i: -len(names[i]))
            marks = {}
            for i in order:
                mark = f"\x00{i}\x00"
                body = _replace_name(body, names[i], mark)
                marks[mark] = params[i]
            for mark, p in marks.items():
                body = body.replace(mark, p)
            self.helpers[hname] = (f"@triton.jit\ndef {hname}({', '.join(params)}):\n"
                                   f"    return {body}\n")
            k = f"{hname}({', '.join(names)})"
        out = self.assign(k, t, shape, lo, hi)
        out.sel |= self.sel_of_last
        pool.append(out)
        return self.cap(out, pool)

    def emit_reduce(self, pool):
        kinds = [("reduce_sum", 3), ("reduce_max", 2), ("reduce_min", 1)]
        kind = self.pick_weighted(kinds, {k for k, _ in kinds if k in self.enabled})
        v = self.pick(pool, lambda v: all(v.shape))
        if kind is None or v is None:
            return None
        v.used = True
        op = kind.split("_")[1]
        if self.layout == "grid2d":
            axis = self.rng.choice([0, 1, None])
        else:
            axis = None if self.rng.random() < 0.35 else 0
        if axis is None and "reduce_all" not in self.enabled:
            axis = 0 if self.layout != "grid2d" else self.rng.choice([0, 1])
        if axis is None:
            self.use("reduce_all")
        self.use(kind)
        fn = {"sum": "tl.sum", "max": "tl.max", "min": "tl.min"}[op]
        neutral = {"sum": 0.0, "max": float(math.floor(v.lo) - 1),
                   "min": float(math.ceil(v.hi) + 1)}[op]
        inner = f"tl.where(mask, {v.name}, {neutral!r})"
        bs, dims, count = self.bs_dims(axis)
        if axis is None:
            k = f"{fn}({inner})"
            shape = self.scalar_shape()
        elif self.layout != "grid2d":
            k = f"{fn}({inner}, axis=0)"
            shape = (False,)
        else:
            keep = self.rng.random() < 0.3
            if keep:
                k = f"{fn}({inner}, axis={axis}, keep_dims=True)"
            else:
                k = f"{fn}({inner}, axis={axis})" + ("[None, :]" if axis == 0 else "[:, None]")
            shape = (False, True) if axis == 0 else (True, False)
        t = f"R.reduce({v.name}, {bs}, {dims}, {op!r}, ctx, 'tl.{op}')"
        if op == "sum":
            c = 1.0 / count
            k, t = f"{k} * {c!r}", f"{t} * {c!r}"
            lo, hi = min(v.lo, 0.0), max(v.hi, 0.0)
        elif op == "max":
            lo, hi = (neutral if self.layout == "grid2d" else v.lo), v.hi
        else:
            lo, hi = v.lo, (neutral if self.layout == "grid2d" else v.hi)
        out = self.assign(k, t, shape, lo, hi)
        if op != "sum":
            out.sel |= v.sel
        pool.append(out)
        return out

    def emit_cumsum(self, pool):
        v = self.pick(pool, lambda v: all(v.shape))
        if v is None:
            return None
        v.used = True
        self.use("cumsum")
        axis = self.rng.choice([0, 1]) if self.layout == "grid2d" else 0
        bs, dims, count = self.bs_dims(axis)
        dim = {"flat": 0, "rows": 1}.get(self.layout, axis)
        c = 1.0 / count
        out = self.assign(f"tl.cumsum(tl.where(mask, {v.name}, 0.0), axis={axis}) * {c!r}",
                          f"R.cumsum({v.name}, {bs}, {dim}) * {c!r}", v.shape,
                          min(v.lo, 0.0), max(v.hi, 0.0))
        pool.append(out)
        return out

    def emit_if(self, pool, data):
        base = self.pick(pool, lambda v: all(v.shape))
        if base is None:
            return None
        if data:
            cond = self.pick(pool, lambda v: not any(v.shape))
            if cond is None:
                return None
            cond.used = True
        kA, tA, _, loA, hiA, gA, _ = self.op_expr(pool, base=base)
        selA = self.sel_of_last
        kB, tB, _, loB, hiB, gB, _ = self.op_expr(pool, base=base)
        selB = self.sel_of_last
        for g in gA + gB:
            self.tl_(g)
        name = self.fresh()
        one_armed = self.rng.random() < 0.3
        if data:
            self.use("if_data")
            thr = _c(self.rng.uniform(cond.lo + 0.25 * (cond.hi - cond.lo),
                                      cond.hi - 0.25 * (cond.hi - cond.lo)))
            if cond.leaf:
                thr = round(thr * 4) / 4
            ck, ct = f"{cond.name} > {thr!r}", f"{cond.name} > {thr!r}"
            if not cond.leaf:
                self.tl_(f"ctx.gap('if', ({cond.name} - {thr!r}).abs())")
            self.tl_(f"{name} = torch.where({ct}, {tA}, {tB})")
        else:
            self.use("if_runtime")
            self.need_flag = True
            ck = "flag > 0"
            self.tl_(f"{name} = ({tA}) if S['flag'] > 0 else ({tB})")
        if one_armed:
            self.kl(f"{name} = {kB}")
            self.kl(f"if {ck}:")
            self.kl(f"    {name} = {kA}")
        else:
            self.kl(f"if {ck}:")
            self.kl(f"    {name} = {kA}")
            self.kl("else:")
            self.kl(f"    {name} = {kB}")
        shape = base.shape
        out = V(name, shape, min(loA, loB), max(hiA, hiB), sel=selA | selB)
        pool.append(out)
        return self.cap(out, pool)

    def emit_ops(self, pool, n, reductions=True, ifs=True):
        for _ in range(n):
            table = [("elem", 10), ("reduce", 3 if reductions else 0),
                     ("cumsum", 1.5 if reductions else 0), ("if_runtime", 1 if ifs else 0),
                     ("if_data", 1 if ifs else 0)]
            avail = {"elem"}
            if reductions and self.enabled & {"reduce_sum", "reduce_max", "reduce_min"}:
                avail.add("reduce")
            if reductions and "cumsum" in self.enabled:
                avail.add("cumsum")
            if ifs and "if_runtime" in self.enabled:
                avail.add("if_runtime")
            if ifs and "if_data" in self.enabled:
                avail.add("if_data")
            what = self.pick_weighted(table, avail)
            out = None
            if what == "reduce":
                out = self.emit_reduce(pool)
            elif what == "cumsum":
                out = self.emit_cumsum(pool)
            elif what in ("if_runtime", "if_data"):
                out = self.emit_if(pool, what == "if_data")
            if out is None:
                self.emit_elementwise(pool)

    # -- outputs ------------------------------------------------------------
    def combine_unused(self, target, pool, shape_ok):
        """target + sum of still-unused values (so most inputs reach an output)."""
        extra = [v for v in pool if not v.used and v is not target and shape_ok(v)]
        self.rng.shuffle(extra)
        leaves = [v for v in extra if v.leaf]          # every input should reach an output
        extra = leaves + [v for v in extra if not v.leaf][:3]
        extra += [v for v in pool if v.root and v is not target and v not in extra
                  and shape_ok(v)]                     # (used or not: it may lead nowhere)
        for v in extra:
            v.root = False
        for v in extra:
            v.used = True
            target = self.cap(self.assign(f"{target.name} + {v.name} * 0.5",
                                          f"{target.name} + {v.name} * 0.5",
                                          _or(target.shape, v.shape), target.lo + 0.5 * min(v.lo, 0),
                                          target.hi + 0.5 * max(v.hi, 0)), pool)
        return target

    def output_value(self, v):
        """The first output stored carries constexpr_default's SCALE (and a FLAG branch,
        dead at its default) and launch_kw_name's num_warps used as a number."""
        scale = self.defaults_draw
        if getattr(self, "out_consts", None) is not None or not (scale or self.warps_param):
            return v
        k = t = v.name
        if scale:
            self.use("constexpr_default")
            k, t = f"{k} * SCALE", f"{t} * {self.out_scale!r}"
        if self.warps_param:
            self.use("launch_kw_name")
            k, t = f"{k} * (num_warps * 0.25)", f"{t} * {self.kw_value * 0.25!r}"
        out = self.assign(k, t, v.shape, v.lo, v.hi, prefix="o")
        if scale and self.out_flag:
            self.kl("if FLAG:")
            self.kl(f"    {out.name} = -{out.name}")
        self.out_consts = dict(SCALE=self.out_scale if scale else None,
                               FLAG=scale and self.out_flag,
                               num_warps=self.kw_value if self.warps_param else None)
        return out

    def out_full(self, name, v, block_ptr_ok=True):
        """Stores full-shape v to a new output `name`; returns the torch expression."""
        v = self.output_value(v)
        s = self.sizes
        ptr = f"{name}_ptr"
        strided = self.layout != "flat" and self.want("strided", 0.2)
        lay = self.layout
        if lay == "flat":
            self.add_ptr(ptr, "out", (s["n"],), ("full",))
            st = None
        elif strided:
            self.use("strided")
            pad = self.rng.randint(1, 4)
            self.add_ptr(ptr, "out", (s["M"], s["N"] + pad), ("cols", s["N"]))
            self.add_int(f"stride_{name}", s["N"] + pad)
            st = f"stride_{name}"
        else:
            self.add_ptr(ptr, "out", (s["M"], s["N"]), ("cols", s["N"]))
            self.add_int(f"stride_{name}", s["N"])
            st = f"stride_{name}"
        val = f"{v.name}.to({self.DT})"
        if block_ptr_ok and lay not in ("loop", "tileloop") and self.want("block_ptr", 0.2):
            self.use("block_ptr")
            if lay == "flat":
                bp = (f"tl.make_block_ptr(base={ptr}, shape=(n,), strides=(1,), "
                      f"offsets=(pid * BLOCK,), block_shape=(BLOCK,), order=(0,))")
                check = "(0,)"
            elif lay == "rows":
                bp = (f"tl.make_block_ptr(base={ptr} + row * {st}, shape=(N,), strides=(1,), "
                      f"offsets=(0,), block_shape=(BLOCK_N,), order=(0,))")
                check = "(0,)"
            else:
                bp = (f"tl.make_block_ptr(base={ptr}, shape=(M, N), strides=({st}, 1), "
                      f"offsets=(pid_m * BM, pid_n * BN), block_shape=(BM, BN), order=(1, 0))")
                check = "(0, 1)"
            self.kl(f"bp_{name} = {bp}")
            self.kl(f"tl.store(bp_{name}, {val}, boundary_check={check})")
        else:
            offs = {"flat": "offs", "rows": f"row * {st} + cols", "loop": f"row * {st} + cols",
                    "grid2d": f"rm[:, None] * {st} + rn[None, :]",
                    "tileloop": f"rm[:, None] * {st} + rn[None, :]"}[lay]
            self.kl(self.write(f"{self.address(ptr, offs)}, {val}, mask=mask", ptr))
            if ptr not in self.atomic_ptrs and self.fwant("overwrite_const", 0.3):
                self.outputs[ptr] = f"({self.overwrite_const(ptr, offs, v)}, W, P)"
                return
        self.outputs[ptr] = f"({v.name}, W, P)"

    # (constants exact in fp16 and bf16)
    OVERWRITE_CONSTANTS = (0.0, 0.5, -1.25, 1.5, -0.75, 2.0)

    def overwrite_const(self, ptr, offs, v):
        """overwrite_const (its own stream): after full-shape output `ptr`'s store of v, a
        second store of a constant over the columns with index % k == r (as
        flash-linear-attention's chunk_gla zeroes the upper triangle of its scores),
        right after it, under a branch (always true, on the program's row (block), or on
        the runtime flag) or in a two-iteration loop. The constant carries no gradient
        and takes the upstream gradient away from those elements. Returns the reference's
        name of the stored value."""
        f, lay = self.frng["overwrite_const"], self.layout
        self.use("overwrite_const")
        k = f.choice([2, 3, 4, 5])
        rem, const = f.randrange(k), f.choice(self.OVERWRITE_CONSTANTS)
        col = {"flat": "offs", "rows": "cols", "loop": "cols"}.get(lay, "rn[None, :]")
        block = {"flat": "[BLOCK]", "rows": "[BLOCK_N]", "loop": "[BLOCK]",
                 "grid2d": "[BM, BN]", "tileloop": "[BLOCK_M, BLOCK_N]"}[lay]
        form = f.choice(["zeros_like", "full", "scalar"])
        fill = {"zeros_like": f"(tl.zeros_like({v.name}) {'-' if const < 0 else '+'} "
                              f"{abs(const)!r}).to({self.DT})",
                "full": f"tl.full({block}, {const!r}, tl.float32).to({self.DT})",
                "scalar": repr(const)}[form]
        store = f"tl.store({ptr} + {offs}, {fill}, mask=mask & ({col} % {k} == {rem}))"
        shape = self.SHAPE
        where = f"R.index({shape}, {len(shape) - 1}, _like) % {k} == {rem}"
        place = f.choice(["after", "after", "always", "program", "flag", "loop"])
        # the program's row (row block): the same variable in every layout's program
        pid = {"flat": "pid", "rows": "row", "loop": "row"}.get(lay, "pid_m")
        per = {"flat": "BLOCK", "grid2d": "BM", "tileloop": "BM"}.get(lay)
        if place == "after":
            self.kl(store)
        else:
            if place == "always":
                head = f"if {pid} >= 0:"
            elif place == "program":
                k2 = f.choice([2, 3])
                rem2 = f.randrange(k2)
                head = f"if {pid} % {k2} == {rem2}:"
                row = f"R.index({shape}, 0, _like)" + (f" // {self.sizes[per]}" if per else "")
                where = f"({where}) & ({row} % {k2} == {rem2})"
            elif place == "flag":
                self.need_flag = True
                head = "if flag > 0:"
            else:
                head = "for _oc in range(2):"
            self.kl(head)
            self.kl("    " + store)
        name = f"{v.name}_oc"
        over = f"torch.where({where}, {const!r}, {v.name})"
        if place == "flag":
            over = f"({over}) if S['flag'] > 0 else {v.name}"
        self.tl_(f"{name} = {over}")
        return name

    def out_reduced(self, name, v):
        """Stores a per-program (reduced) value; returns nothing (records the output)."""
        v = self.output_value(v)
        s = self.sizes
        ptr = f"{name}_ptr"
        val = f"{v.name}.to({self.DT})"
        if self.layout == "flat":
            nb = -(-s["n"] // s["BLOCK"])
            self.add_ptr(ptr, "out", (nb,), ("full",))
            self.kl(self.write(f"{ptr} + pid, {val}"))
            b = s["BLOCK"]
            self.outputs[ptr] = f"({v.name}[::{b}], W[::{b}], P[::{b}])"
        elif self.layout in ("rows", "loop"):
            self.add_ptr(ptr, "out", (s["M"],), ("full",))
            self.kl(self.write(f"{ptr} + row, {val}"))
            self.outputs[ptr] = f"({v.name}[:, 0], W[:, 0], P[:, 0])"
        elif self.layout == "tileloop":
            if v.shape[0]:      # a [BLOCK_M, 1] column: one value per row
                self.add_ptr(ptr, "out", (s["M"],), ("full",))
                self.kl(self.write(f"{ptr} + rm[:, None], {val}, mask=(rm < M)[:, None]"))
                self.outputs[ptr] = f"({v.name}[:, 0], W[:, 0], P[:, 0])"
            else:               # a scalar: one value per program
                bm = s["BM"]
                self.add_ptr(ptr, "out", (-(-s["M"] // bm),), ("full",))
                self.kl(self.write(f"{ptr} + pid_m, {val}"))
                self.outputs[ptr] = f"({v.name}[::{bm}, 0], W[::{bm}, 0], P[::{bm}, 0])"
        else:
            bm, bn = s["BM"], s["BN"]
            nbm, nbn = -(-s["M"] // bm), -(-s["N"] // bn)
            if v.shape == (False, True):
                self.add_ptr(ptr, "out", (nbm, s["N"]), ("full",))
                self.kl(self.write(f"{ptr} + pid_m * N + rn[None, :], {val}, mask=(rn < N)[None, :]"))
                self.outputs[ptr] = f"({v.name}[::{bm}, :], W[::{bm}, :], P[::{bm}, :])"
            elif v.shape == (True, False):
                self.add_ptr(ptr, "out", (s["M"], nbn), ("full",))
                self.kl(self.write(f"{ptr} + rm[:, None] * {self.programs_n} + pid_n, {val}, "
                                   f"mask=(rm < M)[:, None]"))
                self.outputs[ptr] = f"({v.name}[:, ::{bn}], W[:, ::{bn}], P[:, ::{bn}])"
            else:
                self.add_ptr(ptr, "out", (nbm * nbn,), ("full",))
                self.kl(self.write(f"{ptr} + pid_m * {self.programs_n} + pid_n, {val}"))
                self.outputs[ptr] = (f"({v.name}[::{bm}, ::{bn}].reshape(-1), "
                                     f"W[::{bm}, ::{bn}].reshape(-1), "
                                     f"P[::{bm}, ::{bn}].reshape(-1))")

    def decode_pid(self, grid):
        """grid2d's (pid_m, pid_n): two program axes, or (pid_decode, drng) one axis of
        nbm * nbn programs decoded with // and % as real kernels do (batch and head,
        row- or column-major tiles, the matmul tutorial's grouped order, or pid_nested's
        digit of a digit, from its own stream). Sets
        self.grid and self.programs_n (the kernel's count of pid_n values)."""
        order = self.drng.choice(["row", "col", "grouped"])
        nested = self.fwant("pid_nested", 0.4)
        if not (self.drng.random() < 0.35 and "pid_decode" in self.enabled):
            self.kl("pid_m = tl.program_id(0)")
            self.kl("pid_n = tl.program_id(1)")
            self.grid, self.programs_n = grid, "tl.num_programs(1)"
            return
        self.use("pid_decode")
        self.grid = (grid[0] * grid[1],)
        self.programs_n = "num_pid_n"
        self.kl("pid = tl.program_id(0)")
        self.kl("num_pid_m = tl.cdiv(M, BM)")
        self.kl("num_pid_n = tl.cdiv(N, BN)")
        if nested:   # (pid_nested, its own stream)
            self.use("pid_nested")
            self.kl("rest = pid // num_pid_n")
            self.kl("pid_n = pid % num_pid_n")
            self.kl("pid_m = rest % num_pid_m")
        elif order == "row":
            self.kl("pid_m = pid // num_pid_n")
            self.kl("pid_n = pid % num_pid_n")
        elif order == "col":
            self.kl("pid_m = pid % num_pid_m")
            self.kl("pid_n = pid // num_pid_m")
        else:
            self.constexprs["GROUP_M"] = self.drng.choice([1, 2, 3])
            self.kl("pids_per_group = GROUP_M * num_pid_n")
            self.kl("first_m = (pid // pids_per_group) * GROUP_M")
            self.kl("group_rows = min(num_pid_m - first_m, GROUP_M)")
            self.kl("pid_m = first_m + (pid % pids_per_group) % group_rows")
            self.kl("pid_n = (pid % pids_per_group) // group_rows")

    # -- whole programs -------------------------------------------------------
    def build(self):
        self.choose_layout()
        self.choose_dtype()
        self.choose_sizes()
        r = self.rng
        self.need_flag = False
        self.need_alpha = False
        self.alpha = _c(r.uniform(0.5, 1.5))
        self.flag = r.choice([3, -2, 5, -1, 2])
        n_ops = self.n_ops_override if self.n_ops_override is not None else r.randint(3, 10)
        self.n_ops = n_ops
        early = self.want("early_return", 0.2)
        # inputs
        n_mat = r.choice([1, 1, 2, 2, 3])
        domains = [r.choice(["any", "pos"]) for _ in range(4)]
        n_row = r.choice([0, 1, 1, 2]) if self.want("bcast_row", 0.5) else 0
        n_col = 1 if self.want("bcast_col", 0.4) else 0
        n_scal = 1 if self.want("scalar_input", 0.25) else 0
        reload_ = self.want("reload", 0.2)
        if self.layout == "flat":
            n_row = n_col = 0
        if self.shared:   # something shared by every program: its gradient is a long sum
            self.use("shared_weight")
            if n_row == 0 and n_scal == 0:
                n_row = 1
        mats = [self.matrix_input(i, domains[i]) for i in range(n_mat)]
        s = self.sizes
        for i in range(n_row):
            self.use("bcast_row")
            self.add_ptr(f"w{i}_ptr", "in", (s["N"],), ("full",), domains[(i + 1) % 4])
        for i in range(n_col):
            self.use("bcast_col")
            self.add_ptr(f"c{i}_ptr", "in", (s["M"],), ("full",), domains[(i + 2) % 4])
        for i in range(n_scal):
            self.use("scalar_input")
            self.add_ptr(f"s{i}_ptr", "in", (1,), ("full",), domains[3])
        # geometry / program ids
        lay = self.layout
        if lay == "flat":
            self.add_int("n", s["n"])
            grid = (-(-s["n"] // s["BLOCK"]),)
            self.constexprs = {"BLOCK": s["BLOCK"]}
            pid = self.program_id("pid")
        elif lay == "grid2d":
            self.add_int("M", s["M"])
            self.add_int("N", s["N"])
            grid = (-(-s["M"] // s["BM"]), -(-s["N"] // s["BN"]))
            self.constexprs = {"BM": s["BM"], "BN": s["BN"]}
            self.decode_pid(grid)
            pid = "pid_m"
        elif lay == "tileloop":
            self.add_int("M", s["M"])
            self.add_int("N", s["N"])
            grid = (-(-s["M"] // s["BM"]),)
            self.constexprs = {"BLOCK_M": s["BM"], "BLOCK_N": s["BN"]}
            pid = self.program_id("pid_m")
        else:
            self.add_int("M", s["M"])
            self.add_int("N", s["N"])
            grid = (s["M"],)
            self.constexprs = ({"BLOCK_N": s["BLOCK_N"]} if lay == "rows"
                               else {"BLOCK": s["BLOCK"]})
            pid = self.program_id("row")
        if self.dot:
            self.constexprs["BK"] = s["BK"]
        if self.persistent:
            self.use("persistent")
            grid = (self.programs,)
        if lay != "grid2d":
            self.grid = grid
        # (grid[0]: the count of pid_m values, whether decoded or not)
        shape = self.SHAPE
        like = f"T[{self.params[0]['name']!r}]"
        self.tl_(f"_like = {like}")
        per = {"flat": s.get("BLOCK"), "grid2d": s.get("BM"),
               "tileloop": s.get("BM")}.get(lay, 1)   # rows per value of `pid`
        if early and grid[0] >= 2:
            self.use("early_return")
            limit = r.randint(1, grid[0] - 1)
            self.add_int("limit", limit)
            self.kl(f"if {pid} >= limit:")
            self.kl("    return")
            if self.persistent:   # programs >= limit skip their rows p, p + G, ...
                slot = self.table_slot(f"R.index({shape}, 0, _like) // {per}")
                self.tl_(f"W = {slot} % {grid[0]} < {limit}")
            else:
                self.tl_(f"W = R.lt({shape}, 0, {limit * per}, _like)")
        else:
            self.tl_(f"W = R.ones({shape}, _like)")
        self.early_exit(pid, per, shape)
        block = {"flat": (s.get("BLOCK"),), "grid2d": (s.get("BM"), s.get("BN")),
                 "tileloop": (s.get("BM"), s.get("N"))}.get(lay, (1, s.get("N")))
        program = f" % {self.programs}" if self.persistent else ""
        pids = self.table_slot(f"R.pids({shape}, {block}, _like)")
        self.tl_(f"P = {pids}{program}   # which program writes each element")
        # reference leaves: one R.load per load site (torch side the same for every layout)
        for p in self.params:
            self.tl_(f"{p['name'][:-4]} = {self.torch_load(p['name'])}")
        leaves = {}
        two = lay in ("grid2d", "tileloop")
        for p in self.params:
            if p["role"] == "in":
                lo, hi = DOMAINS[p["domain"]]
                nm = p["name"][:-4]
                sh = {"x": self.full_shape(), "s": self.scalar_shape()}.get(nm[0])
                if nm[0] == "w":
                    sh = (True,) if not two else (False, True)
                if nm[0] == "c":
                    sh = (False,) if not two else (True, False)
                leaves[nm] = V(nm, sh, lo, hi, leaf=True)
        if lay in ("loop", "tileloop"):
            self.build_loop(mats, leaves, n_ops)
        else:
            self.build_block(mats, leaves, n_ops, reload_)
        return self.finish()

    def program_id(self, var):
        """`var = tl.program_id(0)` (row_table: `var = tl.load(row_order + ...)`);
        persistent: `prog = ...` (build_block then loops `for var in range(prog, ...,
        tl.num_programs(0))`). Returns the program's name."""
        if self.persistent:
            self.kl("prog = tl.program_id(0)")
            return "prog"
        slot = "tl.program_id(0)"
        self.kl(f"{var} = {self.table_row(slot) if self.row_table else slot}")
        return var

    def table_row(self, slot):
        """row_table: the row (row block) that slot `slot` of the table names."""
        self.use("row_table")
        wide = ".to(tl.int64)" if self.row_table_wide else ""
        return f"tl.load(row_order + {slot}){wide}"

    def table_slot(self, index):
        """The reference's expression of the table slot (the program, before a persistent
        modulo) handling row (row block) `index`: `index` itself without row_table."""
        return f"R.by_table({index}, S['row_order'])" if self.row_table else index

    def row_table_param(self):
        """row_table's argument: slot p of the grid handles row (row block) table[p], a
        random permutation; a bound early exit's extra programs read sentinels past the
        last row (block), which make them return."""
        s, f = self.sizes, self.frng["row_table"]
        count = -(-s["M"] // s["BM"]) if self.layout == "tileloop" else s["M"]
        table = list(range(count)) + [count + f.randrange(3) for _ in range(self.grid_extra)]
        f.shuffle(table)
        return dict(name="row_order", kind="table", value=table)

    def early_exit(self, pid, per, shape):
        """early_exit (its own stream): `if <pid beyond the data>: return` with extra
        programs in the grid, or `if pid % K == R: return` (those programs' rows are not
        written). At the top, or (block layouts, where every load is masked by the data's
        bounds) after the loads: self.exit_line, emitted by build_block."""
        self.exit_line, self.grid_extra = None, 0
        if not self.exit_draw:
            return
        f = self.frng["early_exit"]
        kind, where, extra = f.choice(["bound", "modulo"]), f.choice(["top", "loads"]), \
            f.randint(1, 3)
        k, rem = f.choice([2, 3]), f.randrange(3)
        lay, s = self.layout, self.sizes
        decoded = "pid_decode" in self.used
        if kind == "bound" and decoded:
            kind = "modulo"
        if where == "loads" and (lay not in ("flat", "grid2d") or
                                 (kind == "bound" and lay == "rows")):
            where = "top"
        if kind == "bound":
            cond = {"flat": "pid * BLOCK >= n", "grid2d": "pid_m * BM >= M",
                    "tileloop": "pid_m * BLOCK_M >= M"}.get(lay, "row >= M")
            self.grid_extra = extra
            self.grid = (self.grid[0] + extra,) + tuple(self.grid[1:])
        else:
            count = {"flat": -(-s.get("n", 0) // s.get("BLOCK", 1))}.get(
                lay, -(-s["M"] // per) if "M" in s else 0)
            if count < 2:
                return
            rem %= k
            cond = f"{pid} % {k} == {rem}"
            self.tl_(f"W = W & (R.index({shape}, 0, _like) // {per} % {k} != {rem})")
        self.use("early_exit")
        line = f"if {cond}:"
        if where == "top":
            self.kl(line)
            self.kl("    return")
        else:
            self.exit_line = line

    def load_vectors(self, leaves):
        lay = self.layout
        for nm, v in leaves.items():
            ptr = f"{nm}_ptr"
            if nm[0] == "w":
                if lay in ("grid2d", "tileloop"):
                    self.kl(f"{nm} = tl.load({ptr} + rn, mask=rn < N, other={OTHER})"
                            f".to(tl.float32)[None, :]")
                else:
                    self.kl(f"{nm} = tl.load({ptr} + cols, mask=mask, other={OTHER}).to(tl.float32)")
            elif nm[0] == "c":
                if lay in ("grid2d", "tileloop"):
                    self.kl(f"{nm} = tl.load({ptr} + rm, mask=rm < M, other={OTHER})"
                            f".to(tl.float32)[:, None]")
                else:
                    self.kl(f"{nm} = tl.load({ptr} + row).to(tl.float32)")
            elif nm[0] == "s":
                self.kl(f"{nm} = tl.load({ptr}).to(tl.float32)")

    def build_block(self, mats, leaves, n_ops, reload_):
        lay = self.layout
        vectors = {k: v for k, v in leaves.items() if k[0] != "x"}
        if lay == "rows":
            self.kl("cols = tl.arange(0, BLOCK_N)")
            self.kl("mask = cols < N")
        if self.persistent:
            # a grid-stride loop over the rows (blocks); what every row shares is loaded
            # once per program, before it
            shared = {k: v for k, v in vectors.items() if k[0] in "ws"}
            self.load_vectors(shared)
            vectors = {k: v for k, v in vectors.items() if k not in shared}
            var, stop = ("row", "M") if lay == "rows" else ("pid", "tl.cdiv(n, BLOCK)")
            loop = self.frng["persistent"].choice(["range", "tl.range"])
            if self.row_table:   # (rows only: the row of each iteration's table slot)
                self.kl(f"for slot in {loop}(prog, {stop}, tl.num_programs(0)):")
                self.kl(f"    {var} = {self.table_row('slot')}")
            else:
                self.kl(f"for {var} in {loop}(prog, {stop}, tl.num_programs(0)):")
            self.ki += 1
        if lay == "flat":
            self.kl("offs = pid * BLOCK + tl.arange(0, BLOCK)")
            self.kl("mask = offs < n")
        elif lay != "rows":
            self.kl("rm = pid_m * BM + tl.arange(0, BM)")
            self.kl("rn = pid_n * BN + tl.arange(0, BN)")
            self.kl("mask = (rm[:, None] < M) & (rn[None, :] < N)")
        self.index_ok = True
        for m in mats:
            self.load_full(m)
        self.load_vectors(vectors)
        pool = list(leaves.values())
        if self.pad:
            self.emit_padded(mats, leaves, pool)
        if self.want("shifted_load", 0.2):
            self.use("shifted_load")
            m = mats[0]
            nm, ptr, st, cs = m["name"] + "s", m["ptr"], m.get("stride"), m["colstride"]
            step = "" if cs == "1" else f" * {cs}"
            # (one element further, or one back: the first tile then starts before
            # the input, its first lane masked off)
            back = self.srng.random() < 0.5
            d, past = ("- 1", ">= 1") if back else ("+ 1", None)
            if self.layout == "flat":
                offs = f"(offs {d})" + (f" * {st}" if st else "")
                msk = f"(offs {past}) & (offs - 1 < n)" if back else "offs + 1 < n"
            elif self.layout == "rows":
                offs = f"row * {st} + (cols {d}){step}"
                msk = f"(cols {past}) & (cols - 1 < N)" if back else "cols + 1 < N"
            else:
                offs = f"rm[:, None] * {st} + (rn[None, :] {d}){step}"
                msk = f"(rm[:, None] < M) & (rn[None, :] {past}) & (rn[None, :] - 1 < N)" \
                    if back else "(rm[:, None] < M) & (rn[None, :] + 1 < N)"
            self.kl(f"{nm} = tl.load({ptr} + {offs}, mask={msk}, other={OTHER}).to(tl.float32)")
            shifted = "R.shift_back" if back else "R.shift"
            self.tl_(f"{nm} = {shifted}({self.torch_load(ptr)}, {OTHER})")
            v0 = leaves[m["name"]]
            pool.append(V(nm, v0.shape, min(v0.lo, OTHER), max(v0.hi, OTHER), leaf=True))
        if self.dot:
            self.emit_dot_block(pool)
        if self.exit_line:   # (early_exit after the loads)
            self.kl(self.exit_line)
            self.kl("    return")
        first = n_ops // 2 if reload_ else n_ops
        self.emit_ops(pool, first)
        if self.fwant("other_active", 0.3):
            self.emit_other_active(mats, pool)
        if self.fwant("saturating", 0.25):
            self.emit_saturating(pool)
        if reload_:
            self.use("reload")
            m = mats[0]
            again = dict(m, name=m["name"] + "r")
            self.load_full(again, block_ptr_ok=False, helper_ok=False)
            self.tl_(f"{again['name']} = {self.torch_load(m['ptr'])}")
            v0 = leaves[m["name"]]
            pool.append(V(again["name"], v0.shape, v0.lo, v0.hi, leaf=True, sel=v0.sel))
            self.emit_ops(pool, n_ops - first)
        if self.fwant("reload_loop", 0.2):
            # the first input again, at the same offsets, in every iteration of a loop
            self.use("reload_loop")
            m = mats[0]
            v0 = leaves[m["name"]]
            again = dict(m, name=m["name"] + "l")
            total = m["name"] + "k"
            self.kl(f"{total} = {m['name']} * 0.5")
            self.kl("for _rl in range(2):")
            self.ki += 1
            self.load_full(again, block_ptr_ok=False, helper_ok=False)
            self.kl(f"{total} = {total} * 0.5 + {again['name']}")
            self.ki -= 1
            self.tl_(f"{again['name']} = {self.torch_load(m['ptr'])}")
            self.tl_(f"{total} = ({m['name']} * 0.5) * 0.25 + {again['name']} * 1.5")
            pool.append(V(total, v0.shape, 1.625 * min(v0.lo, OTHER), 1.625 * max(v0.hi, OTHER)))
        # outputs: a full one, maybe a second, maybe a reduced one
        full = [v for v in pool if all(v.shape)]
        y = full[-1]
        y = self.combine_unused(y, pool, lambda v: True)
        self.out_full("y0", y)
        if self.want("multi_out", 0.3):
            others = [v for v in pool if all(v.shape) and v is not y and not v.leaf]
            if others:
                self.use("multi_out")
                self.out_full("y1", others[-1], block_ptr_ok=False)
        reduced = [v for v in pool if not all(v.shape) and not v.leaf]
        if self.want("multi_out", 0.7) and reduced:
            self.use("multi_out")
            self.out_reduced("r0", reduced[-1])

    SATURATING = ("sigmoid", "by_hand", "silu", "softplus")

    def emit_saturating(self, pool):
        """saturating (its own stream): a sigmoid-family function of a full-shape value v
        scaled by c so that |c v| reaches 200 at v's largest magnitude: exp(-c v) or
        exp(c v) overflows fp32 in part of the lanes. The reference takes torch's own
        stable functions (torch.sigmoid, softplus with the same threshold)."""
        f = self.frng["saturating"]
        values = [v for v in pool if all(v.shape)]
        if not values:
            return
        v = values[f.randrange(len(values))]
        mag = max(abs(v.lo), abs(v.hi))
        if mag < 0.05:
            return
        self.use("saturating")
        v.used = True
        c = _c(200.0 / mag)
        x = f"({v.name} * {c!r})"
        kind = f.choice(self.SATURATING)
        name = dict(prefix="saturated")
        if kind == "sigmoid":
            out = self.assign(f"tl.sigmoid({x})", f"torch.sigmoid({x})", v.shape, 0.0, 1.0,
                              **name)
        elif kind == "by_hand":
            out = self.assign(f"1.0 / (1.0 + tl.exp(-{x}))", f"torch.sigmoid({x})", v.shape,
                              0.0, 1.0, **name)
        elif kind == "silu":
            out = self.assign(f"{v.name} * tl.sigmoid({x})", f"{v.name} * torch.sigmoid({x})",
                              v.shape, min(v.lo, 0.0) - 0.3 / c, max(v.hi, 0.0), **name)
        else:
            out = self.assign(f"tl.where({x} > 20.0, {x}, tl.log(1.0 + tl.exp({x}))) * "
                              f"{_c(1.0 / c)!r}",
                              f"torch.nn.functional.softplus({x}, threshold=20.0) * "
                              f"{_c(1.0 / c)!r}", v.shape, 0.0, max(v.hi, 0.0) + 0.7 / c,
                              **name)
        pool.append(out)

    OTHER_PATTERNS = ("sum", "sumsq", "exp", "max")

    def emit_other_active(self, mats, pool):
        """other_active (its own stream): an input loaded again with its masked lanes
        padded by a differentiated value v of the pool, tl.load(x + offs, mask=mask,
        other=v) (maybe v * 0.5, -v, v * 2), then reduced over a padded axis without a
        tl.where (a sum, a sum of squares or of exp, a max / min), so the padding lanes
        reach the result and their gradient is v's. v is constant along that axis (a
        per-program value, a one-element input; grid2d: a vector along the other axis),
        as the reference's R.reduce_filled replicates it into the padding; in fp16 / bf16
        only a loaded v (exact in the buffer's dtype, which `other` is cast to). Nothing
        is emitted where the blocks have no padding lanes or no such v exists."""
        f, lay, s = self.frng["other_active"], self.layout, self.sizes
        m = mats[f.randrange(len(mats))]
        pattern, scale = f.choice(self.OTHER_PATTERNS), f.choice([1.0, 1.0, 0.5, -1.0, 2.0])
        sigma = f.choice([1, -1])
        if lay == "flat":
            axes = [0] if s["n"] % s["BLOCK"] else []
        elif lay == "rows":
            axes = [0] if s["N"] < s["BLOCK_N"] else []
        else:
            axes = [a for a, (size, block) in enumerate(((s["M"], s["BM"]), (s["N"], s["BN"])))
                    if size % block]
        if not axes:
            return
        axis = f.choice(axes)
        fills = [v for v in pool if not (v.shape[axis] if lay == "grid2d" else any(v.shape))
                 and (v.leaf or self.dtype == "fp32")]
        if not fills:
            return
        v = fills[f.randrange(len(fills))]
        self.use("other_active")
        v.used = True
        fill = v.name if scale == 1.0 else f"{v.name} * {scale!r}"
        x = m["name"] + "o"
        self.kl(f"{x} = tl.load({m['ptr']} + {self.plain_offsets(m)}, mask=mask, "
                f"other={fill}).to(tl.float32)")
        self.tl_(f"{x} = {self.torch_load(m['ptr'])}")
        xlo, xhi = DOMAINS[m["domain"]]
        flo, fhi = sorted((v.lo * scale, v.hi * scale))
        lo, hi = min(xlo, flo), max(xhi, fhi)
        mag = max(abs(lo), abs(hi))
        bs, dims, count = self.bs_dims(axis)
        keep = ", keep_dims=True" if lay == "grid2d" else ""
        rshape = ((False, True) if axis == 0 else (True, False)) if lay == "grid2d" \
            else self.scalar_shape()

        def reduced(fn, op, g, interval, lib="tl"):
            """fn over the axis of g(x) (padding lanes g(fill)); sums scaled by 1/count.
            g(e, lib): the elementwise expression, lib: tl (kernel) or torch."""
            c = "" if op != "sum" else f" * {1.0 / count!r}"
            k = f"{fn}({g(x, 'tl')}, axis={axis}{keep}){c}"
            t = (f"R.reduce_filled({g(x, 'torch')}, {g(f'({fill})', 'torch')}, {bs}, "
                 f"{dims}, {op!r}, ctx, 'other {op}'){c}")
            return self.assign(k, t, rshape, *interval)
        if pattern == "sum":
            out = reduced("tl.sum", "sum", lambda e, lib: e, (lo, hi))
        elif pattern == "sumsq":
            out = reduced("tl.sum", "sum", lambda e, lib: f"{e} * {e}", (0.0, mag * mag))
        elif pattern == "exp":   # (an argument within [-1, 1])
            c = _c(1.0 / max(1.0, mag))
            out = reduced("tl.sum", "sum", lambda e, lib: f"{lib}.exp({e} * {c!r})",
                          (math.exp(-1.01), math.exp(1.01)))
        else:
            op = "max" if sigma > 0 else "min"
            out = reduced(f"tl.{op}", op, lambda e, lib: e, (lo, hi))
            out.sel |= v.sel
        out.root = True   # (folded into an output always)
        pool.append(out)
        if f.random() < 0.5:   # the padded value itself flows through later ops
            leaf = next(u for u in pool if u.name == m["name"])
            pool.append(V(x, self.full_shape(), xlo, xhi, leaf=True, sel=leaf.sel))

    PAD_PATTERNS = ("max", "softmax", "softmax_x", "lse", "entropy", "expected",
                    "scaled_sum", "hinge")

    def emit_padded(self, mats, leaves, pool):
        """pad_inf in block layouts (its own stream): a load of an input whose masked
        lanes hold -inf (sigma = 1) or +inf (sigma = -1), used as padding is: reduced
        without a tl.where (max / min; sum of exp(sigma * x), 0 there), through a softmax
        (p, p * x), a logsumexp, an entropy and an expected value (tl.where(mask, ., 0)
        around the products of the padding), x * sum(exp(sigma * x)), a hinge sum
        tl.where(x > t, x - t, 0). Its result (and maybe the padded value itself, whose
        masked lanes then flow through any op) joins the pool."""
        f = self.frng["pad_inf"]
        self.use("pad_inf")
        m = mats[f.randrange(len(mats))]
        sigma = f.choice([1, 1, -1])
        pattern = f.choice(self.PAD_PATTERNS)
        lay = self.layout
        x = m["name"] + "p"
        lo, hi = DOMAINS[m["domain"]]
        inf = '-float("inf")' if sigma > 0 else 'float("inf")'
        self.kl(f"{x} = tl.load({m['ptr']} + {self.plain_offsets(m)}, mask=mask, "
                f"other={inf}).to(tl.float32)")
        self.tl_(f"{x} = {self.torch_load(m['ptr'])}")
        xv = V(x, self.full_shape(), lo, hi, leaf=True, sel=leaves[m["name"]].sel)
        axis = f.choice([0, 1]) if lay == "grid2d" else 0
        bs, dims, count = self.bs_dims(axis)
        keep = ", keep_dims=True" if lay == "grid2d" else ""
        rshape = ((False, True) if axis == 0 else (True, False)) if lay == "grid2d" \
            else self.scalar_shape()
        combiners = self.custom_combiners() if self.custom_combiner else {}

        def red(fn, v):
            if fn in combiners:   # custom_combiner: tl.reduce with the user's combine_fn
                return f"tl.reduce({v}, {axis}, {combiners[fn]}{keep})"
            return f"{fn}({v}, axis={axis}{keep})"
        ref = lambda v, op: f"R.reduce({v}, {bs}, {dims}, {op!r}, ctx, 'pad {op}')"  # noqa
        op, sign = ("max", "") if sigma > 0 else ("min", "-")
        spread = hi - lo
        out = []
        mx = self.assign(red(f"tl.{op}", x), ref(x, op), rshape, lo, hi)
        mx.sel |= xv.sel
        if pattern == "max":
            out.append(mx)
        elif pattern in ("softmax", "softmax_x", "lse", "entropy", "expected"):
            # shifted = sigma (x - m) <= 0 on the real lanes, -inf on the padding
            diff = f"{x} - {mx.name}" if sigma > 0 else f"{mx.name} - {x}"
            e = self.assign(f"tl.exp({diff})", f"torch.exp({diff})", self.full_shape(),
                            math.exp(-spread), 1.0)
            tot = self.assign(red("tl.sum", e.name), ref(e.name, "sum"), rshape, 1.0, count)
            if pattern in ("softmax", "softmax_x", "expected"):
                prob = self.assign(f"{e.name} / {tot.name}", f"{e.name} / {tot.name}",
                                   self.full_shape(), math.exp(-spread) / count, 1.0)
                if pattern == "softmax":
                    out.append(prob)
                elif pattern == "softmax_x":
                    out.append(self.assign(f"{prob.name} * {x}", f"{prob.name} * {x}",
                                           self.full_shape(), min(lo, 0.0), max(hi, 0.0)))
                else:
                    k = red("tl.sum", f"tl.where(mask, {prob.name} * {x}, 0.0)")
                    out.append(self.assign(k, ref(f"{prob.name} * {x}", "sum"), rshape, lo, hi))
            elif pattern == "lse":
                out.append(self.assign(f"{mx.name} {sign or '+'} tl.log({tot.name})",
                                       f"{mx.name} {sign or '+'} torch.log({tot.name})",
                                       rshape, lo - (math.log(count) if sigma < 0 else 0),
                                       hi + (math.log(count) if sigma > 0 else 0)))
            else:   # entropy of the softmax: p * logp is 0 * -inf on the padding
                logp = self.assign(f"({diff}) - tl.log({tot.name})",
                                   f"({diff}) - torch.log({tot.name})", self.full_shape(),
                                   -spread - math.log(count), 0.0)
                prob = self.assign(f"tl.exp({logp.name})", f"torch.exp({logp.name})",
                                   self.full_shape(), math.exp(-spread) / count, 1.0)
                k = red("tl.sum", f"tl.where(mask, {prob.name} * {logp.name}, 0.0)")
                out.append(self.assign(f"-{k}", f"-{ref(f'{prob.name} * {logp.name}', 'sum')}",
                                       rshape, 0.0, math.log(count)))
        elif pattern == "scaled_sum":
            ex = f"tl.exp({sign}{x})"
            big = math.exp(max(sigma * lo, sigma * hi))
            c = 1.0 / count
            k = f"{x} * ({red('tl.sum', ex)} * {c!r})"
            t = f"{x} * ({ref(f'torch.exp({sign}{x})', 'sum')} * {c!r})"
            out.append(self.assign(k, t, self.full_shape(), min(lo * big, 0.0),
                                   max(hi * big, 0.0)))
        else:   # hinge: the padding selects 0 by a comparison of the data
            thr = round(_c(lo + spread * f.uniform(0.3, 0.7)) * 4) / 4   # dyadic: exact
            c = 1.0 / count
            if sigma > 0:
                k = red("tl.sum", f"tl.where({x} > {thr!r}, {x} - {thr!r}, 0.0)")
                t = ref(f"torch.where({x} > {thr!r}, {x} - {thr!r}, torch.zeros_like({x}))",
                        "sum")
            else:
                k = red("tl.sum", f"tl.where({x} < {thr!r}, {thr!r} - {x}, 0.0)")
                t = ref(f"torch.where({x} < {thr!r}, {thr!r} - {x}, torch.zeros_like({x}))",
                        "sum")
            out.append(self.assign(f"{k} * {c!r}", f"{t} * {c!r}", rshape, 0.0, spread))
        for v in out:
            v.root = True   # (folded into an output always)
            pool.append(v)
        if f.random() < 0.5:   # the padding itself flows through later ops (masked lanes)
            pool.append(xv)
        else:
            xv.used = True

    def custom_combiners(self):
        """custom_combiner (its own stream): which of tl.sum / tl.max / tl.min the padded
        reductions spell as tl.reduce with a @triton.jit combine_fn of the user's (a
        max / min as tl.where of a comparison, as library kernels write them), each
        helper defined once. Marks the case when one is drawn."""
        f = self.frng["custom_combiner"]
        sources = {"tl.sum": ("_fz_add", "a + b"),
                   "tl.max": ("_fz_max", "tl.where(a > b, a, b)"),
                   "tl.min": ("_fz_min", "tl.where(a < b, a, b)")}
        chosen = {}
        for fn, (name, body) in sources.items():
            if f.random() < 0.6:
                chosen[fn] = name
                self.helpers[name] = f"@triton.jit\ndef {name}(a, b):\n    return {body}\n"
        if chosen:
            self.use("custom_combiner")
        return chosen

    def build_loop(self, mats, leaves, n_ops):
        """loop: one program per row, `for k in range(0, N, BLOCK)` over 1-D column chunks;
        tileloop: one program per BLOCK_M rows over 2-D [BLOCK_M, BLOCK_N] tiles. Running
        statistics are per row: scalars in loop, [BLOCK_M, 1] columns in tileloop."""
        r = self.rng
        s = self.sizes
        tile = self.layout == "tileloop"
        B = s["BN"] if tile else s["BLOCK"]
        vec = "[BLOCK_M, BLOCK_N]" if tile else "[BLOCK]"
        row1 = "[BLOCK_M, 1]" if tile else "[]"
        cm = "cmask" if tile else "mask"
        rshape = (True, False) if tile else (False,)

        def red(fn, x):
            return f"{fn}({x}, axis=1, keep_dims=True)" if tile else f"{fn}({x}, axis=0)"

        nch = -(-s["N"] // B)
        if tile:
            self.kl("rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)")
        scalars = {k: v for k, v in leaves.items() if k[0] in "cs"}
        rowvecs = {k: v for k, v in leaves.items() if k[0] == "w"}
        self.load_vectors(scalars)
        outer = list(scalars.values())
        if outer and r.random() < 0.5:
            self.emit_ops(outer, r.randint(1, 2), reductions=False, ifs=False)
        # the loop-carried statistics
        table = [("loop_acc", 3), ("loop_max", 2), ("loop_lse", 1.5), ("loop_decay", 1)]
        avail = {k for k, _ in table if k in self.enabled}
        kinds = []
        for _ in range(r.choice([1, 1, 2])):
            k = self.pick_weighted(table, avail)
            if k is not None:
                kinds.append(k)
        if not kinds:
            kinds = ["loop_acc"]
        running_store = self.want("loop_running_store", 0.35)
        inner_store = self.want("loop_inner_store", 0.3)
        second_loop = self.want("loop_store", 0.6)
        final_store = self.rng.random() < 0.5
        # a while loop of the kind tritonad differentiates (xrng): accumulations only, no
        # store inside
        force_while = "while" in self.enabled and "loop_acc" in self.enabled and \
            self.xdraws[2] < 0.25
        if force_while:
            kinds = ["loop_acc"] * len(kinds)
            running_store = inner_store = False
        if "multi_out" not in self.enabled:   # keep a single output
            if running_store:
                inner_store = second_loop = False
            elif inner_store:
                second_loop = False
            final_store = not (running_store or inner_store or second_loop)
        elif not (running_store or inner_store or second_loop):
            final_store = True
        stats = []
        for i, kind in enumerate(kinds):
            self.use(kind)
            if kind == "loop_acc":
                sub = r.choice(["sum_vec", "sum_scalar"])
            elif kind == "loop_max":
                sub = r.choice(["max_vec", "max_scalar", "min_scalar"])
            elif kind == "loop_lse":
                sub = "lse"
            else:
                sub = "decay"
            stats.append(dict(kind=sub, name=f"st{i}"))
        # while loops (xrng): tritonad replays an scf.while whose differentiated carried
        # values only accumulate and that stores nothing; others are refused (rarely drawn)
        accumulating = all(st["kind"] in ("sum_vec", "sum_scalar") for st in stats) and \
            not (running_store or inner_store)
        wd = self.while_draws
        self.loop_while = {"a": force_while or ("while" in self.enabled and
                                                wd[0] < (0.35 if accumulating else 0.06)),
                           "b": "while" in self.enabled and wd[1] < 0.05}
        if self.pad and not self.loop_while["a"]:
            # pad_inf: an online logsumexp over chunks loaded with other=-inf, from
            # m = -inf (a cross-entropy's), last so that it is the reduced output
            self.use("pad_inf")
            pm = mats[self.frng["pad_inf"].randrange(len(mats))]
            stats.append(dict(kind="lse_pad", name=f"st{len(stats)}", mat=pm))
        # loop one
        self.emit_chunk_setup(mats, "a")
        if self.dot:
            self.emit_dot_a()
        for st in stats:
            nm, kd = st["name"], st["kind"]
            if kd in ("sum_vec", "decay"):
                self.kl(f"acc_{nm} = tl.zeros({vec}, dtype=tl.float32)")
            elif kd == "sum_scalar":
                self.kl(f"acc_{nm} = tl.zeros({row1}, dtype=tl.float32)")
            elif kd in ("lse", "lse_pad"):
                self.kl(f"l_{nm} = tl.zeros({row1}, dtype=tl.float32)")
        body_n = max(1, n_ops - (2 if second_loop else 0))
        pool, loop_marks = self.emit_loop_head(mats, rowvecs, outer, "a")
        self.emit_ops(pool, body_n, reductions=False)
        used_in_loop = running_store or inner_store
        running_vals = []
        for i, st in enumerate(stats):
            nm, kd = st["name"], st["kind"]
            if kd == "lse_pad":
                self.emit_lse_pad(st, red, B, nch, rshape, used_in_loop, running_vals)
                continue
            fresh = [v for v in pool if all(v.shape) and not v.used]
            u = fresh[-1] if fresh else self.pick(pool, lambda v: all(v.shape))
            if i == 0:   # fold the body's other unused values in
                u = self.combine_unused(u, pool, lambda v: True)
            u.used = True
            if kd in ("max_vec", "max_scalar", "min_scalar", "lse"):
                if kd == "min_scalar":
                    neutral = float(math.ceil(u.hi) + 1)
                else:
                    neutral = float(math.floor(u.lo) - 1)
                st["neutral"] = neutral
            uw = f"tl.where({cm}, {u.name}, {st.get('neutral', 0.0)!r})"
            if kd == "sum_vec":
                c = 1.0 / (nch * B)
                self.kl(f"acc_{nm} += {uw}")
                run_k = f"{red('tl.sum', f'acc_{nm}')} * {c!r}"
                run_t = f"R.running({u.name}, {B}, 'sum', scale={c!r})"
                lo, hi = min(u.lo, 0.0), max(u.hi, 0.0)
            elif kd == "sum_scalar":
                c = 1.0 / (nch * B)
                self.kl(f"acc_{nm} += {red('tl.sum', uw)} * {c!r}")
                run_k = f"acc_{nm}"
                run_t = f"R.running({u.name}, {B}, 'sum', scale={c!r})"
                lo, hi = min(u.lo, 0.0), max(u.hi, 0.0)
            elif kd == "decay":
                c = 1.0 / (4 * B)
                self.kl(f"acc_{nm} = acc_{nm} * 0.75 + {uw}")
                run_k = f"{red('tl.sum', f'acc_{nm}')} * {c!r}"
                run_t = f"R.running({u.name}, {B}, 'decay', decay=0.75, scale={c!r})"
                lo, hi = min(u.lo, 0.0), max(u.hi, 0.0)
            elif kd == "max_vec":
                self.kl(f"m_{nm} = tl.maximum(m_{nm}, {uw})")
                run_k = red("tl.max", f"m_{nm}")
                run_t = (f"R.running({u.name}, {B}, 'max', ctx, 'loop max', "
                         f"prefix_gaps={used_in_loop})")
                lo, hi = u.lo, u.hi
            elif kd == "max_scalar":
                self.kl(f"m_{nm} = tl.maximum(m_{nm}, {red('tl.max', uw)})")
                run_k = f"m_{nm}"
                run_t = (f"R.running({u.name}, {B}, 'max', ctx, 'loop max', "
                         f"prefix_gaps={used_in_loop})")
                lo, hi = u.lo, u.hi
            elif kd == "min_scalar":
                self.kl(f"m_{nm} = tl.minimum(m_{nm}, {red('tl.min', uw)})")
                run_k = f"m_{nm}"
                run_t = (f"R.running({u.name}, {B}, 'min', ctx, 'loop min', "
                         f"prefix_gaps={used_in_loop})")
                lo, hi = u.lo, u.hi
            else:  # lse
                self.kl(f"mx_{nm} = tl.maximum(m_{nm}, {red('tl.max', uw)})")
                ex = f"tl.where({cm}, tl.exp({u.name} - mx_{nm}), 0.0)"
                self.kl(f"l_{nm} = l_{nm} * tl.exp(m_{nm} - mx_{nm}) + {red('tl.sum', ex)}")
                self.kl(f"m_{nm} = mx_{nm}")
                run_k = f"m_{nm} + tl.log(l_{nm})"
                run_t = f"R.running({u.name}, {B}, 'lse')"
                lo, hi = u.lo, u.hi + math.log(nch * B)
            st.update(run_k=run_k, lo=lo, hi=hi,
                      sel=u.sel if kd in ("max_vec", "max_scalar", "min_scalar") else frozenset())
            self.tl_(f"rs_{nm} = {run_t}")
            if used_in_loop:
                self.kl(f"rs_{nm} = {run_k}")
                running_vals.append(V(f"rs_{nm}", rshape, lo, hi, sel=st["sel"]))
        if running_store:
            self.use("loop_running_store")
            v = running_vals[0]
            if tile and self.xdraws[0] >= 0.15:
                # each row's running value over the iteration's own tile of p0 [M, N]
                # (the compact form below is refused by tritonad in 2-D: it cannot prove
                # that rows and iterations never share an address)
                self.add_ptr("p0_ptr", "out", (s["M"], s["N"]), ("cols", s["N"]))
                self.add_int("stride_p0", s["N"])
                self.kl(f"tl.store(p0_ptr + rm[:, None] * stride_p0 + rn[None, :], ({v.name} + "
                        f"tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)).to({self.DT}), "
                        f"mask=mask)")
                self.outputs["p0_ptr"] = f"({v.name}, W, P)"
            elif tile:
                self.add_ptr("p0_ptr", "out", (s["M"], nch), ("full",))
                self.kl(f"tl.store(p0_ptr + rm[:, None] * tl.cdiv(N, BLOCK_N) + k // BLOCK_N, "
                        f"{v.name}.to({self.DT}), mask=(rm < M)[:, None])")
                self.outputs["p0_ptr"] = f"({v.name}[:, ::{B}], W[:, ::{B}], P[:, ::{B}])"
            else:
                self.add_ptr("p0_ptr", "out", (s["M"], nch), ("full",))
                self.kl(f"tl.store(p0_ptr + row * tl.cdiv(N, BLOCK) + k // BLOCK, "
                        f"{v.name}.to({self.DT}))")
                self.outputs["p0_ptr"] = f"({v.name}[:, ::{B}], W[:, ::{B}], P[:, ::{B}])"
        if inner_store:
            self.use("loop_inner_store")
            base = self.pick(pool, lambda v: all(v.shape))
            rv = running_vals[-1]
            z = self.assign(f"{base.name} * {rv.name}", f"{base.name} * {rv.name}", base.shape,
                            *_corners(lambda x, y: x * y, base, rv))
            self.out_full("z0", z, block_ptr_ok=False)
        for line in loop_marks:
            self.kl(line)
        self.ki -= 1
        self.index_ok = False
        # the stats' pre-loop initialisations were deferred until the neutrals were known
        inits = []
        for st in stats:
            nm, kd = st["name"], st["kind"]
            if kd == "max_vec":
                inits.append(f"m_{nm} = tl.full({vec}, {st['neutral']!r}, tl.float32)")
            elif kd in ("max_scalar", "min_scalar", "lse"):
                inits.append(f"m_{nm} = tl.full({row1}, {st['neutral']!r}, tl.float32)")
            elif kd == "lse_pad":
                inits.append(f"m_{nm} = tl.full({row1}, float(\"-inf\"), tl.float32)")
        self.k[self.loop_start:self.loop_start] = ["    " * self.ki + i for i in inits]
        finals = []
        for st in stats:
            nm = st["name"]
            run_k = st["run_k"]
            self.kl(f"{nm} = {run_k}")
            self.tl_(f"{nm} = R.last(rs_{nm})")
            finals.append(V(nm, rshape, st["lo"], st["hi"], sel=st["sel"]))
        post = outer + finals
        self.emit_ops(post, r.randint(0, 1), reductions=False)
        if second_loop:
            self.use("loop_store")
            self.emit_chunk_setup(mats, "b")
            pool2, marks2 = self.emit_loop_head(mats, rowvecs, post, "b")
            self.emit_ops(pool2, max(1, n_ops - body_n), reductions=False)
            y = [v for v in pool2 if all(v.shape)][-1]
            y = self.combine_unused(y, pool2, lambda v: True)
            self.out_full("y0", y)
            for line in marks2:
                self.kl(line)
            self.ki -= 1
            self.index_ok = False
        if final_store:
            self.out_reduced("r0", post[-1])
        if len(self.outputs) > 1:
            self.use("multi_out")

    def emit_lse_pad(self, st, red, block, nch, rshape, used_in_loop, running_vals):
        """The online logsumexp of pad_inf: this iteration's chunk of an input loaded
        with other=-inf (a load site of its own), max and sum of exp without tl.where."""
        nm, m = st["name"], st["mat"]
        q = f"{m['name']}q"
        self.kl(f"{q} = tl.load({m['ptr']} + {self.plain_offsets(m)}, mask=mask, "
                f"other=-float(\"inf\")).to(tl.float32)")
        self.tl_(f"{q} = {self.torch_load(m['ptr'])}")
        self.kl(f"mx_{nm} = tl.maximum(m_{nm}, {red('tl.max', q)})")
        self.kl(f"l_{nm} = l_{nm} * tl.exp(m_{nm} - mx_{nm}) + "
                f"{red('tl.sum', f'tl.exp({q} - mx_{nm})')}")
        self.kl(f"m_{nm} = mx_{nm}")
        lo, hi = DOMAINS[m["domain"]]
        hi += math.log(nch * block)
        run_k = f"m_{nm} + tl.log(l_{nm})"
        st.update(run_k=run_k, lo=lo, hi=hi, sel=frozenset())
        self.tl_(f"rs_{nm} = R.running({q}, {block}, 'lse')")
        if used_in_loop:
            self.kl(f"rs_{nm} = {run_k}")
            running_vals.append(V(f"rs_{nm}", rshape, lo, hi))

    def emit_chunk_setup(self, mats, tag):
        """Pre-loop pointer setup of one loop (block pointers / advanced pointers)."""
        self.loop_start = len(self.k)
        self.chunk_modes = {}
        tile = self.layout == "tileloop"
        for m in mats:
            name, ptr, st, cs = m["name"], m["ptr"], m["stride"], m["colstride"]
            mode = self.pick_weighted([("plain", 4), ("block_ptr", 1), ("ptr_advance", 1.5)],
                                      {"plain"} | ({"block_ptr", "ptr_advance"} & self.enabled))
            if self.loop_while.get(tag) and (mode == "block_ptr" or self.xdraws[1] >= 0.15):
                # a block pointer advanced in a while loop: Triton's own RewriteTensorPointer
                # cannot compile it (only scf.for / scf.if); a pointer advanced in one:
                # refused by tritonad (kept, rarely)
                mode = "plain"
            self.chunk_modes[name] = mode
            step = "" if cs == "1" else f" * {cs}"
            if mode == "block_ptr":
                self.use("block_ptr")
                if tile:
                    self.kl(f"bp_{name}{tag} = tl.make_block_ptr(base={ptr}, shape=(M, N), "
                            f"strides=({st}, {cs}), offsets=(pid_m * BLOCK_M, 0), "
                            f"block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))")
                else:
                    self.kl(f"bp_{name}{tag} = tl.make_block_ptr(base={ptr} + row * {st}, "
                            f"shape=(N,), strides=({cs},), offsets=(0,), block_shape=(BLOCK,), "
                            f"order=(0,))")
            elif mode == "ptr_advance":
                self.use("ptr_advance")
                if tile:
                    self.kl(f"p_{name}{tag} = {ptr} + rm[:, None] * {st} + "
                            f"tl.arange(0, BLOCK_N)[None, :]{step}")
                else:
                    self.kl(f"p_{name}{tag} = {ptr} + row * {st} + tl.arange(0, BLOCK){step}")

    def emit_loop_head(self, mats, rowvecs, outer, tag):
        """Opens the loop over column chunks (`for k in range(0, N, BLOCK)`, or a `while`)
        and loads the chunk; returns (pool, lines to emit at the end of the body). Every
        loop loads its inputs itself: new load sites (R.load) on the torch side too."""
        tile = self.layout == "tileloop"
        BLK = "BLOCK_N" if tile else "BLOCK"
        if self.loop_while.get(tag):
            self.use("while")
            self.kl("k = 0")
            self.kl("while k < N:")
        elif self.stages_param:   # launch_kw_name: the tutorial softmax's signature
            self.stages_used = True
            self.use("launch_kw_name")
            self.kl(f"for k in tl.range(0, N, {BLK}, num_stages=num_stages):")
        else:
            self.kl(f"for k in range(0, N, {BLK}):")
        self.ki += 1
        self.index_ok = True
        if tile:
            self.kl("rn = k + tl.arange(0, BLOCK_N)")
            self.kl("cmask = rn[None, :] < N")
            self.kl("mask = (rm[:, None] < M) & cmask")
        else:
            self.kl("cols = k + tl.arange(0, BLOCK)")
            self.kl("mask = cols < N")
        if tag != "a":   # this loop's own load sites
            for m in mats:
                self.tl_(f"{m['name']} = {self.torch_load(m['ptr'])}")
            for nm in rowvecs:
                self.tl_(f"{nm} = {self.torch_load(nm + '_ptr')}")
        marks = []
        for m in mats:
            name, ptr, st, cs = m["name"], m["ptr"], m["stride"], m["colstride"]
            mode = self.chunk_modes[name]
            if mode == "block_ptr":
                check = "(0, 1)" if tile else "(0,)"
                self.kl(f"{name} = tl.load(bp_{name}{tag}, boundary_check={check}, "
                        f"padding_option=\"zero\").to(tl.float32)")
                self.kl(f"{name} = tl.where(mask, {name}, {OTHER})")
                adv = "(0, BLOCK_N)" if tile else "(BLOCK,)"
                marks.append(f"bp_{name}{tag} = tl.advance(bp_{name}{tag}, {adv})")
            elif mode == "ptr_advance":
                self.kl(f"{name} = tl.load(p_{name}{tag}, mask=mask, other={OTHER}).to(tl.float32)")
                step = BLK if cs == "1" else f"{BLK} * {cs}"
                marks.append(f"p_{name}{tag} += {step}")
            else:
                self.load_full(m, block_ptr_ok=False)
        self.load_vectors(rowvecs)
        full = self.full_shape()
        rowv = (False, True) if tile else (True,)
        leaves = [V(m["name"], full, *DOMAINS[m["domain"]], leaf=True) for m in mats]
        for nm in rowvecs:
            leaves.append(V(nm, rowv, *DOMAINS[self.param(nm + "_ptr")["domain"]], leaf=True))
        pool = leaves + [V(v.name, v.shape, v.lo, v.hi, v.leaf, sel=v.sel) for v in outer]
        if tag == "a" and self.dot:
            self.emit_dot_b(pool)
        if self.loop_while.get(tag):
            marks.append(f"k += {BLK}")
        return pool, marks

    # -- matrix products -------------------------------------------------------
    def dot_inputs(self):
        """Adds a0 [M, K] and b0 [K, N] (maybe read through a transposed [N, K] buffer)."""
        x = self.xrng
        s = self.sizes
        K = s.get("K", s["BK"])
        self.dot_dom = [x.choice(["any", "pos"]) for _ in range(2)]
        pad = x.randint(1, 3) if x.random() < 0.3 else 0
        self.add_ptr("a0_ptr", "in", (s["M"], K + pad), ("cols", K), self.dot_dom[0])
        self.add_int("stride_a0", K + pad)
        self.dot_bt = x.random() < 0.3 and "transposed" in self.enabled
        if self.dot_bt:
            self.use("transposed")
            self.add_ptr("b0_ptr", "in", (s["N"], K), ("t",), self.dot_dom[1])
            self.add_int("stride_b0n", K)
        else:
            self.add_ptr("b0_ptr", "in", (K, s["N"]), ("cols", s["N"]), self.dot_dom[1])
            self.add_int("stride_b0", s["N"])
        self.dot_acc_form = x.choice(["acc_arg", "plus"])
        if self.dot_kloop:
            self.add_int("K", K)
        self.use("dot")

    def _dot_addr(self, which, rk):
        rm, rn = ("rmw", "rnw") if self.dot_wrap else ("rm", "rn")
        if which == "a":
            return f"a0_ptr + {rm}[:, None] * stride_a0 + {rk}[None, :]"
        if self.dot_bt:
            return f"b0_ptr + {rk}[:, None] + {rn}[None, :] * stride_b0n"
        return f"b0_ptr + {rk}[:, None] * stride_b0 + {rn}[None, :]"

    def _dot_call(self, acc=None):
        prec = ", input_precision=\"ieee\"" if self.dtype == "fp32" else ""
        if acc is None:
            return f"tl.dot(a0, b0{prec})"
        return f"tl.dot(a0, b0, {acc}{prec})"

    def _dot_value(self, kexpr, scale):
        """The dot's value, scaled by 1/K, into the pool: |a b| <= the corners' products;
        masked rows, columns and K lanes load 0, so 0 is in the interval too."""
        (alo, ahi), (blo, bhi) = DOMAINS[self.dot_dom[0]], DOMAINS[self.dot_dom[1]]
        lo, hi = _corners(lambda p, q: p * q, V("a", (), alo, ahi), V("b", (), blo, bhi))
        out = self.assign(f"{kexpr} * {scale!r}", f"R.dot(ctx, a0, b0) * {scale!r}",
                          self.full_shape(), min(lo, 0.0), max(hi, 0.0))
        out.root = True
        return out

    def emit_dot_block(self, pool):
        """grid2d: d = tl.dot(a0 tile, b0 tile) / K, the K dimension whole or in a loop."""
        self.dot_inputs()
        s = self.sizes
        self.tl_("a0 = " + self.torch_load("a0_ptr"))
        self.tl_("b0 = " + self.torch_load("b0_ptr"))
        # (dot_wrap: the tutorial's rows and columns wrapped at the extent, unmasked)
        rows, columns = ("", "") if self.dot_wrap else ("(rm < M)[:, None]", "(rn < N)[None, :]")
        if self.dot_wrap:
            self.use("dot_wrap")
            self.kl("rmw = rm % M")
            self.kl("rnw = rn % N")
        if not self.dot_kloop:
            other_a = other_b = "0.0"
            product = self._dot_call()
            if self.pad_dot:
                # one operand's masked rows (a0) or columns (b0) padded non-finite: the
                # product's lanes there are NaN / inf until tl.where drops them
                f = self.frng["pad_dot"]
                pad = f.choice(['-float("inf")', 'float("inf")', 'float("nan")'])
                if f.random() < 0.5:
                    other_a = pad
                else:
                    other_b = pad
                product = f"tl.where(mask, {product}, 0.0)"
                self.use("pad_dot")
            self.kl("rk = tl.arange(0, BK)")
            if self.dot_wrap:
                self.kl(f"a0 = tl.load({self._dot_addr('a', 'rk')})")
                self.kl(f"b0 = tl.load({self._dot_addr('b', 'rk')})")
            else:
                self.kl(f"a0 = tl.load({self._dot_addr('a', 'rk')}, mask={rows}, "
                        f"other={other_a})")
                self.kl(f"b0 = tl.load({self._dot_addr('b', 'rk')}, mask={columns}, "
                        f"other={other_b})")
            out = self._dot_value(product, 1.0 / s["BK"])
        else:
            self.use("dot_kloop")
            self.kl("acc_d = tl.zeros([BM, BN], dtype=tl.float32)")
            wh = "while" in self.enabled and self.while_draws[2] < 0.4
            if wh:
                self.use("while")
                self.kl("kk = 0")
                self.kl("while kk < K:")
            else:
                self.kl("for kk in range(0, K, BK):")
            self.ki += 1
            self.kl("rk = kk + tl.arange(0, BK)")
            self.kl(f"a0 = tl.load({self._dot_addr('a', 'rk')}, "
                    f"mask={rows + ' & ' if rows else ''}(rk < K)[None, :], other=0.0)")
            self.kl(f"b0 = tl.load({self._dot_addr('b', 'rk')}, "
                    f"mask=(rk < K)[:, None]{' & ' + columns if columns else ''}, other=0.0)")
            if self.dot_acc_form == "acc_arg":
                self.kl(f"acc_d = {self._dot_call('acc_d')}")
            else:
                self.kl(f"acc_d += {self._dot_call()}")
            if wh:
                self.kl("kk += BK")
            self.ki -= 1
            out = self._dot_value("acc_d", 1.0 / s["K"])
        pool.append(out)
        return self.cap(out, pool)

    def emit_dot_a(self):
        """tileloop: the row block's a0 [BLOCK_M, BK], loaded once before the loop."""
        self.dot_inputs()
        self.tl_("a0 = " + self.torch_load("a0_ptr"))
        self.kl("rk = tl.arange(0, BK)")
        self.kl(f"a0 = tl.load({self._dot_addr('a', 'rk')}, mask=(rm < M)[:, None], other=0.0)")

    def emit_dot_b(self, pool):
        """tileloop: each iteration's b0 [BK, BLOCK_N] and d = tl.dot(a0, b0) / BK."""
        self.tl_("b0 = " + self.torch_load("b0_ptr"))
        self.kl(f"b0 = tl.load({self._dot_addr('b', 'rk')}, mask=(rn < N)[None, :], other=0.0)")
        out = self._dot_value(self._dot_call(), 1.0 / self.sizes["BK"])
        pool.append(out)
        self.cap(out, pool)

    def param(self, name):
        return next(p for p in self.params if p["name"] == name)

    def finish(self):
        # parameters: pointers (shuffled), ints, floats, constexprs
        ptrs = list(self.params)
        self.rng.shuffle(ptrs)
        if self.row_table:
            ptrs.insert(self.frng["row_table"].randint(0, len(ptrs)), self.row_table_param())
        ints = list(self.int_params)
        if self.persistent and self.const_sizes:
            sizes = [p for p in ints if p["name"] in ("n", "N") or p["name"].startswith("stride")]
            ints = [p for p in ints if p not in sizes]
            self.constexprs.update({p["name"]: p["value"] for p in sizes})
        elif self.persistent:
            self.use("persistent_runtime_stride")
        if self.need_flag:
            ints.append(dict(name="flag", kind="i32", value=self.flag))
        floats = []
        if self.need_alpha:
            floats.append(dict(name=self.alpha_name, kind="fp32", value=self.alpha))
            if self.alpha_name != "alpha":
                self.use("launch_kw_name")
        params = ptrs + ints + floats
        name = f"fuzz_kernel_{self.seed}"
        launch = self.launch_setup()
        defaults = launch["defaults"]
        sig = ", ".join([p["name"] for p in params] +
                        [f"{c}: tl.constexpr" for c in self.constexprs if c not in defaults] +
                        [f"{c}: tl.constexpr = {defaults[c]!r}" for c in defaults])
        kernel = "".join(launch["decorators"]) + \
            f"@triton.jit\ndef {name}({sig}):\n" + "\n".join(self.k) + "\n"
        ref = ("def reference(T, S, ctx):\n" + "\n".join(self.t) + "\n"
               "    return {" + ", ".join(f"{k!r}: {v}" for k, v in self.outputs.items()) + "}\n")
        meta = dict(name=name, layout=self.layout, dtype=self.dtype, grid=list(self.grid),
                    constexprs=self.constexprs, params=params, sizes=self.sizes,
                    seed=self.seed, features=sorted(self.used))
        if launch["meta"]:   # (only where an issue-39 feature changes the launch)
            meta.update(launch["meta"])
        helpers = "\n\n".join(self.helpers[h] for h in sorted(self.helpers))
        source = (f"# tritonad fuzz case: seed {self.seed}, layout {self.layout}, "
                  f"dtype {self.dtype}\n# features: {' '.join(sorted(self.used))}\n"
                  + PRELUDE + "\nMETA = " + _pretty(meta) + "\n\n"
                  + launch["prelude"]
                  + (helpers + "\n\n" if helpers else "") + kernel + "\n\n" + ref
                  + f"\n\nkernel = {name}\n")
        return source, meta

    BLOCK_NAMES = ("BLOCK", "BLOCK_N", "BM", "BN", "BLOCK_M")

    def launch_setup(self):
        """How the kernel is launched (issue-39 features): autotune configs, heuristics,
        constexpr defaults, constexprs named like launch keywords, the grid as a callable
        of META. Adds those constexprs to self.constexprs; returns decorators, module
        text before the kernel, META entries, defaults."""
        cx = self.constexprs
        out = dict(decorators=[], prelude="", meta={}, defaults={})
        owner = {}   # constexpr -> autotune / heuristics / default (not passed at launch)
        blocks = [b for b in self.BLOCK_NAMES if b in cx]
        if self.autotune:
            self.use("autotune")
            f = self.frng["autotune"]
            layout_free = f.random() < 0.4 or not blocks
            tuned = [] if layout_free else f.sample(blocks, f.randint(1, len(blocks)))
            options = lambda: dict(num_warps=f.choice([1, 2, 4, 8]),  # noqa: E731
                                   num_stages=f.choice([1, 2, 3]))
            configs = [({t: cx[t] for t in tuned}, options())]
            for _ in range(f.randint(1, 2)):
                kw = {t: cx[t] for t in tuned}
                if tuned:
                    t = f.choice(tuned)
                    kw[t] = self.alternative_block(t, kw[t], f)
                configs.append((kw, options()))
            order = list(range(len(configs)))
            f.shuffle(order)
            chosen = order.index(0)
            ints = [p["name"] for p in self.int_params]
            key = ["n"] if "n" in ints else f.choice([["M", "N"], ["N"], ["M"]])
            lines = ["CONFIGS = ["] + [
                f"    triton.Config({configs[i][0]!r}, num_warps={configs[i][1]['num_warps']}, "
                f"num_stages={configs[i][1]['num_stages']})," for i in order] + ["]", "", ""]
            out["prelude"] += "\n".join(lines)
            reset = f", reset_to_zero={sorted(self.atomic_ptrs)!r}" if self.atomic_ptrs else ""
            out["decorators"].append(f"@triton.autotune(configs=CONFIGS, key={key!r}{reset})\n")
            out["meta"]["autotune"] = dict(chosen=chosen, tuned=tuned, layout_free=not tuned)
            owner.update({t: "autotune" for t in tuned})
        if self.heuristics:
            f = self.frng["heuristics"]
            rules = {b: self.heuristic_rule(b) for b in blocks if b not in owner}
            rules = {b: r for b, r in rules.items() if r is not None}
            if rules:
                self.use("heuristics")
                b = f.choice(sorted(rules))
                out["decorators"].append(f"@triton.heuristics({{{b!r}: {rules[b]}}})\n")
                out["meta"]["heuristics"] = [b]
                owner[b] = "heuristics"
        defaults = out["defaults"]
        consts = getattr(self, "out_consts", None)
        if self.defaults_draw:
            if consts and consts["SCALE"] is not None:
                defaults["SCALE"] = consts["SCALE"]
                if consts["FLAG"]:
                    defaults["FLAG"] = False
            free = [b for b in blocks if b not in owner]
            if self.default_block and free:
                b = self.frng["constexpr_default"].choice(free)
                defaults[b] = cx.pop(b)
            if defaults:
                self.use("constexpr_default")
            owner.update({d: "default" for d in defaults})
        if self.stages_used:
            cx["num_stages"] = self.kw_value
        if consts and consts["num_warps"] is not None:
            cx["num_warps"] = self.kw_value
        cx.update(defaults)      # (every value, for compiling without a launch)
        if owner:
            out["meta"]["launch_constexprs"] = {c: v for c, v in cx.items() if c not in owner}
        if self.autotune or "heuristics" in out["meta"]:
            text = self.grid_text(owner)
            cdiv = types.SimpleNamespace(cdiv=lambda a, b: -(-a // b))
            grid = eval(text, {"triton": cdiv, "META": cx})  # noqa: S307  (our own text)
            assert tuple(grid) == tuple(self.grid), (text, self.grid)
            out["prelude"] += f"def launch_grid(META):\n    return {text}\n\n\n"
        return out

    def alternative_block(self, name, value, f):
        """Another legal value of block size `name` (an autotune config's)."""
        low = 16
        if name == "BLOCK_M":
            low = 16 if self.dot else 1
        if name == "BLOCK_N" and self.layout == "rows":   # (one program holds a row)
            return value * 2
        return value * 2 if value // 2 < low or f.random() < 0.5 else value // 2

    def heuristic_rule(self, name):
        """The source of a heuristic computing block size `name` from the arguments as
        the generated value, or None."""
        if name == "BLOCK_N" and self.layout == "rows":
            return 'lambda args: max(16, triton.next_power_of_2(args["N"]))'
        dim = {"BLOCK": "n" if self.layout == "flat" else "N", "BM": "M", "BN": "N",
               "BLOCK_M": "M", "BLOCK_N": "N"}[name]
        value = self.constexprs[name]
        if _next_pow2(self.sizes[dim]) < value:
            return None
        return f'lambda args: min({value}, triton.next_power_of_2(args["{dim}"]))'

    def grid_text(self, owner):
        """The launch grid as an expression of META (tuned sizes read from it)."""
        s, lay, extra = self.sizes, self.layout, self.grid_extra
        plus = f" + {extra}" if extra else ""

        def size(name):
            if owner.get(name) in ("autotune", "heuristics"):
                return f"META[{name!r}]"
            return str(self.constexprs[name])
        if self.persistent:
            return f"({self.programs},)"
        if lay == "flat":
            return f"(triton.cdiv({s['n']}, {size('BLOCK')}){plus},)"
        if lay in ("rows", "loop"):
            return f"({s['M']}{plus},)"
        if lay == "tileloop":
            return f"(triton.cdiv({s['M']}, {size('BLOCK_M')}){plus},)"
        m = f"triton.cdiv({s['M']}, {size('BM')})"
        n = f"triton.cdiv({s['N']}, {size('BN')})"
        if len(self.grid) == 1:
            return f"({m} * {n},)"
        return f"({m}{plus}, {n})"


def _replace_name(text: str, name: str, repl: str) -> str:
    """Replaces whole identifier `name` in text (linear scan, no regex backtracking)."""
    out, i, n = [], 0, len(name)
    while True:
        j = text.find(name, i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        before = text[j - 1] if j > 0 else " "
        after = text[j + n] if j + n < len(text) else " "
        if (before.isalnum() or before == "_") or (after.isalnum() or after == "_"):
            out.append(text[i:j + n])
        else:
            out.append(text[i:j])
            out.append(repl)
        i = j + n


def _pretty(meta: dict) -> str:
    lines = ["{"]
    for k, v in meta.items():
        if k == "params":
            lines.append(f"    {k!r}: [")
            for p in v:
                lines.append(f"        {p!r},")
            lines.append("    ],")
        else:
            lines.append(f"    {k!r}: {v!r},")
    lines.append("}")
    return "\n".join(lines)


def generate(seed: int, features: Optional[Sequence[str]] = None,
             sizes: Optional[Dict[str, int]] = None, n_ops: Optional[int] = None) -> Case:
    """One random case. `features` (default: all) are the features it may use; `sizes`
    overrides sizes (keys of Case.sizes), `n_ops` the number of generated ops."""
    enabled = ALL_FEATURES if features is None else frozenset(features)
    unknown = set(enabled) - ALL_FEATURES
    if unknown:
        raise ValueError(f"unknown features {sorted(unknown)}; known: {sorted(ALL_FEATURES)}")
    g = _Gen(seed, enabled, sizes, n_ops)
    source, meta = g.build()
    return Case(seed=seed, source=source, meta=meta, features=sorted(g.used),
                enabled=sorted(enabled), sizes=dict(g.sizes), n_ops=g.n_ops)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("seed", type=int, nargs="?", default=0)
    ap.add_argument("--features", nargs="*")
    args = ap.parse_args()
    print(generate(args.seed, args.features).source)
