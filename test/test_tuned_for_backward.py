"""An autotuned forward launched for tritonad tunes among the configs whose backward
fits the device (python/tritonad/_tuned_for_backward.py): the backward follows the
forward's config, and a config the forward runs well may leave a backward that needs
more shared memory than the device has with any number of stages.

CPU: Triton's own Autotuner and Heuristics around a kernel whose launches are
recorded, with the backward's fit and the autotuner's timings given: the configs whose
backward does not fit are pruned before the benchmark; a choice made before (outside
tritonad) whose backward does not fit is forgotten and tuned again; where none fits,
all are kept. GPU: causal attention in fp32 at head dim 128 (tf32 products), autotuned
over (BLOCK_M, BLOCK_N) = (128, 64), whose backward needs 288 KiB, and (64, 64), whose
backward fits; through tritonad.autograd's kernel and launcher forms, tuned afresh and
after a choice of (128, 64) made without a gradient, gradients against fp64."""

import types

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
pytest.importorskip("tritonad")

import triton.language as tl  # noqa: E402

import tritonad  # noqa: E402
from gpu_util import causal_attention_errors, requires_gpu  # noqa: E402
from tritonad import _tuned_for_backward  # noqa: E402
from tritonad._forward_config import FollowsForwardConfig  # noqa: E402

FITS = 512  # (CPU stand-in: a config's backward fits where BLOCK <= FITS)


def _recorded_kernel(timings):
    """heuristics(autotune(heuristics(kernel))) whose kernel records its launches
    (no GPU); the autotuner's benchmark returns `timings[BLOCK]` and records what
    it measured."""
    @triton.jit
    def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr, WIDE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs))

    def record(*args, grid, warmup, **kwargs):
        scale.launched = kwargs
    scale.run = record
    configs = [triton.Config({"BLOCK": block}) for block in (2048, 256, 64)]
    inner = triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(scale)
    tuner = triton.autotune(configs=configs, key=["n"])(inner)
    tuner.measured = []

    def bench(*args, config, **kwargs):
        tuner.measured.append(config.kwargs["BLOCK"])
        return [timings[config.kwargs["BLOCK"]]]
    tuner._bench = bench
    outer = triton.heuristics({"WIDE": lambda args: args["n"] > 1})(tuner)
    return scale, tuner, outer


@pytest.fixture
def fits_below(monkeypatch):
    """The backward's fit decided by BLOCK (on the CPU there is no device to ask)."""
    asked = []

    def compiled_fits(follows, config, arguments, kwargs):
        asked.append(config.kwargs["BLOCK"])
        return config.kwargs["BLOCK"] <= FITS
    monkeypatch.setattr(_tuned_for_backward, "_compiled_fits", compiled_fits)
    monkeypatch.setattr(_tuned_for_backward, "_on_gpu", lambda arguments: True)
    return asked


def _launch(outer, tuner, n=4096):
    backward = FollowsForwardConfig(types.SimpleNamespace(arg_names=tuner.arg_names), tuner)
    x, y = torch.zeros(8), torch.zeros(8)
    with _tuned_for_backward.tuned_for_backward(outer, backward):
        outer.run(x, y, n, grid=(1,), warmup=False)
    assert "run" not in tuner.__dict__ and "prune_configs" not in tuner.__dict__
    return tuner.cache[(n, "torch.float32", "torch.float32")]


def test_configs_whose_backward_does_not_fit_are_not_benchmarked(fits_below):
    scale, tuner, outer = _recorded_kernel({2048: 1.0, 256: 2.0, 64: 3.0})
    chosen = _launch(outer, tuner)
    assert sorted(tuner.measured) == [64, 256]
    assert chosen.kwargs["BLOCK"] == 256 and scale.launched["BLOCK"] == 256
    # (each config's fit is decided once per key)
    assert sorted(fits_below) == [64, 256, 2048]
    _launch(outer, tuner)
    assert sorted(fits_below) == [64, 256, 2048]


