"""Minimized fuzz cases that once gave a silently wrong gradient, kept as regression tests.

Each entry is the complete module text `run.py` printed for a minimized case (the kernel,
its torch `reference` and META); test_fuzz.py runs every entry on the GPU and expects
`match`. To add one: copy the module text printed after "=== minimizing seed ..."
into CASES under a name saying what went wrong, e.g.

    CASES["loop_max_running_store_dx_zero"] = '''<module text>'''

Run them alone with `python3 test/fuzz/run.py --regressions`; test_fuzz.py also runs them
on the CPU in the interpreter (--interpret-grad: fp32 / fp16 cases). A case tritonad still
gets wrong is listed in KNOWN_FAILURES: (the reason, the modes where it fails); its test
there is an xfail(strict=True), which fails as soon as the case matches (then remove it
from KNOWN_FAILURES).
"""

CASES = {}
KNOWN_FAILURES = {}

# pad_inf (seed 160, minimized by hand from the interpreter's minimization): softmax(x) * x
# over a row padded with -inf is 0 * -inf = NaN on the masked lanes; a unary op of it
# (sigmoid here; sin and exp alike, products and sums are fine) has the partial
# sigmoid'(NaN) = NaN there, times the masked store's zero adjoint, NaN, which the
# adjoints of the row's sum and max carried into every lane: dx was NaN, torch's finite
# (fixed: such partials are guarded, test/test_padding.py and lit padding.mlir).
CASES["pad_inf_softmax_times_x_then_sigmoid_nan"] = '''# tritonad fuzz case: seed 160, layout flat, dtype fp32
# features: flat mask_tail pad_inf sigmoid
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

import fuzz_ref as R

META = {
    'name': 'fuzz_kernel_160',
    'layout': 'flat',
    'dtype': 'fp32',
    'grid': [2],
    'constexprs': {'BLOCK': 64},
    'params': [
        {'name': 'y0_ptr', 'kind': 'ptr', 'role': 'out', 'shape': [101], 'view': ['full'], 'domain': None},
        {'name': 'x0_ptr', 'kind': 'ptr', 'role': 'in', 'shape': [101], 'view': ['full'], 'domain': 'any'},
        {'name': 'n', 'kind': 'i32', 'value': 101},
    ],
    'sizes': {'BLOCK': 64, 'n': 101},
    'seed': 160,
    'features': ['flat', 'mask_tail', 'pad_inf', 'sigmoid'],
}

@triton.jit
def fuzz_kernel_160(y0_ptr, x0_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x0p = tl.load(x0_ptr + offs, mask=mask, other=-float("inf")).to(tl.float32)
    t1 = tl.max(x0p, axis=0)
    t2 = tl.exp(x0p - t1)
    t3 = tl.sum(t2, axis=0)
    t4 = t2 / t3
    t5 = t4 * x0p
    t6 = tl.sigmoid(t5)
    tl.store(y0_ptr + offs, t6.to(tl.float32), mask=mask)


def reference(T, S, ctx):
    _like = T['x0_ptr']
    W = R.ones((101,), _like)
    P = R.pids((101,), (64,), _like)   # which program writes each element
    x0p = R.load(ctx, T, 'x0_ptr', ('full',))
    t1 = R.reduce(x0p, (64,), (0,), 'max', ctx, 'pad max')
    t2 = torch.exp(x0p - t1)
    t3 = R.reduce(t2, (64,), (0,), 'sum', ctx, 'pad sum')
    t4 = t2 / t3
    t5 = t4 * x0p
    t6 = torch.sigmoid(t5)
    return {'y0_ptr': (t6, W, P)}


kernel = fuzz_kernel_160
'''

# heuristics + launch_kw_name (seeds 14, 128, 256 on an H100): bwd.forward (what
# tritonad.autograd launches) of a @triton.heuristics kernel whose heuristic sets a
# constexpr before one named like a launch keyword (num_warps) raises
# "TypeError: dynamic_func() missing 1 required positional argument: 'num_warps'"
# (tritonad's positional launch stopped at the constexpr the heuristic fills; fixed:
# the parameters after it go by name, test_contract_checks.py checks the class).
CASES["heuristics_then_num_warps_constexpr_bwd_forward"] = '''# tritonad fuzz case: seed 14, layout flat, dtype fp32
# features: flat heuristics launch_kw_name mask_tail
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

import fuzz_ref as R

META = {
    'name': 'fuzz_kernel_14',
    'layout': 'flat',
    'dtype': 'fp32',
    'grid': [2],
    'constexprs': {'BLOCK': 64, 'num_warps': 4},
    'params': [
        {'name': 'y0_ptr', 'kind': 'ptr', 'role': 'out', 'shape': [100], 'view': ['full'], 'domain': None},
        {'name': 'x0_ptr', 'kind': 'ptr', 'role': 'in', 'shape': [100], 'view': ['full'], 'domain': 'any'},
        {'name': 'n', 'kind': 'i32', 'value': 100},
    ],
    'sizes': {'BLOCK': 64, 'n': 100},
    'seed': 14,
    'features': ['flat', 'heuristics', 'launch_kw_name', 'mask_tail'],
    'heuristics': ['BLOCK'],
    'launch_constexprs': {'num_warps': 4},
}

def launch_grid(META):
    return (triton.cdiv(100, META['BLOCK']),)


@triton.heuristics({'BLOCK': lambda args: min(64, triton.next_power_of_2(args["n"]))})
@triton.jit
def fuzz_kernel_14(y0_ptr, x0_ptr, n, BLOCK: tl.constexpr, num_warps: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x0 = tl.load(x0_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    t1 = tl.sum(tl.where(mask, x0 * x0, 0.0), axis=0) * 0.015625
    o2 = (x0 * t1) * (num_warps * 0.25)
    tl.store(y0_ptr + offs, o2.to(tl.float32), mask=mask)


def reference(T, S, ctx):
    _like = T['x0_ptr']
    W = R.ones((100,), _like)
    P = R.pids((100,), (64,), _like)   # which program writes each element
    x0 = R.load(ctx, T, 'x0_ptr', ('full',))
    t1 = R.reduce(x0 * x0, (64,), (0,), 'sum', ctx, 'tl.sum') * 0.015625
    o2 = (x0 * t1) * 1.0
    return {'y0_ptr': (o2, W, P)}


kernel = fuzz_kernel_14
'''

