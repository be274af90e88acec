"""Thin Python face of the compiled core (tritonad._C)."""

import re

from tritonad import _C

MLIRError = _C.MLIRError
MLIRError.__doc__ = (
    "Raised when MLIR rejects the input or a pass fails; the message holds MLIR's "
    "diagnostics as '<file>:<line>:<col>: error: ...' lines."
)


class NotDerivedError(RuntimeError):
    """A description of a derivative (``schedule()``, ``derived_ir()``, ``source()``)
    asked for before anything derived it; the message says what to do."""


def run_pipeline(ir: str, pipeline: str = "", *, generic: bool = False,
                 debug_info: bool = True, name: str = "<ttir>") -> str:
    """Parse and verify TTIR text, run an mlir-opt style pass pipeline, print it.

    >>> import tritonad
    >>> tritonad.run_pipeline("module {}", "builtin.module(cse)", debug_info=False)
    'module {\\n}\\n'

    `pipeline` is mlir-opt's pass pipeline text, with or without the outer
    ``builtin.module(...)`` (``"builtin.module(canonicalize,cse)"`` and
    ``"canonicalize,cse"`` run the same passes); ``"tt.func(cse)"`` nests on
    functions.

    `generic` prints the generic op form; `debug_info` keeps locations (Triton
    turns them into PTX line info). Raises `MLIRError` with MLIR's diagnostics
    (line and column into `name`) on malformed or invalid input.
    """
    if not isinstance(ir, str):
        raise TypeError(f"ir must be str, got {type(ir).__name__}")
    if not isinstance(pipeline, str):
        raise TypeError(f"pipeline must be str, got {type(pipeline).__name__}")
    passes = _module_passes(pipeline)
    try:
        return _C.run_pipeline(ir, passes, generic, debug_info, name)
    except MLIRError as error:
        if passes == pipeline or "invalid pass pipeline" not in str(error):
            raise
    # (the passes inside the anchor do not parse: MLIR's message on the text as
    # given quotes it and points into it)
    return _C.run_pipeline(ir, pipeline, generic, debug_info, name)


_MODULE_ANCHOR = "builtin.module"


def _module_passes(pipeline: str) -> str:
    """The passes of `pipeline` as the core's pass manager takes them. That
    manager is itself anchored on the module, so mlir-opt's spelling
    ``builtin.module(cse)`` given as it is would nest a second module level,
    which matches no op and runs nothing: the outer anchor is taken off. Text
    that is not one well-formed ``builtin.module(...)`` goes on as it is (MLIR
    reports what is wrong with it)."""
    text = pipeline.strip()
    elements = _top_level(text)
    if elements is None:  # (unbalanced: MLIR's parser says where)
        return pipeline
    anchored = [e for e in elements if e.startswith(_MODULE_ANCHOR + "(") and e.endswith(")")]
    if not anchored:
        return pipeline
    if len(elements) > 1:
        raise ValueError(
            f"pass pipeline {pipeline!r}: {_MODULE_ANCHOR}(...) must wrap the whole pipeline "
            f"(mlir-opt's form, e.g. '{_MODULE_ANCHOR}(canonicalize,cse)'), or be left out "
            "(e.g. 'canonicalize,cse'); beside other passes it would nest a module inside the "
            "module and run nothing")
    inner = text[len(_MODULE_ANCHOR) + 1:-1]
    return inner if _top_level(inner) is not None else pipeline


def _top_level(text: str):
    """The comma-separated elements of a pipeline at nesting depth 0; None when
    its parentheses or braces do not balance."""
    elements, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "({":
            depth += 1
        elif char in ")}":
            depth -= 1
            if depth < 0:
                return None
        elif char == "," and depth == 0:
            elements.append(text[start:i].strip())
            start = i + 1
    if depth:
        return None
    elements.append(text[start:].strip())
    return [e for e in elements if e]


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
