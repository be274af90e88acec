"""tritonad.autograd(launcher): a Python function that launches Triton kernels,
made differentiable by the decorator alone.

CPU tests run the forward kernels in Triton's interpreter and replace each
derived backward kernel by a torch stand-in that addresses memory exactly as the
kernel does (launcher_util.py's ``interpreted`` fixture; the kernels and launchers
are corpus/launchers.py), so they check what the decorator itself does: recording launches,
keying gradient buffers by storage with each view's offset and strides,
reverse-order accumulation through intermediates, the refusals. GPU tests
(marked ``gpu``) run the real derived kernels against torch.autograd and
``torch.autograd.gradcheck`` in float64.
"""

import gc
import threading
import weakref

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

import tritonad._launcher as launcher_module  # noqa: E402
from corpus.kernels import gelu_kernel  # noqa: E402
from corpus.launchers import (layer_norm_kernel, linear, matmul, matmul_one_config,  # noqa: E402
                              mul_heuristic_kernel, mul_kernel, rows_scale_kernel, scale_kernel,
                              scale_then_mul)
from gpu_util import requires_gpu  # noqa: E402
from launcher_util import interpreted  # noqa: E402,F401  (a fixture)

# ---------------------------------------------------------------------------
# 1. Recording
# ---------------------------------------------------------------------------

def test_records_every_launch_with_its_bound_arguments(interpreted):
    x, w = torch.randn(40), torch.randn(40)
    with launcher_module.recording() as recorder:
        assert launcher_module.intercepting_now()
        with torch.enable_grad():
            y, n = scale_then_mul(x, w)
    assert not launcher_module.intercepting_now()   # never left patched
    assert [launch.name for launch in recorder.launches] == ["scale_kernel", "mul_kernel"]
    first, second = recorder.launches
    assert first.bound["x_ptr"] is x and first.bound["alpha"] == 3.0 and first.grid == (2,)
    assert first.bound["BLOCK"] == 32 and first.options == {}
    assert second.bound["w_ptr"] is w and second.bound["y_ptr"] is y
    assert callable(second.grid) and second.grid({"BLOCK": 32}) == (2,)   # META grid kept
    torch.testing.assert_close(y, 3.0 * x * w)


def test_autotuned_and_heuristics_kernels_are_one_launch_each(interpreted):
    a, b = torch.randn(20, 24), torch.randn(24, 18)
    x = torch.randn(50)
    with torch.enable_grad(), launcher_module.recording() as recorder:
        c = matmul(a, b, kernel=matmul_one_config)
        y = torch.empty_like(x)
        mul_heuristic_kernel[lambda META: (triton.cdiv(50, META["BLOCK"]),)](x, x, y, 50)
    kernels = [launch.kernel for launch in recorder.launches]
    assert kernels == [matmul_one_config, mul_heuristic_kernel]  # the outer objects only
    assert "BLOCK_M" not in recorder.launches[0].bound  # (the config's values are not args)
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(y, x * x)


def test_launches_without_grad_mode_are_not_recorded(interpreted):
    x = torch.randn(40)
    with launcher_module.recording() as recorder:
        with torch.no_grad():
            scale_then_mul(x, x)
    assert recorder.launches == []


def test_recording_is_local_to_its_thread(interpreted):
    """A launch made by another thread while this one records is not recorded
    (and runs normally)."""
    started, launched = threading.Event(), threading.Event()
    other = {}

    def elsewhere():
        started.wait()
        x = torch.randn(40)
        y = torch.empty_like(x)
        scale_kernel[(2,)](x, y, 40, 2.0, BLOCK=32)
        other["ok"] = torch.equal(y, 2.0 * x)
        launched.set()

    thread = threading.Thread(target=elsewhere)
    thread.start()
    with torch.enable_grad(), launcher_module.recording() as recorder:
        started.set()
        launched.wait(timeout=60)
        x = torch.randn(40)
        y = torch.empty_like(x)
        mul_kernel[(2,)](x, x, y, 40, BLOCK=32)
    thread.join()
    assert other["ok"]
    assert [launch.name for launch in recorder.launches] == ["mul_kernel"]


# ---------------------------------------------------------------------------
# 2. Gradients (stand-in backward kernels)
# ---------------------------------------------------------------------------

