"""Every code block in README.md and docs/ (tutorials included) runs as written.

Each fenced block is ```python, ```sh or a language that is shown, never run
(text, cpp, mlir). A ```python block runs; a block's behaviour is changed by
an HTML comment (invisible when rendered) on the line just before its fence:

    <!-- doc-test: continue -->        runs after the previous block of the same file, in
                                       the same Python process (it uses the names defined
                                       there); together they are a *chain*, one test
    <!-- doc-test: gpu -->             needs a CUDA GPU: runs natively where torch sees one,
                                       else the test is skipped (and counted as skipped)
    <!-- doc-test: no-interpreter -->  runs without TRITON_INTERPRET: it compiles kernels
                                       for a GPU target (no GPU needed) and launches none
    <!-- doc-test: skip: REASON -->    not run, for a known defect that REASON names; the
                                       test is skipped with that reason
    <!-- doc-test: run -->             (on a ```sh block) runs with bash in the chain's
                                       working directory, after the blocks before it; other
                                       sh blocks (the install commands) never run
    <!-- doc-test: output -->          (on a ```text block) what the chain before it printed
                                       in the interpreter run: its lines must appear in the
                                       output, in order; a line "..." stands for any lines,
                                       "[...]" within a line for any text
    <!-- doc-test: output gpu -->      the same, checked where the chain runs on a GPU

Words combine (`<!-- doc-test: continue gpu -->`); the first block of a chain
sets `gpu`, `no-interpreter` and `skip` for the whole chain.

A chain without a marker runs as CI runs it: a fresh Python with
TRITON_INTERPRET=1 and no visible GPU (CUDA_VISIBLE_DEVICES=""); where a GPU is
present it also runs natively. Its script, named after the .md file (quickstart.md
runs as quickstart.py), keeps each block at its own line of the markdown file (the
other lines are blank), so a traceback's line number, and a `file:line` in what
tritonad prints, is the line in the .md file. test_every_block_is_accounted_for checks the markers
and fences, compiles every Python block (GPU ones too) and prints how many
blocks run, compile only, need a GPU or are skipped.
"""

import ast
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

import pytest

from gpu_util import HAS_CUDA

REPO_ROOT = Path(__file__).resolve().parent.parent
DOC_FILES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
SHOWN_ONLY = {"text", "cpp", "mlir"}    # languages that are shown, never run
WORDS = {"continue", "gpu", "no-interpreter", "skip", "run", "output"}
MARKER = re.compile(r"^<!--\s*doc-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^```(\S*)\s*$")
README_LINES = 100
CHAIN_TIMEOUT_S = 600


@dataclass
class Block:
    path: Path
    line: int                       # the first line of code (1-based), after the fence
    language: str
    code: str
    words: set = field(default_factory=set)
    reason: str = ""                # skip: REASON

    @property
    def where(self) -> str:
        path = self.path.relative_to(REPO_ROOT) if self.path.is_relative_to(REPO_ROOT) else \
            self.path.name
        return f"{path}:{self.line}"


@dataclass
class Chain:
    blocks: List[Block]
    outputs: List[Block] = field(default_factory=list)   # text blocks marked output

    @property
    def first(self) -> Block:
        return self.blocks[0]

    @property
    def id(self) -> str:
        return self.first.where


def parse(path: Path):
    """(blocks, problems) of one markdown file."""
    blocks, problems = [], []
    lines = path.read_text().splitlines()
    pending: Optional[tuple] = None  # (marker line, words, reason)
    i = 0
    while i < len(lines):
        marker = MARKER.match(lines[i])
        if marker:
            if pending:
                problems.append(f"{path.name}:{pending[0]}: a doc-test marker with no fence "
                                f"after it")
            text = marker.group(1)
            words, _, reason = text.partition(":")
            words = set(words.split())
            unknown = words - WORDS
            if unknown:
                problems.append(f"{path.name}:{i + 1}: unknown doc-test words {sorted(unknown)} "
                                f"(known: {sorted(WORDS)})")
            if ("skip" in words) != bool(reason.strip()):
                problems.append(f"{path.name}:{i + 1}: write a skip as "
                                f"'<!-- doc-test: skip: the reason -->'")
            pending = (i + 1, words, reason.strip())
            i += 1
            continue
        fence = FENCE.match(lines[i])
        if not fence:
            if pending and lines[i].strip():
                problems.append(f"{path.name}:{pending[0]}: a doc-test marker must be the line "
                                f"just before a fence")
                pending = None
            i += 1
            continue
        language = fence.group(1)
        start = i + 1
        end = start
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        if end == len(lines):
            problems.append(f"{path.name}:{i + 1}: a fence that is never closed")
            break
        words, reason = (pending[1], pending[2]) if pending else (set(), "")
        block = Block(path, start + 1, language, "\n".join(lines[start:end]) + "\n", words,
                      reason)
        if not language:
            problems.append(f"{block.where}: a fence without a language (python, sh, or one "
                            f"of {sorted(SHOWN_ONLY)})")
        elif language not in {"python", "sh"} | SHOWN_ONLY:
            problems.append(f"{block.where}: fence language {language!r} is not python, sh or "
                            f"one of {sorted(SHOWN_ONLY)}")
        if "output" in words:
            if language != "text" or words - {"output", "gpu"}:
                problems.append(f"{block.where}: 'output' goes alone (or with 'gpu') on a "
                                f"text block")
        elif words and language not in ("python", "sh"):
            problems.append(f"{block.where}: a doc-test marker on a {language!r} block, "
                            f"which never runs")
        if "run" in words and language != "sh":
            problems.append(f"{block.where}: 'run' is for sh blocks (python blocks run anyway)")
        if language == "sh" and words - {"run", "continue"}:
            problems.append(f"{block.where}: an sh block takes only 'run' and 'continue'")
        blocks.append(block)
        pending = None
        i = end + 1
    if pending:
        problems.append(f"{path.name}:{pending[0]}: a doc-test marker with no fence after it")
    return blocks, problems


