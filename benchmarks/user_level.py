"""What a user pays for a backward: GPU time of everything `loss.backward()` launches.

For five workloads -- GELU 16M, SwiGLU 16M (y = silu(a) * b), softmax 4096x4096,
layer norm 4096x4096 (dX, dW, dB), RMSNorm 4096x4096 (dX, dW) -- each in fp32 and
bf16 (the forward kernels of benchmarks/bench.py load in the storage dtype, compute
in fp32 and store in the output's dtype), the backward through

  tritonad   tritonad.autograd(forward kernel) -- derived kernel(s), plus the bridge's
             allocations, fills, copies and partial-buffer sums
  hand       the hand-written Triton backward of benchmarks/bench.py (fp32 math, fp32
             partial buffers), launched as a torch.autograd.Function would (fresh
             output buffers)
  eager      torch autograd on the torch reference
  compile    torch.compile of the torch reference (its generated backward)

is first checked: the gradients of tritonad and of the hand-written kernels against
torch.autograd of the reference in fp64 (max abs error <= 1e-4 (fp32) or 2e-2 (bf16)
times the largest reference gradient, in the input's dtype, finite). A wrong backward
is reported as CHECK FAILED, is not timed, and the script exits with status 1.
tritonad's backward is run 3 times: "deterministic" says whether the gradients are
bitwise identical (torch.equal). "atomics" counts the `tt.atomic_rmw` instructions in
the derived kernel (static count: an atomic in a run-time branch that is not taken,
e.g. dX's for overlapping rows, still counts).

Then the four are run a few times, and ITERS iterations are profiled with the torch
profiler: the GPU time is the sum of the device time of every CUDA event (kernels,
copies, fills) divided by ITERS (see ../shared/notes/measuring.md); the wall time is
triton.testing.do_bench of the same call. One table, side by side, per run.

    python3 benchmarks/user_level.py [--out FILE]
                                     [--only gelu,rms] [--dtypes fp32,bf16]
    python3 benchmarks/user_level.py --compile-only   # no GPU: compile every kernel
                                                      # (forward, hand, derived) for sm_90
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (forward kernels and hand-written backward kernels)

import tritonad  # noqa: E402

import torch._functorch.config  # noqa: E402

torch._functorch.config.donated_buffer = False  # time a compiled backward repeatedly
ITERS = 20
DETERMINISM_RUNS = 3
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
# max abs error allowed, relative to the largest reference gradient
TOL = {torch.float32: 1e-4, torch.bfloat16: 2e-2}
EW_BLOCK = 1024  # GELU, SwiGLU: elements per program
DEVICE = "cuda"
F = torch.nn.functional


# ---------------------------------------------------------------------------
# Workloads
# ---------------------------------------------------------------------------

@dataclass
class Workload:
    """One (workload, dtype): the tritonad forward already run (y carries the grad_fn)."""
    op: object                              # tritonad.autograd(...) of the forward kernel
    inputs: List[torch.Tensor]              # leaves that get gradients
    grad_names: List[str]
    y: torch.Tensor                         # tritonad's forward output
    hand: Callable[[torch.Tensor], tuple]   # dy -> gradients (hand-written Triton)
    ref: Callable[..., torch.Tensor]        # torch reference (for eager, compile, fp64 check)


@dataclass
class Spec:
    """A workload's kernels, for the GPU run and for --compile-only."""
    name: str
    make: Callable[..., Workload]           # make(spec, dtype) -> Workload
    fwd: object                             # forward kernel
    outputs: Sequence[str]
    wrt: Optional[Sequence[str]]
    # --compile-only: (kernel, {param: type, with P for the storage dtype}, constexprs,
    # num_warps) for the forward and every hand-written kernel; the forward first
    kernels: list = field(default_factory=list)
    none_shadows: Sequence[str] = ()        # shadows autograd passes as None


def randn(*shape, dtype, requires_grad=False):
    return torch.randn(*shape, device=DEVICE, dtype=dtype, requires_grad=requires_grad)


def fp32_empty(*shape):
    """Statistics and partial sums are kept in fp32 whatever the storage dtype."""
    return torch.empty(*shape, device=DEVICE, dtype=torch.float32)


def autograd_op(spec: Spec):
    kwargs = {} if spec.wrt is None else {"wrt": list(spec.wrt)}
    return tritonad.autograd(spec.fwd, outputs=tuple(spec.outputs), **kwargs)


def size(n: int) -> str:
    return f"{n >> 20}M" if n % (1 << 20) == 0 else str(n)


def n_groups(m: int) -> int:
    """Rows of the hand-written partial buffers: two programs per SM (as tritonad's)."""
    return min(m, 2 * torch.cuda.get_device_properties(0).multi_processor_count)


def gelu_make(spec, dtype, n):
    x = randn(n, dtype=dtype, requires_grad=True)
    op = autograd_op(spec)
    grid = (triton.cdiv(n, EW_BLOCK),)
    y = op[grid](x, torch.empty_like(x), n, BLOCK=EW_BLOCK)
    xd = x.detach()

    def hand(dy):
        dx = torch.empty_like(xd)
        bench.gelu_bwd_hand[grid](xd, dy, dx, n, BLOCK=EW_BLOCK)
        return (dx,)
    return Workload(op, [x], ["dx"], y, hand, lambda t: F.gelu(t))


def swiglu_make(spec, dtype, n):
    a = randn(n, dtype=dtype, requires_grad=True)
    b = randn(n, dtype=dtype, requires_grad=True)
    op = autograd_op(spec)
    grid = (triton.cdiv(n, EW_BLOCK),)
    y = op[grid](a, b, torch.empty_like(a), n, BLOCK=EW_BLOCK)
    ad, bd = a.detach(), b.detach()

    def hand(dy):
        da, db = torch.empty_like(ad), torch.empty_like(bd)
        bench.swiglu_bwd_hand[grid](ad, bd, dy, da, db, n, BLOCK=EW_BLOCK)
        return da, db
    return Workload(op, [a, b], ["da", "db"], y, hand, lambda s, t: F.silu(s) * t)


def softmax_make(spec, dtype, m, n):
    x = randn(m, n, dtype=dtype, requires_grad=True)
    op = autograd_op(spec)
    block, nw = bench.row_block(n)
    y = op[(m,)](torch.empty_like(x), x, x.stride(0), x.stride(0), n, BLOCK_N=block,
                 num_warps=nw)
    yd = y.detach()

    def hand(dy):
        dx = torch.empty_like(yd)
        bench.softmax_bwd_hand[(m,)](dx, yd, dy, yd.stride(0), n, BLOCK_N=block, num_warps=nw)
        return (dx,)
    return Workload(op, [x], ["dx"], y, hand, lambda t: torch.softmax(t, -1))


def layernorm_make(spec, dtype, m, n):
    x = randn(m, n, dtype=dtype, requires_grad=True)
    w = randn(n, dtype=dtype, requires_grad=True)
    b = randn(n, dtype=dtype, requires_grad=True)
    op = autograd_op(spec)
    block, nw = bench.row_block(n)
    # mean and rstd are kept in fp32 whatever the storage dtype
    mean = fp32_empty(m)
    rstd = fp32_empty(m)
    y = op[(m,)](x, torch.empty_like(x), w, b, mean, rstd, x.stride(0), n, bench.LN_EPS,
                 BLOCK_N=block, num_warps=nw)
    xd, wd = x.detach(), w.detach()
    groups = n_groups(m)

    def hand(dy):
        dx = torch.empty_like(xd)
        pdw, pdb = fp32_empty(groups, n), fp32_empty(groups, n)
        dw, db = torch.empty_like(wd), torch.empty_like(wd)
        bench.layernorm_bwd_hand_dx[(groups,)](xd, dy, dx, wd, mean, rstd, pdw, pdb,
                                               xd.stride(0), m, n, groups, BLOCK_N=block,
                                               num_warps=nw)
        bench.layernorm_bwd_hand_dwdb[(triton.cdiv(n, bench.LN_BLOCK_C),)](
            pdw, pdb, dw, db, groups, n, BLOCK_G=bench.LN_BLOCK_G, BLOCK_C=bench.LN_BLOCK_C)
        return dx, dw, db
    ref = lambda t, ww, bb: F.layer_norm(t, (n,), ww, bb, bench.LN_EPS)  # noqa: E731
    return Workload(op, [x, w, b], ["dx", "dw", "db"], y, hand, ref)