def test_two_launches_through_an_intermediate(interpreted):
    f = tritonad.autograd(scale_then_mul)
    x = torch.randn(70, requires_grad=True)
    w = torch.randn(70, requires_grad=True)
    y, n = f(x, w)
    assert n == 70 and y.grad_fn is not None
    g = torch.randn(70)
    y.backward(g)
    torch.testing.assert_close(x.grad, 3.0 * w.detach() * g)
    torch.testing.assert_close(w.grad, 3.0 * x.detach() * g)
    # Reverse order: mul's backward first, then scale's, which reads mul's dx.
    assert [name for name, _ in interpreted] == ["mul_kernel", "scale_kernel"]
    mul_args, scale_args = interpreted[0][1], interpreted[1][1]
    assert mul_args["dx_ptr"].untyped_storage().data_ptr() == \
        scale_args["dy_ptr"].untyped_storage().data_ptr()   # one buffer for the intermediate


def test_calls_of_one_structure_share_one_analysis(interpreted):
    """A later call whose launches, arguments and result have the structure of an
    earlier one takes that call's analysis (gradients still its own); a call that
    differs in layout, in requires_grad or in which tensors share memory is analysed
    anew, so a refusal is never skipped."""
    f = tritonad.autograd(scale_then_mul)
    for _ in range(3):
        x = torch.randn(70, requires_grad=True)
        w = torch.randn(70, requires_grad=True)
        y, _ = f(x, w)
        g = torch.randn(70)
        y.backward(g)
        torch.testing.assert_close(x.grad, 3.0 * w.detach() * g)
        torch.testing.assert_close(w.grad, 3.0 * x.detach() * g)
    analyses = f.tritonad_launcher.analyses
    assert len(analyses) == 1
    x = torch.randn(70, requires_grad=True)
    w = torch.randn(70)
    y, _ = f(x, w)                                    # w needs no gradient
    y.backward(torch.ones(70))
    torch.testing.assert_close(x.grad, 3.0 * w)
    assert len(analyses) == 2
    x = torch.randn(70, requires_grad=True)
    y, _ = f(x, x)                                    # one tensor passed twice
    y.backward(torch.ones(70))
    torch.testing.assert_close(x.grad, 6.0 * x.detach())
    assert len(analyses) == 3

    def into_second(x, w):
        scale_kernel[(2,)](x, w, 40, 2.0, BLOCK=32)
        return w

    h = tritonad.autograd(into_second)
    h(torch.randn(40, requires_grad=True), torch.empty(40))
    with pytest.raises(ValueError, match="which requires grad"):
        h(torch.randn(40, requires_grad=True), torch.randn(40, requires_grad=True))


def test_views_get_gradient_views_with_their_offsets_and_strides(interpreted):
    """x is a column slice of a wider tensor and the kernel gets weight.T: each
    gradient view has the offset and strides of the view the kernel got, and the
    gradient reaches the tensors the views come from."""
    torch.manual_seed(0)
    f = tritonad.autograd(linear)
    wide = torch.randn(9, 30, requires_grad=True)
    x = wide[:, 4:25]                                    # (9, 21), row stride 30
    weight = torch.randn(13, 21, requires_grad=True)
    bias = torch.randn(13, requires_grad=True)
    y = f(x, weight, bias, kernel=matmul_one_config)
    ref_wide, ref_w, ref_b = (t.detach().clone().requires_grad_() for t in (wide, weight, bias))
    ref = ref_wide[:, 4:25] @ ref_w.T + ref_b
    torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-4)
    g = torch.randn(9, 13)
    y.backward(g)
    ref.backward(g)
    for got, want in ((wide.grad, ref_wide.grad), (weight.grad, ref_w.grad),
                      (bias.grad, ref_b.grad)):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert torch.count_nonzero(wide.grad[:, :4]) == 0
    assert torch.count_nonzero(wide.grad[:, 25:]) == 0
    (_, bias_args), (_, matmul_args) = interpreted
    assert matmul_args["da_ptr"].stride() == x.stride() == (30, 1)
    assert matmul_args["db_ptr"].stride() == weight.T.stride() == (1, 21)
    # The shadow of x sits at x's offset in a buffer mirroring wide's storage.
    assert matmul_args["da_ptr"].storage_offset() == x.storage_offset() == 4
    assert matmul_args["da_ptr"].untyped_storage().nbytes() == wide.numel() * 4


def test_gradient_buffer_offset_mirrors_the_storage(interpreted):
    """Two slices of one tensor passed to two launches: both gradients land in one
    buffer at the slices' own offsets."""
    def two_halves(base, w):
        a, b = base[:40], base[40:]
        ya, yb = torch.empty(40), torch.empty(40)
        mul_kernel[(2,)](a, w, ya, 40, BLOCK=32)
        mul_kernel[(2,)](b, w, yb, 40, BLOCK=32)
        return ya, yb

    f = tritonad.autograd(two_halves)
    base = torch.randn(80, requires_grad=True)
    w = torch.randn(40)
    ya, yb = f(base, w)
    (ya.sum() + 2 * yb.sum()).backward()
    torch.testing.assert_close(base.grad, torch.cat([w, 2 * w]))
    first, second = (args for _, args in interpreted)
    assert first["dx_ptr"].untyped_storage().data_ptr() == \
        second["dx_ptr"].untyped_storage().data_ptr()
    assert {first["dx_ptr"].storage_offset(), second["dx_ptr"].storage_offset()} == {0, 40}


