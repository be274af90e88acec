"""tritonad under Triton's CPU interpreter (TRITON_INTERPRET=1).

There ``@triton.jit`` gives an ``InterpretedFunction``, which Triton runs as
Python on numpy arrays and never compiles. tritonad still derives on TTIR: the
kernel's backward placeholder is compiled to TTIR for a GPU target (only
Triton's front end and tritonad's stage hook run, no GPU is needed), the
derived function is rendered as Triton Python (`tritonad._render`), and that
rendering runs in the interpreter with the launch's arguments.

Triton's compiler needs JITFunctions where the interpreter made
InterpretedFunctions: the user's kernel and helpers, and triton.language's own
@jit functions (``tl.sum``, ``tl.zeros`` ...). While a backward is derived,
`_jit_world` puts a JITFunction twin of each in its place (module globals,
closures, ``tl.tensor`` members) and restores everything afterwards.
"""

from __future__ import annotations

import inspect
import math
import sys
import threading
import types
from contextlib import contextmanager
from typing import Dict, List, Optional, Tuple

from triton.runtime.jit import JITFunction

from tritonad import _contract, _masks, _order
from tritonad._twin import is_interpreted, jit_twin  # noqa: F401

# Deriving swaps triton.language members, module globals and closure cells
# process-wide (_jit_world), and the interpreter patches triton.language while it
# runs a kernel: one at a time, or a thread would take another's swap for the
# original and restore it. Re-entrant: a rendered kernel calling a VJP derives it
# while its own launch holds the lock.
_WORLD_LOCK = threading.RLock()


class _Swaps:
    def __init__(self):
        self.undo: List[Tuple] = []
        self.seen: set = set()

    def mapping(self, owner: dict, key):
        value = owner[key]
        self.undo.append(("item", owner, key, value))
        owner[key] = jit_twin(value)

    def attribute(self, owner, key, value, twin):
        self.undo.append(("attr", owner, key, value))
        setattr(owner, key, twin)

    def cell(self, cell):
        value = cell.cell_contents
        self.undo.append(("cell", cell, None, value))
        cell.cell_contents = jit_twin(value)

    def restore(self):
        for kind, owner, key, value in reversed(self.undo):
            if kind == "item":
                owner[key] = value
            elif kind == "attr" and value is _DELETE:
                delattr(owner, key)
            elif kind == "attr":
                setattr(owner, key, value)
            else:
                owner.cell_contents = value
        self.undo.clear()

    def scan_namespace(self, namespace: dict, depth: int = 0):
        if id(namespace) in self.seen:
            return
        self.seen.add(id(namespace))
        for key, value in list(namespace.items()):
            if is_interpreted(value):
                self.mapping(namespace, key)
                self.scan_function(value.fn)
            elif isinstance(value, InterpretedVJP):  # (a kernel calling a grad function)
                self.undo.append(("item", namespace, key, value))
                namespace[key] = value.placeholder
                self.scan_function(value.placeholder.fn)
            elif isinstance(value, JITFunction):
                self.scan_function(value.fn)
            elif isinstance(value, types.ModuleType) and depth == 0 and \
                    not value.__name__.startswith(("triton", "torch", "numpy")):
                # (`import helpers` then `helpers.fn(...)` in a kernel)
                self.scan_namespace(vars(value), depth + 1)

    def scan_function(self, fn):
        if id(fn) in self.seen or not isinstance(fn, types.FunctionType):
            return
        self.seen.add(id(fn))
        self.scan_namespace(fn.__globals__)
        for cell in fn.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if is_interpreted(value):
                self.cell(cell)
                self.scan_function(value.fn)
            elif isinstance(value, JITFunction):
                self.scan_function(value.fn)


def _language_objects():
    import triton.language as tl

    return [tl, tl.core, tl.math, tl.core.tensor, tl.core.dtype, tl.core.tensor_descriptor_base]


def _snapshot():
    return [(obj, dict(vars(obj))) for obj in _language_objects()]


# Triton's interpreter patches triton.language while it runs a kernel, and a
# device-function call inside an interpreted kernel patches it again without
# undoing it afterwards (InterpretedFunction.__call__ in Triton 3.6): the
# compiler needs the language as it was, taken here when tritonad is imported.
_PRISTINE = _snapshot()


