"""Kernels of the shapes that once came out silently wrong (issue: no silently wrong
gradient). Each class is either differentiated correctly, checked against
torch.autograd on a GPU, or refused with an error naming the op and the kernel line.

CPU tests derive every backward and compile it to PTX (or check the error); GPU tests
(marked ``gpu``) launch the forward and the derived backward on fresh random inputs
with odd sizes and compare with torch.autograd.
"""

import os
import sys

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

import triton.language as tl  # noqa: E402
from triton.language.extra import libdevice  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from gpu_util import requires_gpu  # noqa: E402
from compile_util import compile_backward  # noqa: E402

HERE = os.path.basename(__file__)


pytestmark = pytest.mark.usefixtures("always_compile")


# ---------------------------------------------------------------------------
# 1. A running value also used inside its loop (blockwise prefix sum)
# ---------------------------------------------------------------------------

@triton.jit
def blockwise_cumsum_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    carry = tl.zeros([1], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
        tl.store(y_ptr + row * n + offs, tl.cumsum(x, 0) + carry, mask=offs < n)
        carry = carry + tl.sum(x, 0)


# ---------------------------------------------------------------------------
# 2. Stores inside loops
# ---------------------------------------------------------------------------

@triton.jit
def rewrite_each_iteration_kernel(x_ptr, y_ptr, n, iters, BLOCK: tl.constexpr):
    # Every iteration rewrites y at the same addresses: only the last survives,
    # y = (iters * x)^2.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    for i in range(iters):
        t = x * (i + 1).to(tl.float32)
        tl.store(y_ptr + offs, t * t, mask=m)


@triton.jit
def rewrite_running_value_kernel(x_ptr, y_ptr, n, iters, BLOCK: tl.constexpr):
    # A non-accumulating carried value stored every iteration at the same place.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    h = x
    for i in range(iters):
        h = 0.5 * h + tl.sin(h) * x
        tl.store(y_ptr + offs, h, mask=m)


@triton.jit
def sliding_store_kernel(x_ptr, y_ptr, n, iters, BLOCK: tl.constexpr):
    # Addresses overlap between iterations (shifted by one): refused.
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    for i in range(iters):
        tl.store(y_ptr + offs + i, x * i, mask=offs + i < n)


# ---------------------------------------------------------------------------
# 3. Block pointers
# ---------------------------------------------------------------------------

@triton.jit
def block_ptr_row_norm_kernel(x_ptr, y_ptr, M, N, stride_m, BLOCK_M: tl.constexpr,
                              BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    x_block = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(stride_m, 1),
                                offsets=(pid * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_N),
                                order=(1, 0))
    acc = tl.zeros([BLOCK_M], dtype=tl.float32)
    for k in range(0, N, BLOCK_N):
        x = tl.load(x_block, boundary_check=(0, 1), padding_option="zero")
        acc += tl.sum(x * x, axis=1)
        x_block = tl.advance(x_block, (0, BLOCK_N))
    y_block = tl.make_block_ptr(y_ptr, shape=(M,), strides=(1,), offsets=(pid * BLOCK_M,),
                                block_shape=(BLOCK_M,), order=(0,))
    tl.store(y_block, tl.sqrt(acc), boundary_check=(0,))


@triton.jit
def block_ptr_elementwise_kernel(x_ptr, y_ptr, M, N, stride_xm, stride_ym,
                                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    x_block = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(stride_xm, 1),
                                offsets=(pid * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_N),
                                order=(1, 0))
    y_block = tl.make_block_ptr(y_ptr, shape=(M, N), strides=(stride_ym, 1),
                                offsets=(pid * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_N),
                                order=(1, 0))
    for k in range(0, N, BLOCK_N):
        x = tl.load(x_block, boundary_check=(0, 1), padding_option="zero")
        tl.store(y_block, tl.exp(x) * x, boundary_check=(0, 1))
        x_block = tl.advance(x_block, (0, BLOCK_N))
        y_block = tl.advance(y_block, (0, BLOCK_N))


# ---------------------------------------------------------------------------
# 4. Early return (Liger's ignore_index)
# ---------------------------------------------------------------------------

@triton.jit
def early_return_kernel(x_ptr, t_ptr, loss_ptr, stride, n_cols, ignore_index,
                        BLOCK: tl.constexpr):
    row = tl.program_id(0)
    t = tl.load(t_ptr + row)
    if t == ignore_index:
        tl.store(loss_ptr + row, 0.0)
        return
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=float("-inf"))
    m = tl.max(x, 0)
    lse = m + tl.log(tl.sum(tl.exp(x - m), 0))
    xt = tl.load(x_ptr + row * stride + t)
    tl.store(loss_ptr + row, lse - xt)


