"""A derived tt.func as readable, executable ``@triton.jit`` Python source.

The input is data, not printed IR: ``tritonad._C.describe`` gives every op with
its operands, typed results, attributes, regions and locations (see
cpp/lib/API/Describe.h). Each op becomes the ``tl`` call that makes Triton's
front end emit that same op, so the rendering, compiled or interpreted, computes
what the derived TTIR computes:

* Integer values are rendered with Triton's signed types; ops that are unsigned
  in TTIR (``divui``, ``cmpi ult``, ``shrui``, ``uitofp`` ...) bitcast their
  operands to the unsigned type and back, since Triton picks the signedness of
  an op from the types of its operands.
* A Python literal stands for a constant only where Triton's promotion rules
  give the literal the other operand's type; elsewhere (loop-carried values,
  branch results, call arguments ...) a constant is a typed ``tl.full``.
* Splats and broadcasts are left to Triton's implicit broadcasting where it
  yields the op's shape, and spelled out otherwise.

An op without a rendering raises `RenderError` naming the op and its source
location: nothing is rendered approximately.

A backward kernel is rendered with tritonad's hidden launch arguments
(``tritonad_*``: workspaces, tapes, tables, residuals, variant selectors) left out
where its body does not read them, so that it launches with the backward's
documented arguments; where the body reads one, or the kernel was compiled without
the masks its launch made true, the rendering's header says that it does not launch
on its own (`launch_notes`), and `launchable_source` refuses it.

>>> import tritonad
>>> print(tritonad.grad(kernel).source())  # doctest: +SKIP
"""

from __future__ import annotations

import builtins
import functools
import itertools
import json
import keyword
import linecache
import os
import struct
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from tritonad import _contract


class RenderError(ValueError):
    """tritonad cannot write this derived code as Triton Python; the message
    names the op and its source location."""


# Enum attributes arrive as their integer values (Triton's TritonAttrs.td and
# MLIR's arith enums) or as {"enum": name}.
_CMPI = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
_CMPF = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult",
         "ule", "une", "uno", "true"]
_CACHE = {1: "", 2: ".ca", 3: ".cg", 4: ".wb", 5: ".cs", 6: ".wt", 7: ".cv"}
_CACHE_NAMES = {"none": "", "ca": ".ca", "cg": ".cg", "wb": ".wb", "cs": ".cs", "wt": ".wt",
                "cv": ".cv"}
_EVICT = {1: "", 2: "evict_first", 3: "evict_last"}
_EVICT_NAMES = {"evict_normal": "", "evict_first": "evict_first", "evict_last": "evict_last"}
_SEM = {1: "relaxed", 2: "acquire", 3: "release", 4: "acq_rel"}
_SCOPE = {1: "gpu", 2: "cta", 3: "sys"}
_RMW = {1: "and", 2: "or", 3: "xor", 4: "add", 5: "fadd", 6: "max", 7: "min", 8: "umax",
        9: "umin", 10: "exch"}
_PRECISION = {0: "tf32", 1: "tf32x3", 2: "ieee", 3: "bf16x3", 4: "bf16x6"}
_ROUNDING = {0: "rtz", 1: "rtne"}
_PROPAGATE_NAN = {0: "NONE", 0xFFFF: "ALL"}

_FLOATS = {"f16": "tl.float16", "bf16": "tl.bfloat16", "f32": "tl.float32", "f64": "tl.float64",
           "f8E5M2": "tl.float8e5", "f8E4M3FN": "tl.float8e4nv", "f8E4M3FNUZ": "tl.float8e4b8",
           "f8E5M2FNUZ": "tl.float8e5b16"}
_INT_WIDTHS = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64}

# Python precedence, loosest to tightest (what needs parentheses where).
_CMP, _BOR, _BXOR, _BAND, _SHIFT, _ADD, _MUL, _UNARY, _ATOM = 10, 20, 30, 40, 50, 60, 70, 80, 100

_MAX_INLINE = 72  # longer expressions get a variable of their own

_RESERVED = set(keyword.kwlist) | set(dir(builtins)) | {"tl", "triton", "libdevice", "math"}


def _enum(attr, table, what):
    if isinstance(attr, dict) and "enum" in attr:
        return attr["enum"]
    if isinstance(attr, bool) or not isinstance(attr, int):
        raise RenderError(f"unexpected {what} attribute {attr!r}")
    if isinstance(table, list):
        if 0 <= attr < len(table):
            return table[attr]
    elif attr in table:
        return table[attr]
    raise RenderError(f"unknown {what} value {attr}")


# ---------------------------------------------------------------------------
# Types: {"shape": [..] | null, "element": "f32" | {"pointer": type, ...}}
# ---------------------------------------------------------------------------

def _shape(ty) -> Tuple[int, ...]:
    return tuple(ty["shape"]) if ty.get("shape") is not None else ()


def _elem(ty):
    return ty["element"]


def _is_ptr(elem) -> bool:
    return isinstance(elem, dict)


def _is_float(elem) -> bool:
    return isinstance(elem, str) and elem in _FLOATS


def _int_width(elem) -> Optional[int]:
    return _INT_WIDTHS.get(elem) if isinstance(elem, str) else None


def _dtype(elem, unsigned=False) -> str:
    if _is_ptr(elem):
        if elem.get("address_space", 1) != 1:
            raise RenderError(f"pointer in address space {elem['address_space']}")
        pointee = elem["pointer"]
        if pointee.get("shape") is not None:
            raise RenderError("pointer to a tensor (a block pointer) has no tl spelling here")
        return f"tl.pointer_type({_dtype(_elem(pointee))})"
    if elem in _FLOATS:
        return _FLOATS[elem]
    width = _int_width(elem)
    if width is not None:
        return "tl.int1" if width == 1 else f"tl.{'u' if unsigned else ''}int{width}"
    raise RenderError(f"type {elem} has no tl spelling")


def _shape_text(shape) -> str:
    if len(shape) == 1:
        return f"({shape[0]},)"
    return "(" + ", ".join(str(d) for d in shape) + ")"


def _broadcast(a, b) -> Optional[Tuple[int, ...]]:
    """Triton's implicit broadcasting for operands of equal rank or a scalar."""
    if not a:
        return b
    if not b:
        return a
    if len(a) != len(b):
        return None
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(out)


# ---------------------------------------------------------------------------
# Expressions and value states
# ---------------------------------------------------------------------------

@dataclass
class _Expr:
    text: str
    prec: int
    shape: Tuple[int, ...]
    literal: bool = False

    def at(self, prec: int) -> str:
        """The text, parenthesized where an operator of `prec` needs it."""
        return self.text if self.prec >= prec else f"({self.text})"


@dataclass
class _Bound:          # a Python variable
    name: str
    shape: Tuple[int, ...]


@dataclass
class _Pending:        # a pure expression not yet written, used exactly once
    expr: _Expr
    consumed: bool = False


@dataclass
class _Const:          # a scalar or splat constant, written where it is used
    value: object
    ty: dict


@dataclass
class _Lazy:           # tt.splat / tt.broadcast, left to implicit broadcasting if possible
    base: int
    ty: dict


def _to(expr: _Expr, elem, *conversions: str) -> str:
    """`expr` converted by each of `conversions` (``tl.cast``'s arguments after
    the value) in turn: ``x.to(...)``, but ``tl.cast(x, ...)`` for an integer
    scalar, which may be a loop's induction variable: a Python int where
    Triton's interpreter runs the rendering (compiled, both are the same op)."""
    if not expr.shape and _int_width(elem) is not None:
        text = expr.text
        for conversion in conversions:
            text = f"tl.cast({text}, {conversion})"
        return text
    text = expr.at(_ATOM)
    for conversion in conversions:
        text += f".to({conversion})"
    return text


@dataclass
class _Converted:      # a cast's operand, for the handlers' text_of
    expr: _Expr
    elem: object

    def to(self, *conversions: str) -> str:
        return _to(self.expr, self.elem, *conversions)


def _float_text(value, elem="f64") -> str:
    """The shortest decimal that Triton turns back into the same `elem` value."""
    if isinstance(value, dict):
        return {"inf": 'float("inf")', "-inf": 'float("-inf")', "nan": 'float("nan")'}[
            value["float"]]
    value = float(value)
    packing = {"f32": "f", "bf16": "f", "f16": "e"}.get(elem)
    if packing is not None:
        def same(text):
            return struct.unpack(packing, struct.pack(packing, float(text)))[0] == value
        for digits in range(1, 18):
            text = repr(float(f"{value:.{digits}g}"))
            if same(text):
                return text
    return repr(value)


def _literal(value, elem, unsigned=False) -> _Expr:
    if isinstance(value, bool):
        return _Expr(repr(value), _ATOM, (), True)
    if _is_float(elem):
        text = _float_text(value, elem)
        negative = text.startswith("-")
    else:
        value = int(value)
        width = _int_width(elem)
        if unsigned and width:
            value &= (1 << width) - 1
        if width == 1:
            return _Expr(repr(bool(value & 1)), _ATOM, (), True)
        text, negative = str(value), value < 0
    return _Expr(text, _UNARY if negative else _ATOM, (), True)


