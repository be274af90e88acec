"""The backward of an autotuned forward runs with the config the forward's launch chose
(python/tritonad/_forward_config.py), never one tuned on its own: a forward that writes
one partial sum per program (a loss the host sums) lays its output out by BLOCK, and a
backward with another BLOCK would read the upstream gradient in the wrong layout.

CPU: the config lookup and its refusal, on stand-ins of Triton's autotuner. GPU: an
autotuned bf16/fp32 MSE loss whose forward config is chosen for it, gradients against
fp64 torch.autograd."""

import types

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
pytest.importorskip("tritonad")

import triton.language as tl  # noqa: E402

import tritonad  # noqa: E402
from gpu_util import requires_gpu  # noqa: E402
from tritonad._forward_config import FollowsForwardConfig, ForwardConfigError  # noqa: E402


class _Recorder:
    arg_names = ["x_ptr", "n", "dx_ptr", "BLOCK"]

    def run(self, *args, grid, warmup, **kwargs):
        self.launched = kwargs


def _tuner(cache):
    configs = [triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 1024})]
    return types.SimpleNamespace(configs=configs, keys=["n"], arg_names=["x_ptr", "n", "BLOCK"],
                                 cache=cache(configs),
                                 base_fn=types.SimpleNamespace(__name__="loss_kernel"))


def test_backward_takes_the_forward_launch_config():
    x = torch.zeros(3, dtype=torch.bfloat16)
    tuner = _tuner(lambda configs: {(77, "torch.bfloat16"): configs[0],
                                    (77, "torch.float32"): configs[1]})
    recorder = _Recorder()
    bwd = FollowsForwardConfig(recorder, tuner)
    bwd[(1,)](x, 77, torch.zeros(3, dtype=torch.float32))   # (a shadow's dtype is no key)
    assert recorder.launched["BLOCK"] == 64 and recorder.launched["num_warps"] == 2
    bwd[(1,)](x.float(), n=77, dx_ptr=x.float())
    assert recorder.launched["BLOCK"] == 1024


def test_backward_refuses_a_key_the_forward_never_ran():
    tuner = _tuner(lambda configs: {(77, "torch.float32"): configs[1]})
    bwd = FollowsForwardConfig(_Recorder(), tuner)
    with pytest.raises(ForwardConfigError, match=r"loss_kernel.*n=78.*launch the forward first"):
        bwd[(1,)](torch.zeros(3), 78, torch.zeros(3))


def _wrapped_scale_kernel():
    """A kernel under heuristics over autotune over heuristics, its run replaced
    by one that records what the wrappers launch it with."""
    @triton.jit
    def scale(x_ptr, y_ptr, n, w, BLOCK: tl.constexpr, EVEN: tl.constexpr,
              WIDE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs) * w)

    def record(*args, grid, warmup, **kwargs):
        scale.launched = kwargs
    scale.run = record
    configs = [triton.Config({"BLOCK": 64}, num_warps=2),
               triton.Config({"BLOCK": 256}, num_stages=1)]
    inner = triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(scale)
    tuner = triton.autotune(configs=configs, key=["n"])(inner)
    outer = triton.heuristics({"WIDE": lambda args: args["w"] > 1})(tuner)
    return scale, tuner, outer


@pytest.mark.parametrize("order", ["as declared", "reordered"])
def test_launched_as_mirrors_the_wrappers(order):
    """_forward_config.launched_as (what a call plan launches) fills in what
    Triton's own Autotuner.run and Heuristics.run pass the kernel: run on CPU
    with the autotuner's cache holding a choice under the key launched_as
    computes (a different key would make the real run benchmark, which fails
    without a GPU), for arguments in either order (the key's dtypes follow it)."""
    from tritonad._forward_config import launched_as

    scale, tuner, outer = _wrapped_scale_kernel()
    x, y = torch.zeros(8), torch.zeros(8, dtype=torch.float64)
    arguments = dict(x_ptr=x, y_ptr=y, n=512, w=3.0)
    if order == "reordered":
        arguments = dict(reversed(list(arguments.items())))
    assert launched_as(outer, arguments) is None  # (not chosen yet)
    tuner.cache[(512, "torch.float32", "torch.float64") if order == "as declared" else
                (512, "torch.float64", "torch.float32")] = tuner.configs[1]
    jit, launched, filled = launched_as(outer, arguments)
    outer.run(grid=(1,), warmup=False, **arguments)
    assert jit is scale
    assert launched == scale.launched
    assert filled == {"WIDE": True, "BLOCK": 256, "EVEN": True, "num_warps": 4,
                      "num_stages": 1, "num_ctas": 1}
    # (a config with a pre-run hook: each launch must run it, so no plan)
    tuner.configs[1].pre_hook = lambda args: None
    assert launched_as(outer, arguments) is None


def test_launched_as_leaves_subclassed_wrappers_to_their_run():
    """A subclass of Triton's Autotuner (a library's own, whose run may reload a
    config from disk) or Heuristics may launch otherwise than its cache says:
    launched_as does not guess, so call plans and launcher replays take
    Triton's own path."""
    from triton.runtime.autotuner import Autotuner, Heuristics

    from tritonad._forward_config import launched_as

    scale, tuner, outer = _wrapped_scale_kernel()
    arguments = dict(x_ptr=torch.zeros(8), y_ptr=torch.zeros(8, dtype=torch.float64), n=512,
                     w=3.0)
    tuner.cache[(512, "torch.float32", "torch.float64")] = tuner.configs[1]
    assert launched_as(outer, arguments) is not None

    class CachedAutotuner(Autotuner):
        pass

    class OwnHeuristics(Heuristics):
        pass

    tuner.__class__ = CachedAutotuner
    assert launched_as(outer, arguments) is None
    tuner.__class__ = Autotuner
    outer.__class__ = OwnHeuristics
    assert launched_as(outer, arguments) is None


_CONFIGS = [triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 512}),
            triton.Config({"BLOCK": 2048})]


@triton.autotune(configs=_CONFIGS, key=["n"])
@triton.jit
def mse_partial_sums(x_ptr, target_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    """One partial sum of squared differences per program: the layout of partial_ptr
    depends on BLOCK (the host sums it)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    t = tl.load(target_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(partial_ptr + tl.program_id(0), tl.sum((x - t) * (x - t), axis=0) / n)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("chosen", [0, 2])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_autotuned_partial_sums_loss(dtype, chosen):
    dtype = getattr(torch, dtype)
    n = 100_003
    x = torch.randn(n, device="cuda").to(dtype).requires_grad_()
    target = torch.randn(n, device="cuda").to(dtype).requires_grad_()
    # The config the forward launch uses, as if its autotuner had picked it.
    mse_partial_sums.cache[(n, str(dtype), str(dtype), "torch.float32")] = _CONFIGS[chosen]
    loss_fn = tritonad.autograd(mse_partial_sums, outputs=("partial_ptr",))
    programs = triton.cdiv(n, 64)
    partial = torch.zeros(programs, device="cuda", dtype=torch.float32)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    loss = loss_fn[grid](x, target, partial, n).sum()
    assert mse_partial_sums.best_config is _CONFIGS[chosen]
    loss.backward()
    x64, t64 = (t.detach().double().requires_grad_() for t in (x, target))
    ((x64 - t64) ** 2).mean().backward()
    for got, want in ((x.grad, x64.grad), (target.grad, t64.grad)):
        error = ((got.double() - want).abs().max() / want.abs().max()).item()
        assert error <= (1e-5 if dtype == torch.float32 else 8e-3), error
