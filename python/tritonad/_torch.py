"""tritonad.autograd: a Triton kernel as a differentiable torch operation."""

from __future__ import annotations

import ast
from typing import Sequence

from tritonad import _caches, _call_plan, _launch_plan, _owners
from tritonad._memory import storage_id, views_overlap
from tritonad._kernel_grad import (_PositionalLaunch, inner_arguments, kernel_grad,
                                   renamed_parameters, unwrap, user_grid)
from tritonad._forward_config import launched_as
from tritonad._partial import _on_device, _span, uninitialized
from tritonad._residuals import RESIDUALS, launch_forward, planned_forward
from tritonad._tuned_for_backward import tuned_for_backward
from tritonad._source import (bind_arguments, constexpr_names, function_def, param_names,
                              pointer_roles)


def autograd(kernel, outputs: Sequence[str], *, residuals: bool = True, **grad_options):
    """Wraps a forward kernel so its launch joins torch's autograd graph.

    ``f = tritonad.autograd(kernel, outputs=("out_ptr",))`` is launched exactly
    like ``kernel``: ``y = f[grid](w, x, out, m, n, BLOCK=32)`` runs the forward
    and returns the tensors passed for ``outputs`` (one tensor, or a tuple),
    carrying a ``grad_fn``. ``y.backward(g)`` runs the backward kernel that
    ``tritonad.grad(kernel)`` derives, with the same grid, and accumulates
    ``.grad`` of every tensor argument that requires it.

    Example::

        f = tritonad.autograd(gelu_kernel, outputs=("y_ptr",))
        x = torch.randn(1000, device="cuda", requires_grad=True)
        y = f[(triton.cdiv(1000, 256),)](x, torch.empty_like(x), 1000, BLOCK=256)
        y.sum().backward()          # x.grad now holds d(sum gelu(x))/dx

    Keyword options are those of ``tritonad.grad`` (``pointers=``, ``mode=``, ``wrt=``),
    and ``residuals``: with True (the default) the forward also saves, per
    program, the values the backward would otherwise recompute with a pass over
    memory (results of reductions and loops: a layer norm's statistics, a
    softmax's max and sum, attention's running statistics and accumulator), and
    the backward reads them; ``bwd.schedule()`` lists them. False recomputes
    them (no extra memory). Kernels wrapped in autotune or heuristics, and the
    CPU interpreter, always recompute.

    An output passed as None (as libraries pass an optional output, e.g. a final
    state that a constexpr flag stores only when given) comes back as None; the
    kernel must not store to it at that launch.

    Tensors may be strided views (e.g. a column slice of a wider tensor): the
    gradient buffers are laid out with the exact strides of the tensor they
    shadow, because the backward addresses them as the forward addressed it. A
    tensor argument that requires grad but that the kernel never mentions gets a
    zero gradient (it is never read). Refused at launch, with the parameter
    named: an input that requires grad and whose elements share memory (stride
    0, e.g. ``expand``: its gradient would have to be summed), an input that
    requires grad but that tritonad does not see the kernel load from, an input
    the kernel stores to that is not in ``outputs``.
    """
    import torch

    if isinstance(outputs, str):
        outputs = (outputs,)
    fn, _ = unwrap(kernel)
    names = param_names(fn)
    if not isinstance(outputs, (list, tuple)) or not all(isinstance(o, str) for o in outputs):
        raise TypeError(f"outputs must be the names of the pointer parameters "
                        f"{fn.__name__} stores its results through, e.g. outputs=('y_ptr',); "
                        f"got {outputs!r}")
    for name in outputs:
        if name not in names:
            raise ValueError(f"{fn.__name__} has no parameter {name!r} (parameters: {names})")
    # Fresh zeroed gradient buffers: the backward may overwrite instead of add.
    if not isinstance(residuals, bool):
        raise TypeError(f"residuals must be True (the forward saves values the backward "
                        f"reads) or False (the backward recomputes them), got {residuals!r}")
    backward_kernel = kernel_grad(kernel, accumulate=False, **grad_options)
    _check_outputs(fn, tuple(outputs), backward_kernel.pointer_roles, grad_options)
    residual_forward = getattr(backward_kernel, "residual_forward", None) if residuals else None
    return _DifferentiableKernel(kernel, backward_kernel, fn, tuple(outputs), grad_options,
                                 torch, residual_forward)


