"""tritonad.grad of a whole kernel: the backward kernel, launched like the forward."""

from __future__ import annotations

import inspect
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import triton
import triton.language as tl
from triton.runtime.jit import JITFunction

from tritonad import _C, _contract, _masks, _partial, _residuals, _tuning
from tritonad._schedule import Schedule
from tritonad._core import MLIRError, NotDerivedError, locate_in_source
from tritonad._forward_config import FollowsForwardConfig
from tritonad._signature import (_BWD_MARKER, _FWD_MARKER, POSITIONAL_ONLY_NAMES,  # noqa: F401
                                 check_shadows, inner_arguments, renamed_parameters, user_grid)
from tritonad._hook import build_id, register_rewriter
from tritonad._source import (constexpr_names, functions_in, jit_from_source, param_names,
                              pointer_roles, strip_locations)
from tritonad._interpret import InterpretedBackward, is_interpreted, jit_twin
from tritonad._render import header, render_record, source_of

_MODES = ("auto", "atomic", "deterministic")


class DifferentiationError(MLIRError):
    """tritonad could not differentiate a function or kernel; the message names
    the op and its source location (file:line:col of the kernel)."""


@dataclass
class _KernelSpec:
    primal: JITFunction
    bindings: List[tuple]                       # (shadow name, primal pointer name)
    mode: str
    accumulate: bool = True
    derived: Dict[str, str] = field(default_factory=dict)
    schedules: Dict[str, list] = field(default_factory=dict)  # the core's schedule records
    written: Dict[str, List[str]] = field(default_factory=dict)  # shadows it stores into
    partial: Dict[str, List[str]] = field(default_factory=dict)  # shadows in workspace slots
    coverage: Dict[str, dict] = field(default_factory=dict)  # shadows stored once per element
    tapes: Dict[str, list] = field(default_factory=dict)  # [(loop, bytes/iteration, trips)]
    regrid: Dict[str, Optional[dict]] = field(default_factory=dict)  # see _regrid.py
    sources: Dict[str, dict] = field(default_factory=dict)  # rendered Python (_render records)


_SPECS: List[_KernelSpec] = []
_SPECS_LOCK = threading.Lock()


def register_spec(specs: list, spec) -> int:
    """Appends `spec`, returning its index (the placeholder's name carries it):
    under a lock, or two threads deriving at once could read one index."""
    with _SPECS_LOCK:
        specs.append(spec)
        return len(specs) - 1


def shadow_names(pointers, parameters) -> List[str]:
    """The shadow of each pointer: `d` + its name, with one more `d` in front while
    that is taken by a parameter or another shadow (a kernel with both `X_ptr` and
    `dX_ptr`, as Liger's JSD, gets `ddX_ptr`); `bwd.shadows` tells which."""
    taken, names = set(parameters), []
    for pointer in pointers:
        name = "d" + pointer
        while name in taken:
            name = "d" + name
        taken.add(name)
        names.append(name)
    return names


def unwrap(kernel):
    """(JITFunction, [wrappers outermost first]) of a possibly autotuned/heuristics kernel."""
    wrappers = []
    while not isinstance(kernel, JITFunction):
        if is_interpreted(kernel):  # TRITON_INTERPRET=1: derived through a JITFunction twin
            kernel = jit_twin(kernel)
            break
        inner = getattr(kernel, "fn", None)
        if inner is None:
            raise TypeError(f"tritonad.grad expects a @triton.jit kernel, got "
                            f"{type(kernel).__name__}")
        wrappers.append(kernel)
        kernel = inner
    return kernel, wrappers


def reject_derivative(fn) -> None:
    """grad(grad(f)): the placeholder's source is not the derivative (its body
    is only replaced inside Triton's compile), so there is nothing to read."""
    primal = getattr(fn, "tritonad_primal", None)
    if primal is not None:
        raise TypeError(
            f"higher-order derivatives are not supported: {fn.__name__} is itself made by "
            f"tritonad.grad({primal.__name__}); differentiate a @triton.jit function you "
            "write (e.g. the first derivative written out by hand)")


