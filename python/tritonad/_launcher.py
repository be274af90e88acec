"""tritonad.autograd of a launcher: a Python function that launches Triton kernels
becomes a differentiable torch function, unchanged apart from the decorator.

While the launcher runs, every Triton kernel launch in it is recorded with its
bound arguments (``JITFunction.run``, ``Autotuner.run`` and ``Heuristics.run``
are wrapped for the duration of the call only; the recorder is context-local,
so other threads and other launchers are not affected). Afterwards the
recorded launches are read at the level of memory: which storage each pointer
argument addresses, with which offset and strides, and whether the kernel loads
or stores through it (``tritonad.grad(kernel).pointer_roles``). One
``torch.autograd.Function`` node then stands for the whole launcher; its
backward launches the derived backward kernels in reverse order, with the same
grids and arguments, each pointer argument given the view of a gradient buffer
("shadow") that has the same storage offset and strides in a buffer that
mirrors the storage.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import threading
from typing import Any, Dict, List, Optional, Sequence

from tritonad import _caches, _call_plan, _launch_plan, _launcher_plan, _owners
from tritonad._tuned_for_backward import has_choices, tuned_for_backward
from tritonad._owners import name_of
from tritonad._kernel_grad import inner_arguments, renamed_parameters, unwrap
from tritonad._memory import _extent, storage_id, views_overlap  # noqa: F401
from tritonad._partial import _on_device
from tritonad._partial import uninitialized as _uninitialized
from tritonad._source import function_def, param_names
from tritonad._torch import _marks_every, _no_marks, overlaps

_LAUNCHER_OPTIONS = ("mode", "tune")


# ---------------------------------------------------------------------------
# Public entry point
# ---------------------------------------------------------------------------

def autograd(fn=None, outputs: Optional[Sequence[str]] = None, **options):
    """Makes Triton code a differentiable torch operation.

    **A launcher** (a Python function that allocates outputs, computes grids and
    launches one or more kernels): decorate it, nothing else changes::

        @tritonad.autograd
        def matmul(a, b):
            c = torch.empty((a.shape[0], b.shape[1]), device=a.device, dtype=a.dtype)
            grid = lambda META: (triton.cdiv(a.shape[0], META["BLOCK_M"]) *
                                 triton.cdiv(b.shape[1], META["BLOCK_N"]),)
            matmul_kernel[grid](a, b, c, a.shape[0], b.shape[1], a.shape[1],
                                a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                c.stride(0), c.stride(1))
            return c

        c = matmul(a, w.T)       # c.grad_fn: the launcher's backward
        c.sum().backward()       # a.grad, w.grad

    Every kernel launch inside the call is recorded (any grid, callables of
    ``META`` included; ``@triton.autotune`` / ``@triton.heuristics`` kernels;
    launches made while grad mode is disabled are not recorded, as for torch
    ops). What each kernel stores is an output, what it loads from a tensor
    that requires grad is an input; buffers one launch stores and a later one
    loads (intermediates) get gradient buffers too. Kernels may receive views
    (``b.T``, slices, ``.view``): gradient buffers mirror storage, so each
    kernel argument gets the gradient view with its own offset and strides, and
    the gradient reaches the tensor the view was taken from. The returned
    tensors (and tensor arguments the kernels wrote into) carry the
    ``grad_fn``; anything else is returned as it is. The backward launches
    ``tritonad.grad(kernel)`` of every launch in reverse order, with the same
    grids and arguments, accumulating into shared gradient buffers.

    Refused with an error naming the kernels and the parameter, because the
    gradient would be wrong: a launch that stores into memory an earlier launch
    loaded (the values its backward needs are gone) or stored (two writers), a
    kernel that loads and stores one buffer, a store into memory of a tensor
    that requires grad, a tensor the launcher computes with torch from a
    kernel's output and passes on to a kernel or returns (tritonad does not see
    torch ops inside a launcher; do them outside). Second derivatives
    (``create_graph=True``, ``gradgradcheck``) raise when taken. Options:
    ``mode=`` and ``tune=`` as in ``tritonad.grad``. With grad mode disabled the
    launcher runs as it is. Under ``TRITON_INTERPRET=1`` the same holds.

    Under ``torch.compile`` (``fullgraph=True`` and ``dynamic=True`` included)
    the launcher is one custom operator for Dynamo and Inductor (see
    ``docs/launchers.md``).

    **A kernel**: ``f = tritonad.autograd(kernel, outputs=("out_ptr",))`` is
    launched like the kernel, ``y = f[grid](x, out, n, BLOCK=256)``, and
    returns the tensors passed for ``outputs`` with a ``grad_fn``; keyword
    options are those of ``tritonad.grad`` (``pointers=``, ``mode=``, ``tune=``,
    ``wrt=``). See ``tritonad._torch.autograd`` for its rules.

    Why one name: both forms answer the question a torch user asks, "make this
    Triton code take part in ``torch.autograd``"; the argument says which form
    (a ``@triton.jit`` / autotuned kernel, or a plain Python function).
    """
    if fn is None:
        if outputs is not None:
            raise TypeError("tritonad.autograd(outputs=...) needs the kernel: "
                            "tritonad.autograd(kernel, outputs=(...))")
        return lambda function: autograd(function, **options)
    if _is_kernel(fn):
        if outputs is None:
            raise TypeError(
                f"tritonad.autograd({name_of(fn)}) is a kernel: name the parameters it stores "
                f"to, e.g. tritonad.autograd({name_of(fn)}, outputs=('out_ptr',)); or decorate "
                "the Python function that launches it, whose outputs are inferred")
        from tritonad._torch import autograd as kernel_autograd
        return kernel_autograd(fn, outputs, **options)
    if outputs is not None:
        raise TypeError(f"outputs= is for a kernel; {name_of(fn)} is a launcher, whose outputs "
                        "are what its kernels store: leave outputs= out")
    if not callable(fn):
        raise TypeError(f"tritonad.autograd expects a @triton.jit kernel or a Python function "
                        f"that launches kernels, got {type(fn).__name__}")
    unknown = sorted(set(options) - set(_LAUNCHER_OPTIONS))
    if unknown:
        raise TypeError(f"{unknown}: not options of tritonad.autograd of a launcher (it takes "
                        f"{list(_LAUNCHER_OPTIONS)}); wrt= and pointers= are per kernel: "
                        "use tritonad.autograd(kernel, outputs=..., ...) for that kernel")
    return _as_function(DifferentiableLauncher(fn, **options))


def _as_function(launcher: "DifferentiableLauncher"):
    """The launcher as a plain function: it binds as a method, and torch.compile
    handles it wherever it handles functions (an attribute of a module, a
    closure); under Dynamo it reaches the launcher only by name."""
    name = launcher.tritonad_name
    _owners.register_owner(name, launcher)

    @functools.wraps(launcher.fn)
    def differentiable(*args, **kwargs):
        import torch

        if torch.compiler.is_dynamo_compiling():
            return _owners.compiled().call_launcher(name, args, kwargs)
        return launcher(*args, **kwargs)

    differentiable.tritonad_launcher = launcher
    differentiable.mode = launcher.mode
    return differentiable


def _is_kernel(obj) -> bool:
    try:
        from triton.runtime.jit import KernelInterface
    except ImportError:  # pragma: no cover
        return False
    return isinstance(obj, KernelInterface)


class DifferentiableLauncher:
    """What ``tritonad.autograd(launcher)`` returns: call it as the launcher."""

    def __init__(self, fn, mode: str = "auto", tune=False):
        if not isinstance(mode, str) or mode not in ("auto", "atomic", "deterministic"):
            raise ValueError(f"mode must be 'auto', 'atomic' or 'deterministic', got {mode!r}")
        from tritonad._tuning import validate
        validate(tune)
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.mode = mode
        self.tune = tune
        self.tritonad_name = _owners.unique_name(fn)
        # (analyses of earlier calls by their structure: _Plan.of)
        self.analyses: Dict[tuple, "_Analysis"] = {}
        # (plans of calls replayed by their arguments: _launcher_plan)
        self.plans: Dict[tuple, "_launcher_plan.LauncherPlan"] = {}
        try:
            self._signature = inspect.signature(fn)
        except (TypeError, ValueError):
            self._signature = None

    def __repr__(self):
        return f"tritonad.autograd({self.tritonad_name})"

    def __call__(self, *args, **kwargs):
        import torch

        if not torch.is_grad_enabled():
            return self.fn(*args, **kwargs)
        return run_differentiable(self, args, kwargs)

    def argument_names(self, args, kwargs) -> Dict[int, str]:
        """id(tensor) -> the launcher argument it was passed as (for messages)."""
        import torch
        from torch.utils._pytree import tree_flatten_with_path, keystr

        names = {}
        try:
            bound = self._signature.bind(*args, **kwargs).arguments if self._signature \
                else {f"args[{i}]": a for i, a in enumerate(args)}
        except TypeError:
            return names
        for name, value in bound.items():
            for path, leaf in tree_flatten_with_path(value)[0]:
                if isinstance(leaf, torch.Tensor):
                    names.setdefault(id(leaf), name + keystr(path))
        return names


# ---------------------------------------------------------------------------
# Recording kernel launches
# ---------------------------------------------------------------------------

_RECORDER = _launch_plan.LAUNCHER_RECORDER
_PATCH_LOCK = threading.Lock()
_PATCH_USERS = 0
_PATCHED: Dict[type, Any] = {}
_INTERCEPTORS: Dict[Any, Any] = {}  # a class's own run -> its wrapper (made once)


@functools.lru_cache(maxsize=None)
def _kernel_classes():
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    from tritonad._twin import _interpreted_class
    # (under TRITON_INTERPRET=1, @triton.jit makes InterpretedFunctions)
    interpreted = _interpreted_class()
    return (JITFunction, Autotuner, Heuristics) + ((interpreted,) if interpreted else ())


def _make_interceptor(original):
    def run(self, *args, **kwargs):
        recorder = _RECORDER.get()
        if recorder is None or recorder.inside:
            return original(self, *args, **kwargs)
        return recorder.launch(self, original, args, kwargs)

    run._tritonad_original = original
    run.__name__ = getattr(original, "__name__", "run")
    run.__doc__ = getattr(original, "__doc__", None)
    return run


@contextlib.contextmanager
def _intercepting():
    """Wraps the kernel classes' ``run`` while at least one recording is active
    (in any thread); the wrapper only records for the context whose recorder is
    set, so a launch elsewhere passes straight through."""
    _start_intercepting()
    try:
        yield
    finally:
        _stop_intercepting()


def _start_intercepting() -> None:
    global _PATCH_USERS
    with _PATCH_LOCK:
        if _PATCH_USERS == 0:
            for cls in _kernel_classes():
                original = cls.__dict__["run"]
                _PATCHED[cls] = original
                wrapper = _INTERCEPTORS.get(original)
                if wrapper is None:
                    wrapper = _INTERCEPTORS[original] = _make_interceptor(original)
                cls.run = wrapper
        _PATCH_USERS += 1


def _stop_intercepting() -> None:
    global _PATCH_USERS
    with _PATCH_LOCK:
        _PATCH_USERS -= 1
        if _PATCH_USERS == 0:
            for cls, original in _PATCHED.items():
                # (if someone patched over ours since, theirs stays; ours passes through)
                if getattr(cls.__dict__.get("run"), "_tritonad_original", None) is original:
                    cls.run = original
            _PATCHED.clear()


def intercepting_now() -> bool:
    """Whether the kernel classes are currently wrapped (for tests)."""
    return any(hasattr(cls.__dict__.get("run"), "_tritonad_original")
               for cls in _kernel_classes())


class Launch:
    """One recorded kernel launch: the kernel as launched (autotune/heuristics
    wrappers included), its grid, its arguments by parameter name, and launch
    options (num_warps, ...)."""

    def __init__(self, kernel, grid, args, kwargs, index):
        fn, _ = unwrap(kernel)
        names = param_names(fn)
        if len(args) > len(names):
            raise TypeError(f"{fn.__name__} takes {len(names)} arguments {names}, "
                            f"{len(args)} were given")
        bound = dict(zip(names, args))
        options = {}
        for key, value in kwargs.items():
            if key in names:
                if key in bound:
                    raise TypeError(f"{fn.__name__}: argument {key!r} given twice")
                bound[key] = value
            else:
                options[key] = value
        self.kernel, self.fn, self.grid = kernel, fn, grid
        self.bound, self.options, self.index = bound, options, index
        self.name = fn.__name__
        self.compiled = None  # (what Triton's run returned: the compiled kernel)

    @classmethod
    def replayed(cls, record, grid, index) -> "Launch":
        """A launch of a replayed call (_launcher_plan.Replay): its plan's record,
        this call's grid."""
        launch = cls.__new__(cls)
        launch.kernel, launch.fn, launch.grid, launch.name = (record.kernel, record.fn, grid,
                                                              record.name)
        launch.bound, launch.options, launch.index = None, record.options, index
        launch.compiled = None
        return launch

    def describe(self) -> str:
        return f"{self.name} (launch {self.index + 1})"