def _default_literal(value, elem) -> bool:
    """Whether Triton gives a bare literal type `elem` by itself (fp32, int32, i1)."""
    if elem == "i1":
        return isinstance(value, bool)
    if elem == "i32":
        return not isinstance(value, (bool, dict, float)) and -2**31 <= int(value) < 2**31
    if elem == "f32":
        if isinstance(value, dict):
            return True
        magnitude = abs(float(value))
        return magnitude == 0.0 or 2.0**-126 <= magnitude <= (2 - 2**-23) * 2.0**127
    return False


def _source_comment(loc) -> Optional[str]:
    file, line = loc.get("file"), loc.get("line")
    if not file or not line or "/triton/language/" in file or file.startswith("<tritonad"):
        return None
    text = linecache.getline(file, line).strip()
    if not text:  # (no source to show, e.g. hand-written TTIR)
        return None
    comment = f"# {os.path.basename(file)}:{line}: {text}"
    return comment if len(comment) <= 96 else comment[:93] + "..."


def _location(op) -> str:
    loc = op.get("location") or {}
    if loc.get("file"):
        return f" at {loc['file']}:{loc.get('line')}:{loc.get('column')}"
    return ""


# ---------------------------------------------------------------------------
# The module: helper functions shared by the rendered functions
# ---------------------------------------------------------------------------

class _Module:
    def __init__(self, description):
        self.functions = {f["name"]: f for f in description["functions"]}
        self.helpers: List[str] = []
        self.globals: set = set()
        self.all_locals: set = set()
        self.by_symbol: Dict[str, str] = {}
        self.by_body: Dict[str, str] = {}
        self.uses_libdevice = False
        self.in_progress: set = set()

    def global_name(self, base: str) -> str:
        base = _identifier(base)
        for suffix in itertools.chain([""], (f"_{i}" for i in itertools.count(1))):
            name = base + suffix
            if name not in _RESERVED and name not in self.globals and name not in self.all_locals:
                self.globals.add(name)
                return name
        raise AssertionError

    def callee(self, symbol: str, op) -> str:
        if symbol in self.by_symbol:
            return self.by_symbol[symbol]
        function = self.functions.get(symbol)
        if function is None or "body" not in function:
            raise RenderError(f"cannot render tt.call @{symbol}{_location(op)}: the callee's "
                              "body is not in the module")
        if symbol in self.in_progress:
            raise RenderError(f"cannot render the recursive call to @{symbol}{_location(op)}")
        self.in_progress.add(symbol)
        name = self.global_name(_callee_base(symbol))
        self.by_symbol[symbol] = name
        body = _Function(self, function["body"], kernel=False).render(name)
        self.helpers.append(body)
        self.in_progress.discard(symbol)
        return name

    def combine(self, block, kind: str) -> str:
        """A @triton.jit function for a reduce/scan combine region (one per distinct body)."""
        placeholder = "__tritonad_combine__"
        body = _Function(self, block, kernel=False).render(placeholder)
        if body in self.by_body:
            return self.by_body[body]
        name = self.global_name(f"_{kind}_combine")
        self.by_body[body] = name
        self.helpers.append(body.replace(placeholder, name, 1))
        return name


def _identifier(text: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in text)
    if not out or out[0].isdigit():
        out = "v" + out
    return out


def _callee_base(symbol: str) -> str:
    """`pkg.module.helper__Pfp32_i32__(3,)cconstexpr_4_` -> `helper`."""
    head = symbol.split("(", 1)[0]
    parts = head.split("__")
    # the mangled argument types start at the first part that follows the Python name
    name = parts[0]
    for part in parts[1:]:
        if not part:
            continue
        if part[0] in "P" or part.split("_")[0] in ("fp16", "fp32", "fp64", "bf16", "i1", "i8",
                                                     "i16", "i32", "i64", "u32", "u64", "u1"):
            break
        name += "__" + part
    name = name.rsplit(".", 1)[-1]
    return name or "helper"


# ---------------------------------------------------------------------------
# One function
# ---------------------------------------------------------------------------

_TERMINATORS = {"scf.yield", "scf.condition", "tt.return", "tt.reduce.return", "tt.scan.return"}