def rms_norm_ref(n):
    if hasattr(F, "rms_norm"):
        return lambda t, ww: F.rms_norm(t, (n,), ww, bench.LN_EPS)

    def ref(t, ww):  # (older torch) fp32 math, rounded once, as the kernel does
        t32 = t.float()
        y = t32 * torch.rsqrt(t32.pow(2).mean(-1, keepdim=True) + bench.LN_EPS) * ww.float()
        return y.to(t.dtype)
    return ref


def rmsnorm_make(spec, dtype, m, n):
    x = randn(m, n, dtype=dtype, requires_grad=True)
    w = randn(n, dtype=dtype, requires_grad=True)
    op = autograd_op(spec)
    block, nw = bench.row_block(n)
    rstd = fp32_empty(m)
    y = op[(m,)](x, torch.empty_like(x), w, rstd, x.stride(0), n, bench.LN_EPS,
                 BLOCK_N=block, num_warps=nw)
    xd, wd = x.detach(), w.detach()
    groups = n_groups(m)

    def hand(dy):
        dx = torch.empty_like(xd)
        pdw = fp32_empty(groups, n)
        dw = torch.empty_like(wd)
        bench.rmsnorm_bwd_hand_dx[(groups,)](xd, dy, dx, wd, rstd, pdw, xd.stride(0), m, n,
                                             groups, BLOCK_N=block, num_warps=nw)
        bench.rmsnorm_bwd_hand_dw[(triton.cdiv(n, bench.LN_BLOCK_C),)](
            pdw, dw, groups, n, BLOCK_G=bench.LN_BLOCK_G, BLOCK_C=bench.LN_BLOCK_C)
        return dx, dw
    return Workload(op, [x, w], ["dx", "dw"], y, hand, rms_norm_ref(n))


def specs(n_ew: int = 16 << 20, m: int = 4096, n: int = 4096) -> List[Spec]:
    block, nw = bench.row_block(n)
    P, F32, I = "P", "*fp32", "i32"  # P: a pointer to the storage dtype
    ew = dict(BLOCK=EW_BLOCK)
    rows = dict(BLOCK_N=block)
    cols = dict(BLOCK_G=bench.LN_BLOCK_G, BLOCK_C=bench.LN_BLOCK_C)
    return [
        Spec(f"GELU {size(n_ew)}", functools.partial(gelu_make, n=n_ew),
             bench.gelu_fwd, outputs=("y_ptr",), wrt=None, kernels=[
                 (bench.gelu_fwd, dict(x_ptr=P, y_ptr=P, n=I), ew, 4),
                 (bench.gelu_bwd_hand, dict(x_ptr=P, dy_ptr=P, dx_ptr=P, n=I), ew, 4)]),
        Spec(f"SwiGLU {size(n_ew)}", functools.partial(swiglu_make, n=n_ew),
             bench.swiglu_fwd, outputs=("y_ptr",), wrt=None, kernels=[
                 (bench.swiglu_fwd, dict(a_ptr=P, b_ptr=P, y_ptr=P, n=I), ew, 4),
                 (bench.swiglu_bwd_hand,
                  dict(a_ptr=P, b_ptr=P, dy_ptr=P, da_ptr=P, db_ptr=P, n=I), ew, 4)]),
        Spec(f"softmax {m}x{n}", functools.partial(softmax_make, m=m, n=n),
             bench.softmax_fwd, outputs=("y_ptr",), wrt=None, kernels=[
                 (bench.softmax_fwd,
                  dict(y_ptr=P, x_ptr=P, x_stride=I, y_stride=I, n_cols=I), rows, nw),
                 (bench.softmax_bwd_hand,
                  dict(dx_ptr=P, y_ptr=P, dy_ptr=P, stride=I, n_cols=I), rows, nw)]),
        Spec(f"layer norm {m}x{n}", functools.partial(layernorm_make, m=m, n=n),
             bench.layernorm_fwd, outputs=("Y",), wrt=("X", "W", "B"), kernels=[
                 (bench.layernorm_fwd, dict(X=P, Y=P, W=P, B=P, Mean=F32, Rstd=F32, stride=I,
                                            N=I, eps="fp32"), rows, nw),
                 (bench.layernorm_bwd_hand_dx,
                  dict(X=P, DY=P, DX=P, W=P, Mean=F32, Rstd=F32, PDW=F32, PDB=F32, stride=I,
                       M=I, N=I, n_groups=I), rows, nw),
                 (bench.layernorm_bwd_hand_dwdb,
                  dict(PDW=F32, PDB=F32, DW=P, DB=P, n_groups=I, N=I), cols, 4)],
             none_shadows=("dMean", "dRstd")),
        Spec(f"RMSNorm {m}x{n}", functools.partial(rmsnorm_make, m=m, n=n),
             bench.rmsnorm_fwd, outputs=("Y",), wrt=("X", "W"), kernels=[
                 (bench.rmsnorm_fwd,
                  dict(X=P, Y=P, W=P, Rstd=F32, stride=I, N=I, eps="fp32"), rows, nw),
                 (bench.rmsnorm_bwd_hand_dx,
                  dict(X=P, DY=P, DX=P, W=P, Rstd=F32, PDW=F32, stride=I, M=I, N=I,
                       n_groups=I), rows, nw),
                 (bench.rmsnorm_bwd_hand_dw, dict(PDW=F32, DW=P, n_groups=I, N=I), cols, 4)],
             none_shadows=("dRstd",)),
    ]


# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------

def compare(label, names, got, want, dtype) -> List[str]:
    """Prints one line per gradient; returns the names of the failing ones."""
    tol = TOL[dtype]
    bad = []
    for name, g, r in zip(names, got, want):
        scale = r.abs().max().item()
        err = (g.double() - r).abs().max().item()
        finite = bool(torch.isfinite(g).all())
        ok = (g.dtype == dtype and g.shape == r.shape and finite and err <= tol * scale)
        why = "" if ok else (f" (dtype {g.dtype})" if g.dtype != dtype else
                             f" (shape {tuple(g.shape)})" if g.shape != r.shape else
                             " (non-finite values)" if not finite else "")
        print(f"    {name}: {label:<8} vs torch fp64: max abs err {err:.2e}, max |ref| "
              f"{scale:.2e}, tol {tol:g}*max|ref| {'ok' if ok else 'MISMATCH' + why}")
        if not ok:
            bad.append(f"{label} {name}")
    return bad


def reference_grads(ref, inputs, dy):
    leaves = [t.detach().double().requires_grad_(True) for t in inputs]
    return torch.autograd.grad(ref(*leaves), leaves, dy.double())


def atomics_of(op) -> Optional[int]:
    ir = op.backward_kernel.derived_ir()
    return None if ir is None else ir.count("tt.atomic_rmw")


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------