class Recorder(_launcher_plan.RunsLaunches):
    """Collects the launches made in one context. ``fake``: tensors are fake
    (torch.compile's tracing): launches are recorded, never executed, whatever
    the grad mode."""

    def __init__(self, fake: bool = False, watch=None):
        self.launches: List[Launch] = []
        self.inside = False
        self.fake = fake
        self.watch = watch

    def launch(self, kernel, original, args, kwargs):
        import torch

        if kwargs.get("warmup", False) or not (self.fake or torch.is_grad_enabled()):
            return self._run(kernel, original, args, kwargs)
        call_kwargs = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
        record = Launch(kernel, kwargs.get("grid"), args, call_kwargs, len(self.launches))
        self.launches.append(record)
        if self.watch is not None:
            self.watch.stored(record)
        if self.fake:
            return None
        with tuned_for_backward(kernel, self._backward(record)):
            record.compiled = self._run(kernel, original, args, kwargs)
        return record.compiled

    def _backward(self, record):
        """The backward of a launch of an autotuned kernel that has a config to
        choose and a tensor that requires grad (its autotuners then tune for
        it), else None."""
        import torch

        # (the watch carries the launcher's mode)
        if self.watch is None or not has_choices(record.kernel) or not any(
                isinstance(v, torch.Tensor) and v.requires_grad for v in record.bound.values()):
            return None
        try:
            return backward_kernel(record.kernel, self.watch.mode)
        except Exception:  # (its backward, where one is needed, says why itself)
            return None


