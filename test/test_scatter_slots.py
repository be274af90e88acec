"""Deterministic mode's scatter slots (cpp/include/tritonad/AutoDiff/ScatterSums.h,
python/tritonad/_scatter.py): where programs may add to the same elements in a
way nothing proves apart (a row table, a runtime trip count, a runtime stride
that lets tiles overlap, beside partial buffers' coarsened grid or re-parallelized
parts, loops whose trip counts vary by program), each program stores its lanes'
contributions and elements into slots of its own, summed into the gradient after
the kernel in slot order. Before them mode="deterministic"
refused these kernels (a located error or a refused launch).

CPU: the schedule and the derived IR (no atomics), and the gradients in Triton's
interpreter against fp64 torch. GPU: the gradients (fp32 and bf16, odd sizes,
tables with repeated rows) and bitwise equality across runs, the later ones
replaying the first one's launch plan; a step captured in a CUDA graph.
"""

import pytest

torch = pytest.importorskip("torch")
tritonad = pytest.importorskip("tritonad")

from compile_util import assert_records_declared, compile_on_cpu  # noqa: E402
from corpus import row_tables  # noqa: E402
from gpu_util import captured, requires_gpu  # noqa: E402
from interpreter_util import run_interpreted  # noqa: E402

# Relative to the gradient's largest element: fp32 sums rounded once; bf16 gradients
# rounded to bf16 (2^-8) once.
TOLERANCE = {"float32": 1e-5, "bfloat16": 8e-3}


@pytest.mark.parametrize("case", row_tables.CASES)
def test_schedule_takes_scatter_slots(case):
    bwd, types, constexprs = row_tables.schedule_of(case)
    compiled = compile_on_cpu(bwd, types, constexprs)
    entries = {e.subject: e for e in bwd.schedule().entries if e.kind == "shadow"}
    # (the matmul's compile for every program keeps B's atomic for a launch without
    # the parts' table)
    assert ("tt.atomic_rmw" in bwd.derived_ir()) == (case == "matmul")
    (record,) = [r for r in compiled.metadata.tritonad_scatter.values() if r]
    scattered = row_tables.SCATTERED[case]
    assert [c["shadow"] for c in record["columns"]] == [bwd.shadows[scattered]]
    assert assert_records_declared(compiled)
    entry = entries[scattered]
    if case == "windows":  # (a plain write where the stride keeps rows apart, else slots)
        assert entry.strategy == "plain", entry
        assert any(n.startswith("where the launch's arguments let programs' tiles overlap, "
                                "scatter slots") for n in entry.notes), entry
        assert record["unused"] is not None
    else:
        assert entry.strategy == "scatter-slots", entry
        assert record["unused"] is None
    if case == "matmul":  # (beside B's programs of their own)
        assert entries["B"].strategy == "re-parallelized", entries["B"]
    if case in ("gather_scaled", "persistent_scaled"):  # (W's partial buffers: coarsened)
        assert entries["W"].strategy == "partial-buffer", entries["W"]


@pytest.mark.parametrize("case, grid, arguments, trips", [
    # (outputs p, p + 7, ... below 53: the first program runs ceil(53 / 7))
    ("persistent", 7, {"n_out": 53}, 8),
    # (the backward strides over the forward's 6 programs, 41 outputs: 7 for the first)
    ("persistent_scaled", 6, {"n_out": 41}, 7),
    # (program p runs p + 1 iterations: the last of 23 runs 23)
    ("prefix", 23, {}, 23),
])
def test_rows_have_room_for_the_longest_program(case, grid, arguments, trips):
    """Where a loop's trip count varies by program, every row of slots has room
    for the program that runs the most: its trips, 64 lanes each."""
    from tritonad import _coverage

    bwd, types, constexprs = row_tables.schedule_of(case)
    compiled = compile_on_cpu(bwd, types, constexprs)
    (record,) = [r for r in compiled.metadata.tritonad_scatter.values() if r]
    values = dict(arguments, tritonad_programs=grid)
    assert _coverage.evaluate(record["per_program"], values, (grid,)) == 64 * trips