def _check_outputs(fn, outputs, roles, grad_options) -> None:
    """Refuses outputs= that would make a wrong graph: none named, a parameter
    that is not a pointer the kernel stores through (a leaf tensor it only
    loads would get a grad_fn, the gradients flowing to the real outputs would
    be lost), one it also loads through (in place)."""
    name = fn.__name__
    discovered = pointer_roles(fn)
    stored = [p for p, r in {**discovered, **roles}.items() if "store" in r]
    hint = f"the pointers tritonad sees {name} store through: {stored}"
    if not outputs:
        raise ValueError(f"outputs=() names no output of {name}: name the pointer parameters "
                         f"it stores its results through ({hint})")
    constexprs = set(constexpr_names(fn))
    for output in outputs:
        role = roles.get(output, discovered.get(output))
        if output in constexprs:
            raise ValueError(f"outputs names {output!r}, a tl.constexpr parameter of {name}: "
                             f"outputs are pointers it stores through ({hint})")
        if role is None:
            raise ValueError(
                f"outputs names {output!r}, but tritonad does not see {name} load or store "
                f"through it (not a pointer: an integer or scalar parameter?); outputs are "
                f"pointers it stores through ({hint}). If {output!r} is one, name the "
                f"kernel's pointers in pointers=(...)")
        if not role:  # (pointers= names it, its use is unclear: the core decides)
            continue
        if "store" not in role:
            raise ValueError(
                f"outputs names {output!r}, which {name} only loads from (an input: its "
                f"gradient comes back in .grad); outputs are pointers it stores through "
                f"({hint})")
        if "load" in role:
            raise ValueError(_in_place(name, output))
    duplicated = sorted({o for o in outputs if outputs.count(o) > 1})
    if duplicated:
        raise ValueError(f"outputs names {duplicated} more than once")


def _in_place(kernel_name: str, pointer: str) -> str:
    return (f"{kernel_name} loads and stores through {pointer!r} (in place): the backward "
            f"needs the values the forward overwrites, and autograd would not see the "
            f"change. Store the result through a separate output pointer (a new parameter, "
            f"given torch.empty_like(...) at the launch) and list that one in outputs=")