@contextlib.contextmanager
def recording(fake: bool = False, watch=None):
    """Records the kernel launches made inside the block (this context only)."""
    recorder = Recorder(fake, watch)
    with _intercepting():
        token = _RECORDER.set(recorder)
        try:
            yield recorder
        finally:
            _RECORDER.reset(token)


# ---------------------------------------------------------------------------
# Backward kernels and pointer roles, per kernel
# ---------------------------------------------------------------------------

_BACKWARD: Dict[tuple, tuple] = {}
_BACKWARD_LOCK = threading.Lock()


def backward_kernel(kernel, mode: str, tune=False, accumulate=True):
    """``tritonad.grad(kernel, mode=mode, tune=tune, accumulate=accumulate)``, made once
    per kernel and options. Accumulate mode is the general case (several launches may
    add into one gradient buffer); accumulate=False serves a launch whose input
    gradients are buffers of its own (fresh: it stores where it proves one writer)."""
    from tritonad._kernel_grad import kernel_grad

    key = (id(kernel), mode, repr(tune), accumulate)
    with _BACKWARD_LOCK:
        entry = _BACKWARD.get(key)
        if entry is None or entry[0] is not kernel:
            entry = (kernel, kernel_grad(kernel, mode=mode, tune=tune, accumulate=accumulate))
            _BACKWARD[key] = entry
    return entry[1]


_MENTIONED: Dict[int, tuple] = {}


def _mentioned(fn) -> set:
    entry = _MENTIONED.get(id(fn))
    if entry is None or entry[0] is not fn:
        entry = (fn, {n.id for n in ast.walk(function_def(fn)) if isinstance(n, ast.Name)})
        _MENTIONED[id(fn)] = entry
    return entry[1]


# ---------------------------------------------------------------------------
# Memory: storages and views
# ---------------------------------------------------------------------------

# ---------------------------------------------------------------------------
# Watching torch ops inside the launcher
# ---------------------------------------------------------------------------

_NOT_MUTATING = {"requires_grad_", "share_memory_", "record_stream", "retain_grad"}


def _tensors_in(values):
    import torch

    for value in values:
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, torch.Tensor):
                    yield item


_WATCH_CLASS = None


def _watch_class():
    """A TorchFunctionMode that follows what torch does with kernel outputs
    inside the launcher (made once, on first use)."""
    global _WATCH_CLASS
    if _WATCH_CLASS is not None:
        return _WATCH_CLASS
    import torch
    from torch.overrides import TorchFunctionMode

    class Watch(TorchFunctionMode):
        """A result computed from kernel outputs (not a view: new memory) is
        marked, so that a kernel loading it or the launcher returning it is
        refused; a write into them in place is noted (refused if a gradient is
        needed). Views share storage and need nothing."""

        def __init__(self, mode, label):
            super().__init__()
            self.mode, self.label = mode, label
            self.written = {}     # storage -> (launch description, parameter)
            self.derived = {}     # storage -> description of the torch op that made it
            self.violations = []  # in-place writes into kernel outputs
            self.recorder = None

        def stored(self, launch):
            try:
                roles = backward_kernel(launch.kernel, self.mode).pointer_roles
            except Exception:  # noqa: BLE001  (raised again if a gradient is needed)
                roles = {}
            for param, value in launch.bound.items():
                if isinstance(value, torch.Tensor) and "store" in roles.get(param, ()) and \
                        value.numel():
                    self.written.setdefault(storage_id(value), (launch.describe(), param))

        def call(self, func, args, kwargs):
            """Runs a torch op of the launcher; one that torch refuses because the
            launcher runs with grad mode on (an out= argument while an input
            requires grad) is refused naming it and the launcher's line."""
            try:
                return func(*args, **kwargs)
            except RuntimeError as error:
                if "out=" not in str(error) or "automatic differentiation" not in str(error):
                    raise
                name = getattr(func, "__name__", repr(func))
                raise ValueError(
                    f"{self.label}: torch {name}(..., out=...) at {_caller_line()} writes into "
                    f"a tensor while one of its arguments requires grad, which torch refuses "
                    f"with grad mode on (a launcher runs with it on, so that torch ops before "
                    f"its kernels are differentiated by torch): do it inside a kernel or "
                    f"outside the launcher, or under torch.no_grad() where no gradient "
                    f"flows through it") from error

        def __torch_function__(self, func, types_, args=(), kwargs=None):
            kwargs = kwargs or {}
            recorder = self.recorder
            if (recorder is not None and recorder.inside) or not (self.written or self.derived):
                return self.call(func, args, kwargs)
            inputs = list(_tensors_in(list(args) + list(kwargs.values())))
            sources = [(storage_id(t), t) for t in inputs if t.numel()]
            touched = [s for s, _ in sources if s in self.written or s in self.derived]
            if not touched:
                return self.call(func, args, kwargs)
            name = getattr(func, "__name__", repr(func))
            mutated = kwargs.get("out")
            if mutated is None and args and isinstance(args[0], torch.Tensor) and \
                    name not in _NOT_MUTATING and (
                        name == "__setitem__" or (name.startswith("__i") and name.endswith("__"))
                        or (name.endswith("_") and not name.endswith("__"))):
                mutated = args[0]
            for target in _tensors_in([mutated]):
                where = self.written.get(storage_id(target)) if target.numel() else None
                if where is not None:
                    self.violations.append(
                        f"torch {name} writes in place into memory that kernel {where[0]} "
                        f"stored through {where[1]!r}")
            result = self.call(func, args, kwargs)
            if name.endswith("_like") or name.startswith("new_"):
                return result  # (only the input's metadata is used)
            what = self.written.get(touched[0])
            what = (f"torch {name} of what kernel {what[0]} stored through {what[1]!r}"
                    if what is not None else self.derived[touched[0]])
            source_storages = {s for s, _ in sources}
            for out in _tensors_in(result if isinstance(result, (list, tuple)) else [result]):
                if out.numel() and out.is_floating_point():
                    sid = storage_id(out)
                    if sid not in source_storages:
                        self.derived.setdefault(sid, what)
            return result

    _WATCH_CLASS = Watch
    return Watch


