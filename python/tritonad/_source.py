"""Helpers to read a @triton.jit function and to create new ones from source."""

from __future__ import annotations

import ast
import inspect
import itertools
import linecache
import re
import textwrap
import types
from typing import Dict, List, Optional

from triton.runtime.jit import JITFunction

_counter = itertools.count()


def jit_from_source(source: str, name: str, env: dict, **jit_kwargs):
    """Defines function `name` from `source` as a JITFunction.

    The source is registered with linecache so Triton (which reads functions
    with inspect.getsource) and tracebacks can see it.
    """
    filename = f"<tritonad-generated-{next(_counter)}-{name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": "tritonad_generated", **env}
    exec(compile(source, filename, "exec"), namespace)
    # (JITFunction itself, not triton.jit: under TRITON_INTERPRET=1 tritonad still
    # derives through Triton's compiler, see _interpret.py)
    return JITFunction(namespace[name], **jit_kwargs)


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


def bind_arguments(names: List[str], args, kwargs) -> dict:
    """A launch's arguments by name, as ``kernel[grid](*args, **kwargs)`` binds
    them (launch options such as num_warps included)."""
    if len(args) > len(names):
        raise TypeError(f"too many arguments: the kernel takes {names}")
    bound = dict(zip(names, args))
    for key, value in kwargs.items():
        if key in bound:
            raise TypeError(f"argument {key!r} given twice")
        bound[key] = value
    return bound


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
    # (the last one ends before the module's closing brace and location aliases)
    module_end = text.rfind("\n}")
    for i, header in enumerate(headers):
        if i + 1 < len(headers):
            end = headers[i + 1].start()
        else:
            end = module_end + 1 if module_end > header.start() else len(text)
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


_LOADS = {"load"}
_STORES = {"store", "atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or",
           "atomic_xor", "atomic_xchg", "atomic_cas"}
# Calls whose result addresses the same memory as their first argument.
_TRANSPARENT = {"broadcast_to", "reshape", "view", "expand_dims", "make_block_ptr", "advance"}
# Operators no pointer can be an operand of: their direct Name operands are integers.
_INTEGER_OPS = (ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift)
_INTEGER_CALLS = {"range", "static_range", "arange"}
_MAX_CALL_DEPTH = 8


def _call_name(node: ast.Call) -> Optional[str]:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _resolve(fn, node: ast.AST):
    """The object a Name / Attribute chain in fn's body denotes, looked up as Triton
    does (fn's closure, then its globals); None if it is not found."""
    if isinstance(node, ast.Attribute):
        base = _resolve(fn, node.value)
        return getattr(base, node.attr, None) if base is not None else None
    if not isinstance(node, ast.Name):
        return None
    try:
        nonlocals = inspect.getclosurevars(fn.fn).nonlocals
    except (TypeError, ValueError):
        nonlocals = {}
    return nonlocals[node.id] if node.id in nonlocals else fn.__globals__.get(node.id)


def _jit_function(obj) -> Optional[JITFunction]:
    """The @triton.jit function `obj` is: itself, or under TRITON_INTERPRET=1 (where
    @triton.jit makes InterpretedFunctions) its JITFunction twin; None otherwise."""
    if isinstance(obj, JITFunction):
        return obj
    from tritonad._twin import is_interpreted, jit_twin

    return jit_twin(obj) if is_interpreted(obj) else None


def _bind_call(callee, call: ast.Call):
    """(callee parameter, argument expression) pairs of a call."""
    params = param_names(callee)
    pairs = list(zip(params, call.args))
    pairs += [(k.arg, k.value) for k in call.keywords if k.arg in params]
    return pairs


