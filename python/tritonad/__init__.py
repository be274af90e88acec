"""tritonad: reverse-mode automatic differentiation of Triton kernels, on TTIR."""

from tritonad import _C, _interpreter_mends
from tritonad._core import MLIRError, NotDerivedError, run_pipeline
from tritonad._grad import DifferentiationError, grad
from tritonad._render import RenderError
from tritonad._launcher import autograd

__all__ = ["DifferentiationError", "MLIRError", "NotDerivedError", "RenderError", "autograd",
           "grad", "run_pipeline"]
__version__ = "0.1.0"

_interpreter_mends.install()