# ---------------------------------------------------------------------------
# The differentiable call
# ---------------------------------------------------------------------------

def _caller_line() -> str:
    """The innermost line of the stack outside torch, triton and tritonad (the
    user's launcher), as file:line."""
    import traceback

    for frame in reversed(traceback.extract_stack()):
        path = frame.filename.replace("\\", "/")
        if not any(part in path for part in ("/torch/", "/triton/", "/tritonad/")):
            return f"{frame.filename}:{frame.lineno}"
    return "an unknown line"


def run_differentiable(launcher, args, kwargs):
    """Runs the launcher, recording its launches, and joins its outputs to
    torch's autograd graph through one node. A call whose arguments have the key
    of a plan (_launcher_plan) replays it, and runs again here if it leaves it."""
    arguments = _launcher_plan.leaves((args, kwargs))
    walker = _launcher_plan.Walker()
    key = _launcher_plan.arguments_key(walker, arguments)
    plan = launcher.plans.get(key) if key is not None else None
    strikes = 0
    if plan is not None:
        try:
            return _replayed(launcher, plan, walker, args, kwargs)
        except _launcher_plan.Diverged:
            plan.strikes += 1
            strikes = plan.strikes
            if strikes >= _launcher_plan.STRIKES:  # (decided each time from now on)
                launcher.plans[key] = None
            walker = _launcher_plan.Walker()
            key = _launcher_plan.arguments_key(walker, arguments)
    return _analysed(launcher, walker, key, arguments, args, kwargs, strikes)


def _analysed(launcher, walker, key, arguments, args, kwargs, strikes=0):
    """The full path: the launcher runs watched, its launches are recorded and the
    call analysed (or its analysis taken from a call of the same structure)."""
    import torch

    label = repr(launcher)
    watch = _watch_class()(launcher.mode, label)
    with recording(watch=watch) as recorder:
        watch.recorder = recorder
        with watch:
            result = launcher.fn(*args, **kwargs)
    # No kernel received a tensor that requires grad: nothing to differentiate
    # (and nothing to analyse: a kernel tritonad cannot differentiate still runs).
    if not any(isinstance(v, torch.Tensor) and v.requires_grad
               for launch in recorder.launches for v in launch.bound.values()):
        return result
    if watch.violations:
        raise ValueError(f"{label}: {watch.violations[0]}: tritonad differentiates the "
                         "kernels of a launcher, not torch ops between them. Do this outside "
                         "the launcher, or inside a kernel")
    walk = _Walk(walker, arguments, recorder.launches, (args, kwargs), result)
    plan = _Plan.of(launcher, recorder.launches, walk, result, watch)
    if key is not None and plan.analysis is not None and \
            launcher.plans.get(key, True) is not None:
        made = _launcher_plan.make_plan(
            recorder.launches, walk, plan.analysis,
            lambda launch: backward_kernel(launch.kernel, launcher.mode).pointer_roles)
        if made is not None:
            made.strikes = strikes
            _caches.keep_newest(launcher.plans, key, made, _launcher_plan.PLAN_LIMIT)
            plan.replay = made
    _forget_arguments(recorder.launches)
    if plan.inputs and plan.outputs:
        _LauncherFunction.apply(plan, *plan.inputs)
    plan.release()
    return result  # (the output tensors themselves now carry the grad_fn)


def _replayed(launcher, launcher_plan, walker, args, kwargs):
    """A call replayed from `launcher_plan` (raises _launcher_plan.Diverged where it
    leaves the plan)."""
    replay = _launcher_plan.Replay(launcher_plan, walker, Launch.replayed)
    _start_intercepting()
    token = _RECORDER.set(replay)
    try:
        result = launcher.fn(*args, **kwargs)
    except RuntimeError as error:
        # (one the watch would have named: a torch op with out= on the full path)
        if "out=" in str(error):
            raise _launcher_plan.Diverged from error
        raise
    finally:
        _RECORDER.reset(token)
        _stop_intercepting()
    replay.finish(result)
    plan = _Plan._bound(launcher, replay.launches, walker.tensors, walker.storages,
                        replay.launch_args, launcher_plan.analysis)
    plan.replay = launcher_plan
    if plan.inputs and plan.outputs:
        _LauncherFunction.apply(plan, *plan.inputs)
    plan.release()
    return result


_ANALYSES_LIMIT = 64  # per launcher


def _forget_arguments(launches) -> None:
    """Drops the recorded launches' arguments: the node saves the tensors (no
    reference cycle through the launches)."""
    for launch in launches:
        launch.bound = None
        launch.compiled = None


class _Analysis:
    """A call's analysis by canonical indices (_Walk): which tensors are inputs and
    outputs, each gradient buffer's span by storage, the storages stored into."""

    __slots__ = ("input_refs", "output_refs", "spans", "stored")

    def __init__(self, input_refs, output_refs, spans, stored):
        self.input_refs, self.output_refs = input_refs, output_refs
        self.spans, self.stored = spans, stored


class _Walk:
    """The tensors of a launcher call in a fixed order (arguments, each launch's
    arguments, the result; a view's base where it requires grad, before the
    view), each once, with the storages they address (_launcher_plan.Walker);
    and the key of everything the call's analysis depends on (None where an
    argument is not hashable): per tensor its storage (by order of first use),
    offset, shape, strides, dtype, device, requires_grad, base and alignment; per
    launch the kernel and each argument (a tensor by its index, anything else by
    value). `walker` has visited the arguments (`arguments`: their leaves)."""

    __slots__ = ("index", "tensors", "storages", "described", "arguments", "arg_tensors",
                 "argument_refs", "result_tensors", "result_refs", "launch_args", "key")

    def __init__(self, walker, arguments, launches, call, result):
        import torch

        tensor = torch.Tensor
        visit = walker.visit
        self.index, self.tensors, self.storages = walker.index, walker.tensors, walker.storages
        self.described = walker.described
        self.arguments = call
        self.arg_tensors = [t for t in arguments if isinstance(t, tensor)]
        self.argument_refs = tuple(visit(t) for t in self.arg_tensors)
        parts: List[object] = [self.argument_refs]
        self.launch_args = []
        for launch in launches:
            launch_arguments = {n: ("tensor", visit(v)) if isinstance(v, tensor)
                                else ("value", v) for n, v in launch.bound.items()}
            self.launch_args.append(launch_arguments)
            parts.append(_launcher_plan.launch_part(launch.kernel, launch_arguments))
        self.result_tensors = _launcher_plan.tensor_leaves(result)
        self.result_refs = tuple(visit(t) for t in self.result_tensors)
        parts.append(self.result_refs)
        parts.append(tuple(walker.described))
        key = tuple(parts)
        try:
            hash(key)
        except TypeError:
            key = None
        self.key = key


