"""tritonad.grad of a whole kernel: the backward kernel, launched like the forward."""

from __future__ import annotations

import inspect
import os
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import triton
import triton.language as tl
from triton.runtime.jit import JITFunction

from tritonad import _C
from tritonad._core import MLIRError
from tritonad._hook import build_id, register_rewriter
from tritonad._source import (CALL, constexpr_names, functions_in, jit_from_source,
                              param_names, pointer_params, strip_locations, symbol_name)

_BWD_MARKER = "__tritonad_bwd_"
_MODES = {"auto": 0, "atomic": 1, "deterministic": 2}


class DifferentiationError(MLIRError):
    """tritonad could not differentiate a function or kernel; the message names
    the op and its source location (file:line:col of the kernel)."""


@dataclass
class _KernelSpec:
    primal: JITFunction
    bindings: List[tuple]                       # (shadow name, primal pointer name)
    mode: str
    derived: Dict[str, str] = field(default_factory=dict)
    schedules: Dict[str, str] = field(default_factory=dict)


_SPECS: List[_KernelSpec] = []


def shadow_name(param: str) -> str:
    return "d" + param


def unwrap(kernel):
    """(JITFunction, [wrappers outermost first]) of a possibly autotuned/heuristics kernel."""
    wrappers = []
    while not isinstance(kernel, JITFunction):
        inner = getattr(kernel, "fn", None)
        if inner is None:
            raise TypeError(f"tritonad.grad expects a @triton.jit kernel, got "
                            f"{type(kernel).__name__}")
        wrappers.append(kernel)
        kernel = inner
    return kernel, wrappers


def kernel_grad(kernel, wrt=None, *, pointers: Optional[Sequence[str]] = None,
                mode: str = "auto"):
    fn, wrappers = unwrap(kernel)
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {sorted(_MODES)}, got {mode!r}")
    names = param_names(fn)
    constexprs = set(constexpr_names(fn))
    runtime = [n for n in names if n not in constexprs]
    pointer_list = list(pointers) if pointers is not None else pointer_params(fn)
    for p in pointer_list:
        if p not in runtime:
            raise ValueError(f"{fn.__name__} has no runtime parameter {p!r} (parameters: {names})")
    if not pointer_list:
        raise ValueError(f"tritonad found no pointer parameters in {fn.__name__} (no tl.load or "
                         "tl.store through a parameter); pass pointers=(...) explicitly")
    if wrt is not None:
        wanted = [wrt] if isinstance(wrt, str) else list(wrt)
        for w in wanted:
            if w not in pointer_list:
                raise ValueError(f"wrt={w!r} is not a pointer parameter of {fn.__name__}; "
                                 f"pointer parameters: {pointer_list}")
        pointer_list = [p for p in pointer_list if p in wanted]
    shadows = [shadow_name(p) for p in pointer_list]
    clash = set(shadows) & set(names)
    if clash:
        raise ValueError(f"shadow names {sorted(clash)} clash with parameters of {fn.__name__}")

    spec = _KernelSpec(fn, list(zip(shadows, pointer_list)), mode)
    key = len(_SPECS)
    _SPECS.append(spec)
    register_rewriter(_BWD_MARKER, _materialize_backward)

    defaults = {n: p.default for n, p in inspect.signature(fn.fn).parameters.items()
                if p.default is not inspect.Parameter.empty}
    for n in runtime:
        if n in defaults:
            raise ValueError(f"runtime parameter {n!r} of {fn.__name__} has a default value; "
                             "the backward kernel takes its shadows right after the runtime "
                             "parameters, so give it no default (constexprs may keep theirs)")
    order = runtime + shadows + [n for n in names if n in constexprs]
    params = []
    for n in order:
        text = f"{n}: tl.constexpr" if n in constexprs else n
        if n in defaults:
            text += f" = _tritonad_defaults[{n!r}]"
        params.append(text)
    name = f"{fn.__name__}{_BWD_MARKER}{key}"
    source = (
        f"def {name}({', '.join(params)}):\n"
        f"    # tritonad {build_id()}: its body is replaced by the backward of\n"
        f"    # {fn.__module__}.{fn.__qualname__}; shadows {shadows}\n"
        f"    _tritonad_primal({', '.join(f'{n}={n}' for n in names)})\n")
    bwd = jit_from_source(source, name, {"tl": tl, "_tritonad_primal": fn,
                                          "_tritonad_defaults": defaults})
    _make_shadows_optional(bwd, len(runtime), shadows)
    bwd.launch_signature = tuple(order)  # (JITFunction.signature is Triton's own)
    bwd.shadows = dict(zip(pointer_list, shadows))
    bwd.derived_ir = lambda: next(reversed(spec.derived.values()), None)
    bwd.schedule = lambda: next(reversed(spec.schedules.values()), None)
    return _rewrap(bwd, wrappers, shadows)


