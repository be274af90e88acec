"""What a user pays for a backward: GPU time of everything `loss.backward()` launches.

For GELU, softmax and layer norm (fp32), the backward through

  tritonad   tritonad.autograd(forward kernel) -- derived kernel(s), plus the bridge's
             allocations, fills and copies
  hand       the hand-written Triton backward of benchmarks/bench.py, launched as a
             torch.autograd.Function would (fresh output buffers)
  eager      torch autograd on the torch reference
  compile    torch.compile of the torch reference (its generated backward)

is run a few times, then N iterations are profiled with the torch profiler: the GPU
time is the sum of the device time of every CUDA event (kernels, copies, fills)
divided by N (see ../shared/notes/measuring.md); the wall time is
triton.testing.do_bench of the same call. One table, side by side, per run.

    python3 benchmarks/user_level.py [--out benchmarks/user_level.md]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (forward kernels and hand-written backward kernels)

import tritonad  # noqa: E402

import torch._functorch.config  # noqa: E402

torch._functorch.config.donated_buffer = False  # time a compiled backward repeatedly
ITERS = 20


def gpu_time_us(fn):
    """(GPU us per call, {kernel name: us per call}) from the torch profiler."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(ITERS):
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
        parts[event.name[:60]] += us / ITERS
    return total / ITERS, dict(parts)


def wall_us(fn):
    return triton.testing.do_bench(fn, warmup=5, rep=50) * 1000.0


def autograd_call(outputs, inputs):
    grads = [torch.randn_like(o) for o in outputs]

    def call():
        torch.autograd.grad(outputs, inputs, grads, retain_graph=True)
    return call


def gelu_workload(n):
    x = torch.randn(n, device="cuda", requires_grad=True)
    op = tritonad.autograd(bench.gelu_fwd, outputs=("y_ptr",))
    grid = (triton.cdiv(n, 1024),)
    y = op[grid](x, torch.empty_like(x), n, BLOCK=1024)
    ref = lambda t: torch.nn.functional.gelu(t)  # noqa: E731
    dy = torch.randn_like(x)

    def hand():
        dx = torch.empty_like(x)
        bench.gelu_bwd_hand[grid](x, dy, dx, n, BLOCK=1024)
    return f"GELU {n >> 20}M", autograd_call([y], [x]), hand, ref, [x]


def softmax_workload(m, n):
    x = torch.randn(m, n, device="cuda", requires_grad=True)
    op = tritonad.autograd(bench.softmax_fwd, outputs=("y_ptr",))
    block = triton.next_power_of_2(n)
    y = op[(m,)](torch.empty_like(x), x, x.stride(0), x.stride(0), n, BLOCK_N=block,
                 num_warps=bench.num_warps_for(block))
    ref = lambda t: torch.softmax(t, -1)  # noqa: E731
    yd, dy = y.detach(), torch.randn_like(x)

    def hand():
        dx = torch.empty_like(x)
        bench.softmax_bwd_hand[(m,)](dx, yd, dy, x.stride(0), n, BLOCK_N=block,
                                     num_warps=bench.num_warps_for(block))
    return f"softmax {m}x{n}", autograd_call([y], [x]), hand, ref, [x]


def layernorm_workload(m, n):
    x = torch.randn(m, n, device="cuda", requires_grad=True)
    w = torch.randn(n, device="cuda", requires_grad=True)
    b = torch.randn(n, device="cuda", requires_grad=True)
    op = tritonad.autograd(bench.layernorm_fwd, outputs=("Y",), wrt=["X", "W", "B"])
    block = triton.next_power_of_2(n)
    mean, rstd = torch.empty(m, device="cuda"), torch.empty(m, device="cuda")
    y = op[(m,)](x, torch.empty_like(x), w, b, mean, rstd, x.stride(0), n, bench.LN_EPS,
                 BLOCK_N=block, num_warps=bench.num_warps_for(block))
    ref = lambda t, ww, bb: torch.nn.functional.layer_norm(t, (n,), ww, bb, bench.LN_EPS)  # noqa: E731
    dy = torch.randn_like(x)
    groups = 256

    def hand():
        dx = torch.empty_like(x)
        pdw = torch.empty(groups, n, device="cuda")
        pdb = torch.empty(groups, n, device="cuda")
        dw, db = torch.empty_like(w), torch.empty_like(b)
        bench.layernorm_bwd_hand_dx[(groups,)](x, dy, dx, w, mean, rstd, pdw, pdb, x.stride(0),
                                               m, n, groups, BLOCK_N=block,
                                               num_warps=bench.num_warps_for(block))
        bench.layernorm_bwd_hand_dwdb[(triton.cdiv(n, bench.LN_BLOCK_C),)](
            pdw, pdb, dw, db, groups, n, BLOCK_G=bench.LN_BLOCK_G, BLOCK_C=bench.LN_BLOCK_C)
    return f"layer norm {m}x{n}", autograd_call([y], [x, w, b]), hand, ref, [x, w, b]


def torch_calls(ref, inputs):
    leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
    eager = autograd_call([ref(*leaves)], leaves)
    compiled_ref = torch.compile(ref)
    leaves2 = [t.detach().clone().requires_grad_(True) for t in inputs]
    compiled = autograd_call([compiled_ref(*leaves2)], leaves2)
    return eager, compiled


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    args = parser.parse_args()
    rows, breakdowns = [], []
    for make in (lambda: gelu_workload(16 << 20), lambda: softmax_workload(4096, 4096),
                 lambda: layernorm_workload(4096, 4096)):
        name, derived, hand, ref, inputs = make()
        eager, compiled = torch_calls(ref, inputs)
        times = {}
        for label, fn in (("tritonad", derived), ("hand", hand), ("eager", eager),
                          ("compile", compiled)):
            gpu, parts = gpu_time_us(fn)
            times[label] = (gpu, wall_us(fn))
            breakdowns.append((name, label, parts))
        rows.append((name, times))
    header = ("| workload | tritonad GPU us | hand GPU us | eager GPU us | compile GPU us | "
              "tritonad / compile | tritonad / hand | tritonad wall us | compile wall us |")
    lines = [header, "|" + "---|" * 9]
    for name, t in rows:
        lines.append(f"| {name} | {t['tritonad'][0]:.1f} | {t['hand'][0]:.1f} | "
                     f"{t['eager'][0]:.1f} | {t['compile'][0]:.1f} | "
                     f"{t['tritonad'][0] / t['compile'][0]:.2f} | "
                     f"{t['tritonad'][0] / t['hand'][0]:.2f} | {t['tritonad'][1]:.1f} | "
                     f"{t['compile'][1]:.1f} |")
    lines.append("")
    lines.append("GPU time per call by kernel (us):")
    for name, label, parts in breakdowns:
        top = ", ".join(f"{k} {v:.1f}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])[:5])
        lines.append(f"- {name} / {label}: {top}")
    text = f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}\n\n"
    text += "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