class _DifferentiableKernel:
    def __init__(self, kernel, backward_kernel, fn, outputs, grad_options, torch,
                 residual_forward=None):
        self.kernel = kernel
        self.residual_forward = residual_forward
        self.backward_kernel = backward_kernel
        self.name = fn.__name__
        self.names = param_names(fn)
        # (parameters named like launch keywords: the backward takes them renamed)
        self.renamed = renamed_parameters(self.names)
        self.constexprs = set(constexpr_names(fn))
        self.outputs = outputs
        self.grad_options = grad_options
        # (to tell a parameter the kernel never reads from one tritonad does not see read)
        self.mentioned = {n.id for n in ast.walk(function_def(fn)) if isinstance(n, ast.Name)}
        self.discovered = pointer_roles(fn)
        self._function = _make_function(torch)
        # (call plans: launches of a compiled kernel, through its autotune and
        # heuristics wrappers, parameters as named)
        from triton.runtime.jit import JITFunction
        self.wrapped = not isinstance(kernel, JITFunction)
        self.plannable = not self.renamed
        self.plans: dict = {}
        self.tritonad_name = _owners.unique_name(fn)
        _owners.register_owner(self.tritonad_name, self)

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            return self._launch(grid, args, kwargs)
        return launch

    def _launch(self, grid, args, kwargs):
        import torch

        if torch.compiler.is_dynamo_compiling():  # one custom operator (tritonad._compile)
            return _owners.compiled().launch_kernel(self.tritonad_name, grid, args, kwargs)
        bound = bind_arguments(self.names, args, kwargs)
        call = _Call(grid, bound, torch.is_grad_enabled())
        if self.plannable:
            call.key = self._key(call)
            plan = self.plans.get(call.key) if call.key is not None else None
            if plan is not None and plan.memory_apart(bound):
                call.plan, call.differentiable = plan, plan.differentiable
        if call.plan is None:
            call.differentiable, call.apart = self._checked(bound)
        values = [bound[n] for n in call.differentiable]
        results = self._function.apply(self, call, *values)
        return results[0] if len(results) == 1 else results

    def _key(self, call):
        """The call plan key of a call (None: not planned, or an autotuner wrapping
        the kernel has not chosen its config for these arguments yet)."""
        if not self.wrapped:
            return _call_plan.key_of(call.bound, call.grid, call.grad_enabled)
        launched = launched_as(self.kernel, call.bound)
        # (what the wrappers fill in is part of the key: an autotuner's cache may
        # be changed, e.g. cleared and tuned again)
        return None if launched is None else _call_plan.key_of(
            call.bound, call.grid, call.grad_enabled, *launched[1:])

    def _checked(self, bound):
        """Checks a call's arguments; returns the differentiable ones and the pairs of
        tensors the in-place check found apart (a call plan compares them again)."""
        import torch

        tensors = {n: v for n, v in bound.items() if isinstance(v, torch.Tensor)}
        for name in self.outputs:
            if name in bound and bound[name] is None:
                continue  # (not wanted: the kernel must not store to it; it comes back None)
            if name not in tensors:
                given = f"got {type(bound[name]).__name__}" if name in bound else "it is missing"
                raise TypeError(f"output {name!r} of {self.name}: pass the tensor the kernel "
                                f"stores into, or None where the kernel does not store to it "
                                f"at this launch ({given})")
            if overlaps(tensors[name]):
                raise ValueError(f"output {name!r} of {self.name}: its elements share memory "
                                 f"(strides {tensors[name].stride()}): pass a tensor that "
                                 "owns its elements, e.g. torch.empty(...)")
            if tensors[name].requires_grad and torch.is_grad_enabled():
                raise ValueError(
                    f"output {name!r} of {self.name} already requires grad (torch wrote into "
                    f"it from tensors that require grad, or it is a leaf that does): the "
                    f"kernel's node would replace that history, and the gradient through the "
                    f"elements the kernel does not store would be lost. Pass a tensor without "
                    f"history (torch.empty(...)) and combine it with the other values after "
                    f"the launch (torch.where, torch.cat), or store them in the kernel too")
        shadows = self.backward_kernel.shadows
        differentiable = [n for n, t in tensors.items() if n not in self.outputs and
                          (n in shadows or t.requires_grad)]
        for name in differentiable:
            self._check_input(name, tensors[name])
        apart = []
        if torch.is_grad_enabled() and any(tensors[n].requires_grad for n in differentiable):
            # (a graph node follows)
            apart = self._check_in_place(tensors)
        return differentiable, apart

    def _check_input(self, name, tensor):
        if not tensor.requires_grad:
            return
        fix = f"or pass {name}.detach() if it needs no gradient"
        if overlaps(tensor):
            raise ValueError(
                f"{name!r} of {self.name} requires grad but its elements share memory "
                f"(strides {tensor.stride()}, e.g. from expand): its gradient would have to "
                f"be summed over them; pass {name}.contiguous() (the sum flows back through "
                f"it) {fix}")
        roles = self.backward_kernel.pointer_roles.get(name)
        if roles is None and (name in self.mentioned or name in self.discovered):
            if "wrt" in self.grad_options and name in self.discovered:
                why, change = "wrt= leaves it out", "add it to wrt="
            elif "pointers" in self.grad_options:
                why, change = "pointers= leaves it out", "add it to pointers="
            else:
                why, change = ("tritonad does not see the kernel load through it",
                               "name the kernel's pointers in pointers=(...)")
            raise ValueError(f"{name!r} of {self.name} requires grad but the backward has no "
                             f"shadow for it ({why}): {change} {fix}")
        if roles and "load" in roles and "store" in roles:
            raise ValueError(f"{name!r} of {self.name} requires grad: "
                             f"{_in_place(self.name, name)}")
        if roles == {"store"}:
            raise ValueError(f"{name!r} of {self.name} requires grad but the kernel stores to "
                             f"it (in place, unknown to autograd): list it in outputs= {fix}")
        # roles is None, name never mentioned: the kernel never reads it, zero gradient.

    def _check_in_place(self, tensors):
        """Refuses a launch whose backward would read memory the forward
        overwrote: a floating-point tensor the kernel loads and stores through
        one pointer, or an output sharing memory with a tensor it loads (or
        with another output). Returns the pairs it compared, with their byte
        extents: (output, other, extent of the output, extent of the other)."""
        roles = {**self.discovered, **self.backward_kernel.pointer_roles}
        compared = []
        for name, tensor in tensors.items():
            role = roles.get(name) or ()
            if name not in self.outputs and tensor.is_floating_point() and \
                    "load" in role and "store" in role:
                raise ValueError(_in_place(self.name, name))
        for i, output in enumerate(self.outputs):
            if output not in tensors:  # (None: not stored at this launch)
                continue
            for name, tensor in tensors.items():
                if name == output or (name in self.outputs and
                                      self.outputs.index(name) < i):
                    continue
                other = tensors[output]
                if name not in self.outputs and "load" not in (roles.get(name) or ()) and \
                        not tensor.requires_grad:
                    continue
                if storage_id(tensor) == storage_id(other) and views_overlap(tensor, other):
                    what = "output" if name in self.outputs else "argument"
                    raise ValueError(
                        f"output {output!r} of {self.name} shares memory with {what} "
                        f"{name!r} (in place: the backward needs the values the forward "
                        f"overwrites, and each output needs its own gradient): pass a "
                        f"separate tensor for {output!r}, e.g. torch.empty_like({name})")
                compared.append((output, name, _call_plan.byte_extent(other),
                                 _call_plan.byte_extent(tensor)))
        return compared


