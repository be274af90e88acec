"""benchmarks/results.py, the results page, on the CPU: the page rendered from made-up
rows (numbers, ratios, '-' with the error), each section's rows made from its benchmark
module's measure() (replaced by one returning made-up results of the same shape), and
the command line."""

import os
import random
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO_ROOT / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import results  # noqa: E402


def cells_of(page: str, workload: str, after: str):
    """The cells of the first table row for `workload` after the line `after` that
    follows the workload's first mention."""
    lines = page.splitlines()
    first = next(i for i, line in enumerate(lines) if f"| {workload} |" in line)
    start = max(i for i, line in enumerate(lines[:first]) if line.startswith("## "))
    start = lines.index(after, start)
    for line in lines[start:]:
        if line.startswith(f"| {workload} |"):
            return [c.strip() for c in line.strip().strip("|").split("|")]
    raise AssertionError(f"no row {workload!r} after {after!r}:\n{page}")


def test_page_from_made_up_rows():
    rng = random.Random()
    t = {m: rng.uniform(5, 5000) for m in ("tritonad", "hand", "eager", "compile")}
    wall = {m: rng.uniform(5, 900) for m in ("tritonad", "hand", "eager")}
    section = results.new_section(
        "user", methods=("tritonad", "hand", "eager", "compile"), subjects=("tritonad",),
        baselines=("hand", "eager", "compile"), seconds=rng.uniform(1, 99),
        failures=["RMSNorm 4096x4096 bf16: ValueError: no\nsecond line"])
    section.rows = [
        results.Row("GELU 4M fp32", dict(t), dict(wall),
                    errors={"compile": "RuntimeError: Dynamo | failed\nat line 3"},
                    note="atomics 0"),
        *results.failure_rows(section.failures, ["GELU 4M fp32"]),
    ]
    host = results.new_section("host", methods=("tritonad (kernel)", "eager"),
                               subjects=("tritonad (kernel)",), baselines=("eager",),
                               metrics=("wall",), seconds=3.0)
    host.rows = [results.Row("GELU 65536", wall_us={"tritonad (kernel)": 40.0, "eager": 80.0})]
    page = results.render([section, host, results.pending("matmul")],
                          {"device": "made-up GPU", "date": "today"})

    assert page.startswith("# tritonad: measured results\n\n- device: made-up GPU\n")
    assert "## How to read it" in page
    gpu = cells_of(page, "GELU 4M fp32", "GPU time (us per call):")
    shown = lambda v: f"{v:.1f}" if v < 1000 else f"{v:.0f}"  # noqa: E731
    assert gpu[1:5] == [shown(t[m]) for m in ("tritonad", "hand", "eager", "compile")]
    assert gpu[5:8] == [f"{t['tritonad'] / t[m]:.2f}" for m in ("hand", "eager", "compile")]
    # a missing value is "-", and the notes say why (on one line, without a '|')
    assert gpu[8] == "compile: RuntimeError: Dynamo / failed at line 3; atomics 0"
    walls = cells_of(page, "GELU 4M fp32", "Wall time (us per call):")
    assert walls[4] == "-" and walls[7] == "-"
    assert walls[5] == f"{wall['tritonad'] / wall['hand']:.2f}"
    # a workload that failed as a whole: every time "-", the error's last line
    failed = cells_of(page, "RMSNorm 4096x4096 bf16", "GPU time (us per call):")
    assert failed[1:8] == ["-"] * 7 and failed[8] == "error: second line"
    assert "- RMSNorm 4096x4096 bf16: ValueError: no second line" not in page
    # a section without GPU times says so instead of a table of dashes
    host_part = page[page.index("## Host overhead"):page.index("## Matmul")]
    assert "GPU time (us per call):\n\nnot measured in this section." in host_part
    assert cells_of(page, "GELU 65536", "Wall time (us per call):")[1:4] == \
        ["40.0", "80.0", "0.50"]
    assert "Not yet generated on this commit: run `python3 benchmarks/results.py " \
           "--sections matmul` on a GPU." in page
    # the contents' links resolve to the headings
    for title, target in re.findall(r"^\d+\. \[(.*)\]\(#(.*)\)$", page, re.M):
        assert f"## {title}" in page and target == results.anchor(title)


