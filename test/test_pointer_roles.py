"""pointer_roles is flow-sensitive and may-reach: at each tl.load / tl.store / atomic /
helper call a local name denotes the assignments that may reach it, so a name reused
for an input and then an output is not "loaded and stored" (in place), while every
path's roles are kept (a missed one would let an in-place kernel through). One small
kernel per control-flow form; the source is only read (nothing is compiled or run), so
the kernels that Triton itself would refuse (with, try, break, nested defs) are
checked for a conservative answer too.
"""

import pytest

triton = pytest.importorskip("triton")
pytest.importorskip("tritonad")

import triton.language as tl  # noqa: E402

from tritonad._source import pointer_roles  # noqa: E402

L, S, LS = {"load"}, {"store"}, {"load", "store"}


@triton.jit
def straight_line(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    p = x_ptr + o
    v = tl.load(p, mask=o < n)
    p = y_ptr + o
    tl.store(p, v, mask=o < n)


@triton.jit
def copied_before_reassignment(x_ptr, y_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    p = x_ptr + o
    q = p          # q keeps x after p moves on
    p = y_ptr + o
    tl.store(q, tl.load(p))


@triton.jit
def swapped(x_ptr, y_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    p, q = x_ptr + o, y_ptr + o
    p, q = q, p
    tl.store(p, tl.load(q))   # stores y, loads x


@triton.jit
def parameter_reassigned(x_ptr, y_ptr, row, stride, BLOCK: tl.constexpr):
    x_ptr = x_ptr + row * stride
    y_ptr += row * stride
    o = tl.arange(0, BLOCK)
    tl.store(y_ptr + o, tl.load(x_ptr + o))


@triton.jit
def if_else_joined(x_ptr, y_ptr, z_ptr, flag, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    if flag > 0:
        p = x_ptr + o
    else:
        p = y_ptr + o
    tl.store(z_ptr + o, tl.load(p))


@triton.jit
def if_without_else(x_ptr, y_ptr, flag, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    p = x_ptr + o
    if flag > 0:
        p = y_ptr + o
    tl.store(y_ptr + o, tl.load(p))   # y is read where flag > 0: in place


@triton.jit
def used_inside_each_branch(x_ptr, y_ptr, z_ptr, FIRST: tl.constexpr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    if FIRST:
        p = x_ptr + o
        v = tl.load(p)
        p = z_ptr + o
        tl.store(p, v)
    else:
        p = y_ptr + o
        v = tl.load(p)
        p = z_ptr + o
        tl.store(p, 2.0 * v)


@triton.jit
def reassigned_before_each_use_in_a_loop(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # (fla's chunk_delta_h: p_v addresses v, then v_new, in every iteration)
    for start in range(0, n, BLOCK):
        o = start + tl.arange(0, BLOCK)
        p = x_ptr + o
        v = tl.load(p, mask=o < n)
        p = y_ptr + o
        tl.store(p, v, mask=o < n)


@triton.jit
def carried_by_a_for_loop(x_ptr, y_ptr, iters, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    p = x_ptr + o
    for _ in range(iters):
        v = tl.load(p)      # the second iteration reads y
        p = y_ptr + o
        tl.store(p, v)


@triton.jit
def carried_by_a_while_loop(x_ptr, y_ptr, iters, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    p = x_ptr + o
    i = 0
    while i < iters:
        v = tl.load(p)
        p = y_ptr + o
        tl.store(p, v)
        i += 1


@triton.jit
def carried_by_an_inner_loop(x_ptr, y_ptr, z_ptr, outer, inner, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    p = x_ptr + o
    for _ in range(outer):
        tl.store(z_ptr + o, tl.load(p))   # y from the second outer iteration on
        for _ in range(inner):
            p = y_ptr + o
            tl.store(p, tl.load(z_ptr + o))


@triton.jit
def carried_through_two_names(x_ptr, y_ptr, iters, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    p = x_ptr + o
    q = x_ptr + o
    for _ in range(iters):
        v = tl.load(p)   # y two iterations later: q -> p -> load
        p = q
        q = y_ptr + o
        tl.store(q, v)


@triton.jit
def seen_after_the_loop(x_ptr, y_ptr, z_ptr, iters, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    p = x_ptr + o
    for _ in range(iters):
        p = y_ptr + o
    tl.store(z_ptr + o, tl.load(p))   # x when the loop runs no iteration


@triton.jit
def advanced_in_a_loop(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    x_ptrs = x_ptr + tl.arange(0, BLOCK)
    y_ptrs = y_ptr + tl.arange(0, BLOCK)
    for _ in range(0, n, BLOCK):
        tl.store(y_ptrs, tl.load(x_ptrs))
        x_ptrs += BLOCK
        y_ptrs += BLOCK


@triton.jit
def block_pointers_advanced(x_ptr, y_ptr, M, N, stride, BLOCK: tl.constexpr):
    xb = tl.make_block_ptr(x_ptr, (M, N), (stride, 1), (0, 0), (BLOCK, BLOCK), (1, 0))
    yb = tl.make_block_ptr(base=y_ptr, shape=(M, N), strides=(stride, 1), offsets=(0, 0),
                           block_shape=(BLOCK, BLOCK), order=(1, 0))
    for _ in range(0, N, BLOCK):
        tl.store(yb, tl.load(xb))
        xb = tl.advance(xb, (0, BLOCK))
        yb = yb.advance((0, BLOCK))


@triton.jit
def _address(base, offsets):
    return base + offsets


@triton.jit
def _load_from(pointers):
    return tl.load(pointers)


@triton.jit
def _store_into(pointers, values):
    tl.store(pointers, values)


@triton.jit
def _copy_reusing_a_name(src, dst, o):
    p = src + o
    v = tl.load(p)
    p = dst + o
    tl.store(p, v)


@triton.jit
def helpers_on_a_reused_name(x_ptr, y_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    p = _address(x_ptr, o)
    v = _load_from(p)
    p = _address(y_ptr, o)
    _store_into(p, v)


@triton.jit
def helper_reusing_a_name(x_ptr, y_ptr, BLOCK: tl.constexpr):
    _copy_reusing_a_name(x_ptr, y_ptr, tl.arange(0, BLOCK))


@triton.jit
def helper_reusing_a_name_in_place(x_ptr, BLOCK: tl.constexpr):
    _copy_reusing_a_name(x_ptr, x_ptr, tl.arange(0, BLOCK))


@triton.jit
def conditional_expression(x_ptr, y_ptr, z_ptr, flag, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    p = x_ptr + o if flag > 0 else y_ptr + o
    tl.store(z_ptr + o, tl.load(p))


@triton.jit
def early_return(x_ptr, y_ptr, flag, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    p = x_ptr + o
    v = tl.load(p)
    if flag > 0:
        return
    p = y_ptr + o
    tl.store(p, v)


@triton.jit
def loop_with_break(x_ptr, y_ptr, iters, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    p = x_ptr + o
    for i in range(iters):
        p = y_ptr + o
        if i > 3:
            break
        p = x_ptr + o
    tl.store(y_ptr + o, tl.load(p))   # y after the break


@triton.jit
def loop_with_continue(x_ptr, y_ptr, iters, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    p = x_ptr + o
    for i in range(iters):
        tl.store(y_ptr + o, tl.load(p))   # y after a continue
        p = y_ptr + o
        if i > 3:
            continue
        p = x_ptr + o


@triton.jit
def assigned_in_a_with(x_ptr, y_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    p = x_ptr + o
    v = tl.load(p)
    with something():  # noqa: F821 (only read)
        p = y_ptr + o
    tl.store(p, v)   # conservative: x too


@triton.jit
def assigned_in_a_try(x_ptr, y_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    p = x_ptr + o
    v = tl.load(p)
    try:
        p = y_ptr + o
        p = y_ptr + 1 + o
    except ValueError:
        pass
    tl.store(p, v)   # x where the first assignment raised


@triton.jit
def with_a_nested_def(x_ptr, y_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)

    def unused():
        return 0

    p = x_ptr + o
    v = tl.load(p)
    p = y_ptr + o
    tl.store(p, v)   # flow-insensitive: every name sees all its assignments


@triton.jit
def reused_by_a_walrus(x_ptr, y_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    v = tl.load(p := x_ptr + o)
    p = y_ptr + o
    tl.store(p, v)   # p flow-insensitive


CASES = {
    straight_line: {"x_ptr": L, "y_ptr": S},
    copied_before_reassignment: {"x_ptr": S, "y_ptr": L},
    swapped: {"x_ptr": L, "y_ptr": S},
    parameter_reassigned: {"x_ptr": L, "y_ptr": S},
    if_else_joined: {"x_ptr": L, "y_ptr": L, "z_ptr": S},
    if_without_else: {"x_ptr": L, "y_ptr": LS},
    used_inside_each_branch: {"x_ptr": L, "y_ptr": L, "z_ptr": S},
    reassigned_before_each_use_in_a_loop: {"x_ptr": L, "y_ptr": S},
    carried_by_a_for_loop: {"x_ptr": L, "y_ptr": LS},
    carried_by_a_while_loop: {"x_ptr": L, "y_ptr": LS},
    carried_by_an_inner_loop: {"x_ptr": L, "y_ptr": LS, "z_ptr": LS},
    carried_through_two_names: {"x_ptr": L, "y_ptr": LS},
    seen_after_the_loop: {"x_ptr": L, "y_ptr": L, "z_ptr": S},
    advanced_in_a_loop: {"x_ptr": L, "y_ptr": S},
    block_pointers_advanced: {"x_ptr": L, "y_ptr": S},
    helpers_on_a_reused_name: {"x_ptr": L, "y_ptr": S},
    helper_reusing_a_name: {"x_ptr": L, "y_ptr": S},
    helper_reusing_a_name_in_place: {"x_ptr": LS},
    conditional_expression: {"x_ptr": L, "y_ptr": L, "z_ptr": S},
    early_return: {"x_ptr": L, "y_ptr": S},
    loop_with_break: {"x_ptr": L, "y_ptr": LS},
    loop_with_continue: {"x_ptr": L, "y_ptr": LS},
    assigned_in_a_with: {"x_ptr": LS, "y_ptr": S},
    assigned_in_a_try: {"x_ptr": LS, "y_ptr": S},
    with_a_nested_def: {"x_ptr": LS, "y_ptr": LS},
    reused_by_a_walrus: {"x_ptr": LS, "y_ptr": S},
}


@pytest.mark.parametrize("kernel", list(CASES), ids=lambda k: k.__name__)
def test_pointer_roles(kernel):
    assert pointer_roles(kernel) == CASES[kernel]


@triton.jit
def _address_by_case(base, offsets, kind):
    match kind:
        case 0:
            return base + offsets
        case _:
            return base + 2 * offsets


@triton.jit
def address_returned_from_a_match(x_ptr, y_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(y_ptr + o, tl.load(_address_by_case(x_ptr, o, 0)))


def test_an_address_returned_from_an_unfollowed_statement_is_found():
    # (a statement the walk does not follow: every name flow-insensitive, its returns kept)
    assert pointer_roles(address_returned_from_a_match) == {"x_ptr": L, "y_ptr": S}