def _unpatched(value):
    """The builtin behind one of the interpreter's patch lambdas."""
    defaults = getattr(value, "__kwdefaults__", None) or {}
    while getattr(value, "__module__", None) == "triton.runtime.interpreter" and \
            "member" in defaults:
        value = defaults["member"]
        defaults = getattr(value, "__kwdefaults__", None) or {}
    return value


def _restore_language(swaps: "_Swaps"):
    missing = object()
    for obj, pristine in _PRISTINE:
        current = dict(vars(obj))
        for key in set(current) | set(pristine):
            want = _unpatched(pristine.get(key, missing))
            have = current.get(key, missing)
            if have is want:
                continue
            if want is missing:
                swaps.undo.append(("attr", obj, key, have))
                delattr(obj, key)
            else:
                swaps.attribute(obj, key, have if have is not missing else _DELETE, want)


_DELETE = object()


@contextmanager
def _jit_world(*roots):
    """JITFunction twins in place of the InterpretedFunctions that the
    functions `roots` (and triton.language) reach, for the duration."""
    import triton.language as tl

    swaps = _Swaps()
    with _WORLD_LOCK:
        try:
            _swap_in(swaps, tl, roots)
            yield
        finally:
            swaps.restore()


def _swap_in(swaps: "_Swaps", tl, roots) -> None:
    """The twins in place (recorded in `swaps` for restore)."""
    _restore_language(swaps)
    for name, module in list(sys.modules.items()):
        if name.startswith("triton.language") and module is not None:
            swaps.scan_namespace(vars(module), depth=1)
    tensor = tl.core.tensor
    for key, value in list(vars(tensor).items()):
        # (tl.tensor members made by _tensor_member_fn wrap the free function)
        for cell in getattr(value, "__closure__", None) or ():
            try:
                inner = cell.cell_contents
            except ValueError:
                continue
            if is_interpreted(inner):
                swaps.attribute(tensor, key, value, jit_twin(inner))
                break
    for root in roots:
        swaps.scan_function(root)


def derive(placeholder: JITFunction, signature: Dict[str, str], constexprs: Dict[str, object],
           primal) -> dict:
    """Runs Triton's front end and tritonad's rewriters on the placeholder (the
    stages up to TTIR, for an sm_90 target; no GPU involved). Returns the
    compile metadata the rewriters filled."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend

    from tritonad._hook import _rewrite_module

    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    source = ASTSource(placeholder, signature, constexprs)
    options = backend.parse_options(source.parse_options())
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    metadata: dict = {}
    with _jit_world(placeholder.fn, primal.fn):
        module = source.make_ir(target, options, backend.get_codegen_implementation(options),
                                backend.get_module_map(), context)
        _rewrite_module(module, metadata)
    return metadata


# -- arguments -----------------------------------------------------------------

def _type_of(value) -> str:
    """Triton's type of a launch argument (as its launcher specializes it, but
    never an integer 1 as a constant: the rendering takes every runtime argument)."""
    from triton.runtime.jit import mangle_type

    return mangle_type(value)


_NUMPY = {"i1": "bool_", "u1": "bool_", "i8": "int8", "i16": "int16", "i32": "int32",
          "i64": "int64", "u64": "uint64", "fp16": "float16", "fp32": "float32",
          "fp64": "float64"}
_TL = {"i1": "int1", "u1": "int1", "i8": "int8", "i16": "int16", "i32": "int32",
       "i64": "int64", "u64": "int64", "fp16": "float16", "fp32": "float32", "fp64": "float64"}


def _typed_scalar(value, ty: str):
    """A scalar argument as an interpreter tensor of its exact TTIR type (the
    interpreter would make a Python float weakly typed and an int i32)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    if ty not in _TL:
        return value
    data = np.array([value], dtype=getattr(np, _NUMPY[ty]))
    if ty == "u64":
        data = data.view(np.int64)
    dtype = getattr(tl, _TL[ty])
    return tl.core.tensor(TensorHandle(data, dtype), dtype)


