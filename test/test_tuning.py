"""The backward's own launch options (_tuning.py, ``tune=``).

CPU: the option is validated where it is given; the search (stages up, then
down, then warps) and the user's list run against a fake kernel and clock: the
choice, the trials each starting from the written tensors' content, one search
per key, candidates that do not fit skipped. GPU: gradients against torch with
tuned launches (re-parallelized matmul parts, attention with atomics, shadows
that hold a value before the launch), the search having run.
"""

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

from tritonad import _tuning  # noqa: E402

from corpus.kernels import matmul_kernel  # noqa: E402
from gpu_util import causal_attention_errors, requires_gpu  # noqa: E402
from corpus.attention import attention_grads_match_torch  # noqa: E402
from corpus.user_kernels import gelu_autotuned_kernel  # noqa: E402
from corpus.matmuls import assert_close_half as _assert_close  # noqa: E402
from corpus.matmuls import matmul_args as _args, matmul_grid as _grid  # noqa: E402


@pytest.mark.parametrize("tune", ["fast", [], [{"num_wraps": 4}], [{"num_warps": 0}],
                                  [{"num_stages": True}], ({"num_warps": 4}, 3), 1])
def test_a_bad_tune_is_refused_where_it_is_given(tune):
    with pytest.raises(TypeError, match="tune"):
        tritonad.grad(matmul_kernel, tune=tune)
    with pytest.raises(TypeError, match="tune"):
        tritonad.autograd(matmul_kernel, outputs=("c_ptr",), tune=tune)
    with pytest.raises(TypeError, match="tune"):
        tritonad.autograd(lambda a: a, tune=tune)


def test_good_tunes_are_taken():
    for tune in (False, True, [{"num_warps": 4}, {"num_warps": 8, "num_stages": 3,
                                                   "maxnreg": 128}]):
        assert tritonad.grad(matmul_kernel, tune=tune).tune == tune
        assert tritonad.grad(gelu_autotuned_kernel, tune=tune).tune == tune  # (rewrapped)
        tritonad.autograd(lambda a: a, tune=tune)


class _Metadata:
    def __init__(self, num_warps, num_stages):
        self.num_warps, self.num_stages = num_warps, num_stages


class _Kernel:
    def __init__(self, num_warps, num_stages):
        self.metadata = _Metadata(num_warps, num_stages)

    def _init_handles(self):
        pass


class _FakeBackward:
    """A `run` whose compiled kernels are keyed by their options, and whose
    launches add 1 to `written` and note the options for the clock."""

    def __init__(self, base=(8, 3), cost=None, too_big=lambda warps, stages: stages >= 5):
        self.base, self.too_big = base, too_big
        self.cost = cost or (lambda w, s: 20.0 + 10 * abs(s - 4) + 5 * abs(w - 4))
        self.written = torch.zeros(4)
        self.kernels, self.launches, self.timings = {}, [], 0

    def options(self, kwargs):
        return kwargs.get("num_warps", self.base[0]), kwargs.get("num_stages", self.base[1])

    def run(self, grid, warmup, **kwargs):
        key = self.options(kwargs)
        kernel = self.kernels.setdefault(key, _Kernel(*key))
        if not warmup:
            self.written += 1
            self.launches.append(key)
        return kernel

    def fits(self, kernel):
        return not self.too_big(kernel.metadata.num_warps, kernel.metadata.num_stages)

    def clock(self, go, restore):
        restore()
        assert torch.equal(self.written, self.before)  # (each trial from the launch's start)
        go()
        self.timings += 1
        return self.cost(*self.launches[-1])

    def launch(self, tune, **kwargs):
        self.before = self.written.clone()
        return _tuning.launch(self.run, (7,), dict(x=3, **kwargs), tune, [self.written], None,
                              self.fits, lambda run, grid, kernel, arguments: kernel,
                              clock=self.clock)


def test_the_search_moves_stages_then_warps_and_launches_once_with_the_choice():
    fake = _FakeBackward()
    fake.written += 5
    fake.launch(True)
    # (8, 3) -> (8, 4); (8, 5) does not fit; then 4 warps beat 8 (16 is not tried)
    assert fake.launches[-1] == (4, 4)
    assert set(fake.kernels) == {(8, 3), (8, 4), (8, 5), (4, 4)}
    assert torch.equal(fake.written, torch.full((4,), 6.0))  # (trials restored, then one launch)
    kernel = fake.kernels[(8, 3)]
    assert list(kernel.tritonad_tuned.values()) == [
        {"num_warps": 4, "num_stages": 4, "maxnreg": None}]
    timings = fake.timings
    fake.launch(True)
    assert fake.timings == timings and fake.launches[-1] == (4, 4)  # (kept per key)
    fake.launch(True, y=4)  # (another integer argument: another key)
    assert fake.timings > timings


