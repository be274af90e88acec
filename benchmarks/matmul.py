"""Backward of matmul-class kernels: tritonad's re-parallelized schedule against
cuBLAS, torch.compile and the hand-written Triton backward.

Workloads (fp16 and bf16 inputs, fp32 accumulation):

  matmul    the tutorial's grouped matmul (benchmarks/bench.py matmul_fwd), square
            sizes 1024 .. 8192, tiles BLOCK_M x BLOCK_N x BLOCK_K (default 128 x 128 x 64,
            GROUP_M 8, 8 warps, 3 stages). Backward of
              tritonad  tritonad.grad(matmul_fwd) (accumulating into the given shadows)
                        launched on the forward's grid with the upstream gradient, into
                        dA/dB zeroed by the caller (the fills timed)
              tritonad.autograd  what a user pays: torch.autograd.grad through
                        tritonad.autograd(matmul_fwd)'s op (fresh gradient buffers,
                        overwritten: no fill where the launch proves them covered)
              tuned     the same with tune=True (the backward's own launch options,
                        searched on its first call)
              hand      the forward kernel on transposed views, same tiles:
                        dA = dC @ B^T, dB = A^T @ dC (two launches)
              cuBLAS    torch.autograd.grad of a @ b
              compile   torch.compile of (dc @ b.T, a.T @ dc)
  batched   a batched matmul with a 3-D grid (m tiles, n tiles, batch), 8 x 1024^3.
  epilogue  act(a @ b) (bench.matmul_act_fwd), act = leaky_relu or gelu, 2048^3 and
            4096^3 (--epilogue-sizes): tritonad.autograd (the forward saves acc, a
            residual; dA and dB get programs of their own, which read dC * act'(acc)
            that the forward's programs compute once, erf and exp included, and stage
            into scratch in a launch before theirs, see schedule()) against eager
            (cuBLAS and the activation's backward) and torch.compile.
  batched   also: hand (the batched kernel on transposed views), tritonad.autograd and
            torch.compile.

Before timing: dA and dB are compared with an fp32 reference (max abs error / max |ref|)
for tritonad, cuBLAS and hand; tritonad's result must be bitwise the same in two runs; the
atomics left in the derived IR are counted.

GPU time: the torch profiler's device time of every kernel, copy and fill of a call
(benchmarks/user_level.py); wall time: triton.testing.do_bench.

    python3 benchmarks/matmul.py [--out FILE] [--sizes 1024,2048]
                                 [--dtypes fp16,bf16] [--blocks 128,128,64]
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

import torch
import triton

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import bench  # noqa: E402  (matmul_fwd)
import loops  # noqa: E402  (timing helpers)

sys.path.insert(0, loops._TEST)
from corpus.kernels import batched_matmul_kernel  # noqa: E402

import tritonad  # noqa: E402

DEVICE = "cuda"
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


matmul_bwd = tritonad.grad(bench.matmul_fwd)
batched_bwd = tritonad.grad(batched_matmul_kernel)


def atomics(bwd) -> int:
    return (bwd.derived_ir() or "").count("tt.atomic_rmw")


def _checked(derived, grads, refs, others, label, failures):
    """({who: max error of (dA, dB) against the fp32 reference}, whether a second
    `derived()` gives the same bits); tritonad's errors above twice cuBLAS's
    (and 1e-2) are failures."""
    errors = {who: max(loops.rel_err(g, r) for g, r in zip(pair, refs))
              for who, pair in {"tritonad": grads, **others}.items()}
    first = tuple(g.clone() for g in grads)
    derived()
    reproducible = all(torch.equal(x, y) for x, y in zip(first, grads))
    for who in ("tritonad", "tritonad.autograd", "tuned"):
        if who in errors and errors[who] > max(2 * errors["cuBLAS"], 1e-2):
            failures.append(f"{label}: {who} error {errors[who]:.2e} vs "
                            f"cuBLAS {errors['cuBLAS']:.2e}")
    return errors, reproducible


def matmul_case(n, dtype_name, blocks, opts, failures):
    dtype = DTYPES[dtype_name]
    BM, BN, BK = blocks
    meta = dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8)
    launch = dict(num_warps=opts.warps, num_stages=opts.stages)
    a = torch.randn(n, n, device=DEVICE, dtype=dtype)
    b = torch.randn(n, n, device=DEVICE, dtype=dtype)
    c = torch.empty(n, n, device=DEVICE, dtype=dtype)
    dc = torch.randn(n, n, device=DEVICE, dtype=dtype)

    def mm(x, y, out):
        grid = (triton.cdiv(x.shape[0], BM) * triton.cdiv(y.shape[1], BN),)
        bench.matmul_fwd[grid](x, y, out, x.shape[0], y.shape[1], x.shape[1], x.stride(0),
                               x.stride(1), y.stride(0), y.stride(1), out.stride(0),
                               out.stride(1), **meta, **launch)

    mm(a, b, c)
    grid = (triton.cdiv(n, BM) * triton.cdiv(n, BN),)
    da, db = torch.empty_like(a), torch.empty_like(b)

    def derived():
        da.zero_()
        db.zero_()
        matmul_bwd[grid](a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                         c.stride(0), c.stride(1), da, db, dc, **meta, **launch)

    da_hand, db_hand = torch.empty_like(a), torch.empty_like(b)

    def hand():
        mm(dc, b.t(), da_hand)
        mm(a.t(), dc, db_hand)

    at, bt = a.clone().requires_grad_(), b.clone().requires_grad_()
    ct = at @ bt
    got = {}

    def cublas():
        got["da"], got["db"] = torch.autograd.grad(ct, (at, bt), dc, retain_graph=True)

    # What a user pays: tritonad.autograd's op, its backward through torch's
    # autograd (gradient buffers allocated by the bridge, overwritten).
    op = tritonad.autograd(bench.matmul_fwd, outputs=("c_ptr",))
    au, bu = a.clone().requires_grad_(), b.clone().requires_grad_()
    cu = op[grid](au, bu, torch.empty_like(c), n, n, n, au.stride(0), au.stride(1), bu.stride(0),
                  bu.stride(1), c.stride(0), c.stride(1), **meta, **launch)

    def user():
        got["user"] = torch.autograd.grad(cu, (au, bu), dc, retain_graph=True)

    # The same, with the backward's own launch options (tune=True).
    tuned_op = tritonad.autograd(bench.matmul_fwd, outputs=("c_ptr",), tune=True)
    at2, bt2 = a.clone().requires_grad_(), b.clone().requires_grad_()
    ct2 = tuned_op[grid](at2, bt2, torch.empty_like(c), n, n, n, at2.stride(0), at2.stride(1),
                         bt2.stride(0), bt2.stride(1), c.stride(0), c.stride(1), **meta,
                         **launch)

    def tuned():
        got["tuned"] = torch.autograd.grad(ct2, (at2, bt2), dc, retain_graph=True)

    compiled = torch.compile(lambda x, y, g: (g @ y.t(), x.t() @ g))

    def compile_bwd():
        return compiled(a, b, dc)

    derived()
    hand()
    cublas()
    user()
    tuned()
    torch.cuda.synchronize()
    ref_a = dc.float() @ b.float().t()
    ref_b = a.float().t() @ dc.float()
    errors, reproducible = _checked(derived, (da, db), (ref_a, ref_b), {
        "tritonad.autograd": got["user"], "tuned": got["tuned"], "hand": (da_hand, db_hand),
        "cuBLAS": (got["da"], got["db"])}, f"matmul {dtype_name} {n}", failures)
    print(f"matmul {dtype_name} {n}^3, tiles {BM}x{BN}x{BK}: errors "
          + ", ".join(f"{k} {v:.2e}" for k, v in errors.items())
          + f"; reproducible {reproducible}; atomics in IR {atomics(matmul_bwd)}", flush=True)
    loops.print_schedule(matmul_bwd)
    times, parts = loops.time_calls([("tritonad", derived), ("tritonad.autograd", user),
                                     ("tuned", tuned), ("hand", hand), ("cuBLAS", cublas),
                                     ("compile", compile_bwd)])
    return dict(workload=f"matmul {dtype_name}", size=f"{n}^3", tiles=f"{BM}x{BN}x{BK}",
                times=times, parts=parts, errors=errors, reproducible=reproducible,
                atomics=atomics(matmul_bwd))


def batched_case(dtype_name, blocks, opts, failures, batches=8, n=1024):
    dtype = DTYPES[dtype_name]
    BM, BN, BK = blocks
    meta = dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK)
    launch = dict(num_warps=opts.warps, num_stages=opts.stages)
    a = torch.randn(batches, n, n, device=DEVICE, dtype=dtype)
    b = torch.randn(batches, n, n, device=DEVICE, dtype=dtype)
    c = torch.empty(batches, n, n, device=DEVICE, dtype=dtype)
    dc = torch.randn_like(c)
    grid = (triton.cdiv(n, BM), triton.cdiv(n, BN), batches)
    strides = lambda t: (t.stride(0), t.stride(1), t.stride(2))  # noqa: E731
    batched_matmul_kernel[grid](a, b, c, n, n, n, *strides(a), *strides(b), *strides(c), **meta,
                             **launch)
    da, db = torch.empty_like(a), torch.empty_like(b)

    def derived():
        da.zero_()
        db.zero_()
        batched_bwd[grid](a, b, c, n, n, n, *strides(a), *strides(b), *strides(c), da, db, dc,
                          **meta, **launch)

    da_hand, db_hand = torch.empty_like(a), torch.empty_like(b)

    def hand():
        for x, y, out in ((dc, b.transpose(1, 2), da_hand), (a.transpose(1, 2), dc, db_hand)):
            batched_matmul_kernel[grid](x, y, out, n, n, n, *strides(x), *strides(y),
                                        *strides(out), **meta, **launch)

    at, bt = a.clone().requires_grad_(), b.clone().requires_grad_()
    ct = torch.bmm(at, bt)
    got = {}

    def cublas():
        got["da"], got["db"] = torch.autograd.grad(ct, (at, bt), dc, retain_graph=True)

    op = tritonad.autograd(batched_matmul_kernel, outputs=("c_ptr",))
    au, bu = a.clone().requires_grad_(), b.clone().requires_grad_()
    cu = op[grid](au, bu, torch.empty_like(c), n, n, n, *strides(au), *strides(bu),
                  *strides(c), **meta, **launch)

    def user():
        got["user"] = torch.autograd.grad(cu, (au, bu), dc, retain_graph=True)

    compiled = torch.compile(lambda x, y, g: (torch.bmm(g, y.transpose(1, 2)),
                                              torch.bmm(x.transpose(1, 2), g)))

    def compile_bwd():
        return compiled(a, b, dc)

    derived()
    hand()
    cublas()
    user()
    ref_a = torch.bmm(dc.float(), b.float().transpose(1, 2))
    ref_b = torch.bmm(a.float().transpose(1, 2), dc.float())
    errors, reproducible = _checked(derived, (da, db), (ref_a, ref_b), {
        "tritonad.autograd": got["user"], "hand": (da_hand, db_hand),
        "cuBLAS": (got["da"], got["db"])}, f"batched {dtype_name}", failures)
    print(f"batched matmul {dtype_name} {batches}x{n}^3: errors "
          + ", ".join(f"{k} {v:.2e}" for k, v in errors.items())
          + f"; reproducible {reproducible}", flush=True)
    loops.print_schedule(batched_bwd)
    times, parts = loops.time_calls([("tritonad", derived), ("tritonad.autograd", user),
                                     ("hand", hand), ("cuBLAS", cublas),
                                     ("compile", compile_bwd)])
    return dict(workload=f"batched matmul {dtype_name}", size=f"{batches}x{n}^3",
                tiles=f"{BM}x{BN}x{BK}", times=times, parts=parts, errors=errors,
                reproducible=reproducible, atomics=atomics(batched_bwd))


def epilogue_case(n, dtype_name, blocks, opts, failures, activation):
    """act(a @ b) (bench.matmul_act_fwd): what a user pays through
    tritonad.autograd (the forward saves acc) against eager (cuBLAS and the
    activation's backward) and torch.compile."""
    dtype = DTYPES[dtype_name]
    BM, BN, BK = blocks
    meta = dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=opts.group_m, ACTIVATION=activation)
    act = {"gelu": torch.nn.functional.gelu,
           "leaky_relu": lambda x: torch.nn.functional.leaky_relu(x, 0.01)}[activation]
    launch = dict(num_warps=opts.warps, num_stages=opts.stages)
    a = torch.randn(n, n, device=DEVICE, dtype=dtype) / n ** 0.25
    b = torch.randn(n, n, device=DEVICE, dtype=dtype) / n ** 0.25
    dc = torch.randn(n, n, device=DEVICE, dtype=dtype)
    grid = (triton.cdiv(n, BM) * triton.cdiv(n, BN),)
    op = tritonad.autograd(bench.matmul_act_fwd, outputs=("c_ptr",))
    au, bu = a.clone().requires_grad_(), b.clone().requires_grad_()
    cu = op[grid](au, bu, torch.empty(n, n, device=DEVICE, dtype=dtype), n, n, n, au.stride(0),
                  au.stride(1), bu.stride(0), bu.stride(1), n, 1, **meta, **launch)
    got = {}

    def user():
        got["user"] = torch.autograd.grad(cu, (au, bu), dc, retain_graph=True)

    at, bt = a.clone().requires_grad_(), b.clone().requires_grad_()
    ct = act(at @ bt)

    def eager():
        got["eager"] = torch.autograd.grad(ct, (at, bt), dc, retain_graph=True)

    ac, bc = a.clone().requires_grad_(), b.clone().requires_grad_()
    cc = torch.compile(lambda x, y: act(x @ y))(ac, bc)

    def compile_bwd():
        return torch.autograd.grad(cc, (ac, bc), dc, retain_graph=True)

    user()
    eager()
    torch.cuda.synchronize()
    a64, b64 = a.double().requires_grad_(), b.double().requires_grad_()
    ref = torch.autograd.grad(act(a64 @ b64), (a64, b64), dc.double())
    errors = {who: max(loops.rel_err(x, r) for x, r in zip(got[key], ref))
              for who, key in (("tritonad", "user"), ("cuBLAS", "eager"))}
    first = [g.clone() for g in got["user"]]
    user()
    reproducible = all(torch.equal(x, y) for x, y in zip(first, got["user"]))
    if errors["tritonad"] > max(2 * errors["cuBLAS"], 1e-2):
        failures.append(f"matmul+{activation} {dtype_name} {n}: error "
                        f"{errors['tritonad']:.2e} vs "
                        f"eager {errors['cuBLAS']:.2e}")
    print(f"matmul+{activation} {dtype_name} {n}^3: errors "
          + ", ".join(f"{k} {v:.2e}" for k, v in errors.items())
          + f"; reproducible {reproducible}", flush=True)
    loops.print_schedule(op.backward_kernel)
    from tritonad import _regrid
    print("parts:", _regrid.describe(_regrid.last_table), flush=True)
    times, parts = loops.time_calls([("tritonad.autograd", user), ("cuBLAS", eager),
                                     ("compile", compile_bwd)])
    atomic_count = (op.backward_kernel.derived_ir() or "").count("tt.atomic_rmw")
    return dict(workload=f"matmul + {activation} epilogue {dtype_name}", size=f"{n}^3",
                tiles=f"{BM}x{BN}x{BK}", times=times, parts=parts, errors=errors,
                reproducible=reproducible, atomics=atomic_count, epilogue=True)