_LAUNCH_OPTIONS = {"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion",
                   "launch_cooperative_grid", "launch_pdl", "debug", "sanitize_overflow"}


class _StandsForPlaceholder:
    """A derived kernel or function under TRITON_INTERPRET=1: what it does not define
    itself (``schedule()``, ``source()``, ``launch_signature`` ...) is its placeholder's."""

    def __init__(self, placeholder: JITFunction, primal: JITFunction, constexprs):
        self.placeholder = placeholder
        self.primal = primal
        self.constexpr_params = set(constexprs)
        self.fn = placeholder.fn

    def __getattr__(self, name):
        if name == "placeholder":  # (not set yet: no recursion through the lookup below)
            raise AttributeError(name)
        return getattr(self.placeholder, name)


class InterpretedBackward(_StandsForPlaceholder):
    """The backward kernel under TRITON_INTERPRET=1: launched like the JIT one
    (``bwd[grid](*args, *shadows, **constexprs)``), it derives the backward for
    the launch's argument types, renders it and interprets the rendering.
    Everything else (``schedule()``, ``source()``, ``launch_signature`` ...) is
    the placeholder's."""

    def __init__(self, placeholder: JITFunction, primal: JITFunction, shadows: List[str],
                 constexprs: List[str]):
        super().__init__(placeholder, primal, constexprs)
        self.shadow_params = shadows
        self.arg_names = placeholder.arg_names
        self._kernels: Dict[tuple, tuple] = {}

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    def warmup(self, *args, grid, **kwargs):
        return self.run(*args, grid=grid, warmup=True, **kwargs)

    def run(self, *args, grid, warmup=False, **kwargs):
        from tritonad import _partial
        from tritonad._signature import check_shadows, inner_arguments, user_grid

        order = self.placeholder.launch_signature
        renamed = self.placeholder.tritonad_renamed
        if len(args) > len(order):
            raise TypeError(f"too many arguments: the backward kernel takes {list(order)}")
        for name, value in zip(order, args):
            if name in kwargs:
                raise TypeError(f"argument {name!r} given twice")
            kwargs[name] = value
        # (a parameter named like a launch option is the parameter, as in Triton)
        kwargs = inner_arguments(kwargs, renamed, self.primal.__name__)
        kwargs = {k: v for k, v in kwargs.items() if k not in _LAUNCH_OPTIONS}
        grid = user_grid(grid, renamed)
        for shadow in self.shadow_params:
            kwargs.setdefault(shadow, None)
        check_shadows(self.primal.__name__, kwargs, self.placeholder.shadows, renamed)
        # (the JIT kernel's launch path, partial buffers included: a shared weight's
        # gradient in deterministic mode is summed through them, as on a GPU)
        return _partial.launch(self._launch, grid, warmup, kwargs, self.shadow_params,
                               use_partial=getattr(self.placeholder, "mode", "auto") != "atomic",
                               tape=getattr(self.placeholder, "tape", None))

    def _launch(self, grid, warmup, **kwargs):
        # (the launch path's own options: the interpreter has no use for them)
        kwargs = {k: v for k, v in kwargs.items() if k not in _LAUNCH_OPTIONS}
        bound = inspect.signature(self.placeholder.fn).bind(**kwargs)
        bound.apply_defaults()
        bound = dict(bound.arguments)
        signature, constexprs = {}, {}
        for name, value in bound.items():
            # (as Triton specializes it: the variant without the masks)
            if name in self.constexpr_params or value is None or \
                    (name == _masks.FULL_MASKS and value == 1):
                signature[name] = "constexpr"
                constexprs[name] = value
            else:
                signature[name] = _type_of(value)
        key = (tuple(signature.items()), tuple((k, repr(v)) for k, v in constexprs.items()))
        if key not in self._kernels:
            self._kernels[key] = self._compile(signature, constexprs)
        kernel, params, metadata = self._kernels[key]
        if warmup:
            # what the launch path reads from a compiled kernel (the tape's size)
            return types.SimpleNamespace(metadata=types.SimpleNamespace(**metadata))
        if callable(grid):
            grid = grid(dict(bound))
        arguments = [bound[p] if signature[p].startswith("*") else
                     _typed_scalar(bound[p], signature[p]) for p in params]
        with _WORLD_LOCK:  # (the interpreter patches triton.language while it runs)
            kernel[tuple(grid)](*arguments)
        return None

    def _compile(self, signature, constexprs):
        from tritonad import _render
        from tritonad._signature import _BWD_MARKER

        metadata = derive(self.placeholder, signature, constexprs, self.primal)
        sources = {name: record for name, record in metadata.get("tritonad_source", {}).items()
                   if _BWD_MARKER in name}
        if not sources:
            raise RuntimeError("tritonad: the backward placeholder was not derived (is "
                               "tritonad's stage hook installed?)")
        record = next(reversed(sources.values()))
        kernel = _render.load(_for_interpreter(_render.source_of(record)),
                              namespace=_INTERPRETER_NAMESPACE)
        params = [p for p in inspect.signature(kernel.fn).parameters]
        recorded = {key: {name: value for name, value in metadata.get(key, {}).items()
                          if _BWD_MARKER in name}
                    for key in (*map(_contract.metadata_key,
                                     ("tapes", "regrid", "requirements", "partial",
                                      "partial_slots", "scatter")),
                                _masks.METADATA, _order.METADATA)}
        return kernel, params, recorded


