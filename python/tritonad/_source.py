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
    additive terms of a returned value (a helper that builds addresses).

    Flow-sensitive and may-reach, so that a local name reused for another pointer
    (`p = x + offs; load(p); p = y + offs; store(p)`) does not make both pointers
    loaded and stored (in place). At each use a name denotes the parameters of the
    assignments that may reach it (`_Walk`); a superset of the true roles on every
    path, as a missed role would let an in-place kernel through."""

    def __init__(self, fn, stack=(), memo=None):
        self.fn, self.stack, self.memo = fn, stack + (fn,), {} if memo is None else memo
        node = function_def(fn)
        self.params = [a.arg for a in node.args.args]
        self.constexprs = set(constexpr_names(fn))
        integers = set()
        for inner in ast.walk(node):
            if isinstance(inner, ast.BinOp) and isinstance(inner.op, _INTEGER_OPS):
                integers.update(x.id for x in (inner.left, inner.right) if isinstance(x, ast.Name))
            elif isinstance(inner, ast.Call) and _call_name(inner) in _INTEGER_CALLS:
                integers.update(x.id for a in inner.args for x in ast.walk(a)
                                if isinstance(x, ast.Name))
        walk = _Walk(self, node)
        pointers = [p for p in self.params if p not in self.constexprs and p not in integers]
        self.roles = {p: walk.roles[p] for p in pointers if p in walk.roles}
        self.returned = {p for p in walk.returned if p in pointers}

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
        if isinstance(node, ast.IfExp):
            return self._terms(node.body) + self._terms(node.orelse)
        if isinstance(node, ast.NamedExpr):  # load(p := x + offs)
            return self._terms(node.value)
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
            if _call_name(node) == "where":  # tl.where(mask, p, q): either pointer
                return [n for a in node.args[1:3] for n in self._terms(a)]
        return []

    def uses(self, call: ast.Call):
        """(address expression, role) pairs of one call: role "load" / "store", or
        None for a pointer whose use is unclear."""
        kind = _call_name(call)
        if kind in _LOADS or kind in _STORES:
            pointer = call.args[0] if call.args else next(
                (k.value for k in call.keywords if k.arg == "pointer"), None)
            if pointer is not None:
                yield pointer, "load" if kind in _LOADS else "store"
        elif kind == "make_block_ptr":  # a pointer even where its use is unclear
            yield call, None
        callee = self._callee(call)
        if callee is not None:  # pointers handed to a helper: the helper's roles
            roles = self._sub(callee).roles
            for param, argument in _bind_call(callee, call):
                if param in roles:
                    yield from ((argument, role) for role in roles[param] or {None})


# Statements the may-reach walk follows; any other (a nested def, global,
# nonlocal, match, ...) makes every name flow-insensitive.
_SIMPLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Pass,
           ast.Assert, ast.Raise, ast.Delete, ast.Break, ast.Continue)
_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try)


class _Walk:
    """The may-reach walk of one function's body: an environment maps each local
    name to the parameters its value may be an address into (a parameter not yet
    assigned denotes itself). Straight-line assignments replace a name's set;
    `if` branches are joined; a loop body is walked until its entry environment
    (before the loop, joined with the body's end and its `continue`s) no longer
    grows, and what follows the loop sees that entry and the `break`s. `with` and
    `try` bodies only add to a name's set (an exception may leave them anywhere).
    Names bound where the order is not clear (comprehension and walrus targets) are
    flow-insensitive: every use sees every assignment of the name; all names are
    where the body has a statement the walk does not follow (a nested def, global,
    nonlocal, match), as before this walk existed."""

    def __init__(self, analysis: _Analysis, node: ast.FunctionDef):
        self.analysis, self.params = analysis, set(analysis.params)
        self.roles: Dict[str, set] = {}
        self.returned: set = set()
        self.anywhere: Dict[str, set] = {}  # the flow-insensitive names' assignments
        self.loops: List[tuple] = []  # (continue environments, break environments)
        self.weak = False
        self.insensitive = _unordered_names(node)
        if any(not isinstance(s, _SIMPLE + _COMPOUND) for s in _statements(node.body)):
            self.insensitive = None  # all names
        while True:  # (a flow-insensitive name's set may grow after a use)
            before = {n: set(v) for n, v in self.anywhere.items()}
            self._block(node.body, {p: {p} for p in self.params})
            if self.anywhere == before:
                break

    def _flow_insensitive(self, name) -> bool:
        return self.insensitive is None or name in self.insensitive

    def _read(self, env, name) -> set:
        if self._flow_insensitive(name):
            return self.anywhere.get(name, set()) | ({name} & self.params)
        return env.get(name, set())

    def _bases(self, env, expr) -> set:
        return {p for n in self.analysis._terms(expr) for p in self._read(env, n)}

    def _bind(self, env, name, bases):
        if self._flow_insensitive(name):
            self.anywhere.setdefault(name, set()).update(bases)
        elif self.weak:
            env[name] = env.get(name, set()) | bases
        else:
            env[name] = set(bases)

    def _visit_calls(self, env, nodes):
        for node in nodes:
            for inner in ast.walk(node):
                if isinstance(inner, ast.Call):
                    for address, role in self.analysis.uses(inner):
                        for p in self._bases(env, address):
                            self.roles.setdefault(p, set()).update({role} - {None})
                elif isinstance(inner, _UNORDERED):
                    self._bind_all(env, inner)

    def _bind_all(self, env, node):
        """Binds the names a binding node (`_bindings`) assigns."""
        bound = [(name, self._bases(env, part)) for target, value in _bindings(node)
                 for name, part in _unpack(target, value)]
        for name, bases in bound:  # (every value is read first: p, q = q, p)
            self._bind(env, name, bases)

    def _block(self, statements, env):
        for statement in statements:
            env = self._statement(statement, env)
        return env

    def _statement(self, s, env):
        if isinstance(s, (ast.Assign, ast.AnnAssign)):
            if s.value is not None:
                self._visit_calls(env, [s.value])
                self._bind_all(env, s)
            return env
        if isinstance(s, ast.AugAssign):
            # p += offs: p keeps the pointers it addressed (the increment is an offset)
            self._visit_calls(env, [s.target, s.value])
            return env
        if isinstance(s, ast.Return):
            if s.value is not None:
                self._visit_calls(env, [s.value])
                self.returned |= self._bases(env, s.value)
            return env  # (the walk goes on as if it did not return: a superset)
        if isinstance(s, (ast.Break, ast.Continue)):  # (Triton refuses both today)
            if self.loops:
                self.loops[-1][isinstance(s, ast.Break)].append(_copy(env))
            return env
        if isinstance(s, ast.If):
            self._visit_calls(env, [s.test])
            return _join(self._block(s.body, _copy(env)), self._block(s.orelse, _copy(env)))
        if isinstance(s, (ast.For, ast.While)):
            return self._loop(s, env)
        if isinstance(s, (ast.With, ast.Try)):
            weak, self.weak = self.weak, True
            if isinstance(s, ast.With):
                for item in s.items:
                    self._visit_calls(env, [item.context_expr])
                    self._bind_all(env, item)
                env = self._block(s.body, env)
            else:  # body, handlers, else, finally in turn: each sees all before it
                env = self._block(s.body, env)
                for handler in s.handlers:
                    if handler.name:
                        self._bind(env, handler.name, set())
                    env = self._block(handler.body, env)
                env = self._block(s.finalbody, self._block(s.orelse, env))
            self.weak = weak
            return env
        if not isinstance(s, _SIMPLE):  # (all names are flow-insensitive: see __init__)
            for inner in ast.walk(s):
                self._bind_all(env, inner)
                if isinstance(inner, ast.Return) and inner.value is not None:
                    self.returned |= self._bases(env, inner.value)  # (a match case's)
        # Expr, Assert, Raise, Pass, Delete (a name deleted is not used again)
        self._visit_calls(env, [s])
        return env

    def _loop(self, s, env):
        if isinstance(s, ast.For):
            self._visit_calls(env, [s.iter])
        entry = _copy(env)
        while True:
            self.loops.append(([], []))
            inside = _copy(entry)
            if isinstance(s, ast.While):
                self._visit_calls(inside, [s.test])
            else:
                self._bind_all(inside, s)
            end = self._block(s.body, inside)
            continues, breaks = self.loops.pop()
            grown = _join(entry, end, *continues)
            if grown == entry:
                break
            entry = grown
        return _join(self._block(s.orelse, _copy(entry)), *breaks)


def _statements(body):
    """The statements of a body and of the blocks nested in it (not into nested defs)."""
    for s in body:
        yield s
        if isinstance(s, _COMPOUND):
            for field in ("body", "orelse", "finalbody"):
                yield from _statements(getattr(s, field, []))
            for handler in getattr(s, "handlers", []):
                yield from _statements(handler.body)


# Bindings inside expressions: their order with the uses is not followed.
_UNORDERED = (ast.comprehension, ast.NamedExpr)


def _bindings(node):
    """(target, value) pairs a node binds: assignments, loop and comprehension
    targets (to the iterable), walrus, `with ... as`."""
    if isinstance(node, ast.Assign):
        return [(target, node.value) for target in node.targets]
    if isinstance(node, (ast.AnnAssign, ast.NamedExpr)):
        return [(node.target, node.value)] if node.value is not None else []
    if isinstance(node, (ast.For, ast.comprehension)):
        return [(node.target, node.iter)]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [(node.optional_vars, node.context_expr)]
    return []


def _unordered_names(node) -> set:
    return {x.id for inner in ast.walk(node) if isinstance(inner, _UNORDERED)
            for target, _ in _bindings(inner) for x in ast.walk(target)
            if isinstance(x, ast.Name)}


def _unpack(target, value):
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if isinstance(target, ast.Tuple):
        if isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts):
            return [p for t, v in zip(target.elts, value.elts) for p in _unpack(t, v)]
        return [p for t in target.elts for p in _unpack(t, value)]
    return []


def _copy(env):
    return {name: set(bases) for name, bases in env.items()}


def _join(*envs):
    joined = {}
    for env in envs:
        for name, bases in env.items():
            joined.setdefault(name, set()).update(bases)
    return joined


def pointer_roles(fn) -> Dict[str, set]:
    """{parameter: {"load", "store"} subset} for the parameters used as pointers: the
    bases of the addresses given to tl.load / tl.store / atomics, followed through
    the local assignments that may reach each access (`_Walk`) and into the
    @triton.jit helpers the function calls.
    Constexprs and names used as integers (factors, range bounds) are left out;
    a runtime integer added into an address stays (the core ignores a binding
    whose argument turns out not to be a pointer)."""
    return _Analysis(fn).roles


def pointer_params(fn) -> List[str]:
    return list(pointer_roles(fn))
