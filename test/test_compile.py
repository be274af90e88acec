"""torch.compile(fullgraph=True) through tritonad ops: the kernel bridge
(``tritonad.autograd(kernel, outputs=...)``) and differentiable launchers
(``tritonad.autograd(launcher)``) trace with no graph break, forward and
backward, with static and dynamic shapes, and give eager's numbers.

CPU tests use the interpreter fixture of test_launcher (forward kernels in
Triton's interpreter, torch stand-ins for the derived backward kernels) under
the aot_eager backend (Dynamo + AOTAutograd: fake tensors, the custom
operators' fake implementations, the autograd formula). GPU tests (marked
``gpu``) train a small model with Inductor against eager torch.
"""

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

import triton.language as tl  # noqa: E402,F401

from gpu_util import requires_gpu  # noqa: E402
from corpus.kernels import gelu_kernel  # noqa: E402
from corpus.launchers import (layer_norm_kernel, linear, matmul_one_config,  # noqa: E402
                              mul_heuristic_kernel, scale_kernel)
from launcher_util import (StandIn, _gelu_vjp, _layer_norm_vjp, _matmul_vjp,  # noqa: E402,F401
                           interpreted)  # (interpreted: a fixture)
from tritonad._compile import CompileError  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


class _Counter:
    """A backend that counts graphs and runs them as AOTAutograd would."""

    def __init__(self):
        from torch._dynamo.backends.common import aot_autograd

        self.graphs = 0
        self.backend = aot_autograd(fw_compiler=self._count, bw_compiler=self._count_bw)
        self.backward_graphs = 0

    def _count(self, gm, example_inputs):
        from functorch.compile import make_boxed_func

        self.graphs += 1
        self.forward_code = gm.code
        return make_boxed_func(gm.forward)

    def _count_bw(self, gm, example_inputs):
        from functorch.compile import make_boxed_func

        self.backward_graphs += 1
        self.backward_code = gm.code
        return make_boxed_func(gm.forward)

    def __call__(self, gm, example_inputs):
        return self.backend(gm, example_inputs)


def _bridge_ops(log):
    gelu = tritonad.autograd(gelu_kernel, outputs=("y_ptr",))
    gelu.backward_kernel = StandIn(gelu.backward_kernel, _gelu_vjp, log)
    layer_norm = tritonad.autograd(layer_norm_kernel, outputs=("y_ptr",))
    layer_norm.backward_kernel = StandIn(layer_norm.backward_kernel, _layer_norm_vjp, log)
    return gelu, layer_norm


class _Model(torch.nn.Module):
    """linear (decorated launcher) -> gelu (bridge, grid of META) -> layer norm
    (bridge, tuple grid) -> linear."""

    def __init__(self, gelu, layer_norm, lin, d_in=12, d_hidden=20, d_out=6, dtype=None,
                 device=None):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        make = lambda *shape: torch.nn.Parameter(  # noqa: E731
            (torch.randn(*shape, generator=g) / shape[-1] ** 0.5).to(device=device, dtype=dtype))
        self.w1, self.b1 = make(d_hidden, d_in), make(d_hidden)
        self.ln_w, self.ln_b = make(d_hidden), make(d_hidden)
        self.w2, self.b2 = make(d_out, d_hidden), make(d_out)
        self.gelu, self.layer_norm, self.lin = gelu, layer_norm, lin
        self.block_n = triton.next_power_of_2(d_hidden)   # (one program per row)

    def forward(self, x):
        h = self.lin(x, self.w1, self.b1)
        n = h.numel()
        h = self.gelu[lambda META: (triton.cdiv(n, META["BLOCK"]),)](h, torch.empty_like(h), n,
                                                                      BLOCK=64)
        rows, cols = h.shape
        h = self.layer_norm[(rows,)](h, self.ln_w, self.ln_b, torch.empty_like(h), h.stride(0),
                                     cols, 1e-5, BLOCK_N=self.block_n)
        return self.lin(h, self.w2, self.b2)


