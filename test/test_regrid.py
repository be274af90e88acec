"""Re-parallelized gradients: a matmul's dA and dB computed by programs of their
own (one per gradient tile and group of iterations, looping over the forward
programs that share the tile) instead of atomics from the forward's programs.

CPU: the schedule, the IR, and what is refused with its reason. The numeric
check in the CPU interpreter is interpret_checks/regrid.py's `regrid_matmul_random`
(random sizes, tiles, group sizes, transposed operands, batched and permuted
grids, the atomic fallback and the overwrite path). GPU: gradients against
torch (fp16 and bf16, odd sizes, two tile configurations), through
tritonad.grad and tritonad.autograd, bitwise reproducible.
"""

import warnings

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

import triton.language as tl  # noqa: E402
from tritonad import _regrid  # noqa: E402

from corpus.kernels import batched_matmul_kernel, matmul_kernel  # noqa: E402
from corpus.matmul_spellings import \
    block_ptr_grouped_kernel as block_ptr_matmul_kernel  # noqa: E402
from gpu_util import requires_gpu  # noqa: E402
from compile_util import (assert_records_declared, compile_for_schedule,  # noqa: E402
                          compile_on_cpu)
from corpus.matmuls import MATMUL_TYPES, grads_into_shadows  # noqa: E402
from corpus.matmuls import assert_close_half as _assert_close  # noqa: E402
from corpus.matmuls import matmul_args as _args, matmul_grid as _grid  # noqa: E402

TILES = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8)


