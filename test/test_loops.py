"""Loops that carry a running max used only to stabilize exponentials.

An online softmax (flash attention, an online logsumexp, a cross-entropy over
vocabulary blocks) carries m = max(m, max(block)) and rescales its other carried
values by exp(m_old - m_new). The result does not depend on m: m is a
*stabilizer*. Such a loop can be reversed in O(n) (the final m and the saved
statistics give every iteration's weights) instead of by replaying iterations
[0, i) for iteration i (n(n-1)/2 extra iterations).

The kernels are test/corpus/online_softmax.py's: a. causal flash attention (and its
two-loop form), b. non-causal attention spelled with tl.exp, c. a cross-entropy over
vocabulary blocks, d. a two-pass softmax, and two NEGATIVE cases: e. the running max is
also stored, f. a shifted sum that changes with m is stored.

GPU tests (marked ``gpu``) launch each kernel's derived backward with zeroed input
shadows and compare with torch.autograd of a float64 reference (odd sizes, masked
tails). CPU tests compile each backward for sm_90 and read ``bwd.schedule()``: the
key loop of a-d (and of corpus/user_kernels.py's online logsumexp and attention) must be
reported as reversed through its stabilizer (the note contains "stabilizer", not
"n(n-1)/2"); e must keep the quadratic replay; f must not be called a stabilizer.
Interpreter tests run a (in fp32), b, c, d, e and f under TRITON_INTERPRET=1 in a
fresh Python (as test_interpret.py does), this file being the script:

    TRITON_INTERPRET=1 python test/test_loops.py [out.json [seed [name ...]]]
"""

import inspect
import os
import re
import sys

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

import torch.nn.functional as F  # noqa: E402
import triton.language as tl  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import interpreter_util as iu  # noqa: E402
from compile_util import compile_backward  # noqa: E402
from corpus.online_softmax import (HALF_TOL, attention_exp_fwd, attention_reference,  # noqa: E402
                                   causal_attention_fwd, cross_entropy_fwd,
                                   running_max_stored_fwd, running_sum_stored_fwd,
                                   two_pass_softmax_fwd, two_stage_causal_attention_fwd)
from corpus.user_kernels import attention_kernel, online_logsumexp_kernel  # noqa: E402
from gpu_util import (assert_near, make_generator, randn, reference_grads,  # noqa: E402
                      requires_gpu)

F32, F16, BF16 = "*fp32", "*fp16", "*bf16"


pytestmark = pytest.mark.usefixtures("always_compile")


# ---------------------------------------------------------------------------
# CPU: what the schedule says about each loop
# ---------------------------------------------------------------------------

def _for_lines(kernel):
    """Line numbers (in this file) of the kernel's `for` statements, in order."""
    lines, start = inspect.getsourcelines(kernel.fn)
    return [start + i for i, text in enumerate(lines) if text.strip().startswith("for ")]


def loop_notes(bwd, kernel):
    """{source line of the loop: its schedule note} for the loops of `kernel`."""
    notes = {}
    for line in bwd.schedule().splitlines():
        if not line.startswith("loop "):
            continue
        at = re.search(re.escape(os.path.basename(inspect.getsourcefile(kernel.fn)))
                       + r":(\d+):\d+", line)
        if at:
            notes[int(at.group(1))] = line
    return notes


def key_loop_note(kernel, types, constexprs, none=(), which=0):
    bwd = tritonad.grad(kernel)
    compile_backward(bwd, types, constexprs, none=none)
    line = _for_lines(kernel)[which]
    notes = loop_notes(bwd, kernel)
    assert line in notes, (f"no schedule note for the loop at line {line}:\n"
                           f"{bwd.schedule()}")
    return notes[line], bwd


def assert_stabilizer(note, schedule):
    assert "stabilizer" in note, f"expected an O(n) stabilizer reversal:\n{schedule}"
    assert "n(n-1)/2" not in note, f"the loop is still replayed quadratically:\n{schedule}"


ATTN_TYPES = dict(Q=F16, K=F16, V=F16, Out=F16, Lse=F32, sm_scale="fp32", seq_len="i32",
                  stride_bh="i32", stride_s="i32")
ATTN_EXP_TYPES = dict(Q=F32, K=F32, V=F32, Out=F32, sm_scale="fp32", seq_len="i32",
                      stride_bh="i32", stride_s="i32")