class _Access:
    __slots__ = ("launch", "param", "tensor", "loads", "stores", "storage")

    def __init__(self, launch, param, tensor, roles):
        self.launch, self.param, self.tensor = launch, param, tensor
        self.loads, self.stores = "load" in roles, "store" in roles
        self.storage = storage_id(tensor)

    def describe(self):
        return f"{self.launch.describe()} through {self.param!r}"


class _Plan:
    """The analysis of one launcher call: accesses by storage, inputs (tensors
    that require grad, as autograd knows them), outputs, and what the backward
    needs. Tensors are referenced by index into ``tensors`` so that the node
    saves them with ``save_for_backward``."""

    @classmethod
    def of(cls, launcher, launches, walk, result, watch) -> "_Plan":
        """The plan of a call: its analysis is taken from an earlier call whose
        recorded launches, arguments and result have the same structure (the
        same kernels; tensors with the same layouts, dtypes, requires_grad and
        sharing of tensors and storages; the same other arguments), else made.
        ``analysis``: the analysis by canonical indices (None: not kept, the
        launcher computed tensors with torch)."""
        analyses = launcher.analyses
        kept = walk.key is not None and not watch.derived
        known = analyses.get(walk.key) if kept else None
        if known is not None:
            return cls._bound(launcher, launches, walk.tensors, walk.storages,
                              walk.launch_args, known)
        plan = cls(launcher, launches, walk, result, watch)
        if kept:
            plan.analysis = plan._analysis(walk)
            _caches.keep_newest(analyses, walk.key, plan.analysis, _ANALYSES_LIMIT)
        return plan

    @classmethod
    def _bound(cls, launcher, launches, tensors, storages, launch_args, known) -> "_Plan":
        """A plan with an earlier call's analysis (by canonical indices) bound to
        this call's tensors and storages."""
        plan = cls.__new__(cls)
        plan._describe(launcher, launches, None)
        plan.input_refs, plan.output_refs = known.input_refs, known.output_refs
        plan.inputs = [tensors[i] for i in known.input_refs]
        plan.outputs = [tensors[i] for i in known.output_refs]
        plan.spans = plan.stored = None  # (by storage: made where a backward is decided)
        plan.tensors, plan.storages = tensors, storages
        plan.launch_args = launch_args
        plan.analysis = known
        return plan

    def _analysis(self, walk) -> "_Analysis":
        by_storage = {sid: s for s, sid in enumerate(walk.storages)}
        return _Analysis(tuple(self.input_refs), tuple(self.output_refs),
                         {by_storage[sid]: span for sid, span in self.spans.items()},
                         frozenset(by_storage[sid] for sid in self.stored))

    def _describe(self, launcher, launches, arguments):
        self.launcher, self.launches, self.mode = launcher, launches, launcher.mode
        self.label = repr(launcher)
        self.analysis = None
        self.replay = None  # (the _launcher_plan.LauncherPlan whose backwards it keeps)
        # (for messages only: named when one is written)
        self._arguments, self._arg_names = arguments, None

    def __init__(self, launcher, launches, walk, result, watch):
        import torch

        self._describe(launcher, launches, walk.arguments)
        arg_tensors = walk.arg_tensors
        accesses = self._accesses(torch, watch, arg_tensors)

        # Inputs: the tensors autograd tracks whose memory the kernels read. A view
        # stands for its base (a gradient for b.T is a gradient for b's memory).
        candidates = [a.tensor for a in accesses if a.tensor.requires_grad] + \
            [t for t in arg_tensors if t.requires_grad and t.numel()]
        inputs, input_ids = [], set()
        for t in candidates:
            base = t._base if t._base is not None and t._base.requires_grad else t
            if id(base) not in input_ids:
                input_ids.add(id(base))
                inputs.append(base)
        loaded = {a.storage for a in accesses if a.loads}
        inputs = [t for t in inputs if storage_id(t) in loaded]
        by_storage: Dict[int, list] = {}
        for t in inputs:
            by_storage.setdefault(storage_id(t), []).append(t)
        for group in by_storage.values():
            for i, first in enumerate(group):
                for second in group[i + 1:]:
                    if views_overlap(first, second):
                        raise ValueError(
                            f"{self.label}: {self._tensor_name(first)} and "
                            f"{self._tensor_name(second)} require grad and share memory: "
                            "each would receive the gradient of the shared elements. Pass "
                            "one tensor and its views, or .clone() one of them")

        stored = {a.storage for a in accesses if a.stores}
        self._check_stores(accesses, by_storage)
        self._check_hazards(accesses)
        self._check_derived(accesses, watch, result)

        # Outputs: tensor arguments the kernels wrote into, returned tensors in
        # memory the kernels wrote (views included), each once.
        outputs, output_ids = [], set()
        for t in arg_tensors + walk.result_tensors:
            if t.numel() and id(t) not in output_ids and storage_id(t) in stored:
                if t.requires_grad:  # (a returned tensor that autograd already tracks)
                    continue
                output_ids.add(id(t))
                outputs.append(t)
        self.inputs, self.outputs = inputs, outputs

        # Gradient buffers: one per floating-point storage that is written or read
        # by inputs, spanning every view of it the kernels or autograd use.
        shadowed = stored | set(by_storage)
        views_by_storage: Dict[int, list] = {}
        for t in [a.tensor for a in accesses] + outputs + inputs:
            sid = storage_id(t)
            if sid in shadowed and t.is_floating_point():
                views_by_storage.setdefault(sid, []).append(t)
        self.spans = {}
        for sid, views in views_by_storage.items():
            dtypes = {v.dtype for v in views}
            if len(dtypes) > 1:
                raise ValueError(f"{self.label}: one buffer is used with several dtypes "
                                 f"{sorted(str(d) for d in dtypes)} (a .view(dtype)) where it "
                                 "needs a gradient; keep one dtype per buffer")
            for v in views:
                if overlaps(v) and v.numel():
                    owner = next((a for a in accesses if a.tensor is v), None)
                    where = owner.describe() if owner else self._tensor_name(v)
                    raise ValueError(
                        f"{self.label}: {where}: its elements share memory (strides "
                        f"{tuple(v.stride())}, e.g. from expand) where a gradient is needed; "
                        "pass .contiguous() (the gradient then flows back through it)")
            first = min(_extent(v)[0] for v in views)
            end = max(_extent(v)[1] for v in views)
            self.spans[sid] = (first, end - first, views[0].dtype, views[0].device)

        # (tensors by their index in the walk: every tensor the call touched)
        self.launch_args = walk.launch_args
        self.input_refs = [walk.index[id(t)] for t in inputs]
        self.output_refs = [walk.index[id(t)] for t in outputs]
        self.stored = stored
        self.tensors, self.storages = walk.tensors, walk.storages

    def release(self):
        """After the node took what it needs: no references to tensors remain."""
        self.inputs = self.outputs = self.tensors = self._arguments = None

    # -- analysis ---------------------------------------------------------

    def _tensor_name(self, t) -> str:
        if self._arg_names is None:
            self._arg_names = self.launcher.argument_names(*self._arguments)
        name = self._arg_names.get(id(t))
        return f"argument {name!r}" if name else f"a tensor of shape {tuple(t.shape)}"

    def _accesses(self, torch, watch, arg_tensors):
        accesses = []
        for launch in self.launches:
            bwd = backward_kernel(launch.kernel, self.mode)
            roles = bwd.pointer_roles
            for param, value in launch.bound.items():
                if not isinstance(value, torch.Tensor) or value.numel() == 0:
                    continue
                if param in roles:
                    if not roles[param]:
                        raise ValueError(
                            f"{self.label}: tritonad cannot tell whether {launch.describe()} "
                            f"loads or stores through {param!r}; wrap that kernel with "
                            "tritonad.autograd(kernel, outputs=..., pointers=...) instead")
                    accesses.append(_Access(launch, param, value, roles[param]))
                elif value.is_floating_point() and param in _mentioned(launch.fn) and (
                        value.requires_grad or storage_id(value) in watch.written):
                    raise ValueError(
                        f"{self.label}: {launch.describe()} receives {param!r}, a tensor that "
                        "needs a gradient, but tritonad does not see the kernel load or store "
                        f"through it; wrap {launch.name} with tritonad.autograd(kernel, "
                        "outputs=..., pointers=(...)) naming its pointers")
        return accesses

    def _check_stores(self, accesses, inputs_by_storage):
        for a in accesses:
            if not a.stores:
                continue
            owners = inputs_by_storage.get(a.storage)
            if owners or a.tensor.requires_grad:
                owner = owners[0] if owners else a.tensor
                if a.loads and a.tensor.is_floating_point():
                    raise ValueError(
                        f"{self.label}: {a.launch.describe()} loads and stores through "
                        f"{a.param!r} (in place) into {self._tensor_name(owner)}, which "
                        "requires grad: the backward needs the values it overwrites, and "
                        "autograd does not see the change. Store the result into a separate "
                        "output (torch.empty_like inside the launcher) and return it")
                raise ValueError(
                    f"{self.label}: {a.describe()} stores into memory of "
                    f"{self._tensor_name(owner)}, which requires grad (in place, unknown to "
                    "autograd): allocate the output inside the launcher (torch.empty), or "
                    "pass a tensor that does not require grad")

    def _check_hazards(self, accesses):
        by_storage: Dict[int, list] = {}
        for a in accesses:
            # (integer buffers carry no gradient: counters, locks, indices are free)
            if a.tensor.is_floating_point():
                by_storage.setdefault(a.storage, []).append(a)
        for group in by_storage.values():
            stores = [a for a in group if a.stores]
            # In place within one launch first: the more direct explanation.
            for later in stores:
                if later.loads:
                    raise ValueError(
                        f"{self.label}: {later.launch.describe()} loads and stores through "
                        f"{later.param!r} (in place): the values its backward needs are "
                        "overwritten. Store into a new buffer")
                for other in group:
                    if other.launch is later.launch and other.loads and \
                            views_overlap(other.tensor, later.tensor):
                        raise ValueError(
                            f"{self.label}: {later.launch.describe()} loads through "
                            f"{other.param!r} and stores through {later.param!r}, which share "
                            "memory (in place): the values its backward needs are overwritten. "
                            "Store into a new buffer")
            # Then across launches, naming the nearest earlier access.
            for later in stores:
                for earlier in reversed(group):
                    if earlier.launch.index >= later.launch.index or \
                            not views_overlap(earlier.tensor, later.tensor):
                        continue
                    if earlier.loads:
                        raise ValueError(
                            f"{self.label}: {later.describe()} overwrites memory that "
                            f"{earlier.describe()} read: the backward of "
                            f"{earlier.launch.name} needs those values. Store into a new "
                            "buffer")
                    raise ValueError(
                        f"{self.label}: {later.describe()} overwrites memory that "
                        f"{earlier.describe()} stored: only the last write survives, so the "
                        "gradient of the first would be wrong. Store into separate buffers")

    def _check_derived(self, accesses, watch, result):
        import torch
        from torch.utils._pytree import tree_leaves

        if not watch.derived:
            return
        for a in accesses:
            what = watch.derived.get(a.storage)
            if what is not None and a.loads:
                raise ValueError(
                    f"{self.label}: {a.describe()} loads {what}, computed inside the launcher: "
                    "tritonad differentiates the kernels of a launcher, not torch ops between "
                    "them, so the gradient would not flow through it. Do the torch op outside "
                    "the launcher, or inside a kernel")
        for t in tree_leaves(result):
            if isinstance(t, torch.Tensor) and t.numel() and not t.requires_grad:
                what = watch.derived.get(storage_id(t))
                if what is not None:
                    raise ValueError(
                        f"{self.label} returns {what}, computed inside the launcher: tritonad "
                        "differentiates the kernels of a launcher, not torch ops on their "
                        "outputs, so its gradient would be lost. Return the kernel's output "
                        "and apply the torch op outside the launcher")

    # -- backward -----------------------------------------------------------

    def backward(self, tensors, grads, needs):
        """The gradients of the inputs: decided (_decide_backward), or replayed as an
        earlier call with this plan and these upstream layouts decided them."""
        replay = self.replay
        if replay is None:
            return self._run_backward(self._decide_backward(tensors, grads, needs), tensors,
                                      grads, None)
        key = _call_plan.upstream_key(needs, grads)
        step = replay.backwards.get(key)
        if step is not None:
            return self._run_backward(step, tensors, grads, None)
        step = self._decide_backward(tensors, grads, needs)
        collected: list = []
        results = self._run_backward(step, tensors, grads, collected)
        _caches.keep_newest(replay.backwards, key,
                            self._replayable(step, tensors, grads, collected),
                            _launcher_plan.BACKWARD_LIMIT)
        return results

    def _decide_backward(self, tensors, grads, needs) -> "_BackwardStep":
        """Gradient buffers for what the kernels wrote and for the inputs wanted (none
        for inputs not wanted, constants, integer buffers), each a buffer per storage
        that the kernels' arguments address as views (by canonical indices: a step
        serves every call of the plan); the derived backwards to launch, last launch
        first, with their shadows' views."""
        import torch

        if self.stored is None:
            storages, known = self.storages, self.analysis
            self.spans = {storages[s]: span for s, span in known.spans.items()}
            self.stored = {storages[s] for s in known.stored}
        wanted = [ref for ref, need in zip(self.input_refs, needs) if need]
        if not wanted:
            return _BackwardStep({}, (), (), (None,) * len(self.input_refs), {})
        active = set(self.stored) | {storage_id(tensors[ref]) for ref in wanted}
        index = {sid: s for s, sid in enumerate(self.storages)}
        buffers: Dict[int, list] = {}  # storage index -> [how made, size, dtype, device]

        def view_of(t):
            """t's view of its storage's gradient buffer: (storage index, shape,
            strides, offset in the buffer, whether it is the whole buffer)."""
            sid = storage_id(t)
            span = self.spans.get(sid)
            if span is None or sid not in active or not t.is_floating_point():
                return None
            first, size, _, _ = span
            whole = t.storage_offset() == first and t.numel() == size and t.is_contiguous()
            return (index[sid], tuple(t.shape), tuple(t.stride()), t.storage_offset() - first,
                    whole)

        def made(view, how="zeros") -> bool:
            s = view[0]
            if s in buffers:
                return False
            _, size, dtype, device = self.spans[self.storages[s]]
            # (f16/bf16 gradients are summed in fp32 across programs and launches,
            # rounded once when returned)
            if dtype in (torch.float16, torch.bfloat16):
                dtype = torch.float32
            buffers[s] = [how, size, dtype, device]
            return True

        # (the upstream gradient copied where it covers its buffer, not zeros and an add)
        upstream = []
        for position, (ref, grad) in enumerate(zip(self.output_refs, grads)):
            view = view_of(tensors[ref])
            if view is None:
                continue
            whole = view[4] and grad is not None
            if made(view, "empty" if whole else "zeros") and whole:
                upstream.append((position, view, "copy"))
            elif grad is not None:
                upstream.append((position, view, "add"))
        launches, uses = [], {}
        for i in reversed(range(len(self.launches))):
            launch, arguments = self.launches[i], self.launch_args[i]
            bwd = backward_kernel(launch.kernel, self.mode, self.launcher.tune)
            shadows, reaches_input = [], False
            for param, shadow in bwd.shadows.items():
                kind, value = arguments.get(param, ("value", None))
                view = view_of(tensors[value]) if kind == "tensor" and \
                    tensors[value].numel() else None
                shadows.append((shadow, param, view))
                reaches_input |= view is not None and "load" in bwd.pointer_roles.get(param, ())
            if not reaches_input:  # (no gradient of this launch is wanted)
                continue
            for shadow, param, view in shadows:
                if view is not None:
                    made(view)
                    uses.setdefault(view[0], []).append((len(launches), shadow, param, view))
            launches.append((i, tuple((shadow, view) for shadow, _, view in shadows),
                             renamed_parameters(param_names(launch.fn)), None, None))
        results = []
        for ref, need in zip(self.input_refs, needs):
            view = view_of(tensors[ref]) if need else None
            if view is not None:
                made(view)
            results.append(None if view is None else (view, tensors[ref].dtype))
        with_upstream = {view[0] for _, view, _ in upstream}
        launches = self._without_zero_buffers(launches, buffers, uses, with_upstream, results)
        launches = [(*launch[:5], self._fresh(launch, uses, with_upstream))
                    for launch in launches]
        # Uninitialized: a buffer one launch's shadow covers whole, neither stored
        # by the kernels nor holding an upstream gradient (its launch zero-fills it
        # unless it stores every element: _partial.uninitialized).
        for s, used in uses.items():
            entry, shadow, param, view = used[0]
            if len(used) == 1 and view[4] and s not in with_upstream and \
                    self.storages[s] not in self.stored and getattr(
                        self._backward_of(launches[entry]), "tritonad_launch_path", False):
                buffers[s][0] = "uninitialized"
        return _BackwardStep(buffers, tuple(upstream), tuple(launches), tuple(results), uses)

    def _backward_of(self, entry):
        """The derived backward a step's launch entry runs (accumulating, or its fresh
        variant: see _fresh)."""
        return backward_kernel(self.launches[entry[0]].kernel, self.mode, self.launcher.tune,
                               accumulate=not entry[5])

    def _roles(self, launch_index, param):
        bwd = backward_kernel(self.launches[launch_index].kernel, self.mode, self.launcher.tune)
        return bwd.pointer_roles.get(param) or ()

    def _only_stored(self, launch_index, param) -> bool:
        """Whether the launch's kernel stores through `param` and never loads it (an
        output: its shadow holds the upstream the backward reads)."""
        roles = self._roles(launch_index, param)
        return "store" in roles and "load" not in roles

    def _without_zero_buffers(self, launches, buffers, uses, with_upstream, results):
        """The launches with None for the shadows of storages that only hold zeros:
        outputs the launcher does not return (or whose upstream gradient is None)
        that no launch reads, so no backward adds a gradient into them (as
        ``tritonad.autograd`` of a kernel passes an unwanted output's shadow: the
        backward is specialized for it, with no buffer to allocate and fill)."""
        input_gradients = {result[0][0] for result in results if result is not None}
        zero = {s for s, used in uses.items()
                if s not in with_upstream and s not in input_gradients and
                all(self._only_stored(launches[entry][0], param) for entry, _, param, _ in used)}
        if not zero:
            return launches
        for s in zero:
            del buffers[s], uses[s]
        return [(i, tuple((shadow, None if view is not None and view[0] in zero else view)
                          for shadow, view in shadows), renamed, plan, device)
                for i, shadows, renamed, plan, device in launches]

    def _fresh(self, launch, uses, with_upstream) -> bool:
        """Whether a launch's backward may take its input gradients as fresh buffers
        (accumulate=False: stores instead of read-add-writes where one writer is
        proved, so an uninitialized buffer it covers needs no zero fill): every
        buffer it reads a gradient into is its own (no other launch's shadow, no
        upstream gradient, not memory a kernel stored) and every other shadow is
        an output's (the upstream it reads)."""
        i, shadows = launch[0], launch[1]
        bwd = backward_kernel(self.launches[i].kernel, self.mode, self.launcher.tune)
        names = {shadow: param for param, shadow in bwd.shadows.items()}
        for shadow, view in shadows:
            if view is None:
                continue
            roles = self._roles(i, names[shadow])
            if "load" in roles:
                if "store" in roles or len(uses.get(view[0], ())) != 1 or \
                        view[0] in with_upstream or self.storages[view[0]] in self.stored:
                    return False
            elif "store" not in roles:
                return False
        return True

    def _run_backward(self, step, tensors, grads, collected):
        """Runs `step`: its buffers, upstream gradients, launches (through the launch
        plan each recorded, else ``bwd[grid]``; with `collected`, a list, each
        launch's plans are collected into it), and returns the inputs' gradients."""
        import torch

        buffers = {}
        for s, (how, size, dtype, device) in step.buffers.items():
            if how == "zeros":
                buffers[s] = torch.zeros(size, dtype=dtype, device=device)
            elif how in ("empty", "uninitialized"):
                buffers[s] = torch.empty(size, dtype=dtype, device=device)
            else:  # (the upstream gradient itself: no launch writes its buffer)
                buffers[s] = grads[how]
        views = {}

        def view_of(view):
            made = views.get(view)
            if made is None:
                s, shape, stride, offset, whole = view
                buffer = buffers[s]
                made = views[view] = (buffer if buffer.shape == shape else buffer.view(shape)) \
                    if whole else buffer.as_strided(shape, stride, offset)
            return made

        for position, view, how in step.upstream:
            view_of(view).copy_(grads[position]) if how == "copy" else \
                view_of(view).add_(grads[position])
        # (a replayed step's launch plans fill its uninitialized buffers themselves)
        garbage = [view_of(used[0][3]) for s, used in step.uses.items()
                   if step.buffers[s][0] == "uninitialized"] if not step.replayed else []
        with _uninitialized(garbage) if garbage else _NOTHING:
            for entry in step.launches:
                i, shadows, renamed, launch_plan, device, _ = entry
                launch = self.launches[i]
                call = {name: tensors[value] if kind == "tensor" else value
                        for name, (kind, value) in self.launch_args[i].items()}
                for shadow, view in shadows:
                    call[shadow] = None if view is None else view_of(view)
                call = inner_arguments(call, renamed, launch.name)
                if launch_plan is not None:
                    with _on_device(device):
                        launch_plan.run(call, _no_marks)
                    continue
                bwd = self._backward_of(entry)
                if collected is None:
                    bwd[launch.grid](**call, **launch.options)
                    continue
                with _launch_plan.collecting_used() as used:
                    bwd[launch.grid](**call, **launch.options)
                collected.append((_call_plan.last_plan(used),
                                  _launch_plan.device_of(call).device))
        return [None if result is None else _rounded(view_of(result[0]), result[1])
                for result in step.results]

    def _replayable(self, step, tensors, grads, collected) -> Optional["_BackwardStep"]:
        """The step later backwards with this key replay: each launch of a
        ``@triton.jit`` kernel (in wrappers too, where the forward's replay checks
        what they fill in: _launcher_plan.LaunchRecord.filled) through the launch
        plan it used (`collected`); an uninitialized buffer only where that plan
        zero-fills or stores it whole; an upstream gradient in place of its
        buffer's copy where no launch writes that buffer, the gradient is laid out
        as the buffer and as aligned."""
        from triton.runtime.jit import JITFunction

        launches = []
        records = self.replay.launches
        for (i, shadows, renamed, _, _, fresh), (plan, device) in zip(step.launches, collected):
            # (a kernel in autotune or heuristics wrappers: where the forward's replay
            # checks that they fill in what they filled in for this step, the config
            # and values its launch plan was decided with)
            if not isinstance(self.launches[i].kernel, JITFunction) and \
                    records[i].filled is None:
                plan = None
            launches.append((i, shadows, renamed, plan, device, fresh))
        buffers = {s: list(made) for s, made in step.buffers.items()}
        for s, used in step.uses.items():
            entry, shadow, _, _ = used[0]
            plan = launches[entry][3]
            if buffers[s][0] == "uninitialized" and (plan is None or
                                                     not _marks_every(plan, [shadow])):
                buffers[s][0] = "zeros"
        upstream = []
        returned = {result[0][0] for result in step.results if result is not None}
        for position, view, how in step.upstream:
            s, grad = view[0], grads[position]
            if how == "copy" and s not in returned and \
                    sum(1 for u in step.upstream if u[1][0] == s) == 1 and \
                    grad.dtype == buffers[s][2] and grad.is_contiguous() and \
                    tuple(grad.shape) == view[1] and grad.data_ptr() % 16 == 0 and \
                    self._only_read(step, launches, s):
                buffers[s][0] = position
                continue
            upstream.append((position, view, how))
        return _BackwardStep(buffers, tuple(upstream), tuple(launches), step.results,
                             step.uses, replayed=True)

    def _only_read(self, step, launches, s) -> bool:
        """Whether no derived backward writes the buffer of storage `s` (each launch
        takes it whole, for a pointer it only stores through, and its shadow is not
        among those the compiled backward stores into)."""
        for entry, shadow, param, view in step.uses.get(s, ()):
            bwd = self._backward_of(launches[entry])
            written = getattr(bwd, "written_shadows", lambda: None)()
            if not view[4] or written is None or shadow in written or \
                    "load" in bwd.pointer_roles.get(param, ()):
                return False
        return True