def _make_shadows_optional(bwd, num_runtime, shadows):
    """A shadow left out of a launch means no gradient wanted there, as None does
    (like outputs without a cotangent in torch.autograd). Autotune and
    heuristics wrappers reach the kernel through ``run``, so they see it too."""
    run = bwd.run

    def run_with_optional_shadows(*args, **kwargs):
        for position, shadow in enumerate(shadows, start=num_runtime):
            if len(args) <= position and shadow not in kwargs:
                kwargs[shadow] = None
        return run(*args, **kwargs)

    bwd.run = run_with_optional_shadows


def _rewrap(bwd, wrappers, shadows):
    """Applies the forward's heuristics/autotune to the backward (outermost last)."""
    from triton.runtime.autotuner import Autotuner, Heuristics

    result = bwd
    for wrapper in reversed(wrappers):
        if isinstance(wrapper, Heuristics):
            result = triton.heuristics(wrapper.values)(result)
        elif isinstance(wrapper, Autotuner):
            saver = _ShadowSaver(shadows)
            result = triton.autotune(configs=wrapper.configs, key=list(wrapper.keys),
                                     pre_hook=saver.save, post_hook=saver.restore)(result)
        else:
            raise TypeError(f"tritonad.grad cannot re-apply {type(wrapper).__name__} to the "
                            "backward kernel")
        for attr in ("launch_signature", "shadows", "derived_ir", "schedule"):
            setattr(result, attr, getattr(bwd, attr))
    return result


class _ShadowSaver:
    """Autotuning runs the backward once per config: shadows are accumulated
    into, so each trial starts from (and leaves) their original content.
    Shadows passed as None are skipped."""

    def __init__(self, shadows):
        self.shadows = shadows
        self.copies = {}

    def save(self, kwargs, reset_only=False):
        if reset_only:  # after the trials: the post hook already restored them
            return
        self.copies = {n: kwargs[n].clone() for n in self.shadows if kwargs.get(n) is not None}

    def restore(self, kwargs, exception):
        for name, copy in self.copies.items():
            kwargs[name].copy_(copy)


def _materialize_backward(text: str) -> str:
    for name, body in list(functions_in(text)):
        marker = name.find(_BWD_MARKER)
        if marker < 0:
            continue
        spec = _SPECS[int(name[marker + len(_BWD_MARKER):].split("__")[0])]
        call = CALL.search(body)
        if call is None:
            raise DifferentiationError(f"tritonad: backward placeholder {name} lost its call")
        primal = symbol_name(call.group(1))
        try:
            text, report = _C.differentiate_kernel(text, primal, name, spec.bindings,
                                                   _MODES[spec.mode])
        except MLIRError as error:
            raise DifferentiationError(
                f"tritonad.grad({spec.primal.__name__}) failed:\n{error}") from None
        spec.derived[name] = strip_locations(dict(functions_in(text))[name]).rstrip() + "\n"
        spec.schedules[name] = report
        if os.environ.get("TRITONAD_DUMP"):
            print(f"// tritonad: backward of {primal}\n// {report}\n{spec.derived[name]}",
                  file=sys.stderr)
    return text
