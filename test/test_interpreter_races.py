"""The interpreter's race check (interpreter_races.py) on small hand-written kernels
(race_cases.py), run in Triton's interpreter with fresh random sizes: each racing
kernel is reported with its two ops and their lines, each race-free one is not."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from interpreter_util import run_interpreted  # noqa: E402

# case -> the races expected: (kind, first op, second op, marker on the first line,
# marker on the second line); an empty tuple: none
EXPECTED = {
    "rmw_overlapping_rows": (("across programs", "store", "load", "rmw store", "rmw load"),
                             ("across programs", "load", "store", "rmw load", "rmw store")),
    "rmw_disjoint_rows": (),
    # (per address and pair of programs: the earlier one's last access, the later's first)
    "two_passes_overlapping_rows": (("across programs", "store", "load", "second pass",
                                     "first pass"),
                                    ("across programs", "load", "store", "second pass",
                                     "first pass")),
    "two_passes_rows_apart": (),
    "atomic_overlapping_rows": (),
    "last_program_sums": (),
    # (an early program reads partials that later programs have not stored yet)
    "every_program_sums": (("across programs", "load", "store", "partials = tl.load",
                            "tl.store(partial_ptr + pid"),),
    # (relaxed atomics order nothing: the last program's reads and its reset of the count)
    "relaxed_last_program_sums": (("across programs", "store", "load",
                                   "tl.store(partial_ptr + pid", "partials = tl.load"),
                                  ("across programs", "atomic_add", "store", "atomic_add(count",
                                   "tl.store(count_ptr, 0)")),
    "shifted_load_no_barrier": (("within a program", "store", "load", "first store",
                                 "shifted"),),
    "shifted_load_barrier": (),
    "pair_store_different_values": (("one store", "store", "store", "pair store",
                                     "pair store"),),
    "pair_store_same_values": (),
    "elementwise_in_place": (),
    "atomic_then_plain_read": (("across programs", "atomic_add", "load", "program 0 adds",
                                "others read"),),
    "two_launches": (),
}


@pytest.fixture(scope="module")
def reported():
    script = "import race_cases; race_cases.main()"
    return run_interpreted(script)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_race_check_reports(reported, name):
    races = reported["cases"][name]
    got = sorted((kind, a, b) for kind, a, b, *_ in races)
    want = sorted((kind, a, b) for kind, a, b, *_ in EXPECTED[name])
    assert got == want, f"(seed {reported['seed']}) {races}"
    for (kind, a, b, where_a, where_b, count), expected in zip(
            sorted(races), sorted(EXPECTED[name])):
        assert expected[3] in where_a and expected[4] in where_b, (reported["seed"], races)
        assert count >= 1


def test_derived_backward_checked_alone(reported):
    """tritonad's backward of overlapping rows (their gradients meet): the one derived
    launch is checked (the forward is not selected), race-free, and right."""
    races, launches, error = reported["derived"]
    assert launches == 1 and races == [] and error < 1e-5, (reported["seed"], races, error)


def test_a_rendered_line_names_the_kernel_line_it_came_from():
    """A race in a derived backward is located at the rendered line and at the user's line
    that the rendering's comment above it names."""
    import linecache

    from interpreter_races import _site_text

    source = ("def k_bwd(x_ptr, dx_ptr):\n"
              "    # kernels.py:12: y = tl.load(x_ptr + offs)\n"
              "    v0 = tl.load(dx_ptr + offs)\n"
              "    tl.store(dx_ptr + offs, v0 + g)\n")
    name = "<tritonad-rendered-0-k_bwd-test>"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    try:
        where = _site_text(name, 4)
    finally:
        del linecache.cache[name]
    assert where == (f"{name}:4: tl.store(dx_ptr + offs, v0 + g)  "
                     "[kernels.py:12: y = tl.load(x_ptr + offs)]"), where