class _Function:
    def __init__(self, module: _Module, body, *, kernel: bool):
        self.m = module
        self.body = body
        self.kernel = kernel
        self.lines: List[str] = []
        self.vals: Dict[int, object] = {}
        self.types: Dict[int, dict] = {}
        self.hints: Dict[int, Optional[str]] = {}
        self.uses: Dict[int, int] = defaultdict(int)
        self.use_blocks: Dict[int, set] = defaultdict(set)
        self.users: Dict[int, dict] = {}
        self.def_block: Dict[int, int] = {}
        self.names: Dict[int, str] = {}
        self.locals: set = set()
        self.last_comment: Optional[str] = None
        self._scan(body)

    # -- bookkeeping ---------------------------------------------------------

    def _scan(self, block):
        for arg in block["arguments"]:
            self._value(arg, block)
        for op in block["operations"]:
            for operand in op["operands"]:
                self.uses[operand] += 1
                self.use_blocks[operand].add(id(block))
                self.users[operand] = op
            for result in op["results"]:
                self._value(result, block)
            for region in op["regions"]:
                for inner in region:
                    self._scan(inner)

    def _value(self, value, block):
        self.types[value["id"]] = value["type"]
        self.hints[value["id"]] = value.get("name")
        self.def_block[value["id"]] = id(block)

    def name_of(self, vid: int, fallback: str = "t") -> str:
        if vid in self.names:
            return self.names[vid]
        base = _identifier(self.hints.get(vid) or fallback)
        for suffix in itertools.chain([""], (f"_{i}" for i in itertools.count(1))):
            name = base + suffix
            if name not in _RESERVED and name not in self.locals and name not in self.m.globals:
                break
        self.locals.add(name)
        self.m.all_locals.add(name)
        self.names[vid] = name
        return name

    def emit(self, indent: int, text: str, op=None):
        if op is not None:
            comment = _source_comment(op.get("location") or {})
            if comment and comment != self.last_comment:
                self.lines.append("    " * indent + comment)
            if comment:
                self.last_comment = comment
        self.lines.append("    " * indent + text)

    def fail(self, op, why: str):
        raise RenderError(f"cannot render {op['name']}{_location(op)}: {why}")

    # -- operands ------------------------------------------------------------

    def peek(self, vid: int) -> Tuple[Tuple[int, ...], bool]:
        """(shape, is literal) of the implicit form of a value, consuming nothing."""
        state = self.vals.get(vid)
        if isinstance(state, _Const):
            return (), True
        if isinstance(state, _Lazy):
            return self.peek(state.base)
        return _shape(self.types[vid]), False

    def const_value(self, vid: int):
        state = self.vals.get(vid)
        while isinstance(state, _Lazy):
            state = self.vals.get(state.base)
        return state.value if isinstance(state, _Const) else None

    def operand(self, vid: int, implicit: bool = False, unsigned: bool = False) -> _Expr:
        """The expression of a value; `implicit` allows a literal or an operand
        left to Triton's implicit broadcasting (the caller checked both)."""
        state = self.vals.get(vid)
        ty = self.types[vid]
        if state is None:
            raise RenderError(f"internal: value {vid} used before it is rendered")
        if isinstance(state, _Bound):
            expr = _Expr(state.name, _ATOM, state.shape)
        elif isinstance(state, _Pending):
            if state.consumed:
                raise RenderError(f"internal: expression of value {vid} used twice")
            state.consumed = True
            expr = state.expr
        elif isinstance(state, _Const):
            if implicit and not unsigned:
                return _literal(state.value, _elem(ty))
            return self.typed_constant(state.value, ty, unsigned)
        elif isinstance(state, _Lazy):
            if implicit:
                return self.operand(state.base, implicit=True, unsigned=unsigned)
            base_state = self.vals.get(state.base)
            if isinstance(base_state, _Const):
                return self.typed_constant(base_state.value, ty, unsigned)
            base = self.operand(state.base, unsigned=unsigned)
            return _Expr(f"tl.broadcast_to({base.text}, {_shape_text(_shape(ty))})", _ATOM,
                         _shape(ty))
        else:
            raise AssertionError(state)
        if unsigned:
            expr = self.bitcast(expr, _elem(ty), unsigned=True)
        return expr

    def typed_constant(self, value, ty, unsigned=False) -> _Expr:
        shape, elem = _shape(ty), _elem(ty)
        dtype = _dtype(elem, unsigned)
        literal = _literal(value, elem, unsigned)
        if shape and literal.text in ("0", "0.0", "False") and not unsigned:
            return _Expr(f"tl.zeros({_shape_text(shape)}, dtype={dtype})", _ATOM, shape)
        return _Expr(f"tl.full({_shape_text(shape)}, {literal.text}, {dtype})", _ATOM, shape)

    def bitcast(self, expr: _Expr, elem, unsigned: bool) -> _Expr:
        return _Expr(_to(expr, elem, f"{_dtype(elem, unsigned)}, bitcast=True"), _ATOM,
                     expr.shape)

    def atomic(self, vid: int, indent: int, op) -> None:
        """Gives a pending value a variable (it is about to be used twice)."""
        state = self.vals.get(vid)
        if isinstance(state, _Pending):
            name = self.name_of(vid)
            self.emit(indent, f"{name} = {state.expr.text}", op)
            self.vals[vid] = _Bound(name, state.expr.shape)
        elif isinstance(state, _Lazy):
            self.atomic(state.base, indent, op)

    def choose(self, vids: Sequence[int], shape, literal_ok: bool,
               check: Optional[Callable] = None, elem=None,
               literal_allowed: Optional[Sequence[bool]] = None,
               all_literal: bool = False) -> List[bool]:
        """Which operands of an elementwise op may be implicit: the first
        assignment (all implicit first) whose shapes broadcast to `shape` (and
        pass `check`), where a literal takes the type of a typed operand
        (Triton's promotion of Python scalars) or, for a tl function
        (`all_literal`: Python operators on literals would give a constexpr),
        all literals have Triton's default literal type (`elem`)."""
        peeks = [self.peek(v) for v in vids]
        elem = elem or _elem(self.types[vids[0]])
        allowed = literal_allowed or [True] * len(vids)
        for flags in itertools.product([True, False], repeat=len(vids)):
            shapes, literals, typed = [], [], 0
            for flag, vid, (implicit_shape, is_literal), ok in zip(flags, vids, peeks, allowed):
                if flag and is_literal:
                    if not ok:
                        break
                    literals.append(vid)
                elif ok:
                    typed += 1
                shapes.append(implicit_shape if flag else _shape(self.types[vid]))
            else:
                if literals and not literal_ok:
                    continue
                if literals and not typed and not (all_literal and all(
                        _default_literal(self.const_value(v), elem) for v in literals)):
                    continue
                out: Optional[tuple] = ()
                for s in shapes:
                    out = _broadcast(out, s) if out is not None else None
                if out == tuple(shape) and (check is None or check(shapes)):
                    return list(flags)
        return [False] * len(vids)

    def operands(self, vids, shape, literal_ok=True, unsigned=False, check=None) -> List[_Expr]:
        flags = self.choose(vids, shape, literal_ok and not unsigned, check)
        return [self.operand(v, f, unsigned) for v, f in zip(vids, flags)]

    # -- results -------------------------------------------------------------

    def define(self, op, expr: _Expr, indent: int, *, pure: bool = True, fallback: str = "t"):
        result = op["results"][0]
        vid = result["id"]
        if expr.shape != _shape(result["type"]):
            raise RenderError(f"internal: {op['name']} renders with shape {expr.shape}, "
                              f"expected {_shape(result['type'])}")
        if self.uses[vid] == 0:
            if not pure:
                self.emit(indent, expr.text, op)
            return
        if pure and self.inlinable(vid, expr):
            self.vals[vid] = _Pending(expr)
            return
        name = self.name_of(vid, fallback)
        self.emit(indent, f"{name} = {expr.text}", op)
        self.vals[vid] = _Bound(name, expr.shape)

    def inlinable(self, vid, expr: _Expr) -> bool:
        if self.uses[vid] != 1 or len(expr.text) > _MAX_INLINE:
            return False
        if self.use_blocks[vid] != {self.def_block[vid]}:
            return False
        user = self.users[vid]
        hint = self.hints.get(vid)
        if hint is None:
            return True
        # a variable of the forward keeps its name unless its only use is the
        # rest of the same statement (the same name)
        user_hints = {r.get("name") for r in user["results"]}
        return hint in user_hints or not user["results"]

    def define_many(self, op, text: str, indent: int, fallback="t"):
        names = [self.name_of(r["id"], fallback) if self.uses[r["id"]] else "_"
                 for r in op["results"]]
        if all(n == "_" for n in names):
            self.emit(indent, text, op)
            return
        target = names[0] if len(names) == 1 else ", ".join(names)
        self.emit(indent, f"{target} = {text}", op)
        for r, n in zip(op["results"], names):
            if n != "_":
                self.vals[r["id"]] = _Bound(n, _shape(r["type"]))

    # -- blocks --------------------------------------------------------------

    def render(self, name: str, param_names: Optional[Sequence[str]] = None,
               omit: Sequence[str] = ()) -> str:
        """`omit`: parameters (by their TTIR names) left out of the signature where
        the body never reads them; where it does, they default to None and the
        kernel refuses to compile without them (tritonad's hidden launch
        arguments, which only its launch path makes)."""
        params, required = [], []
        arguments = self.body["arguments"]
        if param_names is not None and len(param_names) == len(arguments):
            for arg, pname in zip(arguments, param_names):
                self.hints[arg["id"]] = pname
        for arg in arguments:
            vid = arg["id"]
            hidden = self.hints.get(vid) in omit
            if hidden and not self.uses[vid]:
                continue
            pname = self.name_of(vid, "arg")
            self.vals[vid] = _Bound(pname, _shape(arg["type"]))
            elem = _elem(arg["type"])
            annotation = ""
            if self.kernel and not _shape(arg["type"]) and not _is_ptr(elem) and \
                    elem not in ("i32", "f32"):
                # (Triton types a Python int or float argument i32 / fp32 by itself)
                annotation = f": {_dtype(elem)}"
            if hidden:
                annotation += "=None"
                required.append(pname)
            params.append(pname + annotation)
        header = ["@triton.jit", f"def {name}({', '.join(params)}):"]
        for pname in required:
            header.append(f'    tl.static_assert({pname} is not None, "{pname} is made by '
                          f"tritonad's launch path: launch this backward through it, or "
                          f'render it with bwd.source(<the launch arguments>)")')
        self.block(self.body, 1, self.terminator_return)
        if not self.lines:
            self.lines.append("    pass")
        return "\n".join(header + self.lines) + "\n"

    def block(self, block, indent: int, terminator: Callable):
        for op in block["operations"]:
            if op["name"] in _TERMINATORS:
                terminator(op, indent)
                continue
            handler = _HANDLERS.get(op["name"])
            if handler is None:
                self.fail(op, "no Triton Python spelling is known for this op")
            handler(self, op, indent, block)

    def nested(self, block, indent: int, terminator: Callable):
        before = len(self.lines)
        self.block(block, indent, terminator)
        if len(self.lines) == before or all(
                line.strip().startswith("#") for line in self.lines[before:]):
            self.lines.append("    " * indent + "pass")

    def terminator_return(self, op, indent):
        if op["name"] not in ("tt.return", "tt.reduce.return", "tt.scan.return"):
            self.fail(op, "unexpected terminator of a function")
        if not op["operands"]:
            if self.kernel:
                return  # the end of the kernel
            self.emit(indent, "return", op)
            return
        values = [self.operand(v) for v in op["operands"]]
        self.emit(indent, "return " + ", ".join(v.text for v in values), op)

    def assign(self, names: List[str], vids: List[int], indent: int, op):
        """names = values, all values read before any name is written (a loop's
        next carried values may read its current ones)."""
        if not names:
            return
        values = [self.operand(v) for v in vids]
        pairs = [(n, v.text, vid) for n, v, vid in zip(names, values, vids) if n != v.text]
        if not pairs:
            return
        line = ", ".join(n for n, _, _ in pairs) + " = " + ", ".join(t for _, t, _ in pairs)
        if len(pairs) > 1 and len(line) + 4 * indent > 96:
            # long: each computed value gets a variable first, then one tuple assignment
            named = []
            for n, text, vid in pairs:
                if not text.isidentifier() and isinstance(self.vals.get(vid), _Pending):
                    temp = self.name_of(vid)
                    self.emit(indent, f"{temp} = {text}", op)
                    text = temp
                named.append((n, text))
            pairs = [(n, t, None) for n, t in named]
            line = ", ".join(n for n, _, _ in pairs) + " = " + ", ".join(t for _, t, _ in pairs)
        self.emit(indent, line, op)


# ---------------------------------------------------------------------------
# Op handlers: handler(fn, op, indent, block)
# ---------------------------------------------------------------------------

_HANDLERS: Dict[str, Callable] = {}


def _handles(*names):
    def register(handler):
        for name in names:
            _HANDLERS[name] = handler
        return handler
    return register


def _result_type(op):
    return op["results"][0]["type"]


@_handles("arith.constant")
def _constant(fn, op, indent, block):
    value = op["attributes"]["value"]
    ty = _result_type(op)
    if isinstance(value, dict) and "splat" in value:
        value = value["splat"]
    elif isinstance(value, dict) and "float" not in value:
        fn.fail(op, f"a constant that is not a splat ({value})")
    fn.vals[op["results"][0]["id"]] = _Const(value, ty)


