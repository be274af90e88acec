"""torch.compile support: tritonad operations as torch custom operators.

Under Dynamo (``torch.compiler.is_dynamo_compiling()``), a call of a
differentiable launcher (``tritonad.autograd(fn)``) or of a kernel bridge
(``tritonad.autograd(kernel, outputs=...)[grid](...)``) becomes one call of the
custom operator ``tritonad::launch``; its backward is the operator
``tritonad::launch_backward``. Dynamo and Inductor see neither the kernels nor
the Python around them, so nothing in them can break the graph, with static or
dynamic shapes.

Why opaque operators, not Dynamo's own tracing of the kernels or ``triton_op``:

* A backward kernel made by ``tritonad.grad`` is a placeholder whose body
  becomes the derivative only inside Triton's compile (at the TTIR stage).
  Inductor decides which arguments a user kernel mutates by reading the TTIR of
  the placeholder, which calls the forward: it would conclude that the backward
  writes the forward's outputs and never the gradient buffers, and could reorder
  or drop their uses. An opaque operator that returns the gradients is exact.
* A launcher is arbitrary Python (allocations, grid lambdas, autotuned
  kernels); running it eagerly inside the operator keeps its behaviour
  (recording, refusals, zero-copy details of the bridge) identical to eager mode.

How the pieces fit:

* The arguments are split into tensors, ints (``SymInt`` under
  ``dynamic=True``), floats and a static description (structure, constants,
  which tensors require grad). ``_intern`` (run by Dynamo at trace time, its
  result a constant) registers the owner and the description under a string
  key, the operator's first argument.
* The operator's fake implementation runs the launcher on fake tensors with
  every kernel launch recorded but not executed: that gives the outputs'
  shapes and strides, the structure of the return value, and which tensor
  arguments the kernels write into ("replaced": the operator writes a fresh
  copy and the traced code copies it back into the argument, so the caller's
  buffer holds the result as in eager mode).
* The real implementation runs the eager differentiable path; the backward
  operator runs it again (the forward is recomputed, nothing but the inputs is
  saved) and asks ``torch.autograd.grad`` for the input gradients, so the
  backward is exactly the eager one.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Dict, List, Optional

import torch

from tritonad import _owners

_ENTRIES: Dict[str, "_Entry"] = {}
_TRACED: Dict[str, tuple] = {}
_LOCK = threading.Lock()
_GRID_TABLE = "__tritonad_grids_by_config__"


class CompileError(TypeError):
    """A launcher or kernel call that cannot pass through torch.compile's
    custom operator; the message says what to change."""


# ---------------------------------------------------------------------------
# Traced by Dynamo
# ---------------------------------------------------------------------------

# (Dynamo sees owners, launchers and kernel bridges, only by name: _owners.py)
_owner = _owners.owner


def call_launcher(name, args, kwargs):
    """A differentiable launcher (registered as `name`) called under Dynamo."""
    return _call(name, (tuple(args), dict(kwargs)))


def launch_kernel(name, grid, args, kwargs):
    """``tritonad.autograd(kernel, outputs=...)[grid](...)`` under Dynamo."""
    if callable(grid):
        grid = _evaluate_grid(name, grid, args, kwargs)
    return _call(name, ((grid,) + tuple(args), dict(kwargs)))


def _call(name, packed):
    tensors, ints, floats = [], [], []
    static = _encode(packed, tensors, ints, floats)
    key = _intern(name, static)
    outs = torch.ops.tritonad.launch(key, tensors, ints, floats)
    structure, replaced = _traced_info(key)
    for out_index, tensor_index in replaced:
        # The kernels wrote a copy of this argument: the caller's tensor holds the
        # result (and the gradient flows through the copy) as in eager mode.
        tensors[tensor_index].copy_(outs[out_index])
    return _rebuild(structure, outs, tensors)


def _encode(value, tensors, ints, floats):
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return ("tensor", len(tensors) - 1, value.requires_grad)
    if value is None or isinstance(value, (bool, str, torch.dtype, torch.device)):
        return ("const", value)
    if isinstance(value, (int, torch.SymInt)):
        ints.append(value)
        return ("int", len(ints) - 1)
    if isinstance(value, (float, torch.SymFloat)):
        floats.append(value)
        return ("float", len(floats) - 1)
    if isinstance(value, _triton_dtype()):  # (e.g. a constexpr ACC=tl.float32)
        return ("tl.dtype", value.name)
    if type(value) is tuple:
        return ("tuple", tuple(_encode(v, tensors, ints, floats) for v in value))
    if type(value) is list:
        return ("list", tuple(_encode(v, tensors, ints, floats) for v in value))
    if type(value) is dict:
        return ("dict", tuple((k, _encode(v, tensors, ints, floats))
                              for k, v in value.items()))
    raise CompileError(
        f"under torch.compile, tritonad passes a launcher's arguments through a custom "
        f"operator, which takes tensors, ints, floats, bools, strings, torch and triton "
        f"dtypes, devices and None, in tuples, lists and dicts; got a "
        f"{type(value).__name__}. Pass it in one of "
        "those forms (or close over it in the launcher)")


def _triton_dtype():
    import triton.language as tl
    return tl.dtype


def _rebuild(structure, outs, tensors):
    kind = structure[0]
    if kind == "out":
        return outs[structure[1]]
    if kind == "arg":
        return tensors[structure[1]]
    if kind == "const":
        return structure[1]
    items = [_rebuild(s, outs, tensors) for s in structure[1]]
    if kind == "tuple":
        return tuple(items)
    if kind == "list":
        return items
    return dict(zip(structure[2], items))


def _evaluate_grid(name, grid, args, kwargs):
    """A callable grid, called as Triton would (META: the arguments by name and,
    for an autotuned kernel, each config's values) at trace time: the result is
    ints (SymInts), which the operator can take."""
    meta = dict(zip(_param_names(name), args))
    meta.update(kwargs)
    metas = [meta]
    autotuned = False
    for kind, items in _wrappers_of(name):
        if kind == "heuristics":
            # (their values would be computed at trace time from SymInts, which
            # neither they nor Dynamo's own Triton support handle in general)
            raise CompileError(
                f"tritonad.autograd({name}, outputs=...) under torch.compile: a grid "
                "callable of a @triton.heuristics kernel is evaluated at trace time, before "
                "the heuristics run; pass a tuple grid, or launch the kernel from a Python "
                "function decorated with @tritonad.autograd (any grid works there)")
        expanded = []
        for m in metas:
            for config in items:
                m = dict(m)
                for name, value in config:
                    m[name] = value
                expanded.append(m)
        metas = expanded
        autotuned = True
    grids = tuple(tuple(grid(m)) for m in metas)
    return (_GRID_TABLE, grids) if autotuned else grids[0]


@torch._dynamo.assume_constant_result
def _param_names(name):
    return tuple(_owner(name).names)


@torch._dynamo.assume_constant_result
def _wrappers_of(name):
    """(("heuristics", names) | ("autotune", (((name, value), ...) per config, ...)),
    ...), outermost first (constants: Dynamo bakes them into the graph)."""
    from triton.runtime.autotuner import Autotuner, Heuristics

    op = _owner(name)
    found, kernel = [], op.kernel
    while isinstance(kernel, (Autotuner, Heuristics)):
        if isinstance(kernel, Heuristics):
            found.append(("heuristics", tuple(kernel.values)))
        else:
            if any(kind == "autotune" for kind, _ in found):
                raise CompileError(f"{op.name}: two @triton.autotune wrappers")
            found.append(("autotune", tuple(tuple(c.kwargs.items()) for c in kernel.configs)))
        kernel = kernel.fn
    return tuple(found)


# ---------------------------------------------------------------------------
# Run at trace time (assume_constant_result): registry of owners and traces
# ---------------------------------------------------------------------------

class _Entry:
    def __init__(self, name, owner, static):
        from tritonad._launcher import DifferentiableLauncher

        self.name, self.owner, self.static = name, owner, static
        self.is_launcher = isinstance(owner, DifferentiableLauncher)
        self.grad_indices = tuple(i for i, flag in _tensor_flags(static) if flag)

    def call(self, args, kwargs):
        """The eager differentiable call."""
        from tritonad._launcher import run_differentiable

        if self.is_launcher:
            return run_differentiable(self.owner, args, kwargs)
        return self.owner._launch(_grid_of(self.owner, args[0]), args[1:], kwargs)

    def plain_call(self, args, kwargs):
        """The call as written, for tracing (no autograd)."""
        if self.is_launcher:
            return self.owner.fn(*args, **kwargs)
        return self.owner._launch(_grid_of(self.owner, args[0]), args[1:], kwargs)

    def roles(self, launch):
        from tritonad._launcher import backward_kernel

        if not self.is_launcher and launch.kernel is self.owner.kernel:
            return self.owner.backward_kernel.pointer_roles
        return backward_kernel(launch.kernel, getattr(self.owner, "mode", "auto")).pointer_roles


def _tensor_flags(static):
    kind = static[0]
    if kind == "tensor":
        yield static[1], static[2]
    elif kind in ("tuple", "list"):
        for item in static[1]:
            yield from _tensor_flags(item)
    elif kind == "dict":
        for _, item in static[1]:
            yield from _tensor_flags(item)


@torch._dynamo.assume_constant_result
def _intern(name, static) -> str:
    key = f"{name}:{static!r}"
    owner = _owner(name)
    with _LOCK:
        entry = _ENTRIES.get(key)
        if entry is None or entry.owner is not owner:
            _ENTRIES[key] = _Entry(name, owner, static)
    return key


@torch._dynamo.assume_constant_result
def _traced_info(key):
    return _TRACED[key]


def _grid_of(op, grid):
    if isinstance(grid, tuple) and len(grid) == 2 and grid[0] == _GRID_TABLE:
        return _GridTable(op, grid[1])
    return grid


class _GridTable:
    """The grid of an autotuned kernel: one per config, picked by the config's
    values in META."""

    def __init__(self, op, grids):
        self.configs = [dict(config) for kind, configs in _wrappers_of(op.tritonad_name)
                        if kind == "autotune" for config in configs]
        self.grids = grids

    def __call__(self, meta):
        for config, grid in zip(self.configs, self.grids):
            if all(meta.get(k) == v for k, v in config.items()):
                return grid
        given = {k: v for k, v in meta.items() if not isinstance(v, torch.Tensor)}
        raise KeyError(f"tritonad: no autotune config of the traced grid matches {given}")


# ---------------------------------------------------------------------------
# The operators
# ---------------------------------------------------------------------------

def _decode(static, tensors, ints, floats):
    kind = static[0]
    if kind == "tensor":
        return tensors[static[1]]
    if kind == "int":
        return ints[static[1]]
    if kind == "float":
        return floats[static[1]]
    if kind == "const":
        return static[1]
    if kind == "tl.dtype":
        return _triton_dtype()(static[1])
    if kind == "dict":
        return {k: _decode(v, tensors, ints, floats) for k, v in static[1]}
    items = [_decode(v, tensors, ints, floats) for v in static[1]]
    return tuple(items) if kind == "tuple" else items


def _trace(entry, tensors, ints, floats):
    """Runs the call on fake tensors, kernels recorded but not launched:
    (structure of the result, ((output index, argument index) of the arguments
    the kernels store into, ...)), and the outputs (fake)."""
    from tritonad._launcher import recording, storage_id

    args, kwargs = _decode(entry.static, tensors, ints, floats)
    with recording(fake=True) as recorder:
        result = entry.plain_call(args, kwargs)
    stored = set()
    for launch in recorder.launches:
        roles = entry.roles(launch)
        for param, value in launch.bound.items():
            if isinstance(value, torch.Tensor) and value.numel() and \
                    "store" in roles.get(param, ()):
                stored.add(storage_id(value))
    name = entry.name
    grad_indices = set(entry.grad_indices)
    replaced = []
    by_storage = {}
    for i, t in enumerate(tensors):
        if t.numel():
            by_storage.setdefault(storage_id(t), i)
        if t.numel() and storage_id(t) in stored:
            if i in grad_indices:
                raise ValueError(f"tritonad.autograd({name}): a kernel stores into argument "
                                 f"tensor {i}, which requires grad (in place, unknown to "
                                 "autograd): allocate outputs inside the launcher")
            replaced.append(i)
    outputs = [torch.empty_strided(tensors[i].shape, tensors[i].stride(),
                                   dtype=tensors[i].dtype, device=tensors[i].device)
               for i in replaced]
    returned = []

    def describe(value):
        if isinstance(value, torch.Tensor):
            for i, t in enumerate(tensors):
                if t is value:
                    return ("arg", i)
            if value.numel() and storage_id(value) in by_storage:
                raise CompileError(
                    f"tritonad.autograd({name}) returns a view of its argument tensor "
                    f"{by_storage[storage_id(value)]} (under torch.compile an operator cannot "
                    "return memory of its inputs): return the argument itself, or take the "
                    "view outside the launcher")
            returned.append(value)
            return ("out", len(replaced) + len(returned) - 1)
        if value is None or isinstance(value, (bool, str, int, float, torch.dtype)):
            return ("const", value)
        if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            raise CompileError(f"tritonad.autograd({name}) returns a number computed from "
                               "shapes; under torch.compile a launcher returns tensors and "
                               "constants: compute it outside the launcher")
        if type(value) in (tuple, list):
            return ("tuple" if type(value) is tuple else "list",
                    tuple(describe(v) for v in value))
        if type(value) is dict:
            return ("dict", tuple(describe(v) for v in value.values()), tuple(value))
        raise CompileError(f"tritonad.autograd({name}) returns a {type(value).__name__}; under "
                           "torch.compile a launcher returns tensors and constants in "
                           "tuples, lists and dicts")

    structure = describe(result)
    replaced_pairs = tuple((k, i) for k, i in enumerate(replaced))
    return (structure, replaced_pairs), _normalized(outputs + returned)


def _normalized(outputs):
    """Outputs as the operator returns them: each owns its memory, dense, at
    offset 0 (a view or an alias of another output is copied). Applied alike to
    fake and real outputs, so their strides agree."""
    from tritonad._launcher import storage_id

    seen, result = set(), []
    for t in outputs:
        sid = storage_id(t) if t.numel() else None
        if t.storage_offset() != 0 or not t.is_contiguous() or (sid is not None and sid in seen):
            t = t.clone(memory_format=torch.contiguous_format)
        if sid is not None:
            seen.add(sid)
        result.append(t)
    return result


def _traced(key, tensors, ints, floats):
    traced = _TRACED.get(key)
    if traced is None:  # (a graph not traced in this process: trace it now)
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode(allow_non_fake_inputs=False) as mode:
            fakes = [mode.from_tensor(t) for t in tensors]
            traced, _ = _trace(_ENTRIES[key], fakes, ints, floats)
        _TRACED[key] = traced
    return traced


@contextlib.contextmanager
def _autograd_enabled():
    """Inside an operator's implementation, autograd (and the view tracking it
    relies on: ``t.T._base``) is excluded from dispatch; the eager path needs
    both (torch ops in the launcher, the node it builds)."""
    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.AutogradFunctionality) | \
        torch._C.DispatchKeySet(torch._C.DispatchKey.AutogradOther) | \
        torch._C.DispatchKeySet(torch._C.DispatchKey.AutogradNestedTensor) | \
        torch._C.DispatchKeySet(torch._C.DispatchKey.ADInplaceOrView)
    exclude = torch._C._dispatch_tls_local_exclude_set() - keys
    with torch._C._ForceDispatchKeyGuard(torch._C._dispatch_tls_local_include_set(), exclude), \
            torch.enable_grad():
        yield


def _run(key, tensors, ints, floats):
    """The eager differentiable call on real tensors: (leaves, raw outputs)."""
    entry = _ENTRIES[key]
    structure, replaced = _traced(key, tensors, ints, floats)
    inputs = list(tensors)
    for _, i in replaced:  # (the kernels write a copy; the traced code copies it back)
        fresh = torch.empty_strided(tensors[i].shape, tensors[i].stride(),
                                    dtype=tensors[i].dtype, device=tensors[i].device)
        inputs[i] = fresh.copy_(tensors[i])
    leaves = []
    for i in entry.grad_indices:
        inputs[i] = inputs[i].detach().requires_grad_()
        leaves.append(inputs[i])
    args, kwargs = _decode(entry.static, inputs, ints, floats)
    with _autograd_enabled():
        result = entry.call(args, kwargs)
    outputs = [inputs[i] for _, i in replaced]
    _collect(structure, result, outputs, entry.name)
    return leaves, outputs


def _collect(structure, value, outputs, name):
    kind = structure[0]
    if kind == "out":
        if not isinstance(value, torch.Tensor):
            raise RuntimeError(f"tritonad.autograd({name}) returned {type(value).__name__} where "
                               "it returned a tensor when traced by torch.compile")
        outputs.append(value)
    elif kind in ("tuple", "list", "dict"):
        values = list(value.values()) if kind == "dict" else list(value)
        if len(values) != len(structure[1]):
            raise RuntimeError(f"tritonad.autograd({name}) returned {len(values)} values where "
                               f"it returned {len(structure[1])} when traced by torch.compile")
        for s, v in zip(structure[1], values):
            _collect(s, v, outputs, name)


@torch.library.custom_op("tritonad::launch", mutates_args=())
def _launch(key: str, tensors: List[torch.Tensor], ints: List[int],
            floats: List[float]) -> List[torch.Tensor]:
    _, outputs = _run(key, tensors, ints, floats)
    with torch.no_grad():
        return _normalized([t.detach() for t in outputs])


@_launch.register_fake
def _launch_fake(key, tensors, ints, floats):
    traced, outputs = _trace(_ENTRIES[key], tensors, ints, floats)
    _TRACED[key] = traced
    return outputs


@torch.library.custom_op("tritonad::launch_backward", mutates_args=())
def _launch_backward(key: str, tensors: List[torch.Tensor], ints: List[int], floats: List[float],
                     grads: List[Optional[torch.Tensor]]) -> List[torch.Tensor]:
    entry = _ENTRIES[key]
    leaves, outputs = _run(key, tensors, ints, floats)
    pairs = [(o, g) for o, g in zip(outputs, grads)
             if g is not None and o.requires_grad and o.is_floating_point()]
    found = [None] * len(leaves)
    if pairs:
        with _autograd_enabled():
            found = torch.autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs],
                                        allow_unused=True)
    result = []
    for i, g in zip(entry.grad_indices, found):
        out = torch.empty_like(tensors[i], memory_format=torch.contiguous_format)
        result.append(out.zero_() if g is None else out.copy_(g))
    return result


@_launch_backward.register_fake
def _launch_backward_fake(key, tensors, ints, floats, grads):
    return [torch.empty_like(tensors[i], memory_format=torch.contiguous_format)
            for i in _ENTRIES[key].grad_indices]


def _setup_context(ctx, inputs, output):
    key, tensors, ints, floats = inputs
    ctx.key, ctx.ints, ctx.floats = key, ints, floats
    _, replaced = _TRACED[key]
    replaced_indices = {i for _, i in replaced}
    # Arguments the kernels write into: only their layout is needed (the traced
    # code copies the result into them, so saving them would see a new version).
    ctx.layouts = {i: (tensors[i].shape, tensors[i].stride(), tensors[i].dtype,
                       tensors[i].device) for i in replaced_indices}
    ctx.count = len(tensors)
    ctx.save_for_backward(*[t for i, t in enumerate(tensors) if i not in replaced_indices])


def _backward(ctx, grads):
    saved = iter(ctx.saved_tensors)
    tensors = []
    for i in range(ctx.count):
        if i in ctx.layouts:
            shape, stride, dtype, device = ctx.layouts[i]
            tensors.append(torch.empty_strided(shape, stride, dtype=dtype, device=device))
        else:
            tensors.append(next(saved))
    found = torch.ops.tritonad.launch_backward(ctx.key, tensors, ctx.ints, ctx.floats,
                                               list(grads))
    result = [None] * ctx.count
    for i, g in zip(_ENTRIES[ctx.key].grad_indices, found):
        result[i] = g
    # (an empty list of numbers reads as an empty list of tensors: it gets [] back)
    return None, result, [] if not ctx.ints else None, [] if not ctx.floats else None


_launch.register_autograd(_backward, setup_context=_setup_context)