def resolve_params(fn, wrt, names: List[str], constexprs) -> List[str]:
    """wrt (a parameter name or index, or a list/tuple of them) -> parameter names."""
    accepted = ("pass parameter names or indices into the parameter list, e.g. "
                f"wrt={names[0]!r} or wrt=[0]" if names else "")
    items = [wrt] if isinstance(wrt, (int, str)) else wrt
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"wrt must be a parameter name or index or a list/tuple of them, got "
                        f"{type(wrt).__name__}; {accepted}")
    if not items:
        raise ValueError(f"wrt is empty: name at least one parameter to differentiate; "
                         f"{accepted}")
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            # (bool is an int: wrt=True would silently mean parameter 1)
            raise TypeError(f"wrt={item!r} ({type(item).__name__}) is not a parameter name "
                            f"or index; {accepted}")
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
    return resolved


def kernel_grad(kernel, wrt=None, *, pointers: Optional[Sequence[str]] = None,
                mode: str = "auto", accumulate: bool = True, tape: Optional[bool] = None,
                tune=False):
    fn, wrappers = unwrap(kernel)
    reject_derivative(fn)
    if not isinstance(mode, str) or mode not in _MODES:
        raise ValueError(f"mode must be one of {sorted(_MODES)}, got {mode!r}")
    if not isinstance(accumulate, bool):
        raise TypeError(f"accumulate must be True (add into the shadows) or False (the "
                        f"shadows hold zeros and receive the gradient), got {accumulate!r}")
    if tape not in (None, True, False):
        raise TypeError(f"tape must be None (loop tapes where they fit in memory), True "
                        f"(always) or False (never: replay), got {tape!r}")
    _tuning.validate(tune)
    names = param_names(fn)
    constexprs = set(constexpr_names(fn))
    runtime = [n for n in names if n not in constexprs]
    roles = pointer_roles(fn)
    if pointers is not None:
        pointers = [pointers] if isinstance(pointers, str) else list(pointers)
        for p in pointers:
            if p not in runtime:
                raise ValueError(f"{fn.__name__} has no runtime parameter {p!r} "
                                 f"(parameters: {names})")
        roles = {p: roles.get(p, set()) for p in pointers}
    if not roles:
        raise ValueError(f"tritonad found no pointer parameters in {fn.__name__} (no tl.load or "
                         "tl.store through a parameter); pass pointers=(...) explicitly")
    # wrt picks the inputs that get gradients; a pointer stored to (or one whose use
    # is unclear) keeps its shadow, which carries the upstream gradient.
    pointer_list = list(roles)
    if wrt is not None:
        wanted = resolve_params(fn, wrt, names, constexprs)
        for w in wanted:
            if w not in roles:
                raise ValueError(f"wrt={w!r} is not a pointer parameter of {fn.__name__}; "
                                 f"pointer parameters: {pointer_list}")
            if roles[w] == {"store"}:
                raise ValueError(
                    f"wrt={w!r} names an output of {fn.__name__} (it stores to {w!r} and never "
                    f"loads from it): wrt selects the inputs that get gradients; an output "
                    f"always keeps its shadow d{w}, which carries the upstream gradient. "
                    f"Inputs: {[p for p in pointer_list if 'load' in roles[p]]}")
        excluded = [p for p in pointer_list if p not in wanted and roles[p] == {"load"}]
        pointer_list = [p for p in pointer_list if p not in excluded]
    else:
        excluded = []
    shadows = shadow_names(pointer_list, names)

    # (an empty shadow name: a pointer the core must know of, with no gradient wanted)
    spec = _KernelSpec(fn, list(zip(shadows, pointer_list)) + [("", p) for p in excluded],
                       mode, accumulate)
    key = register_spec(_SPECS, spec)
    # (order: after the grad functions the kernel calls hold their derivatives)
    register_rewriter(_BWD_MARKER, _materialize_backward, _restore_backward, order=1)

    defaults = {n: p.default for n, p in inspect.signature(fn.fn).parameters.items()
                if p.default is not inspect.Parameter.empty}
    for n in runtime:
        if n in defaults:
            raise ValueError(f"runtime parameter {n!r} of {fn.__name__} has a default value; "
                             "the backward kernel takes its shadows right after the runtime "
                             "parameters, so give it no default (constexprs may keep theirs)")
    order = runtime + shadows + [n for n in names if n in constexprs]
    renamed = renamed_parameters(names)
    params = _parameter_list(order, constexprs, defaults, renamed)
    # Last, so positional launches keep their meaning; the launch path fills
    # them (see _partial.py), and tritonad.autograd the residual buffer.
    hidden = [parameter["name"] for parameter in _contract.HIDDEN]
    params += [f"{n}=None" for n in hidden]
    name = f"{fn.__name__}{_BWD_MARKER}{key}"
    # The source is Triton's cache key (comments included): everything that changes
    # the derived kernel is spelled out here, so no cached kernel derived with other
    # options is ever served.
    source = (
        f"def {name}({', '.join(params)}):\n"
        f"    # tritonad {build_id()}: its body is replaced by the backward of\n"
        f"    # {fn.__module__}.{fn.__qualname__}; mode={mode!r} accumulate={accumulate!r} "
        f"wrt={wrt!r} "
        f"pointers={pointers!r} bindings={spec.bindings}\n"
        f"    _tritonad_primal({_primal_call(names, renamed)})\n")
    # The hidden integers are not specialized (one compile for every value; a 1
    # would become a constant, absent from the signature), except the program
    # selectors and the masks' variant, which must. Pointers are: Triton then
    # knows the scratch is 16-byte aligned, so loads of tapes, residuals and
    # staged values are vectorized and pipelined (without it, one 2-byte load
    # per element).
    bwd = jit_from_source(source, name, {"tl": tl, "_tritonad_primal": fn,
                                          **_default_globals(defaults, renamed)},
                          do_not_specialize=[n for n in _partial.HIDDEN_INTEGERS
                                             if n not in _partial.SPECIALIZED_INTEGERS])
    bwd.tritonad_renamed = renamed
    bwd.shadows = dict(zip(pointer_list, shadows))
    _make_shadows_optional(bwd, order, shadows, spec)
    bwd.tritonad_primal = fn
    bwd.residual_forward = (
        None if wrappers or getattr(fn, "tritonad_interpreted", None) is not None else
        _ResidualForward(fn, key, names, constexprs, defaults, source, renamed))
    bwd.forward = _ForwardLaunch(kernel, bwd.residual_forward, names, renamed)
    bwd.launch_signature = tuple(order)  # (JITFunction.signature is Triton's own)
    bwd.pointer_roles = {p: frozenset(roles[p]) for p in pointer_list}
    bwd.derived_ir = _Described(bwd, spec.derived, "tritonad_derived", "derived_ir")
    bwd.schedule = _Described(bwd, spec.schedules, _contract.metadata_key("schedule"), "schedule",
                              Schedule.from_records)
    bwd.written_shadows = lambda: _recorded(spec.written, bwd, _contract.metadata_key("written"))
    bwd.partial_shadows = lambda: _recorded(spec.partial, bwd, _contract.metadata_key("partial"))
    bwd.coverage = lambda: _recorded(spec.coverage, bwd, _contract.metadata_key("coverage"))
    bwd.tapes = lambda: _recorded(spec.tapes, bwd, _contract.metadata_key("tapes"))
    bwd.accumulate = accumulate
    bwd.tape = tape
    bwd.tune = tune
    bwd.mode = mode
    bwd.source = _Described(bwd, spec.sources, "tritonad_source", "source", source_of)
    if getattr(fn, "tritonad_interpreted", None) is not None:
        bwd = InterpretedBackward(bwd, fn, shadows,
                                  [renamed.get(n, n) for n in names if n in constexprs])
    return _rewrap(bwd, wrappers, shadows)