def test_causal_attention_loop_is_reversed_through_its_stabilizer():
    note, bwd = key_loop_note(causal_attention_fwd, ATTN_TYPES,
                              dict(BLOCK_M=64, BLOCK_N=64, HEAD_DIM=64))
    assert_stabilizer(note, bwd.schedule())


def test_causal_attention_bf16_loop_is_reversed_through_its_stabilizer():
    types = {k: (BF16 if v == F16 else v) for k, v in ATTN_TYPES.items()}
    note, bwd = key_loop_note(causal_attention_fwd, types,
                              dict(BLOCK_M=64, BLOCK_N=32, HEAD_DIM=64))
    assert_stabilizer(note, bwd.schedule())


def test_attention_exp_loop_is_reversed_through_its_stabilizer():
    note, bwd = key_loop_note(attention_exp_fwd, ATTN_EXP_TYPES,
                              dict(BLOCK_M=32, BLOCK_N=32, HEAD_DIM=32))
    assert_stabilizer(note, bwd.schedule())


def test_cross_entropy_loop_is_reversed_through_its_stabilizer():
    note, bwd = key_loop_note(cross_entropy_fwd,
                              dict(logits=F32, targets="*i64", loss=F32, stride="i32",
                                   V="i32"),
                              dict(BLOCK=1024), none=("dtargets",))
    assert_stabilizer(note, bwd.schedule())


def test_cross_entropy_bf16_loop_is_reversed_through_its_stabilizer():
    note, bwd = key_loop_note(cross_entropy_fwd,
                              dict(logits=BF16, targets="*i64", loss=F32, stride="i32",
                                   V="i32"),
                              dict(BLOCK=1024), none=("dtargets",))
    assert_stabilizer(note, bwd.schedule())


def test_two_pass_softmax_first_loop_is_reversed_through_its_stabilizer():
    note, bwd = key_loop_note(two_pass_softmax_fwd,
                              dict(x=F32, y=F32, stride="i32", N="i32"), dict(BLOCK=512))
    assert_stabilizer(note, bwd.schedule())
    # the second loop carries nothing differentiated: it must not be replayed either
    for note in loop_notes(bwd, two_pass_softmax_fwd).values():
        assert "n(n-1)/2" not in note, bwd.schedule()


def test_corpus_online_logsumexp_loop_is_reversed_through_its_stabilizer():
    # corpus/user_kernels.py's kernel: a per-lane running max, reduced after the loop.
    note, bwd = key_loop_note(online_logsumexp_kernel,
                              dict(x_ptr=F32, out_ptr=F32, stride="i32", N="i32"),
                              dict(BLOCK=256))
    assert_stabilizer(note, bwd.schedule())


def test_corpus_attention_loop_is_reversed_through_its_stabilizer():
    note, bwd = key_loop_note(attention_kernel,
                              dict(Q=F32, K=F32, V=F32, Out=F32, stride_q="i32",
                                   stride_k="i32", stride_v="i32", stride_o="i32",
                                   n_ctx="i32", sm_scale="fp32"),
                              dict(BLOCK_M=32, BLOCK_N=32, HEAD_DIM=16))
    assert_stabilizer(note, bwd.schedule())


def test_stored_running_max_falls_back_to_replay():
    # m is stored: it is not only a stabilizer, the O(n) reversal does not apply.
    note, bwd = key_loop_note(running_max_stored_fwd,
                              dict(x=F32, lse=F32, mx=F32, stride="i32", N="i32"),
                              dict(BLOCK=256))
    assert "n(n-1)/2" in note, bwd.schedule()
    assert "stabilizer" not in note, bwd.schedule()


def test_stored_shifted_sum_is_not_a_stabilizer():
    # s = sum(exp(x - m)) is stored: the results change with m, so the shift
    # invariance check must refuse the O(n) reversal.
    note, bwd = key_loop_note(running_sum_stored_fwd,
                              dict(x=F32, lse=F32, s_out=F32, stride="i32", N="i32"),
                              dict(BLOCK=256))
    assert "stabilizer" not in note, bwd.schedule()


# ---------------------------------------------------------------------------
# GPU: numbers against torch.autograd in float64
# ---------------------------------------------------------------------------

