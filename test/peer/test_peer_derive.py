"""Every peer case's backward derived on the CPU (no GPU, no interpreter): the
libraries' forward code runs on CPU tensors up to each kernel launch, which is
recorded instead of run; tritonad then derives the kernel's backward for the
launch's argument types, up to TTIR for an sm_90 target (oracle.derive_case).

This is what CI sees of the kernels the interpreter cannot run (liger's scalar
`.to()`, fla's chunked attention): whether tritonad derives them, refuses them
with a located error (xfail with the cause), or fails (a defect). Gradients are
checked by test_peer_interpret.py here and by test_liger.py / test_fla.py on a GPU.
"""

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")

import oracle  # noqa: E402
from cases import cases_of  # noqa: E402

CASES = {**cases_of("liger"), **cases_of("fla")}


@pytest.mark.skipif(not CASES, reason="no library of the peer suite is installed "
                    "(pip install liger-kernel fla-core)")
@pytest.mark.parametrize("name", sorted(CASES) or ["none"])
def test_derived(name):
    oracle.report(oracle.derive_case(CASES[name]), passing="derived")