def _reference(model, x):
    h = torch.nn.functional.gelu(x @ model.w1.T + model.b1)
    h = torch.nn.functional.layer_norm(h, (h.shape[1],), model.ln_w, model.ln_b, 1e-5)
    return h @ model.w2.T + model.b2


# ---------------------------------------------------------------------------
# CPU
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dynamic", [False, True])
def test_model_of_tritonad_ops_compiles_in_one_graph(interpreted, dynamic):
    gelu, layer_norm = _bridge_ops(interpreted)
    lin = tritonad.autograd(lambda x, w, b: linear(x, w, b, kernel=matmul_one_config))
    model = _Model(gelu, layer_norm, lin)
    counter = _Counter()
    compiled = torch.compile(model, fullgraph=True, backend=counter, dynamic=dynamic)
    for rows in (5, 9):   # a second shape: recompiles (static) or reuses (dynamic)
        x = torch.randn(rows, 12)
        out = compiled(x)
        ref = _reference(model, x)
        torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
        grads = torch.autograd.grad(out.square().sum(), list(model.parameters()))
        refs = torch.autograd.grad(ref.square().sum(), list(model.parameters()))
        for got, want in zip(grads, refs):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert counter.graphs == (1 if dynamic else 2) and counter.backward_graphs == counter.graphs
    # The tritonad ops are custom operators of the graphs, forward and backward.
    assert counter.forward_code.count("tritonad.launch.default") == 4
    assert counter.backward_code.count("tritonad.launch_backward.default") == 4