@_handles("ub.poison")
def _poison(fn, op, indent, block):
    # any value refines poison; zero is one
    ty = _result_type(op)
    fn.vals[op["results"][0]["id"]] = _Const(False if _elem(ty) == "i1" else 0, ty)


_FLOAT_BINARY = {"arith.addf": ("+", _ADD), "arith.subf": ("-", _ADD), "arith.mulf": ("*", _MUL),
                 "arith.divf": ("/", _MUL), "arith.remf": ("%", _MUL)}


@_handles(*_FLOAT_BINARY)
def _float_binary(fn, op, indent, block):
    symbol, prec = _FLOAT_BINARY[op["name"]]
    ty = _result_type(op)
    elem = _elem(ty)
    a, b = op["operands"]
    if symbol in ("/", "%") and elem in ("f16", "bf16"):
        # Triton divides halves in fp32; with 24 >= 2*11+2 bits the result rounds
        # to the same half as a half division would.
        x, y = (fn.operand(v) for v in (a, b))
        text = (f"({x.at(_ATOM)}.to(tl.float32) {symbol} {y.at(_ATOM)}.to(tl.float32))"
                f".to({_dtype(elem)})")
        fn.define(op, _Expr(text, _ATOM, _shape(ty)), indent)
        return
    if not _is_float(elem) or elem.startswith("f8"):
        fn.fail(op, f"arithmetic on {elem}")
    x, y = fn.operands([a, b], _shape(ty))
    fn.define(op, _Expr(f"{x.at(prec)} {symbol} {y.at(prec + 1)}", prec, _shape(ty)), indent)


@_handles("arith.negf")
def _negf(fn, op, indent, block):
    # Triton's unary minus is 0 - x, which loses the sign of a zero; x * -1 keeps it.
    x = fn.operand(op["operands"][0])
    fn.define(op, _Expr(f"{x.at(_MUL)} * -1.0", _MUL, x.shape), indent)


_INT_BINARY = {"arith.addi": ("+", _ADD, False), "arith.subi": ("-", _ADD, False),
               "arith.muli": ("*", _MUL, False), "arith.andi": ("&", _BAND, False),
               "arith.ori": ("|", _BOR, False), "arith.xori": ("^", _BXOR, False),
               "arith.shli": ("<<", _SHIFT, False), "arith.shrsi": (">>", _SHIFT, False),
               "arith.divsi": ("//", _MUL, False), "arith.remsi": ("%", _MUL, False),
               "arith.shrui": (">>", _SHIFT, True), "arith.divui": ("//", _MUL, True),
               "arith.remui": ("%", _MUL, True)}


def _all_ones(fn, vid, width) -> bool:
    state = fn.vals.get(vid)
    while isinstance(state, _Lazy):
        state = fn.vals.get(state.base)
    if not isinstance(state, _Const):
        return False
    value = state.value
    return (value is True) if width == 1 else (not isinstance(value, bool) and
                                               int(value) & ((1 << width) - 1) ==
                                               (1 << width) - 1)


@_handles(*_INT_BINARY)
def _int_binary(fn, op, indent, block):
    symbol, prec, unsigned = _INT_BINARY[op["name"]]
    ty = _result_type(op)
    elem = _elem(ty)
    width = _int_width(elem)
    if width is None:
        fn.fail(op, f"integer op on {elem}")
    a, b = op["operands"]
    if op["name"] == "arith.xori" and _all_ones(fn, b, width):
        x = fn.operand(a)  # Triton's ~x is x xor all-ones
        fn.define(op, _Expr(f"~{x.at(_UNARY)}", _UNARY, x.shape), indent)
        return
    if width == 1 and symbol in ("//", "%", "<<", ">>"):
        fn.fail(op, "division or shift of i1 values")
    x, y = fn.operands([a, b], _shape(ty), unsigned=unsigned)
    if prec <= _SHIFT:  # (parentheses for arithmetic inside bitwise ops, for the reader)
        left, right = (e.text if e.prec in (prec, _UNARY, _ATOM) and not (e is y and e.prec == prec)
                       else f"({e.text})" for e in (x, y))
    else:
        left, right = x.at(prec), y.at(prec + 1)
    expr = _Expr(f"{left} {symbol} {right}", prec, _shape(ty))
    if unsigned:
        expr = fn.bitcast(expr, elem, unsigned=False)
    fn.define(op, expr, indent)


_CMP_SYMBOLS = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
                "ult": "<", "ule": "<=", "ugt": ">", "uge": ">=",
                "oeq": "==", "ogt": ">", "oge": ">=", "olt": "<", "ole": "<=", "une": "!="}
# unordered float predicates as the negation of the ordered opposite
_CMPF_NEGATED = {"ugt": "<=", "uge": "<", "ult": ">=", "ule": ">"}


@_handles("arith.cmpi", "arith.cmpf")
def _compare(fn, op, indent, block):
    table = _CMPI if op["name"] == "arith.cmpi" else _CMPF
    predicate = _enum(op["attributes"]["predicate"], table, "predicate")
    shape = _shape(_result_type(op))
    a, b = op["operands"]
    if predicate in ("false", "true"):
        fn.define(op, fn.typed_constant(predicate == "true", _result_type(op)), indent)
        return
    integer = op["name"] == "arith.cmpi"
    if predicate in _CMP_SYMBOLS and (integer or predicate not in _CMPF_NEGATED):
        unsigned = predicate[0] == "u" and integer
        x, y = fn.operands([a, b], shape, unsigned=unsigned)
        text = f"{x.at(_CMP + 1)} {_CMP_SYMBOLS[predicate]} {y.at(_CMP + 1)}"
        fn.define(op, _Expr(text, _CMP, shape), indent)
        return
    # predicates Triton has no operator for, composed from ordered ones
    fn.atomic(a, indent, op)
    fn.atomic(b, indent, op)

    def both():
        return fn.operands([a, b], shape)

    if predicate in _CMPF_NEGATED:
        x, y = both()
        text = f"~({x.at(_CMP + 1)} {_CMPF_NEGATED[predicate]} {y.at(_CMP + 1)})"
    elif predicate in ("one", "ueq"):
        x, y = both()
        x2, y2 = both()
        text = f"({x.at(_CMP + 1)} < {y.at(_CMP + 1)}) | ({x2.at(_CMP + 1)} > {y2.at(_CMP + 1)})"
        if predicate == "ueq":
            text = f"~({text})"
    elif predicate in ("ord", "uno") and a == b:
        x, x2 = both()
        symbol = "==" if predicate == "ord" else "!="
        text = f"{x.at(_CMP + 1)} {symbol} {x2.at(_CMP + 1)}"
        fn.define(op, _Expr(text, _CMP, shape), indent)
        return
    elif predicate in ("ord", "uno"):
        symbol, join = ("==", "&") if predicate == "ord" else ("!=", "|")
        x, y = both()
        x2, y2 = both()
        text = (f"({x.at(_CMP + 1)} {symbol} {x2.at(_CMP + 1)}) {join} "
                f"({y.at(_CMP + 1)} {symbol} {y2.at(_CMP + 1)})")
    else:
        fn.fail(op, f"predicate {predicate}")
    fn.define(op, _Expr(text, _UNARY if text.startswith("~") else _BOR, shape), indent)


@_handles("arith.select")
def _select(fn, op, indent, block):
    c, a, b = op["operands"]
    shape = _shape(_result_type(op))
    # tl.where broadcasts the condition with x, then x with y (not the condition again)
    flags = fn.choose([c, a, b], shape, True, elem=_elem(_result_type(op)),
                      literal_allowed=[False, True, True], all_literal=True,
                      check=lambda shapes: _broadcast(shapes[0], shapes[1]) == tuple(shape))
    cond, x, y = (fn.operand(v, f) for v, f in zip([c, a, b], flags))
    fn.define(op, _Expr(f"tl.where({cond.text}, {x.text}, {y.text})", _ATOM, shape), indent)


_MINMAX = {"arith.maxnumf": ("tl.maximum", False, ""), "arith.minnumf": ("tl.minimum", False, ""),
           "arith.maximumf": ("tl.maximum", False, ", propagate_nan=tl.PropagateNan.ALL"),
           "arith.minimumf": ("tl.minimum", False, ", propagate_nan=tl.PropagateNan.ALL"),
           "arith.maxsi": ("tl.maximum", False, ""), "arith.minsi": ("tl.minimum", False, ""),
           "arith.maxui": ("tl.maximum", True, ""), "arith.minui": ("tl.minimum", True, "")}


