"""tritonad.grad: reverse-mode derivatives of @triton.jit functions."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Union

import triton
import triton.language as tl
from triton.runtime.jit import JITFunction

from tritonad import _C
from tritonad._core import MLIRError, NotDerivedError, locate_in_source
from tritonad._hook import build_id, register_rewriter
from tritonad._source import (CALL, constexpr_names, count_outputs, functions_in,
                              jit_from_source, param_names, strip_locations, symbol_name)

from tritonad._kernel_grad import (DifferentiationError, kernel_grad, register_spec,
                                   reject_derivative, resolve_params, spec_of, unwrap)
from tritonad._interpret import InterpretedVJP, is_interpreted, jit_twin
from tritonad._render import header, render_record, source_of

_VJP_MARKER = "__tritonad_vjp_"


@dataclass
class _VJPSpec:
    primal: JITFunction
    wrt: List[int]              # indices among the primal's runtime (non-constexpr) parameters
    default_wrt: bool
    params: List[str] = field(default_factory=list)  # runtime parameters (for the rendering)
    outputs: int = 1
    derived: Dict[str, str] = field(default_factory=dict)  # specialization -> TTIR of the VJP
    sources: Dict[str, dict] = field(default_factory=dict)  # rendered Python (_render records)


_SPECS: List[_VJPSpec] = []


def grad(fn: JITFunction, wrt: Optional[Union[int, str, Sequence[Union[int, str]]]] = None, *,
         num_outputs: Optional[int] = None, **kernel_options) -> JITFunction:
    """Reverse-mode derivative of a @triton.jit function or kernel.

    **A pure function** (it returns tensors): ``fn_vjp = tritonad.grad(fn, wrt=...)``
    is a @triton.jit device function called as ``fn_vjp(*args, *cotangents)``:
    the arguments of ``fn`` (constexpr ones included, in the same order), then
    one cotangent per value ``fn`` returns. It returns the gradients of the
    ``wrt`` arguments (a single value when there is one), each of its
    argument's type. ``wrt`` takes parameter names or indices; by default every
    non-constexpr argument (integer ones get a zero gradient).

    **A kernel** (it loads and stores, returns nothing): ``bwd = tritonad.grad(kernel)``
    is the backward kernel, launched with the forward's grid as
    ``bwd[grid](*forward_args, *shadow_args, **constexprs)``, one shadow per
    pointer parameter named ``d`` + its name (``bwd.launch_signature`` lists the order;
    pass ``None``, or leave a shadow out, where no gradient is wanted or given).
    ``wrt`` (names or indices of parameters) picks the pointers the forward
    loads from that get a gradient (by default all); pointers it stores to keep
    their shadows whatever ``wrt`` says. tritonad finds the pointers in the
    source: the bases of the addresses given to ``tl.load`` / ``tl.store`` /
    atomics, followed into the @triton.jit helpers the kernel calls.
    For a pointer the forward loads
    from, the gradient of the loaded values is *added* into its shadow at the
    same addresses under the same mask; for a pointer it stores to, the upstream
    gradient is read from its shadow under the same mask (masked lanes
    contribute zero); ``other=`` values get no gradient; the forward's stores are
    not replayed. Where the forward stores to one pointer more than once, only
    the last write survives, so the backward consumes that shadow (reads it,
    then zeroes it under the store's mask) before earlier stores read it. Each accumulation is a plain read-add-write when the
    addressing proves every address belongs to one program (checked at run time
    when it depends on strides), an atomic add otherwise; ``bwd.schedule()``
    says which (its text, one line per shadow and loop; ``.entries`` holds the
    same as data: kind, subject, location, strategy, how), ``mode="deterministic"``
    refuses atomics (where re-parallelization replaces one by programs of their
    own, it is taken whatever it costs; a write exclusive only for some
    arguments is plain, and each launch checks them), ``mode="atomic"`` forces
    them. ``accumulate=False`` is the contract for fresh gradient
    buffers: the input shadows arrive holding zeros and receive the gradient,
    so where tritonad proves that each element has one writer (one program,
    lane and iteration) it stores instead of reading and adding (``overwrite``
    in ``bwd.schedule()``). ``bwd.written_shadows()`` names the shadows the
    backward writes: an output's shadow listed there is consumed (zeroed where
    overwritten), so pass a copy of an upstream gradient you still need.
    A loop whose carried values are more than sums and stabilizers (see
    ``bwd.schedule()``) keeps each iteration's state on a tape, scratch memory
    the launch allocates (bytes per iteration in the schedule); ``tape=None``
    does so where it fits a quarter of the free device memory
    (``TRITONAD_TAPE_BUDGET`` bytes if set) and otherwise replays iterations
    [0, i) for each i, ``tape=True`` always tapes, ``tape=False`` always replays.
    The same scratch holds, for gradients with programs of their own, what each
    forward program computes once before its loop for them (an epilogue's
    ``dC * act'(acc)``); ``tape=False`` turns that off too.
    The backward launches with the forward's ``num_warps`` / ``num_stages``
    (twice the warps, up to 8, where the backward's live tiles would spill more
    than a quarter of a thread's registers: attention's at head dim 128)
    unless ``tune=`` says otherwise: ``tune=True`` times launch options around
    them (stages up, then down, then twice or half the warps) for each of the
    backward's launches (the forward's programs, re-parallelized parts) and keeps
    the fastest per compiled kernel, grid and integer arguments; ``tune=[{"num_warps":
    8, "num_stages": 3}, ...]`` times exactly those. Trials restore what the
    backward writes; the options change the gradient at most by the order of its sums.
    ``TRITON_PRINT_AUTOTUNING=1`` prints each choice.
    ``bwd.forward[grid](*forward_args, **constexprs)`` launches the forward so that
    it also saves what the backward would recompute (the results of its
    reductions and loops, listed as ``residual`` in ``bwd.schedule()``) and
    returns them, None when there is nothing to save; the backward of that same
    launch reads them when passed as ``tritonad_residuals=`` (a backward of
    another launch raises). ``tritonad.autograd`` does this for you.
    ``pointers=`` names the pointer parameters if tritonad's
    reading of the source misses one. ``triton.heuristics`` / ``triton.autotune``
    wrappers are re-applied to the backward (autotuning restores the shadows
    after each trial).

    In both cases the derivative is computed on TTIR when the kernel compiles,
    inside Triton's normal pipeline.

    Example::

        import torch, triton, triton.language as tl, tritonad

        @triton.jit
        def f(x, y):
            return tl.exp(x) * y

        f_vjp = tritonad.grad(f)                  # d/dx and d/dy

        @triton.jit
        def f_backward(X, Y, DZ, DX, DY, N: tl.constexpr):
            r = tl.arange(0, N)
            x, y, dz = tl.load(X + r), tl.load(Y + r), tl.load(DZ + r)
            dx, dy = f_vjp(x, y, dz)
            tl.store(DX + r, dx)
            tl.store(DY + r, dy)

    ``f_vjp.derived_ir()`` returns the TTIR of the derivative from the last
    compile; setting ``TRITONAD_DUMP=1`` prints it to stderr as it is derived.
    ``f_vjp.source()`` / ``bwd.source()`` return it as Triton Python (a
    ``@triton.jit`` function; raises ``tritonad.RenderError`` for an op it cannot
    write). Under ``TRITON_INTERPRET=1`` both kinds run in Triton's CPU
    interpreter (see docs/quickstart.md).
    """
    if is_interpreted(fn):  # TRITON_INTERPRET=1 (see _interpret.py)
        fn = jit_twin(fn)
    reject_derivative(fn)
    reject_derivative(unwrap(fn)[0])
    if num_outputs is not None:
        wanted = "num_outputs must be a positive int (how many values the function returns)"
        if isinstance(num_outputs, bool) or not isinstance(num_outputs, int):
            raise TypeError(f"{wanted}, got {type(num_outputs).__name__} {num_outputs!r}")
        if num_outputs < 1:
            raise ValueError(f"{wanted}, got {num_outputs}")
    returned = count_outputs(fn) if isinstance(fn, JITFunction) else 0
    if returned == 0:
        if num_outputs is not None:
            raise TypeError(f"num_outputs= is for functions that return values; "
                            f"{unwrap(fn)[0].__name__} is a kernel (it returns nothing)")
        return kernel_grad(fn, wrt, **kernel_options)
    if kernel_options:
        raise TypeError(f"{sorted(kernel_options)}: options of tritonad.grad of a kernel; "
                        f"{fn.__name__} returns values (a device function): pass only wrt= "
                        "and num_outputs=")
    if returned is None and num_outputs is None:
        raise ValueError(f"cannot tell how many values {fn.__name__} returns (its return "
                         "statements differ); pass num_outputs=")
    if returned is not None and num_outputs not in (None, returned):
        raise ValueError(f"num_outputs={num_outputs} but {fn.__name__} returns {returned} "
                         "value(s); leave num_outputs out or pass the right count")
    outputs = returned if num_outputs is None else num_outputs
    names = param_names(fn)
    constexprs = set(constexpr_names(fn))
    runtime = [n for n in names if n not in constexprs]
    wrt_names = runtime if wrt is None else resolve_params(fn, wrt, names, constexprs)
    spec = _VJPSpec(fn, [runtime.index(n) for n in wrt_names], wrt is None, runtime, outputs)
    key = register_spec(_SPECS, spec)
    register_rewriter(_VJP_MARKER, _materialize_vjps, _restore_vjps, order=0)

    cotangents = [f"_tritonad_cotangent_{i}" for i in range(outputs)]
    params = [f"{n}: tl.constexpr" if n in constexprs else n for n in names]
    name = f"{fn.__name__}{_VJP_MARKER}{key}"
    # (the source is Triton's cache key, comments included: it names every option)
    source = (
        f"def {name}({', '.join(params + cotangents)}):\n"
        f"    # tritonad {build_id()}: its body is replaced by the derivative of\n"
        f"    # {fn.__module__}.{fn.__qualname__} with respect to {wrt_names} "
        f"(default wrt: {spec.default_wrt})\n"
        f"    _tritonad_primal({', '.join(names)})\n"
        f"    return {', '.join(wrt_names)}\n")
    vjp = jit_from_source(source, name, {"tl": tl, "_tritonad_primal": fn})
    vjp.tritonad_primal = fn
    def derived(what, record):
        if record is None:
            raise NotDerivedError(
                f"{fn.__name__}'s VJP has not been derived yet: it is derived for the "
                f"argument types of the kernel that calls it, when that kernel compiles; "
                f"launch (or compile) such a kernel first, then call {what}()")
        return record

    vjp.derived_ir = lambda: derived("derived_ir", _latest(spec))
    vjp.source = lambda: source_of(derived("source",
                                           next(reversed(spec.sources.values()), None)))
    vjp.wrt = tuple(wrt_names)
    if getattr(fn, "tritonad_interpreted", None) is not None:
        return InterpretedVJP(vjp, fn, lambda name: _spec_of(name) is spec, constexprs)
    return vjp


def _latest(spec: _VJPSpec) -> Optional[str]:
    return next(reversed(spec.derived.values()), None)


def _spec_of(name: str) -> Optional[_VJPSpec]:
    return spec_of(name, _VJP_MARKER, _SPECS)


def _restore_vjps(metadata: dict) -> None:
    # (a cache hit: the placeholder names are this process's, see _kernel_grad)
    for name, text in metadata.get("tritonad_derived", {}).items():
        spec = _spec_of(name)
        if spec is not None:
            spec.derived[name] = text
    for name, record in metadata.get("tritonad_source", {}).items():
        spec = _spec_of(name)
        if spec is not None:
            spec.sources[name] = record


def _materialize_vjps(text: str, metadata: dict) -> str:
    """Rewriter: replaces each placeholder body with the derivative. A placeholder
    whose primal calls (transitively) another placeholder waits until that one holds
    its derivative: differentiating the placeholder's stand-in body would be wrong."""
    pending = [name for name, _ in functions_in(text) if _spec_of(name) is not None]
    while pending:
        bodies = dict(functions_in(text))
        ready = [n for n in pending if not _reachable(bodies, n) & (set(pending) - {n})]
        if not ready:
            raise DifferentiationError(f"tritonad: the derivatives {pending} call each other")
        for name in ready:
            text = _materialize(text, name, dict(functions_in(text))[name], metadata)
        pending = [n for n in pending if n not in ready]
    return text