# ---------------------------------------------------------------------------
# 5. Pointers loaded only inside a helper
# ---------------------------------------------------------------------------

@triton.jit
def _load_scaled(ptr, offs, mask, scale):
    return tl.load(ptr + offs, mask=mask, other=0.0) * scale


@triton.jit
def helper_load_kernel(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr, HALF: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = _load_scaled(x_ptr, offs, m, 2.0)
    w = _load_scaled(w_ptr + HALF, offs, m, 1.0)
    tl.store(y_ptr + offs, x * w, mask=m)


# ---------------------------------------------------------------------------
# 7. NaN-safe rules
# ---------------------------------------------------------------------------

@triton.jit
def pow_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, libdevice.pow(x, 3.0), mask=m)


@triton.jit
def padded_sqrt_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # Padding lanes hold garbage (sqrt of a negative, division by zero); their
    # upstream gradient is zero and must not turn into NaN in the row's sum.
    cols = tl.arange(0, BLOCK)
    m = cols < n
    x = tl.load(x_ptr + cols, mask=m, other=0.0)
    mean = tl.sum(x, 0) / n
    c = tl.sqrt(x - mean + 4.0) / x
    tl.store(y_ptr + cols, c, mask=m)


# ---------------------------------------------------------------------------
# 8 / 9 / 10. Bits through integers, unknown provenance, side effects
# ---------------------------------------------------------------------------

@triton.jit
def sort_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.sort(tl.load(x_ptr + offs)))


