"""Re-parallelized gradients: matmul-class kernels whose dA/dB tiles are shared
by a row/column of programs get programs of their own (cpp/lib/AutoDiff/
Regrid.cpp), grouped on the host (python/tritonad/_regrid.py).
"""

import torch
import triton
import triton.language as tl

import tritonad
from interpret_checks import check
from interpreter_util import GEN, assert_close, jit_from_source, kernel_gradients, randn
from corpus.matmuls import biased_matmul_kernel, gated_matmul_kernel


def _lines_of(schedule):
    return dict(line.split(": ", 1) for line in schedule.splitlines() if ": " in line)


def _regridded(schedule, *names):
    lines = _lines_of(schedule)
    for name in names:
        assert lines[name].startswith("re-parallelized"), schedule


@check("regrid_matmul_random")
def _():
    """Random sizes, tiles, group sizes and operand layouts (transposed views
    included) for the tutorial's grouped matmul, a batched 3-D-grid one, and
    the batched one with its n tiles in a permuted program order (the launch
    then reads each member's program id instead of computing its values):
    gradients against fp64 torch (tl.dot of fp32 is tf32: tolerances for an
    11-bit mantissa over K <= 70); the schedule must say re-parallelized."""
    import inspect

    from corpus.kernels import batched_matmul_kernel, matmul_kernel
    from tritonad import _regrid

    source = inspect.getsource(batched_matmul_kernel.fn).replace("@triton.jit\n", "")
    source = source.replace("def batched_matmul_kernel(", "def permuted_matmul_kernel(")
    source = source.replace("pid_n = tl.program_id(1)", "pid_n = tl.program_id(1)\n"
                            "    pid_n = tl.where((pid_n ^ 1) < tl.cdiv(N, BLOCK_N), pid_n ^ 1, pid_n)")
    permuted = jit_from_source(source, "permuted_matmul_kernel", {"tl": tl, "triton": triton})
    biased = biased_matmul_kernel()
    for case in range(8):
        M, N, K = (int(v) for v in torch.randint(5, 70, (3,), generator=GEN))
        # (64: a contraction deeper than 128 bytes of fp32, summed in passes)
        BM, BN, BK = ((16, 32, 64)[int(v)] for v in torch.randint(0, 3, (3,), generator=GEN))
        transposed = bool(torch.randint(0, 2, (1,), generator=GEN))
        a = randn(K, M).t() if transposed else randn(M, K)
        b = randn(K, N)
        if case % 4 == 3:
            batches = int(torch.randint(1, 3, (1,), generator=GEN))
            a = torch.stack([a] * batches) + randn(batches, M, K)
            b, bias = randn(batches, K, N), randn(N)
            c = torch.empty(batches, M, N)
            bwd = kernel_gradients(
                biased, (triton.cdiv(M, BM), triton.cdiv(N, BN), batches),
                {"a_ptr": a, "b_ptr": b, "bias_ptr": bias}, {"c_ptr": c},
                dict(M=M, N=N, K=K, stride_ab=a.stride(0), stride_am=a.stride(1),
                     stride_ak=a.stride(2), stride_bb=b.stride(0), stride_bk=b.stride(1),
                     stride_bn=b.stride(2), stride_cb=c.stride(0), stride_cm=c.stride(1),
                     stride_cn=c.stride(2)),
                dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK),
                lambda a_ptr, b_ptr, bias_ptr: {"c_ptr": 0.5 * (a_ptr @ b_ptr) + bias_ptr},
                rtol=1e-2, atol=2e-2)
            # the bias's column sums too: a part of its own, grouped by the
            # column of tiles alone (dB's is grouped by the batch as well)
            _regridded(bwd.schedule(), "a_ptr", "b_ptr", "bias_ptr")
            assert "programs of its own" in _lines_of(bwd.schedule())["bias_ptr"]
            assert int(_regrid.last_table[0]) == 0  # (nothing left to the forward's programs)
            continue
        if case % 4 == 0:
            group = int(torch.randint(1, 4, (1,), generator=GEN))
            c = torch.empty(M, N)
            grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
            bwd = kernel_gradients(
                matmul_kernel, grid, {"a_ptr": a, "b_ptr": b}, {"c_ptr": c},
                dict(M=M, N=N, K=K, stride_am=a.stride(0), stride_ak=a.stride(1),
                     stride_bk=b.stride(0), stride_bn=b.stride(1), stride_cm=c.stride(0),
                     stride_cn=c.stride(1)),
                dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=group),
                lambda a_ptr, b_ptr: {"c_ptr": a_ptr @ b_ptr}, rtol=1e-2, atol=2e-2)
            expect_affine = True
        else:
            kernel = batched_matmul_kernel if case % 4 == 1 else permuted
            batches = int(torch.randint(1, 4, (1,), generator=GEN))
            a = torch.stack([a] * batches) + randn(batches, M, K)
            b = randn(batches, K, N)
            c = torch.empty(batches, M, N)
            grid = (triton.cdiv(M, BM), triton.cdiv(N, BN), batches)
            bwd = kernel_gradients(
                kernel, grid, {"a_ptr": a, "b_ptr": b}, {"c_ptr": c},
                dict(M=M, N=N, K=K, stride_ab=a.stride(0), stride_am=a.stride(1),
                     stride_ak=a.stride(2), stride_bb=b.stride(0), stride_bk=b.stride(1),
                     stride_bn=b.stride(2), stride_cb=c.stride(0), stride_cm=c.stride(1),
                     stride_cn=c.stride(2)),
                dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK),
                lambda a_ptr, b_ptr: {"c_ptr": a_ptr @ b_ptr}, rtol=1e-2, atol=2e-2)
            # (permuted n tiles: dA's members are not affine once there are 3 or more)
            expect_affine = kernel is batched_matmul_kernel or triton.cdiv(N, BN) < 3
        _regridded(bwd.schedule(), "a_ptr", "b_ptr")
        lines = _lines_of(bwd.schedule())
        for name, contraction in (("a_ptr", BN), ("b_ptr", BM)):
            assert ("in 2 passes of 32" in lines[name]) == (contraction == 64), (case, lines)
        parts = _regrid.describe(_regrid.last_table)
        assert len(parts) == 2 and all(p["programs"] > 0 for p in parts), parts
        assert all(p["affine"] for p in parts) == expect_affine, (case, parts)
        # (each element of dA and dB is reached once: plain writes, no atomics)
        assert all(p["plain"] for p in parts), (case, parts)
    def small_matmul(M, N, K, programs, **options):
        a, b, c = randn(M, K), randn(K, N), torch.empty(M, N)
        return kernel_gradients(
            matmul_kernel, (programs,), {"a_ptr": a, "b_ptr": b}, {"c_ptr": c},
            dict(M=M, N=N, K=K, stride_am=a.stride(0), stride_ak=a.stride(1),
                 stride_bk=b.stride(0), stride_bn=b.stride(1), stride_cm=c.stride(0),
                 stride_cn=c.stride(1)),
            dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2),
            lambda a_ptr, b_ptr: {"c_ptr": a_ptr @ b_ptr}, rtol=1e-2, atol=2e-2, **options)

    # Where the launch cannot show each element reached once, the parts add
    # with atomics: the same gradients.
    reaches = _regrid._reaches_each_once
    _regrid._reaches_each_once = lambda *args: False
    _regrid._CACHE.clear()
    try:
        small_matmul(37, 45, 29, 3 * 3)
        assert not any(p["plain"] for p in _regrid.describe(_regrid.last_table))
    finally:
        _regrid._reaches_each_once = reaches
        _regrid._CACHE.clear()
    # Shadows to be overwritten (accumulate=False, as tritonad.autograd passes
    # them): the parts store their sums.
    bwd = small_matmul(40, 21, 33, 3 * 2, accumulate=False)
    assert "stores where the launch finds each element reached once" in bwd.schedule()
    assert all(p["plain"] for p in _regrid.describe(_regrid.last_table))
    # The atomic mode keeps the forward's schedule.
    bwd = tritonad.grad(matmul_kernel, mode="atomic")
    a, b, c = randn(20, 30), randn(30, 40), torch.empty(20, 40)
    dc = randn(20, 40)
    da, db = torch.zeros_like(a), torch.zeros_like(b)
    bwd[(2 * 3,)](a, b, c, 20, 40, 30, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                  c.stride(0), c.stride(1), da, db, dc.clone(), BLOCK_M=16, BLOCK_N=16,
                  BLOCK_K=16, GROUP_M=1)
    assert "re-parallelized" not in bwd.schedule()
    assert_close("a (atomic mode)", da, dc.double() @ b.double().t(), 1e-2, 2e-2)


