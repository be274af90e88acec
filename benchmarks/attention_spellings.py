"""The attention backward on every spelling (issue 41): tritonad's derived
backward of attention forwards written the ways people write them
(test/corpus/attention_spellings.py: the key loop in a helper or inline,
causal in one loop or with the diagonal split off, grouped-query heads, the
batch x heads grid on axis 1 or folded into axis 0, the logsumexp saved or
not), beside

  flash     torch.autograd.grad of F.scaled_dot_product_attention on 4-D
            (batch, heads, L, D) tensors, the flash backend (enable_gqa where
            K/V have fewer heads; the backend torch picks where flash refuses)
  compile   torch.compile of the same math written out (scores, fp32
            softmax, p @ v; K/V repeated per group), where its L x L scores fit

and, for tritonad, tritonad.autograd as a user calls it: the default mode
and mode="deterministic" (no atomics, bitwise reproducible). Each row: GPU
time of the backward (torch profiler: every kernel, copy and fill that
torch.autograd.grad launches), wall time of the backward and of a whole step
(forward + backward, do_bench), each gradient's difference from SDPA's (max
|grad - SDPA| / max |SDPA|, checked before anything is timed; a row over
loops.ATTN_TOL is not timed), whether deterministic mode gives the same bits
twice, and how tritonad wrote dK and dV.

    python3 benchmarks/attention_spellings.py [--quick] [--out FILE]
        [--spellings gqa,fa2_helper_causal] [--rows fp16:4096:64:16:1,...]
    python3 benchmarks/attention_spellings.py --describe   # CPU: each spelling's schedule
    TRITON_INTERPRET=1 python3 benchmarks/attention_spellings.py --smoke
        # CPU: every row's code path at tiny sizes in the interpreter, nothing timed

A row is dtype:L:D:heads:group (batch 1; heads query heads, heads / group
K/V heads for the grouped-query spellings, group ignored by the others).
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

from corpus import attention_spellings as spellings  # noqa: E402

# (dtype, L, D, heads, group)
DESCRIBE_ROW = ("fp16", 1000, 64, 4, 2)
SMOKE_TILES = spellings.SMALL_TILES
COMPILE_SCORES_BYTES = 8 << 30  # torch.compile's row is left out where L x L scores exceed this


def default_rows():
    rows = [(s.name, "fp16", 4096, 64, 16, 4) for s in spellings.SPELLINGS]
    rows += [(s.name, "bf16", 4096, 128, 16, 4) for s in spellings.SPELLINGS]
    # lengths 1k..16k (heads fewer as L grows), D 64 and 128
    for name in ("fa2_helper_causal", "fa2_helper", "gqa"):
        for L, heads in ((1024, 32), (2048, 32), (8192, 8), (16384, 4)):
            for D in (64, 128):
                rows.append((name, "fp16", L, D, heads, 4))
    # grouped-query: groups 1 (no sharing) .. 8
    rows += [("gqa", "bf16", 4096, 128, 32, group) for group in (1, 2, 8)]
    rows += [("gqa_causal_no_lse", "bf16", 4096, 128, 32, group) for group in (1, 8)]
    return rows


def quick_rows():
    return [(name, "fp16", 2048, 64, 8, 2) for name in
            ("one_loop_causal", "fa2_helper_causal", "fa2_helper", "gqa")]


def smoke_rows():
    return [(s.name, "fp32", 37, 16, 2, 2) for s in spellings.SPELLINGS]


# ---------------------------------------------------------------------------
# --describe (CPU)
# ---------------------------------------------------------------------------

def describe(opts) -> int:
    """Prints each spelling's schedule (opts.spellings: the chosen ones), default
    and deterministic, derived on the CPU for sm_90 as a GPU launch of
    tritonad.grad(kernel) derives it (the launch path's hidden arguments
    present), at DESCRIBE_ROW with the GPU tiles."""
    import torch

    import tritonad

    names = opts.spellings.split(",") if opts.spellings else None

    dtype, L, D, heads, group = DESCRIBE_ROW
    tiles = spellings.GPU_TILES[D]
    print(f"Schedules derived on the CPU for sm_90 (bwd.schedule(<launch arguments>)), "
          f"{dtype}, L={L}, D={D}, {heads} heads (grouped-query: {heads // group} K/V "
          f"heads), tiles {tiles['BLOCK_M']}x{tiles['BLOCK_N']}.")
    failed = 0
    for spelling in spellings.SPELLINGS:
        if names and spelling.name not in names:
            continue
        t = spellings.inputs(spelling, 1, heads, L, D, torch.float16, "cpu", group=group,
                             requires_grad=False)
        _, args, kwargs = spelling.launch(spelling.kernel, t, tiles)
        print(f"\n## {spelling.name}: {spelling.how}")
        for mode in ("auto", "deterministic"):
            print(f"\n{mode}:")
            try:
                schedule = tritonad.grad(spelling.kernel, mode=mode).schedule(*args, **kwargs)
            except Exception as error:  # noqa: BLE001  (a line per spelling, whatever happens)
                failed += 1
                print(f"    refused: {type(error).__name__}: {error}")
                continue
            for line in str(schedule).splitlines():
                print(f"    {line}")
    return 1 if failed and names else 0


# ---------------------------------------------------------------------------
# GPU (and --smoke: the same code path in the interpreter)
# ---------------------------------------------------------------------------

def _torch_dtype(torch, name):
    return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]


def sdpa(spelling, q, k, v, scale, smoke):
    """F.scaled_dot_product_attention's output (4-D; flash where it takes the
    arguments), and the backend: 'flash' or 'sdpa' (the one torch picks)."""
    import torch.nn.functional as F

    import loops

    def call():
        return F.scaled_dot_product_attention(q, k, v, is_causal=spelling.causal, scale=scale,
                                              enable_gqa=spelling.gqa)
    if smoke:
        return call(), "sdpa"
    try:
        with loops.sdpa_flash_context():
            return call(), "flash"
    except RuntimeError:  # (no flash kernel for these arguments)
        return call(), "sdpa"


def attention_math(q, k, v, scale, causal):
    """Attention written out, for torch.compile: K/V repeated per group,
    scores and softmax in fp32."""
    import torch

    group = q.shape[1] // k.shape[1]
    if group > 1:
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = (q @ k.transpose(-1, -2)).float() * scale
    if causal:
        L = q.shape[-2]
        keep = torch.ones(L, L, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    return torch.softmax(scores, -1).to(v.dtype) @ v


_COMPILED = {}


def _compiled(causal):
    import torch

    if causal not in _COMPILED:
        _COMPILED[causal] = torch.compile(
            lambda q, k, v, scale: attention_math(q, k, v, scale, causal), dynamic=False)
    return _COMPILED[causal]


def _launch_options(D, smoke):
    return {} if smoke else dict(num_warps=8 if D == 128 else 4, num_stages=2)


def _strategies(op):
    entries = op.backward_kernel.schedule().entries
    return {e.subject: e.strategy for e in entries if e.kind == "shadow"}


def run_row(spelling, dtype, L, D, heads, group, opts, failures):
    import torch

    import loops
    import tritonad
    from tritonad import _regrid

    group = group if spelling.gqa else 1
    label = f"{spelling.name} {dtype} L={L} D={D} heads={heads}" + \
        (f" group={group}" if spelling.gqa else "")
    torch_dtype = _torch_dtype(torch, dtype)
    gen = torch.Generator().manual_seed(L * D + heads)
    t = spellings.inputs(spelling, 1, heads, L, D, torch_dtype, opts.device, group=group,
                         generator=gen)
    tiles = SMOKE_TILES if opts.smoke else spellings.GPU_TILES[D]
    launch = _launch_options(D, opts.smoke)
    dout = torch.randn(t["o"].shape, generator=gen).to(torch_dtype).to(opts.device)
    scale = t["sm_scale"]

    flash_leaves = [t[k].detach().clone().requires_grad_() for k in "qkv"]
    flash_out, backend = sdpa(spelling, *flash_leaves, scale, opts.smoke)
    want = torch.autograd.grad(flash_out, flash_leaves, dout, retain_graph=True)

    def flash():
        return torch.autograd.grad(flash_out, flash_leaves, dout, retain_graph=True)

    def flash_step():
        return torch.autograd.grad(sdpa(spelling, *flash_leaves, scale, opts.smoke)[0],
                                   flash_leaves, dout)

    calls, steps, errors, notes = [(backend, flash)], [(backend, flash_step)], {}, {}
    untimed = {}  # who: why (refused, or a gradient off)
    for who, mode in (("tritonad", "auto"), ("deterministic", "deterministic")):
        op = tritonad.autograd(spelling.kernel, outputs=spelling.outputs, mode=mode)
        leaves = [t[k].detach().clone().requires_grad_() for k in "qkv"]

        def forward(op=op, leaves=leaves):
            fresh = dict(t, q=leaves[0], k=leaves[1], v=leaves[2], o=torch.empty_like(t["o"]),
                         lse=torch.empty_like(t["lse"]))
            grid, args, kwargs = spelling.launch(spelling.kernel, fresh, tiles)
            return spellings.outputs_of(spelling, op[grid](*args, **kwargs, **launch))[0]
        _regrid.last_table = None  # (set by a launch with re-parallelized parts)
        try:
            out = forward()
            first = torch.autograd.grad(out, leaves, dout, retain_graph=True)
        except Exception as error:  # noqa: BLE001  (a refusal: reported, the others still run)
            untimed[who] = f"{type(error).__name__}: {error}"[:1500]
            print(f"  {who}: {untimed[who]}", flush=True)
            continue
        table = _regrid.describe(_regrid.last_table) if _regrid.last_table is not None else []

        def backward(out=out, leaves=leaves):
            return torch.autograd.grad(out, leaves, dout, retain_graph=True)

        def step(forward=forward, leaves=leaves):
            return torch.autograd.grad(forward(), leaves, dout)
        again = backward()
        same = all(torch.equal(x, y) for x, y in zip(first, again))
        errors[who] = max([loops.rel_err(out, flash_out.detach())] +
                          [loops.rel_err(g, w) for g, w in zip(first, want)])
        strategies = _strategies(op)
        notes[who] = dict(same=same, dK=strategies.get(_operand(spelling, "k")),
                          dV=strategies.get(_operand(spelling, "v")),
                          plain=bool(table) and all(p["plain"] for p in table))
        print(f"  {who}: max diff vs {backend} {errors[who]:.2e}; bitwise reproducible "
              f"{same}; dK {notes[who]['dK']}, dV {notes[who]['dV']}; parts {table}",
              flush=True)
        if not errors[who] <= loops.ATTN_TOL or not all(bool(torch.isfinite(g).all())
                                                          for g in first):
            untimed[who] = f"max diff vs {backend} {errors[who]:.2e}: not timed"
            continue
        if mode == "deterministic" and not same:
            failures.append(f"{label} deterministic: not bitwise reproducible")
        calls.insert(len(calls) - 1, (who, backward))
        steps.insert(len(steps) - 1, (who, step))
        if opts.verbose:
            loops.print_schedule(op.backward_kernel)

    scores_bytes = heads * L * L * 4
    if opts.compile and scores_bytes <= COMPILE_SCORES_BYTES:
        compiled = (lambda q, k, v, scale: attention_math(q, k, v, scale, spelling.causal)) \
            if opts.smoke else _compiled(spelling.causal)
        compiled_leaves = [t[k].detach().clone().requires_grad_() for k in "qkv"]
        compiled_out = compiled(*compiled_leaves, scale)
        got = torch.autograd.grad(compiled_out, compiled_leaves, dout, retain_graph=True)
        errors["compile"] = max(loops.rel_err(g, w) for g, w in zip(got, want))
        calls.append(("compile", lambda: torch.autograd.grad(compiled_out, compiled_leaves,
                                                             dout, retain_graph=True)))
        steps.append(("compile", lambda: torch.autograd.grad(
            compiled(*compiled_leaves, scale), compiled_leaves, dout)))

    failures += [f"{label} {who}: {why}" for who, why in untimed.items()]
    if opts.smoke:  # (the code path only)
        for _, fn in calls + steps:
            fn()
        times = {who: (float("nan"),) * 2 for who, _ in calls}
        kernels, step_wall = {}, {who: float("nan") for who, _ in steps}
    else:
        times, kernels = loops.time_calls(calls)
        step_wall = {who: loops.wall_us(fn) for who, fn in steps}
        print("  step wall us: " + ", ".join(f"{k} {v:.1f}" for k, v in step_wall.items()),
              flush=True)
    # dQ, dK, dV and the score products: 2.5x the forward's 2 products (causal: half)
    flops = 2 * 2 * heads * L * L * D * 2.5 * (0.5 if spelling.causal else 1.0)
    return dict(label=label, spelling=spelling.name, dtype=dtype, L=L, D=D, heads=heads,
                group=group, backend=backend, times=times, steps=step_wall, errors=errors,
                notes=notes, kernels=kernels, flops=flops, untimed=untimed)


def _operand(spelling, name):
    """The kernel's parameter name of q, k or v (its first three)."""
    import inspect
    return list(inspect.signature(spelling.kernel.fn).parameters)["qkv".index(name)]