def _parameter_list(names, constexprs, defaults, renamed) -> List[str]:
    """A placeholder's parameters as source: constexprs annotated, the
    forward's defaults kept (each read from a global of the placeholder:
    Triton evaluates a default's source when it compiles, and takes a
    global there, where it would refuse a dict lookup), `renamed` ones
    under their inner names."""
    params = []
    for n in names:
        inner = renamed.get(n, n)
        text = f"{inner}: tl.constexpr" if n in constexprs else inner
        if n in defaults:
            text += f" = {_DEFAULT_PREFIX}{inner}"
        params.append(text)
    return params


_DEFAULT_PREFIX = "_tritonad_default_"


def _default_globals(defaults, renamed) -> dict:
    return {f"{_DEFAULT_PREFIX}{renamed.get(n, n)}": value for n, value in defaults.items()}


def _primal_call(names, renamed) -> str:
    """The placeholder's call of the forward: every parameter by its own name."""
    return ", ".join(f"{n}={renamed.get(n, n)}" for n in names)


class _PositionalLaunch:
    """The user's kernel launched with its parameters by position: one named
    like a launch keyword (``grid``) cannot be passed by name. Takes the
    arguments by the placeholder's names. A parameter that a wrapper fills
    (a heuristic, an autotune config's kwargs) ends the positions: those
    after it go by the kernel's own names, as the user's launch passes them
    (``num_warps=4`` binds to a parameter of that name)."""

    def __init__(self, kernel, names, renamed):
        self.kernel, self.names, self.renamed = kernel, list(names), renamed
        fn, _ = unwrap(kernel)
        self.defaults = {n: p.default for n, p in inspect.signature(fn.fn).parameters.items()
                         if p.default is not inspect.Parameter.empty}

    def __getitem__(self, grid):
        def launch(**arguments):
            arguments = dict(arguments)
            positional, by_name, filled = [], {}, None
            for n in self.names:
                inner = self.renamed.get(n, n)
                if inner not in arguments and n not in self.defaults:
                    filled = filled or n  # (a wrapper fills it, or Triton names it missing)
                    continue
                value = arguments.pop(inner) if inner in arguments else self.defaults[n]
                if filled is None:
                    positional.append(value)
                elif n in POSITIONAL_ONLY_NAMES:
                    raise TypeError(
                        f"{_name_of(self.kernel)}: parameter {n!r} comes after {filled!r}, "
                        f"which its heuristics or autotune configs fill, and Triton's launch "
                        f"takes {n!r} for itself: it can be passed only by position, which "
                        f"the filled parameter ends; rename {n!r} or move it before {filled!r}")
                else:
                    by_name[n] = value
            return self.kernel[user_grid(grid, self.renamed)](*positional, **by_name,
                                                              **arguments)
        return launch


