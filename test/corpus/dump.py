"""Compile every corpus kernel to TTIR (with locations) and PTX, CPU only.

Usage:
    python3 test/corpus/dump.py OUTDIR [--roundtrip] [--only NAME[,NAME...]]

Writes OUTDIR/<name>.ttir and OUTDIR/<name>.ptx for each entry of
corpus.kernels.CORPUS, compiled with
``triton.compile(ASTSource(fn, signature, constexprs), target=GPUTarget("cuda", 90, 32))``.
Prints one line per kernel; exits 1 if any kernel fails to compile (or, with
--roundtrip, if any round trip fails or gives a different PTX).

Before compiling, ``make_args("cpu")`` of each entry is checked against its
signature (count of runtime args, pointer dtypes, int/float scalars, outputs).

Findings (Triton 3.6.0, checked on this CPU machine)
----------------------------------------------------
* Importing: the repo directory ``test/`` has no ``__init__.py`` and its name
  clashes with the standard library package ``test``, so ``import test.corpus``
  fails. Put ``<repo>/test`` on sys.path and ``import corpus.kernels`` (as here).
* ASTSource constexprs: ``ASTSource.__init__`` accepts keys that are parameter
  NAMES (str, turned into ``(fn.arg_names.index(name),)``) or tuples ``(idx,)``
  (kept as is; nested tuples address elements of tuple arguments). The
  signature must list EVERY parameter, constexprs as ``"constexpr"``; its keys
  must be str. We pass names; ``_normalize_constexprs`` also accepts ints/tuples.
* ``compiled.asm["ttir"]`` IS the module after make_ttir printed WITH locations
  (the cache stores ``str(module)``, i.e. ``module.str()``): a ``#loc = loc("<file>":line:col)``
  header, ``loc(#locN)`` on every op, named locs like ``loc("x_ptr"(#loc))`` on
  block arguments, SSA value names taken from Python variable names
  (``%offs_2``), and ``#locN = ...`` aliases at the end. No hook is needed. The
  file paths in locs are absolute paths of kernels.py. ``module.str_nodebug()``
  would drop them.
* No ``attrs`` are passed, so TTIR has no ``tt.divisibility`` argument
  attributes (the normal JIT launch path adds ``tt.divisibility = 16`` for
  16-byte-aligned pointers / ints divisible by 16, which changes TTGIR/PTX
  vectorization). To mimic a JIT launch pass ``attrs`` to ASTSource.
* A ``@triton.jit(noinline=True)`` helper may only be called with SCALAR
  arguments (pointers, ints, floats, constexprs); tensor arguments raise
  UnsupportedLanguageConstruct "... marked noinline, but was called with
  non-scalar argument". It stays a ``tt.func private`` + ``tt.call`` in TTIR,
  one copy per distinct specialization.
* Round trip in Triton alone (``--roundtrip``): writing ``asm["ttir"]`` to
  ``<name>.ttir`` and calling ``triton.compile("<dir>/<name>.ttir",
  target=GPUTarget("cuda", 90, 32))`` (IRSource: parse_mlir_module, make_ttir
  SKIPPED, then ttgir/llir/ptx/cubin with DEFAULT options) gives PTX that is
  byte-for-byte IDENTICAL to the ASTSource PTX for all corpus kernels, with no
  options passed: kernel names are equal (the .entry name is the public
  tt.func's name, same in both), and the debug ``.file``/``.loc`` lines are
  equal because they come from the ``loc(...)`` entries kept in the TTIR text,
  not from the .ttir file's own path (unless TRITON_USE_IR_LOC / use_ir_loc is
  set, which re-bases locations on the IR file). Identity only holds if both
  compiles use the same options: ASTSource kernels here use defaults
  (num_warps=4, num_ctas=1, num_stages=3, enable_fp_fusion=True, no maxnreg);
  if a kernel was compiled with e.g. ``options={"num_warps": 8}`` the same
  options dict must be passed to the .ttir compile (num_warps is not recorded
  in TTIR; it enters at ConvertTritonToTritonGPU). Metadata differs only in
  ``hash``; ``metadata.name`` is the same.
  Launch difference: an ASTSource CompiledKernel's launcher takes ALL
  signature entries positionally (constexpr slots included, values ignored);
  an IRSource one takes only runtime args (its signature is the func type).
"""

import argparse
import difflib
import os
import sys
import tempfile
import time
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))  # <repo>/test, so `corpus` is importable

import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from corpus.kernels import CORPUS  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)