def overlaps(t) -> bool:
    """Whether two elements of t may share memory (conservative: an interleaving of
    dimensions that does not overlap is still reported)."""
    extent = 1
    for stride, size in sorted((s, n) for n, s in zip(t.shape, t.stride()) if n > 1):
        if stride < extent:
            return True
        extent += (size - 1) * stride
    return False


def shadow_like(t, torch, upstream=None, empty=False, dtype=None):
    """Zeros (a copy of `upstream`; uninitialized with `empty`) laid out exactly as
    t, in its dtype (or `dtype`): the backward addresses a shadow with the strides the forward
    used for t (a contiguous buffer would be wrong for a view such as a column
    slice). The storage spans every address the strides reach."""
    make = torch.empty if empty else torch.zeros
    if t.is_contiguous():  # (not a view: autograd takes it as the .grad without a copy)
        buffer = make(t.shape, dtype=dtype or t.dtype, device=t.device)
    else:
        buffer = make(_span(t), dtype=dtype or t.dtype, device=t.device).as_strided(
            t.shape, t.stride())
    return buffer if upstream is None else buffer.copy_(upstream)


def _same_layout(grad, out) -> bool:
    """Whether the backward may read `grad` where it reads out's shadow."""
    return (grad.dtype == out.dtype and grad.device == out.device and
            grad.shape == out.shape and
            all(g == o for g, o, n in zip(grad.stride(), out.stride(), out.shape) if n > 1))


def _written_shadows(backward_kernel, grid, arguments):
    """The shadows the derived backward stores into, compiling it first (Triton's
    warmup derives without launching) when this process has not yet; None when
    that cannot be told (then every upstream gradient is copied)."""
    recorded = getattr(backward_kernel, "written_shadows", None)
    if recorded is None:
        return None
    written = recorded()
    if written is None:
        try:
            backward_kernel.warmup(grid=grid, **arguments)
        except Exception:  # noqa: BLE001  (an unusual wrapper: fall back to copies)
            return None
        written = recorded()
    return None if written is None else set(written)


