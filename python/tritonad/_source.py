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


def strip_locations(text: str) -> str:
    """Drops the ` loc(...)` annotations (aliases into the whole module) for display."""
    out, i = [], 0
    while True:
        j = text.find(" loc(", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        depth, k = 0, j + 4
        while k < len(text):
            if text[k] == "(":
                depth += 1
            elif text[k] == ")":
                depth -= 1
                if depth == 0:
                    break
            elif text[k] == '"':
                k = text.index('"', k + 1)
            k += 1
        i = k + 1


_POINTER_CALLS = {"load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_and",
                  "atomic_or", "atomic_xor", "atomic_xchg", "atomic_cas", "make_block_ptr"}


def _additive_names(node: ast.AST) -> List[str]:
    """Names that appear as plain terms of a sum (pointer bases), not as factors."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return _additive_names(node.left) + _additive_names(node.right)
    if isinstance(node, ast.Subscript):  # ptrs[:, None]
        return _additive_names(node.value)
    if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("broadcast_to",
                                                                          "reshape", "view"):
        return _additive_names(node.args[0]) if node.args else []
    return []


def pointer_params(fn) -> List[str]:
    """Parameters used as pointers: the bases of the addresses given to
    tl.load / tl.store / atomics, followed through local assignments."""
    node = function_def(fn)
    params = [a.arg for a in node.args.args]
    assigned = {}
    for inner in ast.walk(node):
        if isinstance(inner, ast.Assign) and len(inner.targets) == 1 and \
                isinstance(inner.targets[0], ast.Name):
            assigned.setdefault(inner.targets[0].id, []).append(inner.value)
        if isinstance(inner, (ast.AugAssign,)) and isinstance(inner.target, ast.Name):
            assigned.setdefault(inner.target.id, []).append(inner.target)
    roots = []
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and getattr(inner.func, "attr", None) in _POINTER_CALLS:
            pointer = inner.args[0] if inner.args else next(
                (k.value for k in inner.keywords if k.arg in ("pointer", "base")), None)
            if pointer is not None:
                roots.extend(_additive_names(pointer))
    found, seen = [], set()
    while roots:
        name = roots.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in params:
            found.append(name)
        for value in assigned.get(name, []):
            roots.extend(_additive_names(value))
    return [p for p in params if p in found]