_TORCH_OF = {
    "*fp32": torch.float32, "*fp16": torch.float16, "*bf16": torch.bfloat16, "*fp64": torch.float64,
    "*i32": torch.int32, "*i64": torch.int64, "*i16": torch.int16, "*i8": torch.int8, "*u8": torch.uint8,
    "*i1": torch.bool
}


def _normalize_constexprs(fn, constexprs):
    """Map constexpr keys (name, int index, or (idx,) tuple) to names, as ASTSource wants."""
    out = {}
    for k, v in constexprs.items():
        if isinstance(k, int):
            k = fn.arg_names[k]
        elif isinstance(k, tuple) and len(k) == 1:
            k = fn.arg_names[k[0]]
        out[k] = v
    return out


def check_entry(entry):
    """Check signature / constexprs / make_args consistency (on CPU tensors)."""
    names = list(entry.fn.arg_names)
    assert list(entry.signature) == names, f"signature keys {list(entry.signature)} != params {names}"
    cex = [n for n, t in entry.signature.items() if t == "constexpr"]
    assert sorted(cex) == sorted(_normalize_constexprs(entry.fn, entry.constexprs)), "constexpr mismatch"
    args, grid = entry.make_args("cpu")
    assert isinstance(grid, tuple) and 1 <= len(grid) <= 3, f"bad grid {grid}"
    rt = [(n, t) for n, t in entry.signature.items() if t != "constexpr"]
    assert len(args) == len(rt), f"{len(args)} args for {len(rt)} runtime params"
    for a, (n, t) in zip(args, rt):
        if t.startswith("*"):
            assert isinstance(a, torch.Tensor) and a.dtype == _TORCH_OF[t], f"{n}: want {t}, got {a!r:.60}"
        elif t.startswith("fp"):
            assert isinstance(a, float), f"{n}: want float for {t}"
        else:
            assert isinstance(a, int) and not isinstance(a, bool), f"{n}: want int for {t}"
    for i in entry.outputs:
        assert isinstance(args[i], torch.Tensor), f"output {i} is not a tensor"


def compile_entry(entry, options=None):
    src = ASTSource(entry.fn, entry.signature, _normalize_constexprs(entry.fn, entry.constexprs))
    return triton.compile(src, target=TARGET, options=options)


def roundtrip(entry, ttir_text, ptx, workdir, options=None):
    """Compile the TTIR text through IRSource; return None if PTX is identical, else a diff."""
    path = os.path.join(workdir, f"{entry.name}.ttir")
    with open(path, "w") as f:
        f.write(ttir_text)
    k2 = triton.compile(path, target=TARGET, options=options)
    ptx2 = k2.asm["ptx"]
    if ptx2 == ptx:
        return None
    diff = difflib.unified_diff(ptx.splitlines(), ptx2.splitlines(), "ast.ptx", "ttir.ptx", lineterm="", n=0)
    return "\n".join(list(diff)[:40])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--roundtrip", action="store_true", help="also recompile each .ttir and compare PTX")
    ap.add_argument("--only", default="", help="comma-separated kernel names")
    ns = ap.parse_args(argv)
    os.makedirs(ns.outdir, exist_ok=True)
    only = set(filter(None, ns.only.split(",")))
    failures = 0
    rt_dir = tempfile.mkdtemp(prefix="tritonad_rt_") if ns.roundtrip else None
    for entry in CORPUS:
        if only and entry.name not in only:
            continue
        t0 = time.time()
        try:
            check_entry(entry)
            k = compile_entry(entry)
            ttir, ptx = k.asm["ttir"], k.asm["ptx"]
            if "loc(" not in ttir:
                raise RuntimeError("asm['ttir'] has no locations")
            with open(os.path.join(ns.outdir, f"{entry.name}.ttir"), "w") as f:
                f.write(ttir)
            with open(os.path.join(ns.outdir, f"{entry.name}.ptx"), "w") as f:
                f.write(ptx)
            msg = f"ok    {entry.name:28s} ttir {len(ttir.splitlines()):4d} lines  ptx {len(ptx.splitlines()):5d} lines"
            if ns.roundtrip:
                d = roundtrip(entry, ttir, ptx, rt_dir)
                if d is None:
                    msg += "  roundtrip: ptx identical"
                else:
                    failures += 1
                    msg = "DIFF" + msg[4:] + "  roundtrip: ptx differs\n" + d
            print(f"{msg}  ({time.time() - t0:.1f}s)", flush=True)
        except Exception as e:  # noqa: BLE001
            failures += 1
            print(f"FAIL  {entry.name:28s} {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(file=sys.stderr)
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
