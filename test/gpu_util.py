"""GPU helpers shared by tests.

``requires_gpu`` is a skipif mark: apply it (together with ``@pytest.mark.gpu``)
to tests that launch kernels. It skips when torch is not installed or when torch
sees no CUDA device.
"""

import pytest


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    try:
        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001  (broken driver installs raise here)
        return False


def _skip_reason() -> str:
    try:
        import torch  # noqa: F401
    except ImportError:
        return "needs torch (not installed)"
    return "needs a CUDA GPU (torch.cuda.is_available() is False)"


HAS_CUDA = cuda_available()

requires_gpu = pytest.mark.skipif(not HAS_CUDA, reason=_skip_reason() if not HAS_CUDA else "")
