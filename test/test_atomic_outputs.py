"""Forward kernels that atomically add into a differentiated output: a loss summed over
programs, a scatter-add with repeated indices (an embedding bag), split-K products.

``out[ptr] += v`` commutes with every other add, so the final ``out`` is its initial value
plus the sum of every add whatever their order: each add's value reads the upstream
gradient at its addresses, and the output's shadow is left as it is
(AutoDiff/KernelBackward.cpp, ``emitWriteAdjoint``; lit: AutoDiff/kernel-atomic-
add.mlir). Programs along a grid axis the kernel never reads are no longer duplicates of
the first one (each adds again), so the inputs' gradients there are plain only where that
axis has one program. Atomic max, min, exchange and compare-and-swap into a differentiated
pointer keep one program's value and are refused at the kernel's line, as is a float
reinterpreted as integers through a pointer bitcast (how ``tl.atomic_max`` of floats is
built), which was once a silently missing gradient.

CPU: the schedule and the refusals (the interpreter's numeric check is
``atomic_add_outputs`` in interpret_checks/atomics.py). GPU: gradients against
torch.autograd, fp32, fp16 and bf16, odd sizes, through ``tritonad.grad`` and
``tritonad.autograd``.
"""

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

import triton.language as tl  # noqa: E402

from gpu_util import requires_gpu  # noqa: E402
from compile_util import compile_for_schedule  # noqa: E402
from corpus.kernels import atomic_sum_kernel  # noqa: E402
from corpus.atomics import atomic_max_kernel, scatter_add_kernel, split_k_matmul_kernel  # noqa: E402


SUM_TYPES = dict(x_ptr="*fp32", out_ptr="*fp32", n="i32")


def test_schedule_reads_the_output_shadow(always_compile):
    bwd = tritonad.grad(atomic_sum_kernel)
    schedule = compile_for_schedule(bwd, SUM_TYPES, dict(BLOCK=128))
    lines = dict(line.split(": ", 1) for line in schedule.strip().splitlines())
    assert lines["out_ptr"].startswith("output, atomically added to"), schedule
    # programs along axes 1 and 2 would add again: plain only where there is one
    assert lines["x_ptr"].startswith("plain when"), schedule
    ir = bwd.derived_ir()
    # the forward's add is not replayed; x's gradient keeps its atomic fallback
    assert ir.count("tt.atomic_rmw") == 1 and "tt.get_num_programs y" in ir, ir


@triton.jit
def store_then_add_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, x, mask=offs < n)
    tl.atomic_add(out_ptr + offs, x * x, mask=offs < n)


@triton.jit
def exchange_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_xchg(out_ptr + offs % 4, x, mask=offs < n)


@pytest.mark.parametrize("kernel, where, message", [
    (atomic_max_kernel, "atomics.py", "tl.atomic_max"),
    (store_then_add_kernel, "test_atomic_outputs.py", "both stored to and atomically added to"),
    (exchange_kernel, "test_atomic_outputs.py", "cannot differentiate an atomic exch of floats"),
])
def test_order_dependent_writes_are_refused_at_the_kernel_line(always_compile, kernel, where,
                                                              message):
    bwd = tritonad.grad(kernel)
    with pytest.raises(tritonad.DifferentiationError, match=f"{where}:[0-9]+:") as info:
        compile_for_schedule(bwd, SUM_TYPES, dict(BLOCK=128))
    assert message in str(info.value)


# ---------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------

TOL = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 3e-2}


def _close(got, want, dtype):
    got, want = got.double(), want.double()
    err = (got - want).abs().max().item()
    assert err <= TOL[dtype] * max(1.0, want.abs().max().item()), err


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("mode", ["auto", "deterministic"])
@pytest.mark.parametrize("axis1", [1, 3])
def test_sum_over_programs_matches_torch(mode, axis1):
    n = 3001
    x = torch.randn(n, device="cuda")
    up = torch.randn(1, device="cuda")
    bwd = tritonad.grad(atomic_sum_kernel, mode=mode)
    dx = torch.zeros_like(x)
    launch = lambda: bwd[(triton.cdiv(n, 256), axis1)](  # noqa: E731
        x, torch.zeros(1, device="cuda"), n, dx, up.clone(), BLOCK=256)
    if mode == "deterministic" and axis1 > 1:
        # programs along axis 1 add the same x: they share its gradient
        with pytest.raises(RuntimeError, match="programs write the same addresses"):
            launch()
        return
    launch()
    _close(dx, axis1 * 2 * x.double() * up.double(), torch.float32)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_scatter_add_matches_torch(dtype):
    n, D, rows = 1003, 32, 37
    x = torch.randn(n, D, device="cuda", dtype=dtype)
    w = torch.randn(n, device="cuda", dtype=dtype)
    idx = torch.randint(0, rows, (n,), device="cuda", dtype=torch.int32)
    up = torch.randn(rows, D, device="cuda", dtype=dtype)
    bwd = tritonad.grad(scatter_add_kernel)
    dx, dw = torch.zeros_like(x), torch.zeros_like(w)
    out = torch.zeros(rows, D, device="cuda", dtype=dtype)
    shadows = {bwd.shadows["x_ptr"]: dx, bwd.shadows["w_ptr"]: dw,
               bwd.shadows["out_ptr"]: up.clone()}  # (the indices' shadow stays None)
    bwd[(triton.cdiv(n, 64),)](x, w, idx, out, n, **shadows, D=D, BLOCK=64)
    xd, wd = x.double().requires_grad_(), w.double().requires_grad_()
    ref = torch.zeros(rows, D, dtype=torch.float64, device="cuda").index_add(
        0, idx.long(), xd * torch.sigmoid(wd)[:, None])
    gx, gw = torch.autograd.grad(ref, (xd, wd), up.double())
    _close(dx, gx, dtype)
    _close(dw, gw, dtype)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_split_k_through_autograd_matches_torch(dtype):
    M, N, K, per_split = 97, 75, 300, 64
    a = torch.randn(M, K, device="cuda", dtype=dtype, requires_grad=True)
    b = torch.randn(K, N, device="cuda", dtype=dtype, requires_grad=True)
    f = tritonad.autograd(split_k_matmul_kernel, outputs=("c_ptr",))
    c = torch.zeros(M, N, device="cuda", dtype=torch.float32)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32), triton.cdiv(K, per_split))
    c = f[grid](a, b, c, M, N, K, per_split, BM=32, BN=32, BK=32)
    up = torch.randn(M, N, device="cuda")
    (c * up).sum().backward()
    ad, bd = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    ga, gb = torch.autograd.grad(ad @ bd, (ad, bd), up.double())
    _close(c.detach(), ad.detach() @ bd.detach(), torch.float32 if dtype == torch.float32
           else dtype)
    _close(a.grad, ga, dtype)
    _close(b.grad, gb, dtype)
