"""The project's results page: every benchmark, run in one process, written to
benchmarks/RESULTS.md.

Sections (each reuses its benchmark module's checks and timing; --sections picks):

  kernels        bench.py: the derived backward kernel launched alone (tritonad.grad,
                 with the zero fill of its gradient buffers) on GELU, softmax, layer
                 norm and an fp16 matmul
  user           user_level.py: what loss.backward() costs through tritonad.autograd on
                 GELU, SwiGLU, softmax, layer norm, RMSNorm
  host           host_overhead.py: wall time of a whole step (forward + backward, host
                 included) at sizes where launches dominate
  matmul         matmul_spellings.py: the matmul backward on the ways people write it
  attention      loops.py: causal flash attention (online softmax over key tiles)
  attention_spellings  attention_spellings.py: the attention backward on the ways people
                 write attention (helpers, causal splits, grouped-query heads, grids)
  cross_entropy  loops.py: cross-entropy with an online logsumexp over the vocabulary
  deterministic  deterministic.py: deterministic mode's scatter slots against the
                 default's atomics on gathers (an embedding's lookup, a persistent
                 kernel's, a gathered matmul)

Every section compares tritonad with a hand-written Triton backward, torch eager and
torch.compile where the benchmark has them, in GPU time (torch profiler) and wall time,
with ratios. A row whose method failed shows "-" and the error. The page and its data
(RESULTS.json) are rewritten after each section, so a run cut short keeps what it
measured, and a run of some sections keeps the others' last results (each section says
when, where and on which commit it was measured). With matplotlib importable, a PNG of
the ratios per section is written beside the page.

    python3 benchmarks/results.py --quick                 # GPU: small sizes, all sections
    python3 benchmarks/results.py [--sections user,host] [--out FILE] [--fresh]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "RESULTS.md")
METRICS = {"gpu": "GPU time (us per call)", "wall": "Wall time (us per call)"}
WHOLE_ROW = ""  # Row.errors key of an error that left the whole row without times


@dataclass
class Row:
    workload: str
    gpu_us: Dict[str, float] = field(default_factory=dict)    # method -> us
    wall_us: Dict[str, float] = field(default_factory=dict)
    errors: Dict[str, str] = field(default_factory=dict)      # method (or WHOLE_ROW) -> why
    note: str = ""


@dataclass
class Section:
    key: str
    title: str
    measures: str                    # what is timed, for the reader
    methods: Sequence[str]           # the columns, in order
    subjects: Sequence[str]          # tritonad's methods: the numerators of the ratios
    baselines: Sequence[str]         # the denominators
    metrics: Sequence[str] = ("gpu", "wall")
    rows: List[Row] = field(default_factory=list)
    failures: List[str] = field(default_factory=list)
    seconds: Optional[float] = None
    error: str = ""                  # the section itself failed (traceback's last line)
    plot: str = ""                   # file name of its PNG, beside the page
    measured: str = ""               # when, where, on which commit


def to_json(sections: Sequence[Section]) -> str:
    return json.dumps([dataclasses.asdict(s) for s in sections], indent=1)


def from_json(text: str) -> List[Section]:
    sections = []
    for fields in json.loads(text):
        fields["rows"] = [Row(**row) for row in fields["rows"]]
        for name in ("methods", "subjects", "baselines", "metrics"):
            fields[name] = tuple(fields[name])
        sections.append(Section(**fields))
    return sections


# ---------------------------------------------------------------------------
# Rendering (no GPU, no torch: test/test_results_page.py checks it on made-up rows)
# ---------------------------------------------------------------------------

def number(value: Optional[float]) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def ratio(numerator: Optional[float], denominator: Optional[float]) -> str:
    if numerator is None or denominator is None or not denominator > 0 or \
            not math.isfinite(numerator):
        return "-"
    return f"{numerator / denominator:.2f}"


def cell_text(text: str, limit: int = 160) -> str:
    """One line, short, and no '|' (which would split the cell)."""
    line = " ".join(text.split())
    line = line if len(line) <= limit else line[:limit - 3] + "..."
    return line.replace("|", "/")


def notes_of(row: Row) -> str:
    parts = [f"{method or 'error'}: {why}" for method, why in row.errors.items()]
    if row.note:
        parts.append(row.note)
    return cell_text("; ".join(parts), 300)


def table(section: Section, metric: str) -> List[str]:
    ratios = [(s, b) for s in section.subjects for b in section.baselines]
    header = (["workload"] + list(section.methods) + [f"{s} / {b}" for s, b in ratios]
              + ["notes"])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in section.rows:
        times = row.gpu_us if metric == "gpu" else row.wall_us
        cells = ([cell_text(row.workload)] + [number(times.get(m)) for m in section.methods]
                 + [ratio(times.get(s), times.get(b)) for s, b in ratios] + [notes_of(row)])
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render_section(section: Section) -> List[str]:
    lines = [f"## {section.title}", "", section.measures, ""]
    if section.seconds is None and not section.error:
        return lines + ["Not yet generated on this commit: run `python3 benchmarks/results.py"
                        f" --sections {section.key}` on a GPU.", ""]
    if section.error:
        lines += [f"The section failed: {cell_text(section.error, 400)}", ""]
    if section.seconds is not None:
        lines += [f"(measured {section.measured + ', ' if section.measured else ''}in "
                  f"{section.seconds:.0f} s)", ""]
    if section.rows:
        for metric in METRICS:
            lines.append(f"{METRICS[metric]}:")
            lines.append("")
            if metric in section.metrics:
                lines += table(section, metric)
            else:
                lines.append("not measured in this section.")
            lines.append("")
    if section.plot:
        lines += [f"![{section.title}: ratios]({section.plot})", ""]
    if section.failures:
        lines += ["Failures:", ""] + [f"- {cell_text(f.strip().splitlines()[-1] if f.strip() else f, 300)}"
                                      for f in section.failures] + [""]
    return lines


HOW_TO_READ = """\
## How to read it

