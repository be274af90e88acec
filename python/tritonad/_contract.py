"""The launch contract as the core declares it (cpp/include/tritonad/LaunchContract.h,
exported as ``_C.launch_contract()``): the hidden parameters a derived kernel takes
after its own, the fields of the record a derivation returns with the metadata
key each is kept under, the fields of the records inside it (coverage, regrid
parts, requirements, residuals, schedule entries), and the tables a derived
kernel reads (their words, in order). The launch path reads names from here,
each resolved at import to a module constant (``fields``): a name the core
does not declare fails at import, and a table filled with other words than the
core reads fails when it is built (``filled``)."""

from __future__ import annotations

from typing import Dict, FrozenSet, List, Tuple

from tritonad import _C

_DECLARED = _C.launch_contract()

# [{'name', 'type', 'passing' (pointer, value or selector), 'filled_by', 'travels_with'
#   (the pointer whose memory it describes, or ""), 'meaning'}]
HIDDEN: Tuple[dict, ...] = tuple(_DECLARED["hidden"])
HIDDEN_TYPES: Dict[str, str] = {p["name"]: p["type"] for p in HIDDEN}
# (field, metadata key of the compiled kernel, "" where it is not kept there)
BACKWARD_RECORD: Tuple[Tuple[str, str], ...] = tuple(
    (f["name"], f["metadata"]) for f in _DECLARED["backward_record"])
# {record: its fields}: 'backward' and the records inside it
RECORDS: Dict[str, FrozenSet[str]] = {
    record: frozenset(f["name"] for f in declared)
    for record, declared in _DECLARED.get("records", {}).items()}


def fields(record: str, *names: str) -> Tuple[str, ...]:
    """`names`, fields of `record` the core declares, for module constants
    (``DIGITS, CLAMPS = fields("coverage", "digits", "clamps")``): a use of a
    field the core does not declare fails at import, and reading a record is a
    plain dict lookup."""
    undeclared = [name for name in names if name not in RECORDS.get(record, ())]
    if undeclared:
        raise ImportError(f"tritonad: the compiled core does not declare the field(s) "
                          f"{undeclared} of the {record!r} record (declared: "
                          f"{sorted(RECORDS.get(record, ()))}, records: {sorted(RECORDS)}); the "
                          "Python package and tritonad._C are from different builds")
    return names


def field(record: str, name: str) -> str:
    """`name`, a field of `record` the core declares (see `fields`)."""
    return fields(record, name)[0]


# {table: {"pointer": the hidden parameter that passes it, section: its words in order}}
TABLES: Dict[str, Dict[str, object]] = {
    name: {section: value if section == "pointer" else tuple(w["name"] for w in value)
           for section, value in table.items()}
    for name, table in _DECLARED.get("tables", {}).items()}


def table_words(table: str, section: str) -> Tuple[str, ...]:
    """The words of a section of a table the core reads, in order."""
    try:
        return TABLES[table][section]
    except KeyError:
        raise ImportError(f"tritonad: the compiled core does not declare the {section!r} words "
                          f"of the table {table!r} (declared: {sorted(TABLES)}); the Python "
                          "package and tritonad._C are from different builds") from None


def table_dtype(table: str) -> str:
    """The torch dtype name of a table's words (its pointer's element type)."""
    element = HIDDEN_TYPES[TABLES[table]["pointer"]].lstrip("*")
    return {"i64": "int64", "i32": "int32"}[element]


def filled(table: str, section: str, words: Dict[str, int]) -> List[int]:
    """A section of a table, its words in the order the core reads them: `words`
    names every declared word and no other (a word added on one side only fails
    here, naming both lists)."""
    declared = table_words(table, section)
    if set(words) != set(declared):
        raise RuntimeError(
            f"tritonad: the {section} of the {table} table is filled with the words "
            f"{sorted(words)}, the core reads {list(declared)} (LaunchContract.h): the "
            "Python package and tritonad._C disagree on its layout")
    return [words[w] for w in declared]


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


def metadata_key(name: str) -> str:
    """The compiled kernel's metadata key of the backward record's field `name`
    (for module constants, as `fields`)."""
    return dict(BACKWARD_RECORD)[field("backward", name)]
