"""A first-order linear recurrence h_k = a_k h_{k-1} + b_k through
tl.associative_scan with the affine-map combiner, and its torch reference.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def affine_then(a_left, b_left, a_right, b_right):
    return a_left * a_right, a_right * b_left + b_right


@triton.jit
def recurrence_kernel(a_ptr, b_ptr, h_ptr, p_ptr, stride, n_cols, BLOCK: tl.constexpr,
                      REVERSE: tl.constexpr):
    # h_k = a_k h_{k-1} + b_k along each row (from the right when REVERSE), and the
    # running product of a
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    a = tl.load(a_ptr + row * stride + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + row * stride + cols, mask=mask, other=0.0)
    # (the masked tail is the identity map: a reverse scan meets it first)
    p, h = tl.associative_scan((tl.where(mask, tl.sigmoid(a), 1.0), b * b), axis=0,
                               combine_fn=affine_then, reverse=REVERSE)
    tl.store(h_ptr + row * stride + cols, h, mask=mask)
    tl.store(p_ptr + row * stride + cols, p, mask=mask)


def recurrence_reference(a, b, reverse):
    a, b = torch.sigmoid(a), b * b
    if reverse:
        a, b = a.flip(-1), b.flip(-1)
    h, p, hs, ps = torch.zeros_like(a[:, 0]), torch.ones_like(a[:, 0]), [], []
    for k in range(a.shape[-1]):
        h, p = a[:, k] * h + b[:, k], p * a[:, k]
        hs.append(h)
        ps.append(p)
    h, p = torch.stack(hs, -1), torch.stack(ps, -1)
    return (h.flip(-1), p.flip(-1)) if reverse else (h, p)