# pad_dot (seed 383 in the interpreter, minimized): a dot's b0 tile whose masked columns
# load NaN; the product's masked lanes are dropped by tl.where(mask, ., 0), whose adjoint
# is 0 there, and the dot's adjoint da = g x b0^T met 0 * NaN: da0 was NaN in every lane,
# torch's finite (fixed: the padded operand is zeroed along the adjoint's all-zero lines
# of g, test/test_padding.py padded_scores* and lit padding-dot.mlir).
CASES["pad_dot_nan_columns_da_nan"] = '''# tritonad fuzz case: seed 383, layout grid2d, dtype fp32
# features: dot grid2d mask_tail pad_dot
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

import fuzz_ref as R

META = {
    'name': 'fuzz_kernel_383',
    'layout': 'grid2d',
    'dtype': 'fp32',
    'grid': [1, 1],
    'constexprs': {'BM': 16, 'BN': 16, 'BK': 16},
    'params': [
        {'name': 'x1_ptr', 'kind': 'ptr', 'role': 'in', 'shape': [1, 2], 'view': ['cols', 2], 'domain': 'any'},
        {'name': 'y0_ptr', 'kind': 'ptr', 'role': 'out', 'shape': [1, 2], 'view': ['cols', 2], 'domain': None},
        {'name': 'x0_ptr', 'kind': 'ptr', 'role': 'in', 'shape': [1, 2], 'view': ['cols', 2], 'domain': 'any'},
        {'name': 'b0_ptr', 'kind': 'ptr', 'role': 'in', 'shape': [16, 2], 'view': ['cols', 2], 'domain': 'pos'},
        {'name': 'a0_ptr', 'kind': 'ptr', 'role': 'in', 'shape': [1, 16], 'view': ['cols', 16], 'domain': 'pos'},
        {'name': 'stride_x0', 'kind': 'i32', 'value': 2},
        {'name': 'stride_x1', 'kind': 'i32', 'value': 2},
        {'name': 'M', 'kind': 'i32', 'value': 1},
        {'name': 'N', 'kind': 'i32', 'value': 2},
        {'name': 'stride_a0', 'kind': 'i32', 'value': 16},
        {'name': 'stride_b0', 'kind': 'i32', 'value': 2},
        {'name': 'stride_y0', 'kind': 'i32', 'value': 2},
    ],
    'sizes': {'BM': 16, 'BN': 16, 'M': 1, 'N': 2, 'BK': 16},
    'seed': 383,
    'features': ['dot', 'grid2d', 'mask_tail', 'pad_dot'],
}

@triton.jit
def fuzz_kernel_383(x1_ptr, y0_ptr, x0_ptr, b0_ptr, a0_ptr, stride_x0, stride_x1, M, N, stride_a0, stride_b0, stride_y0, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x0 = tl.load(x0_ptr + rm[:, None] * stride_x0 + rn[None, :], mask=mask, other=1.0).to(tl.float32)
    x1 = tl.load(x1_ptr + rm[:, None] * stride_x1 + rn[None, :], mask=mask, other=1.0).to(tl.float32)
    rk = tl.arange(0, BK)
    a0 = tl.load(a0_ptr + rm[:, None] * stride_a0 + rk[None, :], mask=(rm < M)[:, None], other=0.0)
    b0 = tl.load(b0_ptr + rk[:, None] * stride_b0 + rn[None, :], mask=(rn < N)[None, :], other=float("nan"))
    t1 = tl.where(mask, tl.dot(a0, b0, input_precision="ieee"), 0.0) * 0.0625
    t2 = t1 + -1.00515
    t3 = t2 + x0 * 0.5
    t4 = t3 + x1 * 0.5
    t5 = t4 + t1 * 0.5
    tl.store(y0_ptr + rm[:, None] * stride_y0 + rn[None, :], t5.to(tl.float32), mask=mask)


def reference(T, S, ctx):
    _like = T['x0_ptr']
    W = R.ones((1, 2), _like)
    P = R.pids((1, 2), (16, 16), _like)   # which program writes each element
    x0 = R.load(ctx, T, 'x0_ptr', ('cols', 2))
    x1 = R.load(ctx, T, 'x1_ptr', ('cols', 2))
    a0 = R.load(ctx, T, 'a0_ptr', ('cols', 16))
    b0 = R.load(ctx, T, 'b0_ptr', ('cols', 2))
    t1 = R.dot(ctx, a0, b0) * 0.0625
    t2 = t1 + -1.00515
    t3 = t2 + x0 * 0.5
    t4 = t3 + x1 * 0.5
    t5 = t4 + t1 * 0.5
    return {'y0_ptr': (t5, W, P)}


kernel = fuzz_kernel_383

'''
