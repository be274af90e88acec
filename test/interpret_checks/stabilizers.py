"""Stabilizers (cpp/lib/Analysis/ShiftInvariance.cpp), differentially: random
row kernels around a max subtracted before exponentiating, some whose
results do not depend on the max (a stabilizer: held constant, its loop
reversed once with the final max) and some that do (a wrong claim of
invariance would drop a gradient). Gradients against torch in fp64, which
differentiates through the max as written; the schedule must say
"stabilizer" exactly for the invariant ones.
"""

import linecache

import torch
import triton.language as tl

from interpret_checks import check
from interpreter_util import GEN, jit_from_source, kernel_gradients, randn


_STABILIZER_KERNEL = """
def {name}(X, W, Z, Y, C, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.full([], float("-inf"), tl.float32)
    s = tl.zeros([], dtype=tl.float32)
    acc = tl.zeros([], dtype=tl.float32)
    for off in range(0, C, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < C
        x = tl.load(X + row * C + cols, mask=mask, other=-1e30)
        w = tl.load(W + row * C + cols, mask=mask, other=0.0)
        m_new = tl.maximum(m, tl.max(x, 0))
        alpha = {alpha}
        p = tl.where(mask, {p}, 0.0)
        s = s * alpha + tl.sum(p, 0){s_extra}
        acc = acc * alpha + tl.sum(p * w, 0)
        m = m_new
    tl.store(Z + row, {out})
{tile}"""


_STABILIZER_TILE = """    cols = tl.arange(0, BLOCK)
    mask = cols < C
    x = tl.load(X + row * C + cols, mask=mask, other=-1e30)
    mt = tl.max(x, 0)
    e = tl.where(mask, {e}, 0.0)
    tl.store(Y + row * C + cols, {tile_out}, mask=mask)
"""


def _stabilizer_case(rng, invariant):
    """(kernel source pieces, torch reference, whether the loop's max and the
    tile's max only stabilize); `invariant` draws only loops whose results do
    not depend on their max, else anything."""
    base = rng.choice(["e", "2"])
    other = "2" if base == "e" else "e"
    exp = {"e": "tl.exp", "2": "tl.math.exp2"}
    log = {"e": "tl.log", "2": "tl.log2"}
    texp = {"e": torch.exp, "2": torch.exp2}
    tlog = {"e": torch.log, "2": torch.log2}
    alpha_base = base if invariant or rng.random() < 0.8 else other
    p_form = "plain" if invariant else rng.choice(["plain"] * 2 + ["scaled", "times_shift"])
    s_extra = not invariant and rng.random() < 0.2
    outs = {
        "ratio": ("acc / s", lambda m, s, acc: acc / s, True),
        "lse": (f"m + {log[base]}(s)", lambda m, s, acc: m + tlog[base](s), True),
        "both": (f"(m + {log[base]}(s)) * 0.5 + acc / s",
                 lambda m, s, acc: (m + tlog[base](s)) * 0.5 + acc / s, True),
        "log_only": (f"{log[base]}(s)", lambda m, s, acc: tlog[base](s), False),
        "unnormalized": ("acc", lambda m, s, acc: acc, False),
        "other_log": (f"m + {log[other]}(s)", lambda m, s, acc: m + tlog[other](s), False),
        "plus_max": ("acc / s + 0.3 * m", lambda m, s, acc: acc / s + 0.3 * m, False),
    }
    out_name = rng.choice(sorted(k for k in outs if outs[k][2] or not invariant))
    out_src, out_ref, out_invariant = outs[out_name]
    p_src = {"plain": f"{exp[base]}(x - m_new)", "scaled": f"{exp[base]}((x - m_new) * 0.5)",
             "times_shift": f"{exp[base]}(x - m_new) * (x - m_new + 4.0)"}[p_form]
    loop_invariant = (out_invariant and alpha_base == base and p_form == "plain"
                      and not s_extra)
    tiles = {
        "softmax": (f"e / tl.sum(e, 0)", True),
        "exp_only": ("e", False),
        "log_softmax": (f"x - mt - {log[base]}(tl.sum(e, 0))", True),
        "shifted_by_half": ("e / tl.sum(e, 0) + mt * 0.0 + (x - mt) * 0.5", False),
    }
    tile_name = rng.choice(sorted(tiles) + [None])
    pieces = dict(alpha=f"{exp[alpha_base]}(m - m_new)", p=p_src,
                  s_extra=" + 0.25" if s_extra else "", out=out_src, tile="")
    if tile_name:
        pieces["tile"] = _STABILIZER_TILE.format(e=f"{exp[base]}(x - mt)",
                                                 tile_out=tiles[tile_name][0])

    def reference(x, w, C, BLOCK):
        # x, w: [R, C] float64 leaves; the kernel's arithmetic, block by block.
        R = x.shape[0]
        pad = -C % BLOCK
        xp = torch.cat([x, torch.full((R, pad), -1e30, dtype=x.dtype)], 1)
        wp = torch.cat([w, torch.zeros((R, pad), dtype=w.dtype)], 1)
        m = torch.full((R,), float("-inf"), dtype=x.dtype)
        s = torch.zeros(R, dtype=x.dtype)
        acc = torch.zeros(R, dtype=x.dtype)
        for off in range(0, C, BLOCK):
            xb, wb = xp[:, off:off + BLOCK], wp[:, off:off + BLOCK]
            mask = (torch.arange(off, off + BLOCK) < C)[None, :]
            m_new = torch.maximum(m, xb.max(1).values)
            alpha = texp[alpha_base](m - m_new)
            shift = xb - m_new[:, None]
            p = {"plain": lambda: texp[base](shift), "scaled": lambda: texp[base](shift * 0.5),
                 "times_shift": lambda: texp[base](shift) * (shift + 4.0)}[p_form]()
            p = torch.where(mask, p, torch.zeros_like(p))
            s = s * alpha + p.sum(1) + (0.25 if s_extra else 0.0)
            acc = acc * alpha + (p * torch.where(mask, wb, torch.zeros_like(wb))).sum(1)
            m = m_new
        result = {"Z": out_ref(m, s, acc)}
        if tile_name:
            mt = x.max(1, keepdim=True).values
            e = texp[base](x - mt)
            result["Y"] = {"softmax": lambda: e / e.sum(1, keepdim=True),
                           "exp_only": lambda: e,
                           "log_softmax": lambda: x - mt - tlog[base](e.sum(1, keepdim=True)),
                           "shifted_by_half": lambda: e / e.sum(1, keepdim=True)
                           + (x - mt) * 0.5}[tile_name]()
        return result

    tile_invariant = tiles[tile_name][1] if tile_name else None
    label = (f"base={base} alpha={alpha_base} p={p_form} s_extra={s_extra} out={out_name} "
             f"tile={tile_name}")
    return pieces, reference, loop_invariant, tile_invariant, label


