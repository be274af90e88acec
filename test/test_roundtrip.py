"""Round trip of real Triton TTIR through tritonad's own MLIR: parse, verify, print.

For every kernel of ``corpus.kernels.CORPUS``:

* ``test_ptx_identical_after_tritonad_roundtrip[pretty|generic]``: compile the kernel
  from ``ASTSource`` for ``GPUTarget("cuda", 90, 32)`` (works without a GPU), pass
  ``asm["ttir"]`` (TTIR with locations) through ``tritonad.run_pipeline`` (pretty or
  generic op form, locations kept), write the result to a ``.ttir`` file, compile
  that file with Triton (IRSource: make_ttir is skipped) and require the PTX to be
  byte-identical to the original's (the PTX ``.loc`` line info comes from the
  ``loc(...)`` entries, so it checks that tritonad keeps those too).
* ``test_roundtrip_is_stable[pretty|generic]``: printing is a fixed point,
  ``run_pipeline(run_pipeline(t)) == run_pipeline(t)``.
* ``test_roundtrip_launch_matches_original`` (``gpu``; skipped without CUDA): the
  ASTSource-compiled original and the kernel compiled from tritonad's text, both
  for the GPU's own target, launched on clones of the same seeded inputs, must
  write bit-identical outputs (a JIT launch of the kernel is checked as well, with
  a tolerance: see the test).

Findings (Triton 3.6.0 + tritonad, CPU machine): all 34 kernels give identical PTX
in BOTH forms; Triton's parser accepts tritonad's generic form. tritonad's pretty
text equals Triton's own text for 27 kernels; for the other 7 (those with
scf.for / scf.while) only SSA names differ: the block arguments of scf.for/scf.while
regions print as ``%argN`` instead of Triton's ``%start``/``%acc_7``, because the
custom syntax of these ops does not print the block arguments' locations, so the
NameLoc that Triton prints them by is lost when the text is parsed (by tritonad or
by Triton alike). SSA names do not reach the PTX.

Cache: every test gets its own empty ``TRITON_CACHE_DIR`` and ``TRITON_ALWAYS_COMPILE=1``
(Python-side knob overrides are removed for the test), and ``USE_IR_LOC`` /
``TRITON_KERNEL_OVERRIDE`` / ``TRITON_DISABLE_LINE_INFO`` are unset, since each would
change or hide what is compared. The original compile (TTIR + PTX) is done once per
kernel and shared by the tests of this module (``_ORIGINALS``).
"""

import difflib
import os

import pytest
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from corpus.kernels import CORPUS, runtime_args_with_constexprs
from gpu_util import requires_gpu

tritonad = pytest.importorskip("tritonad", reason="tritonad (python/ with the built _C module) is not importable")

TARGET = GPUTarget("cuda", 90, 32)
FORMS = ("pretty", "generic")

# (kernel name, form) -> reason, for round trips whose PTX is known to differ; each
# becomes xfail(strict=True). Empty: every corpus kernel gives identical PTX in both forms.
KNOWN_PTX_DIFFS: dict = {}

# Outputs whose value depends on the order in which programs run, so two launches of
# the SAME binary may differ in the last bits: {kernel: {output index: (rtol, atol)}}.
NONDETERMINISTIC_OUTPUTS = {
    # fp32 tl.atomic_add of 4 per-program partial sums into one scalar: the order of
    # the atomics changes the rounding (the sum is ~1000, so a few ulp ~ 1e-4).
    "atomic_sum": {1: (1e-5, 1e-5)},
    # spin lock (atomic_cas) serializes programs in arrival order; dw/db partial rows
    # (indices 2, 3) are fp32 sums of ~7 rows each in that order.
    "layer_norm_bwd_dx_lock": {2: (1e-5, 1e-5), 3: (1e-5, 1e-5)},
}

# Environment variables that change what Triton prints/compiles from a .ttir file
# (USE_IR_LOC re-bases locations on the .ttir file itself) or hide the compile.
_ENV_OFF = ("USE_IR_LOC", "TRITON_KERNEL_OVERRIDE", "TRITON_DISABLE_LINE_INFO", "TRITON_KERNEL_DUMP")
_KNOBS_OFF = {
    "cache": ("dir", ),
    "compilation": ("always_compile", "use_ir_loc", "override", "disable_line_info", "dump_ir"),
}

_ORIGINALS = {}  # kernel name -> (ttir, ptx) of the ASTSource compile for TARGET


