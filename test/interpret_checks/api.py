"""The API around the derivation: tritonad.autograd and gradcheck, a heuristics
wrapper, the quickstart's examples, a kernel calling a VJP, errors located at the
user's line.
"""

import os

import torch
import triton

import tritonad
from corpus import kernels as K
from interpret_checks import check
from interpreter_util import GEN, assert_close, kernel_gradients, randn
from corpus.atomics import atomic_max_kernel
from corpus.small_kernels import cube_slope_kernel, scale_heuristic_kernel

_TEST = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@check("autograd_gelu")
def _():
    gelu = tritonad.autograd(K.gelu_kernel, outputs=("y_ptr",))
    n = 301
    x = randn(n).requires_grad_()
    y = gelu[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, torch.empty(n), n, BLOCK=64)
    upstream = randn(n)
    y.backward(upstream)
    reference = x.detach().double().requires_grad_()
    torch.nn.functional.gelu(reference).backward(upstream.double())
    assert_close("x", x.grad, reference.grad, 1e-5, 1e-6)
    # float64 through torch.autograd.gradcheck (small: each probe is a launch)
    x64 = torch.randn(7, dtype=torch.float64, generator=GEN, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda t: gelu[(1,)](t, torch.empty(7, dtype=torch.float64), 7, BLOCK=8), (x64,))


@check("launcher_replays")
def _():
    # A decorated launcher's later calls replay the first one's plan (launches checked
    # as they come, the backward's buffers and launches as decided), the derived
    # backwards interpreted; each call's gradients its own.
    from corpus.launchers import scale_then_mul

    f = tritonad.autograd(scale_then_mul)
    for n in (301, 301, 301, 190):
        x, w = randn(n).requires_grad_(), randn(n).requires_grad_()
        y, _ = f(x, w)
        upstream = randn(n)
        y.backward(upstream)
        assert_close("x", x.grad, 3.0 * w.detach().double() * upstream.double(), 1e-5, 1e-6)
        assert_close("w", w.grad, 3.0 * x.detach().double() * upstream.double(), 1e-5, 1e-6)
    plans = f.tritonad_launcher.plans
    assert len(plans) == 2, plans
    (step,) = next(iter(plans.values())).backwards.values()
    assert step.replayed and len(step.launches) == 2


@check("heuristics_wrapper")
def _():
    n = 301
    x = randn(n)
    bwd = tritonad.grad(scale_heuristic_kernel)
    dx, dy = torch.zeros(n), randn(n)
    bwd[(triton.cdiv(n, 64),)](x, torch.empty(n), n, 1.5, dx, dy)
    assert_close("x", dx, 1.5 * torch.cos(x.double()) * dy.double(), 1e-5, 1e-6)
    assert "64" in bwd.source()  # the block the heuristic chose is compiled in


@check("errors_stay_located")
def _():
    import inspect

    bwd = tritonad.grad(atomic_max_kernel)
    lines, first = inspect.getsourcelines(atomic_max_kernel.fn)
    line = first + next(i for i, text in enumerate(lines) if "tl.atomic_max" in text)
    try:
        bwd[(1,)](torch.zeros(8), torch.zeros(1), 8, torch.zeros(8), torch.ones(1), BLOCK=8)
    except tritonad.DifferentiationError as error:
        assert f"atomics.py:{line}:" in str(error), str(error)
        assert "tl.atomic_max" in str(error), str(error)
    else:
        raise AssertionError("no DifferentiationError")


@check("quickstart_examples")
def _():
    import re
    import runpy
    import tempfile

    path = os.path.join(os.path.dirname(_TEST), "docs", "quickstart.md")
    with open(path) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) >= 5, path
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "quickstart.py")
        with open(script, "w") as f:
            f.write("\n".join(blocks))
        runpy.run_path(script, run_name="__main__")


@check("kernel_calling_a_vjp")
def _():
    # y = d(x^3)/dx = 3x^2 through the VJP, then the kernel's backward: 6x
    n = 101
    x = randn(n)
    kernel_gradients(cube_slope_kernel, (triton.cdiv(n, 32),), {"x_ptr": x},
                     {"y_ptr": torch.empty(n)}, {"n": n}, {"BLOCK": 32},
                     lambda x_ptr: {"y_ptr": 3 * x_ptr * x_ptr})