@check("stabilizer_random_kernels")
def _():
    import random
    rng = random.Random(int(torch.randint(0, 2 ** 31, (1,), generator=GEN)))
    seen = {True: 0, False: 0}
    for case in range(24):
        pieces, reference, loop_invariant, tile_invariant, label = _stabilizer_case(
            rng, invariant=case % 3 == 0)
        name = f"stabilizer_case_{case}"
        kernel = jit_from_source(_STABILIZER_KERNEL.format(name=name, **pieces), name,
                                 {"tl": tl})
        R, C = 3, rng.choice([23, 37, 50])
        BLOCK = 16 if not pieces["tile"] else 64
        x, w = randn(R, C) * 2, randn(R, C)
        outputs, unused = {"Z": torch.empty(R)}, {}
        if pieces["tile"]:
            outputs["Y"] = torch.empty(R, C)
        else:
            unused = {"Y": torch.empty(1)}  # no store through it: no shadow needed
        try:
            bwd = kernel_gradients(
                kernel, (R,), {"X": x, "W": w}, outputs, {"C": C, **unused}, {"BLOCK": BLOCK},
                lambda X, W: reference(X, W, C, BLOCK), rtol=1e-4, atol=1e-5)
        except Exception as error:
            raise AssertionError(f"case {case} ({label}): {error}") from error
        schedule = bwd.schedule()
        loop_note = [line for line in schedule.splitlines() if line.startswith("loop ")]
        stabilized = bool(loop_note) and "only stabilizes exponentials" in loop_note[0]
        assert stabilized == loop_invariant, f"case {case} ({label}):\n{schedule}"
        seen[loop_invariant] += 1
        if tile_invariant is not None:
            lines = [line for line in schedule.splitlines()
                     if line.startswith("stabilizer at ") and "a loop's" not in line]
            # the tile's max, and the max of each block inside the loop when the
            # loop's max is one
            tile_lines = [line for line in lines if f":{_line_of(kernel, 'mt = ')}:" in line]
            assert bool(tile_lines) == tile_invariant, f"case {case} ({label}):\n{schedule}"
    assert seen[True] and seen[False], seen


def _line_of(kernel, text):
    """The line of the kernel's (generated) source that contains `text`."""
    source = linecache.getlines(kernel.fn.__code__.co_filename)
    for number, line in enumerate(source, 1):
        if text in line:
            return number
    raise AssertionError(text)
