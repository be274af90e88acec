"""GPU helpers shared by tests.

``requires_gpu`` is a skipif mark: apply it (together with ``@pytest.mark.gpu``)
to tests that launch kernels. It skips when torch is not installed or when torch
sees no CUDA device. Below it, helpers that compare GPU gradients with fp64 torch.
"""

import pytest


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    try:
        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001  (broken driver installs raise here)
        return False


def _skip_reason() -> str:
    try:
        import torch  # noqa: F401
    except ImportError:
        return "needs torch (not installed)"
    return "needs a CUDA GPU (torch.cuda.is_available() is False)"


HAS_CUDA = cuda_available()

requires_gpu = pytest.mark.skipif(not HAS_CUDA, reason=_skip_reason() if not HAS_CUDA else "")


# -- comparing GPU gradients with fp64 torch ----------------------------------

def make_generator(*key):
    """A CUDA generator seeded from the test's name and parameters (each test draws
    its own inputs); TRITONAD_TEST_SEED=<n> changes every seed."""
    import os
    import zlib

    import torch

    seed = zlib.crc32(repr(key).encode()) ^ int(os.environ.get("TRITONAD_TEST_SEED", "0"))
    return torch.Generator(device="cuda").manual_seed(seed)


def randn(gen, *shape, dtype=None, scale=1.0):
    """Normal samples on the GPU from `gen`, scaled, then cast to `dtype` (fp32)."""
    import torch

    return (torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32)
            * scale).to(dtype or torch.float32)


def assert_near(name, got, want, tol):
    """|got - want| <= tol * max|want| * (1 + |want| / max|want|), elementwise:
    torch.testing.assert_close with atol = rtol * max|want| = tol * max|want|."""
    import torch

    assert torch.isfinite(got).all(), f"{name}: non-finite values"
    want = want.double()
    scale = max(want.abs().max().item(), 1e-30)
    torch.testing.assert_close(got.double(), want, atol=tol * scale, rtol=tol,
                               msg=lambda m: f"{name} (max|ref| {scale:.3g}): {m}")


def reference_grads(fn, inputs, upstreams):
    """Gradients of sum_k sum(fn(*inputs)[k] * upstreams[k]), in float64."""
    import torch

    leaves = [t.detach().double().requires_grad_() for t in inputs]
    outs = fn(*leaves)
    total = sum((o * u.double()).sum() for o, u in zip(outs, upstreams) if u is not None)
    return outs, torch.autograd.grad(total, leaves, allow_unused=True)


def causal_attention_errors(q, k, v, out, do):
    """max |grad - reference| / max |reference| of the gradients of `out` (causal
    softmax(q k^T / sqrt(D)) v over (heads, L, D) tensors) for q, k, v, against
    torch.autograd in float64."""
    import torch

    got = torch.autograd.grad(out, (q, k, v), do)
    length, head_dim = q.shape[-2], q.shape[-1]
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    scores = (leaves[0] @ leaves[1].transpose(1, 2)) * head_dim ** -0.5
    causal = torch.ones(length, length, device=q.device).tril() == 0
    want = torch.autograd.grad(torch.softmax(scores.masked_fill(causal, float("-inf")), -1) @
                               leaves[2], leaves, do.double())
    return [((g.double() - w).abs().max() / w.abs().max()).item() for g, w in zip(got, want)]


def captured(step):
    """`step` captured in a CUDA graph, after a warm-up on a side stream (as torch's
    documentation does: the first runs allocate and decide, outside the capture)."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph
