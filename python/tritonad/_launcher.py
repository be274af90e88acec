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

from tritonad import _launch_plan, _owners
from tritonad._owners import name_of
from tritonad._kernel_grad import inner_arguments, renamed_parameters, unwrap
from tritonad._memory import _extent, storage_id, views_overlap  # noqa: F401
from tritonad._source import function_def, param_names
from tritonad._torch import overlaps

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
    global _PATCH_USERS
    with _PATCH_LOCK:
        if _PATCH_USERS == 0:
            for cls in _kernel_classes():
                original = cls.__dict__["run"]
                _PATCHED[cls] = original
                cls.run = _make_interceptor(original)
        _PATCH_USERS += 1
    try:
        yield
    finally:
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

    def describe(self) -> str:
        return f"{self.name} (launch {self.index + 1})"


class Recorder:
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
        return self._run(kernel, original, args, kwargs)

    def _run(self, kernel, original, args, kwargs):
        # (inner runs: an autotuner's benchmark and chosen config, a heuristics'
        # inner kernel, are parts of this launch)
        self.inside = True
        try:
            return original(kernel, *args, **kwargs)
        finally:
            self.inside = False


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


def backward_kernel(kernel, mode: str, tune=False):
    """``tritonad.grad(kernel, mode=mode, tune=tune)`` (accumulate mode: several launches may
    add into one gradient buffer), made once per kernel."""
    from tritonad._kernel_grad import kernel_grad

    key = (id(kernel), mode, repr(tune))
    with _BACKWARD_LOCK:
        entry = _BACKWARD.get(key)
        if entry is None or entry[0] is not kernel:
            entry = (kernel, kernel_grad(kernel, mode=mode, tune=tune))
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
    torch's autograd graph through one node."""
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
    plan = _Plan.of(launcher, recorder.launches, args, kwargs, result, watch)
    if plan.inputs and plan.outputs:
        _LauncherFunction.apply(plan, *plan.inputs)
    plan.release()
    return result  # (the output tensors themselves now carry the grad_fn)


_ANALYSES_LIMIT = 64  # per launcher


