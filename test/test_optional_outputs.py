"""tritonad.autograd(kernel, outputs=...) with an output passed as None (an optional
result the kernel stores only when a constexpr flag says so): it comes back None and
the other outputs' gradients are right; a kernel that stores to it anyway fails with
an error, never a silent result. Interpreter (CPU)."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("tritonad")

from interpreter_util import run_interpreted  # noqa: E402

_SCRIPT = """
import json, torch, tritonad
from corpus.optional_outputs import scale_with_row_sums, scale_always_storing_sums

torch.manual_seed(0)
op = tritonad.autograd(scale_with_row_sums, outputs=("y_ptr", "sums_ptr"))
m, n = 7, 45
results = {}
for dtype in (torch.float32, torch.float64):
    x = torch.randn(m, n, dtype=dtype, requires_grad=True)
    y, sums = op[(m,)](x, torch.empty_like(x), None, n, BLOCK=64, STORE_SUMS=False)
    dy = torch.randn_like(y)
    y.backward(dy)
    ref = x.detach().clone().requires_grad_()
    (torch.sin(ref) * 1.5).backward(dy)
    without = [sums is None, float((x.grad - ref.grad).abs().max())]
    x.grad = None
    y, sums = op[(m,)](x, torch.empty_like(x), torch.empty(m, dtype=dtype), n, BLOCK=64,
                       STORE_SUMS=True)
    ds = torch.randn_like(sums)
    torch.autograd.backward([y, sums], [dy, ds])
    ref.grad = None
    r = torch.sin(ref) * 1.5
    torch.autograd.backward([r, (r * ref).sum(-1)], [dy, ds])
    results[str(dtype)] = without + [float((x.grad - ref.grad).abs().max())]
try:
    tritonad.autograd(scale_always_storing_sums, outputs=("y_ptr", "sums_ptr"))[(m,)](
        x, torch.empty_like(x), None, n, BLOCK=64)
    results["stores_anyway"] = "no error"
except Exception as error:  # noqa: BLE001
    results["stores_anyway"] = type(error).__name__
print(json.dumps(results))
"""


def test_an_output_passed_as_none():
    results = run_interpreted(_SCRIPT)
    for dtype in ("torch.float32", "torch.float64"):
        is_none, error_without, error_with = results[dtype]
        assert is_none
        bound = 1e-5 if dtype == "torch.float32" else 1e-12
        assert error_without < bound and error_with < bound, results[dtype]
    assert results["stores_anyway"] != "no error"
