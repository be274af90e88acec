"""Derived backwards in which Triton 3.6 would convert an accumulator tile of a warpgroup
MMA (wgmma) narrower than 64 columns into the register operand of a wgmma of another
instruction shape are lowered again with the warp MMA only (_hook.py,
regroups_accumulator): Hopper miscompiled them (fla's chunk_delta_rule h kernel at
BV = 32 with 4 warps: wrong dk, dv, dbeta; test/peer/test_fla.py sweeps its configs
on a GPU, test_gradients_on_the_gpu below checks this file's kernel). Compiled on the
CPU for sm_90: PTX and metadata."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import tritonad  # noqa: E402
from compile_util import compile_on_cpu  # noqa: E402
from gpu_util import requires_gpu  # noqa: E402
from tritonad._hook import WARP_MMA_ONLY, regroups_accumulator  # noqa: E402


@triton.jit
def scores_then_values(q_ptr, k_ptr, v_ptr, o_ptr, BM: tl.constexpr, BN: tl.constexpr,
                       D: tl.constexpr):
    """One tile of attention without the softmax, o = (q k^T) v: the backward's
    dS = dO v^T (BN columns) is the register operand of dQ = dS k (D columns)."""
    rm, rn, rd = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    k = tl.load(k_ptr + rn[:, None] * D + rd[None, :])
    v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
    s = tl.dot(q, tl.trans(k))
    o = tl.dot(s.to(tl.float16), v)
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], o.to(tl.float16))


def _compiled(bn, d, num_warps=4):
    bwd = tritonad.grad(scores_then_values)
    types = dict(q_ptr="*fp16", k_ptr="*fp16", v_ptr="*fp16", o_ptr="*fp16")
    return compile_on_cpu(bwd, types, dict(BM=64, BN=bn, D=d), num_warps=num_warps)


def test_narrow_accumulator_into_another_product_is_lowered_with_the_warp_mma():
    compiled = _compiled(32, 64)
    assert compiled.metadata._asdict().get(WARP_MMA_ONLY) is True
    assert "wgmma" not in compiled.asm["ptx"]
    assert "mma.sync" in compiled.asm["ptx"]
    assert not regroups_accumulator(compiled.asm["ttgir"])


@pytest.mark.parametrize("bn, d, num_warps", [(64, 64, 4), (64, 128, 4), (64, 128, 8)])
def test_wider_accumulators_keep_the_warpgroup_mma(bn, d, num_warps):
    # (64 columns into 64 or 128: attention's shapes, right on Hopper; with 8 warps
    # the 64 columns are two instructions of 32, into products of 64)
    compiled = _compiled(bn, d, num_warps)
    assert WARP_MMA_ONLY not in compiled.metadata._asdict()
    assert "wgmma" in compiled.asm["ptx"]


@pytest.mark.parametrize("name", ["fa2_helper_causal", "one_loop_causal"])
def test_attention_at_head_dim_128_with_8_warps_keeps_the_warpgroup_mma(name):
    # (64 x 64 tiles at head dim 128: the launch path gives the backward 8 warps for its
    # registers (test_tuning), and dS, 64 columns in instructions of 32, feeds dQ's
    # product; a rule by instruction shape once lowered it without wgmma)
    from triton.runtime.jit import mangle_type
    from corpus import attention_spellings as spellings

    spelling = spellings.BY_NAME[name]
    t = spellings.inputs(spelling, 1, 4, 1024, 128, torch.float16, "cpu", requires_grad=False)
    _, args, kwargs = spelling.launch(spelling.kernel, t, dict(BLOCK_M=64, BLOCK_N=64))
    kernel = spelling.kernel
    bound = {**dict(zip(kernel.arg_names, args)),
             **{n: v for n, v in kwargs.items() if n in kernel.arg_names}}
    constexprs = {p.name: bound[p.name] for p in kernel.params
                  if p.name in bound and (p.is_constexpr or bound[p.name] is None)}
    types = {n: mangle_type(v) for n, v in bound.items() if n not in constexprs}
    compiled = compile_on_cpu(tritonad.grad(kernel), types, constexprs, num_warps=8)
    assert WARP_MMA_ONLY not in compiled.metadata._asdict()
    assert "wgmma" in compiled.asm["ptx"]


def test_forwards_keep_their_lowering(always_compile):
    # The user's forward has the same shape (s, 32 columns, into o's product) and is
    # Triton's to lower, as is the forward tritonad.autograd runs to save residuals
    # (register_rewriter(..., derives=False)): only derivatives are lowered again.
    from triton.compiler import ASTSource
    from tritonad import _hook, _signature
    from compile_util import TARGET

    signature = dict(q_ptr="*fp16", k_ptr="*fp16", v_ptr="*fp16", o_ptr="*fp16",
                     BM="constexpr", BN="constexpr", D="constexpr")
    compiled = triton.compile(ASTSource(scores_then_values, signature,
                                        dict(BM=64, BN=32, D=64)), target=TARGET)
    assert regroups_accumulator(compiled.asm["ttgir"])
    assert "wgmma" in compiled.asm["ptx"] and WARP_MMA_ONLY not in compiled.metadata._asdict()
    tritonad.grad(scores_then_values)  # (registers the backward's rewriter)
    assert _signature._BWD_MARKER in _hook._DERIVING
    marker = "__tritonad_test_forward_"
    _hook.register_rewriter(marker, lambda text, metadata: text, lambda metadata: None,
                            order=9, derives=False)
    try:
        assert marker not in _hook._DERIVING
    finally:
        del _hook._REWRITERS[marker], _hook._RESTORERS[marker]


def test_regroups_accumulator_reads_the_layouts():
    layouts = ("#mma = #ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = "
               "[4, 1], instrShape = [16, %d, 16]}>\n#mma1 = #ttg.nvidia_mma<{versionMajor = 3, "
               "versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, %d, 16]}>\n")
    convert = ("%b = ttg.convert_layout %a : tensor<64x32xbf16, #mma> -> tensor<64x32xbf16, "
               "#ttg.dot_op<{opIdx = 0, parent = #mma1, kWidth = 2}>>\n")
    assert regroups_accumulator(layouts % (32, 64) + convert)
    wide = convert.replace("64x32", "64x64")
    assert not regroups_accumulator(layouts % (64, 128) + wide)
    assert not regroups_accumulator(layouts % (32, 32) + convert)
    assert not regroups_accumulator(layouts % (32, 64))
    # (a tile of 64 columns, instruction shape N 32 into N 64: attention's dS into
    # dQ's product at head dim 128 with 8 warps, right on Hopper)
    assert not regroups_accumulator(layouts % (32, 64) + wide)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("bn, d, num_warps", [(32, 64, 4), (64, 128, 4), (64, 128, 8)])
def test_gradients_on_the_gpu(bn, d, num_warps):
    torch.manual_seed(0)
    q = (torch.randn(64, d, device="cuda") / d ** 0.5).half().requires_grad_()
    k, v = (torch.randn(bn, d, device="cuda").half().requires_grad_() for _ in range(2))
    op = tritonad.autograd(scores_then_values, outputs=("o_ptr",))
    o = op[(1,)](q, k, v, torch.empty(64, d, device="cuda", dtype=torch.float16),
                 BM=64, BN=bn, D=d, num_warps=num_warps)
    upstream = torch.randn_like(o)
    o.backward(upstream)
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    ((leaves[0] @ leaves[1].T) @ leaves[2]).backward(upstream.double())
    for got, want in zip((q.grad, k.grad, v.grad), leaves):
        error = ((got.double() - want.grad).abs().max() / want.grad.abs().max()).item()
        assert error < 1e-2, error
