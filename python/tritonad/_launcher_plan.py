"""Launcher plans: a decorated launcher's later calls replayed from an earlier one.

The full path of a launcher call (_launcher.run_differentiable) intercepts Triton's
launches through a recorder, watches the launcher's torch ops, analyses what the
kernels read and write, and launches the backward through ``bwd[grid]``. Once a call
has been analysed, its structure is known: the launcher's arguments (tensors by
layout, alignment, requires_grad and memory sharing; anything else by value), each
launch (its kernel, options, arguments, grid) and the result. A plan keeps that
structure; a later call whose arguments have the plan's key runs the launcher's
Python with a cheaper recorder (Replay) that

  - checks each launch against the plan before it runs (the same kernel, options,
    grid, each argument's value or description: layout, alignment, the storage by
    order of first use), and launches a ``@triton.jit`` kernel on the GPU through
    its compiled kernel (``CompiledKernel.run``, no binder or cache key), one in
    Triton's own autotune and heuristics wrappers too where they fill in what
    they filled in for the plan (the config its autotuner chose, each heuristic's
    value: _forward_config.launched_as, evaluated at each launch);
  - does not watch torch ops: what the watch refuses cannot happen unseen in a call
    that matches the plan. A tensor torch computes from a kernel's output is new
    memory, so a kernel loading it or the launcher returning it would leave the
    plan (a floating-point tensor a kernel loads that lives neither in an
    argument's memory nor in memory an earlier launch stored, a parameter or
    buffer the launcher closes over, must be that very tensor, or a view of that
    very base, again; the launcher may not return one). A torch op writing in
    place into what a kernel stored bumps the tensor's version counter, which the
    replay compares;
  - takes the call's analysis from the plan (no _Walk, no checks).

Any difference (another launch, argument, grid, result, count of launches, a
version bumped) raises Diverged: the call is run again on the full path, from the
start (launches before the difference run twice; they are the plan's, which store
only into memory the launcher allocates: no plan is made for a launcher whose
kernels store into an argument's memory). So a refusal the full path makes is
made again for any call that would be refused. A key whose calls leave their
plan twice (a launcher whose launches depend on data or state its arguments do
not show) is not planned again.

The backward of a planned call is decided once per needed gradients and upstream
layouts (_launcher._Plan.backward): its gradient buffers (zeros; uninitialized
where one launch covers the buffer and its launch plan zero-fills or stores it
whole; the upstream gradient itself where no launch writes its buffer), and each
derived backward's _launch_plan.LaunchPlan (collected with collecting_used), which
later backwards replay.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from tritonad import _launch_plan
from tritonad._forward_config import launched_as

PLAN_LIMIT = 64  # per launcher
# A key whose calls left their plan this many times is not planned again (a
# launcher whose launches depend on data or state its arguments do not show).
STRIKES = 2
BACKWARD_LIMIT = 16  # per plan (needed gradients and upstream layouts)

_SIMPLE = (int, float, bool, str)


class Diverged(BaseException):
    """A replayed call that left its plan. (A BaseException: a launcher's own
    ``except Exception`` around a launch does not swallow it.)"""


def leaves(tree) -> list:
    """torch's tree_leaves of (args, kwargs), without pytree for flat arguments."""
    import torch

    args, kwargs = tree
    flat = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor) or type(value) in _SIMPLE:
            flat.append(value)
        elif value is not None:  # (None: no leaf, as pytree has it)
            from torch.utils._pytree import tree_leaves
            return tree_leaves(tree)
    return flat


def tensor_leaves(result) -> list:
    """The tensors of a launcher's result, in pytree order."""
    import torch

    if isinstance(result, torch.Tensor):
        return [result]
    if type(result) in (tuple, list) and all(isinstance(r, torch.Tensor) for r in result):
        return list(result)
    from torch.utils._pytree import tree_leaves
    return [t for t in tree_leaves(result) if isinstance(t, torch.Tensor)]


