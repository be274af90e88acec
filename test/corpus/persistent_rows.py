"""Persistent row loops whose row strides are RUNTIME arguments, as the Triton tutorial's
fused softmax and Liger's kernels write them: a program walks rows pid, pid + P, ...
(P = tl.num_programs(0)) and addresses row r at `ptr + r * row_stride`. Each iteration
writes its own row where |row_stride| covers the row's extent; tritonad checks that at
each launch (the stride is not known before) and refuses a launch whose rows overlap.

``check_*`` launch one kernel through ``tritonad.autograd`` on fresh random rows of
strided views (odd widths, a row stride wider than the row) and return the largest
error of each gradient against fp64 torch, relative to its magnitude.
"""

import torch
import triton
import triton.language as tl

import tritonad


@triton.jit
def softmax_rows(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                 BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    """The tutorial's fused softmax, spelled as users copy it (fp32 math for any input)."""
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        row = tl.load(row_start_ptr + col_offsets, mask=mask, other=-float("inf")).to(tl.float32)
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        softmax_output = numerator / tl.sum(numerator, axis=0)
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        tl.store(output_row_start_ptr + col_offsets, softmax_output, mask=mask)


@triton.jit
def rms_norm_persistent(Y, Y_row_stride, X, X_row_stride, W, RSTD, n_rows, n_cols, eps,
                        BLOCK_SIZE: tl.constexpr, BLOCK_ROW: tl.constexpr):
    """Liger's persistent spelling: BLOCK_ROW rows per iteration, a grid of about one
    program per SM, the weight loaded once per program, fp32 math on any input dtype."""
    pid = tl.program_id(0)
    num_sms = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_SIZE)
    col_mask = cols < n_cols
    w = tl.load(W + cols, mask=col_mask, other=0.0).to(tl.float32)
    for start in range(pid * BLOCK_ROW, n_rows, num_sms * BLOCK_ROW):
        rows = start + tl.arange(0, BLOCK_ROW)
        mask = (rows < n_rows)[:, None] & col_mask[None, :]
        x = tl.load(X + rows[:, None] * X_row_stride + cols[None, :], mask=mask,
                    other=0.0).to(tl.float32)
        rstd = tl.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
        y = x * rstd[:, None] * w[None, :]
        tl.store(Y + rows[:, None] * Y_row_stride + cols[None, :], y.to(Y.dtype.element_ty),
                 mask=mask)
        tl.store(RSTD + rows, rstd, mask=rows < n_rows)


@triton.jit
def scaled_rows_blocked(Y, Y_row_stride, X, X_row_stride, W, n_rows, n_cols, rows_per_program,
                        BLOCK_SIZE: tl.constexpr):
    """Liger's other persistent spelling (its norms' backward kernels): a block of rows
    per program, the pointers advanced by the runtime row strides each iteration."""
    pid = tl.program_id(0)
    row_start = pid * rows_per_program
    row_end = min((pid + 1) * rows_per_program, n_rows)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    X += row_start * X_row_stride
    Y += row_start * Y_row_stride
    for _ in range(row_start, row_end):
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(Y + cols, x * w / (1.0 + tl.sum(x * x, axis=0)), mask=mask)
        X += X_row_stride
        Y += Y_row_stride


def _strided_rows(rows, cols, pad, dtype, device):
    """A (rows, cols) view of a (rows, cols + pad) buffer: its row stride is not its
    width. Values are fresh random numbers rounded to `dtype`."""
    base = torch.randn(rows, cols + pad, device=device).to(dtype)
    return base[:, :cols]


def _relative_errors(pairs):
    return {name: ((got.double() - want).abs().max() / want.abs().max()).item()
            for name, got, want in pairs}


def check_softmax(dtype, device, rows=37, cols=29, programs=4, pad=3):
    x = _strided_rows(rows, cols, pad, dtype, device).requires_grad_()
    out = _strided_rows(rows, cols, pad + 2, dtype, device)
    f = tritonad.autograd(softmax_rows, outputs=("output_ptr",))
    y = f[(programs,)](out, x, x.stride(0), out.stride(0), rows, cols,
                       BLOCK_SIZE=triton.next_power_of_2(cols), num_stages=2)
    upstream = torch.randn(rows, cols, device=device).to(dtype)
    y.backward(upstream)
    x64 = x.detach().double().requires_grad_()
    torch.softmax(x64, -1).backward(upstream.double())
    return _relative_errors([("x", x.grad, x64.grad)])


