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
from tritonad._core import MLIRError
from tritonad._hook import build_id, register_rewriter
from tritonad._source import (CALL, constexpr_names, count_outputs, functions_in,
                              jit_from_source, param_names, strip_locations, symbol_name)

_VJP_MARKER = "__tritonad_vjp_"


from tritonad._kernel_grad import DifferentiationError, kernel_grad


@dataclass
class _VJPSpec:
    primal: JITFunction
    wrt: List[int]              # indices among the primal's runtime (non-constexpr) parameters
    default_wrt: bool
    derived: Dict[str, str] = field(default_factory=dict)  # specialization -> TTIR of the VJP


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
    says which, ``mode="deterministic"`` refuses atomics, ``mode="atomic"``
    forces them. ``pointers=`` names the pointer parameters if tritonad's
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
    """
    if not isinstance(fn, JITFunction) or count_outputs(fn) == 0:
        return kernel_grad(fn, wrt, **kernel_options)
    outputs = count_outputs(fn) if num_outputs is None else num_outputs
    if outputs is None:
        raise ValueError(f"cannot tell how many values {fn.__name__} returns (its return "
                         "statements differ); pass num_outputs=")
    names = param_names(fn)
    constexprs = set(constexpr_names(fn))
    runtime = [n for n in names if n not in constexprs]
    wrt_names = _resolve_wrt(fn, wrt, names, constexprs, runtime)
    spec = _VJPSpec(fn, [runtime.index(n) for n in wrt_names], wrt is None)
    key = len(_SPECS)
    _SPECS.append(spec)
    register_rewriter(_VJP_MARKER, _materialize_vjps)

    cotangents = [f"_tritonad_cotangent_{i}" for i in range(outputs)]
    params = [f"{n}: tl.constexpr" if n in constexprs else n for n in names]
    name = f"{fn.__name__}{_VJP_MARKER}{key}"
    source = (
        f"def {name}({', '.join(params + cotangents)}):\n"
        f"    # tritonad {build_id()}: its body is replaced by the derivative of\n"
        f"    # {fn.__module__}.{fn.__qualname__} with respect to {wrt_names}\n"
        f"    _tritonad_primal({', '.join(names)})\n"
        f"    return {', '.join(wrt_names)}\n")
    vjp = jit_from_source(source, name, {"tl": tl, "_tritonad_primal": fn})
    vjp.derived_ir = lambda: _latest(spec)
    vjp.wrt = tuple(wrt_names)
    return vjp


def _resolve_wrt(fn, wrt, names, constexprs, runtime) -> List[str]:
    if wrt is None:
        return runtime
    items = [wrt] if isinstance(wrt, (int, str)) else list(wrt)
    resolved = []
    for item in items:
        if isinstance(item, int):
            if not -len(names) <= item < len(names):
                raise ValueError(f"wrt index {item} out of range: {fn.__name__} has "
                                 f"{len(names)} parameters {names}")
            item = names[item]
        if item not in names:
            raise ValueError(f"{fn.__name__} has no parameter {item!r}; parameters: {names}")
        if item in constexprs:
            raise ValueError(f"cannot differentiate with respect to {item!r}: it is a "
                             "tl.constexpr parameter")
        if item not in resolved:
            resolved.append(item)
    if not resolved:
        raise ValueError("wrt is empty: name at least one parameter to differentiate")
    return resolved


def _latest(spec: _VJPSpec) -> Optional[str]:
    return next(reversed(spec.derived.values()), None)


def _materialize_vjps(text: str) -> str:
    """Rewriter: replaces each placeholder body with the derivative."""
    for name, body in list(functions_in(text)):
        marker = name.find(_VJP_MARKER)
        if marker < 0:
            continue
        digits = name[marker + len(_VJP_MARKER):].split("__")[0]
        spec = _SPECS[int(digits)]
        call = CALL.search(body)
        if call is None:
            raise DifferentiationError(f"tritonad: placeholder {name} lost its call to the primal")
        primal = symbol_name(call.group(1))
        try:
            text = _C.differentiate_function(text, primal, name, spec.wrt, spec.default_wrt)
        except MLIRError as error:
            raise DifferentiationError(
                f"tritonad.grad({spec.primal.__name__}) failed:\n{error}") from None
        derived = strip_locations(dict(functions_in(text))[name]).rstrip() + "\n"
        spec.derived[name] = derived
        if os.environ.get("TRITONAD_DUMP"):
            print(f"// tritonad: derivative of {primal}\n{derived}", file=sys.stderr)
    return text