class Walker:
    """The tensors of a call in order of first use, each once (a view's base
    where it requires grad, before the view), with the storages they address and
    a description of each: its storage (by order of first use), offset, shape,
    strides, dtype, device, requires_grad, base and 16-byte alignment. With
    `expected` (a plan's descriptions), each is compared as it is made."""

    __slots__ = ("index", "tensors", "storages", "storage_index", "described", "expected",
                 "pinned")

    def __init__(self, expected=None):
        self.index: Dict[int, int] = {}
        self.tensors: List[object] = []
        self.storages: List[int] = []
        self.storage_index: Dict[int, int] = {}
        self.described: List[tuple] = []
        self.expected = expected
        # index -> (weak reference to the tensor it must be, or be a view of: True)
        self.pinned: Dict[int, tuple] = {}

    def visit(self, t) -> int:
        i = self.index.get(id(t))
        if i is not None:
            return i
        base = t._base
        b = self.visit(base) if base is not None and base.requires_grad else -1
        i = self.index[id(t)] = len(self.tensors)
        self.tensors.append(t)
        sid = t.untyped_storage()._cdata  # (_memory.storage_id, inlined: once per tensor)
        s = self.storage_index.get(sid)
        if s is None:
            s = self.storage_index[sid] = len(self.storages)
            self.storages.append(sid)
        try:
            alignment = t.data_ptr() & 15
        except RuntimeError:  # (fake tensors)
            alignment = -1
        described = (s, t.storage_offset(), t.shape, t.stride(), t.dtype, t.device,
                     t.requires_grad, b, alignment)
        expected = self.expected
        if expected is not None:
            if i >= len(expected) or expected[i] != described:
                raise Diverged
            pinned = self.pinned.get(i)
            if pinned is not None and pinned[0]() is not (base if pinned[1] else t):
                raise Diverged
        self.described.append(described)
        return i


def arguments_key(walker: Walker, arguments: list) -> Optional[tuple]:
    """The key a plan is found by: the launcher's arguments (`arguments`: their
    leaves; tensors visited by `walker`, anything else by value), grad mode and
    the current device. None where an argument is not hashable, or a tensor has no
    memory (fake tensors: torch.compile's tracing)."""
    import torch

    tensor = torch.Tensor
    parts = tuple(walker.visit(a) if isinstance(a, tensor) else (type(a), a) for a in arguments)
    on_gpu = False
    for described in walker.described:
        if described[8] < 0:
            return None
        on_gpu = on_gpu or described[5].type == "cuda"
    key = (parts, tuple(walker.described), torch.is_grad_enabled(),
           torch.cuda.current_device() if on_gpu else None)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def launch_part(kernel, arguments: dict) -> tuple:
    """A launch's part of a call's structure: its kernel and each argument (a
    tensor by its index in the walk, anything else by type and value)."""
    return (kernel, tuple((n, kind, type(v), v) for n, (kind, v) in arguments.items()))


def grid_now(grid, arguments: dict) -> tuple:
    """The grid as Triton evaluates it (a callable gets every parameter), three extents."""
    if callable(grid):
        grid = grid(arguments)
    grid = tuple(int(g) for g in grid)
    return grid + (1,) * (3 - len(grid))


class LaunchRecord:
    """One launch of a plan: its kernel, parameter names, options, its part of the
    structure, the parameters it stores through, and (a plain ``@triton.jit``
    kernel on the GPU) the compiled launch a replay makes instead of Triton's."""

    __slots__ = ("kernel", "fn", "name", "names", "name_set", "options", "part", "stored",
                 "compiled", "filled", "arguments")

    def __init__(self, launch, names, arguments, stored, compiled, filled=None):
        self.kernel, self.fn, self.name = launch.kernel, launch.fn, launch.name
        self.names, self.name_set = tuple(names), frozenset(names)
        self.options = dict(launch.options)
        self.part = launch_part(launch.kernel, arguments)
        # (a replay that matches `part` has these very arguments: tensors by walk index,
        # values equal by type and value)
        self.arguments = arguments
        self.stored, self.compiled = tuple(stored), compiled
        # (what the kernel's autotune and heuristics wrappers filled in; a replay
        # launches the compiled kernel where they fill in the same again)
        self.filled = filled


