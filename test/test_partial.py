"""Partial buffers: gradients every program adds to (layer norm's and RMSNorm's
weight and bias, a bias broadcast over rows) without atomics.

CPU: the schedule and the IR (compiled for a GPU target without a GPU). GPU:
gradients against torch.autograd (fresh random inputs, odd sizes, fp32 and
bf16, fewer and more programs than the backward launches), bitwise
reproducibility, and accumulation into caller-provided shadows.
"""

import pickle

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

from compile_util import compile_for_schedule  # noqa: E402
from corpus.norms import NORM_TYPES, bias_gelu_kernel, norm_kernel  # noqa: E402
from corpus.norms import norm_reference as _norm_reference  # noqa: E402
from corpus.user_kernels import layer_norm_kernel, layer_norm_loop_kernel  # noqa: E402
from gpu_util import requires_gpu  # noqa: E402
from tritonad._partial import WORKSPACE_TYPES  # noqa: E402


def test_schedule_names_partial_buffers(always_compile):
    bwd = tritonad.grad(norm_kernel, accumulate=False)
    schedule = compile_for_schedule(bwd, NORM_TYPES, dict(HAS_MEAN=True, BLOCK_N=256))
    lines = dict(line.split(": ", 1) for line in schedule.strip().splitlines())
    assert lines["W"].startswith("partial buffer")
    assert lines["B"].startswith("partial buffer")
    assert lines["programs"].startswith("each program of the backward handles")
    assert bwd.partial_shadows() == ["dW", "dB"]
    ir = bwd.derived_ir()
    assert "scf.for" in ir and "tt.get_num_programs" in ir
    # (dX keeps its run-time branch: atomics only if rows overlap, stride < N)
    assert ir.count("tt.atomic_rmw") == 1


def test_schedule_is_data(always_compile):
    """The schedule crosses from the core as entries; its text is their lines."""
    bwd = tritonad.grad(norm_kernel, accumulate=False)
    schedule = compile_for_schedule(bwd, NORM_TYPES, dict(HAS_MEAN=True, BLOCK_N=256))
    by_subject = {e.subject: e for e in schedule.entries if e.kind == "shadow"}
    assert {by_subject[n].strategy for n in ("W", "B")} == {"partial-buffer"}
    assert by_subject["X"].strategy == "overwrite-when-disjoint"
    assert by_subject["Y"].strategy == "output"
    assert any(n.startswith("no zero fill") for n in by_subject["X"].notes)
    programs = [e for e in schedule.entries if e.kind == "programs"]
    assert [e.strategy for e in programs] == ["grid-stride"]
    assert schedule.splitlines() == [e.line() for e in schedule.entries]
    assert pickle.loads(pickle.dumps(schedule)).entries == schedule.entries


def test_scratch_pointers_are_specialized_integers_are_not():
    """Triton learns a pointer's 16-byte alignment only by specializing it: an
    unspecialized tape or residual pointer makes every load of it one element
    wide and unpipelined (the epilogue's parts ran 2.5x slower). The hidden
    integers stay unspecialized (a 1 would become a constant) but for the
    program selectors and the masks' variant, which must."""
    from tritonad._partial import HIDDEN_INTEGERS, SPECIALIZED_INTEGERS
    from tritonad._residuals import RESIDUALS
    bwd = tritonad.grad(norm_kernel, accumulate=False)
    flags = {p.name: p.do_not_specialize for p in bwd.params}
    pointers = [n for n, t in WORKSPACE_TYPES.items() if t.startswith("*")] + [RESIDUALS]
    assert {n: flags[n] for n in pointers} == {n: False for n in pointers}
    assert {n: flags[n] for n in HIDDEN_INTEGERS} == {
        n: n not in SPECIALIZED_INTEGERS for n in HIDDEN_INTEGERS}


def test_atomic_mode_keeps_atomics(always_compile):
    bwd = tritonad.grad(norm_kernel, mode="atomic")
    schedule = compile_for_schedule(bwd, NORM_TYPES, dict(HAS_MEAN=True, BLOCK_N=256))
    assert "partial buffer" not in schedule
    assert bwd.partial_shadows() == []
    assert "tt.atomic_rmw" in bwd.derived_ir()


