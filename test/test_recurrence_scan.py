"""First-order linear recurrences written as associative scans (Mamba-style selective
scans, decayed cumulative sums): ``tl.associative_scan((a, b), axis, combine)`` with
the affine-map combiner ``(a1, b1), (a2, b2) -> (a1 * a2, b1 * a2 + b2)`` computes
``h_k = a_k h_{k-1} + b_k``.

Its rule (AutoDiff/Rules/TritonRules.cpp, ``linearRecurrenceAdjoint``; lit:
AutoDiff/scan.mlir) runs the adjoint recurrence ``lambda_k = g_k + a_{k+1} lambda_{k+1}``
as a scan in the opposite direction over segments (no shift of ``a`` needed), then
``db = lambda`` and ``da_k = lambda_k h_{k-1}``, with ``h_{k-1}`` from a scan that carries
each segment's map without its last element. No division: a coefficient of 0 (a reset)
gets torch's gradient. The interpreter's check is ``linear_recurrence_scan`` in
interpret_checks/reductions.py; here, on the GPU, against torch.autograd of the loop.
"""

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

import triton.language as tl  # noqa: E402

from gpu_util import requires_gpu  # noqa: E402
from corpus.kernels import linear_recurrence_scan_kernel  # noqa: E402
from corpus.scans import affine_then  # noqa: E402


@triton.jit
def gated_scan_kernel(x_ptr, gate_ptr, h_ptr, stride, n_cols, BLOCK: tl.constexpr,
                      REVERSE: tl.constexpr):
    # h_k = sigmoid(gate_k) h_{k-1} + (1 - sigmoid(gate_k)) x_k, in fp32 whatever the
    # buffers hold
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    gate = tl.load(gate_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    a = tl.where(mask, tl.sigmoid(gate), 1.0)
    _, h = tl.associative_scan((a, (1.0 - a) * x), axis=0, combine_fn=affine_then,
                               reverse=REVERSE)
    tl.store(h_ptr + row * stride + cols, h.to(h_ptr.dtype.element_ty), mask=mask)


def _scan_reference(a, b, reverse):
    if reverse:
        a, b = a.flip(-1), b.flip(-1)
    h, out = torch.zeros_like(a[:, 0]), []
    for k in range(a.shape[-1]):
        h = a[:, k] * h + b[:, k]
        out.append(h)
    out = torch.stack(out, -1)
    return out.flip(-1) if reverse else out


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("reverse", [False, True])
def test_gated_scan_matches_torch(dtype, reverse):
    rows, cols = 13, 301
    x = torch.randn(rows, cols, device="cuda", dtype=dtype)
    gate = (torch.randn(rows, cols, device="cuda") * 3).to(dtype)
    up = torch.randn(rows, cols, device="cuda", dtype=dtype)
    bwd = tritonad.grad(gated_scan_kernel)
    dx, dgate = torch.zeros_like(x), torch.zeros_like(gate)
    bwd[(rows,)](x, gate, torch.empty_like(x), cols, cols, dx, dgate, up.clone(), BLOCK=512,
                 REVERSE=reverse)
    xd, gd = x.double().requires_grad_(), gate.double().requires_grad_()
    a = torch.sigmoid(gd)
    h = _scan_reference(a, (1 - a) * xd, reverse)
    want_x, want_gate = torch.autograd.grad(h, (xd, gd), up.double())
    tol = 1e-4 if dtype == torch.float32 else 2e-2
    for got, want in ((dx, want_x), (dgate, want_gate)):
        err = (got.double() - want).abs().max().item()
        assert err <= tol * max(1.0, want.abs().max().item()), err


@pytest.mark.gpu
@requires_gpu
def test_corpus_recurrence_with_resets_matches_torch():
    rows, cols = 7, 100
    a = torch.rand(rows, cols, device="cuda") * 0.5 + 0.5
    a[:, ::17] = 0.0  # resets: h restarts from b
    b = torch.randn(rows, cols, device="cuda")
    up = torch.randn(rows, cols, device="cuda")
    f = tritonad.autograd(linear_recurrence_scan_kernel, outputs=("h_ptr",))
    a.requires_grad_()
    b.requires_grad_()
    h = f[(rows,)](a, b, torch.empty_like(b), cols, cols, BLOCK=128)
    (h * up).sum().backward()
    ad, bd = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    want_a, want_b = torch.autograd.grad(_scan_reference(ad, bd, False), (ad, bd), up.double())
    assert (a.grad.double() - want_a).abs().max().item() <= 1e-4 * want_a.abs().max().item()
    assert (b.grad.double() - want_b).abs().max().item() <= 1e-4 * want_b.abs().max().item()