@triton.jit
def _masked_product(a_ptr, b_ptr, offs_m, offs_n, M, N, K, stride_am, stride_ak, stride_bk,
                    stride_bn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    BLOCK_K: tl.constexpr):
    # The [offs_m, offs_n] tile of a @ b: a masked K loop accumulating in fp32.
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        ks = k * BLOCK_K + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + ks[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=(ks[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def matmul_activation_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                             stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr):
    # An activation epilogue: dC's contribution needs the loop's result.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = _masked_product(a_ptr, b_ptr, offs_m, offs_n, M, N, K, stride_am, stride_ak,
                          stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K)
    if ACTIVATION == "silu":
        y = acc * tl.sigmoid(acc)
    else:  # leaky ReLU
        y = tl.where(acc > 0, acc, 0.01 * acc)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn,
             y.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _grouped_tile(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    # The matmul tutorial's grouped program order: this program's (row, column) tile.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pids_per_group = GROUP_M * num_pid_n
    first_m = (pid // pids_per_group) * GROUP_M
    group_rows = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % pids_per_group) % group_rows
    pid_n = (pid % pids_per_group) // group_rows
    return pid_m, pid_n


@triton.jit
def grouped_matmul_leaky_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                                stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
                                BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                GROUP_M: tl.constexpr):
    # A leaky ReLU epilogue, programs in the matmul tutorial's grouped order.
    pid_m, pid_n = _grouped_tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = _masked_product(a_ptr, b_ptr, offs_m, offs_n, M, N, K, stride_am, stride_ak,
                          stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K)
    y = tl.where(acc > 0, acc, 0.01 * acc)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn,
             y.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _lines(schedule):
    return dict(line.split(": ", 1) for line in schedule.strip().splitlines()
                if not line.startswith(("loop ", "stabilizer ", "programs: ")))


def test_matmul_gradients_get_programs_of_their_own(always_compile):
    bwd = tritonad.grad(matmul_kernel)
    compiled = compile_on_cpu(bwd, MATMUL_TYPES, TILES)
    lines = _lines(bwd.schedule())
    for name in ("a_ptr", "b_ptr"):
        assert lines[name].startswith("re-parallelized (programs of its own"), lines[name]
        assert "4 iterations of the loop" in lines[name]  # (64x32 tiles: at most 4)
        assert "plain read-add-writes where the launch finds each element reached once" in \
            lines[name]
    ir = bwd.derived_ir()
    assert "tritonad_regrid" in ir and ir.count("tt.dot") >= 4
    # (the schedule's entries, the regrid record, its two parts and their coverage)
    assert assert_records_declared(compiled) >= len(bwd.schedule().entries) + 5


def test_block_pointer_gradients_get_plain_writes(always_compile):
    # A boundary check's lower bound, index >= 0, holds where the tile's
    # offset is never negative: here (grouped order) where the forward
    # programs' row and column tiles (the parts' keys) are, which the launch
    # checks. The parts' masks are then bounds the launch can count elements
    # under: plain read-add-writes, as for tensors of pointers.
    bwd = tritonad.grad(block_ptr_matmul_kernel)
    lines = _lines(compile_for_schedule(bwd, MATMUL_TYPES, TILES))
    for name in ("a_ptr", "b_ptr"):
        assert lines[name].startswith("re-parallelized (programs of its own"), lines[name]
        assert "plain read-add-writes where the launch finds each element reached once" in \
            lines[name]


def test_overwritten_shadows_get_stores(always_compile):
    bwd = tritonad.grad(matmul_kernel, accumulate=False)
    lines = _lines(compile_for_schedule(bwd, MATMUL_TYPES, TILES))
    assert "stores where the launch finds each element reached once" in lines["a_ptr"]


def test_atomic_mode_keeps_the_forward_schedule(always_compile):
    bwd = tritonad.grad(matmul_kernel, mode="atomic")
    schedule = compile_for_schedule(bwd, MATMUL_TYPES, TILES)
    assert "re-parallelized" not in schedule
    assert _lines(schedule)["a_ptr"].startswith("atomic (atomics requested)")


def test_epilogue_from_the_loop_result_is_staged_or_says_why(always_compile):
    # dC * silu'(acc) needs acc, the result of the forward loop the backward
    # recomputes, in every member: the forward's programs store it into
    # scratch for the parts; without scratch (recomputing it per member would
    # replay the forward's loop) refused, with the reason.
    bwd = tritonad.grad(matmul_activation_kernel)
    lines = _lines(compile_for_schedule(bwd, MATMUL_TYPES, dict(TILES, ACTIVATION="silu")))
    for name in ("a_ptr", "b_ptr"):
        assert lines[name].startswith("re-parallelized (programs of its own"), lines[name]
        assert "from scratch" in lines[name], lines[name]
    bwd = tritonad.grad(matmul_activation_kernel)
    lines = _lines(compile_for_schedule(bwd, MATMUL_TYPES, dict(TILES, ACTIVATION="silu",
                                                                 tritonad_tape=None)))
    for name in ("a_ptr", "b_ptr"):
        assert lines[name].startswith("atomic")
        assert "not re-parallelized: its contribution depends on the result of scf.for" in \
            lines[name]


def _autograd_schedule(kernel, types, tiles, scratch=True, programs=None, compiled=None):
    """The schedule of tritonad.autograd's backward, which reads residuals;
    `scratch` False: compiled without tritonad_tape (as with tape=False);
    `programs` 'main' or 'parts': compiled as the launch path compiles each
    launch's kernel (its selector 1, a constant)."""
    from triton.compiler import ASTSource

    from compile_util import TARGET
    from tritonad._partial import WORKSPACE_TYPES
    from tritonad._residuals import RESIDUALS

    bwd = tritonad.autograd(kernel, outputs=("c_ptr",)).backward_kernel
    types = dict(types, **WORKSPACE_TYPES, **{RESIDUALS: "*i8"})
    for pointer, shadow in bwd.shadows.items():
        types[shadow] = types[pointer]
    constants = dict(tiles) if scratch else dict(tiles, tritonad_tape=None)
    if programs is not None:
        constants[f"tritonad_{programs}_only"] = 1
    signature = {n: "constexpr" if n in constants else types[n] for n in bwd.arg_names}
    kernel = triton.compile(ASTSource(bwd, signature, constants), target=TARGET)
    if compiled is not None:
        compiled.append(kernel)
    return bwd


@pytest.mark.parametrize("activation", ["leaky", "silu"])
def test_epilogue_is_staged_once_per_forward_program(always_compile, activation):
    # Through tritonad.autograd the forward saves acc (a residual). Each
    # member's dC * act'(acc) is computed once, by the forward's programs, into
    # scratch (the parts read it): SiLU's exp per element as well as a leaky
    # ReLU's select.
    bwd = _autograd_schedule(matmul_activation_kernel, MATMUL_TYPES,
                             dict(TILES, ACTIVATION=activation))
    schedule = bwd.schedule()
    lines = _lines(schedule)
    for name in ("a_ptr", "b_ptr"):
        assert lines[name].startswith("re-parallelized (programs of its own"), lines[name]
        # (a 64x64 fp16 tile: the truncation for the dot happens once, before it)
        assert "from scratch (8192 bytes per forward program" in lines[name], lines[name]
    assert [e.subject for e in schedule.entries if e.kind == "residual"] == ["acc"]
    ir = bwd.derived_ir()
    assert ir.count("tt.store") >= 1 and "tritonad_tape" in ir
    if activation == "silu":
        # the exp only in the forward's programs (before the parts' branch)
        assert ir.count("math.exp") == 1


def test_staged_scratch_in_group_order_keeps_grouped_members_affine(always_compile,
                                                                   monkeypatch):
    # In the grouped program order (GROUP_M), the programs of one column of
    # tiles (dB's members) are not evenly spaced: scratch in program order
    # would make dB's part read each member's id from the table (its loads
    # then wait for it: no pipelining). The launch orders scratch by (one
    # part's group, the other's) instead, and both parts' members are affine.
    compiled = []
    _autograd_schedule(grouped_matmul_leaky_kernel, MATMUL_TYPES, TILES, compiled=compiled)
    record = _regrid.record_of(compiled[0])
    assert any(_regrid.reads_slot(value) for p in record["parts"] for value in p.get("frontier", []))
    n = 64 * 20 + 7  # (20 rows of tiles and a masked one: a partial last group)
    grid = (triton.cdiv(n, 64) ** 2,)
    args = dict(M=n, N=n, K=n, stride_am=n, stride_ak=1, stride_bk=n, stride_bn=1,
                stride_cm=n, stride_cn=1)
    words, _, _ = _regrid._table(record, args, grid)
    assert [p["affine"] for p in _regrid.describe(words)] == [True, True]
    slots = words[int(words[5]):int(words[5]) + grid[0]]
    assert torch.equal(torch.sort(slots).values, torch.arange(grid[0]))
    # in program order, a column's members are not evenly spaced (nor, with
    # the partial last group's 5 rows for 8, a row's)
    monkeypatch.setattr(_regrid, "_slot_orders", lambda record, groupings, programs:
                        [torch.arange(programs, dtype=torch.int64)])
    words, _, _ = _regrid._table(record, args, grid)
    assert [p["affine"] for p in _regrid.describe(words)] == [False, False]


def test_forward_programs_and_parts_get_kernels_of_their_own(always_compile):
    # The launch path runs the forward's programs (staging dC * silu'(acc))
    # and the parts in two launches, each with a kernel compiled for its own
    # programs: the parts' kernel has none of the staging code (its registers
    # and shared memory are sized for the parts alone), the forward's none of
    # the parts; both carry the same record.
    tiles = dict(TILES, ACTIVATION="silu")
    kernels = {programs: _autograd_schedule(matmul_activation_kernel, MATMUL_TYPES, tiles,
                                            programs=programs)
               for programs in (None, "main", "parts")}
    both, main, parts = (kernels[p].derived_ir() for p in (None, "main", "parts"))
    assert both.count("scf.if") > parts.count("scf.if")
    assert main.count("math.exp") == 1 and "tt.dot" not in main and "tt.store" in main
    assert "math.exp" not in parts and parts.count("tt.dot") == both.count("tt.dot")
    records = {str(k.schedule()) for k in kernels.values()}
    assert len(records) == 1, records


def test_epilogue_without_scratch_says_why(always_compile):
    # Without scratch (tape=False) a member's exp per element would be
    # evaluated again for every tile it feeds: atomics, and why.
    lines = _lines(_autograd_schedule(matmul_activation_kernel, MATMUL_TYPES,
                                      dict(TILES, ACTIVATION="silu"), scratch=False).schedule())
    for name in ("a_ptr", "b_ptr"):
        assert lines[name].startswith("atomic") and "not re-parallelized: its contribution " \
            "evaluates" in lines[name] and "(exp, erf, ...) per element" in lines[name], lines[name]


def test_batched_grid_groups_by_batch_and_tile(always_compile):
    types = dict(MATMUL_TYPES, stride_ab="i32", stride_bb="i32", stride_cb="i32")
    bwd = tritonad.grad(batched_matmul_kernel)
    lines = _lines(compile_for_schedule(bwd, types, dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=64)))
    assert lines["a_ptr"].startswith("re-parallelized") and \
        lines["b_ptr"].startswith("re-parallelized")


