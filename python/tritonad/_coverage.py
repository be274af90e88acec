"""Whether a derived backward's stores reach every element of a gradient buffer,
so that the buffer needs no zero fill before the launch.

For each shadow whose every element the backward stores once (never adds to),
the pass records, as data (``_C.differentiate_kernel``'s coverage):

* ``digits``: (coefficient, extent) pairs; the stores reach the element offsets
  ``sum_i coefficient_i * index_i`` over ``index_i in [0, extent_i)`` (program
  ids, lanes of the tile, loop iterations);
* ``clamps``: ``([(digit, k), ...], bound)``: only index tuples with
  ``sum_j k_j * index_j < bound`` are stored (the mask);
* ``condition``: when it is false the kernel adds with atomics instead (its
  run-time exclusivity check), which needs zeros.

Each is an expression over the kernel's scalar arguments and its grid, which
``covers`` evaluates with the launch's values and compares with the tensor's
element offsets (its shape and strides). Anything it cannot show to be equal
is "not covered": the caller zero-fills, the safe path.
"""

from __future__ import annotations

import json
from typing import Dict, List, Optional, Sequence, Tuple

from tritonad import _caches, _contract

# (a coverage record's fields: LaunchContract.h, kCoverageRecord; WRAPS only where any)
DIGITS, CLAMPS, CONDITION, WRAPS = _contract.fields("coverage", "digits", "clamps", "condition",
                                                    "wraps")


def _divs(a, b):  # arith.divsi: rounds towards zero
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    import torch

    if bool((torch.as_tensor(b) == 0).any()):
        raise ZeroDivisionError("division by zero")
    return torch.div(torch.as_tensor(a), b, rounding_mode="trunc")


def _flag(condition):
    """A comparison as arith.cmpi gives it: 1 or 0 (per program, for tensors)."""
    if isinstance(condition, bool):
        return int(condition)
    import torch

    return condition.to(torch.int64)


def _extremum(pick):
    def apply(a, b):
        if isinstance(a, int) and isinstance(b, int):
            return pick(a, b)
        import torch

        both = torch.as_tensor(a), torch.as_tensor(b)
        return torch.minimum(*both) if pick is min else torch.maximum(*both)
    return apply


_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "divs": _divs,
    "rems": lambda a, b: a - b * _divs(a, b),
    "min": _extremum(min),
    "max": _extremum(max),
    "lt": lambda a, b: _flag(a < b),
    "le": lambda a, b: _flag(a <= b),
    "gt": lambda a, b: _flag(a > b),
    "ge": lambda a, b: _flag(a >= b),
    "eq": lambda a, b: _flag(a == b),
    "ne": lambda a, b: _flag(a != b),
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
}


LEAVES = ("const", "arg", "programs", "pid", "slot")


def arguments_read(expression, names: set) -> set:
    """`names` with the kernel arguments a recorded expression reads added."""
    if expression[0] == "arg":
        names.add(expression[1])
    elif expression[0] not in LEAVES:
        for operand in expression[1:]:
            arguments_read(operand, names)
    return names


_DESCRIBED: Dict[int, tuple] = {}
_DESCRIBED_LIMIT = 1024


def described(record, expressions) -> Tuple[str, tuple]:
    """(`record` as JSON text, the kernel arguments the expressions
    `expressions()` yields read), computed once per recorded object (a compiled
    kernel's metadata) rather than at every launch: the key of a launch's cache."""
    info = _DESCRIBED.get(id(record))
    if info is None or info[0] is not record:
        names: set = set()
        for expression in expressions():
            arguments_read(expression, names)
        info = (record, json.dumps(record, sort_keys=True), tuple(sorted(names)))
        _caches.keep_newest(_DESCRIBED, id(record), info, _DESCRIBED_LIMIT)
    return info[1], info[2]