@triton.jit
def where_pointer_kernel(x_ptr, z_ptr, y_ptr, use_x, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = tl.where(use_x > 0, x_ptr + offs, z_ptr + offs)
    tl.store(y_ptr + offs, tl.load(p) * 2.0)


@triton.jit
def print_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_print("x", x)
    tl.store(y_ptr + offs, x * x)


@triton.jit
def atomic_result_kernel(x_ptr, counter_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    ticket = tl.atomic_add(counter_ptr, 1)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x * ticket.to(tl.float32))


@triton.jit
def atomic_max_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # (floats: Triton casts the pointer to integers, max for positives, umin for
    # negatives; the gradient once went missing here without a word)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_max(y_ptr + offs % 4, x * x, mask=offs < n)


@triton.jit
def full_reduction_kernel(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    m = (rm < M) & (rn < N)
    x = tl.load(x_ptr + rm * N + rn, mask=m, other=float("-inf"))
    big = tl.max(x)
    s = tl.sum(tl.where(m, tl.exp(x - big), 0.0))
    tl.store(y_ptr, big + tl.log(s))


F32 = "*fp32"
CASES = {
    "blockwise_cumsum": (blockwise_cumsum_kernel, dict(x_ptr=F32, y_ptr=F32, n="i32"),
                         dict(BLOCK=64)),
    "rewrite_each_iteration": (rewrite_each_iteration_kernel,
                               dict(x_ptr=F32, y_ptr=F32, n="i32", iters="i32"), dict(BLOCK=128)),
    "rewrite_running_value": (rewrite_running_value_kernel,
                              dict(x_ptr=F32, y_ptr=F32, n="i32", iters="i32"), dict(BLOCK=128)),
    "block_ptr_row_norm": (block_ptr_row_norm_kernel,
                           dict(x_ptr=F32, y_ptr=F32, M="i32", N="i32", stride_m="i32"),
                           dict(BLOCK_M=16, BLOCK_N=32)),
    "block_ptr_elementwise": (block_ptr_elementwise_kernel,
                              dict(x_ptr=F32, y_ptr=F32, M="i32", N="i32", stride_xm="i32",
                                   stride_ym="i32"), dict(BLOCK_M=16, BLOCK_N=32)),
    "early_return": (early_return_kernel,
                     dict(x_ptr=F32, t_ptr="*i64", loss_ptr=F32, stride="i32", n_cols="i32",
                          ignore_index="i32"), dict(BLOCK=128)),
    "helper_load": (helper_load_kernel, dict(x_ptr=F32, w_ptr=F32, y_ptr=F32, n="i32"),
                    dict(BLOCK=128, HALF=4)),
    "pow": (pow_kernel, dict(x_ptr=F32, y_ptr=F32, n="i32"), dict(BLOCK=128)),
    "padded_sqrt": (padded_sqrt_kernel, dict(x_ptr=F32, y_ptr=F32, n="i32"), dict(BLOCK=128)),
    "print": (print_kernel, dict(x_ptr=F32, y_ptr=F32), dict(BLOCK=32)),
    "full_reduction": (full_reduction_kernel, dict(x_ptr=F32, y_ptr=F32, M="i32", N="i32"),
                       dict(BM=16, BN=32)),
}
REFUSED = {
    # name: (kernel, types, constexprs, words the error must contain)
    "sliding_store": (sliding_store_kernel, dict(x_ptr=F32, y_ptr=F32, n="i32", iters="i32"),
                      dict(BLOCK=64), "addresses may repeat across iterations"),
    "sort": (sort_kernel, dict(x_ptr=F32, y_ptr=F32), dict(BLOCK=64), "integer bits"),
    "where_pointer": (where_pointer_kernel, dict(x_ptr=F32, z_ptr=F32, y_ptr=F32, use_x="i32"),
                      dict(BLOCK=64), "which pointer parameter"),
    "atomic_result": (atomic_result_kernel, dict(x_ptr=F32, counter_ptr="*i32", y_ptr=F32),
                      dict(BLOCK=64), "update memory a second time"),
    "atomic_max": (atomic_max_kernel, dict(x_ptr=F32, y_ptr=F32, n="i32"), dict(BLOCK=64),
                   "as integers (its pointer is bitcast, as tl.atomic_max"),
}


def _derive(kernel, types, constexprs, none=()):
    bwd = tritonad.grad(kernel)
    none = [n for n in none if n in bwd.launch_signature]
    for shadow in bwd.launch_signature:
        if shadow not in types and shadow not in constexprs and shadow[1:] not in types:
            none.append(shadow)  # a shadow of a name that is no pointer here
    return bwd, compile_backward(bwd, types, constexprs, none=none)


@pytest.mark.parametrize("name", list(CASES))
def test_backward_compiles(name):
    kernel, types, constexprs = CASES[name]
    none = [f"d{p}" for p, t in types.items() if t.startswith("*i")]
    bwd, compiled = _derive(kernel, types, constexprs, none)
    assert ".entry" in compiled.asm["ptx"]
    schedule = bwd.schedule()
    assert "no gradient reaches" not in schedule, schedule


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_with_location(name):
    kernel, types, constexprs, words = REFUSED[name]
    none = [f"d{p}" for p, t in types.items() if t.startswith("*i")]
    with pytest.raises(tritonad.DifferentiationError) as info:
        _derive(kernel, types, constexprs, none)
    message = str(info.value)
    assert words in message, message
    assert f"{HERE}:" in message, message  # the user's kernel line, not Triton's


def test_print_is_not_replayed():
    bwd, _ = _derive(print_kernel, dict(x_ptr=F32, y_ptr=F32), dict(BLOCK=32))
    assert "tt.print" not in bwd.derived_ir()


def test_store_in_loop_reads_upstream_only_in_last_iteration():
    bwd, _ = _derive(*CASES["rewrite_each_iteration"])
    ir = bwd.derived_ir()
    # the upstream load is masked by `iv + step >= ub`
    assert "arith.cmpi sge" in ir, ir


# ---------------------------------------------------------------------------
# GPU: gradients against torch.autograd
# ---------------------------------------------------------------------------

def _check(got, want, rtol=1e-4, atol=1e-5):
    assert torch.isfinite(got).all(), got
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol)


@pytest.mark.gpu
@requires_gpu
def test_blockwise_cumsum_grad():
    rows, n = 3, 333
    x = torch.randn(rows, n, device="cuda")
    y = torch.empty_like(x)
    blockwise_cumsum_kernel[(rows,)](x, y, n, BLOCK=64)
    torch.testing.assert_close(y, x.cumsum(1), rtol=1e-4, atol=1e-4)
    dy = torch.randn_like(x)
    dx = torch.zeros_like(x)
    tritonad.grad(blockwise_cumsum_kernel)[(rows,)](x, y, n, dx, dy.clone(), BLOCK=64)
    _check(dx, dy.flip(1).cumsum(1).flip(1), atol=1e-3)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("iters", [1, 5])
def test_rewrite_each_iteration_grad(iters):
    n = 1000
    x = torch.randn(n, device="cuda", requires_grad=True)
    dy = torch.randn(n, device="cuda")
    ((iters * x) ** 2).backward(dy)
    dx = torch.zeros_like(x)
    grid = (triton.cdiv(n, 128),)
    tritonad.grad(rewrite_each_iteration_kernel)[grid](x.detach(), torch.empty_like(x), n, iters,
                                                       dx, dy.clone(), BLOCK=128)
    _check(dx, x.grad, atol=1e-3)


@pytest.mark.gpu
@requires_gpu
def test_rewrite_running_value_grad():
    n, iters = 700, 4
    x = torch.randn(n, device="cuda", requires_grad=True)
    h = x
    for _ in range(iters):
        h = 0.5 * h + torch.sin(h) * x
    dy = torch.randn(n, device="cuda")
    h.backward(dy)
    dx = torch.zeros_like(x)
    grid = (triton.cdiv(n, 128),)
    tritonad.grad(rewrite_running_value_kernel)[grid](x.detach(), torch.empty_like(x), n, iters,
                                                      dx, dy.clone(), BLOCK=128)
    _check(dx, x.grad, atol=1e-4)


@pytest.mark.gpu
@requires_gpu
def test_block_ptr_grads():
    M, N = 37, 101
    base = torch.randn(M, N + 7, device="cuda")
    x = base[:, :N]  # strided rows
    xr = x.clone().requires_grad_(True)
    (xr * xr).sum(1).sqrt().backward(dy := torch.randn(M, device="cuda"))
    dx = torch.zeros_like(base)[:, :N]
    grid = (triton.cdiv(M, 16),)
    tritonad.grad(block_ptr_row_norm_kernel)[grid](x, torch.empty(M, device="cuda"), M, N,
                                                   x.stride(0), dx, dy.clone(),
                                                   BLOCK_M=16, BLOCK_N=32)
    _check(dx, xr.grad, atol=1e-4)

    xr.grad = None
    (torch.exp(xr) * xr).backward(dy2 := torch.randn(M, N, device="cuda"))
    dx = torch.zeros_like(base)[:, :N]  # the shadow is addressed with x's strides
    tritonad.grad(block_ptr_elementwise_kernel)[grid](
        x, torch.empty_like(x), M, N, x.stride(0), N, dx, dy2.clone(), BLOCK_M=16, BLOCK_N=32)
    _check(dx, xr.grad, atol=1e-4)


@pytest.mark.gpu
@requires_gpu
def test_early_return_grad():
    rows, cols, ignore = 9, 100, -100
    x = torch.randn(rows, cols, device="cuda", requires_grad=True)
    t = torch.randint(0, cols, (rows,), device="cuda")
    t[::3] = ignore
    loss = torch.nn.functional.cross_entropy(x, t, ignore_index=ignore, reduction="none")
    dl = torch.randn(rows, device="cuda")
    loss.backward(dl)
    dx = torch.zeros_like(x)
    tritonad.grad(early_return_kernel)[(rows,)](x.detach(), t, torch.empty(rows, device="cuda"),
                                                cols, cols, ignore, dx, None, dl.clone(),
                                                BLOCK=128)
    _check(dx, x.grad, atol=1e-5)


@pytest.mark.gpu
@requires_gpu
def test_helper_load_grad():
    n, half = 900, 4
    x = torch.randn(n, device="cuda", requires_grad=True)
    wfull = torch.randn(n + half, device="cuda", requires_grad=True)
    y = (2 * x) * wfull[half:]
    dy = torch.randn(n, device="cuda")
    y.backward(dy)
    dx, dw = torch.zeros_like(x), torch.zeros_like(wfull)
    bwd = tritonad.grad(helper_load_kernel)
    bwd[(triton.cdiv(n, 128),)](x.detach(), wfull.detach(), torch.empty_like(x), n, dx, dw,
                                dy.clone(), BLOCK=128, HALF=half)
    _check(dx, x.grad)
    _check(dw, wfull.grad)


@pytest.mark.gpu
@requires_gpu
def test_pow_negative_base_grad():
    n = 500
    x = torch.randn(n, device="cuda", requires_grad=True)
    dy = torch.randn(n, device="cuda")
    (x ** 3).backward(dy)
    dx = torch.zeros_like(x)
    tritonad.grad(pow_kernel)[(triton.cdiv(n, 128),)](x.detach(), torch.empty_like(x), n, dx,
                                                      dy.clone(), BLOCK=128)
    _check(dx, x.grad, atol=1e-4)


@pytest.mark.gpu
@requires_gpu
def test_padded_lanes_do_not_poison_gradients():
    n = 77
    x = (torch.rand(n, device="cuda") + 0.5).requires_grad_(True)
    y = torch.sqrt(x - x.mean() + 4.0) / x
    dy = torch.randn(n, device="cuda")
    y.backward(dy)
    dx = torch.zeros_like(x)
    tritonad.grad(padded_sqrt_kernel)[(1,)](x.detach(), torch.empty_like(x), n, dx, dy.clone(),
                                            BLOCK=128)
    _check(dx, x.grad, atol=1e-4)


@pytest.mark.gpu
@requires_gpu
def test_full_reduction_grad():
    M, N = 11, 29
    x = torch.randn(M, N, device="cuda", requires_grad=True)
    torch.logsumexp(x.flatten(), 0).backward()
    dx = torch.zeros_like(x)
    dy = torch.ones(1, device="cuda")
    tritonad.grad(full_reduction_kernel)[(1,)](x.detach(), torch.empty(1, device="cuda"), M, N,
                                               dx, dy, BM=16, BN=32)
    _check(dx, x.grad, atol=1e-5)


@pytest.mark.gpu
@requires_gpu
def test_print_kernel_grad_matches(capfd):
    x = torch.randn(32, device="cuda", requires_grad=True)
    dy = torch.randn(32, device="cuda")
    (x * x).backward(dy)
    dx = torch.zeros_like(x)
    tritonad.grad(print_kernel)[(1,)](x.detach(), torch.empty_like(x), dx, dy.clone(), BLOCK=32)
    torch.cuda.synchronize()
    _check(dx, x.grad)
    assert "x" not in capfd.readouterr().out  # the backward printed nothing


# ---------------------------------------------------------------------------
# Engineering hazards
# ---------------------------------------------------------------------------

def test_concurrent_derivations_are_safe(monkeypatch):
    """Triton compiles from several threads; the core releases the GIL. Eight
    threads deriving the corpus attention kernel at once all get the same IR."""
    import threading
    from corpus.user_kernels import CASES as KERNEL_CASES
    from tritonad import _C
    import tritonad._kernel_grad as kernel_grad

    captured = []
    original = _C.differentiate_kernel

    def capture(*args, **kwargs):
        captured.append((args, kwargs))
        return original(*args, **kwargs)

    monkeypatch.setattr(kernel_grad._C, "differentiate_kernel", capture)
    kernel, types, constexprs, none = KERNEL_CASES["attention"]
    compile_backward(tritonad.grad(kernel), types, constexprs, none=none)
    monkeypatch.setattr(kernel_grad._C, "differentiate_kernel", original)
    assert captured
    args, kwargs = captured[-1]
    expected = original(*args, **kwargs)
    results, errors = [], []

    def work():
        try:
            for _ in range(3):
                results.append(original(*args, **kwargs))
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(results) == 24 and all(r == expected for r in results)


def test_binding_takes_accumulation_modes_by_name():
    """The mode crosses into the core by name, the names of tritonad.grad's mode=."""
    from tritonad import _C
    with pytest.raises(ValueError, match="mode must be 'auto', 'atomic' or 'deterministic'"):
        _C.differentiate_kernel("module {}", "", "bwd", [], "sometimes")
    with pytest.raises(_C.MLIRError, match="no tt.func named @bwd"):
        _C.differentiate_kernel("module {}", "", "bwd", [], "deterministic")


# ---------------------------------------------------------------------------
# Coverage gaps: tl.assume, tl.debug_barrier, fp8 pointers, tensor descriptors
# ---------------------------------------------------------------------------

@triton.jit
def assume_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    tl.assume(n > 0)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.debug_barrier()
    tl.store(y_ptr + offs, x * x, mask=offs < n)


@triton.jit
def fp8_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n).to(tl.float32)
    tl.store(y_ptr + offs, (x * x).to(y_ptr.dtype.element_ty), mask=offs < n)


