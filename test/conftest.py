"""pytest configuration for the tritonad tests.

Only puts ``<repo>/test`` on sys.path, so test modules can ``import corpus.kernels``
and ``import gpu_util`` (the folder is named ``test``, which clashes with the
standard library's ``test`` package, so ``import test.corpus`` does not work).
Markers (``gpu``) are declared in pyproject.toml.
"""

import os
import sys

_TEST_DIR = os.path.dirname(os.path.abspath(__file__))
if _TEST_DIR not in sys.path:
    sys.path.insert(0, _TEST_DIR)