def test_results_keep_their_structure_and_non_tensors_pass_through(interpreted):
    def launcher(x, tag):
        y, n = scale_then_mul(x, x)
        return {"y": y.view(7, 10), "n": n, "tag": tag, "input": x}

    f = tritonad.autograd(launcher)
    x = torch.randn(70, requires_grad=True)
    out = f(x, "hello")
    assert out["n"] == 70 and out["tag"] == "hello" and out["input"] is x
    assert out["y"].grad_fn is not None and out["y"].shape == (7, 10)
    out["y"].sum().backward()
    torch.testing.assert_close(x.grad, 6.0 * x.detach())


def test_an_output_argument_carries_the_gradient(interpreted):
    """A launcher that writes into a buffer it is given and returns nothing:
    the buffer itself gets the grad_fn (as an in-place torch op would)."""
    def into(x, out):
        scale_kernel[(triton.cdiv(x.numel(), 32),)](x, out, x.numel(), 2.0, BLOCK=32)

    f = tritonad.autograd(into)
    x = torch.randn(50, requires_grad=True)
    out = torch.empty(50)
    assert f(x, out) is None
    assert out.grad_fn is not None
    (out * out).sum().backward()
    torch.testing.assert_close(x.grad, 8.0 * x.detach())


def test_column_slices_written_by_two_launches_are_not_refused(interpreted):
    """Interleaved but disjoint views of one output (byte ranges overlap, no
    element is shared): allowed, each launch's gradient read at its own columns."""
    def halves(x):
        out = torch.empty(6, 20)
        for lo, hi, alpha in ((0, 10, 2.0), (10, 20, 5.0)):
            src, dst = x[:, lo:hi], out[:, lo:hi]
            rows_scale_kernel[(6,)](src, dst, 10, src.stride(0), dst.stride(0), alpha,
                                    BLOCK=16)
        return out

    f = tritonad.autograd(halves)
    x = torch.randn(6, 20, requires_grad=True)
    out = f(x)
    out.sum().backward()
    expected = torch.cat([torch.full((6, 10), 2.0), torch.full((6, 10), 5.0)], 1)
    torch.testing.assert_close(x.grad, expected)


def test_grad_mode_off_runs_the_launcher_as_it_is(interpreted):
    seen = {}

    def launcher(x):
        seen["patched"] = launcher_module.intercepting_now()
        return scale_then_mul(x, x)[0]

    f = tritonad.autograd(launcher)
    x = torch.randn(40, requires_grad=True)
    with torch.no_grad():
        y = f(x)
    assert seen["patched"] is False and y.grad_fn is None
    y = f(x)
    assert seen["patched"] is True and y.grad_fn is not None


def test_nothing_requires_grad_returns_plain_results(interpreted):
    f = tritonad.autograd(scale_then_mul)
    y, _ = f(torch.randn(40), torch.randn(40))
    assert y.grad_fn is None and not y.requires_grad


def test_a_closed_over_parameter_gets_its_gradient(interpreted):
    """A tensor the launcher does not take as an argument (a module's weight it
    closes over) is still an input: autograd sees what the kernels read."""
    w = torch.randn(40, requires_grad=True)
    f = tritonad.autograd(lambda x: scale_then_mul(x, w)[0])
    x = torch.randn(40)
    f(x).sum().backward()
    torch.testing.assert_close(w.grad, 3.0 * x)


def test_a_method_can_be_decorated(interpreted):
    class Scale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(40))

        @tritonad.autograd
        def forward(self, x):
            return scale_then_mul(x, self.w)[0]

    m = Scale()
    x = torch.randn(40)
    m(x).sum().backward()
    torch.testing.assert_close(m.w.grad, 3.0 * x)


def test_decorated_launchers_compose(interpreted):
    """A decorated launcher called inside another is its own node: the outer one
    sees its result as a tensor autograd tracks (torch ops on it are fine), and
    its kernels reading that result make it an input."""
    inner = tritonad.autograd(scale_then_mul)

    def outer(x, w):
        y, n = inner(x, w)
        y2 = y * 2.0                      # autograd sees this op: not refused
        z = torch.empty_like(y2)
        scale_kernel[(triton.cdiv(n, 32),)](y2, z, n, 5.0, BLOCK=32)
        return z

    x = torch.randn(60, requires_grad=True)
    w = torch.randn(60, requires_grad=True)
    z = tritonad.autograd(outer)(x, w)
    z.sum().backward()
    torch.testing.assert_close(x.grad, 30.0 * w.detach())
    torch.testing.assert_close(w.grad, 30.0 * x.detach())
    assert [name for name, _ in interpreted] == ["scale_kernel", "mul_kernel", "scale_kernel"]