class _BackwardStep:
    """A launcher backward by canonical indices: ``buffers`` {storage index: [how
    made ("zeros"; "empty": an upstream gradient is copied into it; "uninitialized":
    its one launch fills it, _partial.uninitialized; or the position of the upstream
    gradient used as it is), size, dtype, device]}; ``upstream``: (output position, view, "copy" or
    "add"); ``launches``: (launch index, (shadow, view or None) per shadow, renamed
    parameters, launch plan or None, device, fresh: its backward takes its input
    gradients as buffers of its own, accumulate=False); ``results``: (view, dtype) or None
    per input; ``uses``: {storage index: [(launch entry, shadow, parameter, view)]}.
    A view is (storage index, shape, strides, offset, whole)."""

    __slots__ = ("buffers", "upstream", "launches", "results", "uses", "replayed")

    def __init__(self, buffers, upstream, launches, results, uses, replayed=False):
        self.buffers, self.upstream, self.launches = buffers, upstream, launches
        self.results, self.uses, self.replayed = results, uses, replayed


_NOTHING = contextlib.nullcontext()


def _rounded(gradient, dtype):
    return gradient if gradient is None or gradient.dtype == dtype else gradient.to(dtype)


def _launcher_backward(ctx, *grads):
    plan = ctx.plan
    return (None, *plan.backward(list(ctx.saved_tensors), grads, ctx.needs_input_grad[1:]))


def _launcher_function():
    import torch

    from tritonad._torch import first_order_only

    class LauncherFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, plan, *inputs):
            # The kernels already ran (inside the launcher); this node only ties the
            # outputs to the inputs and keeps what the backward launches need.
            ctx.plan = plan
            ctx.save_for_backward(*plan.tensors)
            return tuple(plan.outputs)

        @staticmethod
        def backward(ctx, *grads):
            # (once_differentiable would look at the upstream gradients only: the
            # inputs' part of a second derivative would be lost without a word)
            return first_order_only(torch, ctx.plan.label, _launcher_backward, ctx, *grads)

    return LauncherFunction


class _LazyFunction:
    """The autograd.Function class, made on first use (tritonad imports without torch)."""

    _cls = None

    def apply(self, plan, *inputs):
        if _LazyFunction._cls is None:
            _LazyFunction._cls = _launcher_function()
        return _LazyFunction._cls.apply(plan, *inputs)


_LauncherFunction = _LazyFunction()