class _SharedMemoryBound(_Kernel):
    """A compiled kernel that does not load past `fits_up_to` pipeline stages, as
    Triton raises OutOfResources for shared memory at the first launch."""

    def __init__(self, num_warps, num_stages, fits_up_to):
        super().__init__(num_warps, num_stages)
        self.fits_up_to = fits_up_to

    def _init_handles(self):
        from triton.runtime.errors import OutOfResources
        if self.metadata.num_stages > self.fits_up_to:
            raise OutOfResources(1000 * self.metadata.num_stages, 1000 * self.fits_up_to,
                                 "shared memory")


def test_an_untuned_launch_takes_the_most_pipeline_stages_that_fit():
    # (the backward of a loop its forward did not pipeline, a counted while loop
    # made a for loop, may need more shared memory than the forward's stages allow)
    from tritonad import _partial

    from triton.runtime.errors import OutOfResources

    for fits_up_to, want in ((2, 2), (4, 4), (0, None)):
        kernels = {}

        def run(grid, warmup, **kwargs):
            key = (kwargs["num_warps"], kwargs["num_stages"])
            return kernels.setdefault(key, _SharedMemoryBound(*key, fits_up_to))
        arguments = dict(x=3, num_warps=4, num_stages=4)
        if want is None:
            # (none fits: Triton's OutOfResources, its type kept for autotuners'
            # benchmarks, noted with what tritonad tried and what to change; it was
            # raised from the warps' search before, fla's fused_chunk_retention)
            with pytest.raises(OutOfResources) as raised:
                _partial._with_stages_that_fit(run, (7,), arguments)
            if hasattr(raised.value, "__notes__"):
                (note,) = raised.value.__notes__
                assert "any number of pipeline stages" in note and "smaller block" in note
            assert set(kernels) == {(4, 4), (4, 3), (4, 2), (4, 1)}  # (every count tried)
            continue
        chosen, kernel = _partial._with_stages_that_fit(run, (7,), arguments)
        assert kernel is kernels[(4, chosen["num_stages"])]  # (compiled with the choice)
        # (fits at 4: unchanged; at 2: the most below 4 that fits)
        assert chosen["num_stages"] == want and chosen["x"] == 3, (fits_up_to, chosen)
        assert (chosen is arguments) == (want == 4)


def test_the_search_goes_down_when_up_is_slower_and_keeps_ties():
    fake = _FakeBackward(base=(4, 3), cost=lambda w, s: 30.0 + 10 * abs(s - 2))
    fake.written += 5
    fake.launch(True)
    # up (4) is slower; down: 2 better, 1 slower; warps 8 and 2 tie with 4: kept
    assert fake.launches[-1] == (4, 2)
    assert {(4, 4), (4, 2), (4, 1), (8, 2), (2, 2)} <= set(fake.kernels)


def test_a_launch_bound_kernel_keeps_the_forward_options():
    fake = _FakeBackward(cost=lambda w, s: 3.0)
    fake.written += 5
    fake.launch(True)
    assert fake.launches[-1] == (8, 3) and set(fake.kernels) == {(8, 3)}


def test_the_users_list_is_timed_as_given_and_what_does_not_fit_is_skipped():
    fake = _FakeBackward()
    fake.written += 5
    fake.launch([{"num_warps": 2}, {"num_stages": 5}, {"num_warps": 4, "num_stages": 4}])
    assert fake.launches[-1] == (4, 4)
    assert (8, 5) in fake.kernels and fake.timings == 2
    fake = _FakeBackward()
    fake.written += 5
    with pytest.raises(RuntimeError, match="none of the launch options"):
        fake.launch([{"num_stages": 5}, {"num_stages": 6}])


def test_the_interpreter_launches_untimed():
    fake = _FakeBackward()
    fake.kernels[(8, 3)] = type("Interpreted", (), {})()
    fake.launch(True)
    assert fake.launches == [(8, 3)] and fake.timings == 0


class _Spilling:
    """A `run` whose kernels spill `spills[warps]` words per thread."""

    def __init__(self, spills, base_warps=4):
        self.spills, self.base_warps, self.compiled, self.launched = spills, base_warps, {}, []

    def run(self, grid, warmup, **kwargs):
        warps = kwargs.get("num_warps", self.base_warps)
        kernel = self.compiled.setdefault(warps, _Kernel(warps, 2))
        kernel.n_spills = self.spills[warps]
        if not warmup:
            self.launched.append(warps)
        return kernel