def test_the_node_does_not_keep_its_outputs_alive(interpreted):
    f = tritonad.autograd(scale_then_mul)
    x = torch.randn(40, requires_grad=True)
    gc.disable()
    try:
        y, _ = f(x, x)
        alive = weakref.ref(y)
        del y
        assert alive() is None   # no reference cycle through the node
    finally:
        gc.enable()


def test_gradcheck_float64_through_the_decorator(interpreted):
    f = tritonad.autograd(lambda x, w, b: linear(x, w, b, kernel=matmul_one_config))
    torch.manual_seed(1)
    args = (torch.randn(5, 7, dtype=torch.float64, requires_grad=True),
            torch.randn(6, 7, dtype=torch.float64, requires_grad=True),
            torch.randn(6, dtype=torch.float64, requires_grad=True))
    assert torch.autograd.gradcheck(f, args)


# ---------------------------------------------------------------------------
# 3. Refusals (the gradient would be wrong)
# ---------------------------------------------------------------------------

def test_refuses_overwriting_memory_an_earlier_launch_read(interpreted):
    def overwrite(x):
        h = torch.empty_like(x)
        scale_kernel[(2,)](x, h, 40, 2.0, BLOCK=32)
        y = torch.empty_like(x)
        scale_kernel[(2,)](h, y, 40, 2.0, BLOCK=32)
        scale_kernel[(2,)](y, h, 40, 2.0, BLOCK=32)   # h was read by launch 2
        return h

    with pytest.raises(ValueError, match=r"scale_kernel \(launch 3\) through 'y_ptr' "
                                         r"overwrites memory that scale_kernel \(launch 2\) "
                                         r"through 'x_ptr' read"):
        tritonad.autograd(overwrite)(torch.randn(40, requires_grad=True))


def test_refuses_two_launches_storing_the_same_memory(interpreted):
    def twice(x):
        y = torch.empty_like(x)
        scale_kernel[(2,)](x, y, 40, 2.0, BLOCK=32)
        scale_kernel[(2,)](x, y[8:], 20, 3.0, BLOCK=32)
        return y

    with pytest.raises(ValueError, match=r"launch 2\) through 'y_ptr' overwrites memory that "
                                         r"scale_kernel \(launch 1\) through 'y_ptr' stored"):
        tritonad.autograd(twice)(torch.randn(40, requires_grad=True))


def test_refuses_a_kernel_loading_and_storing_one_buffer(interpreted):
    def in_place(x):
        h = torch.empty_like(x)
        scale_kernel[(2,)](x, h, 40, 2.0, BLOCK=32)
        mul_kernel[(2,)](h, x, h, 40, BLOCK=32)
        return h

    with pytest.raises(ValueError, match=r"mul_kernel \(launch 2\) loads through 'x_ptr' and "
                                         r"stores through 'y_ptr', which share memory"):
        tritonad.autograd(in_place)(torch.randn(40, requires_grad=True))


def test_refuses_a_store_into_a_tensor_that_requires_grad(interpreted):
    def into_input(x, w):
        scale_kernel[(2,)](x, w, 40, 2.0, BLOCK=32)
        return w

    with pytest.raises(ValueError, match=r"scale_kernel \(launch 1\) through 'y_ptr' stores "
                                         r"into memory of argument 'w', which requires grad"):
        tritonad.autograd(into_input)(torch.randn(40, requires_grad=True),
                                      torch.randn(40, requires_grad=True))


def test_refuses_torch_ops_between_kernels(interpreted):
    def torch_in_between(x):
        h = torch.empty_like(x)
        scale_kernel[(2,)](x, h, 40, 2.0, BLOCK=32)
        h2 = h.exp()
        y = torch.empty_like(x)
        mul_kernel[(2,)](h2, x, y, 40, BLOCK=32)
        return y

    with pytest.raises(ValueError, match=r"mul_kernel \(launch 2\) through 'x_ptr' loads torch "
                                         r"exp of what kernel scale_kernel \(launch 1\) stored"):
        tritonad.autograd(torch_in_between)(torch.randn(40, requires_grad=True))


def test_refuses_returning_a_torch_op_of_a_kernel_output(interpreted):
    def returns_derived(x):
        return scale_then_mul(x, x)[0] + 1.0

    with pytest.raises(ValueError, match=r"returns torch add of what kernel mul_kernel"):
        tritonad.autograd(returns_derived)(torch.randn(40, requires_grad=True))