def _ratio(row, who, baseline) -> str:
    import math

    times = row["times"]
    if who not in times or baseline not in times or not math.isfinite(times[who][0]):
        return "-"
    return f"{times[who][0] / times[baseline][0]:.2f}"


def _written(note) -> str:
    """How dK and dV were written: re-parallelized (and whether without
    atomics at this launch) or atomics."""
    if not note:
        return "-"
    kinds = {note["dK"], note["dV"]}
    if kinds == {"re-parallelized"}:
        return "parts" + (", no atomics" if note["plain"] else ", atomic adds")
    return "/".join(sorted(k or "?" for k in kinds))


def report(rows, failures, opts, seconds) -> str:
    import math

    import torch
    import triton

    device = torch.cuda.get_device_name() if torch.cuda.is_available() and not opts.smoke \
        else "CPU (interpreter, --smoke: nothing timed)"

    def us(row, who, which=0):
        value = row["times"].get(who, (float("nan"),) * 2)[which]
        return "-" if not math.isfinite(value) else f"{value:.1f}"

    def step(row, who):
        value = row["steps"].get(who, float("nan"))
        return "-" if not math.isfinite(value) else f"{value:.0f}"

    lines = [
        "# Attention backward on every spelling (issue 41)",
        "",
        f"{device}; torch {torch.__version__}; triton {triton.__version__}. Command: "
        f"`python3 benchmarks/attention_spellings.py {' '.join(sys.argv[1:])}` "
        f"({seconds:.0f} s). Batch 1. Backward GPU time (torch profiler, every kernel, copy "
        f"and fill) in us; step: wall us of forward + backward (do_bench). flash: SDPA's "
        f"flash backend (sdpa: the backend torch picks where flash refuses). Diff: max "
        f"|grad - SDPA| / max |SDPA| over Out, dQ, dK, dV. Tiles 128x64 (D=64: 4 warps, "
        f"D=128: 8), 2 stages.",
        "",
        "| spelling | dtype | L | D | heads | group | tritonad | deterministic | flash | "
        "compile | tritonad / flash | deterministic / flash | tritonad / compile | "
        "TFLOP/s tritonad | step tritonad / det. / flash | diff tritonad / det. | "
        "det. bitwise | dK, dV: tritonad / det. |",
        "|" + "---|" * 18,
    ]
    for row in rows:
        flash = row["backend"]
        gpu = row["times"].get("tritonad", (float("nan"),))[0]
        tflops = row["flops"] / gpu / 1e6 if math.isfinite(gpu) else float("nan")
        notes, errors = row["notes"], row["errors"]
        lines.append(
            f"| {row['spelling']} | {row['dtype']} | {row['L']} | {row['D']} | {row['heads']} | "
            f"{row['group']} | {us(row, 'tritonad')} | {us(row, 'deterministic')} | "
            f"{us(row, flash)}{'' if flash == 'flash' else ' (sdpa)'} | {us(row, 'compile')} | "
            f"{_ratio(row, 'tritonad', flash)} | {_ratio(row, 'deterministic', flash)} | "
            f"{_ratio(row, 'tritonad', 'compile')} | "
            f"{'-' if not math.isfinite(tflops) else f'{tflops:.0f}'} | "
            f"{step(row, 'tritonad')} / {step(row, 'deterministic')} / {step(row, flash)} | "
            + " / ".join(f"{errors[w]:.1e}" if w in errors else "-"
                         for w in ("tritonad", "deterministic"))
            + f" | {notes.get('deterministic', {}).get('same', '-')} | "
            f"{_written(notes.get('tritonad'))} / {_written(notes.get('deterministic'))} |")
    lines += ["", "Where tritonad's GPU time goes (us per call):", ""]
    for row in rows:
        for who in ("tritonad", "deterministic"):
            if row["kernels"].get(who):
                import loops
                lines.append(f"- {row['label']} {who}: {loops.top(row['kernels'][who])}")
    if failures:
        lines += ["", "Failures:", ""] + [f"- {f}" for f in failures]
    return "\n".join(lines) + "\n"


