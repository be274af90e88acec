"""Gradient checks run in Triton's CPU interpreter (TRITON_INTERPRET=1), by feature.

test_interpret.py runs this package in a fresh Python with TRITON_INTERPRET=1 set
before Triton is imported (Triton decides between JITFunction and
InterpretedFunction when ``@triton.jit`` runs, and its own library functions are
made at import). Each check derives a backward kernel (or a VJP) through tritonad,
which renders it as Triton Python and interprets that rendering; the gradients are
compared with torch.autograd in float64 on fresh random inputs (the seed is printed
with a failure). Sizes are odd, so masks matter. The kernels are the corpus's
(test/corpus/); the harness is test/interpreter_util.py.

    TRITON_INTERPRET=1 python test/interpret_checks [out.json [seed [name ...]]]

Modules: rules (the elementwise rule table, every VJP), corpus_kernels (the corpus),
loops (while loops, program order, tapes), stabilizers, attention (two-loop flash
attention), regrid (re-parallelized gradients), reductions (sums, products, scans),
atomics (atomic outputs), semantics (the rendering's integer and float semantics),
api (autograd, wrappers, the quickstart, located errors).
"""

from typing import Callable, Dict

import torch

CHECKS: Dict[str, Callable] = {}


def check(name):
    """Registers a check (a function of no arguments that raises on failure)."""
    def register(fn):
        assert name not in CHECKS, name
        CHECKS[name] = fn
        return fn
    return register


def check_both(name):
    """Registers a check for float32 and float64 inputs (`fn(dtype)`)."""
    def register(fn):
        check(f"{name}_fp32")(lambda: fn(torch.float32))
        check(f"{name}_fp64")(lambda: fn(torch.float64))
        return fn
    return register


def tolerance(dtype):
    return dict(rtol=1e-9, atol=1e-9) if dtype == torch.float64 else dict(rtol=1e-4, atol=1e-5)


# (after the registry: each module registers its checks when imported)
from interpret_checks import (api, atomics, attention, corpus_kernels, loops,  # noqa: E402,F401
                              reductions, regrid, rules, semantics, stabilizers)

PACKAGE = __path__[0]  # what run_in_interpreter runs (its __main__.py)