def test_refuses_writing_into_a_kernel_output_with_torch(interpreted):
    def in_place_torch(x):
        y, _ = scale_then_mul(x, x)
        y.mul_(2.0)
        return y

    with pytest.raises(ValueError, match=r"torch mul_ writes in place into memory that kernel "
                                         r"mul_kernel \(launch 2\) stored through 'y_ptr'"):
        tritonad.autograd(in_place_torch)(torch.randn(40, requires_grad=True))


def test_torch_ops_on_inputs_and_metadata_are_fine(interpreted):
    """Copies of inputs made by torch (autograd tracks them), *_like allocations
    and views of kernel outputs are not refused."""
    def launcher(x):
        xc = (x * 1.0).contiguous()
        y, _ = scale_then_mul(xc, xc)
        z = torch.zeros_like(y)
        return y.view(5, 8), z

    x = torch.randn(40, requires_grad=True)
    y, z = tritonad.autograd(launcher)(x)
    y.sum().backward()
    torch.testing.assert_close(x.grad, 6.0 * x.detach())


def test_refuses_an_overlapping_view_that_needs_a_gradient(interpreted):
    def broadcast(w):
        x = w.expand(4, 10)
        y = torch.empty(4, 10)
        rows_scale_kernel[(4,)](x, y, 10, x.stride(0), y.stride(0), 2.0, BLOCK=16)
        return y

    with pytest.raises(ValueError, match=r"rows_scale_kernel \(launch 1\) through 'x_ptr': its "
                                         r"elements share memory.*\.contiguous\(\)"):
        tritonad.autograd(broadcast)(torch.randn(10, requires_grad=True))


def test_errors_of_the_entry_point():
    with pytest.raises(TypeError, match=r"name the parameters it stores to"):
        tritonad.autograd(scale_kernel)
    with pytest.raises(TypeError, match=r"outputs= is for a kernel"):
        tritonad.autograd(scale_then_mul, outputs=("y",))
    with pytest.raises(TypeError, match=r"wrt= and pointers= are per kernel"):
        tritonad.autograd(scale_then_mul, wrt=["x"])
    with pytest.raises(ValueError, match=r"mode must be"):
        tritonad.autograd(scale_then_mul, mode="fast")
    f = tritonad.autograd(mode="deterministic")(scale_then_mul)
    assert f.mode == "deterministic" and f.__name__ == "scale_then_mul"
    assert tritonad.autograd(gelu_kernel, outputs=("y_ptr",)).outputs == ("y_ptr",)


# ---------------------------------------------------------------------------
# 4. Replays: later calls of a planned structure (_launcher_plan.py)
# ---------------------------------------------------------------------------

def _full_path_calls(monkeypatch) -> list:
    """Counts the calls that take the full path (watched, recorded, analysed)."""
    calls = []
    full = launcher_module._analysed

    def counted(*args):
        calls.append(args[0])
        return full(*args)

    monkeypatch.setattr(launcher_module, "_analysed", counted)
    return calls


def _step(f, n=70, w_grad=True):
    x = torch.randn(n, requires_grad=True)
    w = torch.randn(n, requires_grad=w_grad)
    y, size = f(x, w)
    assert size == n and y.grad_fn is not None
    g = torch.randn(n)
    kept = g.clone()
    y.backward(g)
    torch.testing.assert_close(x.grad, 3.0 * w.detach() * kept)
    if w_grad:
        torch.testing.assert_close(w.grad, 3.0 * x.detach() * kept)
    assert torch.equal(g, kept)  # (an upstream gradient read in place is not written)
    return x, w


def test_later_calls_replay_the_first_ones_plan(interpreted, monkeypatch):
    """Calls whose arguments have a planned call's layouts replay it: one full path
    (one analysis) for five calls, one backward decided and then replayed, each
    call's gradients its own; the upstream gradient is the output's gradient buffer
    where no backward writes it."""
    full = _full_path_calls(monkeypatch)
    f = tritonad.autograd(scale_then_mul)
    for _ in range(5):
        _step(f)
    assert len(full) == 1
    (plan,) = f.tritonad_launcher.plans.values()
    (step,) = plan.backwards.values()
    assert step.replayed
    in_place = [made for made in step.buffers.values() if isinstance(made[0], int)]
    assert len(in_place) == 1 and not step.upstream  # (y's buffer: the upstream gradient)
    assert [name for name, _ in interpreted] == ["mul_kernel", "scale_kernel"] * 5
    # Another upstream layout (expanded, from .sum()) gets a step of its own.
    x, w = torch.randn(70, requires_grad=True), torch.randn(70, requires_grad=True)
    f(x, w)[0].sum().backward()
    torch.testing.assert_close(x.grad, 3.0 * w.detach())
    assert len(plan.backwards) == 2 and len(full) == 1