def per_program_cached(expression, arguments: Dict[str, object], grid: Sequence[int],
                       cache: dict, cache_limit: int, program_limit: int, reduce, extra_key=()):
    """``reduce(values)``, `values` being what a recorded per-program expression
    (a compiled kernel's launch condition, its programs' work) evaluates to over
    every program of `grid`: a tensor (one value per program, in launch order),
    an int where it does not depend on the program, or None where the launch's
    arguments do not determine it or the grid has more than `program_limit`
    programs (the host's evaluation is linear in them). Cached in `cache` (at
    most `cache_limit` entries) by the expression, the grid, the arguments it
    reads and `extra_key`."""
    grid = tuple(int(g) for g in (list(grid) + [1, 1, 1])[:3])
    text, names = described(expression, lambda: [expression])
    key = (text, grid, tuple((n, arguments.get(n)) for n in names), *extra_key)
    try:
        hash(key)
    except TypeError:
        key = None  # (an argument that is not hashable: not an integer either)
    if key is not None and key in cache:
        return cache[key]
    values = None
    if grid[0] * grid[1] * grid[2] <= program_limit:
        try:
            values = evaluate(expression, arguments, grid, program_ids(grid))
        except (KeyError, TypeError, ZeroDivisionError, IndexError):
            values = None
    result = reduce(values)
    if key is not None:
        _caches.keep_newest(cache, key, result, cache_limit)
    return result