class LauncherPlan:
    """The structure of a launcher call and its analysis (an _launcher._Analysis),
    for calls with the same arguments key; the backwards decided for it, by needed
    gradients and upstream layouts."""

    __slots__ = ("launches", "described", "pinned", "result_part", "analysis", "backwards",
                 "strikes")

    def __init__(self, launches, described, pinned, result_part, analysis):
        self.launches: tuple = tuple(launches)
        self.described: tuple = tuple(described)
        self.pinned = pinned  # {walk index: (weak reference, via base)}: tensors it must get
        self.result_part: tuple = result_part
        self.analysis = analysis
        self.backwards: Dict[tuple, object] = {}
        self.strikes = 0  # (calls with its key that left it, this plan's and earlier ones')


def make_plan(launches, walk, analysis, roles_of) -> Optional[LauncherPlan]:
    """The plan of an analysed call (`walk`: its _launcher._Walk; `roles_of(launch)`:
    the pointer roles of a launch's kernel), or None where a replay could not tell
    a call that the full path would refuse, or could not run a call again:

      - a floating-point tensor a kernel loads (or whose use it cannot tell) that
        lives neither in an argument's memory nor in memory an earlier launch
        stored is taken as what it was in this call (which the watch saw: not
        computed from a kernel's output), a tensor from outside the call (a
        parameter or buffer the launcher closes over) or made by the launcher:
        replays check that they get that very tensor, or a view of that very
        base (one made anew each call leaves the plan);
      - a returned floating-point tensor in such memory;
      - a kernel storing into an argument's memory (a call run again would
        store into it twice: atomics would add twice)."""
    import weakref

    from tritonad._signature import renamed_parameters
    from tritonad._source import param_names

    described = walk.described
    arguments_memory = {described[i][0] for i in walk.argument_refs}
    for i in walk.argument_refs:  # (the bases of arguments: their memory is the arguments')
        if described[i][7] >= 0:
            arguments_memory.add(described[described[i][7]][0])
    known = set(arguments_memory)
    pinned = {}
    records = []
    for launch, arguments in zip(launches, walk.launch_args):
        roles = roles_of(launch)
        stored = []
        for param, (kind, ref) in arguments.items():
            if kind != "tensor":
                continue
            t = walk.tensors[ref]
            role = roles.get(param) or ()
            memory = described[ref][0]
            if t.numel() and memory in arguments_memory and ("store" in role or not role):
                return None
            if t.is_floating_point() and t.numel() and ("load" in role or not role) and \
                    memory not in known:
                via_base = t._base is not None
                pinned[ref] = (weakref.ref(t._base if via_base else t), via_base)
                known.add(memory)
            if "store" in role:
                stored.append(param)
        for param in stored:
            known.add(described[arguments[param][1]][0])
        compiled = None
        jit, bound, filled = _launched_as(launch.kernel, launch.bound)
        if jit is not None and not jit.pre_run_hooks and \
                getattr(launch, "compiled", None) is not None and \
                not renamed_parameters(tuple(launch.bound)) and \
                any(d[5].type == "cuda" for d in described):
            compiled = _launch_plan.CompiledLaunch(jit, launch.compiled, (1,))
            values = compiled.values(bound)
            compiled.grid = grid_now(launch.grid, dict(zip(compiled.names, values)))
        records.append(LaunchRecord(launch, param_names(launch.fn), arguments, stored, compiled,
                                    filled if compiled is not None else None))
    for ref in walk.result_refs:
        t = walk.tensors[ref]
        if t.is_floating_point() and t.numel() and described[ref][0] not in known:
            return None
    return LauncherPlan(records, described, pinned, tuple(walk.result_refs), analysis)


def _launched_as(kernel, bound: dict) -> tuple:
    """(JITFunction, its arguments, what the wrappers filled in: None for a plain
    kernel) that a launch of `kernel` with `bound` runs: the kernel itself, or,
    through Triton's own autotune and heuristics wrappers, as they fill it in
    (_forward_config.launched_as); Nones where that is not known."""
    from triton.runtime.jit import JITFunction

    if isinstance(kernel, JITFunction):
        return kernel, bound, None
    launched = launched_as(kernel, bound)
    return (None, None, None) if launched is None else launched