def test_weight_loaded_per_program_gets_no_partial_buffer(always_compile):
    # Every load of X depends on the program: its gradient is the program's own.
    bwd = tritonad.grad(bias_gelu_kernel, accumulate=False)
    types_ = dict(X="*fp32", B="*fp32", Y="*fp32", stride="i32", N="i32")
    schedule = compile_for_schedule(bwd, types_, dict(BLOCK_N=128))
    lines = dict(line.split(": ", 1) for line in schedule.strip().splitlines())
    assert lines["B"].startswith("partial buffer")
    assert not lines["X"].startswith("partial buffer")


# ---------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------

def _close(got, ref, dtype):
    tol = {torch.float32: 2e-4, torch.bfloat16: 2e-2}[dtype]
    scale = ref.abs().max().item() + 1e-6
    err = (got.double() - ref.double()).abs().max().item()
    assert err <= tol * scale, f"max error {err:.3g} vs scale {scale:.3g}"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("has_mean", [True, False])
@pytest.mark.parametrize("rows,cols", [(1, 37), (7, 130), (1001, 257), (3000, 1000)])
def test_norm_grads_through_partial_buffers(dtype, has_mean, rows, cols):
    eps = 1e-5
    op = tritonad.autograd(norm_kernel, outputs=("Y",))
    x = torch.randn(rows, cols, device="cuda", dtype=dtype, requires_grad=True)
    w = torch.randn(cols, device="cuda", dtype=dtype, requires_grad=True)
    b = torch.randn(cols, device="cuda", dtype=dtype, requires_grad=has_mean)
    block = triton.next_power_of_2(cols)
    y = op[(rows,)](x, w, b, torch.empty_like(x), x.stride(0), cols, eps, HAS_MEAN=has_mean,
                    BLOCK_N=block)
    dy = torch.randn_like(y)
    inputs = [x, w] + ([b] if has_mean else [])
    got = torch.autograd.grad(y, inputs, dy)
    leaves = [t.detach().double().requires_grad_(True) for t in inputs]
    ref_y = _norm_reference(leaves[0], leaves[1], leaves[2] if has_mean else None, has_mean, eps)
    ref = torch.autograd.grad(ref_y, leaves, dy.double())
    for g, r in zip(got, ref):
        assert g.dtype == dtype
        _close(g, r, dtype)
    if rows > 1:  # (one program: no sharing, nothing to coarsen)
        assert "W: partial buffer" in op.backward_kernel.schedule()
        assert op.backward_kernel.partial_shadows() == (["dW", "dB"] if has_mean else ["dW"])


@pytest.mark.gpu
@requires_gpu
def test_partial_buffers_are_bitwise_reproducible():
    rows, cols = 4099, 515
    op = tritonad.autograd(norm_kernel, outputs=("Y",))
    x = torch.randn(rows, cols, device="cuda", requires_grad=True)
    w = torch.randn(cols, device="cuda", requires_grad=True)
    b = torch.randn(cols, device="cuda", requires_grad=True)
    y = op[(rows,)](x, w, b, torch.empty_like(x), x.stride(0), cols, 1e-5, HAS_MEAN=True,
                    BLOCK_N=1024)
    dy = torch.randn_like(y)
    first = torch.autograd.grad(y, [x, w, b], dy, retain_graph=True)
    for _ in range(3):
        again = torch.autograd.grad(y, [x, w, b], dy, retain_graph=True)
        for a, g in zip(first, again):
            assert torch.equal(a, g)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_grid_stride_programs_fit_two_per_sm(dtype):
    # A 4096-wide layer norm with 16 warps: the derived backward needs more than
    # 64 registers, so two 512-thread programs would not fit an SM's register
    # file; the launch compiles it under a cap unless that spills, and the
    # gradient is the same.
    rows, cols, eps = 1000, 4096, 1e-5
    x = torch.randn(rows, cols, device="cuda", dtype=dtype)
    w, b = torch.randn(cols, device="cuda", dtype=dtype), torch.randn(cols, device="cuda",
                                                                       dtype=dtype)
    dy = torch.randn(rows, cols, device="cuda", dtype=dtype)
    bwd = tritonad.grad(norm_kernel, accumulate=False)
    dx, dw, db = (torch.zeros_like(t) for t in (x, w, b))
    kernel = bwd[(rows,)](x, w, b, torch.empty_like(x), x.stride(0), cols, eps, dx, dw, db,
                          dy, HAS_MEAN=True, BLOCK_N=4096, num_warps=16)
    registers = triton.runtime.driver.active.utils.get_device_properties(0)["max_num_regs"]
    two_programs = 2 * 16 * 32
    uncapped = bwd.warmup(x, w, b, torch.empty_like(x), x.stride(0), cols, eps, dx, dw, db,
                          dy, HAS_MEAN=True, BLOCK_N=4096, num_warps=16, grid=(rows,))
    uncapped._init_handles()
    assert uncapped.n_regs * two_programs > registers  # (the case this test is about)
    assert kernel.n_regs * two_programs <= registers, (kernel.n_regs, kernel.n_spills)
    xl, wl, bl = (t.detach().double().requires_grad_(True) for t in (x, w, b))
    ref = torch.nn.functional.layer_norm(xl, (cols,), wl, bl, eps)
    for got, want in zip((dx, dw, db), torch.autograd.grad(ref, [xl, wl, bl], dy.double())):
        _close(got, want, dtype)