class _ForwardLaunch(_residuals.ForwardLaunch):
    """``bwd.forward`` (see _residuals.ForwardLaunch), for kernels with
    parameters named like launch keywords too."""

    def __init__(self, kernel, augmented, names, renamed):
        super().__init__(kernel, augmented, names)
        self.renamed = renamed

    def run(self, grid, args, kwargs):
        if not self.renamed:
            return super().run(grid, args, kwargs)
        from tritonad._source import bind_arguments

        bound = inner_arguments(bind_arguments(self.names, args, kwargs), self.renamed,
                                _name_of(self.kernel))
        forward = self.augmented.get() if self.augmented is not None else None
        return _residuals.launch_forward(
            forward, _PositionalLaunch(self.kernel, self.names, self.renamed),
            user_grid(grid, self.renamed), bound,
            [self.renamed.get(n, n) for n in self.names])


def _name_of(kernel) -> str:
    return unwrap(kernel)[0].__name__


def _latest(by_name: Dict[str, str]) -> Optional[str]:
    return next(reversed(by_name.values()), None)


class _Described:
    """``bwd.schedule()``, ``bwd.derived_ir()``, ``bwd.source()``: the latest
    derivation's, or, given the backward's launch arguments (as ``bwd[grid](...)``
    takes them; tensors may be on the CPU, shadows left out take their pointer's
    type), the derivation for those argument types, made on the CPU (Triton's front
    end to TTIR for an sm_90 target, no GPU and no launch): ``schedule`` and
    ``derived_ir`` as a GPU launch of several programs derives it (the launch path's
    hidden arguments present: partial buffers, scratch, tables), ``source`` without
    them (a kernel that launches as written)."""

    def __init__(self, bwd, records, key, what, convert=lambda record: record):
        self.bwd, self.records, self.key, self.what = bwd, records, key, what
        self.convert = convert
        self._converted = None

    def __call__(self, *args, **kwargs):
        if args or kwargs:
            # (a schedule or IR as a launch derives it; a rendering that launches as
            # written, without the launch path's hidden arguments)
            _derive_for_arguments(self.bwd, args, kwargs, as_launched=self.what != "source")
        recorded = _recorded(self.records, self.bwd, self.key)
        if recorded is None:
            name = self.bwd.tritonad_primal.__name__
            raise NotDerivedError(
                f"the backward of {name} has not been derived yet: launch it once "
                f"(bwd[grid](...)), or pass its launch arguments to describe it without a "
                f"launch: bwd.{self.what}({', '.join(self.bwd.launch_signature[:3])}, ...)")
        return self.convert(recorded)

    def recorded(self):
        """The latest derivation's, or None (for the launch path, at every launch:
        converted once per record)."""
        recorded = _recorded(self.records, self.bwd, self.key)
        if recorded is None:
            return None
        if self._converted is None or self._converted[0] is not recorded:
            self._converted = (recorded, self.convert(recorded))
        return self._converted[1]