def run_causal_attention(seq_len, dtype, block_m, block_n, tag, dlse_kind="random",
                         BH=6, D=64, kernel=None):
    kernel = kernel or causal_attention_fwd
    gen = make_generator("causal_attention", tag, seq_len, str(dtype), block_m, block_n)
    q, k, v = (randn(gen, BH, seq_len, D, dtype=dtype) for _ in range(3))
    out = torch.empty_like(q)
    lse = torch.empty(BH, seq_len, device="cuda", dtype=torch.float32)
    sm_scale = D ** -0.5
    grid = (triton.cdiv(seq_len, block_m), BH)
    args = (q, k, v, out, lse, sm_scale, seq_len, q.stride(0), q.stride(1))
    meta = dict(BLOCK_M=block_m, BLOCK_N=block_n, HEAD_DIM=D)
    kernel[grid](*args, **meta)

    dout = randn(gen, BH, seq_len, D, dtype=dtype)
    dlse = (randn(gen, BH, seq_len) if dlse_kind == "random"
            else torch.zeros(BH, seq_len, device="cuda"))
    (ref_out, ref_lse), ref = reference_grads(
        lambda a, b, c: attention_reference(a, b, c, sm_scale, causal=True), [q, k, v],
        [dout, dlse])
    # the forward itself: out in the storage dtype, lse in fp32 (log2 units)
    assert_near("Out", out, ref_out, HALF_TOL)
    torch.testing.assert_close(lse.double(), ref_lse.detach(), atol=1e-3, rtol=1e-4)

    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    bwd = tritonad.grad(kernel)
    bwd[grid](*args, dQ=dq, dK=dk, dV=dv, dOut=dout.clone(), dLse=dlse.clone(), **meta)
    for name, got, want in zip(("dQ", "dK", "dV"), (dq, dk, dv), ref):
        assert got.dtype == dtype
        assert_near(name, got, want, HALF_TOL)
    return bwd


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("seq_len,block_m,block_n", [(100, 64, 64), (250, 64, 32),
                                                     (1000, 64, 64)])
def test_causal_attention_grad(seq_len, block_m, block_n, dtype):
    run_causal_attention(seq_len, dtype, block_m, block_n, "grad")


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("seq_len", [100, 777])
def test_two_stage_causal_attention_grad(seq_len, dtype):
    # Two loops of one stabilizer family, each reversed in one pass.
    bwd = run_causal_attention(seq_len, dtype, 64, 32, "two_stage", kernel=two_stage_causal_attention_fwd)
    notes = [line for line in bwd.schedule().splitlines() if line.startswith("loop ")]
    assert len(notes) == 2 and all("only stabilizes exponentials" in n for n in notes), \
        bwd.schedule()


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("seq_len,block_m,block_n", [(100, 64, 64), (777, 64, 64),
                                                     (1000, 128, 64)])
def test_two_stage_causal_attention_deterministic(seq_len, block_m, block_n, dtype):
    # mode="deterministic" through tritonad.autograd: dK and dV summed by
    # programs of their own for each loop, the diagonal loop's in a second
    # launch; no atomic contention, bitwise the same on a second run.
    gen = make_generator("two_stage_deterministic", seq_len, str(dtype), block_m, block_n)
    BH, D = 5, 64
    q, k, v = (randn(gen, BH, seq_len, D, dtype=dtype) for _ in range(3))
    sm_scale = D ** -0.5
    op = tritonad.autograd(two_stage_causal_attention_fwd, outputs=("Out", "Lse"),
                           mode="deterministic")
    dout, dlse = randn(gen, BH, seq_len, D, dtype=dtype), randn(gen, BH, seq_len)
    runs = []
    for _ in range(2):
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        out, lse = op[(triton.cdiv(seq_len, block_m), BH)](
            *leaves, torch.empty_like(q), torch.empty(BH, seq_len, device="cuda"), sm_scale,
            seq_len, q.stride(0), q.stride(1), BLOCK_M=block_m, BLOCK_N=block_n, HEAD_DIM=D)
        runs.append(torch.autograd.grad((out, lse), leaves, (dout, dlse)))
    _, ref = reference_grads(
        lambda a, b, c: attention_reference(a, b, c, sm_scale, causal=True), [q, k, v],
        [dout, dlse])
    for name, got, again, want in zip(("dQ", "dK", "dV"), runs[0], runs[1], ref):
        assert got.dtype == dtype
        assert_near(name, got, want, HALF_TOL)
        assert torch.equal(got, again), name
    lines = {line.split(": ", 1)[0]: line for line in op.backward_kernel.schedule().splitlines()}
    for name in ("K", "V"):
        assert lines[name].count("re-parallelized (programs of its own") == 2, lines[name]