# ---------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------

@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(200, 136, 328), (1, 70, 65), (513, 257, 129)])
@pytest.mark.parametrize("tiles", [TILES, dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8)])
def test_matmul_grads_match_torch(dtype, shape, tiles):
    M, N, K = shape
    a = torch.randn(M, K, device="cuda", dtype=dtype)
    b = torch.randn(K, N, device="cuda", dtype=dtype).t().contiguous().t()  # column-major
    dc = torch.randn(M, N, device="cuda", dtype=dtype)
    ref_a = dc.double() @ b.double().t()
    ref_b = a.double().t() @ dc.double()
    bwd = grads_into_shadows(a, b, dc, tiles, ref_a, ref_b)
    assert "re-parallelized" in bwd.schedule()
    # tritonad.autograd: fresh buffers, overwritten, bitwise the same twice
    op = tritonad.autograd(matmul_kernel, outputs=("c_ptr",))
    at, bt = a.clone().requires_grad_(), b.clone().requires_grad_()
    c = op[_grid(M, N, tiles)](*_args(at, bt, torch.empty(M, N, device="cuda", dtype=dtype)),
                               **tiles)
    first = torch.autograd.grad(c, (at, bt), dc, retain_graph=True)
    again = torch.autograd.grad(c, (at, bt), dc)
    _assert_close(first[0], ref_a)
    _assert_close(first[1], ref_b)
    assert all(torch.equal(x, y) for x, y in zip(first, again))


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(200, 136, 328), (1, 70, 65), (513, 257, 129)])
@pytest.mark.parametrize("options", [{}, dict(mode="deterministic")])
def test_block_pointer_matmul_grads_match_torch(dtype, shape, options):
    M, N, K = shape
    a = torch.randn(M, K, device="cuda", dtype=dtype)
    b = torch.randn(N, K, device="cuda", dtype=dtype).t()  # column-major
    dc = torch.randn(M, N, device="cuda", dtype=dtype)
    op = tritonad.autograd(block_ptr_matmul_kernel, outputs=("c_ptr",), **options)
    at, bt = a.clone().requires_grad_(), b.clone().requires_grad_()
    c = op[_grid(M, N, TILES)](*_args(at, bt, torch.empty(M, N, device="cuda", dtype=dtype)),
                               **TILES)
    first = torch.autograd.grad(c, (at, bt), dc, retain_graph=True)
    again = torch.autograd.grad(c, (at, bt), dc)
    _assert_close(first[0], dc.double() @ b.double().t())
    _assert_close(first[1], a.double().t() @ dc.double())
    assert all(torch.equal(x, y) for x, y in zip(first, again))
    assert "stores where the launch finds each element reached once" in \
        op.backward_kernel.schedule()


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("stages", [2, 4])
def test_parts_that_do_not_fit_fall_back_to_atomics(stages):
    # 128x128x64 fp16 tiles with 2 or 4 stages: the parts beside the forward's
    # programs need more shared memory than an H100 has (256 KiB). The launch
    # compiles the backward with fewer pipeline stages until it fits; where
    # even one stage does not, it takes the kernel without a table (the
    # forward's schedule, atomics) and says so, instead of failing with
    # OutOfResources. Either way the gradient is right.
    tiles = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8)
    M, N, K = 513, 257, 129
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    dc = torch.randn(M, N, device="cuda", dtype=torch.float16)
    bwd = tritonad.grad(matmul_kernel)
    da, db = torch.zeros_like(a), torch.zeros_like(b)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bwd[_grid(M, N, tiles)](*_args(a, b, torch.empty_like(dc)), da, db, dc, **tiles,
                                num_warps=8, num_stages=stages)
    _assert_close(da, dc.double() @ b.double().t())
    _assert_close(db, a.double().t() @ dc.double())
    fell_back = any("shared memory" in str(w.message) for w in caught)
    assert fell_back == ("re-parallelized" not in bwd.schedule())


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_biased_epilogue_runs_beside_the_parts(dtype):
    # dA/dB by the parts, the bias's column sums by a part of their own
    # (grouped by the column of tiles, over rows and batches): written once.
    from corpus.matmuls import biased_matmul_kernel

    kernel = biased_matmul_kernel()
    batches, M, N, K = 3, 200, 136, 328
    a = torch.randn(batches, M, K, device="cuda", dtype=dtype, requires_grad=True)
    b = torch.randn(batches, K, N, device="cuda", dtype=dtype, requires_grad=True)
    bias = torch.randn(N, device="cuda", dtype=torch.float32, requires_grad=True)
    op = tritonad.autograd(kernel, outputs=("c_ptr",))
    c = torch.empty(batches, M, N, device="cuda", dtype=dtype)
    strides = lambda t: (t.stride(0), t.stride(1), t.stride(2))  # noqa: E731
    tiles = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    y = op[(triton.cdiv(M, 64), triton.cdiv(N, 64), batches)](
        a, b, bias, c, M, N, K, *strides(a), *strides(b), *strides(c), **tiles)
    dy = torch.randn_like(y)
    got = torch.autograd.grad(y, (a, b, bias), dy)
    leaves = [t.detach().double().requires_grad_() for t in (a, b, bias)]
    ref = torch.autograd.grad(0.5 * (leaves[0] @ leaves[1]) + leaves[2], leaves, dy.double())
    for g, r in zip(got, ref):
        _assert_close(g, r)
    assert "re-parallelized" in op.backward_kernel.schedule()


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(200, 136, 328), (65, 257, 100)])
@pytest.mark.parametrize("activation", ["leaky", "silu"])
def test_epilogue_through_autograd_matches_torch(dtype, shape, activation):
    # The epilogue's gradient from the saved acc: dA and dB by the parts,
    # which read dC * act'(acc) staged once by the forward's programs (a leaky
    # ReLU's two tiles, SiLU's exp): bitwise reproducible.
    M, N, K = shape
    tiles = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, ACTIVATION=activation)
    a = torch.randn(M, K, device="cuda", dtype=dtype, requires_grad=True)
    b = torch.randn(K, N, device="cuda", dtype=dtype, requires_grad=True)
    op = tritonad.autograd(matmul_activation_kernel, outputs=("c_ptr",))
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    y = op[grid](*_args(a, b, torch.empty(M, N, device="cuda", dtype=dtype)), **tiles)
    dy = torch.randn_like(y)
    got = torch.autograd.grad(y, (a, b), dy, retain_graph=True)
    again = torch.autograd.grad(y, (a, b), dy)
    leaves = [t.detach().double().requires_grad_() for t in (a, b)]
    acc = leaves[0] @ leaves[1]
    act = acc * torch.sigmoid(acc) if activation == "silu" else \
        torch.where(acc > 0, acc, 0.01 * acc)
    ref = torch.autograd.grad(act, leaves, dy.double())
    for g, r, g2 in zip(got, ref, again):
        _assert_close(g, r)
        _assert_close(g2, r)  # (each call's own buffers: a missed zero fill shows here)
        assert torch.equal(g, g2)
    line = _lines(op.backward_kernel.schedule())["a_ptr"]
    assert line.startswith("re-parallelized") and "from scratch" in line, line


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("activation", ["leaky", "silu"])
def test_epilogue_through_grad_stages_the_loop_result(dtype, activation):
    # tritonad.grad (no residuals): the backward recomputes acc, the
    # forward's programs stage it in scratch, the parts read it.
    M, N, K = 200, 136, 328
    tiles = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, ACTIVATION=activation)
    a = torch.randn(M, K, device="cuda", dtype=dtype)
    b = torch.randn(K, N, device="cuda", dtype=dtype)
    dy = torch.randn(M, N, device="cuda", dtype=dtype)
    bwd = tritonad.grad(matmul_activation_kernel)
    runs = []
    for _ in range(2):
        da, db = torch.zeros_like(a), torch.zeros_like(b)
        bwd[(triton.cdiv(M, 64), triton.cdiv(N, 64))](
            *_args(a, b, torch.empty(M, N, device="cuda", dtype=dtype)), da, db, dy.clone(),
            **tiles)
        runs.append((da, db))
    leaves = [t.double().requires_grad_() for t in (a, b)]
    acc = leaves[0] @ leaves[1]
    act = acc * torch.sigmoid(acc) if activation == "silu" else \
        torch.where(acc > 0, acc, 0.01 * acc)
    ref = torch.autograd.grad(act, leaves, dy.double())
    for g, r, g2 in zip(runs[0], ref, runs[1]):
        _assert_close(g, r)
        assert torch.equal(g, g2)
    line = _lines(bwd.schedule())["a_ptr"]
    assert line.startswith("re-parallelized") and "from scratch" in line, line


