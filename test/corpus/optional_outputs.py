"""A kernel with an optional output, as libraries write them: a second result stored
only when a constexpr flag says the caller passed its buffer (fla's final states)."""

import triton
import triton.language as tl


@triton.jit
def scale_with_row_sums(x_ptr, y_ptr, sums_ptr, n_cols, BLOCK: tl.constexpr,
                        STORE_SUMS: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    y = tl.sin(x) * 1.5
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)
    if STORE_SUMS:
        tl.store(sums_ptr + row, tl.sum(y * x, axis=0))


@triton.jit
def scale_always_storing_sums(x_ptr, y_ptr, sums_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    y = tl.sin(x) * 1.5
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)
    tl.store(sums_ptr + row, tl.sum(y * x, axis=0))