def gpu_time_us(fn, iters=ITERS):
    """(GPU us per call, {kernel name: us per call}) from the torch profiler."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    total, parts = 0.0, collections.Counter()
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        us = getattr(event, "device_time", None)
        if us is None:
            us = event.cuda_time
        total += us
        parts[event.name[:60]] += us / iters
    return total / iters, dict(parts)


def wall_us(fn):
    return triton.testing.do_bench(fn, warmup=5, rep=50) * 1000.0


def top(parts, n=4):
    """The n kernels that take the most GPU time, as "name us, name us, ..."."""
    return ", ".join(f"{k} {v:.1f}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])[:n])


def finish(text, out_path, failures, start) -> int:
    """Prints the report (and writes it to out_path if given); the exit code: 1 when a
    check failed. Shared with benchmarks/loops.py."""
    print()
    print(text)
    print(f"(run took {time.perf_counter() - start:.0f} s)")
    if out_path:
        with open(out_path, "w") as f:
            f.write(text)
    if failures:
        print("CHECKS FAILED:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    return 0


def run_spellings(parser, describe, measure, report) -> int:
    """The command line of a benchmark of spellings (matmul_spellings.py,
    attention_spellings.py): --describe (CPU) prints `describe(opts)`; otherwise
    every row `measure(opts)` checks and times, reported by `report(results,
    failures, opts, seconds)`; the exit code as finish's."""
    opts = parser.parse_args()
    if opts.describe:
        return describe(opts)
    start = time.perf_counter()
    results, failures = measure(opts)
    return finish(report(results, failures, opts, time.perf_counter() - start), opts.out,
                  failures, start)


def autograd_call(outputs, inputs, dy):
    def call():
        torch.autograd.grad(outputs, inputs, dy, retain_graph=True)
    return call


def torch_calls(ref, inputs, dy):
    """(eager call, compiled call, compiled gradients) on copies of the inputs."""
    leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
    eager = autograd_call([ref(*leaves)], leaves, dy)
    compiled_ref = torch.compile(ref, dynamic=False)
    leaves2 = [t.detach().clone().requires_grad_(True) for t in inputs]
    out2 = compiled_ref(*leaves2)
    compiled = autograd_call([out2], leaves2, dy)
    return eager, compiled, torch.autograd.grad(out2, leaves2, dy, retain_graph=True)


def run_one(spec: Spec, dtype_name: str, failures: List[str]):
    """Checks, then times, one (workload, dtype); returns (row, breakdowns) or None."""
    dtype = DTYPES[dtype_name]
    label = f"{spec.name} {dtype_name}"
    print(f"\n== {label}", flush=True)
    w = spec.make(spec, dtype)
    dy = torch.randn_like(w.y)
    with torch.no_grad():
        y_ref = w.ref(*[t.detach().double() for t in w.inputs])
    bad = compare("forward", ["y"], [w.y.detach()], [y_ref], dtype)
    want = reference_grads(w.ref, w.inputs, dy)
    runs = [torch.autograd.grad(w.y, w.inputs, dy, retain_graph=True)
            for _ in range(DETERMINISM_RUNS)]
    bad += compare("tritonad", w.grad_names, runs[0], want, dtype)
    bad += compare("hand", w.grad_names, w.hand(dy), want, dtype)
    deterministic = all(torch.equal(a, b) for run in runs[1:] for a, b in zip(runs[0], run))
    atomics = atomics_of(w.op)
    print(f"  tritonad: {atomics} tt.atomic_rmw in the derived kernel; {DETERMINISM_RUNS} "
          f"runs {'bitwise identical' if deterministic else 'DIFFER'}")
    schedule = w.op.backward_kernel.schedule()
    for line in sorted((schedule or "(no schedule reported)").splitlines()):
        print(f"    {line}")
    eager, compiled, compiled_grads = torch_calls(w.ref, w.inputs, dy)
    # (the baselines' own error, for information: not a failure)
    tol = TOL[dtype]
    errs = ", ".join(f"{n} {(g.double() - r).abs().max().item() / r.abs().max().item():.1e}"
                     for n, g, r in zip(w.grad_names, compiled_grads, want))
    print(f"    compile vs torch fp64 (information, tol {tol:g}): max abs err / max|ref|: {errs}")
    if bad:
        failures.append(f"{label}: {', '.join(bad)}")
        print(f"  CHECK FAILED ({', '.join(bad)}): not timed", flush=True)
        return None
    times, breakdowns = {}, []
    for who, fn in (("tritonad", autograd_call([w.y], w.inputs, dy)),
                    ("hand", lambda: w.hand(dy)), ("eager", eager), ("compile", compiled)):
        gpu, parts = gpu_time_us(fn)
        times[who] = (gpu, wall_us(fn))
        breakdowns.append((label, who, parts))
    print("  GPU us: " + ", ".join(f"{k} {v[0]:.1f}" for k, v in times.items()), flush=True)
    return (spec.name, dtype_name, times, atomics, deterministic), breakdowns


