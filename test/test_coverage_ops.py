"""Ops real kernels need beyond sums and maxima (issue 39, "Coverage that real kernels
need"), against fp64 torch.autograd:

- ``tl.flip``: Triton flips with integer xor-swaps, which a gradient cannot follow;
  prepare rewrites that exact pattern into reshape / trans / split / join on the floats
  (AutoDiff/Prepare/Flip.cpp; lit: AutoDiff/flip.mlir).
- ``tl.gather``: the adjoint scatter-adds through a one-hot compare and sum in
  registers (Rules/GatherRule.cpp; lit: AutoDiff/gather.mlir).
- ``tl.reduce`` with any associative combiner, here Welford's (mean, m2, count),
  logsumexp's (max, sum) and a non-commutative one (affine maps): element i's gradient
  is that of f(f(P_{i-1}, x_i), S_{i+1}) with P / S exclusive scans of f from either end
  (Rules/CombinerRules.cpp; lit: AutoDiff/reduce-combiner.mlir, -errors.mlir).

Kernels: corpus/combiners.py (2-D tiles of odd sizes, masked lanes, both axes). CPU: the
interpreter (fp32, tritonad.grad and tritonad.autograd), the backward compiled to PTX
(fp32 and bf16), and the refusal of a non-associative combiner. GPU: fp32 and bf16.
"""

import os
import zlib

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from corpus import combiners  # noqa: E402
from gpu_util import requires_gpu  # noqa: E402
from interpreter_util import run_interpreted  # noqa: E402

CASES = {
    # name: (check function, its dim / axis argument)
    "flip_dim0": ("check_flip", 0),
    "flip_unit_dim": ("check_flip", 0, dict(shape=(1, 13), block=(1, 16))),
    "flip_dim1": ("check_flip", 1),
    "gather_axis0": ("check_gather", 0),
    "gather_axis1": ("check_gather", 1),
    "welford_axis0": ("check_welford", 0),
    "welford_axis1": ("check_welford", 1),
    "logsumexp_axis0": ("check_log_softmax", 0),
    "logsumexp_axis1": ("check_log_softmax", 1),
    "affine_axis0": ("check_affine_reduce", 0),
    "affine_axis1": ("check_affine_reduce", 1),
}
# tritonad.autograd (which saves the forward's reductions as residuals) on top
AUTOGRAD_CASES = ("welford_axis1", "logsumexp_axis0", "gather_axis1", "affine_axis0")

_INTERPRETED = """
import json, sys, torch
from corpus import combiners
cases = json.loads(sys.argv[1])
errors = {}
for name, (check, arg, path, sizes, seed) in cases.items():
    try:
        errors[name] = getattr(combiners, check)(torch.float32, "cpu", arg, path=path,
                                                 seed=seed, **sizes)
    except Exception as e:  # reported per case
        errors[name] = f"{type(e).__name__}: {e}"
errors["refusal"] = combiners.difference_reduce_refusal("cpu")
print(json.dumps(errors))
"""


def _sizes(case):
    return case[2] if len(case) > 2 else {}


def _seed(*key):
    """Each test's inputs from its name; TRITONAD_TEST_SEED=<n> changes every seed."""
    return zlib.crc32(repr(key).encode()) ^ int(os.environ.get("TRITONAD_TEST_SEED", "0"))


@pytest.fixture(scope="module")
def interpreted():
    import json
    cases = {name: (case[0], case[1], "grad", _sizes(case), _seed(name))
             for name, case in CASES.items()}
    cases.update({name + "_autograd": (*CASES[name][:2], "autograd", _sizes(CASES[name]),
                                       _seed(name + "_autograd"))
                  for name in AUTOGRAD_CASES})
    return run_interpreted(_INTERPRETED, json.dumps(cases), timeout=600)


@pytest.mark.parametrize("name", [*CASES, *(n + "_autograd" for n in AUTOGRAD_CASES)])
def test_interpreted_matches_fp64_torch(interpreted, name):
    error = interpreted[name]
    seed = f"TRITONAD_TEST_SEED={os.environ.get('TRITONAD_TEST_SEED', '0')}"
    assert not isinstance(error, str), f"({seed}) {error}"
    assert error <= 2e-6, f"({seed}) {error}"


def test_non_associative_combiner_is_a_located_error(interpreted):
    message = interpreted["refusal"]
    assert "not associative" in message and "arith.subf" in message, message
    assert "combiners.py" in message, message  # the user's kernel line


_KERNELS = {
    "flip": (combiners.flip_kernel, ("X", "Y"), dict(BLOCK_R=8, BLOCK_C=16, DIM=0)),
    "gather": (combiners.gather_kernel, ("X", "I", "Y"),
               dict(BLOCK_R=8, BLOCK_C=16, BLOCK_I=16, AXIS=1)),
    "welford": (combiners.welford_norm_kernel, ("X", "Y"), dict(BLOCK_R=8, BLOCK_C=16, AXIS=0)),
    "logsumexp": (combiners.log_softmax_kernel, ("X", "Y"),
                  dict(BLOCK_R=8, BLOCK_C=16, AXIS=1)),
    "affine": (combiners.affine_reduce_kernel, ("X", "B", "H"),
               dict(BLOCK_R=8, BLOCK_C=16, AXIS=0)),
}


@pytest.mark.usefixtures("always_compile")
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("kernel", list(_KERNELS))
def test_backward_compiles_for_sm90(kernel, dtype):
    fn, pointers, constexprs = _KERNELS[kernel]
    bwd = tritonad.grad(fn, wrt=("X",))
    types = {name: ("*i32" if name == "I" else f"*{dtype}") for name in pointers}
    for name, shadow in bwd.shadows.items():
        types[shadow] = types[name]
    signature, consts = {}, dict(constexprs)
    for name in bwd.launch_signature:
        if name in constexprs:
            signature[name] = "constexpr"
        else:
            signature[name] = types.get(name, "fp32" if name == "eps" else "i32")
    triton.compile(ASTSource(bwd, signature, consts), target=GPUTarget("cuda", 90, 32))
    ir = bwd.derived_ir()
    assert "%dX" in ir and "tt.store" in ir
    assert "tt.bitcast" not in ir or kernel != "flip"


# (shape, block) per check on the GPU: a small tile and a larger one; gather's one-hot
# adjoint holds K_src * K_index per line, so its tiles stay small
GPU_SHAPES = {
    "check_gather": [dict(shape=(5, 13), n_index=11), dict(shape=(16, 29), n_index=35)],
    "other": [dict(shape=(5, 13), block=(8, 16)), dict(shape=(37, 101), block=(64, 128))],
}


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("path", ["grad", "autograd"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", [name for name, case in CASES.items() if len(case) == 2])
def test_gpu_matches_fp64_torch(name, dtype, path):
    check, arg = CASES[name]
    dtype = getattr(torch, dtype)
    errors = [getattr(combiners, check)(dtype, "cuda", arg, path=path,
                                        seed=_seed(name, str(dtype), path, i), **sizes)
              for i, sizes in enumerate(GPU_SHAPES.get(check, GPU_SHAPES["other"]))]
    # bf16 buffers, fp32 math: the error is the inputs' and outputs' rounding
    seed = f"TRITONAD_TEST_SEED={os.environ.get('TRITONAD_TEST_SEED', '0')}"
    assert max(errors) <= (2e-5 if dtype == torch.float32 else 2e-2), f"({seed}) {errors}"
