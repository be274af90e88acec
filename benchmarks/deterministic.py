"""What deterministic mode costs where it sums through scatter slots (issue 41:
"deterministic mode that succeeds ... at <= 1.1x the default's GPU time").

The kernels are test/corpus/row_tables.py's, at sizes a model has: programs
that add to rows they gathered through a table (an embedding's lookup, a
persistent kernel's lookup, a mixture of experts' gathered matmul). The
default mode adds those gradients with atomics; mode="deterministic" stores
the contributions into slots of the program's own, a key per run of a row,
and sums them after the kernel in a fixed order (cpp/include/tritonad/AutoDiff/
ScatterSums.h). Each row: GPU time of the backward (torch profiler: every
kernel, copy and fill torch.autograd.grad launches) and its wall time
(do_bench), for

  auto           tritonad.autograd(kernel), the default mode (atomics)
  deterministic  tritonad.autograd(kernel, mode="deterministic") (scatter slots)
  eager          torch's autograd of the same math (indexing's backward:
                 index_put_ with accumulate, itself sort-based on CUDA)
  compile        torch.compile of it

with each gradient's error against fp64 checked before anything is timed, and
whether deterministic mode gives the same bits twice.

    python3 benchmarks/deterministic.py [--quick] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
sys.path.insert(0, os.path.join(os.path.dirname(_HERE), "test"))

# (relative to the gradient's largest element: fp32 sums rounded once, bf16
# gradients rounded to bf16 once)
TOLERANCE = {"fp32": 1e-5, "bf16": 8e-3}
METHODS = ("auto", "deterministic", "eager", "compile")


def workloads(quick: bool):
    """(name, make) pairs; make(dtype) returns (op call per mode, inputs, reference)."""
    import torch
    import triton

    from corpus import row_tables as rt

    lookups, rows, cols = (4096, 1000, 512) if quick else (16384, 4000, 1024)
    m, n, k = (2048, 512, 512) if quick else (8192, 1024, 1024)

    def table(count, distinct):
        return rt.row_table(count, distinct, "cuda")

    def silu_of_rows(index):
        def reference(leaf):
            g = leaf[index.long()]
            return g * torch.sigmoid(g)
        return reference

    def gather(dtype):
        x = torch.randn(rows, cols, device="cuda").to(dtype)
        index = table(lookups, rows)

        def call(op, leaf):
            return op[(lookups,)](torch.empty(lookups, cols, device="cuda", dtype=dtype), leaf,
                                  index, leaf.stride(0), cols, BLOCK=triton.next_power_of_2(cols))
        return rt.gather_rows, call, [x], silu_of_rows(index)

    def persistent(dtype):
        x = torch.randn(rows, cols, device="cuda").to(dtype)
        index = table(lookups, rows)
        programs = 2 * torch.cuda.get_device_properties(0).multi_processor_count

        def call(op, leaf):
            return op[(programs,)](torch.empty(lookups, cols, device="cuda", dtype=dtype), leaf,
                                   index, lookups, leaf.stride(0), cols,
                                   BLOCK=triton.next_power_of_2(cols))
        return rt.persistent_gather, call, [x], silu_of_rows(index)

    def matmul(dtype):
        a = torch.randn(m, k, device="cuda").to(dtype)
        b = (torch.randn(k, n, device="cuda") / k ** 0.5).to(dtype)
        index = table(m, m)

        def call(op, leaf_a, leaf_b):
            return op[(triton.cdiv(m, 64), triton.cdiv(n, 64))](
                torch.empty(m, n, device="cuda", dtype=dtype), leaf_a, leaf_b, index, m, n, k,
                leaf_a.stride(0), leaf_b.stride(0), n, BM=64, BN=64, BK=32)

        def reference(leaf_a, leaf_b):
            return leaf_a[index.long()] @ leaf_b
        return rt.gathered_matmul, call, [a, b], reference

    return [(f"gather {lookups}x{cols} of {rows} rows", gather),
            (f"persistent gather {lookups}x{cols} of {rows} rows", persistent),
            (f"gathered matmul {m}x{n}x{k}", matmul)]


def measure_row(name, make, dtype_name, failures):
    import torch

    import tritonad
    from user_level import gpu_time_us, wall_us

    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    label = f"{name} {dtype_name}"
    print(f"\n== {label}", flush=True)
    kernel, call, inputs, reference = make(dtype)
    out_name = "C" if "matmul" in name else "Y"
    leaves64 = [t.detach().double().requires_grad_() for t in inputs]
    out64 = reference(*leaves64)
    dy = torch.randn(out64.shape, device="cuda").to(dtype)
    want = torch.autograd.grad(out64, leaves64, dy.double())
    calls, errors, same = {}, {}, None
    for mode in ("auto", "deterministic"):
        op = tritonad.autograd(kernel, outputs=(out_name,), mode=mode)
        leaves = [t.detach().clone().requires_grad_() for t in inputs]
        out = call(op, *leaves)

        def backward(out=out, leaves=leaves):
            return torch.autograd.grad(out, leaves, dy, retain_graph=True)
        got = backward()
        errors[mode] = max(((g.double() - w).abs().max() / w.abs().max()).item()
                           for g, w in zip(got, want))
        if mode == "deterministic":
            same = all(torch.equal(a, b) for a, b in zip(got, backward()))
            print("  deterministic schedule:\n    "
                  + "\n    ".join(op.backward_kernel.schedule().splitlines()))
        calls[mode] = backward
    for who, fn in (("eager", reference), ("compile", torch.compile(reference, dynamic=False))):
        leaves = [t.detach().clone().requires_grad_() for t in inputs]
        out = fn(*leaves)

        def backward(out=out, leaves=leaves):
            return torch.autograd.grad(out, leaves, dy, retain_graph=True)
        got = backward()
        errors[who] = max(((g.double() - w).abs().max() / w.abs().max()).item()
                          for g, w in zip(got, want))
        calls[who] = backward
    print("  error vs fp64 (max |grad - ref| / max |ref|): "
          + ", ".join(f"{k} {v:.1e}" for k, v in errors.items()))
    bad = [m for m in ("auto", "deterministic") if not errors[m] <= TOLERANCE[dtype_name]]
    if bad or not same:
        failures.append(f"{label}: " + ", ".join(f"{m} error {errors[m]:.1e}" for m in bad)
                        + ("" if same else "; deterministic runs differ"))
        print("  CHECK FAILED: not timed", flush=True)
        return None
    times = {}
    for who in METHODS:
        gpu, _ = gpu_time_us(calls[who])
        times[who] = (gpu, wall_us(calls[who]))
        print(f"  {who:14s} GPU {gpu:8.1f} us   wall {times[who][1]:8.1f} us", flush=True)
    return {"label": label, "times": times, "errors": errors, "same": same}


def measure(quick: bool):
    rows, failures = [], []
    dtypes = ["fp32"] if quick else ["fp32", "bf16"]
    for name, make in workloads(quick):
        for dtype_name in dtypes:
            row = measure_row(name, make, dtype_name, failures)
            if row:
                rows.append(row)
    return rows, failures


def report(rows, failures, seconds) -> str:
    lines = ["Deterministic mode's scatter slots against the default's atomics "
             f"({seconds:.0f} s)", ""]
    for metric, index in (("GPU", 0), ("wall", 1)):
        lines += [f"{metric} time (us per backward):", "",
                  "| workload | " + " | ".join(METHODS) + " | deterministic / auto | "
                  "deterministic / eager |", "|---" * (len(METHODS) + 3) + "|"]
        for r in rows:
            t = {k: v[index] for k, v in r["times"].items()}
            lines.append(f"| {r['label']} | " + " | ".join(f"{t[m]:.1f}" for m in METHODS)
                         + f" | {t['deterministic'] / t['auto']:.2f} | "
                         f"{t['deterministic'] / t['eager']:.2f} |")
        lines.append("")
    if failures:
        lines += ["Failed checks (not timed):", ""] + [f"- {f}" for f in failures]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fp32 only")
    parser.add_argument("--out", help="also write the markdown table here")
    opts = parser.parse_args()
    from user_level import finish

    start = time.perf_counter()
    rows, failures = measure(opts.quick)
    return finish(report(rows, failures, time.perf_counter() - start), opts.out, failures, start)


if __name__ == "__main__":
    sys.exit(main())
