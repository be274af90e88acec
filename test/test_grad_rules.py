"""Numeric tests of every derivative rule: tritonad.grad against torch.autograd.

Table-driven (the table is test/corpus/rules.py): each `Case` names a pure @triton.jit function `f`, the shapes,
dtypes and domains of its arguments, the same math in torch (`ref`), and the ops
its derivative must contain. From a case we generate one backward kernel

    def kernel(X0, X1, ..., G0, ..., D0, D1, ...):
        x0 = tl.load(X0 + offsets)         # every argument, one tile each
        g0 = tl.load(G0 + offsets)         # one random cotangent per output
        d0, d1 = f_vjp(x0, x1, ..., g0)    # f_vjp = tritonad.grad(f)
        tl.store(D0 + offsets, d0)         # every gradient

and run two tests:

* ``test_rule_matches_torch[case]`` (marked ``gpu``): launches the kernel on fresh
  random inputs in the rule's domain and compares the gradients with
  ``torch.autograd.grad`` of ``ref`` (float32 math, or the case's fp16/bf16
  dtypes). Skipped without CUDA.
* ``test_rule_compiles_to_ptx[case]`` (CPU, what CI runs): compiles the same
  kernel for sm_90 through Triton's whole pipeline down to PTX and checks the
  derivative was materialized: ``f_vjp.derived_ir()`` exists and contains the
  rule's characteristic ops.

Tolerances: fp32 elementwise 1e-5 (GPU approximations of exp/log/sin... are
within a few ulp), libdevice compositions 1e-4, ieee tl.dot 1e-4, tf32 tl.dot
5e-2 absolute (10-bit mantissa, K = 32..64), fp16/bf16 about 1e-2.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from corpus.rules import CASES, Case, _build, _seed  # noqa: E402
from gpu_util import requires_gpu  # noqa: E402


def _params():
    return [pytest.param(c, id=c.id, marks=list(c.marks)) for c in CASES]


# ---------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("case", _params())
def test_rule_compiles_to_ptx(case: Case, always_compile):
    built = _build(case.id)
    compiled = triton.compile(ASTSource(built.kernel, built.signature, {}),
                              target=GPUTarget("cuda", 90, 32))
    assert ".entry" in compiled.asm["ptx"], "no PTX kernel entry"
    derived = built.vjp.derived_ir()
    assert derived is not None, "tritonad did not derive the VJP (stage hook not run?)"
    missing = [op for op in case.expect if op not in derived]
    assert not missing, f"derivative lacks {missing}:\n{derived}"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("case", _params())
def test_rule_matches_torch(case: Case):
    built = _build(case.id)
    generator = torch.Generator().manual_seed(_seed(case))
    inputs = [arg.sample(generator, "cuda") for arg in case.args]
    cotangents = [torch.randn(shape, generator=generator).to(dtype).to("cuda")
                  for shape, dtype in zip(built.out_shapes, built.out_dtypes)]

    leaves = [x.detach().clone().requires_grad_(True) for x in inputs]
    outs = case.ref(*leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    expected = torch.autograd.grad(outs, leaves, cotangents, allow_unused=True)
    expected = [torch.zeros_like(x) if e is None else e for x, e in zip(inputs, expected)]

    grads = [torch.full_like(x, float("nan")) for x in inputs]
    built.kernel[(1,)](*inputs, *cotangents, *grads)
    torch.cuda.synchronize()
    for i, (got, want) in enumerate(zip(grads, expected)):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=case.rtol, atol=case.atol,
                                   msg=lambda m, i=i: f"{case.id}: gradient of argument {i}: {m}")
