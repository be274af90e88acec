"""tritonad: reverse-mode automatic differentiation of Triton kernels, on TTIR."""

from tritonad import _C, _interpreter_mends, _owners
from tritonad._core import MLIRError, NotDerivedError, run_pipeline
from tritonad._grad import DifferentiationError, grad
from tritonad._render import RenderError
from tritonad._launcher import autograd

__all__ = ["DifferentiationError", "MLIRError", "NotDerivedError", "RenderError", "autograd",
           "grad", "run_pipeline"]
__version__ = "0.1.0"

_interpreter_mends.install()


def _compiled():
    from tritonad import _compile  # (loaded when Dynamo first traces a tritonad call)
    return _compile


_owners.install_compiled(_compiled)