def test_sections_kept_between_runs_as_json():
    """A run of some sections keeps the others' rows, as they were, with their provenance."""
    section = results.new_section("matmul", methods=("tritonad", "eager"),
                                  subjects=("tritonad",), baselines=("eager",), seconds=2.5,
                                  measured="2026-01-02 03:04 UTC on a GPU, tritonad abc")
    section.rows = [results.Row("grid_2d", {"tritonad": random.uniform(1, 9), "eager": 2.0},
                                errors={"compile": "no"}, note="x")]
    (again,) = results.from_json(results.to_json([section]))
    assert again == section
    page = results.render([again], {})
    assert "(measured 2026-01-02 03:04 UTC on a GPU, tritonad abc, in 2 s)" in page


def test_ratio_and_number_edge_cases():
    assert results.ratio(None, 2.0) == results.ratio(1.0, None) == "-"
    assert results.ratio(1.0, 0.0) == results.ratio(float("nan"), 1.0) == "-"
    assert results.number(None) == results.number(float("nan")) == "-"
    assert results.number(12345.6) == "12346" and results.number(0.04) == "0.0"


def fake(monkeypatch, module_name, value):
    module = __import__(module_name)
    monkeypatch.setattr(module, "measure", lambda *args, **kwargs: value)


def test_sections_make_rows_from_the_benchmarks(monkeypatch):
    """Each section's rows from its module's measure() results (made up, same shape)."""
    fake(monkeypatch, "bench", ([
        dict(workload="GELU", size="4M", ok=True, error=None, t_ad=0.01, t_ad_zero=0.012,
             t_hand=0.008, t_torch=0.02, gpu_us={"tritonad": 11.0, "hand": 8.0,
                                                 "eager": 20.0}, det="yes"),
        dict(workload="softmax", size="7x9", ok=False, error="CompilationError: x")],
        ["softmax 7x9: CompilationError"]))
    kernels = results.kernels_section(quick=True)
    assert [r.workload for r in kernels.rows] == ["GELU 4M", "softmax 7x9"]
    assert kernels.rows[0].wall_us["tritonad.grad"] == pytest.approx(12.0)
    assert kernels.rows[1].errors == {"": "CompilationError: x"}

    times = {k: (10.0, 20.0) for k in ("tritonad", "hand", "eager", "compile")}
    fake(monkeypatch, "user_level", ([("GELU 4M", "fp32", times, 0, True)], [],
                                     ["SwiGLU 4M fp32: tritonad da"]))
    user = results.user_section(quick=True)
    assert [r.workload for r in user.rows] == ["GELU 4M fp32", "SwiGLU 4M fp32"]
    assert user.rows[0].gpu_us["compile"] == 10.0 and user.rows[1].errors == {"": "tritonad da"}

    import host_overhead
    measured = host_overhead.Measured("gelu", "small", "65536", types.SimpleNamespace(
        name="GELU"), None, {"kernel": 5.0, "launcher": 7.0, "compile": None, "eager": 3.0},
        {"compile": "raised RuntimeError: no"}, {})
    fake(monkeypatch, "host_overhead", [measured])
    host = results.host_section(quick=True)
    (row,) = host.rows
    assert row.wall_us == {"tritonad (kernel)": 5.0, "tritonad (launcher)": 7.0, "eager": 3.0}
    assert row.errors == {"compile": "raised RuntimeError: no"} and not row.gpu_us

    fake(monkeypatch, "matmul_spellings", ([dict(
        label="grid_2d fp16 2048x2048x2048", times={"tritonad": (1.0, 2.0),
                                                    "cuBLAS": (0.5, 1.0)},
        errors={"tritonad": 1e-3, "cuBLAS": 1e-3}, regridded=True, atomics=[])],
        ["plain_1d fp16 2048x2048x2048: Traceback ...\nKeyError: 'x'"]))
    matmul = results.matmul_section(quick=True)
    assert matmul.rows[0].gpu_us == {"tritonad": 1.0, "eager": 0.5}
    assert matmul.rows[1].errors == {"": "KeyError: 'x'"}

    row = dict(L=1024, BH=16, loop="stabilizer", errors=dict(dQ=1e-3, dK=1e-3, dV=1e-3),
               times={"tritonad": (3.0, 4.0), "tritonad.autograd": (2.0, 3.0),
                      "flash": (1.0, 2.0)})
    fake(monkeypatch, "loops", ([row], None, []))
    attention = results.attention_section(quick=True)
    assert attention.rows[0].gpu_us == {"tritonad.grad": 3.0, "tritonad.autograd": 2.0,
                                        "flash": 1.0}
    label = "gqa fp16 L=4096 D=64 heads=16 group=4"
    fake(monkeypatch, "attention_spellings", ([dict(
        label=label, times={"tritonad": (3.0, 4.0), "flash": (2.0, 3.0)},
        errors={"tritonad": 1e-3}, notes={}, untimed={"deterministic": "RuntimeError: no"})],
        [f"{label} deterministic: RuntimeError: no", "fa2_helper fp16 L=4096 D=64: KeyError"]))
    rows = results.attention_spellings_section(quick=True).rows
    assert [r.workload for r in rows] == [label, "fa2_helper fp16 L=4096 D=64"]
    assert rows[0].gpu_us == {"tritonad": 3.0, "flash": 2.0}
    assert rows[0].errors == {"deterministic": "RuntimeError: no"}
    fake(monkeypatch, "loops", ([], None, ["cross-entropy: RuntimeError: out of memory"]))
    (ce,) = results.cross_entropy_section(quick=True).rows
    assert ce.errors == {"": "RuntimeError: out of memory"}


