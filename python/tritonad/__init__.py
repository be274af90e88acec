"""tritonad: reverse-mode automatic differentiation of Triton kernels, on TTIR."""

from tritonad import _C
from tritonad._core import MLIRError, run_pipeline

__all__ = ["MLIRError", "run_pipeline"]
__version__ = "0.1.0"