def _derive_for_arguments(bwd, args, kwargs, as_launched: bool):
    import inspect

    from triton.runtime.jit import mangle_type

    from tritonad._interpret import derive

    names = bwd.launch_signature
    if len(args) > len(names):
        raise TypeError(f"{len(args)} arguments given, the backward takes {len(names)}: "
                        f"{names}")
    bound = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError(f"{key!r} is not a parameter of the backward {names}")
        bound[key] = value
    for pointer, shadow in bwd.shadows.items():
        if shadow not in bound and pointer in bound:
            bound[shadow] = bound[pointer]
    inner = inner_arguments(bound, bwd.tritonad_renamed, bwd.tritonad_primal.__name__)
    try:
        arguments = inspect.signature(bwd.fn).bind(**inner)
    except TypeError as error:
        raise TypeError(f"describing the backward of {bwd.tritonad_primal.__name__}: "
                        f"{error} (pass every argument a launch would)") from None
    arguments.apply_defaults()
    constexprs = {p.name for p in bwd.params if p.is_constexpr}
    hidden = _hidden_as_launched(bwd) if as_launched else {}
    signature, values = {}, {}
    for param, value in arguments.arguments.items():
        if param in hidden:
            signature[param] = hidden[param]
            if hidden[param] == "constexpr":
                values[param] = 1
        elif param in constexprs or value is None:
            signature[param], values[param] = "constexpr", value
        else:
            signature[param] = mangle_type(value)
    derive(bwd, signature, values, bwd.tritonad_primal)


def _hidden_as_launched(bwd) -> Dict[str, str]:
    """The hidden parameters' types as the launch path's first compile for a launch of
    several programs passes them (_partial.launch): scratch, tables and workspace
    present, the selectors of the forward's programs and of the variant without the
    masks a launch makes true 1 (Triton compiles them as constants); no residuals
    (those are tritonad.autograd's)."""
    spec = _spec_of(bwd.__name__)
    hidden = {p["name"]: p["type"] for p in _contract.HIDDEN
              if p["name"] != _residuals.RESIDUALS}
    if spec is not None and spec.mode == "atomic":  # (no partial buffers)
        hidden.pop(_contract.declared("tritonad_workspace"))
    for selected in (_contract.declared("tritonad_main_only"), _masks.FULL_MASKS):
        hidden[selected] = "constexpr"
    return hidden


def _recorded(by_name: dict, jit: JITFunction, key: str):
    """The latest derivation's record, from this process or Triton's cache."""
    return _latest(by_name) if by_name else _cached(jit, key)


def _cached(jit: JITFunction, key: str) -> Optional[str]:
    """What the rewriter recorded in the metadata of jit's compiled kernels (for a
    cache hit the listener did not see, e.g. another listener replaced tritonad's)."""
    for kernel_cache, *_ in jit.device_caches.values():
        for kernel in reversed(list(kernel_cache.values())):
            recorded = getattr(getattr(kernel, "metadata", None), key, None)
            if recorded:
                return _latest(recorded)
    return None


def _make_shadows_optional(bwd, order, shadows, spec):
    """A shadow left out of a launch means no gradient wanted there, as None does
    (like outputs without a cotangent in torch.autograd). The launch also
    provides the workspace of partial buffers (_partial.py). Autotune and
    heuristics wrappers reach the kernel through ``run``, so they see it too."""
    run = bwd.run
    renamed = bwd.tritonad_renamed
    pointer_shadows = bwd.shadows

    def run_with_optional_shadows(*args, grid, warmup, **kwargs):
        if len(args) > len(order):
            raise TypeError(f"too many arguments: the backward kernel takes {list(order)}")
        for name, value in zip(order, args):
            if name in kwargs:
                raise TypeError(f"argument {name!r} given twice")
            kwargs[name] = value
        kwargs = inner_arguments(kwargs, renamed, spec.primal.__name__)
        grid = user_grid(grid, renamed)
        for shadow in shadows:
            kwargs.setdefault(shadow, None)
        try:
            return _partial.launch(run, grid, warmup, kwargs, shadows,
                                   use_partial=spec.mode != "atomic", tape=bwd.tape,
                                   tune=bwd.tune, check=lambda: check_shadows(
                                       spec.primal.__name__, kwargs, pointer_shadows, renamed))
        except RuntimeError as error:
            if str(error) != "PassManager::run failed":
                raise
            # (Triton's own passes, after the derivation: the IR and the pass are
            # in Triton's message on stderr)
            raise RuntimeError(
                f"tritonad: the backward of {spec.primal.__name__} was derived, but Triton's "
                f"compiler failed on it in one of its own passes (its message and the failing "
                f"IR are on stderr above; bwd.derived_ir() holds tritonad's output). This is "
                f"a Triton limitation that the derived code reaches; other tile sizes, "
                f"num_warps or mode='atomic' derive or lower a different kernel") from error

    bwd.run = run_with_optional_shadows
    # (callers may pass shadows uninitialized only to kernels launched this way)
    bwd.tritonad_launch_path = True


