"""flash-linear-attention's forward kernels (fla.ops, fla.modules) on the GPU (fp32
and bf16), each launched by the library's own forward code: through
tritonad.autograd(kernel, outputs=...) ("kernel") and through @tritonad.autograd of
the library's forward function ("launcher"), against the library's backward and
float64 torch (oracle.py).

A refusal (a located error of tritonad) is an xfail with its cause; a wrong
gradient or a crash fails. TRITONAD_PEER_TABLE=<path> writes the table.
"""

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")
pytest.importorskip("fla")

import oracle  # noqa: E402
from cases import gpu_params  # noqa: E402
from gpu_util import requires_gpu  # noqa: E402

CASES, PARAMS = gpu_params("fla")


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name, dtype, variant", PARAMS)
def test_fla(name, dtype, variant):
    oracle.report(oracle.run_case(CASES[name], dtype, "cuda", variant))
