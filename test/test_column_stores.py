"""Two store classes of library kernels (corpus/column_stores.py):

- one column of a tile per iteration of a loop whose trip count a constant bounds
  (flash-linear-attention's chunk_gla_fwd_A_kernel_intra_sub_intra): the iterations
  interleave inside the rows, whose constant stride is at least the columns they span.
  Refused before ("addresses may repeat across iterations"); a bound past the stride
  still is. Lit: AutoDiff/kernel-store-columns.mlir.
- a later store of a constant over part of an output (that kernel zeroes its upper
  triangle so): the constant carries no gradient, and it takes the upstream gradient
  away from the elements it overwrites, after the first store, under a branch, in a
  loop, in every iteration of a loop that rewrites its addresses, or over a band that
  spans several tiles of a storing loop. Before, the constant's store was skipped and the first store took the whole
  upstream: a silently wrong gradient (error ~1 relative).

Interpreter (fp32, bf16 with interpreter_bf16, both modes) and GPU (fp32, bf16) against
fp64 torch.autograd."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")

from corpus import column_stores  # noqa: E402
from gpu_util import requires_gpu  # noqa: E402
from interpreter_util import corpus_cases_interpreted  # noqa: E402

TOLERANCE = {"float32": 1e-5, "bfloat16": 2e-2}


@pytest.fixture(scope="module")
def interpreted():
    return corpus_cases_interpreted("column_stores")


@pytest.mark.parametrize("mode", ["auto", "deterministic"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", column_stores.CASES)
def test_column_stores_interpreted(interpreted, case, dtype, mode):
    seed, results = interpreted
    result = results[f"{case}/{dtype}/{mode}"]
    assert isinstance(result, dict), f"(TRITONAD_TEST_SEED={seed}) {result}"
    assert max(result.values()) <= TOLERANCE[dtype], \
        f"(TRITONAD_TEST_SEED={seed}) {case} {dtype} {mode}: {result}"


def test_columns_past_the_row_stride_are_refused():
    import tritonad
    from tritonad import DifferentiationError
    x = torch.randn(40)
    bwd = tritonad.grad(column_stores.wrapping_columns)
    with pytest.raises(DifferentiationError, match=r"column_stores\.py:\d+:\d+: error: "
                       r"cannot differentiate a store inside a loop whose addresses may "
                       r"repeat across iterations"):
        bwd.schedule(x, torch.empty(40, 16), 40, torch.empty(40), torch.empty(40, 16), BC=16)


def test_block_scores_derive_with_plain_loop_stores():
    import tritonad
    x, w = torch.randn(45, 16), torch.randn(45, 16)
    bwd = tritonad.grad(column_stores.causal_block_scores)
    schedule = str(bwd.schedule(x, w, torch.empty(45, 16), 45, torch.empty_like(x),
                                torch.empty_like(w), torch.empty(45, 16), D=16, BC=16))
    assert "A: output: its shadow is read (the upstream gradient), then zeroed where " \
           "overwritten" in schedule, schedule


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", column_stores.CASES)
def test_column_stores_gpu(case, dtype):
    errors = column_stores.check(case, getattr(torch, dtype), "cuda")
    assert max(errors.values()) <= TOLERANCE[dtype], (case, dtype, errors)