def _dims(value) -> tuple:
    return tuple(int(getattr(d, "value", d)) for d in value.shape)


class InterpretedVJP(_StandsForPlaceholder):
    """A function's VJP under TRITON_INTERPRET=1, called from an interpreted
    kernel: derived for the argument types of the call (a probe kernel calls the
    VJP placeholder with values of those types), rendered, and interpreted."""

    def __init__(self, placeholder: JITFunction, primal: JITFunction, owns, constexprs):
        super().__init__(placeholder, primal, constexprs)
        self.owns = owns  # name of a derived function -> whether it is this VJP
        self._functions: Dict[tuple, tuple] = {}

    def __call__(self, *args, **kwargs):
        import triton.language as tl

        bound = inspect.signature(self.placeholder.fn).bind(*args, **kwargs)
        arguments = dict(bound.arguments)
        key = []
        for name, value in arguments.items():
            value = value.value if isinstance(value, tl.constexpr) else value
            arguments[name] = value
            if name in self.constexpr_params or not isinstance(value, tl.tensor):
                key.append((name, "constexpr", repr(value)))
            else:
                key.append((name, str(value.dtype), _dims(value)))
        key = tuple(key)
        if key not in self._functions:
            self._functions[key] = self._compile(arguments)
        function, params = self._functions[key]
        return function(*[arguments[p] for p in params])

    def _compile(self, arguments):
        import triton.language as tl

        from tritonad import _render
        from tritonad._source import jit_from_source

        # A kernel calling the placeholder with values of the call's types (the
        # values do not matter: the VJP is derived as its own function).
        env, values = {"tl": tl, "_tritonad_vjp": self.placeholder}, []
        for i, (name, value) in enumerate(arguments.items()):
            if name in self.constexpr_params or not isinstance(value, tl.tensor):
                env[f"_c{i}"] = tl.constexpr(value)
                values.append(f"_c{i}")
            else:
                env[f"_t{i}"] = value.dtype
                values.append(f"tl.full({_dims(value)!r}, 0, _t{i})")
        source = ("def _tritonad_vjp_probe():\n"
                  f"    _tritonad_vjp({', '.join(values)})\n")
        probe = jit_from_source(source, "_tritonad_vjp_probe", env)
        metadata = derive(probe, {}, {}, self.primal)
        records = [record for name, record in metadata.get("tritonad_source", {}).items()
                   if self.owns(name)]
        if not records:
            raise RuntimeError("tritonad: the VJP placeholder was not derived (is tritonad's "
                               "stage hook installed?)")
        function = _render.load(_for_interpreter(_render.source_of(records[-1])),
                                namespace=_INTERPRETER_NAMESPACE)
        params = list(inspect.signature(function.fn).parameters)
        names = [n for n in arguments if n not in self.constexpr_params and
                 isinstance(arguments[n], tl.tensor)]
        if len(params) != len(names):
            raise RuntimeError(f"tritonad: the rendered VJP takes {params}, the call gives "
                               f"{names}")
        return function, names