def _forget_arguments(launches) -> None:
    """Drops the recorded launches' arguments: the node saves the tensors (no
    reference cycle through the launches)."""
    for launch in launches:
        launch.bound = None


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
    view), each once, with the storages they address; and the key of everything
    the call's analysis depends on (None where an argument is not hashable): per
    tensor its storage (by order of first use), offset, shape, strides, dtype,
    device, requires_grad and base; per launch the kernel and each argument (a
    tensor by its index, anything else by value)."""

    __slots__ = ("index", "tensors", "storages", "arguments", "arg_tensors", "result_tensors",
                 "launch_args", "key")

    def __init__(self, launches, args, kwargs, result):
        import torch
        from torch.utils._pytree import tree_leaves

        tensor = torch.Tensor
        self.index: Dict[int, int] = {}
        self.tensors: List[Any] = []
        self.storages: List[int] = []
        storage_index: Dict[int, int] = {}
        described: List[tuple] = []

        def visit(t) -> int:
            i = self.index.get(id(t))
            if i is not None:
                return i
            base = t._base
            b = visit(base) if base is not None and base.requires_grad else -1
            i = self.index[id(t)] = len(self.tensors)
            self.tensors.append(t)
            sid = storage_id(t)
            s = storage_index.get(sid)
            if s is None:
                s = storage_index[sid] = len(self.storages)
                self.storages.append(sid)
            described.append((s, t.storage_offset(), t.shape, t.stride(), t.dtype, t.device,
                              t.requires_grad, b))
            return i

        self.arguments = (args, kwargs)
        self.arg_tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, tensor)]
        self.result_tensors = [t for t in tree_leaves(result) if isinstance(t, tensor)]
        parts: List[object] = [tuple(visit(t) for t in self.arg_tensors)]
        self.launch_args = []
        for launch in launches:
            arguments = {n: ("tensor", visit(v)) if isinstance(v, tensor) else ("value", v)
                         for n, v in launch.bound.items()}
            self.launch_args.append(arguments)
            parts.append((launch.kernel, tuple((n, kind, type(v), v)
                                               for n, (kind, v) in arguments.items())))
        parts.append(tuple(visit(t) for t in self.result_tensors))
        del visit  # (it refers to itself: a cycle that would hold the tensors until collected)
        parts.append(tuple(described))
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
    def of(cls, launcher, launches, args, kwargs, result, watch) -> "_Plan":
        """The plan of a call: its analysis is taken from an earlier call whose
        recorded launches, arguments and result have the same structure (the
        same kernels; tensors with the same layouts, dtypes, requires_grad and
        sharing of tensors and storages; the same other arguments), else made."""
        walk = _Walk(launches, args, kwargs, result)
        analyses = launcher.analyses
        known = analyses.get(walk.key) if walk.key is not None and not watch.derived else None
        if known is not None:
            return cls._bound(launcher, launches, walk, known)
        plan = cls(launcher, launches, walk, result, watch)
        if walk.key is not None and not watch.derived:
            _launch_plan.keep_newest(analyses, walk.key, plan._analysis(walk), _ANALYSES_LIMIT)
        return plan

    @classmethod
    def _bound(cls, launcher, launches, walk, known) -> "_Plan":
        """A plan with an earlier call's analysis (by canonical indices) bound to
        this call's tensors and storages."""
        plan = cls.__new__(cls)
        plan._describe(launcher, launches, None)
        tensors, storages = walk.tensors, walk.storages
        plan.input_refs, plan.output_refs = known.input_refs, known.output_refs
        plan.inputs = [tensors[i] for i in known.input_refs]
        plan.outputs = [tensors[i] for i in known.output_refs]
        plan.spans = {storages[s]: span for s, span in known.spans.items()}
        plan.stored = {storages[s] for s in known.stored}
        plan.tensors = tensors
        plan.launch_args = walk.launch_args
        _forget_arguments(launches)
        return plan

    def _analysis(self, walk) -> "_Analysis":
        by_storage = {sid: s for s, sid in enumerate(walk.storages)}
        return _Analysis(tuple(self.input_refs), tuple(self.output_refs),
                         {by_storage[sid]: span for sid, span in self.spans.items()},
                         frozenset(by_storage[sid] for sid in self.stored))

    def _describe(self, launcher, launches, arguments):
        self.launcher, self.launches, self.mode = launcher, launches, launcher.mode
        self.label = repr(launcher)
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
        self.tensors = walk.tensors
        _forget_arguments(launches)

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
        import torch

        wanted = [ref for ref, need in zip(self.input_refs, needs) if need]
        if not wanted:
            return [None] * len(self.input_refs)
        # Gradient buffers for what the kernels wrote and for the inputs wanted;
        # none for inputs not wanted, constants, integer buffers.
        active = set(self.stored) | {storage_id(tensors[ref]) for ref in wanted}
        shadows = {}

        def shadow_of(t, upstream=None):
            """t's view of its storage's gradient buffer (made on first use: zeros, or
            `upstream` where that covers the whole buffer)."""
            sid = storage_id(t)
            span = self.spans.get(sid)
            if span is None or sid not in active or not t.is_floating_point():
                return None
            first, size, dtype, device = span
            whole = t.storage_offset() == first and t.numel() == size and t.is_contiguous()
            if sid not in shadows:
                # (f16/bf16 gradients are summed in fp32 across programs and launches,
                # rounded once when returned)
                if dtype in (torch.float16, torch.bfloat16):
                    dtype = torch.float32
                if whole and upstream is not None:  # (a copy, not zeros and an add)
                    buffer = torch.empty(size, dtype=dtype, device=device)
                    buffer.view(t.shape).copy_(upstream)
                    shadows[sid] = (buffer, first)
                    return buffer.view(t.shape)
                shadows[sid] = (torch.zeros(size, dtype=dtype, device=device), first)
            buffer, first = shadows[sid]
            view = buffer.view(t.shape) if whole else \
                buffer.as_strided(t.shape, t.stride(), t.storage_offset() - first)
            # (whole: not a view of a larger buffer, autograd takes it as the .grad
            # without a copy)
            if upstream is not None:
                view.add_(upstream)
            return view

        for ref, grad in zip(self.output_refs, grads):
            shadow_of(tensors[ref], grad)
        for launch, arguments in reversed(list(zip(self.launches, self.launch_args))):
            bwd = backward_kernel(launch.kernel, self.mode, self.launcher.tune)
            call = {name: tensors[value] if kind == "tensor" else value
                    for name, (kind, value) in arguments.items()}
            reaches_input = False
            for param, shadow in bwd.shadows.items():
                value = call.get(param)
                view = shadow_of(value) if isinstance(value, torch.Tensor) and value.numel() \
                    else None
                call[shadow] = view
                reaches_input |= view is not None and "load" in bwd.pointer_roles.get(param, ())
            if reaches_input:  # (else no gradient of this launch is wanted)
                call = inner_arguments(call, renamed_parameters(param_names(launch.fn)),
                                       launch.name)
                bwd[launch.grid](**call, **launch.options)
        return [_rounded(shadow_of(tensors[ref]), tensors[ref].dtype) if need else None
                for ref, need in zip(self.input_refs, needs)]


def _rounded(gradient, dtype):
    return None if gradient is None else gradient.to(dtype)


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