def test_two_stage_attention_with_mixed_row_counts_keeps_atomics():
    # BLOCK_N = 32 < 64 <= BLOCK_M, fp16: parts for both loops were measured
    # wrong on an H100 (Triton 3.6; an illegal address), so dK and dV keep the
    # forward's schedule; deterministic mode sums them through scatter slots
    # instead (their gradients: interpret_two_stage_attention_mixed_rows_deterministic).
    from triton.compiler import ASTSource

    from compile_util import TARGET
    from tritonad._partial import WORKSPACE_TYPES
    from tritonad._residuals import RESIDUALS

    types = dict(Q=F16, K=F16, V=F16, Out=F16, Lse=F32, sm_scale="fp32", seq_len="i32",
                 stride_bh="i32", stride_s="i32", **WORKSPACE_TYPES, **{RESIDUALS: "*i8"})
    for mode, strategy in (("deterministic", "scatter-slots"), ("auto", "atomic")):
        bwd = tritonad.autograd(two_stage_causal_attention_fwd, outputs=("Out", "Lse"),
                                mode=mode).backward_kernel
        for pointer, shadow in bwd.shadows.items():
            types[shadow] = types[pointer]
        constants = dict(BLOCK_M=64, BLOCK_N=32, HEAD_DIM=64)
        signature = {n: "constexpr" if n in constants else types[n] for n in bwd.arg_names}
        triton.compile(ASTSource(bwd, signature, constants), target=TARGET)
        entries = {e.subject: e for e in bwd.schedule().entries if e.kind == "shadow"}
        for name in ("K", "V"):
            assert entries[name].strategy == strategy, entries[name]
        if mode == "deterministic":  # (and why no parts took it)
            assert "their products mix fewer than 64" in str(entries["K"]), entries["K"]


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("blocks", [(64, 64), (128, 64)], ids=["64x64", "128x64"])
@pytest.mark.parametrize("two_stage", [False, True], ids=["one_loop", "two_loops"])
def test_grad_deterministic_attention_stages_loop_results(two_stage, blocks, dtype):
    # tritonad.grad (no residuals), deterministic: the forward's programs
    # stage the recomputed loop's results (the final statistics, acc) in
    # scratch for the parts; bitwise the same on a second run.
    kernel = two_stage_causal_attention_fwd if two_stage else causal_attention_fwd
    (block_m, block_n), BH, L, D = blocks, 3, 300, 64
    gen = make_generator("grad_deterministic", two_stage, block_m, block_n, str(dtype))
    q, k, v = (randn(gen, BH, L, D, dtype=dtype) for _ in range(3))
    sm_scale = D ** -0.5
    dout, dlse = randn(gen, BH, L, D, dtype=dtype), randn(gen, BH, L)
    args = (q, k, v, torch.empty_like(q), torch.empty(BH, L, device="cuda"), sm_scale, L,
            q.stride(0), q.stride(1))
    grid, meta = (triton.cdiv(L, block_m), BH), dict(BLOCK_M=block_m, BLOCK_N=block_n,
                                                      HEAD_DIM=D)
    kernel[grid](*args, **meta)
    bwd = tritonad.grad(kernel, mode="deterministic")
    runs = []
    for _ in range(2):
        grads = [torch.zeros_like(t) for t in (q, k, v)]
        bwd[grid](*args, dQ=grads[0], dK=grads[1], dV=grads[2], dOut=dout.clone(),
                  dLse=dlse.clone(), **meta)
        runs.append(grads)
    _, ref = reference_grads(
        lambda a, b, c: attention_reference(a, b, c, sm_scale, causal=True), [q, k, v],
        [dout, dlse])
    for name, got, again, want in zip(("dQ", "dK", "dV"), runs[0], runs[1], ref):
        assert_near(name, got, want, HALF_TOL)
        assert torch.equal(got, again), name
    assert "from scratch" in bwd.schedule()


