"""pytest configuration for the tritonad tests.

Puts ``<repo>/test`` on sys.path, so test modules can ``import corpus.kernels``
and ``import gpu_util`` (the folder is named ``test``, which clashes with the
standard library's ``test`` package, so ``import test.corpus`` does not work),
and defines the ``always_compile`` fixture.
Markers (``gpu``) are declared in pyproject.toml.
"""

import os
import sys

import pytest

_TEST_DIR = os.path.dirname(os.path.abspath(__file__))
if _TEST_DIR not in sys.path:
    sys.path.insert(0, _TEST_DIR)


@pytest.fixture
def always_compile(monkeypatch):
    """Bypasses Triton's on-disk cache: the derivation runs inside Triton's ttir
    stage, so a kernel served from the cache would not be derived in this process
    (no derived_ir(), schedule() or source() of the compile a test just did).
    Modules that need it everywhere say ``pytestmark = pytest.mark.usefixtures(...)``."""
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
