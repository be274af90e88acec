"""Thin Python face of the compiled core (tritonad._C)."""

import re

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


_TTIR_POSITION = re.compile(r"^<ttir>:(\d+):\d+: ", re.M)
_LOC_ALIAS = re.compile(r"^(#loc\d*) = loc\((.*)\)\s*$")
_TRAILING_LOC = re.compile(r"loc\((#loc\d*)\)\s*$")
_FILE_LOC = re.compile(r'"([^"]*)":(\d+):(\d+)')
_ALIAS_USE = re.compile(r"#loc\d*")


def locate_in_source(message: str, ttir: str) -> str:
    """Rewrites `<ttir>:line:col:` positions in MLIR's messages (a parse error,
    before any op exists to carry the kernel's location) into the user's
    file:line:col, read from the `loc(...)` at the end of that TTIR line."""
    lines = ttir.splitlines()
    aliases = {}
    for line in lines:
        if line.startswith("#loc"):
            m = _LOC_ALIAS.match(line)
            if m:
                aliases[m.group(1)] = m.group(2)

    def resolve(body, depth=0):
        library = None
        for m in _FILE_LOC.finditer(body):
            if "/triton/language/" not in m.group(1):
                return f"{m.group(1)}:{m.group(2)}:{m.group(3)}"
            library = library or f"{m.group(1)}:{m.group(2)}:{m.group(3)}"
        if depth < 32:
            for alias in _ALIAS_USE.findall(body):
                found = resolve(aliases.get(alias, ""), depth + 1)
                if found:
                    return found
        return library

    def replace(match):
        number = int(match.group(1))
        if not 1 <= number <= len(lines):
            return match.group(0)
        line = lines[number - 1]
        trailing = _TRAILING_LOC.search(line)
        found = resolve(aliases.get(trailing.group(1), "")) if trailing else None
        return f"{found}: " if found else match.group(0)

    located = _TTIR_POSITION.sub(replace, message)
    if "custom op 'tt." in located and "is unknown" in located:
        located += ("tritonad does not know this Triton op yet (tensor descriptors among "
                    "them): write the access with pointer arithmetic or tl.make_block_ptr\n")
    return located