def measure(chosen: List[Spec], dtype_names: List[str]):
    """Checks, then times, every (spec, dtype): (rows, breakdowns, failures). A row is
    (name, dtype name, {who: (GPU us, wall us)}, atomics, deterministic) for who in
    tritonad, hand, eager, compile; a (spec, dtype) that failed has no row and a line in
    failures. Used by main and benchmarks/results.py."""
    torch.manual_seed(0)
    rows, breakdowns, failures = [], [], []
    for spec in chosen:
        for dtype_name in dtype_names:
            try:
                result = run_one(spec, dtype_name, failures)
            except Exception as error:  # noqa: BLE001  (e.g. a kernel that fails to derive)
                traceback.print_exc()
                failures.append(f"{spec.name} {dtype_name}: {type(error).__name__}: {error}")
                print(f"  FAILED: {type(error).__name__}: {error}", flush=True)
                result = None
            if result is not None:
                rows.append(result[0])
                breakdowns += result[1]
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    return rows, breakdowns, failures


# ---------------------------------------------------------------------------
# --compile-only: every kernel for sm_90, on any machine
# ---------------------------------------------------------------------------

def compile_only(chosen: List[Spec], dtype_names: List[str]) -> int:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from tritonad._partial import WORKSPACE_TYPES
    from tritonad._residuals import RESIDUALS

    target = GPUTarget("cuda", 90, 32)
    ptr = {"fp32": "*fp32", "bf16": "*bf16"}

    def build(fn, types, constexprs, nw, label):
        signature = {name: "constexpr" if name in constexprs else types[name]
                     for name in fn.arg_names}
        compiled = triton.compile(ASTSource(fn, signature, dict(constexprs)), target=target,
                                  options={"num_warps": nw})
        print(f"  {label:<48} {len(compiled.asm['cubin']):>7} bytes cubin")

    failed = []
    print(f"Compiling for {target} (no launch):")
    for spec in chosen:
        for dtype_name in dtype_names:
            P = ptr[dtype_name]
            for fn, types, constexprs, nw in spec.kernels:
                types = {k: P if v == "P" else v for k, v in types.items()}
                label = f"{fn.__name__} {dtype_name}"
                bench.attempt(label, failed, lambda: build(fn, types, constexprs, nw, label))
            # the derived backward, as tritonad.autograd launches it: accumulate=False,
            # its wrt=, workspace of partial buffers, None for shadows with no gradient
            fwd, types, constexprs, nw = spec.kernels[0]
            types = {k: P if v == "P" else v for k, v in types.items()}
            op = autograd_op(spec)
            bwd = op.backward_kernel
            types.update(WORKSPACE_TYPES, **{RESIDUALS: "*i8"})  # (as the bridge launches it)
            for pointer, shadow in bwd.shadows.items():
                types[shadow] = types[pointer]
            label = f"tritonad.autograd({fwd.__name__}) {dtype_name}"

            def build_derived():
                build(bwd, types, bench.with_none_shadows(constexprs, spec.none_shadows), nw,
                      label)
                ir = bwd.derived_ir()
                atomics = "n/a" if ir is None else ir.count("tt.atomic_rmw")
                print(f"    atomics (tt.atomic_rmw): {atomics}; "
                      f"partial shadows: {bwd.partial_shadows()}")
                print("    schedule: " + "\n              ".join(
                    sorted((bwd.schedule() or "(none)").splitlines())))
            bench.attempt(label, failed, build_derived)
    return bench.compile_exit_code(failed)