def test_section_options_parse():
    """The options results.py passes to the modules' own parsers are theirs."""
    opts = results.loops_options("attention", quick=True)
    assert opts.only == "attention" and opts.compile and opts.lengths == ["1024"]
    import matmul_spellings
    opts = matmul_spellings.build_parser().parse_args(["--quick"])
    assert matmul_spellings.chosen_rows(opts) == matmul_spellings.quick_rows()


def test_command_line(tmp_path):
    script = str(BENCHMARKS / "results.py")
    done = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    words = " ".join(done.stdout.split())  # (argparse wraps the epilog's lines)
    assert "--quick" in words and ", ".join(results.SECTIONS) in words
    done = subprocess.run([sys.executable, script, "--sections", "user,nope"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "unknown sections ['nope']" in done.stderr
    out = tmp_path / "page.md"
    done = subprocess.run([sys.executable, script, "--out", str(out)], capture_output=True,
                          text=True, timeout=300,
                          env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
    assert done.returncode == 2 and "no" in done.stderr and not out.exists(), done.stderr


def test_runs_write_one_page_and_keep_other_sections(tmp_path, monkeypatch):
    """main(): two runs of different sections (measure() made up, the GPU pretended)
    give one page with both; a section that raises shows its error, the others still run."""
    import torch

    for name, value in (("is_available", lambda: True), ("synchronize", lambda: None),
                        ("empty_cache", lambda: None), ("get_device_name", lambda: "GPU X")):
        monkeypatch.setattr(torch.cuda, name, value)
    gpu = {"user": random.uniform(1, 9), "matmul": random.uniform(1, 9)}

    def made_up(key):
        def run(quick):
            section = results.new_section(key, methods=("tritonad", "eager"),
                                          subjects=("tritonad",), baselines=("eager",))
            section.rows = [results.Row(f"{key} row", {"tritonad": gpu[key], "eager": 2.0},
                                        {"tritonad": 1.0, "eager": 4.0})]
            return section
        return run

    def broken(quick):
        raise RuntimeError("CUDA out of memory")
    monkeypatch.setattr(results, "SECTIONS", {"user": made_up("user"), "host": broken,
                                              "matmul": made_up("matmul")})
    out = tmp_path / "PAGE.md"
    assert results.main(["--sections", "user,host", "--out", str(out)]) == 1
    assert results.main(["--quick", "--sections", "matmul", "--out", str(out)]) == 0
    page = out.read_text()
    assert cells_of(page, "user row", "GPU time (us per call):")[1:4] == \
        [f"{gpu['user']:.1f}", "2.0", f"{gpu['user'] / 2:.2f}"]
    assert cells_of(page, "matmul row", "Wall time (us per call):")[3] == "0.25"
    assert "The section failed: RuntimeError: CUDA out of memory" in page
    assert page.count("on GPU X") == 3 and page.count("(--quick)") == 1
    assert "- command: `python3 benchmarks/results.py --quick --sections matmul --out" in page
    assert (tmp_path / "PAGE.json").exists()
    assert results.main(["--fresh", "--sections", "matmul", "--out", str(out)]) == 0
    assert "user row" not in out.read_text()
