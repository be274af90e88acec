"""Stores that write an address more than once in the forward (lanes of one
store, or the programs along a grid axis, writing the same addresses): the forward
keeps one writer's value and a backward cannot tell whose, so each writer got the
whole upstream gradient (silently N times too large). Now refused: at the store
where the lanes are proven to share addresses, at the launch where the programs
along an axis do (a launch of one program along it is fine). Stores masked to one
writer, under a program condition, or in a grid-stride loop are derived as before.
Kernels: corpus/write_once.py (interpreter, fp32). Lit:
AutoDiff/kernel-store-written-once.mlir."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")

from corpus import write_once  # noqa: E402
from interpreter_util import run_interpreted  # noqa: E402

_INTERPRETED = """
import json, torch
from corpus import write_once
results = {}
for name in write_once.CASES:
    try:
        results[name] = write_once.run(name, "cpu")
    except Exception as error:
        results[name] = f"{type(error).__name__}: {error}"
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def interpreted():
    return run_interpreted(_INTERPRETED)


def test_lanes_sharing_an_address_refused_at_the_store(interpreted):
    message = interpreted["lanes_share_an_address"]
    assert isinstance(message, str) and "lanes along dim 0 share addresses" in message, message
    assert "corpus/write_once.py:" in message, message  # (the user's line of the store)


def test_programs_sharing_addresses_refused_at_the_launch(interpreted):
    message = interpreted["programs_share_addresses"]
    assert isinstance(message, str), message
    assert "every program along grid axis 0" in message and "tl.program_id(0)" in message, message
    assert "corpus/write_once.py:" in message, message


@pytest.mark.parametrize("case", ["first_lane_stores", "first_program_stores",
                                  "grid_stride_rows"])
def test_stores_written_once_are_derived(interpreted, case):
    error = interpreted[case]
    assert isinstance(error, float) and error <= 1e-5, (case, error)