def program_ids(grid: Sequence[int]):
    """Every program's ids along axes 0..2 of a grid of up to three axes (int64
    tensors, in launch order: axis 0 fastest)."""
    import torch

    gx, gy, gz = (list(grid) + [1, 1, 1])[:3]
    linear = torch.arange(gx * gy * gz, dtype=torch.int64)
    return linear % gx, (linear // gx) % gy, linear // (gx * gy)


def evaluate(expression, arguments: Dict[str, object], grid: Sequence[int], ids=None):
    """The value of a recorded expression; KeyError/TypeError/ZeroDivisionError
    where the launch does not determine it. With `ids` (every program's ids
    along axes 0..2, int64 tensors), program ids are allowed and the value is
    per program (a tensor; an int where it does not depend on them); a fourth
    tensor gives the programs' scratch slots (("slot",))."""
    op = expression[0]
    if op == "const":
        return int(expression[1])
    if op == "arg":
        value = arguments[expression[1]]
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{expression[1]} is not an integer: {value!r}")
        return value
    if op == "programs":
        axis = int(expression[1])
        return int(grid[axis]) if axis < len(grid) else 1
    if op == "pid":
        if ids is None:
            raise KeyError("a program id, in an expression for the whole launch")
        return ids[int(expression[1])]
    if op == "slot":
        if ids is None or len(ids) < 4:
            raise KeyError("a program's scratch slot, outside a re-parallelized launch")
        return ids[3]
    values = [evaluate(e, arguments, grid, ids) for e in expression[1:]]
    if op == "select":
        if isinstance(values[0], int):
            return values[1] if values[0] else values[2]
        import torch

        return torch.where(values[0] != 0, torch.as_tensor(values[1]),
                           torch.as_tensor(values[2]))
    return _BINARY[op](*values)


def _canonical(pairs: List[Tuple[int, int]]) -> Optional[List[Tuple[int, int]]]:
    """(stride, extent) pairs as the fewest dims that reach the same offsets:
    extent-1 dims dropped, each dim merged into the previous when it continues
    it (stride = previous stride * previous extent); None if a stride is not
    positive."""
    dims = sorted((s, e) for s, e in pairs if e != 1)
    merged: List[Tuple[int, int]] = []
    for stride, extent in dims:
        if stride <= 0:
            return None
        if merged and merged[-1][0] * merged[-1][1] == stride:
            merged[-1] = (merged[-1][0], merged[-1][1] * extent)
        else:
            merged.append((stride, extent))
    return merged


def _apply_clamps(digits: List[Tuple[int, int]], clamps, arguments, grid):
    """Digits with each clamp folded in: a clamp over digits whose k's form a
    mixed radix (1, e_0, e_0 e_1, ...) and whose coefficients are c_0 times the
    k's makes them one digit (c_0, min(product of extents, bound)). None where
    a clamp has any other form."""
    alive = {i: d for i, d in enumerate(digits)}
    for terms, bound in clamps:
        bound = evaluate(bound, arguments, grid)
        group = sorted(((int(k), int(i)) for i, k in terms if alive.get(int(i), (0, 0))[1] != 1),
                       key=lambda t: t[0])
        if any(i not in alive for _, i in group):
            return None  # (a digit another clamp already merged)
        if not group:
            if bound <= 0:
                return []
            continue
        if len(group) == 1:
            k, i = group[0]
            c, e = alive[i]
            alive[i] = (c, max(0, min(e, -(-bound // k) if k > 0 else e)))
            continue
        radix = 1
        c0 = alive[group[0][1]][0]
        for k, i in group:
            c, e = alive[i]
            if k != radix or c != c0 * k:
                return None
            radix *= e
        first = group[0][1]
        for _, i in group[1:]:
            del alive[i]
        alive[first] = (c0, max(0, min(radix, bound)))
    return list(alive.values())


def covers(record, tensor, arguments: Dict[str, object], grid: Sequence[int]) -> bool:
    """Whether the stores described by `record` reach every element of `tensor`
    (the shadow as passed) at this launch, each stored, not added. Decided once
    per record, tensor layout, grid and values of the arguments the record names
    (every backward launch asks)."""
    names = _names_in(record)
    values = tuple(arguments.get(name) for name in names)
    if not all(type(v) is int for v in values):  # (evaluate refuses them anyway)
        return _covers(record, tensor, arguments, grid)
    key = (id(record), tuple(tensor.shape), tuple(tensor.stride()), tuple(grid), values)
    known = _COVERS.get(key)
    if known is not None and known[0] is record:
        return known[1]
    result = _covers(record, tensor, arguments, grid)
    # (the record kept alive: its id stays its own)
    _caches.keep_newest(_COVERS, key, (record, result), _CACHE_SIZE)
    return result


_CACHE_SIZE = 1024
_COVERS: Dict[tuple, Tuple[object, bool]] = {}
_NAMES: Dict[int, Tuple[object, Tuple[str, ...]]] = {}


def _names_in(record) -> Tuple[str, ...]:
    """The argument names a record's expressions read."""
    known = _NAMES.get(id(record))
    if known is not None and known[0] is record:
        return known[1]
    names = set()

    def walk(node):
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, (list, tuple)):
            if len(node) == 2 and node[0] == "arg" and isinstance(node[1], str):
                names.add(node[1])
            else:
                for value in node:
                    walk(value)

    walk(record)
    _caches.keep_newest(_NAMES, id(record), (record, tuple(sorted(names))), _CACHE_SIZE)
    return _NAMES[id(record)][1]


def _covers(record, tensor, arguments: Dict[str, object], grid: Sequence[int]) -> bool:
    if tensor.numel() == 0:
        return True
    try:
        if not evaluate(record[CONDITION], arguments, grid):
            return False
        digits = [(evaluate(c, arguments, grid), evaluate(e, arguments, grid))
                  for c, e in record[DIGITS]]
        if any(e <= 0 for _, e in digits):
            return False
        digits = _apply_clamps(digits, record[CLAMPS], arguments, grid)
    except (KeyError, TypeError, ZeroDivisionError, ValueError, IndexError):
        return False
    if digits is None or any(e <= 0 for _, e in digits):
        return False
    reached = _canonical(digits)
    have = _canonical(list(zip(tensor.stride(), tensor.shape)))
    return reached is not None and reached == have


def grid_of(grid, kwargs) -> Tuple[int, ...]:
    """The launch grid as Triton computes it (a callable gets the arguments)."""
    if callable(grid):
        grid = grid(kwargs)
    return tuple(int(g) for g in grid)