@pytest.mark.gpu
@requires_gpu
def test_partial_buffers_add_into_given_shadows():
    # tritonad.grad (accumulate=True): the caller's shadows receive += the gradient.
    rows, cols = 333, 100
    bwd = tritonad.grad(layer_norm_kernel)
    x = torch.randn(rows, cols, device="cuda")
    w, b = torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda")
    y, mean, rstd = torch.empty_like(x), torch.empty(rows, device="cuda"), \
        torch.empty(rows, device="cuda")
    layer_norm_kernel[(rows,)](x, w, b, y, mean, rstd, x.stride(0), cols, 1e-5, BLOCK_N=128)
    dy = torch.randn_like(x)
    dx, dw0, db0 = torch.randn_like(x), torch.randn_like(w), torch.randn_like(b)
    dw, db, dx_before = dw0.clone(), db0.clone(), dx.clone()
    bwd[(rows,)](x, w, b, y, mean, rstd, x.stride(0), cols, 1e-5, dx, dw, db, dy, None, None,
                 BLOCK_N=128)
    xl, wl, bl = (t.detach().double().requires_grad_(True) for t in (x, w, b))
    ref = torch.nn.functional.layer_norm(xl, (cols,), wl, bl, 1e-5)
    rdx, rdw, rdb = torch.autograd.grad(ref, [xl, wl, bl], dy.double())
    _close(dx - dx_before, rdx, torch.float32)
    _close(dw - dw0, rdw, torch.float32)
    _close(db - db0, rdb, torch.float32)
    assert "partial buffer" in bwd.schedule()


@pytest.mark.gpu
@requires_gpu
def test_weight_loaded_in_a_column_loop():
    # W is loaded inside a loop over column blocks: its slot is read, added to
    # and written in every (row, column block), still without atomics.
    rows, cols, block = 517, 300, 64
    op = tritonad.autograd(layer_norm_loop_kernel, outputs=("Y",))
    x = torch.randn(rows, cols, device="cuda", requires_grad=True)
    w = torch.randn(cols, device="cuda", requires_grad=True)
    b = torch.randn(cols, device="cuda", requires_grad=True)
    y = op[(rows,)](x, w, b, torch.empty_like(x), x.stride(0), cols, 1e-5, BLOCK_N=block)
    dy = torch.randn_like(y)
    got = torch.autograd.grad(y, [x, w, b], dy)
    leaves = [t.detach().double().requires_grad_(True) for t in (x, w, b)]
    ref = torch.autograd.grad(torch.nn.functional.layer_norm(leaves[0], (cols,), leaves[1],
                                                             leaves[2], 1e-5),
                              leaves, dy.double())
    for g, r in zip(got, ref):
        _close(g, r, torch.float32)
    schedule = op.backward_kernel.schedule()
    assert "W: partial buffer" in schedule and "B: partial buffer" in schedule


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("rows", [1, 5, 2049])
def test_bias_broadcast_over_rows(rows):
    cols = 77
    op = tritonad.autograd(bias_gelu_kernel, outputs=("Y",))
    x = torch.randn(rows, cols, device="cuda", requires_grad=True)
    b = torch.randn(cols, device="cuda", requires_grad=True)
    y = op[(rows,)](x, b, torch.empty_like(x), x.stride(0), cols, BLOCK_N=128)
    dy = torch.randn_like(y)
    got = torch.autograd.grad(y, [x, b], dy)
    xl, bl = (t.detach().double().requires_grad_(True) for t in (x, b))
    ref = torch.autograd.grad(torch.nn.functional.gelu(xl + bl), [xl, bl], dy.double())
    for g, r in zip(got, ref):
        _close(g, r, torch.float32)