def runnable(block: Block) -> bool:
    return block.language == "python" or (block.language == "sh" and "run" in block.words)


def collect(paths=DOC_FILES):
    """(chains, problems) over the doc files."""
    chains, problems = [], []
    for path in paths:
        blocks, found = parse(path)
        problems += found
        previous: Optional[Chain] = None
        for block in blocks:
            if "output" in block.words:
                if previous is None:
                    problems.append(f"{block.where}: an output block before any python block")
                else:
                    previous.outputs.append(block)
                continue
            if not runnable(block):
                if "continue" in block.words:
                    problems.append(f"{block.where}: 'continue' on a block that does not run")
                continue
            if "continue" in block.words:
                if previous is None:
                    problems.append(f"{block.where}: 'continue' on the first block of the file")
                    continue
                changed = block.words & {"gpu", "no-interpreter", "skip"}
                if changed - previous.first.words:
                    problems.append(f"{block.where}: {sorted(changed)} on a continuing block: "
                                    f"put it on the chain's first block ({previous.id})")
                previous.blocks.append(block)
            else:
                if block.language == "sh":
                    problems.append(f"{block.where}: an sh block that runs continues a chain "
                                    f"(its files): mark it 'continue run'")
                    continue
                previous = Chain([block])
                chains.append(previous)
    return chains, problems


CHAINS, PARSE_PROBLEMS = collect()


def modes(chain: Chain):
    """How a chain runs here: 'interpreter' (CPU, as CI), 'native' (on a GPU),
    'compile' (no interpreter, no launch)."""
    words = chain.first.words
    if "no-interpreter" in words:
        return ["compile"]
    if "gpu" in words:
        return ["native"]
    return ["interpreter", "native"]


PARAMS = [pytest.param(chain, mode, id=f"{chain.id}-{mode}")
          for chain in CHAINS for mode in modes(chain)]


def script_of(chain: Chain) -> str:
    """The chain as one Python script, each block at its own line of the .md."""
    lines = [""] * len(chain.first.path.read_text().splitlines())
    for block in chain.blocks:
        code = block.code.splitlines()
        at = block.line - 1
        if block.language == "python":
            lines[at:at + len(code)] = code
        else:  # an sh block: one call on its first line, blank lines after it
            lines[at] = (f"__doc_test_run(['bash', '-euo', 'pipefail', '-c', {block.code!r}], "
                         f"check=True)")
    # (line 1 of a .md file is a fence or text, never code: blank here)
    assert not lines[0], chain.id
    lines[0] = "from subprocess import run as __doc_test_run"
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("chain,mode", PARAMS)
def test_doc_chain(chain, mode, tmp_path):
    first = chain.first
    if "skip" in first.words:
        pytest.skip(f"{chain.id}: {first.reason}")
    if mode == "native" and not HAS_CUDA:
        if "gpu" in first.words:
            pytest.skip(f"{chain.id} ({len(chain.blocks)} blocks) needs a CUDA GPU; "
                        f"compiled as Python in test_every_block_is_accounted_for")
        pytest.skip("no CUDA GPU: the interpreter run is the CPU check")
    shells = [b for b in chain.blocks if b.language == "sh"]
    if any("tritonad-opt" in b.code for b in shells) and not shutil.which("tritonad-opt"):
        pytest.skip(f"{chain.id}: tritonad-opt is not on PATH (the install puts it there)")

    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    if mode == "interpreter":
        env.update(TRITON_INTERPRET="1", CUDA_VISIBLE_DEVICES="")
    name = first.path.stem + ".py"
    script = tmp_path / name
    script.write_text(script_of(chain))
    try:
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=CHAIN_TIMEOUT_S)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"{chain.id} ({mode}) ran longer than {CHAIN_TIMEOUT_S} s\n"
                    f"{expired.stdout or ''}{expired.stderr or ''}")
    if done.returncode != 0:
        pytest.fail(f"{chain.id} ({mode}: {len(chain.blocks)} blocks, "
                    f"{'TRITON_INTERPRET=1' if mode == 'interpreter' else 'no interpreter'}) "
                    f"failed with exit status {done.returncode}. Line numbers in {name} are "
                    f"those of {first.path.relative_to(REPO_ROOT)}.\n--- stdout\n"
                    f"{done.stdout[-6000:]}\n--- stderr\n{done.stderr[-8000:]}")
    for block in chain.outputs:
        if ("gpu" in block.words) == (mode == "native"):
            missing = unmatched(block.code, done.stdout)
            assert missing is None, (f"{block.where}: the chain ({mode}) did not print the "
                                     f"sample's lines from {missing!r} on, in order; it "
                                     f"printed:\n"
                                     f"{done.stdout[-6000:]}")