class RunsLaunches:
    """What the interception of Triton's ``run`` hands a launch to (``launch``); a
    launch runs through ``_run``, and the runs inside it (an autotuner's benchmark
    and chosen config, a heuristics' inner kernel) are parts of it."""

    __slots__ = ("inside",)

    def _run(self, kernel, original, args, kwargs):
        self.inside = True
        # (an instance's own run, installed since Triton looked it up: the
        # autotuner tuning for its backward, _tuned_for_backward.py)
        own = kernel.__dict__.get("run")
        try:
            return own(*args, **kwargs) if own is not None else original(kernel, *args, **kwargs)
        finally:
            self.inside = False


class Replay(RunsLaunches):
    """The recorder of a call replayed from `plan` (the interception calls
    ``launch`` as it calls _launcher.Recorder's): checks each launch against the
    plan, launches it, keeps what the node needs (the walk, each launch's
    arguments by walk index)."""

    __slots__ = ("plan", "walker", "launches", "launch_args", "versions", "make_launch")

    def __init__(self, plan: LauncherPlan, walker: Walker, make_launch):
        self.plan, self.walker = plan, walker
        walker.expected, walker.pinned = plan.described, plan.pinned
        self.inside = False
        self.launches: list = []
        self.launch_args: list = []
        self.versions: list = []  # (tensor, its version when a kernel stored into it)
        self.make_launch = make_launch  # (record, grid, index) -> a _launcher.Launch

    def launch(self, kernel, original, args, kwargs):
        import torch

        if kwargs.get("warmup", False) or not torch.is_grad_enabled():
            return self._run(kernel, original, args, kwargs)
        index = len(self.launches)
        records = self.plan.launches
        if index >= len(records) or records[index].kernel is not kernel:
            raise Diverged
        record = records[index]
        names = record.names
        if len(args) > len(names):
            raise Diverged
        bound = dict(zip(names, args))
        options = {}
        for key, value in kwargs.items():
            if key == "grid" or key == "warmup":
                continue
            if key in record.name_set:
                if key in bound:
                    raise Diverged
                bound[key] = value
            else:
                options[key] = value
        if options != record.options:
            raise Diverged
        self.check_versions()
        visit, tensor = self.walker.visit, torch.Tensor
        # (launch_part's form, made in one pass)
        part = tuple((n, "tensor", int, visit(v)) if isinstance(v, tensor) else
                     (n, "value", type(v), v) for n, v in bound.items())
        if part != record.part[1]:
            raise Diverged
        grid = kwargs.get("grid")
        compiled = record.compiled
        if compiled is not None:
            if record.filled is not None:
                launched = launched_as(kernel, bound)
                if launched is None or launched[2] != record.filled:
                    raise Diverged
                bound = launched[1]
            values = compiled.values(bound)
            if grid_now(grid, None if not callable(grid) else
                        dict(zip(compiled.names, values))) != compiled.grid:
                raise Diverged
        self.launches.append(self.make_launch(record, grid, index))
        self.launch_args.append(record.arguments)
        for name in record.stored:
            stored = bound[name]
            self.versions.append((stored, stored._version))
        if compiled is None:
            return self._run(kernel, original, args, kwargs)
        _launch_plan._run(compiled.kernel, compiled.grid, values)
        return compiled.kernel

    def check_versions(self) -> None:
        """Diverged where torch wrote into memory a kernel stored (a bumped version)."""
        for t, version in self.versions:
            if t._version != version:
                raise Diverged

    def finish(self, result) -> list:
        """Checks the end of the call (every launch made, the result as planned, no
        write into a kernel's output since); returns the result's tensors."""
        plan = self.plan
        if len(self.launches) != len(plan.launches):
            raise Diverged
        results = tensor_leaves(result)
        visit = self.walker.visit
        if tuple(visit(t) for t in results) != plan.result_part or \
                len(self.walker.described) != len(plan.described):
            raise Diverged
        self.check_versions()
        return results