@triton.jit
def descriptor_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, shape=[n], strides=[1], block_shape=[BLOCK])
    x = desc.load([tl.program_id(0) * BLOCK])
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, x * x, mask=offs < n)


@pytest.mark.parametrize("kernel,ptr", [(assume_kernel, "*fp32"), (fp8_kernel, "*fp8e4nv"),
                                        (fp8_kernel, "*fp8e5")])
def test_coverage_kernels_compile(kernel, ptr):
    bwd, compiled = _derive(kernel, dict(x_ptr=ptr, y_ptr=ptr, n="i32"), dict(BLOCK=128))
    assert ".entry" in compiled.asm["ptx"]
    assert bwd.schedule().startswith("x_ptr: plain"), bwd.schedule()


def test_fp8_gradient_accumulates_in_fp32():
    bwd, _ = _derive(fp8_kernel, dict(x_ptr="*fp8e4nv", y_ptr="*fp8e4nv", n="i32"),
                     dict(BLOCK=128))
    ir = bwd.derived_ir()
    assert "rounding = rtne" in ir and "f32" in ir, ir


def test_unknown_op_names_the_user_line():
    with pytest.raises(tritonad.DifferentiationError) as info:
        _derive(descriptor_kernel, dict(x_ptr=F32, y_ptr=F32, n="i32"), dict(BLOCK=128))
    message = str(info.value)
    assert f"{HERE}:" in message and "tt.make_tensor_descriptor" in message, message
    assert "<ttir>" not in message, message