@check("regrid_staged_epilogue")
def _():
    """c = (a @ b) * gate: the forward's programs stage dC * gate once into
    scratch, in a launch of their own, and the parts read it (random sizes
    and tiles; gate = g, two loaded tiles, or exp(g)); gradients against
    fp64 torch. Without scratch (tape=False) exp(g) keeps the atomics."""
    from tritonad import _regrid

    for case in range(4):
        exp = case % 2 == 1
        M, N, K = (int(v) for v in torch.randint(5, 60, (3,), generator=GEN))
        BM, BN, BK = ((16, 32)[int(v)] for v in torch.randint(0, 2, (3,), generator=GEN))
        a, b, g, c = randn(M, K), randn(K, N), randn(M, N), torch.empty(M, N)

        def reference(a_ptr, b_ptr, g_ptr):
            return {"c_ptr": (a_ptr @ b_ptr) * (torch.exp(g_ptr) if exp else g_ptr)}
        options = dict(tape=False) if case == 3 else {}
        bwd = kernel_gradients(
            gated_matmul_kernel, (triton.cdiv(M, BM), triton.cdiv(N, BN)),
            {"a_ptr": a, "b_ptr": b, "g_ptr": g}, {"c_ptr": c},
            dict(M=M, N=N, K=K, stride_am=a.stride(0), stride_ak=a.stride(1),
                 stride_bk=b.stride(0), stride_bn=b.stride(1), stride_cm=c.stride(0),
                 stride_cn=c.stride(1)),
            dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, EXP=exp), reference, rtol=1e-4,
            atol=1e-4, **options)
        lines = _lines_of(bwd.schedule())
        for name in ("a_ptr", "b_ptr"):
            if case == 3:
                assert lines[name].startswith("atomic") and "(exp, erf, ...)" in lines[name], \
                    lines[name]
            else:
                assert lines[name].startswith("re-parallelized") and \
                    "from scratch" in lines[name], lines[name]
        if case != 3:
            assert int(_regrid.last_table[0]) > 0  # (the forward's programs staged the tiles)


