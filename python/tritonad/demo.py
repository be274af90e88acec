"""``python -m tritonad.demo``: derive gradients of Triton code and check them
against torch.autograd.

On a GPU the kernels run there. Without one, the demo runs itself again under
Triton's CPU interpreter (``TRITON_INTERPRET=1``, CPU tensors): the same
derivation, the derived code run as Python. Each check prints its error; the
exit status is 0 when every gradient matches, 1 otherwise.

1. ``tritonad.grad(fn1)``: the vector-Jacobian product of a device function,
   called from a backward kernel written by hand::

       fn1(x, y) = a * b + dot(c, c),  a = exp(x),  b = log(y[:, None]),  c = a + b

2. A row-wise RMS norm kernel whose weight every program reads: its gradients
   through ``tritonad.autograd`` (the kernel as a torch op), and through the
   backward kernel ``tritonad.grad(rms_norm)`` launched by hand, whose schedule
   (how each gradient is written) is printed. fp32, and bf16 on a GPU (Triton
   3.6's interpreter computes bf16 wrongly).

Inputs are fresh random numbers each run; ``--seed N`` repeats a run.
"""

from __future__ import annotations

import argparse
import os
import random
import sys

import triton
import triton.language as tl

import tritonad


@triton.jit
def fn1(x, y):
    a = tl.exp(x)
    b = tl.log(tl.expand_dims(y, 1))
    c = a + b
    return a * b + tl.dot(c, c)


fn1_vjp = tritonad.grad(fn1)


@triton.jit
def fn1_forward(X, Y, Z, N: tl.constexpr):
    r = tl.arange(0, N)
    z = fn1(tl.load(X + r), tl.load(Y + r))
    tl.store(Z + r[:, None] * N + r[None, :], z)


@triton.jit
def fn1_backward(X, Y, DZ, DX, DY, N: tl.constexpr):
    r = tl.arange(0, N)
    dz = tl.load(DZ + r[:, None] * N + r[None, :])
    dx, dy = fn1_vjp(tl.load(X + r), tl.load(Y + r), dz)
    tl.store(DX + r, dx)
    tl.store(DY + r, dy)


@triton.jit
def rms_norm(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * n_cols + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


rms_norm_op = tritonad.autograd(rms_norm, outputs=("y_ptr",))
rms_norm_backward = tritonad.grad(rms_norm)


class Report:
    """Prints each comparison; remembers whether all matched."""

    def __init__(self):
        self.ok = True

    def compare(self, what, got, want, tolerance):
        # The error relative to the largest reference value: an element near 0
        # has no meaningful relative error of its own.
        error = ((got.double() - want).abs().max() / want.abs().max()).item()
        good = error <= tolerance
        self.ok &= good
        print(f"  {what:<44} max error / max |torch| = {error:.1e} "
              f"(<= {tolerance:.0e}: {'ok' if good else 'MISMATCH'})")


def check_fn1(torch, device, interpreted, report):
    n = 16
    x = torch.randn(n, device=device) * 0.5
    y = torch.rand(n, device=device) + 0.5
    z = torch.empty(n, n, device=device)
    fn1_forward[(1,)](x, y, z, N=n)
    dz = torch.randn(n, n, device=device)
    dx, dy = torch.empty_like(x), torch.empty_like(y)
    fn1_backward[(1,)](x, y, dz, dx, dy, N=n)

    xr = x.double().requires_grad_()
    yr = y.double().requires_grad_()
    a = torch.exp(xr)
    b = torch.log(yr[:, None])
    c = a + b
    zr = a * b + c @ c
    dxr, dyr = torch.autograd.grad(zr, (xr, yr), dz.double())
    # The interpreter computes tl.dot in fp32; a GPU in tf32 (Triton's default
    # for fp32 operands: a 10-bit mantissa).
    tolerance = 1e-5 if interpreted else 2e-2
    print("fn1: tritonad.grad of a device function (16 x 16, fp32)")
    for name, got, want in (("z (the forward)", z, zr), ("dx", dx, dxr), ("dy", dy, dyr)):
        report.compare(name, got, want.detach(), tolerance)


def check_rms_norm(torch, device, dtype, report):
    rows, cols, eps = 37, 100, 1e-5
    x = torch.randn(rows, cols, device=device).to(dtype)
    w = (torch.rand(cols, device=device) + 0.5).to(dtype)
    dy = torch.randn(rows, cols, device=device).to(dtype)

    xr = x.double().requires_grad_()
    wr = w.double().requires_grad_()
    yr = xr * torch.rsqrt((xr * xr).mean(dim=1, keepdim=True) + eps) * wr
    yr.backward(dy.double())

    # Each output rounds to the dtype once; fp32 adds the GPU's approximate
    # sqrt and division, and a sum over the rows for dw.
    tolerance = 1e-4 if dtype == torch.float32 else 2e-2
    name = str(dtype).replace("torch.", "")
    print(f"rms_norm: a kernel's gradients ({rows} x {cols}, {name})")

    x_op = x.clone().requires_grad_()
    w_op = w.clone().requires_grad_()
    y = rms_norm_op[(rows,)](x_op, w_op, torch.empty_like(x), cols, eps,
                             BLOCK=triton.next_power_of_2(cols))
    y.backward(dy)
    report.compare("y (the forward)", y, yr.detach(), tolerance)
    report.compare("dx through tritonad.autograd", x_op.grad, xr.grad, tolerance)
    report.compare("dw through tritonad.autograd", w_op.grad, wr.grad, tolerance)

    dx, dw = torch.zeros_like(x), torch.zeros_like(w)
    rms_norm_backward[(rows,)](x, w, torch.empty_like(x), cols, eps, dx, dw, dy,
                               BLOCK=triton.next_power_of_2(cols))
    report.compare("dx through tritonad.grad", dx, xr.grad, tolerance)
    report.compare("dw through tritonad.grad", dw, wr.grad, tolerance)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tritonad.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, help="repeat a run (default: a fresh seed)")
    args = parser.parse_args(argv)

    import torch

    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    if not interpreted and not torch.cuda.is_available():
        # Triton decides between compiling and interpreting when a kernel is
        # defined, and triton.language at import: only a fresh process switches.
        print("No CUDA GPU: running the demo under Triton's CPU interpreter "
              "(TRITON_INTERPRET=1).\n", flush=True)
        os.environ["TRITON_INTERPRET"] = "1"
        command = [sys.executable, "-m", "tritonad.demo", *(argv if argv is not None
                                                             else sys.argv[1:])]
        os.execv(sys.executable, command)

    seed = args.seed if args.seed is not None else random.randrange(2**31)
    torch.manual_seed(seed)
    device = "cpu" if interpreted else "cuda"
    where = ("the CPU, in Triton's interpreter" if interpreted else
             torch.cuda.get_device_name())
    print(f"tritonad {tritonad.__version__}, triton {triton.__version__}, torch "
          f"{torch.__version__}: gradients against torch.autograd (fp64) on {where}; "
          f"seed {seed}\n")

    report = Report()
    check_fn1(torch, device, interpreted, report)
    dtypes = [torch.float32] if interpreted else [torch.float32, torch.bfloat16]
    for dtype in dtypes:
        check_rms_norm(torch, device, dtype, report)

    print("\nHow the backward of rms_norm writes each gradient (bwd.schedule()):")
    print(rms_norm_backward.schedule())
    print("The derivative of fn1 as Triton Python (fn1_vjp.source()):")
    print(fn1_vjp.source())
    print("all gradients match" if report.ok else
          f"MISMATCH: some gradients differ from torch.autograd (seed {seed})")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
