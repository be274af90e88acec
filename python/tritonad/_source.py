"""Helpers to read a @triton.jit function and to create new ones from source."""

from __future__ import annotations

import ast
import itertools
import linecache
import re
import textwrap
from typing import List, Optional

import triton

_counter = itertools.count()


def jit_from_source(source: str, name: str, env: dict, **jit_kwargs):
    """Defines function `name` from `source` and wraps it with triton.jit.

    The source is registered with linecache so Triton (which reads functions
    with inspect.getsource) and tracebacks can see it.
    """
    filename = f"<tritonad-generated-{next(_counter)}-{name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": "tritonad_generated", **env}
    exec(compile(source, filename, "exec"), namespace)
    return triton.jit(**jit_kwargs)(namespace[name])


def function_def(fn) -> ast.FunctionDef:
    """The AST of a JITFunction's Python function."""
    tree = ast.parse(textwrap.dedent(fn.src))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            return node
    raise ValueError(f"cannot read the source of {fn.__name__}")


def count_outputs(fn) -> Optional[int]:
    """Number of values the function returns (0 for a kernel); None if unknown."""
    node = function_def(fn)
    counts = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Return):
            if inner.value is None:
                counts.add(0)
            elif isinstance(inner.value, ast.Tuple):
                counts.add(len(inner.value.elts))
            else:
                counts.add(1)
    if not counts:
        return 0
    return counts.pop() if len(counts) == 1 else None


def param_names(fn) -> List[str]:
    return [p.name for p in fn.params]


def constexpr_names(fn) -> List[str]:
    return [p.name for p in fn.params if p.is_constexpr]


def symbol_name(token: str) -> str:
    """MLIR symbol text (bare or quoted) -> the symbol's name."""
    if token.startswith('"'):
        return bytes(token[1:-1], "utf-8").decode("unicode_escape")
    return token


FUNC_HEADER = re.compile(r'tt\.func (?:(?:private|public|nested) )?@("(?:[^"\\]|\\.)*"|[\w$.\-]+)\(')
CALL = re.compile(r'tt\.call @("(?:[^"\\]|\\.)*"|[\w$.\-]+)\(')


def functions_in(text: str):
    """(symbol name, body text) of every tt.func in a printed module."""
    headers = list(FUNC_HEADER.finditer(text))
    for i, header in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        yield symbol_name(header.group(1)), text[header.start():end]