def test_a_choice_made_before_whose_backward_does_not_fit_is_tuned_again(fits_below):
    scale, tuner, outer = _recorded_kernel({2048: 1.0, 256: 2.0, 64: 3.0})
    key = (4096, "torch.float32", "torch.float32")
    tuner.cache[key] = tuner.configs[0]  # (as a launch without tritonad chose it)
    assert _launch(outer, tuner).kwargs["BLOCK"] == 256
    assert scale.launched["BLOCK"] == 256
    # A choice whose backward fits is kept, and the forward is not benchmarked.
    tuner.measured.clear()
    tuner.cache[(77, "torch.float32", "torch.float32")] = tuner.configs[2]
    assert _launch(outer, tuner, n=77).kwargs["BLOCK"] == 64 and not tuner.measured


def test_where_no_backward_fits_every_config_is_kept(fits_below, monkeypatch):
    monkeypatch.setattr(_tuned_for_backward, "_compiled_fits", lambda *a: False)
    scale, tuner, outer = _recorded_kernel({2048: 1.0, 256: 2.0, 64: 3.0})
    assert _launch(outer, tuner).kwargs["BLOCK"] == 2048
    assert sorted(tuner.measured) == [64, 256, 2048]


def test_has_choices():
    scale, tuner, outer = _recorded_kernel({2048: 1.0, 256: 2.0, 64: 3.0})
    assert _tuned_for_backward.has_choices(outer) and _tuned_for_backward.has_choices(tuner)
    assert not _tuned_for_backward.has_choices(scale)
    assert not _tuned_for_backward.has_choices(triton.autotune(
        configs=[triton.Config({"BLOCK": 64})], key=["n"])(scale))


def test_a_launch_outside_tritonad_tunes_as_triton_does(fits_below):
    scale, tuner, outer = _recorded_kernel({2048: 1.0, 256: 2.0, 64: 3.0})
    outer.run(torch.zeros(8), torch.zeros(8), 4096, grid=(1,), warmup=False)
    assert scale.launched["BLOCK"] == 2048 and not fits_below


# -- GPU: causal attention, fp32, head dim 128 ----------------------------------------

_ATTENTION_CONFIGS = [triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=1),
                      triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, num_stages=2)]
BH, L, D = 3, 301, 128


def _tuned_attention():
    from corpus.online_softmax import causal_attention_fwd
    return triton.autotune(configs=_ATTENTION_CONFIGS, key=["seq_len", "HEAD_DIM"])(
        causal_attention_fwd)


def _grid(meta):
    return (triton.cdiv(L, meta["BLOCK_M"]), BH)


def _inputs():
    torch.manual_seed(11)
    return [torch.randn(BH, L, D, device="cuda", requires_grad=True) for _ in range(3)]


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("form", ["kernel", "launcher"])
@pytest.mark.parametrize("chosen_before", [False, True])
def test_autotuned_attention_tunes_for_a_backward_that_fits(form, chosen_before):
    tuned = _tuned_attention()
    q, k, v = _inputs()
    key = (L, D, "torch.float32", "torch.float32", "torch.float32", "torch.float32",
           "torch.float32")
    if chosen_before:  # (a launch without a gradient chose the config whose backward is big)
        tuned.cache[key] = _ATTENTION_CONFIGS[0]
    if form == "kernel":
        op = tritonad.autograd(tuned, outputs=("Out", "Lse"))
        out, _ = op[_grid](q, k, v, torch.empty_like(q), torch.empty(BH, L, device="cuda"),
                           D ** -0.5, L, q.stride(0), q.stride(1), HEAD_DIM=D)
    else:
        @tritonad.autograd
        def attention(q, k, v):
            out, lse = torch.empty_like(q), torch.empty(BH, L, device="cuda")
            tuned[_grid](q, k, v, out, lse, D ** -0.5, L, q.stride(0), q.stride(1), HEAD_DIM=D)
            return out
        out = attention(q, k, v)
    assert tuned.cache[key] is _ATTENTION_CONFIGS[1]
    errors = causal_attention_errors(q, k, v, out, torch.randn_like(out))
    assert max(errors) < 1e-2, errors  # (tf32 products)