def _for_interpreter(source: str) -> str:
    # (the interpreter's tl.range ignores a loop's compiler options, and takes no
    # interpreter scalars: the rendering's loops use the `range` given below)
    return source.replace(" in tl.range(", " in range(")


def _interpreter_range(*bounds, **options):
    """``range`` for renderings run by the interpreter: it takes interpreter
    scalars (Triton 3.6 keeps them as one-element arrays, which numpy 2 no longer
    converts with int()) and yields the induction variable as a scalar of the
    loop's integer type, as compiled code has it (the rendering may cast it)."""
    import builtins

    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    dtype = tl.int32
    values = []
    for bound in bounds:
        data = getattr(getattr(bound, "handle", None), "data", None)
        if data is None:
            values.append(int(bound))
            continue
        values.append(int(data.reshape(-1)[0]))
        if bound.dtype == tl.int64:
            dtype = tl.int64
    numpy_type = np.int64 if dtype == tl.int64 else np.int32
    for value in builtins.range(*values):
        yield tl.core.tensor(TensorHandle(np.array([value], dtype=numpy_type), dtype), dtype)


# -- libdevice for the interpreter ---------------------------------------------

def _numpy_libdevice():
    import numpy as np

    def erf(x):
        from triton.runtime.interpreter import np_erf_fp32, np_erf_fp64
        return np_erf_fp32(x) if x.dtype == np.float32 else np_erf_fp64(x)

    vectorize = lambda f: np.vectorize(f, otypes=[np.float64])  # noqa: E731
    return {
        "abs": np.abs, "fabs": np.abs, "acos": np.arccos, "acosh": np.arccosh,
        "asin": np.arcsin, "asinh": np.arcsinh, "atan": np.arctan, "atan2": np.arctan2,
        "atanh": np.arctanh, "cbrt": np.cbrt, "ceil": np.ceil, "copysign": np.copysign,
        "cos": np.cos, "cosh": np.cosh, "div_rn": np.divide, "erf": erf,
        "erfc": vectorize(math.erfc), "exp": np.exp, "exp10": lambda x: np.power(10.0, x),
        "exp2": np.exp2, "expm1": np.expm1, "floor": np.floor, "fma": lambda a, b, c: a * b + c,
        "fmax": np.fmax, "fmin": np.fmin, "fmod": np.fmod, "hypot": np.hypot,
        "lgamma": vectorize(math.lgamma), "log": np.log, "log10": np.log10, "log1p": np.log1p,
        "log2": np.log2, "pow": np.power, "rcp_rn": lambda x: 1 / x, "rint": np.rint,
        "round": np.round, "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "sinh": np.sinh,
        "sqrt": np.sqrt, "sqrt_rn": np.sqrt, "tan": np.tan, "tanh": np.tanh, "trunc": np.trunc,
        "tgamma": vectorize(math.gamma),
    }


class _InterpreterLibdevice:
    """``libdevice.<fn>`` for renderings run by the interpreter (Triton 3.6's
    interpreter has no extern calls): the same function in numpy, in the
    argument's precision."""

    def __init__(self):
        self._functions = _numpy_libdevice()

    def __getattr__(self, name):
        function = self._functions.get(name)
        if function is None:
            raise NotImplementedError(f"libdevice.{name} has no implementation for Triton's "
                                      "interpreter in tritonad")

        def call(*args, **kwargs):
            import numpy as np
            import triton.language as tl
            from triton.runtime.interpreter import TensorHandle

            first = args[0]
            out = np.asarray(function(*[a.handle.data for a in args]))
            out = out.astype(first.handle.data.dtype)
            return tl.core.tensor(TensorHandle(out, first.handle.dtype.scalar), first.type)

        call.__name__ = name
        return call


_LIBDEVICE: Optional[_InterpreterLibdevice] = None


def interpreter_libdevice() -> _InterpreterLibdevice:
    global _LIBDEVICE
    if _LIBDEVICE is None:
        _LIBDEVICE = _InterpreterLibdevice()
    return _LIBDEVICE


_INTERPRETER_NAMESPACE = {"libdevice": interpreter_libdevice(), "range": _interpreter_range}
