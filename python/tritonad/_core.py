"""Thin Python face of the compiled core (tritonad._C)."""

from tritonad import _C

MLIRError = _C.MLIRError
MLIRError.__doc__ = (
    "Raised when MLIR rejects the input or a pass fails; the message holds MLIR's "
    "diagnostics as '<file>:<line>:<col>: error: ...' lines."
)


def run_pipeline(ir: str, pipeline: str = "", *, generic: bool = False,
                 debug_info: bool = True, name: str = "<ttir>") -> str:
    """Parse and verify TTIR text, run an mlir-opt style pass pipeline, print it.

    >>> import tritonad
    >>> tritonad.run_pipeline("module {}", "builtin.module(cse)")
    'module {\\n}\\n'

    `generic` prints the generic op form; `debug_info` keeps locations (Triton
    turns them into PTX line info). Raises `MLIRError` with MLIR's diagnostics
    (line and column into `name`) on malformed or invalid input.
    """
    if not isinstance(ir, str):
        raise TypeError(f"ir must be str, got {type(ir).__name__}")
    return _C.run_pipeline(ir, pipeline, generic, debug_info, name)
