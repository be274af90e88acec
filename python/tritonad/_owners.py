"""What torch.compile reaches by name: the differentiable launchers and kernel
bridges (registered when made), and the torch.compile layer itself.

Dynamo sees owners only by name (torch versions differ in which user objects
they accept as arguments of a function with an assumed-constant result,
strings they all accept). The layer that turns a call under Dynamo into a custom
operator (_compile.py) sits above the launchers; the public API installs it
(``install_compiled``), loaded on the first call Dynamo traces, so importing
tritonad registers no operator.
"""

from __future__ import annotations

import threading
import weakref
from typing import Dict

_OWNERS: "weakref.WeakValueDictionary[str, object]" = weakref.WeakValueDictionary()
_LOCK = threading.Lock()
_COMPILED = []  # [a function returning the torch.compile layer's module]


def register_owner(name: str, owner) -> None:
    """Makes `owner` reachable under Dynamo by its unique name."""
    with _LOCK:
        _OWNERS[name] = owner


def owner(name: str):
    return _OWNERS[name]


def install_compiled(load) -> None:
    """`load()` returns the torch.compile layer (call_launcher, launch_kernel)."""
    _COMPILED[:] = [load]


def compiled():
    if not _COMPILED:
        raise RuntimeError("tritonad's torch.compile support is not installed: import "
                           "tritonad (its __init__ installs it) before compiling")
    return _COMPILED[0]()


def name_of(obj) -> str:
    return getattr(obj, "__name__", None) or type(obj).__name__


_NAMES: Dict[str, int] = {}
_NAMES_LOCK = threading.Lock()


def unique_name(fn) -> str:
    """module.qualname, with #k for the k-th launcher of that name (closures)."""
    name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', name_of(fn))}"
    with _NAMES_LOCK:
        count = _NAMES.get(name, 0)
        _NAMES[name] = count + 1
    return name if count == 0 else f"{name}#{count}"