def test_calls_that_differ_take_the_full_path(interpreted, monkeypatch):
    """Another shape, dtype, requires_grad, or memory sharing between arguments, or
    another scalar argument: the full path, with its own gradients; the first layout
    again: a replay."""
    full = _full_path_calls(monkeypatch)
    f = tritonad.autograd(scale_then_mul)
    _step(f)
    _step(f, n=53)
    _step(f, w_grad=False)
    x = torch.randn(70, dtype=torch.float64, requires_grad=True)
    y, _ = f(x, torch.randn(70, dtype=torch.float64))
    y.backward(torch.ones(70, dtype=torch.float64))
    assert x.grad.dtype == torch.float64
    assert len(full) == 4
    x = torch.randn(70, requires_grad=True)
    y, _ = f(x, x)                                  # one tensor passed twice
    y.backward(torch.ones(70))
    torch.testing.assert_close(x.grad, 6.0 * x.detach())
    storage = torch.randn(140, requires_grad=True)  # two views of one tensor
    y, _ = f(storage[:70], storage[70:])
    y.backward(torch.ones(70))
    torch.testing.assert_close(storage.grad, 3.0 * torch.cat([storage[70:], storage[:70]]).detach())
    x, w = torch.randn(70, requires_grad=True), torch.randn(70, requires_grad=True)
    y, _ = f(x, w, alpha=2.0)                       # another scalar
    y.backward(torch.ones(70))
    torch.testing.assert_close(x.grad, 2.0 * w.detach())
    assert len(full) == 7
    _step(f)
    assert len(full) == 7


_BEHAVIOUR = {"torch op": False, "in place": False, "extra launch": False}


def _changing(x, w):
    """scale then mul, with what _BEHAVIOUR turns on (what the arguments do not show)."""
    n = x.numel()
    h = torch.empty_like(x)
    scale_kernel[(3,)](x, h, n, 3.0, BLOCK=32)
    if _BEHAVIOUR["in place"]:
        h.mul_(2.0)
    if _BEHAVIOUR["torch op"]:
        h = h * 2.0
    y = torch.empty_like(x)
    mul_kernel[(3,)](h, w, y, n, BLOCK=32)
    if _BEHAVIOUR["extra launch"]:
        z = torch.empty_like(y)
        scale_kernel[(3,)](y, z, n, 0.5, BLOCK=32)
        y = z
    return y, n


def test_a_call_that_leaves_its_plan_is_refused_as_the_full_path_refuses_it(interpreted,
                                                                             monkeypatch):
    """A call with a plan's arguments whose launcher then does something else (a
    torch op on a kernel's output passed to a kernel, an in-place torch write into
    one) runs again on the full path, which refuses it as it would have on any
    call; after two such calls, calls with that key take the full path directly."""
    full = _full_path_calls(monkeypatch)
    f = tritonad.autograd(_changing)
    for _ in range(2):
        _step(f)
    assert len(full) == 1
    x, w = torch.randn(70, requires_grad=True), torch.randn(70, requires_grad=True)
    try:
        _BEHAVIOUR["torch op"] = True
        with pytest.raises(ValueError, match="computed inside the launcher"):
            f(x, w)
        _BEHAVIOUR["torch op"], _BEHAVIOUR["in place"] = False, True
        with pytest.raises(ValueError, match="writes in place into memory that kernel"):
            f(x, w)
        assert list(f.tritonad_launcher.plans.values()) == [None]
        with pytest.raises(ValueError, match="writes in place into memory that kernel"):
            f(x, w)
        _BEHAVIOUR["in place"] = False
        _step(f)
        assert len(full) == 5
    finally:
        for name in _BEHAVIOUR:
            _BEHAVIOUR[name] = False


def test_a_call_with_another_launch_is_differentiated_and_planned_again(interpreted,
                                                                        monkeypatch):
    """A launch the plan does not have (state the arguments do not show): the call
    runs again on the full path and is differentiated; its plan replaces the old."""
    full = _full_path_calls(monkeypatch)
    f = tritonad.autograd(_changing)
    _step(f)
    try:
        _BEHAVIOUR["extra launch"] = True
        for _ in range(3):
            x, w = torch.randn(70, requires_grad=True), torch.randn(70, requires_grad=True)
            y, _ = f(x, w)
            y.backward(torch.ones(70))
            torch.testing.assert_close(x.grad, 1.5 * w.detach())
        assert len(full) == 2
        assert [plan.strikes for plan in f.tritonad_launcher.plans.values()] == [1]
    finally:
        _BEHAVIOUR["extra launch"] = False