def test_auto_mode_keeps_atomics():
    """The default mode is unchanged: atomics where programs' addresses may meet."""
    bwd, types, constexprs = row_tables.schedule_of("gather", mode="auto")
    compile_on_cpu(bwd, types, constexprs)
    entries = {e.subject: e for e in bwd.schedule().entries if e.kind == "shadow"}
    assert entries["X"].strategy == "atomic", entries["X"]
    assert "tt.atomic_rmw" in bwd.derived_ir()


def test_shared_weight_keeps_partial_buffers():
    """Beside a weight every program shares, the rows' slots are per forward
    program: the weight keeps its partial buffer and the coarsened grid."""
    bwd, types, constexprs = row_tables.schedule_of("gather_scaled")
    compile_on_cpu(bwd, types, constexprs)
    entries = {e.subject: e for e in bwd.schedule().entries if e.kind == "shadow"}
    assert entries["W"].strategy == "partial-buffer", entries["W"]
    assert entries["X"].strategy == "scatter-slots", entries["X"]


def test_overlapping_windows_need_no_launch_check():
    """A plain write exclusive only for some strides: where the launch's stride
    lets tiles overlap, the slots take it, so nothing is left to refuse; where it
    keeps them apart, no program writes a slot, and the launch allocates none."""
    from tritonad import _coverage

    bwd, types, constexprs = row_tables.schedule_of("windows")
    compiled = compile_on_cpu(bwd, types, constexprs)
    requirements = [r for rs in compiled.metadata.tritonad_requirements.values() for r in rs]
    assert not requirements, requirements
    (record,) = [r for r in compiled.metadata.tritonad_scatter.values() if r]
    unused = lambda stride: _coverage.evaluate(record["unused"], dict(stride=stride, N=77),  # noqa: E731
                                               (29, 1, 1))
    assert unused(77) and unused(80) and not unused(50)


def test_slots_add_into_any_layout():
    """The sums after the kernel: key (p, c) holds 1 + an element's offset from the
    shadow's pointer (0: none) and values its contribution; they land in a strided
    shadow's own elements, and in a broadcast buffer's memory once per element."""
    from tritonad._launch_plan import add_scatter_slots

    index = torch.tensor([[1, 0, 3], [3, 6, 0]])   # (offsets 0, 2, 2, 5; two unused)
    values = torch.tensor([[1.0, 100.0, 2.0], [4.0, 8.0, 100.0]])
    base = torch.zeros(2, 3)
    add_scatter_slots(index, values, base, [(0, 3, 0, 3, 1)])
    assert base.tolist() == [[1.0, 0.0, 6.0], [0.0, 0.0, 8.0]]
    strided = torch.zeros(3, 2).T                  # (offsets: [0, 2, 4], [1, 3, 5])
    add_scatter_slots(index[:, 1:], values[:, 1:], strided, [(0, 2, 0, 2, 1)])
    assert strided.tolist() == [[0.0, 2.0, 0.0], [0.0, 0.0, 8.0]]
    column = torch.zeros(6, 1)
    broadcast = column.expand(6, 4)                # (every row's elements share one float)
    add_scatter_slots(index, values, broadcast, [(0, 3, 0, 3, 1)])
    assert column.flatten().tolist() == [1.0, 0.0, 6.0, 0.0, 0.0, 8.0]


