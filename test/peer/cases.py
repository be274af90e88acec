"""Every peer case, by library; a library that is not installed has none."""

from __future__ import annotations

import importlib
from typing import Dict

from oracle import Case

LIBRARIES = {"liger": ("liger_kernel", "cases_liger"), "fla": ("fla", "cases_fla")}


def available(library: str) -> bool:
    try:
        importlib.import_module(LIBRARIES[library][0])
    except ImportError:
        return False
    return True


def cases_of(library: str) -> Dict[str, Case]:
    return importlib.import_module(LIBRARIES[library][1]).CASES if available(library) else {}


def gpu_params(library: str):
    """(the library's cases by name, pytest params (name, dtype, variant)) for its GPU
    test module."""
    import pytest

    cases = cases_of(library)
    return cases, [pytest.param(name, dtype, variant, id=f"{name}-{dtype}-{variant}")
                   for name, case in sorted(cases.items())
                   for dtype in case.dtypes for variant in case.variants("cuda")]


def interpreted_cases() -> Dict[str, Case]:
    found = {}
    for library in LIBRARIES:
        found.update({n: c for n, c in cases_of(library).items() if c.interpret})
    return found