@pytest.mark.gpu
@requires_gpu
def test_assume_and_fp8_grads():
    n = 1000
    grid = (triton.cdiv(n, 128),)
    x = torch.randn(n, device="cuda", requires_grad=True)
    dy = torch.randn(n, device="cuda")
    (x * x).backward(dy)
    dx = torch.zeros_like(x)
    tritonad.grad(assume_kernel)[grid](x.detach(), torch.empty_like(x), n, dx, dy.clone(),
                                       BLOCK=128)
    _check(dx, x.grad)
    # fp8 in, fp8 out: compare with torch on the same rounded inputs, fp8 tolerance
    x8 = (torch.rand(n, device="cuda") + 0.5).to(torch.float8_e4m3fn)
    dy8 = (torch.rand(n, device="cuda") + 0.5).to(torch.float8_e4m3fn)
    dx8 = torch.zeros_like(x8)
    tritonad.grad(fp8_kernel)[grid](x8, torch.empty_like(x8), n, dx8, dy8.clone(), BLOCK=128)
    want = (2 * x8.float() * dy8.float()).to(torch.float8_e4m3fn).float()
    torch.testing.assert_close(dx8.float(), want, rtol=0.13, atol=0.02)


@triton.jit
def cumprod_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, REVERSE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=1.0)
    tl.store(y_ptr + row * n + cols, tl.cumprod(x, 0, reverse=REVERSE), mask=cols < n)


