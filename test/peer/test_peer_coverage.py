"""Every forward kernel of liger_kernel.ops has a peer case or a stated reason
(cases_liger.UNCOVERED): a new kernel in a new version of the library shows up
here. Backward kernels (named ..bwd.., ..backward.., .._grad_..) are the peer,
not cases; the CuTe/cuTile/Ascend backends and experimental ops are not Triton
forward kernels of liger_kernel.ops."""

import importlib
import pkgutil
import re

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")
pytest.importorskip("liger_kernel")

import cases_liger  # noqa: E402
import oracle  # noqa: E402
from tritonad._kernel_grad import unwrap  # noqa: E402

_BACKWARD = re.compile(r"bwd|backward|_grad_")
_OTHER_BACKENDS = ("cute", "cutile", "_ascend", "experimental")


def forward_kernels(package: str) -> set:
    """module:name of every @triton.jit function a module of `package` defines,
    backward kernels left out."""
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    root = importlib.import_module(package)
    found = set()
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        if any(part in info.name for part in _OTHER_BACKENDS):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, (JITFunction, Autotuner, Heuristics)):
                fn = unwrap(value)[0].fn
                if fn.__module__ == info.name and not _BACKWARD.search(fn.__name__):
                    found.add(f"{fn.__module__}:{fn.__name__}")
    return found


def covered(cases) -> set:
    names = set()
    for case in cases.values():
        for name in case.kernels:
            fn = unwrap(getattr(*oracle.resolve(case, name)))[0].fn
            names.add(f"{fn.__module__}:{fn.__name__}")
    return names


def test_every_liger_forward_kernel_has_a_case_or_a_reason():
    kernels = forward_kernels("liger_kernel.ops")
    with_case = covered(cases_liger.CASES)
    missing = sorted(kernels - with_case - set(cases_liger.UNCOVERED))
    assert not missing, f"forward kernels with neither a peer case nor a reason: {missing}"
    stale = sorted(set(cases_liger.UNCOVERED) - (kernels - with_case))
    assert not stale, f"UNCOVERED names kernels that have a case or no longer exist: {stale}"