def test_a_closed_over_parameter_is_replayed_while_it_is_the_same_tensor(interpreted,
                                                                       monkeypatch):
    """A parameter the launcher closes over (no argument of it) is loaded by a
    kernel: replays check they get that very tensor; another one of the same
    layout takes the full path."""
    full = _full_path_calls(monkeypatch)
    weights = {"w": torch.randn(70, requires_grad=True)}

    def scaled(x):
        y = torch.empty_like(x)
        mul_kernel[(3,)](x, weights["w"], y, x.numel(), BLOCK=32)
        return y

    f = tritonad.autograd(scaled)
    for _ in range(3):
        x = torch.randn(70, requires_grad=True)
        f(x).backward(torch.ones(70))
        torch.testing.assert_close(x.grad, weights["w"].detach())
    assert len(full) == 1
    weights["w"] = torch.randn(70, requires_grad=True)
    x = torch.randn(70, requires_grad=True)
    f(x).backward(torch.ones(70))
    torch.testing.assert_close(x.grad, weights["w"].detach())
    assert weights["w"].grad is not None and len(full) == 2


def test_a_launcher_storing_into_an_argument_is_not_planned(interpreted):
    """Calls a replay would run again store into memory the caller passed (an
    atomic would add twice): such launchers take the full path each call."""
    def into(x, out):
        scale_kernel[(3,)](x, out, x.numel(), 2.0, BLOCK=32)
        return out

    f = tritonad.autograd(into)
    for _ in range(2):
        x = torch.randn(70, requires_grad=True)
        f(x, torch.empty(70)).backward(torch.ones(70))
        torch.testing.assert_close(x.grad, torch.full((70,), 2.0))
    assert not f.tritonad_launcher.plans


def test_a_refused_call_is_refused_each_time(interpreted):
    def into_second(x, w):
        scale_kernel[(2,)](x, w, 40, 2.0, BLOCK=32)
        return w

    h = tritonad.autograd(into_second)
    for _ in range(2):
        h(torch.randn(40, requires_grad=True), torch.empty(40))
    for _ in range(2):
        with pytest.raises(ValueError, match="which requires grad"):
            h(torch.randn(40, requires_grad=True), torch.randn(40, requires_grad=True))


def test_a_tensor_made_in_the_launcher_leaves_the_plan(interpreted, monkeypatch):
    """A kernel loading memory that neither an argument nor an earlier launch gave,
    made anew by each call (here torch.ones): replays find another tensor there and
    run the call again on the full path; after two, that key is decided each time."""
    full = _full_path_calls(monkeypatch)

    def with_constant(x):
        w = torch.ones_like(x)
        y = torch.empty_like(x)
        mul_kernel[(3,)](x, w, y, x.numel(), BLOCK=32)
        return y

    f = tritonad.autograd(with_constant)
    for _ in range(4):
        x = torch.randn(70, requires_grad=True)
        f(x).backward(torch.ones(70))
        torch.testing.assert_close(x.grad, torch.ones(70))
    assert len(full) == 4 and list(f.tritonad_launcher.plans.values()) == [None]


def test_a_closed_over_buffer_view_is_replayed(interpreted, monkeypatch):
    """A view the launcher takes each call of a buffer it closes over (a cache, no
    gradient): replays check the view's base is that very buffer."""
    full = _full_path_calls(monkeypatch)
    cache = {"w": torch.randn(100)}

    def scaled(x):
        y = torch.empty_like(x)
        mul_kernel[(3,)](x, cache["w"][:70], y, x.numel(), BLOCK=32)
        return y

    f = tritonad.autograd(scaled)
    for _ in range(3):
        x = torch.randn(70, requires_grad=True)
        f(x).backward(torch.ones(70))
        torch.testing.assert_close(x.grad, cache["w"][:70])
    assert len(full) == 1
    cache["w"] = torch.randn(100)
    x = torch.randn(70, requires_grad=True)
    f(x).backward(torch.ones(70))
    torch.testing.assert_close(x.grad, cache["w"][:70])
    assert len(full) == 2


# ---------------------------------------------------------------------------
# 5. GPU: the derived kernels against torch.autograd
# ---------------------------------------------------------------------------

