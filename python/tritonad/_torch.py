"""tritonad.autograd: a Triton kernel as a differentiable torch operation."""

from __future__ import annotations

from typing import Sequence

from tritonad._kernel_grad import kernel_grad, unwrap
from tritonad._source import constexpr_names, param_names


def autograd(kernel, outputs: Sequence[str], **grad_options):
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

    Keyword options are those of ``tritonad.grad`` (``pointers=``, ``mode=``).
    """
    import torch

    if isinstance(outputs, str):
        outputs = (outputs,)
    fn, _ = unwrap(kernel)
    names = param_names(fn)
    for name in outputs:
        if name not in names:
            raise ValueError(f"{fn.__name__} has no parameter {name!r} (parameters: {names})")
    backward_kernel = kernel_grad(kernel, **grad_options)
    return _DifferentiableKernel(kernel, backward_kernel, names, set(constexpr_names(fn)),
                                 tuple(outputs), torch)


class _DifferentiableKernel:
    def __init__(self, kernel, backward_kernel, names, constexprs, outputs, torch):
        self.kernel = kernel
        self.backward_kernel = backward_kernel
        self.names = names
        self.constexprs = constexprs
        self.outputs = outputs
        self._function = _make_function(torch)

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            return self._launch(grid, args, kwargs)
        return launch

    def _launch(self, grid, args, kwargs):
        import torch

        if len(args) > len(self.names):
            raise TypeError(f"too many arguments: the kernel takes {self.names}")
        bound = dict(zip(self.names, args))
        for key, value in kwargs.items():
            if key in bound:
                raise TypeError(f"argument {key!r} given twice")
            bound[key] = value
        differentiable = [n for n in self.backward_kernel.shadows
                          if n not in self.outputs and isinstance(bound.get(n), torch.Tensor)]
        values = [bound[n] for n in differentiable]
        results = self._function.apply(self, grid, bound, differentiable, *values)
        return results[0] if len(results) == 1 else results


def _make_function(torch):
    class KernelFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, op, grid, bound, differentiable, *values):
            ctx.op, ctx.grid, ctx.differentiable = op, grid, differentiable
            ctx.bound = dict(bound)
            ctx.save_for_backward(*values)
            op.kernel[grid](**bound)
            outs = tuple(bound[n] for n in op.outputs)
            ctx.mark_dirty(*[t for t in outs if any(t is v for v in values)])
            return outs

        @staticmethod
        def backward(ctx, *grads):
            op = ctx.op
            saved = ctx.saved_tensors
            bound = dict(ctx.bound)
            for name, value in zip(ctx.differentiable, saved):
                bound[name] = value
            shadows = op.backward_kernel.shadows
            arguments = dict(bound)
            arguments.update({shadow: None for shadow in shadows.values()})
            input_grads = {}
            for name, needs in zip(ctx.differentiable, ctx.needs_input_grad[4:]):
                if needs:
                    input_grads[name] = torch.zeros_like(bound[name])
                    arguments[shadows[name]] = input_grads[name]
            for name, grad in zip(op.outputs, grads):
                if name in shadows:
                    out = bound[name]
                    upstream = torch.zeros_like(out) if grad is None else \
                        torch.empty_like(out).copy_(grad)
                    arguments[shadows[name]] = upstream
            if input_grads:
                op.backward_kernel[ctx.grid](**arguments)
            return (None, None, None, None,
                    *[input_grads.get(name) for name in ctx.differentiable])

    return KernelFunction