class _Call:
    """One call of a differentiable kernel: its grid and arguments, the
    differentiable ones, its key and the call plan it replays (None: decided now;
    `apart`: the pairs the in-place check found apart; `grad_enabled`: torch's
    grad mode where the user called)."""

    __slots__ = ("grid", "bound", "grad_enabled", "differentiable", "key", "plan", "apart")

    def __init__(self, grid, bound, grad_enabled):
        self.grid, self.bound, self.grad_enabled = grid, bound, grad_enabled
        self.differentiable, self.key, self.plan, self.apart = (), None, None, ()


def _make_function(torch):
    class KernelFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, op, call, *values):
            bound = call.bound
            ctx.op, ctx.grid, ctx.differentiable = op, call.grid, call.differentiable
            # (the outputs are saved, not kept on ctx: their grad_fn is this node, and
            # a cycle through it would keep the graph alive until the collector runs)
            ctx.bound = {n: None if n in op.outputs else v for n, v in bound.items()}
            ctx.save_for_backward(*values, *(bound[n] for n in op.outputs))
            plan = call.plan
            if plan is not None:
                ctx.residuals = plan.forward(bound)
            else:
                forward = op.residual_forward.get() if op.residual_forward is not None else None
                renamed = op.renamed
                kernel = _PositionalLaunch(op.kernel, op.names, renamed) if renamed else op.kernel
                with tuned_for_backward(op.kernel, op.backward_kernel if op.wrapped else None):
                    ctx.residuals = launch_forward(
                        forward, kernel, user_grid(call.grid, renamed),
                        inner_arguments(bound, renamed, op.name),
                        [renamed.get(n, n) for n in op.names], by_memory=False)
                plan = _new_plan(op, call, forward)
            ctx.plan = plan
            outs = tuple(bound[n] for n in op.outputs)
            ctx.mark_dirty(*[t for t in outs if any(t is v for v in values)])
            return outs

        @staticmethod
        def backward(ctx, *grads):
            return first_order_only(torch, f"tritonad.autograd({ctx.op.name})",
                                    _kernel_backward, ctx, *grads)

    return KernelFunction


def _new_plan(op, call, forward):
    """The call plan of `call`'s key, after its deciding launch (None: not planned)."""
    if call.key is None and op.plannable and op.wrapped:  # (its autotuner chose now)
        call.key = op._key(call)
    if call.key is None:
        return None
    planned = planned_forward(forward, op.kernel, call.grid, call.bound, op.names)
    if planned is None:
        return None
    plan = _call_plan.CallPlan(call.differentiable, call.apart, planned)
    _caches.keep_newest(op.plans, call.key, plan, _call_plan.PLAN_LIMIT)
    return plan


def _kernel_backward(ctx, *grads):
    plan = ctx.plan
    if plan is not None:
        upstream_key = _call_plan.upstream_key(ctx.needs_input_grad, grads)
        step = plan.backwards.get(upstream_key)
        if step is not None:
            return _replay_backward(ctx, step, grads)
    results, step = _decide_backward(ctx, grads, collect=plan is not None)
    if plan is not None:
        plan.backwards[upstream_key] = step
    return results


def _replay_backward(ctx, step, grads):
    """A backward as `step` decided it for this call's key and upstream layouts."""
    import torch

    op = ctx.op
    bound = _saved_arguments(ctx)
    names = ctx.differentiable
    arguments = dict(bound)
    if ctx.residuals is not None:
        arguments[RESIDUALS] = ctx.residuals
    input_grads, widened = {}, []
    for name, shadow, empty, dtype in step.grads:
        input_grads[name] = shadow_like(bound[name], torch, empty=empty)
        if shadow is None:  # (never read by the kernel: a zero gradient)
            continue
        if dtype is None:
            arguments[shadow] = input_grads[name]
        else:
            arguments[shadow] = shadow_like(bound[name], torch, dtype=dtype)
            widened.append(name)
    for position, shadow, copied in step.upstream:
        grad = grads[position]
        arguments[shadow] = shadow_like(bound[op.outputs[position]], torch, grad) if copied \
            else grad
    with _on_device(step.device):
        step.launch.run(arguments, _no_marks)
    for name in widened:
        input_grads[name].copy_(arguments[op.backward_kernel.shadows[name]])
    return (None, None, *[input_grads.get(name) for name in names])