def _rewrap(bwd, wrappers, shadows):
    """Applies the forward's heuristics to the backward and, for an autotuned forward,
    the config its launch chose (outermost last)."""
    from triton.runtime.autotuner import Autotuner, Heuristics

    result = bwd
    for wrapper in reversed(wrappers):
        if isinstance(wrapper, Heuristics):
            result = triton.heuristics(_heuristics_by_user_names(
                wrapper.values, bwd.tritonad_renamed))(result)
        elif isinstance(wrapper, Autotuner):
            result = FollowsForwardConfig(result, wrapper)
        else:
            raise TypeError(f"tritonad.grad cannot re-apply {type(wrapper).__name__} to the "
                            "backward kernel")
        for attr in ("tritonad_primal", "forward", "launch_signature", "shadows", "pointer_roles",
                     "derived_ir", "schedule", "written_shadows", "partial_shadows",
                     "coverage", "accumulate", "tape", "tune", "source",
                     "tritonad_launch_path", "tritonad_renamed"):
            setattr(result, attr, getattr(bwd, attr))
    return result


def _heuristics_by_user_names(values: dict, renamed: Dict[str, str]) -> dict:
    """The forward's heuristics for the backward, whose launches may pass the
    parameters named like launch keywords under the placeholders' names: each
    heuristic sees the arguments by the kernel's own names, and one filling
    such a parameter fills it under the placeholders' name."""
    if not renamed:
        return values
    outer = {inner: name for name, inner in renamed.items()}

    def by_user_names(heuristic):
        return lambda args: heuristic({outer.get(k, k): v for k, v in args.items()})

    return {renamed.get(name, name): by_user_names(heuristic)
            for name, heuristic in values.items()}


def spec_of(name: str, marker: str, specs: list):
    """The spec a placeholder named `<primal><marker><index>__<specialization>` was
    made from (None for any other function)."""
    at = name.find(marker)
    if at < 0:
        return None
    index = int(name[at + len(marker):].split("__")[0])
    return specs[index] if index < len(specs) else None


def _spec_of(name: str) -> Optional[_KernelSpec]:
    return spec_of(name, _BWD_MARKER, _SPECS)


def _materialize_backward(text: str, metadata: dict) -> str:
    for name, body in list(functions_in(text)):
        spec = _spec_of(name)
        if spec is None:
            continue
        try:
            # (the core finds the forward kernel: the placeholder's only call)
            record = _C.differentiate_kernel(
                text, "", name, spec.bindings, spec.mode, overwrite=not spec.accumulate,
                programs=programs_of(body),
                full_masks=_masks.variant_is_full(
                    lambda name: specialized_to_one(body, name)))
        except MLIRError as error:
            raise DifferentiationError(
                f"tritonad.grad({spec.primal.__name__}) failed:\n"
            f"{locate_in_source(str(error), text)}") from None
        text = record[_IR]
        record[_TAPES] = [list(tape) for tape in record[_TAPES]]  # (as a cache hit reads them)
        # (the compiled kernel keeps each field under its declared key: _contract.py)
        for entry, key in _contract.BACKWARD_RECORD:
            if key:
                metadata.setdefault(key, {})[name] = record[entry]
        spec.derived[name] = strip_locations(dict(functions_in(text))[name]).rstrip() + "\n"
        metadata.setdefault("tritonad_derived", {})[name] = spec.derived[name]
        for entry, attribute in _SPEC_FIELDS.items():
            getattr(spec, attribute)[name] = record[entry]
        spec.sources[name] = render_record(text, name, name=f"{spec.primal.__name__}_backward",
                                           header=header("Backward", spec.primal))
        metadata.setdefault("tritonad_source", {})[name] = spec.sources[name]
        if os.environ.get("TRITONAD_DUMP"):
            print(f"// tritonad: backward of {spec.primal.__name__}\n"
                  f"// {Schedule.from_records(spec.schedules[name])}\n"
                  f"{spec.derived[name]}",
                  file=sys.stderr)
    return text


