"""The classic example, end to end: ``python -m tritonad.demo``.

    fn1(x, y) = a * b + dot(c, c),  a = exp(x),  b = log(y[:, None]),  c = a + b

with x, y of shape (16,) and z of shape (16, 16). The forward kernel loads x and
y and stores z; the backward kernel loads x, y and the cotangent dz and stores
dx, dy computed by ``tritonad.grad(fn1)``. The derived TTIR is printed. With a
GPU both kernels run and the gradients are checked against torch.autograd;
without one the backward kernel is compiled to PTX for an sm_90 target.
"""

from __future__ import annotations

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


def torch_fn1(x, y):
    import torch

    a = torch.exp(x)
    b = torch.log(y[:, None])
    c = a + b
    return a * b + c @ c


def run_on_gpu() -> bool:
    import torch

    torch.manual_seed(0)
    n = 16
    x = torch.randn(n, device="cuda") * 0.5
    y = torch.rand(n, device="cuda") + 0.5
    z = torch.empty(n, n, device="cuda")
    fn1_forward[(1,)](x, y, z, N=n)
    dz = torch.randn(n, n, device="cuda")
    dx, dy = torch.empty_like(x), torch.empty_like(y)
    fn1_backward[(1,)](x, y, dz, dx, dy, N=n)

    xr, yr = x.clone().requires_grad_(), y.clone().requires_grad_()
    # tl.dot on fp32 is tf32 by default: compare with tf32 tolerances.
    zr = torch_fn1(xr, yr)
    dxr, dyr = torch.autograd.grad(zr, (xr, yr), dz)
    ok = True
    for name, got, want in (("z", z, zr), ("dx", dx, dxr), ("dy", dy, dyr)):
        err = ((got - want).abs().max() / want.abs().max()).item()
        good = err < 2e-2
        ok &= good
        print(f"{name}: max relative error vs torch {err:.2e} ({'ok' if good else 'MISMATCH'})")
    return ok


def compile_for_cpu() -> None:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature = {"X": "*fp32", "Y": "*fp32", "DZ": "*fp32", "DX": "*fp32", "DY": "*fp32",
                 "N": "constexpr"}
    compiled = triton.compile(ASTSource(fn1_backward, signature, {"N": 16}),
                              target=GPUTarget("cuda", 90, 32))
    print(f"No GPU here: compiled fn1_backward for sm_90 instead "
          f"({len(compiled.asm['ptx'])} bytes of PTX).")


def main() -> int:
    try:
        import torch
        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    ok = True
    if has_gpu:
        ok = run_on_gpu()
    else:
        compile_for_cpu()
    print("\nDerived TTIR of tritonad.grad(fn1):\n")
    print(fn1_vjp.derived_ir())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