def test_table_orders_members_by_trip_count_and_counts_each_tile():
    # A causal loop: program (m, h) takes min((m + 1) * 2, 7) iterations; the
    # grouping key is the head h. Members (m of one head) come longest first,
    # ties broken so that the member's value (m * 16) stays affine in its
    # index; per (head, tile) the members reaching the tile. A second part
    # led by the first has no programs of its own, and its own plain word.
    from tritonad import _regrid

    pid0, pid1 = ("pid", 0), ("pid", 1)
    upper = ("min", ("mul", ("add", pid0, ("const", 1)), ("const", 2)), ("arg", "L"))
    part = dict(shadow="dv", key=[("mul", pid1, ("const", 1000))], lower=("const", 0),
                upper=upper, step=("const", 1), affine=True,
                frontier=[("mul", pid0, ("const", 16))], coarsening=1, coverage=None,
                key_digits=[], condition_keys=[], store_only=False, trips_vary=True,
                leader=-1)
    record = dict(main=True, parts=[part, dict(part, shadow="dk", leader=0)])
    words, total, stored = _regrid._table(record, {"L": 7}, (4, 2))
    words = [int(w) for w in words]
    header = words[_regrid._HEADER:_regrid._HEADER + 2 * _regrid._PART_HEADER]
    lead, follow = header[:_regrid._PART_HEADER], header[_regrid._PART_HEADER:]
    programs, groups, trips, members_at, starts_at = lead[:5]
    assert (groups, trips, programs) == (2, 7, 2 * 7)
    assert total == 8 + 14 and stored == []
    # trips per m: 2, 4, 6, 7: longest first
    assert words[members_at:members_at + 8] == [3, 2, 1, 0, 7, 6, 5, 4]
    assert words[starts_at:starts_at + 3] == [0, 4, 8]
    assert lead[6] == 1  # affine: m * 16 = 48 - 16 j
    bases_at, deltas_at = lead[7], lead[8]
    assert words[bases_at:bases_at + 2] == [48, 48] and words[deltas_at] == -16
    counts_at = lead[10]
    assert words[counts_at:counts_at + 7] == [4, 4, 3, 3, 2, 2, 1]
    assert follow[0] == 0 and follow[1:9] == lead[1:9] and follow[10] == lead[10]
    described = _regrid.describe(torch.tensor(words))
    assert [p["programs"] for p in described] == [14, 0]