@_handles(*_MINMAX)
def _minmax(fn, op, indent, block):
    function, unsigned, extra = _MINMAX[op["name"]]
    ty = _result_type(op)
    x, y = fn.operands(op["operands"], _shape(ty), unsigned=unsigned)
    expr = _Expr(f"{function}({x.text}, {y.text}{extra})", _ATOM, _shape(ty))
    if unsigned:
        expr = fn.bitcast(expr, _elem(ty), unsigned=False)
    fn.define(op, expr, indent)


@_handles("tt.clampf")
def _clampf(fn, op, indent, block):
    ty = _result_type(op)
    nan = _enum(op["attributes"].get("propagateNan", 0), _PROPAGATE_NAN, "propagateNan")
    x, lo, hi = (fn.operand(v) for v in op["operands"])
    fn.define(op, _Expr(f"tl.clamp({x.text}, {lo.text}, {hi.text}, "
                        f"propagate_nan=tl.PropagateNan.{nan})", _ATOM, _shape(ty)), indent)


# -- casts ------------------------------------------------------------------

def _cast(fn, op, indent, block, text_of: Callable[[_Expr, object, object], str]):
    src = op["operands"][0]
    x = fn.operand(src)
    ty = _result_type(op)
    text = text_of(_Converted(x, _elem(fn.types[src])), _elem(fn.types[src]), _elem(ty))
    fn.define(op, _Expr(text, _ATOM, _shape(ty)), indent)


@_handles("arith.extf", "arith.truncf")
def _float_cast(fn, op, indent, block):
    rounding = op["attributes"].get("roundingmode")
    if rounding is not None and rounding not in (0, {"enum": "to_nearest_even"}):
        fn.fail(op, f"rounding mode {rounding}")
    _cast(fn, op, indent, block, lambda x, s, d: x.to(_dtype(d)))


@_handles("tt.fp_to_fp")
def _fp_to_fp(fn, op, indent, block):
    rounding = op["attributes"].get("rounding")

    def text(x, s, d):
        extra = ""
        if rounding is not None:
            extra = f', fp_downcast_rounding="{_enum(rounding, _ROUNDING, "rounding")}"'
        return x.to(f"{_dtype(d)}{extra}")
    _cast(fn, op, indent, block, text)


@_handles("arith.fptosi")
def _fptosi(fn, op, indent, block):
    def text(x, s, d):
        if _int_width(d) == 1:
            fn.fail(op, "conversion of a float to i1")
        return x.to(_dtype(d))
    _cast(fn, op, indent, block, text)


@_handles("arith.fptoui")
def _fptoui(fn, op, indent, block):
    def text(x, s, d):
        if _int_width(d) == 1:
            fn.fail(op, "conversion of a float to i1")
        return x.to(_dtype(d, True), f"{_dtype(d)}, bitcast=True")
    _cast(fn, op, indent, block, text)


@_handles("arith.extsi", "arith.sitofp")
def _signed_conversion(fn, op, indent, block):
    def text(x, s, d):
        if _int_width(s) == 1:  # signed i1: true is -1 (Triton converts i1 as unsigned)
            return f"(-{x.to(_dtype(d))})"
        return x.to(_dtype(d))
    _cast(fn, op, indent, block, text)


@_handles("arith.extui", "arith.uitofp")
def _unsigned_conversion(fn, op, indent, block):
    def text(x, s, d):
        if _int_width(s) == 1:  # (Triton converts i1 as unsigned)
            return x.to(_dtype(d))
        return x.to(f"{_dtype(s, True)}, bitcast=True", _dtype(d))
    _cast(fn, op, indent, block, text)


@_handles("arith.trunci")
def _trunci(fn, op, indent, block):
    def text(x, s, d):
        if _int_width(d) == 1:  # Triton's .to(tl.int1) is != 0, not the low bit
            return f"(({x.expr.at(_BAND)} & 1) != 0)"
        return x.to(_dtype(d))
    _cast(fn, op, indent, block, text)


@_handles("arith.bitcast", "tt.bitcast")
def _bitcast(fn, op, indent, block):
    _cast(fn, op, indent, block, lambda x, s, d: x.to(f"{_dtype(d)}, bitcast=True"))


@_handles("tt.int_to_ptr", "tt.ptr_to_int")
def _pointer_cast(fn, op, indent, block):
    _cast(fn, op, indent, block, lambda x, s, d: x.to(_dtype(d)))


# -- math -------------------------------------------------------------------

_MATH = {"math.exp": "tl.exp", "math.exp2": "tl.exp2", "math.log": "tl.log",
         "math.log2": "tl.log2", "math.sqrt": "tl.sqrt", "math.rsqrt": "tl.rsqrt",
         "math.sin": "tl.sin", "math.cos": "tl.cos", "math.erf": "tl.erf",
         "math.absf": "tl.abs", "math.absi": "tl.abs", "math.floor": "tl.floor",
         "math.ceil": "tl.ceil", "math.fma": "tl.fma", "tt.precise_sqrt": "tl.sqrt_rn",
         "tt.precise_divf": "tl.div_rn"}


@_handles(*_MATH)
def _math(fn, op, indent, block):
    ty = _result_type(op)
    args = [fn.operand(v) for v in op["operands"]]
    fn.define(op, _Expr(f"{_MATH[op['name']]}({', '.join(a.text for a in args)})", _ATOM,
                        _shape(ty)), indent)


@_handles("tt.mulhiui")
def _mulhiui(fn, op, indent, block):
    ty = _result_type(op)
    x, y = (fn.operand(v, unsigned=True) for v in op["operands"])
    expr = _Expr(f"tl.umulhi({x.text}, {y.text})", _ATOM, _shape(ty))
    fn.define(op, fn.bitcast(expr, _elem(ty), unsigned=False), indent)


_LIBDEVICE: Optional[Dict[str, str]] = None


def libdevice_functions() -> Dict[str, str]:
    """libdevice symbol -> the name of the triton.language.extra.libdevice
    function that calls it (read from Triton's CUDA libdevice module)."""
    global _LIBDEVICE
    if _LIBDEVICE is None:
        import ast
        from triton.language.extra.cuda import libdevice

        with open(libdevice.__file__) as f:
            tree = ast.parse(f.read())
        table: Dict[str, str] = {}
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.Tuple) and inner.elts and \
                        isinstance(inner.elts[0], ast.Constant) and \
                        isinstance(inner.elts[0].value, str) and \
                        inner.elts[0].value.startswith("__nv_"):
                    table.setdefault(inner.elts[0].value, node.name)
        _LIBDEVICE = table
    return _LIBDEVICE


@_handles("tt.extern_elementwise")
def _extern(fn, op, indent, block):
    attrs = op["attributes"]
    symbol = attrs.get("symbol")
    function = libdevice_functions().get(symbol)
    if function is None or attrs.get("libname") not in ("", "libdevice", None):
        fn.fail(op, f"extern function {symbol!r} of library {attrs.get('libname')!r} is not "
                    "a libdevice function tritonad knows")
    if not attrs.get("pure", True):
        fn.fail(op, f"impure extern function {symbol}")
    fn.m.uses_libdevice = True
    ty = _result_type(op)
    args = [fn.operand(v) for v in op["operands"]]
    fn.define(op, _Expr(f"libdevice.{function}({', '.join(a.text for a in args)})", _ATOM,
                        _shape(ty)), indent)


# -- shapes -----------------------------------------------------------------

@_handles("tt.splat", "tt.broadcast")
def _splat(fn, op, indent, block):
    vid = op["results"][0]["id"]
    base = op["operands"][0]
    if fn.uses[vid] > 1:  # each use writes the base again
        fn.atomic(base, indent, op)
    fn.vals[vid] = _Lazy(base, _result_type(op))
    if len(fn.use_blocks[vid] - {fn.def_block[vid]}) > 1:
        # used in several nested blocks (both branches of an if): written once, here
        name = fn.name_of(vid)
        fn.emit(indent, f"{name} = {fn.operand(vid).text}", op)
        fn.vals[vid] = _Bound(name, _shape(_result_type(op)))


@_handles("tt.make_range")
def _make_range(fn, op, indent, block):
    attrs = op["attributes"]
    fn.define(op, _Expr(f"tl.arange({attrs['start']}, {attrs['end']})", _ATOM,
                        _shape(_result_type(op))), indent)


@_handles("tt.expand_dims")
def _expand_dims(fn, op, indent, block):
    axis = op["attributes"]["axis"]
    x = fn.operand(op["operands"][0])
    shape = _shape(_result_type(op))
    if not x.shape:
        text = f"tl.expand_dims({x.text}, {axis})"
    else:
        index = [":"] * len(shape)
        index[axis] = "None"
        text = f"{x.at(_ATOM)}[{', '.join(index)}]"
    fn.define(op, _Expr(text, _ATOM, shape), indent)


@_handles("tt.reshape")
def _reshape(fn, op, indent, block):
    x = fn.operand(op["operands"][0])
    shape = _shape(_result_type(op))
    extra = ", can_reorder=True" if "allow_reorder" in op["attributes"] else ""
    fn.define(op, _Expr(f"tl.reshape({x.text}, {_shape_text(shape)}{extra})", _ATOM, shape),
              indent)