def _parse_rows(text, names):
    """'fp16:4096:64:16:4,...' for each of `names` -> [(name, dtype, L, D, heads, group)]."""
    rows = []
    for item in text.split(","):
        dtype, L, D, heads, group = item.split(":")
        rows += [(name, dtype, int(L), int(D), int(heads), int(group)) for name in names]
    return rows


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--describe", action="store_true",
                        help="CPU only: print each spelling's schedule (default and "
                        "deterministic)")
    parser.add_argument("--quick", action="store_true",
                        help="4 spellings at fp16, L=2048, D=64, 8 heads")
    parser.add_argument("--spellings", help="only these spellings (comma-separated)")
    parser.add_argument("--rows", help="dtype:L:D:heads:group rows for every chosen spelling "
                        "(replaces the default matrix)")
    parser.add_argument("--no-compile", dest="compile", action="store_false",
                        help="leave torch.compile out")
    parser.add_argument("--verbose", action="store_true", help="print each schedule")
    parser.add_argument("--out", help="also write the report (markdown) here")
    parser.add_argument("--smoke", action="store_true",
                        help="CPU, TRITON_INTERPRET=1: every row's code path at tiny sizes, "
                        "nothing timed")
    return parser


def chosen_rows(opts):
    """The rows opts (build_parser's options) choose; sets opts.device."""
    opts.device = "cpu" if opts.smoke else "cuda"
    names = opts.spellings.split(",") if opts.spellings else [s.name for s in
                                                               spellings.SPELLINGS]
    unknown = [n for n in names if n not in spellings.BY_NAME]
    if unknown:
        raise SystemExit(f"unknown spellings {unknown}: choose from "
                         f"{', '.join(spellings.BY_NAME)}")
    if opts.rows:
        return _parse_rows(opts.rows, names)
    rows = smoke_rows() if opts.smoke else quick_rows() if opts.quick else default_rows()
    return [row for row in rows if row[0] in names]


