"""The launch contract as the core declares it (cpp/include/tritonad/LaunchContract.h,
exported as ``_C.launch_contract()``): the hidden parameters a derived kernel takes
after its own, and the fields of the record a derivation returns with the metadata
key each is kept under. The launch path reads names from here; a name used here
that the core does not declare fails at import."""

from __future__ import annotations

from typing import Dict, Tuple

from tritonad import _C

_DECLARED = _C.launch_contract()

# [{'name', 'type', 'passing' (pointer, value or selector), 'filled_by', 'meaning'}]
HIDDEN: Tuple[dict, ...] = tuple(_DECLARED["hidden"])
HIDDEN_TYPES: Dict[str, str] = {p["name"]: p["type"] for p in HIDDEN}
# (field, metadata key of the compiled kernel, "" where it is not kept there)
BACKWARD_RECORD: Tuple[Tuple[str, str], ...] = tuple(
    (f["name"], f["metadata"]) for f in _DECLARED["backward_record"])


def declared(name: str) -> str:
    """`name`, a hidden parameter the core declares."""
    if name not in HIDDEN_TYPES:
        raise ImportError(f"tritonad: the compiled core does not declare the hidden parameter "
                          f"{name!r} (declared: {list(HIDDEN_TYPES)}); the Python package and "
                          "tritonad._C are from different builds")
    return name


def passed_as(passing: str) -> Tuple[str, ...]:
    """The hidden parameters passed as `passing` ('pointer', 'value', 'selector')."""
    return tuple(p["name"] for p in HIDDEN if p["passing"] == passing)


def metadata_key(field: str) -> str:
    return dict(BACKWARD_RECORD)[field]