def test_cumprod_backward_has_no_division():
    bwd, _ = _derive(cumprod_kernel, dict(x_ptr=F32, y_ptr=F32, n="i32"),
                     dict(BLOCK=64, REVERSE=False))
    assert "arith.divf" not in bwd.derived_ir()


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("reverse", [False, True])
def test_cumprod_with_zeros_grad(reverse):
    rows, n = 5, 37
    x = torch.randn(rows, n, device="cuda", dtype=torch.float64)
    x[1, 3] = 0.0
    x[2, 5] = x[2, 20] = 0.0
    x.requires_grad_(True)
    y = x.flip(1).cumprod(1).flip(1) if reverse else x.cumprod(1)
    dy = torch.randn_like(y)
    y.backward(dy)
    dx = torch.zeros_like(x)
    tritonad.grad(cumprod_kernel)[(rows,)](x.detach(), torch.empty_like(x), n, dx, dy.clone(),
                                           BLOCK=64, REVERSE=reverse)
    _check(dx, x.grad, rtol=1e-9, atol=1e-9)


@triton.jit
def tuple_kernel(ptrs, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(ptrs[0] + offs) * tl.load(ptrs[1] + offs))


def test_tuple_of_pointers_is_refused():
    from triton.compiler import ASTSource
    from compile_util import TARGET
    bwd = tritonad.grad(tuple_kernel)
    pair = ("*fp32", "*fp32")
    signature = {"ptrs": pair, "y_ptr": F32, "dptrs": pair, "dy_ptr": F32, "BLOCK": "constexpr"}
    with pytest.raises(tritonad.DifferentiationError, match="tuples of pointers") as info:
        triton.compile(ASTSource(bwd, signature, {"BLOCK": 64}), target=TARGET)
    assert f"{HERE}:" in str(info.value)


@triton.jit
def nan_max_kernel(x_ptr, z_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    z = tl.load(z_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, z) + 2.0 * tl.minimum(x, z), mask=m)


@pytest.mark.gpu
@requires_gpu
def test_nan_operand_of_maximum_passes_gradient_to_the_other():
    # tl.maximum / tl.minimum ignore a NaN operand (maxnumf): the other side gets g.
    n = 300
    x = torch.randn(n, device="cuda", requires_grad=True)
    zv = torch.randn(n, device="cuda")
    zv[::7] = float("nan")
    z = zv.clone().requires_grad_(True)
    (torch.fmax(x, z) + 2.0 * torch.fmin(x, z)).backward(dy := torch.randn(n, device="cuda"))
    dx, dz = torch.zeros_like(x), torch.zeros_like(x)
    tritonad.grad(nan_max_kernel)[(triton.cdiv(n, 128),)](x.detach(), zv, torch.empty_like(x), n,
                                                          dx, dz, dy.clone(), BLOCK=128)
    _check(dx, x.grad)
    valid = ~zv.isnan()
    torch.testing.assert_close(dz[valid], z.grad[valid])
    assert (dz[~valid] == 0).all()