def specialized_to_one(function: str, parameter: str) -> bool:
    """Whether the placeholder's signature (the first line of its printed
    function) lacks `parameter`: the launch path passed it as 1, which Triton
    compiles as a constant."""
    signature = function.split("\n", 1)[0]
    return f'"{parameter}"' not in signature and f"%{parameter}:" not in signature


def programs_of(function: str) -> str:
    """Which programs of a re-parallelized backward this compile is for: the
    selector the launch path passed as 1 (_partial.PROGRAM_SELECTORS);
    'all' where it has both (the interpreter, a caller's own signature)."""
    absent = [programs for selector, programs in _partial.PROGRAM_SELECTORS.items()
              if specialized_to_one(function, selector)]
    return absent[0] if len(absent) == 1 else "all"


_IR, _TAPES = _contract.fields("backward", "ir", "tapes")
# The record's fields kept on the spec too (what schedule(), coverage() ... read),
# by its attribute.
_SPEC_FIELDS = dict(zip(
    _contract.fields("backward", "schedule", "written", "partial", "coverage", "tapes", "regrid"),
    ("schedules", "written", "partial", "coverage", "tapes", "regrid")))


def _restore_backward(metadata: dict) -> None:
    """A cache hit. The placeholder names in the metadata are this process's: the
    placeholder's source (its name, with the index into _SPECS, and every option)
    is part of the cache key, so a hit means this process made the same one."""
    for key, into in (("tritonad_derived", "derived"), ("tritonad_source", "sources"),
                      *((_contract.metadata_key(entry), attribute)
                        for entry, attribute in _SPEC_FIELDS.items())):
        for name, text in metadata.get(key, {}).items():
            spec = _spec_of(name)
            if spec is not None:
                getattr(spec, into)[name] = text


class _ResidualForward:
    """The forward that also saves residuals for the backward derived from the
    same spec (_residuals.py): a placeholder kernel, made on first use, that
    calls the forward and whose body the core replaces. ``get()`` returns the
    JITFunction, launched like the forward plus ``tritonad_residuals``."""

    def __init__(self, fn, key, names, constexprs, defaults, backward_source, renamed):
        # (key: the spec's index in _SPECS, which the rewriter finds by name)
        self.fn, self.key, self.names = fn, key, names
        self.constexprs, self.defaults = constexprs, defaults
        self.backward_source = backward_source
        self.renamed = renamed  # (its parameters are the backward's: renamed_parameters)
        self.jit = None

    def get(self) -> JITFunction:
        if self.jit is None:
            name = f"{self.fn.__name__}{_FWD_MARKER}{self.key}"
            params = _parameter_list(self.names, self.constexprs, self.defaults,
                                     self.renamed)
            params.append(f"{_residuals.RESIDUALS}=None")
            # (the backward's source, as a comment: the same options, the same cache key)
            comment = "".join(f"    # {line}\n" for line in self.backward_source.splitlines())
            source = (f"def {name}({', '.join(params)}):\n"
                      f"    # the forward that saves residuals for:\n{comment}"
                      f"    _tritonad_primal({_primal_call(self.names, self.renamed)})\n")
            register_rewriter(_FWD_MARKER, _materialize_forward, _restore_forward, order=1,
                              derives=False)
            self.jit = jit_from_source(source, name,
                                       {"tl": tl, "_tritonad_primal": self.fn,
                                        **_default_globals(self.defaults, self.renamed)})
        return self.jit


def _materialize_forward(text: str, metadata: dict) -> str:
    for name, _ in list(functions_in(text)):
        spec = spec_of(name, _FWD_MARKER, _SPECS)
        if spec is None:
            continue
        try:
            text, residuals, _ = _C.augment_forward(text, "", name, spec.bindings, spec.mode)
        except MLIRError:
            # (the placeholder still calls the forward: it saves nothing, and the
            # backward, which derives the same forward, reports the error)
            residuals = None
        metadata.setdefault(_contract.metadata_key("residuals"), {})[name] = residuals
    return text


def _restore_forward(metadata: dict) -> None:
    """Nothing to restore: the launch reads the residuals from the metadata."""
