"""An output tensor that already carries autograd history when the kernel is
launched: torch wrote part of it from a tensor that requires grad, the kernel
stores the rest. fla's rotary_embedding_fwdbwd does this (y = zeros_like(x);
y[..., 2R:].copy_(x[..., 2R:]); the kernel rotates the first 2R features into y):
the peer case fla.rotary_embedding found it.

This was a silently wrong gradient: tritonad.autograd's node replaced the output's
history, so the gradient through the values torch wrote was dropped (zero) with
no error. The launch is now refused, naming the output and what to change (a
decorated launcher refused it already: it stores into memory that requires
grad)."""

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
pytest.importorskip("tritonad")

import triton.language as tl  # noqa: E402

from interpreter_util import run_interpreted  # noqa: E402


@triton.jit
def _doubled_head(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, 2.0 * tl.load(x_ptr + offsets, mask=mask), mask=mask)


def head_doubled_tail_copied(x, head):
    """y[:head] = 2 x[:head] by the kernel; y[head:] = x[head:] by torch, before
    the launch (into the kernel's output)."""
    import tritonad

    kernel = tritonad.autograd(_doubled_head, outputs=("y_ptr",))
    y = torch.zeros_like(x)
    y[head:].copy_(x[head:])
    kernel[(1,)](x, y, head, BLOCK=triton.next_power_of_2(head))
    return y


_INTERPRETED = """
import json, torch
from test_output_history import head_doubled_tail_copied
x = torch.randn(77, requires_grad=True)
try:
    head_doubled_tail_copied(x, 45)
    result = "ran"
except ValueError as error:
    result = str(error)
with torch.no_grad():  # (no graph: nothing to lose)
    y = head_doubled_tail_copied(x, 45)
expected_y = torch.cat((2 * x[:45], x[45:]))
print(json.dumps({"refusal": result, "forward": float((y - expected_y).abs().max())}))
"""


@pytest.fixture(scope="module")
def interpreted():
    return run_interpreted(_INTERPRETED)


def test_output_with_history_refused_naming_it(interpreted):
    message = interpreted["refusal"]
    assert "output 'y_ptr' of _doubled_head already requires grad" in message, message
    assert "torch.empty" in message, message


def test_without_grad_the_launch_runs(interpreted):
    assert interpreted["forward"] <= 1e-6, interpreted