@pytest.mark.parametrize("window, overlaps", [(0, False), (16, True)])
def test_table_refuses_overlapping_starts_in_deterministic_mode(window, overlaps):
    # A loop from its program's own block, lo = m * 32 - window, to (m + 1) * 32 in
    # steps of 16: its start joins the key (after the head, the address key).
    # Without a window the groups' ranges meet end to end; with one they
    # overlap, which deterministic mode refuses at launch (auto: atomics).
    pid0, pid1 = ("pid", 0), ("pid", 1)
    lower = ("sub", ("mul", pid0, ("const", 32)), ("const", window))
    upper = ("mul", ("add", pid0, ("const", 1)), ("const", 32))
    part = dict(shadow="dk", key=[("mul", pid1, ("const", 1000)), lower], lower=lower,
                upper=upper, step=("const", 16), affine=False, frontier=[], coarsening=1,
                coverage=None, key_digits=[], condition_keys=[], store_only=False,
                trips_vary=True, lower_varies=True, address_keys=1, leader=-1, phase=1)
    for deterministic in (False, True):
        record = dict(main=True, deterministic=deterministic, parts=[part])
        if deterministic and overlaps:
            with pytest.raises(RuntimeError, match="dk start their loop at places whose ranges"):
                _regrid._table(record, {}, (4, 2))
            continue
        words, total, _ = _regrid._table(record, {}, (4, 2))
        # 8 groups (4 blocks x 2 heads), each of 2 (or 3 with the window) iterations
        assert [p["programs"] for p in _regrid.describe(words)] == [8 * (3 if window else 2)]


