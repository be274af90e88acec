"""The matmul backward on every spelling (issue 41): tritonad's derived backward
for matmul kernels written the ways people write them (test/corpus/
matmul_spellings.py: 1-D grouped and plain grids, 2-D grids with and without
masks, constexpr strides, a 3-D batched grid, block pointers, autotuned
kernels, linear layers with bias / GELU / SiLU-gate / residual epilogues, a
library-style autotuned linear + bias + GELU), beside

  cuBLAS    torch eager autograd of the same computation (cuBLAS GEMMs and,
            for epilogues, torch's elementwise backward)
  compile   torch.compile of the same computation, its generated backward
  hand      a hand-written Triton backward with the forward's tiles (the
            tutorial's grouped kernel on transposed views: dA = dC @ B^T,
            dB = A^T @ dC; the batched kernel for the batched spelling),
            for the spellings that are a plain product

Each row: GPU time of the backward (torch profiler: every kernel, copy and
fill that torch.autograd.grad launches), wall time of the backward and of a
whole step (forward + backward, do_bench), each gradient's error against an
fp64 reference (max |grad - ref| / max |ref|, the worst gradient) beside
cuBLAS's, whether two backwards give the same bits, and the schedule tritonad
picked (re-parallelized dA and dB, whether the launch wrote them without
atomics).

    python3 benchmarks/matmul_spellings.py [--quick] [--out FILE]
        [--spellings grid_2d,batched_3d] [--rows fp16:2048,bf16:4096]
    python3 benchmarks/matmul_spellings.py --describe   # CPU only: the schedule per spelling
    TRITON_INTERPRET=1 python3 benchmarks/matmul_spellings.py --smoke
        # CPU: every row's code path at tiny sizes in the interpreter, nothing timed

--describe derives each spelling's backward on the CPU for sm_90, as a GPU
launch of tritonad.autograd derives it (test/corpus/matmul_spellings.py
derive_schedule), and prints whether it gets the re-parallelized dot schedule
(test/test_dot_spellings.py asserts it for every spelling).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
sys.path.insert(0, os.path.join(os.path.dirname(_HERE), "test"))

from corpus import matmul_spellings as spellings  # noqa: E402

DTYPES = ("fp16", "bf16", "tf32")
# (spelling, dtype, M, N, K); a batched spelling takes BATCH of M x K @ K x N.
BATCH = 8


def default_rows():
    # (the batched spelling: BATCH products of 1024^3, as benchmarks/matmul.py)
    rows = [(s.name, "fp16", *((1024,) * 3 if s.batched else (2048,) * 3))
            for s in spellings.SPELLINGS]
    rows += [(name, "bf16", 4096, 4096, 4096) for name in ("grouped_1d", "grid_2d", "linear_gelu")]
    rows += [("grid_2d", "tf32", 2048, 2048, 2048)]
    # (odd sizes: masks and partial tiles; the library row is 1007 x 1000 x 1536)
    rows += [(name, "bf16", 1007, 1000, 1536) for name in ("grid_2d", "autotuned_bias_gelu")]
    return rows


def quick_rows():
    return [row for row in default_rows()[:len(spellings.SPELLINGS)]
            if row[0] in ("grouped_1d", "grid_2d", "plain_1d", "batched_3d", "block_ptr_2d",
                          "autotuned_grouped", "linear_gelu", "autotuned_bias_gelu")]


def _describe_rows():
    """(per spelling: its line of the table, whether it falls short)."""
    lines = []
    for spelling in spellings.SPELLINGS:
        try:
            verdict = spellings.dot_schedule(spelling)
        except Exception as error:  # noqa: BLE001  (a row per spelling, whatever happens)
            lines.append((f"| {spelling.name} | {spelling.how} | error: "
                          f"{type(error).__name__}: {error} | | | | no |", True))
            continue
        lines.append((f"| {spelling.name} | {spelling.how} | {verdict.strategies} | "
                      f"{verdict.forward_programs} | {verdict.parts} | {verdict.others} | "
                      f"{'yes' if verdict.ok else 'no: ' + '; '.join(verdict.reasons)} |",
                      not verdict.ok))
    return lines


def describe() -> int:
    """Prints, for every spelling, the schedule tritonad derives on the CPU."""
    M, N, K = spellings.DESCRIBE_SHAPE
    print(f"Schedules derived on the CPU for sm_90 (tritonad.autograd's backward, the "
          f"launch's hidden parameters present), at {M}x{N}x{K} ("
          f"{'x'.join(map(str, spellings.DESCRIBE_DIVISIBLE))} without masks or where "
          f"offsets wrap; batched: "
          f"{spellings.DESCRIBE_BATCH} of them), fixed tiles "
          f"{spellings.TILES['BLOCK_M']}x{spellings.TILES['BLOCK_N']}x"
          f"{spellings.TILES['BLOCK_K']} (autotuned: the first config), fp16.\n")
    print("| spelling | written as | dA, dB | forward's programs | parts at this launch | "
          "other gradients | re-parallelized dot schedule |")
    print("|---|---|---|---|---|---|---|")
    short = 0
    for line, falls_short in _describe_rows():
        print(line)
        short += falls_short
    print(f"\n{len(spellings.SPELLINGS) - short} of {len(spellings.SPELLINGS)} spellings get "
          f"the re-parallelized dot schedule.")
    return 0


# ---------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------

def _torch_dtype(torch, name):
    return {"fp16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}[name]


def _error_floor(dtype):
    # one rounding of the result in the gradient's type, relative
    return {"fp16": 2e-3, "bf16": 1.6e-2, "tf32": 4e-3}[dtype]


def _hand_backward(spelling, t, tiles, dc):
    """A hand-written Triton backward with the forward's tiles (None where the
    spelling is not a plain product): the tutorial's grouped kernel (or the
    batched one) on transposed views, into preallocated gradients."""
    import triton

    import bench
    from corpus.kernels import batched_matmul_kernel

    if not spelling.hand:
        return None
    a, b = t["a"].detach(), t["b"].detach()
    da, db = a.new_empty(a.shape), b.new_empty(b.shape)
    BM, BN, BK = tiles["BLOCK_M"], tiles["BLOCK_N"], tiles["BLOCK_K"]
    launch = {k: tiles[k] for k in ("num_warps", "num_stages") if k in tiles}

    if spelling.batched:
        def mm(x, y, out):
            M, K = x.shape[-2:]
            N = y.shape[-1]
            grid = (triton.cdiv(M, BM), triton.cdiv(N, BN), x.shape[0])
            batched_matmul_kernel[grid](x, y, out, M, N, K, *x.stride(), *y.stride(),
                                        *out.stride(), BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK,
                                        **launch)
        trans = (lambda x: x.transpose(1, 2))  # noqa: E731
    else:
        def mm(x, y, out):
            M, K = x.shape
            N = y.shape[1]
            grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
            bench.matmul_fwd[grid](x, y, out, M, N, K, x.stride(0), x.stride(1), y.stride(0),
                                   y.stride(1), out.stride(0), out.stride(1), BLOCK_M=BM,
                                   BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8, **launch)
        trans = (lambda x: x.t())  # noqa: E731

    def hand():
        mm(dc, trans(b), da)
        mm(trans(a), dc, db)
        return da, db
    return hand


_COMPILED = {}


def _compiled(reference, names):
    """torch.compile of a spelling's reference, once per function (the plain
    spellings share one: Dynamo then recompiles only for new shapes and dtypes)."""
    import torch

    if reference not in _COMPILED:
        _COMPILED[reference] = torch.compile(reference, dynamic=False)
    function = _COMPILED[reference]
    return lambda *xs: function(*xs[:2], **dict(zip(names[2:], xs[2:])))


def _chosen_tiles(spelling, op):
    """The forward's tiles and launch options: fixed, or the config the
    autotuner chose."""
    config = getattr(spelling.kernel, "best_config", None) if spelling.autotuned else None
    if config is None:
        return dict(spellings.config_tiles(spelling), num_warps=8, num_stages=3)
    return dict(config.kwargs, num_warps=config.num_warps, num_stages=config.num_stages)


def run_row(spelling, dtype, M, N, K, opts, failures):
    import torch

    import loops
    import tritonad
    from tritonad import _regrid

    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    torch.backends.cudnn.allow_tf32 = dtype == "tf32"
    torch_dtype = _torch_dtype(torch, dtype)
    label = f"{spelling.name} {dtype} {M}x{N}x{K}" + (f" x{BATCH}" if spelling.batched else "")
    leaves = spellings.inputs(spelling, M, N, K, torch_dtype, opts.device, batch=BATCH,
                              requires_grad=True)
    names = [k for k in leaves if k != "c"]
    inputs = [leaves[k] for k in names]
    kernel = spelling.kernel
    fixed = {} if spelling.autotuned else dict(spelling.tiles)
    launch = {} if spelling.autotuned else dict(num_warps=8, num_stages=3)
    if opts.smoke:  # (the interpreter's tiles; an autotuned kernel with only them)
        kernel = spelling.with_configs([triton_config(spelling.small_tiles)]) \
            if spelling.autotuned else kernel
        fixed = {} if spelling.autotuned else dict(spelling.small_tiles)
        launch = {}

    # tritonad.autograd: what a user pays
    op = tritonad.autograd(kernel, outputs=spelling.outputs,
                           **({"tune": True} if getattr(opts, "tune", False) else {}))

    def forward():
        tensors = dict(leaves, c=torch.empty_like(leaves["c"]))
        grid, args, kwargs = spelling.launch(kernel, tensors, fixed)
        return op[grid](*args, **kwargs, **launch)

    out = forward()
    dc = torch.randn_like(out)
    tiles = dict(fixed or spelling.small_tiles) if opts.smoke else _chosen_tiles(spelling, op)

    def derived():
        return torch.autograd.grad(out, inputs, dc, retain_graph=True)

    def derived_step():
        return torch.autograd.grad(forward(), inputs, dc)

    # eager (cuBLAS) and torch.compile of the reference
    def reference(*xs):
        return spelling.reference(*xs[:2], **dict(zip(names[2:], xs[2:])))

    eager_leaves = [x.detach().clone().requires_grad_() for x in inputs]
    eager_out = reference(*eager_leaves)

    def eager():
        return torch.autograd.grad(eager_out, eager_leaves, dc, retain_graph=True)

    def eager_step():
        return torch.autograd.grad(reference(*eager_leaves), eager_leaves, dc)

    compiled = reference if opts.smoke else _compiled(spelling.reference, names)
    compiled_leaves = [x.detach().clone().requires_grad_() for x in inputs]
    compiled_out = compiled(*compiled_leaves)

    def compile_bwd():
        return torch.autograd.grad(compiled_out, compiled_leaves, dc, retain_graph=True)

    hand = _hand_backward(spelling, leaves, tiles, dc)

    # correctness first: fp64 reference, bits twice
    wide = [x.detach().double().requires_grad_() for x in inputs]
    want = torch.autograd.grad(reference(*wide), wide, dc.double())
    got = {"tritonad": derived(), "cuBLAS": eager(), "compile": compile_bwd()}
    if hand is not None:
        got["hand"] = hand()
    if not opts.smoke:
        torch.cuda.synchronize()
    errors = {who: max(loops.rel_err(g, w) for g, w in zip(grads[:len(want)], want))
              for who, grads in got.items()}
    again = derived()
    same = [torch.equal(x, y) for x, y in zip(got["tritonad"], again)]
    # (dA, dB: the re-parallelized operands; then every gradient, a bias's too)
    reproducible = f"{all(same[:2])} / {all(same)}"
    if errors["tritonad"] > max(2 * errors["cuBLAS"], _error_floor(dtype)) or \
            any(not torch.isfinite(g).all() for g in got["tritonad"]):
        failures.append(f"{label}: tritonad error {errors['tritonad']:.2e} vs cuBLAS "
                        f"{errors['cuBLAS']:.2e}")
    schedule = op.backward_kernel.schedule()
    strategies = {e.subject: e.strategy for e in schedule.entries if e.kind == "shadow"}
    regridded = all(strategies.get(n) == "re-parallelized"
                    for n in spellings.operand_names(spelling))
    parts = _regrid.describe(_regrid.last_table) if regridded else []
    plain = bool(parts) and all(p["plain"] for p in parts)
    atomics = sorted([n for n, s in strategies.items() if s == "atomic" or
                      (s == "re-parallelized" and not plain)] +
                     [f"{n} where tiles overlap" for n, s in strategies.items()
                      if s.endswith("-when-disjoint")])
    print(f"\n== {label}: errors " + ", ".join(f"{k} {v:.2e}" for k, v in errors.items())
          + f"; reproducible {reproducible}; parts {parts}", flush=True)
    loops.print_schedule(op.backward_kernel)

    calls = [("tritonad", derived), ("cuBLAS", eager), ("compile", compile_bwd)]
    if hand is not None:
        calls.append(("hand", hand))
    times, kernels = {}, {}
    for who, fn in calls:
        if opts.smoke:  # (the code path only)
            fn()
            times[who], kernels[who] = (float("nan"), float("nan")), {}
            continue
        import user_level
        gpu, kernels[who] = user_level.gpu_time_us(fn, iters=opts.iters)
        times[who] = (gpu, _wall(fn, opts))
    steps = {who: float("nan") if opts.smoke else _wall(fn, opts)
             for who, fn in (("tritonad", derived_step), ("cuBLAS", eager_step))}
    if opts.smoke:
        derived_step(), eager_step()
    print("  GPU us: " + ", ".join(f"{k} {v[0]:.1f}" for k, v in times.items())
          + f"; step wall us: tritonad {steps['tritonad']:.1f}, eager {steps['cuBLAS']:.1f}",
          flush=True)
    print(f"    tritonad: {_top(kernels['tritonad'])}")
    flops = 2 * M * N * K * 2 * (BATCH if spelling.batched else 1)
    size = f"{M}x{N}x{K}" + (f" x{BATCH}" if spelling.batched else "")
    return dict(label=label, spelling=spelling.name, dtype=dtype, size=size, times=times,
                steps=steps,
                errors=errors, reproducible=reproducible, regridded=regridded, plain=plain,
                atomics=atomics, kernels=kernels["tritonad"],
                tflops=flops / times["tritonad"][0] / 1e6,
                tiles=f"{tiles['BLOCK_M']}x{tiles['BLOCK_N']}x{tiles['BLOCK_K']}")


def _top(kernels) -> str:
    import user_level
    return user_level.top(kernels) if kernels else "-"


def triton_config(tiles):
    import triton
    return triton.Config(tiles)


def _wall(fn, opts):
    import triton
    return triton.testing.do_bench(fn, warmup=opts.warmup_ms, rep=opts.rep_ms) * 1000.0


def verdict(row) -> str:
    if row["regridded"] and not row["atomics"]:
        return "yes"
    return "no" + (": atomics into " + ", ".join(row["atomics"]) if row["atomics"] else "")


def report(rows, failures, opts, seconds) -> str:
    import torch
    import triton

    device = torch.cuda.get_device_name() if torch.cuda.is_available() else \
        "CPU (interpreter, --smoke: nothing timed)"
    gpu = lambda row, who: row["times"][who][0] if who in row["times"] else float("nan")  # noqa: E731
    lines = [
        "# Matmul backward on every spelling (issue 41)",
        "",
        f"{device}; torch {torch.__version__}; triton "
        f"{triton.__version__}. Command: `python3 benchmarks/matmul_spellings.py "
        f"{' '.join(sys.argv[1:])}` ({seconds:.0f} s). Backward GPU time (torch profiler, "
        f"every kernel, copy and fill) in us; wall: do_bench of the backward, step: of "
        f"forward + backward. Error: max |grad - fp64| / max |fp64|, worst gradient. Tiles "
        f"fixed at 128x128x64, 8 warps, 3 stages, unless autotuned (the config chosen).",
        "",
        "| spelling | dtype | size | tiles | tritonad | cuBLAS | compile | hand | "
        "tritonad / cuBLAS | tritonad / compile | tritonad / hand | TFLOP/s | wall | "
        "step wall tritonad / eager | error tritonad / cuBLAS | bitwise reproducible: dA, dB / all | "
        "re-parallelized, no atomics |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        t = row["times"]
        lines.append(
            f"| {row['spelling']} | {row['dtype']} | {row['size']} | {row['tiles']} | "
            f"{gpu(row, 'tritonad'):.1f} | {gpu(row, 'cuBLAS'):.1f} | {gpu(row, 'compile'):.1f} | "
            f"{gpu(row, 'hand'):.1f} | {gpu(row, 'tritonad') / gpu(row, 'cuBLAS'):.2f} | "
            f"{gpu(row, 'tritonad') / gpu(row, 'compile'):.2f} | "
            f"{gpu(row, 'tritonad') / gpu(row, 'hand'):.2f} | {row['tflops']:.0f} | "
            f"{t['tritonad'][1]:.1f} | {row['steps']['tritonad']:.1f} / "
            f"{row['steps']['cuBLAS']:.1f} | {row['errors']['tritonad']:.2e} / "
            f"{row['errors']['cuBLAS']:.2e} | {row['reproducible']} | {verdict(row)} |")
    ratios = [gpu(r, "tritonad") / gpu(r, "cuBLAS") for r in rows if r["dtype"] != "tf32"]
    if ratios:
        import math
        lines += ["", f"Geometric mean tritonad / cuBLAS over the fp16/bf16 rows: "
                      f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f} "
                      f"(worst {max(ratios):.2f})."]
    lines += ["", "Where tritonad's GPU time goes (us per call):", ""]
    lines += [f"- {row['label']}: {_top(row['kernels'])}" for row in rows]
    if failures:
        lines += ["", "Failures:", ""] + [f"- {f}" for f in failures]
    return "\n".join(lines) + "\n"


def _parse_rows(text):
    """'fp16:2048,bf16:1007x1000x1536' -> [(dtype, M, N, K)]."""
    rows = []
    for item in text.split(","):
        dtype, size = item.split(":")
        dims = [int(v) for v in size.split("x")]
        rows.append((dtype, *(dims * 3 if len(dims) == 1 else dims)))
    return rows


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--describe", action="store_true",
                        help="CPU only: print the schedule tritonad picks for every spelling")
    parser.add_argument("--quick", action="store_true",
                        help="8 spellings, fp16 2048^3, fewer timing iterations")
    parser.add_argument("--spellings", help="only these spellings (comma-separated)")
    parser.add_argument("--rows", help="dtype:size rows for every chosen spelling, e.g. "
                        "fp16:2048,bf16:1007x1000x1536 (replaces the default matrix)")
    parser.add_argument("--out", help="also write the report (markdown) here")
    parser.add_argument("--tune", action="store_true",
                        help="tritonad.autograd(..., tune=True): the backward's launch options "
                        "timed around the forward's (TRITON_PRINT_AUTOTUNING=1 prints the choice)")
    parser.add_argument("--smoke", action="store_true",
                        help="CPU, TRITON_INTERPRET=1: every row's code path at tiny sizes "
                        "with the interpreter's tiles, nothing timed")
    return parser


def chosen_rows(opts):
    """The (spelling, dtype, M, N, K) rows opts (build_parser's options) choose; sets
    opts' device and timing options."""
    opts.device = "cpu" if opts.smoke else "cuda"
    opts.iters, opts.warmup_ms, opts.rep_ms = (10, 5, 20) if opts.quick else (20, 5, 50)
    rows = quick_rows() if opts.quick else default_rows()
    if opts.smoke:
        rows = [(s.name, dtype, *((48, 32, 64) if s.divisible else (37, 45, 50)))
                for s in spellings.SPELLINGS for dtype in ("fp16",)]
    if opts.rows:
        names = opts.spellings.split(",") if opts.spellings else \
            [s.name for s in spellings.SPELLINGS]
        rows = [(name, *row) for name in names for row in _parse_rows(opts.rows)]
    elif opts.spellings:
        rows = [row for row in rows if row[0] in opts.spellings.split(",")]
    return rows


def measure(opts):
    """Every row opts choose, checked then timed: (results, failures), a result per
    row that ran (run_row's dict). Used by main and benchmarks/results.py."""
    import torch
    import torch._functorch.config

    torch._functorch.config.donated_buffer = False  # (a compiled backward timed repeatedly)
    if opts.smoke:
        import tritonad  # noqa: F401  (its interpreter mends)
    results, failures = [], []
    for name, dtype, M, N, K in chosen_rows(opts):
        row_start = time.perf_counter()
        try:
            results.append(run_row(spellings.BY_NAME[name], dtype, M, N, K, opts, failures))
        except Exception:  # noqa: BLE001  (reported; the other rows still run)
            failures.append(f"{name} {dtype} {M}x{N}x{K}: {traceback.format_exc()[-1500:]}")
            print(failures[-1], flush=True)
        print(f"  ({time.perf_counter() - row_start:.0f} s)", flush=True)
    return results, failures


def main():
    import user_level
    return user_level.run_spellings(build_parser(), lambda opts: describe(), measure, report)


if __name__ == "__main__":
    sys.exit(main())
