"""Small kernels of one feature each: a heuristics wrapper, f16 products summed in
a loop, a product tl.reduce, a kernel calling a VJP.
"""

import triton
import triton.language as tl

import tritonad


@triton.heuristics({"BLOCK": lambda args: 32 if args["n"] < 100 else 64})
@triton.jit
def scale_heuristic_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, alpha * tl.sin(tl.load(x_ptr + offs, mask=mask)), mask=mask)


@triton.jit
def f16_products_summed(x_ptr, w_ptr, out_ptr, n_blocks, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r)  # f16, read by every iteration
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(n_blocks):
        acc += (x * tl.load(w_ptr + i * BLOCK + r)).to(tl.float32)  # f16 products
    tl.store(out_ptr + r, acc)


@triton.jit
def _multiply(a, b):
    return a * b


@triton.jit
def row_product_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=1.0)
    tl.store(out_ptr + row, tl.reduce(x, 0, _multiply))


@triton.jit
def _cube(x):
    return x * x * x


_cube_vjp = tritonad.grad(_cube)


@triton.jit
def cube_slope_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, _cube_vjp(x, tl.full((BLOCK,), 1.0, tl.float32)), mask=mask)