def _reachable(bodies: Dict[str, str], start: str) -> set:
    seen, todo = set(), [start]
    while todo:
        for call in CALL.finditer(bodies.get(todo.pop(), "")):
            callee = symbol_name(call.group(1))
            if callee not in seen:
                seen.add(callee)
                todo.append(callee)
    return seen


def _materialize(text: str, name: str, body: str, metadata: dict) -> str:
    spec = _spec_of(name)
    call = CALL.search(body)
    if call is None:
        raise DifferentiationError(f"tritonad: placeholder {name} lost its call to the primal")
    primal = symbol_name(call.group(1))
    try:
        text = _C.differentiate_function(text, primal, name, spec.wrt, spec.default_wrt)
    except MLIRError as error:
        raise DifferentiationError(
            f"tritonad.grad({spec.primal.__name__}) failed:\n"
            f"{locate_in_source(str(error), text)}") from None
    derived = strip_locations(dict(functions_in(text))[name]).rstrip() + "\n"
    spec.derived[name] = derived
    metadata.setdefault("tritonad_derived", {})[name] = derived
    spec.sources[name] = render_record(
        text, name, name=f"{spec.primal.__name__}_vjp",
        header=header("Vector-Jacobian product", spec.primal),
        params=spec.params + [f"cotangent{i}" for i in range(spec.outputs)])
    metadata.setdefault("tritonad_source", {})[name] = spec.sources[name]
    if os.environ.get("TRITONAD_DUMP"):
        print(f"// tritonad: derivative of {primal}\n{derived}", file=sys.stderr)
    return text