# ---------------------------------------------------------------------------

def split_list(values: Optional[List[str]]) -> List[str]:
    return [v.strip() for item in (values or []) for v in item.split(",") if v.strip()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="also write the table here")
    parser.add_argument("--only", action="append", metavar="SUBSTR[,SUBSTR...]",
                        help="run the workloads whose name contains one of these "
                        "(case-insensitive; repeatable or comma-separated)")
    parser.add_argument("--dtypes", action="append", metavar="fp32,bf16",
                        help="dtypes to run (default: fp32,bf16)")
    parser.add_argument("--compile-only", action="store_true",
                        help="compile every kernel (forward, hand, derived) for sm_90")
    args = parser.parse_args()
    only = [s.lower() for s in split_list(args.only)]
    dtype_names = split_list(args.dtypes) or list(DTYPES)
    for d in dtype_names:
        if d not in DTYPES:
            parser.error(f"unknown dtype {d!r} (choose from {', '.join(DTYPES)})")
    chosen = [s for s in specs() if not only or any(o in s.name.lower() for o in only)]
    if not chosen:
        parser.error(f"--only {args.only} matches none of: "
                     f"{', '.join(s.name for s in specs())}")
    if args.compile_only:
        return compile_only(chosen, dtype_names)
    if not torch.cuda.is_available():
        print("no GPU: user-level benchmark skipped (--compile-only compiles the kernels)")
        return 0

    start = time.perf_counter()
    rows, breakdowns, failures = measure(chosen, dtype_names)
    header = ("| workload | dtype | tritonad GPU us | hand GPU us | eager GPU us | "
              "compile GPU us | tritonad/compile | tritonad/hand | tritonad wall us | "
              "compile wall us | atomics | deterministic |")
    lines = [header, "|" + "---|" * header.count(" | ") + "---|"]
    for name, dtype_name, t, atomics, deterministic in rows:
        lines.append(f"| {name} | {dtype_name} | {t['tritonad'][0]:.1f} | {t['hand'][0]:.1f} | "
                     f"{t['eager'][0]:.1f} | {t['compile'][0]:.1f} | "
                     f"{t['tritonad'][0] / t['compile'][0]:.2f} | "
                     f"{t['tritonad'][0] / t['hand'][0]:.2f} | {t['tritonad'][1]:.1f} | "
                     f"{t['compile'][1]:.1f} | {'n/a' if atomics is None else atomics} | "
                     f"{'yes' if deterministic else 'NO'} |")
    lines.append("")
    lines.append(f"GPU us: torch-profiler device time of every kernel, copy and fill per "
                 f"backward call ({ITERS} calls); wall us: triton.testing.do_bench. "
                 f"atomics: tt.atomic_rmw instructions in tritonad's derived kernel (a static count: "
                 f"an atomic in a run-time branch, e.g. dX's when rows could overlap, counts "
                 f"even if never taken). "
                 f"deterministic: {DETERMINISM_RUNS} tritonad backwards bitwise identical.")
    lines.append("")
    lines.append("GPU time per call by kernel (us):")
    for label, who, parts in breakdowns:
        lines.append(f"- {label} / {who}: {top(parts, 5)}")
    if failures:
        lines += ["", "FAILED: " + "; ".join(failures)]
    text = f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}\n\n"
    text += "\n".join(lines) + "\n"
    return finish(text, args.out, failures, start)


if __name__ == "__main__":
    sys.exit(main())