def test_compiled_training_matches_eager(interpreted):
    gelu, layer_norm = _bridge_ops(interpreted)
    lin = tritonad.autograd(lambda x, w, b: linear(x, w, b, kernel=matmul_one_config))
    eager = _Model(gelu, layer_norm, lin)
    compiled_model = _Model(gelu, layer_norm, lin)
    compiled = torch.compile(compiled_model, fullgraph=True, backend="aot_eager", dynamic=True)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (eager, compiled_model)]
    for step in range(3):
        x = torch.randn(7, 12)
        losses = []
        for run, opt in ((eager, opts[0]), (compiled, opts[1])):
            opt.zero_grad()
            loss = run(x).square().mean()
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        torch.testing.assert_close(losses[0], losses[1], rtol=1e-5, atol=1e-6)
    for a, b in zip(eager.parameters(), compiled_model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_autotuned_kernel_with_a_grid_of_meta_through_the_bridge(interpreted):
    """The grid is called at trace time with each config's values; at run time
    the kernel gets the grid of the config the autotuner picks."""
    op = tritonad.autograd(matmul_one_config, outputs=("c_ptr",))
    op.backward_kernel = StandIn(op.backward_kernel, _matmul_vjp, interpreted)

    def f(a, b):
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N))
        grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]) *  # noqa: E731
                             triton.cdiv(N, META["BLOCK_N"]),)
        return op[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), ACC=tl.float32, PRECISION="ieee")

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager", dynamic=True)
    a = torch.randn(40, 24, requires_grad=True)
    b = torch.randn(24, 33, requires_grad=True)
    c = compiled(a, b.T.contiguous().T)     # b as a column-major view
    torch.testing.assert_close(c, a.detach() @ b.detach(), rtol=1e-4, atol=1e-4)
    g = torch.randn(40, 33)
    c.backward(g)
    torch.testing.assert_close(a.grad, g @ b.detach().T, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(b.grad, a.detach().T @ g, rtol=1e-4, atol=1e-4)


def test_heuristics_kernel_under_compile(interpreted):
    """Through a decorated launcher any grid works; through the bridge, a grid of
    META of a heuristics kernel is refused with the way out."""
    def launcher(x, w):
        n = x.numel()
        y = torch.empty_like(x)
        mul_heuristic_kernel[lambda META: (triton.cdiv(n, META["BLOCK"]),)](x, w, y, n)
        return y

    f = tritonad.autograd(launcher)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager", dynamic=True)
    x = torch.randn(150, requires_grad=True)
    w = torch.randn(150, requires_grad=True)
    y = compiled(x, w)
    torch.testing.assert_close(y, x.detach() * w.detach())
    y.backward(torch.ones(150))
    torch.testing.assert_close(x.grad, w.detach())
    torch.testing.assert_close(w.grad, x.detach())

    op = tritonad.autograd(mul_heuristic_kernel, outputs=("y_ptr",))
    bridge = torch.compile(lambda x: op[lambda META: (triton.cdiv(150, META["BLOCK"]),)](
        x, x, torch.empty_like(x), 150), fullgraph=True, backend="aot_eager")
    with pytest.raises(Exception, match=r"pass a tuple grid, or launch the kernel from a "
                                        r"Python function decorated with @tritonad.autograd"):
        bridge(torch.randn(150, requires_grad=True))


def test_an_output_argument_holds_the_result_under_compile(interpreted):
    """The kernels write into a tensor the caller passes: under compile too, that
    tensor holds the result and carries the gradient."""
    def into(x, out):
        scale_kernel[(triton.cdiv(x.numel(), 32),)](x, out, x.numel(), 2.0, BLOCK=32)
        return out

    f = tritonad.autograd(into)

    def g(x):
        out = torch.zeros(x.shape[0] + 10)
        result = f(x, out[5:-5])
        return out, result

    compiled = torch.compile(g, fullgraph=True, backend="aot_eager", dynamic=True)
    x = torch.randn(40, requires_grad=True)
    out, result = compiled(x)
    torch.testing.assert_close(out[5:-5], 2.0 * x.detach())
    assert torch.count_nonzero(out[:5]) == 0 and torch.count_nonzero(out[-5:]) == 0
    torch.testing.assert_close(result, 2.0 * x.detach())
    (out.sum() + result.sum()).backward()
    torch.testing.assert_close(x.grad, torch.full((40,), 4.0))


def test_dynamo_eager_backend(interpreted):
    """backend="eager" runs the graph with the operators' autograd formula in
    eager mode (no AOTAutograd): the copy into an output argument must not
    trip autograd's version check."""
    def into(x, out):
        scale_kernel[(2,)](x, out, 40, 2.0, BLOCK=32)
        return out

    f = tritonad.autograd(into)
    compiled = torch.compile(lambda x: f(x, torch.empty(40)) * 3, fullgraph=True,
                             backend="eager")
    x = torch.randn(40, requires_grad=True)
    compiled(x).sum().backward()
    torch.testing.assert_close(x.grad, torch.full((40,), 6.0))


def test_refusals_surface_under_compile(interpreted):
    def in_place(x):
        h = torch.empty_like(x)
        scale_kernel[(2,)](x, h, 40, 2.0, BLOCK=32)
        scale_kernel[(2,)](h, h, 40, 2.0, BLOCK=32)
        return h

    f = tritonad.autograd(in_place)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    with pytest.raises(Exception, match=r"scale_kernel \(launch 2\) loads through 'x_ptr' and "
                                        r"stores through 'y_ptr', which share memory"):
        compiled(torch.randn(40, requires_grad=True))


def test_unsupported_argument_is_reported(interpreted):
    class Options:
        alpha = 2.0

    def launcher(x, options):
        y = torch.empty_like(x)
        scale_kernel[(2,)](x, y, 40, options.alpha, BLOCK=32)
        return y

    f = tritonad.autograd(launcher)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    with pytest.raises(Exception, match=r"takes tensors, ints, floats.*got a Options"):
        compiled(torch.randn(40, requires_grad=True), Options())


def test_encoding_round_trips_arguments():
    from tritonad._compile import _decode, _encode

    x, y = torch.randn(3), torch.randn(2, requires_grad=True)
    packed = ((x, 3, 2.5, None, "s", torch.float16, [y, (1, True)]), {"k": {"z": x}})
    tensors, ints, floats = [], [], []
    static = _encode(packed, tensors, ints, floats)
    assert tensors == [x, y, x] and ints == [3, 1] and floats == [2.5]
    assert ("tensor", 1, True) in static[1][0][1][6][1]   # requires_grad kept
    args, kwargs = _decode(static, tensors, ints, floats)
    assert args[0] is x and args[1:6] == (3, 2.5, None, "s", torch.float16)
    assert args[6][0] is y and args[6][1] == (1, True) and kwargs["k"]["z"] is x
    with pytest.raises(CompileError, match="got a object"):
        _encode(object(), [], [], [])


# ---------------------------------------------------------------------------
# GPU: Inductor, the real derived kernels
# ---------------------------------------------------------------------------

def _gpu_model():
    gelu = tritonad.autograd(gelu_kernel, outputs=("y_ptr",))
    layer_norm = tritonad.autograd(layer_norm_kernel, outputs=("y_ptr",))
    lin = tritonad.autograd(linear)
    return lambda: _Model(gelu, layer_norm, lin, d_in=64, d_hidden=96, d_out=32,
                          device="cuda")


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dynamic", [False, True])
def test_gpu_training_under_compile_matches_eager_torch(dynamic):
    make = _gpu_model()
    ours, ref = make(), make()
    compiled = torch.compile(ours, fullgraph=True, dynamic=dynamic)
    opt_ours = torch.optim.SGD(ours.parameters(), lr=0.05)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.05)
    torch.manual_seed(0)
    for rows in (33, 33, 50, 17):   # new shapes too
        x = torch.randn(rows, 64, device="cuda")
        target = torch.randn(rows, 32, device="cuda")
        opt_ours.zero_grad()
        opt_ref.zero_grad()
        loss = torch.nn.functional.mse_loss(compiled(x), target)
        loss_ref = torch.nn.functional.mse_loss(_reference(ref, x), target)
        loss.backward()
        loss_ref.backward()
        opt_ours.step()
        opt_ref.step()
        # fp32 tl.dot is tf32 (10-bit mantissa): about 1e-3 relative per matmul.
        assert loss.item() == pytest.approx(loss_ref.item(), rel=1e-2)
    for a, b in zip(ours.parameters(), ref.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-2, atol=2e-3)