def _line_pattern(line: str):
    return re.compile("^" + ".*".join(re.escape(p) for p in line.rstrip().split("[...]")) + "$")


def unmatched(sample: str, printed: str) -> Optional[str]:
    """The first line of `sample` (an output block) that `printed` does not show in
    order, or None: the sample's runs of lines between "..." lines appear, each
    contiguous, one after another."""
    lines = [line.rstrip() for line in printed.splitlines()]
    runs, run = [], []
    for line in sample.splitlines():
        if line.strip() == "...":
            runs.append(run)
            run = []
        else:
            run.append(line)
    runs.append(run)
    at = 0
    for run in (r for r in runs if r):
        patterns = [_line_pattern(line) for line in run]
        for start in range(at, len(lines) - len(run) + 1):
            if all(p.match(lines[start + i]) for i, p in enumerate(patterns)):
                at = start + len(run)
                break
        else:
            return run[0]
    return None


def test_every_block_is_accounted_for(capsys):
    assert not PARSE_PROBLEMS, "\n".join(PARSE_PROBLEMS)
    blocks = [b for path in DOC_FILES for b in parse(path)[0]]
    python = [b for b in blocks if b.language == "python"]
    for block in python:  # (GPU and skipped blocks too: at least they compile)
        try:
            compile(block.code, block.where, "exec", ast.PyCF_ONLY_AST)
        except SyntaxError as error:
            pytest.fail(f"{block.where}: {error}")
    chained = [b for chain in CHAINS for b in chain.blocks if b.language == "python"]
    assert len(chained) == len(python), "a python block belongs to no chain"
    counts = dict.fromkeys(("interpreter", "compile only", "gpu", "skipped"), 0)
    for chain in CHAINS:
        words = chain.first.words
        kind = ("skipped" if "skip" in words else "gpu" if "gpu" in words else
                "compile only" if "no-interpreter" in words else "interpreter")
        counts[kind] += sum(b.language == "python" for b in chain.blocks)
    shells = [b for b in blocks if b.language == "sh"]
    with capsys.disabled():
        print(f"\ndoc blocks: {len(python)} python in {len(CHAINS)} chains "
              f"({counts['interpreter']} run in the interpreter, {counts['compile only']} "
              f"compile only, {counts['gpu']} need a GPU, {counts['skipped']} skipped); "
              f"{len(shells)} sh ({sum('run' in b.words for b in shells)} run); "
              f"{sum(b.language in SHOWN_ONLY for b in blocks)} shown only")


def setup_commands(text: str) -> List[str]:
    return [line.strip() for line in text.splitlines()
            if line.strip().startswith("python3 -m ")]


def test_readme_setup_commands_are_what_ci_runs():
    ci = setup_commands((REPO_ROOT / ".ci" / "run").read_text())
    readme_blocks, _ = parse(REPO_ROOT / "README.md")
    readme = [c for b in readme_blocks if b.language == "sh" for c in setup_commands(b.code)]
    assert len(ci) == 2, ci
    assert readme[:2] == ci, (f"README.md's set-up commands {readme[:2]} differ from "
                              f".ci/run's {ci}: change both together")