@pytest.fixture(autouse=True)
def _fresh_triton_cache(tmp_path, monkeypatch):
    """Own empty Triton cache per test, always compile, no env that alters the round trip."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton_cache"))
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    for key in _ENV_OFF:
        monkeypatch.delenv(key, raising=False)
    # A knob assigned from Python lives in the knobs object's __dict__ and wins over the
    # environment: drop such overrides for the duration of the test.
    for group, names in _KNOBS_OFF.items():
        obj = getattr(triton.knobs, group)
        for name in names:
            if name in vars(obj):
                monkeypatch.delitem(vars(obj), name)
    assert triton.knobs.cache.dir == str(tmp_path / "triton_cache")
    assert triton.knobs.compilation.always_compile


def _ids(entry):
    return entry.name


def _ast_source(entry):
    return ASTSource(entry.fn, entry.signature, entry.constexprs)


def _original(entry):
    """(ttir, ptx) of the kernel compiled from its ASTSource for TARGET (cached per module)."""
    if entry.name not in _ORIGINALS:
        compiled = triton.compile(_ast_source(entry), target=TARGET)
        ttir = compiled.asm["ttir"]
        assert "loc(" in ttir, "asm['ttir'] carries no locations"
        _ORIGINALS[entry.name] = (ttir, compiled.asm["ptx"])
    return _ORIGINALS[entry.name]


def _diff(a, b, name_a, name_b, max_lines=80):
    lines = list(difflib.unified_diff(a.splitlines(), b.splitlines(), name_a, name_b, lineterm="", n=2))
    more = len(lines) - max_lines
    return "\n".join(lines[:max_lines]) + (f"\n... ({more} more diff lines)" if more > 0 else "")


def _param_forms():
    out = []
    for entry in CORPUS:
        for form in FORMS:
            marks = []
            if (entry.name, form) in KNOWN_PTX_DIFFS:
                marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_PTX_DIFFS[entry.name, form]))
            out.append(pytest.param(entry, form, id=f"{entry.name}-{form}", marks=marks))
    return out


@pytest.mark.parametrize("entry, form", _param_forms())
def test_ptx_identical_after_tritonad_roundtrip(entry, form, tmp_path):
    ttir, ptx = _original(entry)
    text = tritonad.run_pipeline(ttir, generic=(form == "generic"), debug_info=True, name=f"{entry.name}.ttir")
    assert "loc(" in text, "tritonad dropped the locations"
    if form == "generic":
        assert '"tt.func"' in text, "generic=True did not print the generic op form"
    path = tmp_path / f"{entry.name}.{form}.ttir"
    path.write_text(text)
    ptx2 = triton.compile(str(path), target=TARGET).asm["ptx"]
    if ptx2 != ptx:
        pytest.fail(f"PTX differs after the tritonad round trip ({form} form) of {entry.name}:\n" +
                    _diff(ptx, ptx2, "original.ptx", f"tritonad-{form}.ptx"), pytrace=False)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("entry", CORPUS, ids=_ids)
def test_roundtrip_is_stable(entry, form):
    ttir, _ = _original(entry)
    generic = form == "generic"
    once = tritonad.run_pipeline(ttir, generic=generic)
    twice = tritonad.run_pipeline(once, generic=generic)
    if twice != once:
        pytest.fail(f"printing is not a fixed point ({form} form) for {entry.name}:\n" +
                    _diff(once, twice, "once.ttir", "twice.ttir"), pytrace=False)


# ---------------------------------------------------------------------------
# GPU: launch and compare outputs
# ---------------------------------------------------------------------------
def _clone_args(args):
    """Clone tensor args keeping exact sizes/strides (kernels get strides as ints)."""
    import torch
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            c = torch.empty_strided(a.size(), a.stride(), dtype=a.dtype, device=a.device)
            c.copy_(a)
            out.append(c)
        else:
            out.append(a)
    return out


def _bitwise_equal(a, b):
    import torch
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a.contiguous().view(-1).view(torch.uint8), b.contiguous().view(-1).view(torch.uint8))


def _check_close(entry, idx, got, want, what, rtol, atol):
    import torch
    try:
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)
    except AssertionError as e:
        pytest.fail(f"{entry.name}: output {idx} ({what}, rtol={rtol}, atol={atol}):\n{e}", pytrace=False)


def _jit_tolerance(dtype):
    import torch
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2, 1e-2
    if dtype.is_floating_point:
        return 1e-4, 1e-4
    return 0, 0


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("entry", CORPUS, ids=_ids)
def test_roundtrip_launch_matches_original(entry, tmp_path):
    import torch

    # Both compiled for the GPU's own target (no target=). The original is the
    # ASTSource compile, not the JIT launch: the JIT adds tt.divisibility attributes
    # that the ASTSource compile (and so its TTIR) lacks, which changes codegen.
    original = triton.compile(_ast_source(entry))
    text = tritonad.run_pipeline(original.asm["ttir"])
    path = tmp_path / f"{entry.name}.ttir"
    path.write_text(text)
    roundtrip = triton.compile(str(path))
    assert roundtrip.asm["ptx"] == original.asm["ptx"], _diff(original.asm["ptx"], roundtrip.asm["ptx"], "original.ptx",
                                                               "tritonad.ptx")

    torch.manual_seed(0)
    args, grid = entry.make_args("cuda")
    a_orig, a_rt, a_jit = _clone_args(args), _clone_args(args), _clone_args(args)
    original[grid](*runtime_args_with_constexprs(entry, a_orig))  # ASTSource launcher: every slot
    roundtrip[grid](*a_rt)  # IRSource launcher: runtime args only
    entry.fn[grid](*a_jit, **entry.constexprs)
    torch.cuda.synchronize()

    tolerances = NONDETERMINISTIC_OUTPUTS.get(entry.name, {})
    for idx in entry.outputs:
        want, got = a_orig[idx], a_rt[idx]
        if idx in tolerances:
            _check_close(entry, idx, got, want, "round trip vs original, order-dependent", *tolerances[idx])
        elif not _bitwise_equal(got, want):
            _check_close(entry, idx, got, want, "round trip vs original", 0, 0)
            pytest.fail(f"{entry.name}: output {idx} differs from the original in NaN payloads or signed zeros",
                        pytrace=False)
        # Sanity check of the original against the normal JIT launch. Not bitwise: the
        # JIT's divisibility attributes change vectorization/layouts, hence possibly the
        # order of reductions; 1e-4 (fp32) / 1e-2 (fp16, bf16) cover that with margin.
        rtol, atol = _jit_tolerance(want.dtype)
        if idx in tolerances:
            rtol, atol = max(rtol, tolerances[idx][0]), max(atol, tolerances[idx][1])
        _check_close(entry, idx, a_jit[idx], want, "JIT launch vs original", rtol, atol)