@_handles("tt.trans")
def _trans(fn, op, indent, block):
    order = op["attributes"]["order"]
    x = fn.operand(op["operands"][0])
    shape = _shape(_result_type(op))
    text = (f"tl.trans({x.text})" if list(order) == [1, 0]
            else f"tl.permute({x.text}, {_shape_text(order)})")
    fn.define(op, _Expr(text, _ATOM, shape), indent)


@_handles("tt.join")
def _join(fn, op, indent, block):
    a, b = (fn.operand(v) for v in op["operands"])
    fn.define(op, _Expr(f"tl.join({a.text}, {b.text})", _ATOM, _shape(_result_type(op))),
              indent)


@_handles("tt.split")
def _split(fn, op, indent, block):
    x = fn.operand(op["operands"][0])
    fn.define_many(op, f"tl.split({x.text})", indent)


@_handles("tt.cat")
def _cat(fn, op, indent, block):
    a, b = (fn.operand(v) for v in op["operands"])
    fn.define(op, _Expr(f"tl.cat({a.text}, {b.text}, can_reorder=True)", _ATOM,
                        _shape(_result_type(op))), indent)


@_handles("tt.gather")
def _gather(fn, op, indent, block):
    src, index = (fn.operand(v) for v in op["operands"])
    axis = op["attributes"]["axis"]
    fn.define(op, _Expr(f"tl.gather({src.text}, {index.text}, {axis})", _ATOM,
                        _shape(_result_type(op))), indent)


# -- programs, pointers, memory ----------------------------------------------

@_handles("tt.get_program_id", "tt.get_num_programs")
def _program(fn, op, indent, block):
    axis = _enum(op["attributes"]["axis"], ["0", "1", "2"], "axis")
    function = "tl.program_id" if op["name"] == "tt.get_program_id" else "tl.num_programs"
    fn.define(op, _Expr(f"{function}({axis})", _ATOM, ()), indent,
              fallback="pid" if op["name"] == "tt.get_program_id" else "num_pids")


@_handles("tt.addptr")
def _addptr(fn, op, indent, block):
    shape = _shape(_result_type(op))
    p, off = fn.operands(op["operands"], shape)
    fn.define(op, _Expr(f"{p.at(_ADD)} + {off.at(_ADD + 1)}", _ADD, shape), indent)


def _memory_options(fn, op, keys) -> str:
    attrs = op["attributes"]
    if attrs.get("boundaryCheck") not in (None, []) or "padding" in attrs:
        fn.fail(op, "block-pointer boundary checks")
    out = []
    if "cache" in keys:
        cache = attrs.get("cache", 1)
        cache = _CACHE_NAMES[cache["enum"]] if isinstance(cache, dict) else _CACHE[cache]
        if cache:
            out.append(f'cache_modifier="{cache}"')
    if "evict" in keys:
        evict = attrs.get("evict", 1)
        evict = _EVICT_NAMES[evict["enum"]] if isinstance(evict, dict) else _EVICT[evict]
        if evict:
            out.append(f'eviction_policy="{evict}"')
    if "isVolatile" in keys and attrs.get("isVolatile"):
        out.append("volatile=True")
    return "".join(", " + o for o in out)


def _segments(op, count):
    sizes = op["attributes"].get("operandSegmentSizes")
    if sizes is None:
        return [[v] for v in op["operands"]] + [[]] * (count - len(op["operands"]))
    out, at = [], 0
    for size in sizes:
        out.append(op["operands"][at:at + size])
        at += size
    return out


def _masked_operands(fn, ptr, others, shape):
    """The pointer with its full shape; mask / other / value broadcast to it."""
    p = fn.operand(ptr)
    if p.shape != tuple(shape):
        raise AssertionError("explicit pointer of the wrong shape")
    exprs = []
    for vid in others:
        implicit_shape, _ = fn.peek(vid)
        implicit = _broadcast(implicit_shape, tuple(shape)) == tuple(shape)
        exprs.append(fn.operand(vid, implicit=implicit))
    return p, exprs


@_handles("tt.load")
def _load(fn, op, indent, block):
    ptr_ids, mask_ids, other_ids = _segments(op, 3)
    shape = _shape(_result_type(op))
    p, rest = _masked_operands(fn, ptr_ids[0], mask_ids + other_ids, shape)
    args = [p.text]
    if mask_ids:
        args.append(f"mask={rest[0].text}")
    if other_ids:
        args.append(f"other={rest[-1].text}")
    text = f"tl.load({', '.join(args)}{_memory_options(fn, op, ('cache', 'evict', 'isVolatile'))})"
    # (a load is never moved: a store between could change what it reads)
    fn.define(op, _Expr(text, _ATOM, shape), indent, pure=False)


@_handles("tt.store")
def _store(fn, op, indent, block):
    ptr, *rest_ids = op["operands"]
    shape = _shape(fn.types[ptr])
    p, rest = _masked_operands(fn, ptr, rest_ids, shape)
    args = [p.text, rest[0].text]
    if len(rest) > 1:
        args.append(f"mask={rest[1].text}")
    fn.emit(indent, f"tl.store({', '.join(args)}{_memory_options(fn, op, ('cache', 'evict'))})",
            op)


_ATOMICS = {"fadd": "tl.atomic_add", "add": "tl.atomic_add", "and": "tl.atomic_and",
            "or": "tl.atomic_or", "xor": "tl.atomic_xor", "exch": "tl.atomic_xchg",
            "max": "tl.atomic_max", "min": "tl.atomic_min"}


def _sem_scope(op):
    attrs = op["attributes"]
    sem = _enum(attrs.get("sem", 4), _SEM, "sem")
    scope = _enum(attrs.get("scope", 1), _SCOPE, "scope")
    return f', sem="{sem}", scope="{scope}"'


@_handles("tt.atomic_rmw")
def _atomic_rmw(fn, op, indent, block):
    kind = _enum(op["attributes"]["atomic_rmw_op"], _RMW, "atomic_rmw_op")
    elem = _elem(_result_type(op))
    if kind not in _ATOMICS or (kind in ("max", "min") and _is_float(elem)):
        fn.fail(op, f"atomic {kind} on {elem}")
    ptr, *rest_ids = op["operands"]
    shape = _shape(_result_type(op))
    p, rest = _masked_operands(fn, ptr, rest_ids, shape)
    args = [p.text, rest[0].text]
    if len(rest) > 1:
        args.append(f"mask={rest[1].text}")
    text = f"{_ATOMICS[kind]}({', '.join(args)}{_sem_scope(op)})"
    fn.define(op, _Expr(text, _ATOM, shape), indent, pure=False, fallback="old")


@_handles("tt.atomic_cas")
def _atomic_cas(fn, op, indent, block):
    ptr, cmp, val = op["operands"]
    shape = _shape(_result_type(op))
    p, (c, v) = _masked_operands(fn, ptr, [cmp, val], shape)
    text = f"tl.atomic_cas({p.text}, {c.text}, {v.text}{_sem_scope(op)})"
    fn.define(op, _Expr(text, _ATOM, shape), indent, pure=False, fallback="old")


@_handles("gpu.barrier")
def _barrier(fn, op, indent, block):
    fn.emit(indent, "tl.debug_barrier()", op)


# -- dot, reductions, scans ---------------------------------------------------

@_handles("tt.dot")
def _dot(fn, op, indent, block):
    a, b, c = op["operands"]
    attrs = op["attributes"]
    ty = _result_type(op)
    x, y = fn.operand(a), fn.operand(b)
    args = [x.text, y.text]
    state = fn.vals.get(c)
    zero_acc = isinstance(state, _Const) and not isinstance(state.value, (dict, bool)) and \
        state.value == 0
    if not zero_acc:  # (tl.dot starts from zeros of the result type by itself)
        args.append(fn.operand(c).text)
    precision = _enum(attrs.get("inputPrecision", 0), _PRECISION, "inputPrecision")
    args.append(f'input_precision="{precision}"')
    imprecise = attrs.get("maxNumImpreciseAcc", 0)
    if imprecise:
        args.append(f"max_num_imprecise_acc={imprecise}")
    if _elem(ty) != "f32":
        args.append(f"out_dtype={_dtype(_elem(ty))}")
    fn.define(op, _Expr(f"tl.dot({', '.join(args)})", _ATOM, _shape(ty)), indent,
              fallback="acc")


# combine regions tl has a function for: (op, argument types) -> tl function
_REDUCTIONS = {("arith.addf", "f16"): "tl.sum", ("arith.addf", "bf16"): "tl.sum",
               ("arith.addf", "f32"): "tl.sum", ("arith.addf", "f64"): "tl.sum",
               ("arith.addi", "i32"): "tl.sum", ("arith.addi", "i64"): "tl.sum",
               ("arith.maxnumf", "f32"): "tl.max", ("arith.maxnumf", "f64"): "tl.max",
               ("arith.maxsi", "i32"): "tl.max", ("arith.maxsi", "i64"): "tl.max",
               ("arith.minnumf", "f32"): "tl.min", ("arith.minnumf", "f64"): "tl.min",
               ("arith.minsi", "i32"): "tl.min", ("arith.minsi", "i64"): "tl.min"}