@pytest.mark.gpu
@requires_gpu
def test_gpu_no_graph_break_forward_and_backward():
    make = _gpu_model()
    model = make()
    explanation = torch._dynamo.explain(model)(torch.randn(8, 64, device="cuda"))
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1
    compiled = torch.compile(model, fullgraph=True, dynamic=True)
    x = torch.randn(8, 64, device="cuda", requires_grad=True)
    compiled(x).sum().backward()
    ref_x = x.detach().clone().requires_grad_()
    _reference(model, ref_x).sum().backward()
    torch.testing.assert_close(x.grad, ref_x.grad, rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
@requires_gpu
def test_gpu_tutorial_matmul_under_compile():
    from corpus.launchers import matmul
    f = tritonad.autograd(matmul)
    a = torch.randn(100, 64, device="cuda", requires_grad=True)
    b = torch.randn(64, 80, device="cuda", requires_grad=True)
    # (a weighted sum, not relu: tf32 rounding flips the sign of entries near 0,
    # and a flipped relu mask moves a whole row of b into the reference's dA)
    w = torch.randn(100, 80, device="cuda")
    compiled = torch.compile(lambda a, b: (f(a, b) * w).sum(), fullgraph=True, dynamic=True)
    compiled(a, b).backward()
    ra, rb = (t.detach().clone().requires_grad_() for t in (a, b))
    ((ra @ rb) * w).sum().backward()
    torch.testing.assert_close(a.grad, ra.grad, rtol=1e-2, atol=5e-2)
    torch.testing.assert_close(b.grad, rb.grad, rtol=1e-2, atol=5e-2)