@pytest.mark.parametrize("spills, launched", [
    ({4: 364, 8: 156}, 8),          # heavy spills halved by twice the warps: taken
    ({2: 400, 4: 150, 8: 20}, 8),   # twice, while each doubling halves them
    ({4: 52, 8: 0}, 4),             # a few spills: the forward's warps
    ({4: 300, 8: 200}, 4),          # twice the warps hardly help: kept
])
def test_warps_follow_the_backward_registers(spills, launched):
    from tritonad import _partial
    fake = _Spilling(spills, base_warps=min(spills))
    launch = _partial._Launcher(fake.run, {"x": 1}, (), False)
    launch((7,), {"x": 1})
    compiled = dict(fake.compiled)
    launch((7,), {"x": 1})
    assert fake.launched == [launched, launched]
    assert fake.compiled == compiled  # (decided once per compiled kernel)


def test_a_register_cap_or_tuning_keeps_its_own_warps():
    from tritonad import _partial
    fake = _Spilling({4: 364, 8: 156})
    _partial._Launcher(fake.run, {}, (), False)((7,), {"maxnreg": 128})
    assert fake.launched == [4] and set(fake.compiled) == {4}


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(256, 384, 512), (250, 130, 190)])
def test_tuned_matmul_parts_match_torch(monkeypatch, dtype, shape):
    searched = []
    original = _tuning._Search.best
    monkeypatch.setattr(_tuning._Search, "best", lambda self, kernel, tune: searched.append(
        self.grid) or original(self, kernel, tune))
    M, N, K = shape
    tiles = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8)
    a = torch.randn(M, K, device="cuda", dtype=dtype)
    b = torch.randn(K, N, device="cuda", dtype=dtype)
    dc = torch.randn(M, N, device="cuda", dtype=dtype)
    ref_a, ref_b = dc.double() @ b.double().t(), a.double().t() @ dc.double()
    op = tritonad.autograd(matmul_kernel, outputs=("c_ptr",), tune=True)
    at, bt = a.clone().requires_grad_(), b.clone().requires_grad_()
    c = op[_grid(M, N, tiles)](*_args(at, bt, torch.empty(M, N, device="cuda", dtype=dtype)),
                               **tiles, num_warps=4, num_stages=2)
    got = torch.autograd.grad(c, (at, bt), dc)
    _assert_close(got[0], ref_a)
    _assert_close(got[1], ref_b)
    assert searched, "no backward launch was tuned"
    # Given shadows holding a value: every trial started from it, one launch added.
    bwd = tritonad.grad(matmul_kernel, tune=[{"num_warps": 4, "num_stages": 2},
                                             {"num_warps": 8, "num_stages": 3}])
    da, db = torch.full_like(a, 0.5), torch.zeros_like(b)
    bwd[_grid(M, N, tiles)](*_args(a, b, torch.empty(M, N, device="cuda", dtype=dtype)), da, db,
                            dc, **tiles)
    _assert_close(da - 0.5, ref_a)
    _assert_close(db, ref_b)


@pytest.mark.gpu
@requires_gpu
def test_tuned_attention_with_atomics_matches_torch():
    attention_grads_match_torch(300, tune=True)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("mode", ["auto", "deterministic"])
def test_attention_at_head_dim_128_takes_the_warps_its_registers_need(monkeypatch, dtype, mode):
    from corpus.online_softmax import causal_attention_fwd
    from tritonad import _partial
    chosen = []  # (spills with the forward's warps, the warps chosen)
    original = _partial._warps_for_registers

    def warps_for_registers(run, grid, kernel, arguments):
        warps = original(run, grid, kernel, arguments)
        chosen.append((kernel.n_spills, warps))
        return warps
    monkeypatch.setattr(_partial, "_warps_for_registers", warps_for_registers)
    torch.manual_seed(5)
    BH, L, D = 3, 301, 128
    q, k, v = (torch.randn(BH, L, D, device="cuda", dtype=dtype, requires_grad=True)
               for _ in range(3))
    op = tritonad.autograd(causal_attention_fwd, outputs=("Out", "Lse"), mode=mode)
    out, lse = torch.empty_like(q), torch.empty(BH, L, device="cuda")
    out, lse = op[(triton.cdiv(L, 64), BH)](q, k, v, out, lse, D ** -0.5, L, q.stride(0),
                                            q.stride(1), BLOCK_M=64, BLOCK_N=64, HEAD_DIM=D,
                                            num_warps=4, num_stages=2)
    errors = causal_attention_errors(q, k, v, out, torch.randn_like(out))
    assert max(errors) < (2e-2 if dtype == torch.bfloat16 else 4e-3), errors
    # (a backward that spills heavily with the forward's 4 warps takes 8)
    assert chosen and all(warps == 8 or spills <= _partial._SPILLS_HEAVY
                          for spills, warps in chosen), chosen
