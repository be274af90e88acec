"""Kernels under TRITON_INTERPRET=1: @triton.jit makes InterpretedFunctions, which
tritonad derives through a JITFunction twin of the same Python function."""

from __future__ import annotations

import threading

from triton.runtime.jit import JITFunction

_TWIN = "_tritonad_jit_twin"
_TWIN_LOCK = threading.Lock()


def _interpreted_class():
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:  # pragma: no cover - a Triton without the interpreter
        return None
    return InterpretedFunction


def is_interpreted(obj) -> bool:
    cls = _interpreted_class()
    return cls is not None and isinstance(obj, cls)


def jit_twin(interpreted) -> JITFunction:
    """A JITFunction of the same Python function and options (one per function,
    so Triton's and tritonad's per-function records stay attached to one object)."""
    twin = getattr(interpreted, _TWIN, None)
    if twin is None:
        with _TWIN_LOCK:
            twin = getattr(interpreted, _TWIN, None)
            if twin is None:
                twin = JITFunction(interpreted.fn, **interpreted.kwargs)
                twin.tritonad_interpreted = interpreted
                setattr(interpreted, _TWIN, twin)
    return twin