def test_keys_for_runs_of_lanes():
    """A key per run of lanes (a gathered row): key (p, c) holds lanes + the run's
    first element, and values (p, begin + lanes * c + l) are its elements'; runs
    overlap (the second program's first run starts inside the first's), a run may
    start before the tensor (a masked-off first lane: its value is dropped), a key
    of 0 names nothing, and a group beside another adds to the same sums."""
    from tritonad._launch_plan import add_scatter_slots

    # (runs of 3 from elements 0, 6 and 2, and from -1; keys of one: elements 0, 2)
    index = torch.tensor([[3, 9, 1], [5, 2, 3]])
    values = torch.tensor([[9.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                           [9.0, 10.0, 20.0, 30.0, 0.0, 40.0, 50.0]])
    shadow = torch.zeros(9)
    add_scatter_slots(index, values, shadow, [(1, 7, 0, 2, 3), (0, 1, 2, 3, 1)])
    assert shadow.tolist() == [1.0 + 40.0 + 9.0, 2.0 + 50.0, 3.0 + 10.0 + 9.0, 20.0, 30.0,
                               0.0, 4.0, 5.0, 6.0]


_SLOT_SUMS = """
import json, torch
from tritonad._launch_plan import slot_sums
torch.manual_seed(3)
extent, results = 37, []
for lanes in (1, 4):
    # (0: no element; elements repeat, some never appear; runs overlap; a long run)
    # (keys: lanes + a run's first element, which may lie before the tensor)
    keys = torch.randint(1, extent + lanes, (9, 41 // lanes))
    keys[1, :5] = 0
    keys[2, :7] = 5
    values = torch.randn(9, 50)
    got = slot_sums(keys, values, 3, keys.shape[1] * lanes, lanes, extent)
    want = torch.zeros(extent + 2 * lanes)   # (element e at e + lanes)
    order = sorted(range(keys.numel()), key=lambda i: (keys.reshape(-1)[i].item(), i))
    for i in order:  # (fp32, one add at a time: by key, then slot)
        p, c = divmod(i, keys.shape[1])
        key = keys[p, c].item()
        for lane in range(lanes if key else 0):
            want[key + lane] = want[key + lane] + values[p, 3 + c * lanes + lane]
    results.append(bool(torch.equal(got, want[lanes:extent + lanes])))
results.append(got.dtype == torch.float32)
print(json.dumps(results))
"""


def test_slot_sums_add_in_slot_order_interpreted():
    """The sums after the kernel (keys sorted, then one lane per element over the
    keys that cover it, in Triton's interpreter): each element's contributions
    added one at a time in key order, then slot order, in fp32, bit for bit as a
    sequential sum; a key per value and a key per run of 4."""
    assert run_interpreted(_SLOT_SUMS) == [True, True, True]


_INTERPRETED = """
import json, torch
from corpus import row_tables
torch.manual_seed(7)
results = {name: row_tables.check(name, torch.float32, "cpu") for name in row_tables.CASES}
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def interpreted():
    return run_interpreted(_INTERPRETED)


@pytest.mark.parametrize("case", row_tables.CASES)
def test_gradients_interpreted(interpreted, case):
    errors = interpreted[case]
    assert max(errors.values()) <= TOLERANCE["float32"], (case, errors)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", row_tables.CASES)
def test_gradients_gpu(case, dtype):
    errors = row_tables.check(case, getattr(torch, dtype), "cuda")
    assert max(errors.values()) <= TOLERANCE[dtype], (case, dtype, errors)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("case", row_tables.CASES)
def test_bitwise_reproducible_gpu(case):
    """Three runs on the same inputs (the second and third replay the first's
    launch plan) give the same bits; the default mode's atomics need not."""
    runs = [row_tables.gradients(case, torch.float32, "cuda", seed=11) for _ in range(3)]
    for later in runs[1:]:
        for name, grad in runs[0].items():
            assert torch.equal(grad, later[name]), (case, name)


@pytest.mark.gpu
@requires_gpu
def test_cuda_graph_capture_and_replay():
    """A step whose backward sums scatter slots, captured in a CUDA graph and
    replayed on new data: the slots' allocation and zero fill, the kernel and
    the sort-based sums replay with it."""
    torch.manual_seed(5)
    rows, lookups, cols = 23, 61, 77
    x = torch.randn(rows, cols, device="cuda", requires_grad=True)
    table = row_tables.row_table(lookups, rows, "cuda")
    dy = torch.randn(lookups, cols, device="cuda")
    op = tritonad.autograd(row_tables.gather_rows, outputs=("Y",), mode="deterministic")

    def step():
        x.grad = None
        y = torch.empty(lookups, cols, device="cuda")   # (an output without history)
        op[(lookups,)](y, x, table, x.stride(0), cols, BLOCK=128).backward(dy)

    graph = captured(step)
    for _ in range(2):
        with torch.no_grad():
            x.copy_(torch.randn_like(x))
        graph.replay()
        torch.cuda.synchronize()
        x64 = x.detach().double().requires_grad_()
        gathered = x64[table.long()]
        (gathered * torch.sigmoid(gathered)).backward(dy.double())
        error = ((x.grad.double() - x64.grad).abs().max() / x64.grad.abs().max()).item()
        assert error <= TOLERANCE["float32"], error