def test_deterministic_mode_takes_the_parts(always_compile):
    # dA and dB need atomics on the forward's grid (each row of programs adds
    # to the same tile): deterministic mode leaves them to re-parallelization,
    # which gives them programs of their own, instead of refusing the kernel.
    bwd = tritonad.grad(matmul_kernel, mode="deterministic")
    lines = _lines(compile_for_schedule(bwd, MATMUL_TYPES, TILES))
    for name in ("a_ptr", "b_ptr"):
        assert lines[name].startswith("re-parallelized (programs of its own"), lines[name]


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(200, 136, 328), (513, 257, 129)])
def test_deterministic_matmul_grads_match_torch(dtype, shape):
    M, N, K = shape
    a = torch.randn(M, K, device="cuda", dtype=dtype)
    b = torch.randn(K, N, device="cuda", dtype=dtype)
    dc = torch.randn(M, N, device="cuda", dtype=dtype)
    bwd = tritonad.grad(matmul_kernel, mode="deterministic")
    runs = []
    for _ in range(2):
        da, db = torch.zeros_like(a), torch.zeros_like(b)
        bwd[_grid(M, N, TILES)](*_args(a, b, torch.empty(M, N, device="cuda", dtype=dtype)),
                                da, db, dc, **TILES)
        runs.append((da, db))
    _assert_close(runs[0][0], dc.double() @ b.double().t())
    _assert_close(runs[0][1], a.double().t() @ dc.double())
    assert torch.equal(runs[0][0], runs[1][0]) and torch.equal(runs[0][1], runs[1][1])
    assert "re-parallelized" in bwd.schedule()