@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_gpu_tutorial_matmul_launcher(dtype):
    """The tutorial's matmul launcher (autotuned kernel, grid of META), made
    differentiable by the decorator alone; b is a transposed view."""
    torch.manual_seed(0)
    f = tritonad.autograd(matmul)
    a = torch.randn(150, 70, device="cuda", dtype=dtype, requires_grad=True)
    w = torch.randn(90, 70, device="cuda", dtype=dtype, requires_grad=True)
    c = f(a, w.T)
    ra, rw = (t.detach().float().requires_grad_() for t in (a, w))
    ref = ra @ rw.T
    g = torch.randn_like(ref)
    c.backward(g.to(dtype))
    ref.backward(g)
    # fp32 dots are tf32 (10-bit mantissa); fp16 inputs round to 11 bits.
    tol = dict(rtol=2e-2, atol=5e-2 * (70 ** 0.5))
    torch.testing.assert_close(c.float(), ref, **tol)
    torch.testing.assert_close(a.grad.float(), ra.grad, **tol)
    torch.testing.assert_close(w.grad.float(), rw.grad, **tol)


class CustomLinear(torch.nn.Module):
    """An nn.Module whose forward calls a decorated launcher of a w @ x kernel."""

    def __init__(self, in_features, out_features, device=None, dtype=None):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(out_features, in_features, device=device,
                                                     dtype=dtype) / in_features ** 0.5)
        self.bias = torch.nn.Parameter(torch.zeros(out_features, device=device, dtype=dtype))

    def forward(self, x):
        return triton_linear(x, self.weight, self.bias)


triton_linear = tritonad.autograd(linear)


@pytest.mark.gpu
@requires_gpu
def test_gpu_custom_linear_trains_like_torch():
    torch.manual_seed(0)
    ours = CustomLinear(64, 48, device="cuda")
    ref = torch.nn.Linear(64, 48, device="cuda")
    with torch.no_grad():
        ref.weight.copy_(ours.weight)
        ref.bias.copy_(ours.bias)
    opt_ours = torch.optim.SGD(ours.parameters(), lr=0.1)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1)
    for _ in range(4):
        x = torch.randn(33, 64, device="cuda")
        target = torch.randn(33, 48, device="cuda")
        losses = []
        for model, opt in ((ours, opt_ours), (ref, opt_ref)):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), target)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[0] == pytest.approx(losses[1], rel=1e-2)   # tf32 dots
    torch.testing.assert_close(ours.weight, ref.weight, rtol=1e-2, atol=1e-3)
    torch.testing.assert_close(ours.bias, ref.bias, rtol=1e-2, atol=1e-3)


@pytest.mark.gpu
@requires_gpu
def test_gpu_gradcheck_float64_through_the_decorator():
    torch.manual_seed(0)
    f = tritonad.autograd(lambda x, w, b: linear(x, w, b))
    args = (torch.randn(9, 20, device="cuda", dtype=torch.float64, requires_grad=True),
            torch.randn(11, 20, device="cuda", dtype=torch.float64, requires_grad=True),
            torch.randn(11, device="cuda", dtype=torch.float64, requires_grad=True))
    assert torch.autograd.gradcheck(f, args)
    g = tritonad.autograd(scale_then_mul)
    xs = (torch.randn(100, device="cuda", dtype=torch.float64, requires_grad=True),
          torch.randn(100, device="cuda", dtype=torch.float64, requires_grad=True))
    assert torch.autograd.gradcheck(lambda x, w: g(x, w)[0], xs)


@pytest.mark.gpu
@requires_gpu
def test_gpu_gradcheck_float64_through_the_bridge():
    gelu = tritonad.autograd(gelu_kernel, outputs=("y_ptr",))
    layer_norm = tritonad.autograd(layer_norm_kernel, outputs=("y_ptr",))
    x = torch.randn(300, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda x: gelu[(triton.cdiv(300, 128),)](x, torch.empty_like(x), 300, BLOCK=128), (x,))
    rows = torch.randn(6, 20, device="cuda", dtype=torch.float64, requires_grad=True)
    w = torch.randn(20, device="cuda", dtype=torch.float64, requires_grad=True)
    b = torch.randn(20, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda x, w, b: layer_norm[(6,)](x, w, b, torch.empty_like(x), 20, 20, 1e-5,
                                         BLOCK_N=32), (rows, w, b))


@pytest.mark.gpu
@requires_gpu
def test_gpu_heuristics_kernel_and_intermediate():
    def launcher(x, w):
        n = x.numel()
        h = torch.empty_like(x)
        scale_kernel[(triton.cdiv(n, 128),)](x, h, n, 0.5, BLOCK=128)
        y = torch.empty_like(x)
        mul_heuristic_kernel[lambda META: (triton.cdiv(n, META["BLOCK"]),)](h, w, y, n)
        return y

    f = tritonad.autograd(launcher)
    x = torch.randn(1000, device="cuda", requires_grad=True)
    w = torch.randn(1000, device="cuda", requires_grad=True)
    f(x, w).backward(torch.ones(1000, device="cuda"))
    torch.testing.assert_close(x.grad, 0.5 * w.detach())
    torch.testing.assert_close(w.grad, 0.5 * x.detach())
