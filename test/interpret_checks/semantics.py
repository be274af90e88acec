"""The rendering's integer and float semantics: hand-written TTIR (corpus/ttir.py)
rendered and interpreted, against numpy.
"""

import torch

from interpret_checks import check
from interpreter_util import GEN, randn
from corpus.ttir import FLOAT_PREDICATES, INTEGER_TTIR, float_ttir, integer_reference


@check("integer_semantics")
def _():
    from tritonad import _render

    source = _render.render(INTEGER_TTIR, "integers")
    kernel = _render.load(source)
    a = torch.randint(-2**31, 2**31, (64,), dtype=torch.int64, generator=GEN).to(torch.int32)
    b = torch.randint(-2**31, 2**31, (64,), dtype=torch.int64, generator=GEN).to(torch.int32)
    b[b == 0] = 1
    a[:4] = torch.tensor([-7, 7, -2**31, 5], dtype=torch.int32)
    b[:4] = torch.tensor([2, -2, -1, 9], dtype=torch.int32)
    out = torch.zeros(13, 64, dtype=torch.int32)
    floats = torch.zeros(64)
    wide = torch.zeros(64, dtype=torch.int64)
    kernel[(1,)](a, b, out, floats, wide)
    want, want_floats, want_wide = integer_reference(a, b)
    names = ["divui", "remui", "shrui", "cmpi ult", "maxui", "minui", "divsi", "remsi",
             "shrsi", "mulhiui", "cmpi uge + select", "trunci i1 + extsi", "tt.call"]
    for row, name in enumerate(names):
        bad = (out[row] != want[row]).nonzero()
        assert not len(bad), f"{name}: a={a[bad[0]].item()} b={b[bad[0]].item()} gives " \
                             f"{out[row, bad[0]].item()}, expected {want[row, bad[0]].item()}\n{source}"
    assert torch.equal(floats, want_floats), "uitofp"
    assert torch.equal(wide, want_wide), "extui"


@check("float_semantics")
def _():
    import numpy as np

    from tritonad import _render

    source = _render.render(float_ttir(), "floats")
    kernel = _render.load(source)
    a, b = randn(64), randn(64)
    nan = float("nan")
    a[:8] = torch.tensor([nan, 1.0, nan, 0.0, -0.0, 2.0, 3.0, -1.0])
    b[:8] = torch.tensor([1.0, nan, nan, 0.0, 0.0, 2.0, -3.0, 5.0])
    flags = torch.zeros(len(FLOAT_PREDICATES), 64, dtype=torch.int8)
    negated = torch.zeros(64)
    halves = torch.zeros(2, 64, dtype=torch.float16)
    kernel[(1,)](a, b, flags, negated, halves)
    x, y = a.numpy(), b.numpy()
    unordered = np.isnan(x) | np.isnan(y)
    ordered = {"oeq": x == y, "ogt": x > y, "oge": x >= y, "olt": x < y, "ole": x <= y,
               "one": (x < y) | (x > y), "ord": ~unordered}
    for row, predicate in enumerate(FLOAT_PREDICATES):
        if predicate in ordered:
            want = ordered[predicate] & ~unordered
        elif predicate == "une":
            want = ~(x == y)
        elif predicate == "uno":
            want = unordered
        else:
            want = ordered["o" + predicate[1:]] | unordered
        got = flags[row].numpy().astype(bool)
        assert (got == want).all(), f"cmpf {predicate}: a={x[got != want][0]} " \
                                    f"b={y[got != want][0]}\n{source}"
    # (x * -1.0: the sign of a zero flips as with negf; a NaN stays a NaN)
    numbers = ~np.isnan(x)
    assert np.array_equal(np.signbit(negated.numpy())[numbers], ~np.signbit(x)[numbers]), \
        "negf: the sign of zero"
    assert np.isnan(negated.numpy()[~numbers]).all(), "negf of NaN"
    assert torch.equal(negated[8:], -a[8:]), "negf"
    ha, hb = x.astype(np.float16), y.astype(np.float16)
    with np.errstate(all="ignore"):
        want_div, want_rem = ha / hb, np.fmod(ha, hb)
    for got, want, name in ((halves[0], want_div, "f16 divf"), (halves[1], want_rem, "f16 remf")):
        assert np.array_equal(got.numpy(), want, equal_nan=True), name