@check("regrid_staged_silu_saturating")
def _():
    """c = silu(a @ b) * gate with accumulators far past exp's fp32 range (|acc| up
    to a few hundred): the forward's programs stage dC * d(silu * gate)/d(acc) for
    the parts, and where exp(-acc) overflows the staged value is 0 (the adjoint
    reaching the exp underflows), not 0 * inf = NaN; gradients against fp64 torch."""
    from corpus.matmul_spellings import linear_epilogue_kernel

    M, N, K = (int(v) for v in torch.randint(9, 40, (3,), generator=GEN))
    a, b, gate = randn(M, K) * 40.0, randn(K, N), randn(M, N)
    c, unused = torch.empty(M, N), torch.empty(1)
    assert float((a @ b).min()) < -90.0  # (exp(-acc) overflows fp32 somewhere)

    def reference(a_ptr, b_ptr, aux_ptr):
        return {"c_ptr": torch.nn.functional.silu(a_ptr @ b_ptr) * aux_ptr}
    bwd = kernel_gradients(
        linear_epilogue_kernel, (triton.cdiv(M, 16), triton.cdiv(N, 16)),
        {"a_ptr": a, "b_ptr": b, "aux_ptr": gate}, {"c_ptr": c},
        dict(bias_ptr=unused, M=M, N=N, K=K, stride_am=a.stride(0), stride_ak=a.stride(1),
             stride_bk=b.stride(0), stride_bn=b.stride(1), stride_cm=c.stride(0),
             stride_cn=c.stride(1), stride_xm=gate.stride(0), stride_xn=gate.stride(1)),
        dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, EPILOGUE="silu_gate"), reference,
        # (dB sums K products of a's entries, 40x the usual: fp32's absolute error
        # grows with them, while the defect this guards is NaN)
        rtol=1e-4, atol=2e-3)
    _regridded(bwd.schedule(), "a_ptr", "b_ptr")