def check_rms_norm(dtype, device, rows=37, cols=29, programs=3, block_row=4, pad=5, eps=1e-6):
    x = _strided_rows(rows, cols, pad, dtype, device).requires_grad_()
    w = torch.randn(cols, device=device).to(dtype).requires_grad_()
    y = _strided_rows(rows, cols, 1, dtype, device)
    rstd = torch.empty(rows, device=device, dtype=torch.float32)
    f = tritonad.autograd(rms_norm_persistent, outputs=("Y", "RSTD"))
    y, rstd = f[(programs,)](y, y.stride(0), x, x.stride(0), w, rstd, rows, cols, eps,
                             BLOCK_SIZE=triton.next_power_of_2(cols), BLOCK_ROW=block_row)
    dy = torch.randn(rows, cols, device=device).to(dtype)
    drstd = torch.randn(rows, device=device)
    torch.autograd.backward([y, rstd], [dy, drstd])
    x64, w64 = (t.detach().double().requires_grad_() for t in (x, w))
    rstd64 = torch.rsqrt((x64 * x64).mean(-1) + eps)
    torch.autograd.backward([x64 * rstd64[:, None] * w64, rstd64], [dy.double(), drstd.double()])
    return _relative_errors([("x", x.grad, x64.grad), ("w", w.grad, w64.grad)])


def check_scaled_rows_blocked(dtype, device, rows=37, cols=29, programs=5, pad=3):
    x = _strided_rows(rows, cols, pad, dtype, device).requires_grad_()
    w = torch.randn(cols, device=device).to(dtype).requires_grad_()
    y = _strided_rows(rows, cols, pad + 1, dtype, device)
    f = tritonad.autograd(scaled_rows_blocked, outputs=("Y",))
    y = f[(programs,)](y, y.stride(0), x, x.stride(0), w, rows, cols,
                       triton.cdiv(rows, programs), BLOCK_SIZE=triton.next_power_of_2(cols))
    upstream = torch.randn(rows, cols, device=device).to(dtype)
    y.backward(upstream)
    x64, w64 = (t.detach().double().requires_grad_() for t in (x, w))
    (x64 * w64 / (1 + (x64 * x64).sum(-1, keepdim=True))).backward(upstream.double())
    return _relative_errors([("x", x.grad, x64.grad), ("w", w.grad, w64.grad)])


def launch_overlapping_softmax(device, rows=9, cols=29, output_row_stride=8):
    """The softmax launched with an output row stride smaller than the row: the rows it
    stores overlap (a later row overwrites part of an earlier one), which the backward
    cannot undo, so the launch must be refused (the caller checks the error)."""
    x = torch.randn(rows, cols, device=device).requires_grad_()
    out = torch.empty(rows, cols, device=device)
    f = tritonad.autograd(softmax_rows, outputs=("output_ptr",))
    y = f[(4,)](out, x, x.stride(0), output_row_stride, rows, cols, BLOCK_SIZE=32,
                num_stages=2)
    y.sum().backward()


def check_softmax_overlapping_input(device, rows=9, cols=29, input_row_stride=8, programs=4):
    """The backward (tritonad.grad) with input rows that overlap in memory (a sliding
    window): reading them is fine, and their gradient, which then sums over the rows
    sharing an element, takes the atomic branch of `plain when ..., else atomic`.
    Returns the error relative to fp64 torch."""
    flat = torch.randn(rows * input_row_stride + cols, device=device)
    window = (rows, cols), (input_row_stride, 1)
    out = torch.empty(rows, cols, device=device)
    softmax_rows[(programs,)](out, flat.as_strided(*window), input_row_stride, cols, rows,
                              cols, BLOCK_SIZE=32, num_stages=2)
    upstream = torch.randn(rows, cols, device=device)
    grad = torch.zeros_like(flat)
    tritonad.grad(softmax_rows)[(programs,)](
        out, flat.as_strided(*window), input_row_stride, cols, rows, cols, upstream.clone(),
        grad.as_strided(*window), BLOCK_SIZE=32, num_stages=2)
    flat64 = flat.double().requires_grad_()
    torch.softmax(flat64.as_strided(*window), -1).backward(upstream.double())
    return ((grad.double() - flat64.grad).abs().max() / flat64.grad.abs().max()).item()