def test_readme_is_short():
    lines = len((REPO_ROOT / "README.md").read_text().splitlines())
    assert lines <= README_LINES, (f"README.md has {lines} lines: keep it to {README_LINES} "
                                   f"and move the details into docs/")


LINK = re.compile(r"\]\(([^)\s]+)\)")


def heading_anchors(path: Path) -> set:
    anchors = set()
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            title = re.sub(r"[^\w\- ]", "", title)
            anchors.add(title.replace(" ", "-"))
    return anchors


def test_relative_links_resolve():
    broken = []
    for path in DOC_FILES:
        text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
        text = re.sub(r"`[^`\n]*`", "", text)  # (inline code: `f[grid](...)` is no link)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists():
                broken.append(f"{path.relative_to(REPO_ROOT)}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in heading_anchors(linked):
                broken.append(f"{path.relative_to(REPO_ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("mode", ["cpu", "gpu"])
def test_demo_checks_gradients(mode):
    """python -m tritonad.demo: on the CPU it runs itself under the interpreter."""
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    if mode == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    elif not HAS_CUDA:
        pytest.skip("needs a CUDA GPU")
    done = subprocess.run([sys.executable, "-m", "tritonad.demo"], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=CHAIN_TIMEOUT_S)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "all gradients match" in output, output
    checks = re.findall(r"max error / max \|torch\| = \S+ \(<= \S+: (\w+)\)", output)
    expected = 8 if mode == "cpu" else 13   # fn1: z, dx, dy; rms_norm: 5 per dtype
    assert checks == ["ok"] * expected, output
    if mode == "cpu":
        assert "Triton's interpreter" in output, output


def test_marker_convention(tmp_path):
    """The conventions above, on a made-up file: chains, options, and the
    mistakes that must be reported rather than silently ignored."""
    doc = tmp_path / "doc.md"
    doc.write_text("# title\n\n```python\nx = 1\n```\n\n<!-- doc-test: continue -->\n"
                   "```python\nassert x == 1\n```\n\n<!-- doc-test: continue run -->\n"
                   "```sh\ntrue\n```\n\n```sh\npip install nothing\n```\n\n"
                   "<!-- doc-test: gpu -->\n```python\nimport torch\n```\n\n"
                   "<!-- doc-test: skip: a known defect -->\n```python\nraise SystemExit(1)\n```\n")
    chains, problems = collect([doc])
    assert not problems, problems
    assert [[b.line for b in c.blocks] for c in chains] == [[4, 9, 14], [23], [28]]
    assert [modes(c) for c in chains] == [["interpreter", "native"], ["native"],
                                          ["interpreter", "native"]]
    assert chains[2].first.reason == "a known defect"
    script = script_of(chains[0]).splitlines()
    assert script[3] == "x = 1" and script[8] == "assert x == 1"
    assert script[13].startswith("__doc_test_run(['bash'")

    doc.write_text("# t\n\n```python\nprint('a\\nb 1 c\\nd')\n```\n\n<!-- doc-test: output -->\n"
                   "```text\na\n...\nd\n```\n\n<!-- doc-test: output gpu -->\n```text\nb [...] c\n```\n")
    (chain,), problems = collect([doc])
    assert not problems and [b.line for b in chain.outputs] == [9, 16], problems
    assert unmatched("a\n...\nd\n", "a\nb 1 c\nd\n") is None
    assert unmatched("b [...] c\n", "a\nb 1 c\nd\n") is None
    assert unmatched("a\nd\n", "a\nb 1 c\nd\n") == "a"        # (not contiguous)
    assert unmatched("d\n...\na\n", "a\nb 1 c\nd\n") == "a"   # (out of order)

    mistakes = {
        "<!-- doc-test: gpus -->\n```python\n```\n": "unknown doc-test words",
        "<!-- doc-test: continue -->\n```python\n```\n": "first block of the file",
        "```\nplain\n```\n": "without a language",
        "```py\nx\n```\n": "not python, sh",
        "<!-- doc-test: gpu -->\n\ntext\n```python\n```\n": "just before a fence",
        "```python\nx = 1\n": "never closed",
        "<!-- doc-test: skip -->\n```python\n```\n": "write a skip as",
        "```python\n```\n<!-- doc-test: continue gpu -->\n```python\n```\n":
            "on a continuing block",
        "```python\n```\n<!-- doc-test: run -->\n```sh\ntrue\n```\n": "mark it 'continue run'",
        "<!-- doc-test: output -->\n```text\nx\n```\n": "before any python block",
        "```python\n```\n<!-- doc-test: output -->\n```python\n```\n": "on a text block",
    }
    for text, expected in mistakes.items():
        doc.write_text(text)
        _, problems = collect([doc])
        assert any(expected in p for p in problems), (text, problems)