def _saved_arguments(ctx) -> dict:
    """The forward's arguments by name, its tensors as autograd saved them."""
    bound = dict(ctx.bound)
    for name, value in zip(list(ctx.differentiable) + list(ctx.op.outputs),
                           ctx.saved_tensors):
        bound[name] = value
    return bound


def _no_marks(names, arguments):
    """(A replayed backward's gradient buffers are its own: nothing to tell.)"""


def _decide_backward(ctx, grads, collect):
    """The backward of a call, deciding everything; with `collect`, also the
    BackwardStep that replays it (None where it cannot be replayed)."""
    import torch

    op = ctx.op
    bound = _saved_arguments(ctx)
    shadows = op.backward_kernel.shadows
    arguments = inner_arguments(dict(bound), op.renamed, op.name)
    arguments.update({shadow: None for shadow in shadows.values()})
    if ctx.residuals is not None:
        arguments[RESIDUALS] = ctx.residuals
    input_grads = {}
    launch_path = getattr(op.backward_kernel, "tritonad_launch_path", False)
    for name, needs in zip(ctx.differentiable, ctx.needs_input_grad[2:]):
        if needs:  # (no shadow: never read by the kernel, its gradient is zero)
            # Uninitialized: the launch zero-fills it unless the backward
            # stores every element (see _partial.uninitialized).
            input_grads[name] = shadow_like(bound[name], torch,
                                            empty=name in shadows and launch_path)
            if name in shadows:
                arguments[shadows[name]] = input_grads[name]
    if not any(name in shadows for name in input_grads):
        return (None, None, *[input_grads.get(name) for name in ctx.differentiable]), None
    upstream = {}
    for position, (name, grad) in enumerate(zip(op.outputs, grads)):
        if name in shadows and bound[name] is not None:  # (None: an output not wanted)
            upstream[shadows[name]] = (bound[name], grad, position)
    for shadow, (out, grad, _) in upstream.items():
        arguments[shadow] = grad
    written = _written_shadows(op.backward_kernel, ctx.grid, arguments)
    # f16/bf16 gradients that programs add into with atomics are summed in an fp32
    # buffer and rounded once, after the kernel.
    largest_output = max((bound[n].numel() for n in op.outputs
                          if isinstance(bound.get(n), torch.Tensor)), default=0)
    widened = {name: input_grads[name] for name in input_grads
               if name in shadows and input_grads[name].dtype in
               (torch.float16, torch.bfloat16) and
               shadows[name] in _added_atomically(op.backward_kernel,
                                                  bound[name].numel() * 8 <= largest_output)}
    for name in widened:
        input_grads[name] = shadow_like(bound[name], torch, dtype=torch.float32)
        arguments[shadows[name]] = input_grads[name]
    copied = set()
    for shadow, (out, grad, _) in upstream.items():
        # The upstream gradient is passed as it is unless the backward writes
        # into it (consumes it) or addresses it differently (dtype, strides).
        if grad is None or written is None or shadow in written or \
                not _same_layout(grad, out):
            arguments[shadow] = shadow_like(out, torch, grad)
            copied.add(shadow)
    garbage = [n for n in input_grads if n in shadows and launch_path and n not in widened]
    with uninitialized([input_grads[n] for n in garbage]), \
            _launch_plan.collecting_used() as used:
        op.backward_kernel[ctx.grid](**arguments)
    for name, grad in widened.items():
        input_grads[name] = grad.copy_(input_grads[name])
    results = (None, None, *[input_grads.get(name) for name in ctx.differentiable])
    launch = _call_plan.last_plan(used)
    if not collect or launch is None or op.renamed or \
            not _marks_every(launch, [shadows[n] for n in garbage]) or \
            any(grad is None for _, grad, _ in upstream.values()):
        return results, None
    made = tuple((name, shadows.get(name), name in garbage or name in widened,
                  torch.float32 if name in widened else None) for name in input_grads)
    step = _call_plan.BackwardStep(
        made, tuple((position, shadow, shadow in copied)
                    for shadow, (_, _, position) in upstream.items()),
        launch, _launch_plan.device_of(arguments).device)
    return results, step