def measure(opts):
    """Every row opts choose, checked then timed: (results, failures). Used by main
    and benchmarks/results.py."""
    import torch
    import torch._functorch.config

    torch._functorch.config.donated_buffer = False  # (a compiled backward timed repeatedly)
    import torch._dynamo.config as dynamo_config
    for limit in ("cache_size_limit", "recompile_limit"):  # (a shape per row: compiled, not eager)
        if hasattr(dynamo_config, limit):
            setattr(dynamo_config, limit, max(getattr(dynamo_config, limit), 256))
    results, failures = [], []
    for name, dtype, L, D, heads, group in chosen_rows(opts):
        row_start = time.perf_counter()
        print(f"\n== {name} {dtype} L={L} D={D} heads={heads} group={group}", flush=True)
        try:
            results.append(run_row(spellings.BY_NAME[name], dtype, L, D, heads, group, opts,
                                   failures))
        except Exception:  # noqa: BLE001  (reported; the other rows still run)
            failures.append(f"{name} {dtype} L={L} D={D}: {traceback.format_exc()[-1500:]}")
            print(failures[-1], flush=True)
        print(f"  ({time.perf_counter() - row_start:.0f} s)", flush=True)
        if not opts.smoke:
            torch.cuda.empty_cache()
    return results, failures


def main():
    import user_level
    return user_level.run_spellings(build_parser(), describe, measure, report)


if __name__ == "__main__":
    sys.exit(main())
