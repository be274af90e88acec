"""accumulate=False (fresh zeroed gradient buffers) and the zero-copy torch bridge.

CPU: the schedule says `overwrite` exactly where each element has one writer, the
written shadows are reported, the option reaches Triton's cache key. GPU: the
gradients equal torch.autograd's, and the bridge neither copies nor changes an
upstream gradient the backward only reads.
"""

import os
import sys

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

sys.path.insert(0, os.path.dirname(__file__))
from gpu_util import requires_gpu  # noqa: E402
from compile_util import compile_backward, parse_schedule  # noqa: E402
from corpus.user_kernels import CASES, gelu_kernel, layer_norm_kernel, overwrite_kernel  # noqa: E402


pytestmark = pytest.mark.usefixtures("always_compile")


def derive(name, **options):
    kernel, types, constexprs, none = CASES[name]
    bwd = tritonad.grad(kernel, **options)
    compile_backward(bwd, types, constexprs, none=[n for n in none if n in bwd.launch_signature])
    return bwd


def test_elementwise_overwrites_only_when_asked():
    assert parse_schedule(derive("gelu").schedule())["x_ptr"].startswith("plain (")
    fresh = derive("gelu", accumulate=False)
    assert parse_schedule(fresh.schedule())["x_ptr"].startswith("overwrite (")
    assert fresh.written_shadows() == ["dx_ptr"]
    assert "dx_ptr" not in [s for s in fresh.written_shadows() if s == "dy_ptr"]


def test_shared_weights_are_overwritten_only_by_a_lone_program():
    # W and B are read by every row program: overwritten only when the grid has
    # one program (checked at run time), atomics otherwise.
    schedule = parse_schedule(derive("layer_norm", accumulate=False).schedule())
    assert schedule["X"].startswith("overwrite")
    for ptr in ("W", "B"):
        assert schedule[ptr].startswith("overwrite when") and "else atomic" in schedule[ptr]


def test_loop_over_distinct_blocks_overwrites():
    # Each iteration of the column loop reads its own block: one write per element.
    # (A loop re-reading the same addresses accumulates: lit kernel-overwrite.mlir.)
    schedule = parse_schedule(derive("sum_loop", accumulate=False).schedule())
    assert schedule["x_ptr"].startswith("overwrite"), schedule


def test_consumed_output_shadow_is_reported():
    bwd = tritonad.grad(overwrite_kernel, accumulate=False)
    compile_backward(bwd, dict(x_ptr="*fp32", y_ptr="*fp32", n="i32"), dict(BLOCK=128))
    assert "dy_ptr" in bwd.written_shadows()  # read, then zeroed where overwritten


def test_accumulate_is_validated_and_in_the_cache_key():
    with pytest.raises(TypeError, match="accumulate"):
        tritonad.grad(gelu_kernel, accumulate="no")
    a = tritonad.grad(gelu_kernel)
    b = tritonad.grad(gelu_kernel, accumulate=False)
    assert "accumulate=True" in a.src and "accumulate=False" in b.src


@pytest.mark.gpu
@requires_gpu
def test_overwrite_gradients_match_torch():
    M, N = 37, 300
    x = torch.randn(M, N, device="cuda", requires_grad=True)
    w = torch.randn(N, device="cuda", requires_grad=True)
    b = torch.randn(N, device="cuda", requires_grad=True)
    y = torch.nn.functional.layer_norm(x, (N,), w, b, eps=1e-5)
    dy = torch.randn_like(y)
    y.backward(dy)
    grads = [torch.zeros_like(t) for t in (x, w, b)]
    bwd = tritonad.grad(layer_norm_kernel, accumulate=False)
    mean, rstd = torch.empty(M, device="cuda"), torch.empty(M, device="cuda")
    bwd[(M,)](x.detach(), w.detach(), b.detach(), torch.empty_like(x), mean, rstd,
              x.stride(0), N, 1e-5, *grads, dy.clone(), None, None, BLOCK_N=512)
    for got, t in zip(grads, (x, w, b)):
        torch.testing.assert_close(got, t.grad, rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
@requires_gpu
def test_bridge_reads_the_upstream_gradient_without_copying_it(monkeypatch):
    gelu = tritonad.autograd(gelu_kernel, outputs=("y_ptr",))
    n = 5000
    x = torch.randn(n, device="cuda", requires_grad=True)
    y = gelu[(triton.cdiv(n, 256),)](x, torch.empty_like(x), n, BLOCK=256)
    g = torch.randn(n, device="cuda")
    before = g.clone()
    copies = []
    import tritonad._torch as bridge
    original = bridge.shadow_like
    monkeypatch.setattr(bridge, "shadow_like",
                        lambda t, torch_, upstream=None, empty=False:
                        copies.append(upstream is not None) or original(t, torch_, upstream,
                                                                         empty))
    y.backward(g)
    assert not any(copies)  # only the input gradient was allocated
    assert torch.equal(g, before)
    torch.testing.assert_close(x.grad, torch.func.vjp(
        lambda t: torch.nn.functional.gelu(t), x.detach())[1](g)[0], rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
@requires_gpu
def test_bridge_copies_an_upstream_gradient_the_backward_consumes():
    op = tritonad.autograd(overwrite_kernel, outputs=("y_ptr",))
    n = 1000
    x = torch.randn(n, device="cuda", requires_grad=True)
    y = op[(triton.cdiv(n, 128),)](x, torch.empty_like(x), n, BLOCK=128)
    g = torch.randn(n, device="cuda")
    before = g.clone()
    y.backward(g)
    assert torch.equal(g, before)  # the consumed shadow was a copy
    torch.testing.assert_close(x.grad, 3.0 * g)