def _marks_every(launch, names) -> bool:
    """Whether a recorded launch tells every uninitialized buffer in `names` that
    it holds its gradient (zero-filled or stored whole), as _partial.uninitialized
    would otherwise zero-fill one on exit."""
    marked = {name for step in launch.steps if step[0] == "mark" for name in step[1]}
    return set(names) <= marked


def _added_atomically(backward_kernel, shared=False) -> set:
    """The shadows the compiled backward adds into with atomics (its schedule); with
    `shared`, also those it adds into with atomics where the launch's strides and grid
    do not keep the programs' tiles disjoint (a tensor far smaller than the outputs, a
    weight shared by rows, whose programs then all add into it)."""
    describe = getattr(backward_kernel, "schedule", None)
    schedule = getattr(describe, "recorded", lambda: None)()
    if schedule is None:
        return set()
    shadows = getattr(backward_kernel, "shadows", {})
    strategies = {"atomic"} | ({"plain-when-disjoint", "overwrite-when-disjoint"}
                               if shared else set())
    return {shadows.get(e.subject, e.subject) for e in schedule.entries
            if e.kind == "shadow" and e.strategy in strategies}


def first_order_only(torch, label, backward, ctx, *grads):
    """Runs `backward` (first derivatives). Asked for a graph of it
    (create_graph=True: a gradient penalty, gradgradcheck), the gradients it
    returns hang on a node whose inputs are what they depend on (the saved
    tensors, the upstream gradients) and whose backward raises, naming
    `label`: their dependence is not derived, and taking them as constants
    would give a wrong second derivative without a word. (torch's
    once_differentiable looks at the upstream gradients only.)"""
    if not torch.is_grad_enabled():  # (a plain backward: no graph of it is made)
        return backward(ctx, *grads)
    with torch.no_grad():
        results = backward(ctx, *grads)
    dependencies = [t for t in list(ctx.saved_tensors) + list(grads)
                    if isinstance(t, torch.Tensor) and t.requires_grad]
    places = [i for i, r in enumerate(results) if isinstance(r, torch.Tensor)]
    if not dependencies or not places:
        return results
    message = (f"{label}: a second derivative was asked for (create_graph=True, e.g. a "
               f"gradient penalty or torch.autograd.gradgradcheck), but tritonad derives "
               f"first derivatives only: the gradient its backward returns is not itself "
               f"differentiable. Compute the second-order term another way (e.g. write the "
               f"first derivative as a kernel and differentiate that), or call backward "
               f"without create_graph=True")
    tied = _first_order_function(torch).apply(message, [results[i] for i in places],
                                               *dependencies)
    results = list(results)
    for i, t in zip(places, tied):
        results[i] = t
    return tuple(results)


_FIRST_ORDER = None


def _first_order_function(torch):
    global _FIRST_ORDER
    if _FIRST_ORDER is None:
        class FirstOrderOnly(torch.autograd.Function):
            @staticmethod
            def forward(ctx, message, values, *dependencies):
                ctx.message = message
                seen = set()
                outputs = []
                for value in values:  # (each output its own tensor)
                    outputs.append(value.clone() if id(value) in seen else value)
                    seen.add(id(value))
                return tuple(outputs)

            @staticmethod
            def backward(ctx, *grads):
                raise RuntimeError(ctx.message)

        _FIRST_ORDER = FirstOrderOnly
    return _FIRST_ORDER