class _Analysis:
    """Which parameters of a @triton.jit function address memory, and how.

    roles: {parameter: roles} with roles a subset of {"load", "store"} (empty: a
    pointer whose use tritonad cannot classify). returned: parameters that are
    additive terms of a returned value (a helper that builds addresses)."""

    def __init__(self, fn, stack=(), memo=None):
        self.fn, self.stack, self.memo = fn, stack + (fn,), {} if memo is None else memo
        node = function_def(fn)
        self.params = [a.arg for a in node.args.args]
        self.constexprs = set(constexpr_names(fn))
        assigned, integers, roots, returns = {}, set(), [], []
        for inner in ast.walk(node):
            if isinstance(inner, ast.Assign):
                for target in inner.targets:
                    for name, value in _unpack(target, inner.value):
                        assigned.setdefault(name, []).append(value)
            elif isinstance(inner, ast.Return) and inner.value is not None:
                returns.append(inner.value)
            elif isinstance(inner, ast.BinOp) and isinstance(inner.op, _INTEGER_OPS):
                integers.update(x.id for x in (inner.left, inner.right) if isinstance(x, ast.Name))
            elif isinstance(inner, ast.Call):
                kind = _call_name(inner)
                if kind in _INTEGER_CALLS:
                    integers.update(x.id for a in inner.args for x in ast.walk(a)
                                    if isinstance(x, ast.Name))
                if kind in _LOADS or kind in _STORES:
                    pointer = inner.args[0] if inner.args else next(
                        (k.value for k in inner.keywords if k.arg == "pointer"), None)
                    if pointer is not None:
                        roots.append((pointer, "load" if kind in _LOADS else "store"))
                elif kind == "make_block_ptr":  # a pointer even where its use is unclear
                    roots.append((inner, None))
                callee = self._callee(inner)
                if callee is not None:  # pointers handed to a helper: the helper's roles
                    roles = self._sub(callee).roles
                    for param, argument in _bind_call(callee, inner):
                        if param in roles:
                            roots.extend((argument, role) for role in roles[param] or {None})
        self.assigned, self.integers = assigned, integers
        self.roles = self._follow([(n, r) for expr, r in roots for n in self._terms(expr)])
        returned = self._follow([(n, None) for expr in returns for n in self._terms(expr)])
        self.returned = set(returned)

    def _callee(self, call):
        if len(self.stack) > _MAX_CALL_DEPTH:
            return None
        callee = _jit_function(_resolve(self.fn, call.func))
        return callee if callee is not None and callee not in self.stack else None

    def _sub(self, callee) -> "_Analysis":
        # (keyed by id: hashing a JITFunction computes its cache key)
        if id(callee) not in self.memo:
            self.memo[id(callee)] = _Analysis(callee, self.stack, self.memo)
        return self.memo[id(callee)]

    def _terms(self, node) -> List[str]:
        """Names that appear as plain terms of a sum (pointer bases), not as factors."""
        if isinstance(node, ast.Name):
            return [node.id]
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            return self._terms(node.left) + self._terms(node.right)
        if isinstance(node, ast.Subscript):  # ptrs[:, None]
            return self._terms(node.value)
        if isinstance(node, ast.Tuple):
            return [n for e in node.elts for n in self._terms(e)]
        if isinstance(node, ast.Call):
            if _call_name(node) in _TRANSPARENT:
                func = node.func
                if isinstance(func, ast.Attribute) and \
                        not isinstance(_resolve(self.fn, func.value), types.ModuleType):
                    return self._terms(func.value)  # method form: ptrs.reshape(shape)
                first = node.args[0] if node.args else next(
                    (k.value for k in node.keywords if k.arg in ("base", "input")), None)
                return self._terms(first) if first is not None else []
            callee = self._callee(node)
            if callee is not None:  # an address built by a helper from its arguments
                returned = self._sub(callee).returned
                return [n for p, a in _bind_call(callee, node) if p in returned
                        for n in self._terms(a)]
        return []

    def _follow(self, roots) -> Dict[str, set]:
        found, seen = {}, set()
        while roots:
            name, role = roots.pop()
            if (name, role) in seen:
                continue
            seen.add((name, role))
            if name in self.params and name not in self.constexprs and \
                    name not in self.integers:
                found.setdefault(name, set()).update({role} - {None})
            for value in self.assigned.get(name, []):
                roots.extend((n, role) for n in self._terms(value))
        return {p: found[p] for p in self.params if p in found}


def _unpack(target, value):
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if isinstance(target, ast.Tuple):
        if isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts):
            return [p for t, v in zip(target.elts, value.elts) for p in _unpack(t, v)]
        return [p for t in target.elts for p in _unpack(t, value)]
    return []


def pointer_roles(fn) -> Dict[str, set]:
    """{parameter: {"load", "store"} subset} for the parameters used as pointers: the
    bases of the addresses given to tl.load / tl.store / atomics, followed through
    local assignments and into the @triton.jit helpers the function calls.
    Constexprs and names used as integers (factors, range bounds) are left out;
    a runtime integer added into an address stays (the core ignores a binding
    whose argument turns out not to be a pointer)."""
    return _Analysis(fn).roles


def pointer_params(fn) -> List[str]:
    return list(pointer_roles(fn))
