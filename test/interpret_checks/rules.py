"""Every rule of the elementwise table (corpus/rules.py) as a kernel over a masked
range, in fp32 and fp64, and every rule through its VJP (tritonad.grad of a device
function) called from an interpreted kernel.
"""

import torch
import triton
import triton.language as tl

from interpret_checks import check
from interpreter_util import GEN, assert_close, jit_from_source, kernel_gradients, randn
from corpus import rules


_ELEMENTWISE_KERNEL = """
def {name}({inputs}, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
{loads}
    tl.store(Y + offs, f({args}), mask=mask)
"""


def _elementwise_cases():
    cases = []
    for case in rules.CASES:
        if case.id.startswith(("cumsum", "cumprod")):  # (along an axis: not elementwise)
            continue
        shapes = {a.shape for a in case.args}
        if shapes != {(rules.M, rules.N)}:
            continue
        out_shapes, out_dtypes = rules._outputs_meta(case)
        if len(out_shapes) != 1 or out_shapes[0] != (rules.M, rules.N):
            continue
        cases.append(case)
    return cases


def _elementwise_check(case, dtype):
    def run():
        n = rules.M * rules.N - 5
        names = [f"X{i}" for i in range(len(case.args))]
        source = _ELEMENTWISE_KERNEL.format(
            name=f"k_{case.id}", inputs=", ".join(names),
            loads="\n".join(f"    x{i} = tl.load(X{i} + offs, mask=mask, other=1.0)"
                            for i in range(len(names))),
            args=", ".join(f"x{i}" for i in range(len(names))))
        kernel = jit_from_source(source, f"k_{case.id}", {"tl": tl, "f": case.fn})
        inputs = {}
        for name, arg in zip(names, case.args):
            sample = rules._SAMPLERS[arg.domain]((n,), GEN)
            inputs[name] = sample.to(dtype if arg.dtype == torch.float32 else arg.dtype)
        out_dtype = rules._outputs_meta(case)[1][0]
        if out_dtype == torch.float32:
            out_dtype = dtype
        wide = dtype == torch.float64 and all(a.dtype == torch.float32 for a in case.args)
        tolerance = dict(rtol=1e-9, atol=1e-9) if wide else \
            dict(rtol=max(case.rtol, 1e-4), atol=max(case.atol, 1e-5))

        def reference(**xs):
            return {"Y": case.ref(*[xs[k] for k in names])}
        kernel_gradients(kernel, (triton.cdiv(n, 128),), inputs,
                         {"Y": torch.empty(n, dtype=out_dtype)}, {"n": n}, {"BLOCK": 128},
                         reference, **tolerance)
    return run


# Triton has no fp64 tl.div_rn / tl.sqrt_rn; tritonad has no rule for __nv_ddiv_rn.
_FP64_UNSUPPORTED = {"precise_divf", "precise_sqrt", "ld_fdiv_rn"}


for _case in _elementwise_cases():
    check(f"rule_{_case.id}_fp32")(_elementwise_check(_case, torch.float32))
    if all(a.dtype == torch.float32 for a in _case.args) and _case.id not in _FP64_UNSUPPORTED:
        check(f"rule_{_case.id}_fp64")(_elementwise_check(_case, torch.float64))


def _vjp_check(case):
    def run():
        built = rules._build(case.id)
        inputs = [arg.sample(GEN, "cpu") for arg in case.args]
        cotangents = [randn(*shape, dtype=dtype)
                      for shape, dtype in zip(built.out_shapes, built.out_dtypes)]
        grads = [torch.full_like(x, float("nan")) for x in inputs]
        built.kernel[(1,)](*inputs, *cotangents, *grads)
        leaves = [x.detach().double().requires_grad_() for x in inputs]
        outs = case.ref(*leaves)
        outs = outs if isinstance(outs, tuple) else (outs,)
        expected = torch.autograd.grad(outs, leaves, [c.double() for c in cotangents],
                                       allow_unused=True)
        for i, (got, want, x) in enumerate(zip(grads, expected, inputs)):
            want = torch.zeros_like(x, dtype=torch.float64) if want is None else want
            # (the interpreter computes tl.dot exactly, whatever its input precision)
            tolerance = dict(rtol=max(case.rtol, 1e-4), atol=max(case.atol, 1e-5))
            if "tf32" in case.id:
                tolerance = dict(rules.IEEE)
            assert_close(f"argument {i}", got, want, **tolerance)
    return run


# Triton 3.6's interpreter computes a bf16 tl.dot wrongly (plain Triton, without tritonad)
_VJP_INTERPRETER_BROKEN = {"dot_bf16"}


for _case in rules.CASES:
    if _case.id not in _VJP_INTERPRETER_BROKEN:
        check(f"vjp_{_case.id}")(_vjp_check(_case))