def test_loop_result_tiles_are_not_staged_for_mixed_row_counts():
    # Through tritonad.grad the parts would read the forward loop's result
    # (acc) from scratch: a tile, which the Hopper miscompile stagesTiles
    # describes forbids where the products mix fewer than 64 rows with 64 or
    # more (BLOCK_N = 32 < 64 <= BLOCK_M). Deterministic mode says so.
    from compile_util import compile_for_schedule

    types = dict(Q=F16, K=F16, V=F16, Out=F16, Lse=F32, sm_scale="fp32", seq_len="i32",
                 stride_bh="i32", stride_s="i32")
    bwd = tritonad.grad(causal_attention_fwd, mode="deterministic", accumulate=False)
    with pytest.raises(tritonad.DifferentiationError,
                       match=r"'K'.*depends on the result of scf.for at .*online_softmax.py:\d+:\d+, "
                             r"a tile its part would read from scratch"):
        compile_for_schedule(bwd, types, dict(BLOCK_M=64, BLOCK_N=32, HEAD_DIM=64))
    bwd = tritonad.grad(causal_attention_fwd, mode="deterministic", accumulate=False)
    schedule = compile_for_schedule(bwd, types, dict(BLOCK_M=64, BLOCK_N=64, HEAD_DIM=64))
    assert "from scratch" in dict(line.split(": ", 1) for line in schedule.splitlines())["K"]


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("advance", [False, True], ids=["offsets", "advanced_pointers"])
def test_two_loop_attention_deterministic_spellings(advance):
    # corpus/attention.py's two_loop_attention (the CPU interpreter runs it
    # too): key offsets from the induction variable, or pointers advanced per
    # iteration; fp32 with tf32 products.
    from corpus.attention import two_loop_attention_grads

    # (blocks under 64 rows: with 64 or more some products of the parts have
    # fewer rows than others, and parts of two loops are refused, see
    # test_two_stage_attention_with_mixed_row_counts_keeps_atomics)
    for length, block_m, block_n in ((200, 32, 16), (90, 32, 32)):
        two_loop_attention_grads(length, 3, advance, block_m, block_n, device="cuda",
                                 rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_causal_attention_grad_zero_dlse(dtype):
    # No upstream gradient for Lse: only Out's adjoint flows.
    run_causal_attention(250, dtype, 64, 64, "zero_dlse", dlse_kind="zeros")


@pytest.mark.gpu
@requires_gpu
def test_causal_attention_grad_small_blocks_long():
    # Many key blocks per program (BLOCK_N 16, 63 iterations on the last row block).
    run_causal_attention(1000, torch.float16, 32, 16, "small_blocks", BH=2, D=32)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("seq_len", [100, 250])
def test_attention_exp_grad(seq_len):
    gen = make_generator("attention_exp", seq_len)
    BH, D, BLOCK = 3, 32, 32
    q, k, v = (randn(gen, BH, seq_len, D) for _ in range(3))
    out = torch.empty_like(q)
    sm_scale = D ** -0.5
    grid = (triton.cdiv(seq_len, BLOCK), BH)
    args = (q, k, v, out, sm_scale, seq_len, q.stride(0), q.stride(1))
    meta = dict(BLOCK_M=BLOCK, BLOCK_N=BLOCK, HEAD_DIM=D)
    attention_exp_fwd[grid](*args, **meta)
    dout = randn(gen, BH, seq_len, D)
    (ref_out, _), ref = reference_grads(
        lambda a, b, c: attention_reference(a, b, c, sm_scale, causal=False), [q, k, v],
        [dout, None])
    # tl.dot on fp32 operands is tf32 (10-bit mantissa, ~1e-3 relative per product),
    # in the forward and in the derived backward's dots alike.
    assert_near("Out", out, ref_out, 1e-2)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    tritonad.grad(attention_exp_fwd)[grid](*args, dQ=dq, dK=dk, dV=dv, dOut=dout.clone(),
                                           **meta)
    for name, got, want in zip(("dQ", "dK", "dV"), (dq, dk, dv), ref):
        assert_near(name, got, want, 2e-2)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("V,BLOCK", [(1000, 256), (1000, 4096), (32000, 4096)])
def test_cross_entropy_grad(V, BLOCK, dtype):
    gen = make_generator("cross_entropy", V, BLOCK, str(dtype))
    rows = 37
    logits = randn(gen, rows, V, dtype=dtype, scale=3.0)
    targets = torch.randint(0, V, (rows,), generator=gen, device="cuda", dtype=torch.int64)
    loss = torch.empty(rows, device="cuda")
    nw = 8 if BLOCK >= 2048 else 4
    cross_entropy_fwd[(rows,)](logits, targets, loss, logits.stride(0), V, BLOCK=BLOCK,
                               num_warps=nw)
    dloss = randn(gen, rows)
    (ref_loss,), (ref,) = reference_grads(
        lambda t: (F.cross_entropy(t, targets, reduction="none"),), [logits], [dloss])
    torch.testing.assert_close(loss.double(), ref_loss.detach(), atol=1e-4, rtol=1e-5)
    dlogits = torch.zeros_like(logits)
    tritonad.grad(cross_entropy_fwd)[(rows,)](logits, targets, loss, logits.stride(0), V,
                                              dlogits=dlogits, dtargets=None,
                                              dloss=dloss.clone(), BLOCK=BLOCK,
                                              num_warps=nw)
    assert dlogits.dtype == dtype
    # fp32: exp/log round-off only. bf16: the gradient is rounded once to bf16 when
    # added into the zeroed shadow (relative 2^-8).
    assert_near("dlogits", dlogits, ref, 1e-4 if dtype == torch.float32 else 2e-2)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("N,BLOCK", [(1000, 256), (3000, 1024)])
def test_two_pass_softmax_grad(N, BLOCK):
    gen = make_generator("two_pass_softmax", N, BLOCK)
    rows = 13
    x = randn(gen, rows, N, scale=4.0)
    y = torch.empty_like(x)
    two_pass_softmax_fwd[(rows,)](x, y, x.stride(0), N, BLOCK=BLOCK)
    dy = randn(gen, rows, N)
    (ref_y,), (ref,) = reference_grads(lambda t: (torch.softmax(t, -1),), [x], [dy])
    assert_near("y", y, ref_y, 1e-5)
    dx = torch.zeros_like(x)
    tritonad.grad(two_pass_softmax_fwd)[(rows,)](x, y, x.stride(0), N, dx=dx, dy=dy.clone(),
                                                 BLOCK=BLOCK)
    assert_near("dx", dx, ref, 1e-4)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dmx_kind", ["random", "zeros"])
def test_running_max_stored_grad(dmx_kind):
    # The fallback must stay right: m's own gradient reaches the row's argmax.
    gen = make_generator("running_max_stored", dmx_kind)
    rows, N, BLOCK = 11, 1000, 256
    x = randn(gen, rows, N, scale=3.0)
    lse = torch.empty(rows, device="cuda")
    mx = torch.empty(rows, device="cuda")
    running_max_stored_fwd[(rows,)](x, lse, mx, x.stride(0), N, BLOCK=BLOCK)
    dlse = randn(gen, rows)
    dmx = randn(gen, rows) if dmx_kind == "random" else torch.zeros(rows, device="cuda")
    (ref_lse, ref_mx), (ref,) = reference_grads(
        lambda t: (torch.logsumexp(t, 1), t.max(1).values), [x], [dlse, dmx])
    torch.testing.assert_close(lse.double(), ref_lse.detach(), atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(mx.double(), ref_mx.detach())
    dx = torch.zeros_like(x)
    tritonad.grad(running_max_stored_fwd)[(rows,)](x, lse, mx, x.stride(0), N, dx=dx,
                                                   dlse=dlse.clone(), dmx=dmx.clone(),
                                                   BLOCK=BLOCK)
    assert_near("dx", dx, ref, 1e-4)


def shifted_sum_reference(t):
    return torch.logsumexp(t, 1), torch.exp(t - t.max(1, keepdim=True).values).sum(1)


@pytest.mark.gpu
@requires_gpu
def test_running_sum_stored_grad():
    gen = make_generator("running_sum_stored")
    rows, N, BLOCK = 11, 1000, 256
    x = randn(gen, rows, N, scale=3.0)
    lse = torch.empty(rows, device="cuda")
    s = torch.empty(rows, device="cuda")
    running_sum_stored_fwd[(rows,)](x, lse, s, x.stride(0), N, BLOCK=BLOCK)
    dlse, ds = randn(gen, rows), randn(gen, rows)
    (ref_lse, ref_s), (ref,) = reference_grads(shifted_sum_reference, [x], [dlse, ds])
    torch.testing.assert_close(lse.double(), ref_lse.detach(), atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(s.double(), ref_s.detach(), atol=1e-4, rtol=1e-5)
    dx = torch.zeros_like(x)
    tritonad.grad(running_sum_stored_fwd)[(rows,)](x, lse, s, x.stride(0), N, dx=dx,
                                                   dlse=dlse.clone(), ds_out=ds.clone(),
                                                   BLOCK=BLOCK)
    assert_near("dx", dx, ref, 1e-4)


# ---------------------------------------------------------------------------
# CPU interpreter (TRITON_INTERPRET=1): this file run as a script in a fresh Python
# ---------------------------------------------------------------------------

INTERPRET_CHECKS = {}


def interpret_check(fn):
    INTERPRET_CHECKS[fn.__name__] = fn
    return fn


@interpret_check
def interpret_cross_entropy():
    rows, V, BLOCK = 3, 300, 128          # three blocks, the last one masked
    logits = iu.randn(rows, V) * 3
    targets = torch.randint(0, V, (rows,), generator=iu.GEN)

    def reference(logits):
        return {"loss": F.cross_entropy(logits, targets, reduction="none")}
    iu.kernel_gradients(cross_entropy_fwd, (rows,), {"logits": logits},
                        {"loss": torch.empty(rows)},
                        {"targets": targets, "stride": V, "V": V}, {"BLOCK": BLOCK},
                        reference)


@interpret_check
def interpret_attention_exp():
    BH, L, D, BLOCK = 2, 40, 16, 16       # three key blocks, the last one masked
    q, k, v = (iu.randn(BH, L, D) for _ in range(3))
    sm_scale = D ** -0.5

    def reference(Q, K, V):
        return {"Out": attention_reference(Q, K, V, sm_scale, causal=False)[0]}
    # the interpreter computes tl.dot exactly: fp32 round-off only
    iu.kernel_gradients(attention_exp_fwd, (triton.cdiv(L, BLOCK), BH),
                        {"Q": q, "K": k, "V": v}, {"Out": torch.empty_like(q)},
                        {"sm_scale": sm_scale, "seq_len": L, "stride_bh": L * D,
                         "stride_s": D},
                        {"BLOCK_M": BLOCK, "BLOCK_N": BLOCK, "HEAD_DIM": D}, reference,
                        rtol=1e-4, atol=1e-4)


def _causal_attention_gradients(kernel, BH, L, D, BLOCK_M, BLOCK_N, **grad_options):
    """tritonad.grad(kernel)'s gradients of a causal attention forward (Out, Lse)
    against fp64 torch, in fp32, in the interpreter."""
    q, k, v = (iu.randn(BH, L, D) for _ in range(3))
    sm_scale = D ** -0.5

    def reference(Q, K, V):
        out, lse = attention_reference(Q, K, V, sm_scale, causal=True)
        return {"Out": out, "Lse": lse}
    iu.kernel_gradients(kernel, (triton.cdiv(L, BLOCK_M), BH), {"Q": q, "K": k, "V": v},
                        {"Out": torch.empty_like(q), "Lse": torch.empty(BH, L)},
                        {"sm_scale": sm_scale, "seq_len": L, "stride_bh": L * D,
                         "stride_s": D},
                        {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "HEAD_DIM": D}, reference,
                        rtol=1e-4, atol=1e-4, **grad_options)


@interpret_check
def interpret_causal_attention_fp32():
    # The causal kernel's bounds (keys up to the diagonal), its exp2 domain and the
    # Lse adjoint, in fp32 (the interpreter's half-precision dot is not Triton's).
    _causal_attention_gradients(causal_attention_fwd, BH=2, L=40, D=16, BLOCK_M=32,
                                BLOCK_N=16)


@interpret_check
def interpret_two_stage_attention_mixed_rows_deterministic():
    # BLOCK_N = 32 < 64 <= BLOCK_M: no parts for dK and dV, so deterministic mode
    # sums them through scatter slots (a key per row of each tile, the causal
    # loops' trips varying by program), in fp32.
    _causal_attention_gradients(two_stage_causal_attention_fwd, BH=2, L=100, D=16, BLOCK_M=64,
                                BLOCK_N=32, mode="deterministic")


@interpret_check
def interpret_two_pass_softmax():
    rows, N, BLOCK = 3, 150, 64
    x = iu.randn(rows, N) * 3
    iu.kernel_gradients(two_pass_softmax_fwd, (rows,), {"x": x}, {"y": torch.empty(rows, N)},
                        {"stride": N, "N": N}, {"BLOCK": BLOCK},
                        lambda x: {"y": torch.softmax(x, -1)})


@interpret_check
def interpret_running_max_stored():
    rows, N, BLOCK = 3, 150, 64
    x = iu.randn(rows, N) * 3
    iu.kernel_gradients(running_max_stored_fwd, (rows,), {"x": x},
                        {"lse": torch.empty(rows), "mx": torch.empty(rows)},
                        {"stride": N, "N": N}, {"BLOCK": BLOCK},
                        lambda x: {"lse": torch.logsumexp(x, 1), "mx": x.max(1).values})


@interpret_check
def interpret_running_sum_stored():
    rows, N, BLOCK = 3, 150, 64
    x = iu.randn(rows, N) * 3

    def reference(x):
        lse, s = shifted_sum_reference(x)
        return {"lse": lse, "s_out": s}
    iu.kernel_gradients(running_sum_stored_fwd, (rows,), {"x": x},
                        {"lse": torch.empty(rows), "s_out": torch.empty(rows)},
                        {"stride": N, "N": N}, {"BLOCK": BLOCK}, reference)


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    out = tmp_path_factory.mktemp("interpret_loops") / "results.json"
    return iu.run_in_interpreter(os.path.abspath(__file__), out)


@pytest.mark.parametrize("name", sorted(INTERPRET_CHECKS))
def test_interpreted(interpreted, name):
    result = interpreted[name]
    assert result["ok"], f"(TRITONAD_TEST_SEED={result['seed']}) {result['error']}"


def _interpret_main(argv):
    """Runs this file's interpreter checks, with interpret_checks' command line."""
    return iu.main(argv, INTERPRET_CHECKS)




# ---------------------------------------------------------------------------
# Loop tapes: a nonlinear recurrence over column blocks carrying a 2-D tile.
# ---------------------------------------------------------------------------

@triton.jit
def tile_recurrence_fwd(X, OUT, M, N, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    lanes = tl.arange(0, BLOCK_N)
    h = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for off in range(0, N, BLOCK_N):
        cols = off + lanes
        mask = (rows < M)[:, None] & (cols < N)[None, :]
        x = tl.load(X + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0)
        h = tl.sin(h) * 0.5 + x * tl.cos(h)
    tl.store(OUT + rows[:, None] * BLOCK_N + lanes[None, :], h, mask=(rows < M)[:, None])


def _tile_recurrence_reference(x, BLOCK_N):
    M, N = x.shape
    blocks = -(-N // BLOCK_N)
    xp = torch.cat([x, torch.zeros(M, blocks * BLOCK_N - N, dtype=x.dtype, device=x.device)], 1)
    h = torch.zeros(M, BLOCK_N, dtype=x.dtype, device=x.device)
    for b in range(blocks):
        h = torch.sin(h) * 0.5 + xp[:, b * BLOCK_N:(b + 1) * BLOCK_N] * torch.cos(h)
    return h


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("M,N", [(100, 1000), (513, 77)])
def test_tile_recurrence_is_taped(M, N):
    gen = make_generator("tile_recurrence", M, N)
    BLOCK_M, BLOCK_N = 32, 64
    x = torch.randn(M, N, device="cuda", generator=gen)
    out = torch.empty(M, BLOCK_N, device="cuda")
    grid = (triton.cdiv(M, BLOCK_M),)
    tile_recurrence_fwd[grid](x, out, M, N, x.stride(0), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    torch.testing.assert_close(out, _tile_recurrence_reference(x.double(), BLOCK_N).float(),
                               rtol=1e-4, atol=1e-4)
    dout = torch.randn(M, BLOCK_N, device="cuda", generator=gen)
    dx = torch.zeros_like(x)
    bwd = tritonad.grad(tile_recurrence_fwd)
    bwd[grid](x, out, M, N, x.stride(0), dX=dx, dOUT=dout.clone(), BLOCK_M=BLOCK_M,
              BLOCK_N=BLOCK_N)
    assert "tapes each iteration's carried state" in bwd.schedule(), bwd.schedule()
    leaf = x.double().requires_grad_()
    _tile_recurrence_reference(leaf, BLOCK_N).backward(dout.double())
    torch.testing.assert_close(dx.double(), leaf.grad, rtol=1e-4, atol=1e-4)
    # A budget of a third of the tape keeps every 3rd state or so (the reverse
    # replays the rest); tape=False replays everything: the same gradient.
    tape_bytes = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N) * BLOCK_M * BLOCK_N * 4
    os.environ["TRITONAD_TAPE_BUDGET"] = str(tape_bytes // 3)
    try:
        dx3 = torch.zeros_like(x)
        bwd[grid](x, out, M, N, x.stride(0), dX=dx3, dOUT=dout.clone(), BLOCK_M=BLOCK_M,
                  BLOCK_N=BLOCK_N)
    finally:
        del os.environ["TRITONAD_TAPE_BUDGET"]
    torch.testing.assert_close(dx3, dx, rtol=1e-5, atol=1e-5)
    dx2 = torch.zeros_like(x)
    replay = tritonad.grad(tile_recurrence_fwd, tape=False)
    replay[grid](x, out, M, N, x.stride(0), dX=dx2, dOUT=dout.clone(), BLOCK_M=BLOCK_M,
                 BLOCK_N=BLOCK_N)
    assert "n(n-1)/2" in replay.schedule(), replay.schedule()
    torch.testing.assert_close(dx2, dx, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    _interpret_main(sys.argv[1:])