def report(rows, opts, failures) -> str:
    device = torch.cuda.get_device_name()
    lines = [
        "# Matmul-class backward: re-parallelized schedule",
        "",
        f"{device}; torch {torch.__version__}; triton {triton.__version__}. Command: "
        f"`python3 benchmarks/matmul.py` (warps {opts.warps}, "
        f"stages {opts.stages}). GPU time per backward (torch profiler: kernels, copies, "
        "fills) and wall time (do_bench), in us. Error: max |grad - fp32 reference| / "
        "max |reference| over dA and dB.",
        "",
        "| workload | size | tiles | tritonad GPU | tritonad.autograd GPU | tuned GPU | hand GPU | "
        "cuBLAS GPU | compile GPU | tritonad / cuBLAS | tritonad / hand | autograd / cuBLAS | "
        "tuned / cuBLAS | tuned / hand | tritonad wall | "
        "error tritonad / cuBLAS | atomics in IR | bitwise reproducible |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if row.get("epilogue"):
            continue
        t = row["times"]
        gpu = lambda who: t[who][0] if who in t else float("nan")  # noqa: E731
        lines.append(
            f"| {row['workload']} | {row['size']} | {row['tiles']} | {gpu('tritonad'):.1f} | "
            f"{gpu('tritonad.autograd'):.1f} | {gpu('tuned'):.1f} | {gpu('hand'):.1f} | "
            f"{gpu('cuBLAS'):.1f} | {gpu('compile'):.1f} | {gpu('tritonad') / gpu('cuBLAS'):.2f} | "
            f"{gpu('tritonad') / gpu('hand'):.2f} | "
            f"{gpu('tritonad.autograd') / gpu('cuBLAS'):.2f} | "
            f"{gpu('tuned') / gpu('cuBLAS'):.2f} | {gpu('tuned') / gpu('hand'):.2f} | "
            f"{t['tritonad'][1]:.1f} | {row['errors']['tritonad']:.2e} / "
            f"{row['errors']['cuBLAS']:.2e} | {row['atomics']} | {row['reproducible']} |")
    epilogues = [row for row in rows if row.get("epilogue")]
    if epilogues:
        lines += ["", "A linear layer's epilogue, c = act(a @ b), through tritonad.autograd "
                  "(the forward saves acc; dA and dB by programs of their own, which read "
                  "dC * act'(acc) that the forward's programs stage once into scratch in a "
                  "launch before theirs) against eager "
                  "(cuBLAS and the activation's backward) and torch.compile:", "",
                  "| workload | size | tiles | tritonad.autograd GPU | eager GPU | compile GPU | "
                  "autograd / eager | autograd / compile | error tritonad / eager | "
                  "atomics in IR | bitwise reproducible |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for row in epilogues:
            t = row["times"]
            lines.append(
                f"| {row['workload']} | {row['size']} | {row['tiles']} | "
                f"{t['tritonad.autograd'][0]:.1f} | {t['cuBLAS'][0]:.1f} | {t['compile'][0]:.1f} | "
                f"{t['tritonad.autograd'][0] / t['cuBLAS'][0]:.2f} | "
                f"{t['tritonad.autograd'][0] / t['compile'][0]:.2f} | "
                f"{row['errors']['tritonad']:.2e} / {row['errors']['cuBLAS']:.2e} | "
                f"{row['atomics']} | {row['reproducible']} |")
    lines += ["", "Where tritonad's GPU time goes (us per call, largest first):", ""]
    for row in rows:
        for who in ("tritonad", "tritonad.autograd", "tuned"):
            if who in row["parts"]:
                lines.append(f"- {row['workload']} {row['size']} {who}: "
                             f"{loops.top(row['parts'][who])}")
    if failures:
        lines += ["", "Failures:", ""] + [f"- {f}" for f in failures]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--sizes", default="1024,2048,4096,8192")
    parser.add_argument("--dtypes", default="fp16,bf16")
    parser.add_argument("--blocks", default="128,128,64")
    parser.add_argument("--warps", type=int, default=8)
    parser.add_argument("--stages", type=int, default=3)
    parser.add_argument("--no-batched", action="store_true")
    parser.add_argument("--epilogue-sizes", default="2048,4096")
    parser.add_argument("--epilogues", default="leaky_relu,gelu")
    parser.add_argument("--group-m", type=int, default=8, help="the epilogue kernel's GROUP_M")
    opts = parser.parse_args()
    blocks = tuple(int(v) for v in opts.blocks.split(","))
    rows, failures = [], []
    for dtype_name in opts.dtypes.split(","):
        for n in (int(v) for v in opts.sizes.split(",")):
            try:
                rows.append(matmul_case(n, dtype_name, blocks, opts, failures))
            except Exception:  # noqa: BLE001  (reported, the other rows still run)
                failures.append(f"matmul {dtype_name} {n}: {traceback.format_exc()[-1500:]}")
                print(failures[-1], flush=True)
        for activation, n in ((act, int(v)) for act in opts.epilogues.split(",") if act
                              for v in opts.epilogue_sizes.split(",") if v):
            try:
                rows.append(epilogue_case(n, dtype_name, blocks, opts, failures, activation))
            except Exception:  # noqa: BLE001
                failures.append(f"matmul+{activation} {dtype_name} {n}: "
                                f"{traceback.format_exc()[-1500:]}")
                print(failures[-1], flush=True)
        if not opts.no_batched:
            try:
                rows.append(batched_case(dtype_name, blocks, opts, failures))
            except Exception:  # noqa: BLE001
                failures.append(f"batched {dtype_name}: {traceback.format_exc()[-1500:]}")
                print(failures[-1], flush=True)
    text = report(rows, opts, failures)
    print(text)
    if opts.out:
        with open(opts.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
