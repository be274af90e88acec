"""The backward without the masks a launch makes true everywhere (_masks.py,
cpp/lib/AutoDiff/Schedule/FullMasks.cpp).

CPU: the recorded launch condition, evaluated for launches whose sizes are
and are not multiples of the blocks (a tail in M, N or K, a grouped program
order), and the variant's IR. The numeric check of both variants in the CPU
interpreter is interpret_checks/corpus_kernels.py's `full_masks_variant_by_launch`. GPU:
gradients against torch in both variants (fp16, bf16), with the variant the
launch path picked.
"""

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

from tritonad import _masks  # noqa: E402

from corpus.kernels import attention_fwd_kernel, matmul_kernel  # noqa: E402
from gpu_util import requires_gpu  # noqa: E402
from compile_util import compile_on_cpu  # noqa: E402
from corpus.attention import attention_grads_match_torch  # noqa: E402
from corpus.matmuls import MATMUL_TYPES, grads_into_shadows  # noqa: E402
from corpus.matmuls import assert_close_half as _assert_close  # noqa: E402
from corpus.matmuls import matmul_args as _args, matmul_grid as _grid  # noqa: E402

TILES = dict(BLOCK_M=64, BLOCK_N=32, BLOCK_K=16, GROUP_M=4)


def _compile(bwd, types, constexprs):
    """The compiled backward (CPU, for an sm_90 target) and its derived IR."""
    return compile_on_cpu(bwd, types, constexprs), bwd.derived_ir()


def _matmul_arguments(M, N, K):
    return dict(M=M, N=N, K=K, stride_am=K, stride_ak=1, stride_bk=N, stride_bn=1,
                stride_cm=N, stride_cn=1)


def test_condition_holds_only_for_sizes_that_are_multiples_of_the_blocks(always_compile):
    kernel, _ = _compile(tritonad.grad(matmul_kernel, accumulate=False), MATMUL_TYPES, TILES)
    condition = _masks.condition_of(kernel)
    assert condition is not None
    cases = {(256, 96, 48): True, (256, 96, 47): False, (255, 96, 48): False,
             (256, 95, 48): False, (64, 32, 16): True, (640, 32, 32): True,
             (64 * 9, 32 * 7, 16 * 3): True, (64 * 9 - 63, 32 * 7, 16 * 3): False}
    for (M, N, K), expected in cases.items():
        grid = _grid(M, N, TILES)
        assert _masks.holds(condition, _matmul_arguments(M, N, K), grid) is expected, (M, N, K)
    # A grid with more programs than the sizes need reaches past M: refused.
    assert not _masks.holds(condition, _matmul_arguments(256, 96, 48), (_grid(256, 96, TILES)[0]
                                                                       + 1,))
    # An argument the condition reads but the launch lacks: refused, no error.
    assert not _masks.holds(condition, {"M": 256}, _grid(256, 96, TILES))


def test_the_variant_drops_the_masks_it_covers(always_compile):
    _, masked = _compile(tritonad.grad(matmul_kernel, accumulate=False), MATMUL_TYPES, TILES)
    _, full = _compile(tritonad.grad(matmul_kernel, accumulate=False), MATMUL_TYPES,
                       dict(TILES, tritonad_full_masks=1))
    loads = [line for line in masked.splitlines() if "tt.load" in line]
    assert any(line.count("%") >= 3 for line in loads)  # (pointer, mask, other)
    for line in full.splitlines():
        if "tt.load" in line and "tritonad_regrid" not in line:
            assert ", %" not in line.split("tt.load", 1)[1], line


def test_attention_condition_reads_the_sequence_length(always_compile):
    types = dict(q_ptr="*fp32", k_ptr="*fp32", v_ptr="*fp32", out_ptr="*fp32", lse_ptr="*fp32",
                 sm_scale="fp32", seq_len="i32", stride_bh="i32", stride_s="i32")
    kernel, _ = _compile(tritonad.grad(attention_fwd_kernel, accumulate=False), types,
                         dict(HEAD_DIM=16, BLOCK_M=16, BLOCK_N=32))
    condition = _masks.condition_of(kernel)
    scalars = dict(sm_scale=0.25, stride_s=16)
    for length, expected in ((64, True), (96, True), (80, False), (63, False)):
        grid = (triton.cdiv(length, 16), 3)
        arguments = dict(scalars, seq_len=length, stride_bh=16 * length)
        assert _masks.holds(condition, arguments, grid) is expected, length


@pytest.fixture
def picked(monkeypatch):
    """The variant each launch picked (1: without masks)."""
    choices = []
    original = _masks.choose

    def recording(kernel, kwargs, grid):
        original(kernel, kwargs, grid)
        choices.append(kwargs[_masks.FULL_MASKS])
    monkeypatch.setattr(_masks, "choose", recording)
    return choices


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape, full", [((256, 384, 512), True), ((384, 128, 192), True),
                                         ((256, 384, 500), False), ((250, 384, 512), False)])
@pytest.mark.parametrize("tiles", [dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8),
                                   dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8)])
def test_matmul_grads_match_torch_in_both_variants(picked, dtype, shape, full, tiles):
    M, N, K = shape
    a = torch.randn(M, K, device="cuda", dtype=dtype)
    b = torch.randn(K, N, device="cuda", dtype=dtype)
    dc = torch.randn(M, N, device="cuda", dtype=dtype)
    ref_a, ref_b = dc.double() @ b.double().t(), a.double().t() @ dc.double()
    op = tritonad.autograd(matmul_kernel, outputs=("c_ptr",))
    at, bt = a.clone().requires_grad_(), b.clone().requires_grad_()
    c = op[_grid(M, N, tiles)](*_args(at, bt, torch.empty(M, N, device="cuda", dtype=dtype)),
                               **tiles)
    got = torch.autograd.grad(c, (at, bt), dc)
    _assert_close(got[0], ref_a)
    _assert_close(got[1], ref_b)
    assert picked and set(picked) == {int(full)}, picked
    picked.clear()
    grads_into_shadows(a, b, dc, tiles, ref_a, ref_b)
    assert picked and set(picked) == {int(full)}, picked


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("length, full", [(128, True), (256, True), (200, False)])
def test_attention_grads_match_torch_in_both_variants(picked, length, full):
    attention_grads_match_torch(length)
    assert picked and set(picked) == {int(full)}, picked