- Each row is one workload; the columns are the ways to compute its backward. *tritonad*
  columns are the derived backward (`tritonad.autograd`: what `loss.backward()` pays,
  bridge included; `tritonad.grad`: the derived kernel launched alone), *hand* a
  hand-written Triton backward, *eager* torch's autograd (cuBLAS for matmuls, flash for
  attention), *compile* `torch.compile` of the same math.
- GPU time: the torch profiler's device time of every kernel, copy and fill one call
  launches, per call: how good the kernels are. Wall time: `triton.testing.do_bench` of
  the same call (host launch costs show where they exceed the GPU work), except in the
  host-overhead section, which times whole training steps with the host clock.
- Ratios are tritonad's time over the baseline's: below 1.00 tritonad is faster.
- "-": not measured (the benchmark has no such method for that row), or failed: the
  notes column then says why. Every method's gradients are checked against a reference
  before it is timed; a wrong gradient is never timed.
- The machine may be shared: absolute numbers move between runs; ratios measured in one
  run are what count (see the per-kernel breakdowns each benchmark script prints).
"""


def render(sections: Sequence[Section], header: Dict[str, str]) -> str:
    lines = ["# tritonad: measured results", ""]
    lines += [f"- {key}: {value}" for key, value in header.items()]
    lines += ["", HOW_TO_READ]
    lines += [f"{i + 1}. [{s.title}](#{anchor(s.title)})" for i, s in enumerate(sections)]
    lines.append("")
    for section in sections:
        lines += render_section(section)
    return "\n".join(lines).rstrip() + "\n"


def anchor(title: str) -> str:
    import re
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def failure_rows(failures: Sequence[str], labels: Sequence[str]) -> List[Row]:
    """A row for each failure ("label: why") whose label has no row: all "-", the why."""
    rows = []
    for failure in failures:
        label, _, why = failure.partition(": ")
        if why and label not in labels and label not in [r.workload for r in rows]:
            last = [line for line in why.strip().splitlines() if line.strip()]
            rows.append(Row(label, errors={WHOLE_ROW: last[-1] if last else why}))
    return rows


def plot(section: Section, path: str) -> bool:
    """A PNG of the section's ratios (tritonad / each baseline, per workload), if
    matplotlib is importable; whether it was written."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    metric = section.metrics[0]
    pairs = [(s, b) for s in section.subjects for b in section.baselines]
    rows = [r for r in section.rows if (r.gpu_us if metric == "gpu" else r.wall_us)]
    if not rows or not pairs:
        return False
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) * len(pairs) + 1.5))
    height = 0.8 / len(pairs)
    for i, (s, b) in enumerate(pairs):
        values = []
        for r in rows:
            times = r.gpu_us if metric == "gpu" else r.wall_us
            ok = times.get(s) and times.get(b)
            values.append(times[s] / times[b] if ok else float("nan"))
        ax.barh([k + i * height for k in range(len(rows))], values, height,
                label=f"{s} / {b}")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks([k + 0.4 - height / 2 for k in range(len(rows))])
    ax.set_yticklabels([r.workload for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(f"{METRICS[metric].split(' (')[0]} ratio (below 1: tritonad faster)")
    ax.set_title(section.title, fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ---------------------------------------------------------------------------
# The sections (GPU): each runs its benchmark module's measure() and makes rows
# ---------------------------------------------------------------------------

INFO = {  # key: (title, what is measured)
    "kernels": ("Backward kernels alone",
        "bench.py: the derived backward kernel (`tritonad.grad`, launched on the forward's "
        "grid, with the zero fill of the gradient buffers it adds into) against a "
        "hand-written Triton backward and torch eager's backward. fp32; matmul fp16. Wall "
        "time: the median of do_bench."),
    "user": ("What loss.backward() costs",
        "user_level.py: the backward through `tritonad.autograd(forward kernel)` (derived "
        "kernels plus the bridge's allocations, fills and partial sums) against the "
        "hand-written Triton backward launched as a `torch.autograd.Function` would, torch "
        "eager and torch.compile."),
    "host": ("Host overhead: a whole training step",
        "host_overhead.py: forward + `.backward()` as a training loop runs them (mean wall "
        "time of 100 steps back to back, every method timed in turn in 7 rounds, the best "
        "round per method), fp32: `tritonad.autograd` of the "
        "kernel, a Python launcher decorated with `@tritonad.autograd`, a hand-written "
        "`torch.autograd.Function`, torch eager and torch.compile."),
    "matmul": ("Matmul backward, as people write matmuls",
        "matmul_spellings.py: `tritonad.autograd` of matmul kernels written the ways people "
        "write them (grids, masks, block pointers, autotuning, linear-layer epilogues) "
        "against a hand-written Triton backward (plain products only), eager (cuBLAS) and "
        "torch.compile. Tiles 128x128x64, 8 warps, 3 stages unless autotuned."),
    "attention": ("Causal attention",
        "loops.py: a causal flash-attention forward (online softmax over key tiles, fp16, "
        "head dim 64, tiles 64x64) differentiated by tritonad: `tritonad.autograd` (the "
        "forward saves the loop's final statistics), its `mode=\"deterministic\"` (no "
        "atomics), and `tritonad.grad` launched alone, against torch's flash backward "
        "(`F.scaled_dot_product_attention`, 4-D) and torch.compile of the math written out. "
        "No hand-written Triton backward here: benchmarks/tutorial_attention.py compares "
        "with the Triton tutorial's, given a copy of it."),
    "attention_spellings": ("Attention backward, as people write attention",
        "attention_spellings.py: `tritonad.autograd` of attention forwards written the ways "
        "people write them (the key loop in a helper or inline, causal in one loop or with "
        "the diagonal split off, grouped-query heads, the batch x heads grid on axis 1 or "
        "folded into axis 0, the logsumexp saved or not), default and `mode=\"deterministic\"`, "
        "against torch's flash backward (SDPA, 4-D, enable_gqa where grouped) and "
        "torch.compile of the math written out. Tiles 128x64, 2 stages."),
    "cross_entropy": ("Cross-entropy (online logsumexp)",
        "loops.py: cross-entropy over 32000 logits per row, fp32, one program per row with "
        "an online logsumexp over vocabulary blocks: `tritonad.autograd` and `tritonad.grad` "
        "against torch eager and torch.compile of `F.cross_entropy`."),
    "deterministic": ("Deterministic mode's scatter slots",
        "deterministic.py: programs that add to rows gathered through a table (an "
        "embedding's lookup, a persistent kernel's lookup, a gathered matmul): "
        "`tritonad.autograd` in the default mode (atomics) and `mode=\"deterministic\"` "
        "(scatter slots: keys sorted after the kernel, each element summing the values of the "
        "keys that cover it in a fixed order), against torch eager's autograd of the same "
        "indexing and torch.compile."),
}


def new_section(key: str, **fields) -> Section:
    title, measures = INFO[key]
    return Section(key, title, measures, **fields)


def kernels_section(quick: bool) -> Section:
    import bench
    sizes = ([(name, make, sizes[:1]) for name, make, sizes in bench.SIZES] if quick
             else bench.SIZES)
    rows, failures = bench.measure(sizes)
    section = new_section(
        "kernels", methods=("tritonad.grad", "hand", "eager"), subjects=("tritonad.grad",),
        baselines=("hand", "eager"), failures=failures)
    for r in rows:
        row = Row(f"{r['workload']} {r['size']}")
        if r.get("error"):
            row.errors[WHOLE_ROW if "t_hand" not in r else "tritonad.grad"] = r["error"]
        if "t_hand" in r:
            gpu = r["gpu_us"]
            row.gpu_us = {"tritonad.grad": gpu.get("tritonad"), "hand": gpu["hand"],
                          "eager": gpu["eager"]}
            row.wall_us = {"tritonad.grad": ms_to_us(r["t_ad_zero"]),
                           "hand": ms_to_us(r["t_hand"]), "eager": ms_to_us(r["t_torch"])}
            row.note = f"bitwise reproducible: {r['det']}"
        section.rows.append(row)
    return section


def ms_to_us(ms: Optional[float]) -> Optional[float]:
    return None if ms is None else ms * 1000.0


def user_section(quick: bool) -> Section:
    import user_level
    specs = user_level.specs(n_ew=4 << 20, m=2048, n=2048) if quick else user_level.specs()
    dtypes = ["fp32"] if quick else ["fp32", "bf16"]
    rows, _, failures = user_level.measure(specs, dtypes)
    section = new_section(
        "user", methods=("tritonad", "hand", "eager", "compile"), subjects=("tritonad",),
        baselines=("hand", "eager", "compile"), failures=failures)
    for name, dtype_name, times, atomics, deterministic in rows:
        section.rows.append(Row(
            f"{name} {dtype_name}", {k: v[0] for k, v in times.items()},
            {k: v[1] for k, v in times.items()},
            note=f"atomics {atomics}; deterministic {'yes' if deterministic else 'NO'}"))
    section.rows += failure_rows(failures, [r.workload for r in section.rows])
    return section


def host_section(quick: bool) -> Section:
    import torch

    import host_overhead
    made = host_overhead.measure(list(host_overhead.OPS), ["small"] if quick else
                                 ["small", "medium"], torch.float32, compile_=True)
    names = {"kernel": "tritonad (kernel)", "launcher": "tritonad (launcher)"}
    section = new_section(
        "host", methods=("tritonad (kernel)", "tritonad (launcher)", "hand", "eager", "compile"),
        subjects=("tritonad (kernel)", "tritonad (launcher)"),
        baselines=("hand", "eager"), metrics=("wall",))
    for m in made:
        section.rows.append(Row(
            f"{m.op.name} {m.shape}", wall_us={names.get(k, k): v for k, v in m.times.items()
                                                if v is not None},
            errors={names.get(k, k): v for k, v in m.errors.items()}))
        section.failures += [f"{m.op.name} {m.shape} {k}: {v}" for k, v in m.errors.items()]
    return section


def matmul_section(quick: bool) -> Section:
    import matmul_spellings
    opts = matmul_spellings.build_parser().parse_args(["--quick"] if quick else [])
    results, failures = matmul_spellings.measure(opts)
    names = {"cuBLAS": "eager"}
    section = new_section(
        "matmul", methods=("tritonad", "hand", "eager", "compile"), subjects=("tritonad",),
        baselines=("hand", "eager", "compile"), failures=failures)
    for r in results:
        errors = r["errors"]
        section.rows.append(Row(
            r["label"], {names.get(k, k): v[0] for k, v in r["times"].items()},
            {names.get(k, k): v[1] for k, v in r["times"].items()},
            note=(f"error {errors['tritonad']:.1e} (cuBLAS {errors['cuBLAS']:.1e}); "
                  f"re-parallelized, no atomics: {matmul_spellings.verdict(r)}")))
    section.rows += failure_rows(failures, [r.workload for r in section.rows])
    return section


def loops_options(only: str, quick: bool):
    import loops
    lengths = "1024" if quick else "1024,2048,4096,8192"
    return loops.build_parser().parse_args(["--only", only, "--lengths", lengths,
                                            "--compile"])


def attention_section(quick: bool) -> Section:
    import loops
    opts = loops_options("attention", quick)
    rows, _, failures = loops.measure(opts)
    names = {"tritonad": "tritonad.grad"}
    section = new_section(
        "attention", methods=("tritonad.autograd", "deterministic", "tritonad.grad", "flash", "compile"),
        subjects=("tritonad.autograd",), baselines=("flash", "compile"), failures=failures)
    for r in rows:
        times = {names.get(k, k): v for k, v in r["times"].items()}
        section.rows.append(Row(
            f"attention L={r['L']}", {k: v[0] for k, v in times.items()},
            {k: v[1] for k, v in times.items()},
            note=f"B*H {r['BH']}; loop: {r['loop']}; max diff vs SDPA (dQ, dK, dV) "
                 + ", ".join(f"{r['errors'][n]:.1e}" for n in ("dQ", "dK", "dV"))))
    section.rows += failure_rows(failures, [r.workload for r in section.rows])
    return section


def attention_spellings_section(quick: bool) -> Section:
    import attention_spellings
    opts = attention_spellings.build_parser().parse_args(["--quick"] if quick else [])
    results, failures = attention_spellings.measure(opts)
    section = new_section(
        "attention_spellings", methods=("tritonad", "deterministic", "flash", "sdpa", "compile"),
        subjects=("tritonad", "deterministic"), baselines=("flash", "compile"),
        failures=failures)
    for r in results:
        notes = r["notes"]
        section.rows.append(Row(
            r["label"], {k: v[0] for k, v in r["times"].items()},
            {k: v[1] for k, v in r["times"].items()}, errors=dict(r["untimed"]),
            note="max diff vs SDPA " + ", ".join(f"{k} {v:.1e}" for k, v in r["errors"].items())
                 + f"; deterministic bitwise: {notes.get('deterministic', {}).get('same', '-')}"))
    shown = [f"{r['label']} {who}" for r in results for who in r["untimed"]]
    section.rows += failure_rows(failures, [r.workload for r in section.rows] + shown)
    return section


def cross_entropy_section(quick: bool) -> Section:
    import loops
    _, row, failures = loops.measure(loops_options("ce", quick))
    names = {"tritonad": "tritonad.grad"}
    section = new_section(
        "cross_entropy", methods=("tritonad.autograd", "tritonad.grad", "eager", "compile"),
        subjects=("tritonad.autograd",), baselines=("eager", "compile"), failures=failures)
    if row:
        times = {names.get(k, k): v for k, v in row["times"].items()}
        section.rows.append(Row(f"cross-entropy {row['shape']}",
                                {k: v[0] for k, v in times.items()},
                                {k: v[1] for k, v in times.items()},
                                note=f"loop: {row['loop']}; max err vs fp64 {row['err']:.1e}"))
    section.rows += failure_rows(failures, [])
    return section


def deterministic_section(quick: bool) -> Section:
    import deterministic
    rows, failures = deterministic.measure(quick)
    section = new_section(
        "deterministic", methods=deterministic.METHODS, subjects=("deterministic",),
        baselines=("auto", "eager", "compile"), failures=failures)
    for r in rows:
        section.rows.append(Row(
            r["label"], {k: v[0] for k, v in r["times"].items()},
            {k: v[1] for k, v in r["times"].items()},
            note="error vs fp64 " + ", ".join(f"{k} {v:.1e}" for k, v in r["errors"].items())
                 + f"; deterministic bitwise: {r['same']}"))
    section.rows += failure_rows(failures, [r.workload for r in section.rows])
    return section


SECTIONS: Dict[str, Callable[[bool], Section]] = {
    "kernels": kernels_section, "user": user_section, "host": host_section,
    "matmul": matmul_section, "attention": attention_section,
    "attention_spellings": attention_spellings_section, "cross_entropy": cross_entropy_section,
    "deterministic": deterministic_section,
}
def pending(key: str) -> Section:
    return new_section(key, methods=(), subjects=(), baselines=())


def run_section(key: str, quick: bool) -> Section:
    start = time.perf_counter()
    print(f"\n######## {key}", flush=True)
    try:
        section = SECTIONS[key](quick)
    except Exception as error:  # noqa: BLE001  (the other sections still run)
        traceback.print_exc()
        section = pending(key)
        section.error = f"{type(error).__name__}: {error}"
    section.seconds = time.perf_counter() - start
    return section


def header_lines(argv: Sequence[str], started: datetime.datetime,
                 seconds: Optional[float]) -> Dict[str, str]:
    import torch
    import triton

    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    # (the page and its plots and data change as the run goes: not a change that counts)
    changed = [line for line in git("status", "--porcelain", "--untracked-files=no")
               .splitlines() if "benchmarks/RESULTS" not in line]
    dirty = " (with uncommitted changes)" if changed else ""
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
    took = "still running" if seconds is None else f"{seconds:.0f} s"
    return {
        "command": "`" + " ".join(["python3 benchmarks/results.py", *argv]) + "`",
        "date": f"{started:%Y-%m-%d %H:%M} UTC ({took})",
        "device": f"{device}, CUDA {torch.version.cuda}",
        "versions": f"tritonad {commit}{dirty}, triton {triton.__version__}, torch "
                    f"{torch.__version__}, Python {platform.python_version()}",
    }


def write(path: str, sections: Sequence[Section], header: Dict[str, str]) -> None:
    with open(path, "w") as f:
        f.write(render(sections, header))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0].replace("\n", " "),
        epilog="sections: " + ", ".join(SECTIONS) + ". The sections a run leaves out keep "
        "their last results (from the .json beside the page), each with when and where it "
        "was measured; --fresh drops them.")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and fewer rows (a few minutes on an H100)")
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help="comma-separated (default: all)")
    parser.add_argument("--out", default=DEFAULT_OUT,
                        help="the page to write (default: benchmarks/RESULTS.md); its data "
                        "(.json) and plots (.png) go beside it")
    parser.add_argument("--fresh", action="store_true",
                        help="do not keep the results of sections this run leaves out")
    args = parser.parse_args(argv)
    keys = [k.strip() for k in args.sections.split(",") if k.strip()]
    unknown = [k for k in keys if k not in SECTIONS]
    if unknown or not keys:
        parser.error(f"unknown sections {unknown}: choose from {', '.join(SECTIONS)}")

    import torch
    if not torch.cuda.is_available():
        print("benchmarks/results.py measures on a CUDA GPU and none is visible: nothing "
              "written. On a CPU, benchmarks/matmul_spellings.py --describe shows schedules.",
              file=sys.stderr)
        return 2
    sys.path.insert(0, HERE)
    argv = list(sys.argv[1:] if argv is None else argv)
    started = datetime.datetime.now(datetime.timezone.utc)
    start = time.perf_counter()
    header = header_lines(argv, started, None)
    data = os.path.splitext(args.out)[0] + ".json"
    kept = {}
    if os.path.exists(data) and not args.fresh:
        kept = {s.key: s for s in from_json(open(data).read()) if s.key in SECTIONS}
        for section in kept.values():  # (the words are this commit's)
            section.title, section.measures = INFO[section.key]
    sections = {k: kept.get(k) or pending(k) for k in SECTIONS}
    if args.fresh:
        sections = {k: pending(k) for k in SECTIONS if k in keys}
    measured = (f"{started:%Y-%m-%d %H:%M} UTC on {header['device']}, "
                f"{header['versions'].split(',')[0]}{' (--quick)' if args.quick else ''}")

    def save(header):
        write(args.out, list(sections.values()), header)
        with open(data, "w") as f:
            f.write(to_json(list(sections.values())))

    for key in keys:
        sections[key] = pending(key)
        save(header)
        sections[key] = run_section(key, args.quick)
        sections[key].measured = measured
        picture = f"{os.path.splitext(os.path.basename(args.out))[0]}_{key}.png"
        if plot(sections[key], os.path.join(os.path.dirname(os.path.abspath(args.out)),
                                            picture)):
            sections[key].plot = picture
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    save(header_lines(argv, started, time.perf_counter() - start))
    failed = [f"{key}: {f}" for key in keys for f in
              ([sections[key].error] if sections[key].error else []) + sections[key].failures]
    print(f"\nwritten to {args.out} and {data} ({time.perf_counter() - start:.0f} s)")
    if failed:
        print("FAILURES:\n  " + "\n  ".join(f.strip().splitlines()[-1] for f in failed
                                             if f.strip()), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