_SCANS = {("arith.addf", "f16"): "tl.cumsum", ("arith.addf", "f32"): "tl.cumsum",
          ("arith.addf", "f64"): "tl.cumsum", ("arith.addi", "i32"): "tl.cumsum",
          ("arith.addi", "i64"): "tl.cumsum", ("arith.mulf", "f16"): "tl.cumprod",
          ("arith.mulf", "f32"): "tl.cumprod", ("arith.mulf", "f64"): "tl.cumprod",
          ("arith.muli", "i32"): "tl.cumprod", ("arith.muli", "i64"): "tl.cumprod"}


def _simple_combine(block, table) -> Optional[str]:
    """The tl function whose combine is this region (a single commutative op of
    both arguments), None for any other region."""
    args = [a["id"] for a in block["arguments"]]
    ops = block["operations"]
    if len(args) != 2 or len(ops) != 2:
        return None
    combine, ret = ops
    if len(combine["results"]) != 1 or ret["operands"] != [combine["results"][0]["id"]]:
        return None
    if sorted(combine["operands"]) != sorted(args) or combine["regions"]:
        return None
    elem = _elem(block["arguments"][0]["type"])
    return table.get((combine["name"], elem))


def _reduce_like(fn, op, indent, block, kind):
    attrs = op["attributes"]
    axis = attrs["axis"]
    region = op["regions"][0]
    if len(region) != 1:
        fn.fail(op, "a combine region of several blocks")
    combine = region[0]
    values = [fn.operand(v) for v in op["operands"]]
    table = _REDUCTIONS if kind == "reduce" else _SCANS
    simple = _simple_combine(combine, table) if len(values) == 1 else None
    reverse = kind == "scan" and attrs.get("reverse", False)
    extra = ", reverse=True" if reverse else ""
    if simple is not None:
        text = f"{simple}({values[0].text}, axis={axis}{extra})"
    else:
        helper = fn.m.combine(combine, kind)
        inputs = values[0].text if len(values) == 1 else \
            "(" + ", ".join(v.text for v in values) + ")"
        function = "tl.reduce" if kind == "reduce" else "tl.associative_scan"
        text = f"{function}({inputs}, {axis}, {helper}{extra})"
    if len(op["results"]) == 1:
        fn.define(op, _Expr(text, _ATOM, _shape(_result_type(op))), indent)
    else:
        fn.define_many(op, text, indent)


@_handles("tt.reduce")
def _reduce(fn, op, indent, block):
    _reduce_like(fn, op, indent, block, "reduce")


@_handles("tt.scan")
def _scan(fn, op, indent, block):
    _reduce_like(fn, op, indent, block, "scan")


@_handles("tt.call")
def _call(fn, op, indent, block):
    symbol = op["attributes"]["callee"]
    name = fn.m.callee(symbol, op)
    args = [fn.operand(v) for v in op["operands"]]
    text = f"{name}({', '.join(a.text for a in args)})"
    if not op["results"]:
        fn.emit(indent, text, op)
    else:
        fn.define_many(op, text, indent)


# -- control flow -------------------------------------------------------------

_LOOP_OPTIONS = {"tt.num_stages": "num_stages", "tt.loop_unroll_factor": "loop_unroll_factor",
                 "tt.disallow_acc_multi_buffer": "disallow_acc_multi_buffer",
                 "tt.flatten": "flatten", "tt.warp_specialize": "warp_specialize"}


def _carried_names(fn, block_args, results, fallback="acc") -> List[str]:
    names = []
    for i, arg in enumerate(block_args):
        hint = fn.hints.get(arg["id"]) or (results[i].get("name") if i < len(results) else None)
        if hint and arg["id"] not in fn.names:
            fn.hints[arg["id"]] = hint
        names.append(fn.name_of(arg["id"], fallback))
    return names


@_handles("scf.for")
def _for(fn, op, indent, block):
    lb, ub, step, *inits = op["operands"]
    body = op["regions"][0][0]
    iv, *carried = body["arguments"]
    elem = _elem(fn.types[lb])
    options = []
    for key, value in op["attributes"].items():
        if key == "llvm.loop_annotation":
            options.append("disable_licm=True")
        elif key in _LOOP_OPTIONS:
            options.append(f"{_LOOP_OPTIONS[key]}="
                           f"{'True' if isinstance(value, dict) else value}")
        elif key != "unsignedCmp" or value:
            fn.fail(op, f"loop attribute {key}")
    names = _carried_names(fn, carried, op["results"])
    fn.assign(names, inits, indent, op)
    for arg, name in zip(carried, names):
        fn.vals[arg["id"]] = _Bound(name, _shape(arg["type"]))
    # (Triton types the induction variable from the bounds: literals are i32)
    bounds = []
    for vid in (lb, ub, step):
        bounds.append(fn.operand(vid, implicit=elem == "i32").text)
    if bounds[2] == "1" and not options:
        bounds = bounds[:2] if bounds[0] != "0" or elem != "i32" else bounds[1:2]
    iv_name = fn.name_of(iv["id"], "i") if fn.uses[iv["id"]] else "_"
    fn.vals[iv["id"]] = _Bound(iv_name, ())
    iterator = f"tl.range({', '.join(bounds + options)})" if options else \
        f"range({', '.join(bounds)})"
    fn.emit(indent, f"for {iv_name} in {iterator}:", op)
    fn.nested(body, indent + 1, lambda t, ind: fn.assign(names, t["operands"], ind, t))
    for result, name in zip(op["results"], names):
        fn.vals[result["id"]] = _Bound(name, _shape(result["type"]))


@_handles("scf.if")
def _if(fn, op, indent, block):
    cond = fn.operand(op["operands"][0])
    results = op["results"]
    names = [fn.name_of(r["id"], "t") for r in results]
    then_block = op["regions"][0][0]
    else_region = op["regions"][1]

    def terminator(t, ind):
        fn.assign(names, t["operands"], ind, t)

    fn.emit(indent, f"if {cond.text}:", op)
    fn.nested(then_block, indent + 1, terminator)
    if else_region and (results or len(else_region[0]["operations"]) > 1):
        fn.emit(indent, "else:")
        fn.nested(else_region[0], indent + 1, terminator)
    for result, name in zip(results, names):
        fn.vals[result["id"]] = _Bound(name, _shape(result["type"]))


@_handles("scf.while")
def _while(fn, op, indent, block):
    inits = op["operands"]
    before, after = op["regions"][0][0], op["regions"][1][0]
    names = _carried_names(fn, before["arguments"], op["results"], "c")
    fn.assign(names, inits, indent, op)
    condition = before["operations"][-1]
    if condition["name"] != "scf.condition":
        fn.fail(op, "a before-region not ending in scf.condition")
    cond_id, *forwarded = condition["operands"]
    # The before-region runs ahead of every trip: its condition and forwarded
    # values are variables of the loop, computed before it and again at the end
    # of its body (Triton's `while` re-evaluates only a name).
    cond_name = fn.name_of(cond_id, "go")
    forward_names = []
    for i, (vid, arg) in enumerate(zip(forwarded, after["arguments"])):
        if fn.hints.get(arg["id"]) is None:
            fn.hints[arg["id"]] = fn.hints.get(vid) or (names[i] if i < len(names) else None)
        forward_names.append(fn.name_of(arg["id"], "c"))

    def run_before(ind):
        for arg, name in zip(before["arguments"], names):
            fn.vals[arg["id"]] = _Bound(name, _shape(arg["type"]))

        def terminator(t, i2):
            fn.assign([cond_name] + forward_names, t["operands"], i2, t)
        fn.block(before, ind, terminator)

    run_before(indent)
    fn.emit(indent, f"while {cond_name}:", op)
    for arg, name in zip(after["arguments"], forward_names):
        fn.vals[arg["id"]] = _Bound(name, _shape(arg["type"]))

    def after_terminator(t, ind):
        fn.assign(names, t["operands"], ind, t)
        run_before(ind)

    fn.nested(after, indent + 1, after_terminator)
    for result, name in zip(op["results"], forward_names):
        fn.vals[result["id"]] = _Bound(name, _shape(result["type"]))


# ---------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------

def describe(module_text: str) -> dict:
    from tritonad import _C

    return json.loads(_C.describe(module_text))


def render(module_text: str, function: str, *, name: Optional[str] = None,
           header: Sequence[str] = (), params: Optional[Sequence[str]] = None) -> str:
    """Python source defining `function` of a TTIR module as a @triton.jit
    function named `name` (with every helper it needs: called functions and
    reduce/scan combine functions).

    A public function renders as a kernel whose scalar parameters carry their
    TTIR type where Triton would not infer it (``stride: tl.int64``); values
    Triton specialized (constexprs, None) are compiled in, so the kernel takes
    the TTIR function's arguments, less tritonad's hidden launch arguments that
    its body never reads (see `launch_notes`). `header` lines become comments;
    `params` names the parameters where the TTIR has no names for them (when
    their count matches).
    """
    return _render_with_notes(module_text, function, name=name, header=header,
                              params=params)[0]


def _render_with_notes(module_text, function, *, name, header, params):
    """(the rendering, `launch_notes` of its kernel or None for a device function)."""
    description = describe(module_text)
    module = _Module(description)
    target = module.functions.get(function)
    if target is None or "body" not in target:
        raise RenderError(f"no function @{function} with a body in the module")
    name = module.global_name(name or _callee_base(function))
    kernel = target.get("public", False)
    renderer = _Function(module, target["body"], kernel=kernel)
    main = renderer.render(name, params, omit=hidden_parameters() if kernel else ())
    notes = launch_notes(renderer, name) if kernel else None
    lines = [f"# {h}" if h else "#" for h in header]
    if notes is not None:
        lines += [f"# {line}" if line else "#" for line in notes.comment]
    lines += ["import triton", "import triton.language as tl"]
    if module.uses_libdevice:
        lines.append("from triton.language.extra import libdevice")
    parts = ["\n".join(lines) + "\n"] + module.helpers + [main]
    return "\n\n".join(parts), notes


# ---------------------------------------------------------------------------
# tritonad's hidden launch arguments
# ---------------------------------------------------------------------------

# What each hidden argument a derived backward may read holds, and the pointer
# an integer among them describes, as the core declares them (LaunchContract.h):
# tritonad's launch path (_partial.launch) computes them from the launch's
# arguments and grid, so a rendering whose body reads one does not launch on
# its own.
_HIDDEN_MEANING = {p["name"]: p["meaning"] for p in _contract.HIDDEN}
_TRAVELS_WITH = {p["name"]: p["travels_with"] for p in _contract.HIDDEN if p["travels_with"]}
_FULL_MASKS = _contract.declared("tritonad_full_masks")
_KEEP_MASKS = _contract.declared("tritonad_keep_masks")


@functools.lru_cache(maxsize=None)
def hidden_parameters() -> frozenset:
    """The names of the arguments tritonad's launch path adds to a backward kernel."""
    return frozenset(_contract.HIDDEN_TYPES)


@dataclass
class LaunchNotes:
    """How a rendered backward kernel launches: `reads` the hidden arguments its
    body reads (kept as its last parameters, in launch order), `left_out` those it
    does not (not in its signature), `masks_dropped` whether it was compiled for
    launches that make its masks true; `comment` says it in the rendering's
    header; `why_not` is None where it launches as written."""
    kernel: str
    params: List[str]
    reads: List[str]
    left_out: List[str]
    masks_dropped: bool

    @property
    def why_not(self) -> Optional[str]:
        by_owner: Dict[str, List[str]] = {}
        for hidden in self.reads:
            by_owner.setdefault(_TRAVELS_WITH.get(hidden, hidden), []).append(hidden)
        reasons = [f"it reads {_listed(names)}, {_HIDDEN_MEANING[owner]}"
                   for owner, names in by_owner.items()]
        if self.masks_dropped:
            reasons.append("it was compiled for launches whose sizes make every mask tritonad "
                           "can bound true (multiples of the blocks), without those masks: "
                           "other sizes would read and write out of bounds")
        return "; ".join(reasons) or None

    @property
    def comment(self) -> List[str]:
        runtime = [p for p in self.params if p not in self.reads]
        why = self.why_not
        if why is None:
            lines = ["It launches as written, as bwd[grid](...) does, less the constexprs:",
                     f"    {self.kernel}[grid]({', '.join(runtime)})"]
        else:
            lines = _wrapped(f"NOT LAUNCHABLE ON ITS OWN: this is the backward as tritonad's "
                             f"launch path runs it, and {why}. bwd.source(<the launch's "
                             f"arguments>) renders the backward derived without tritonad's "
                             f"launch path, which launches as written.")
            if self.reads:
                lines += _wrapped(f"Launched without {_listed(self.reads)}, it stops at its "
                                  f"first line, saying so.")
        if self.left_out:
            lines += _wrapped(f"tritonad's launch path also passes {', '.join(self.left_out)}; "
                              f"this derivation does not read them: they are left out.")
        return lines


def _listed(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _wrapped(text: str) -> List[str]:
    import textwrap

    return textwrap.wrap(text, 92, break_on_hyphens=False)


def launch_notes(renderer: "_Function", name: str) -> LaunchNotes:
    hidden = hidden_parameters()
    arguments = renderer.body["arguments"]
    names = [renderer.hints.get(a["id"]) for a in arguments]
    kept = [a for a in arguments if renderer.hints.get(a["id"]) not in hidden or
            renderer.uses[a["id"]]]
    params = [renderer.names[a["id"]] for a in kept]
    reads = [renderer.names[a["id"]] for a in kept if renderer.hints.get(a["id"]) in hidden]
    left_out = [n for n in names if n in hidden and n not in reads]
    # (Triton compiles a hidden integer passed as 1 as a constant, absent from the
    # arguments: the launch path passes one of the two masks' selectors as 1)
    masks_dropped = _KEEP_MASKS in names and _FULL_MASKS not in names
    return LaunchNotes(name, params, reads, left_out, masks_dropped)


def function_name(source: str) -> str:
    """The name of the last function a rendering defines (the rendered one)."""
    last = None
    for line in source.splitlines():
        if line.startswith("def "):
            last = line[4:].split("(", 1)[0]
    if last is None:
        raise RenderError("the source defines no function")
    return last


_loaded = itertools.count()


def load(source: str, name: Optional[str] = None, namespace: Optional[dict] = None):
    """Executes a rendering and returns its function (a JITFunction, or an
    InterpretedFunction under TRITON_INTERPRET=1); `namespace` replaces globals
    of the rendering (the interpreter's libdevice). The source is registered
    with linecache: Triton reads a function's source through inspect."""
    name = name or function_name(source)
    filename = f"<tritonad-rendered-{next(_loaded)}-{name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    env = {"__name__": "tritonad_rendered"}
    exec(compile(source, filename, "exec"), env)
    env.update(namespace or {})  # (after the source's imports: a replacement wins)
    return env[name]


def render_record(module_text: str, function: str, *, name: str,
                  header: Sequence[str] = (), params: Optional[Sequence[str]] = None) -> dict:
    """What a derivation records: {"source": text} (a kernel's also says
    "launchable": why not, or None) or, when the rendering fails,
    {"error": message} (the derivation itself stands; ``source()`` raises it)."""
    try:
        text, notes = _render_with_notes(module_text, function, name=name, header=header,
                                         params=params)
    except RenderError as error:
        return {"error": str(error)}
    except Exception as error:  # noqa: BLE001  (a renderer bug must not break a compile)
        return {"error": f"internal error of tritonad's renderer: {error!r}"}
    record = {"source": text}
    if notes is not None:
        record["not_launchable"] = notes.why_not
    return record


def source_of(record) -> Optional[str]:
    """The source in a record (None when nothing was derived yet); raises the
    recorded RenderError. A kernel's source is what tritonad's launch path runs:
    where that reads hidden arguments, its header says so (`launchable_source`
    raises instead)."""
    if record is None:
        return None
    if "error" in record:
        raise RenderError(record["error"])
    return record["source"]


class NotLaunchableError(RenderError):
    """The rendered backward reads arguments only tritonad's launch path makes."""


def launchable_source(record) -> Optional[str]:
    """The source in a record where its kernel launches as written (its
    parameters, on the forward's grid); else raises NotLaunchableError saying
    what the kernel reads and how to render one that launches."""
    source = source_of(record)
    why = record.get("not_launchable") if record is not None else None
    if why:
        kernel = function_name(source)
        raise NotLaunchableError(
            f"the rendered {kernel} does not launch on its own: it is the backward as "
            f"tritonad's launch path runs it, and {why}. Pass the launch's arguments, "
            f"bwd.source(<as bwd[grid](...) takes them>), to render the backward derived "
            f"without tritonad's launch path (atomics or plain stores instead of partial "
            f"buffers and re-parallelized programs, replay instead of tapes, every mask "
            f"kept), which launches as written")
    return source


def header(kind: str, primal) -> List[str]:
    """The comment lines heading a rendering of `primal`'s derivative."""
    from tritonad._hook import build_id

    return [f"{kind} of {primal.__module__}.{primal.__qualname__}, derived by tritonad "
            f"{build_id()} and rendered from its TTIR.",
            "Constexpr arguments (and arguments Triton specialized, such as None) are "
            "compiled in;",
            "the parameters are the remaining runtime arguments, in launch order."]
