"""Triton's fused-attention tutorial: its own forward, differentiated by tritonad,
against its own hand-written backward and torch's flash backward.

The tutorial (python/tutorials/06-fused-attention.py in Triton's repository) is
not part of this project: pass the path of a copy with --tutorial. Its kernels
are used as they are:

  forward   _attn_fwd (block pointers; the autotuner's kernel launched with one
            config, --block-m x --block-n), causal, fp16, head dim 64
  tritonad.autograd  what a user pays: torch.autograd.grad through
            tritonad.autograd(_attn_fwd, outputs=("Out", "M")), whose forward
            saves residuals the derived backward reads
  tuned     the same with tune=True (the backward's own launch options)
  deterministic      the same with mode="deterministic" (no atomics)
  tutorial  the tutorial's backward as its autograd.Function launches it: k
            pre-scaled by sm_scale / ln 2, _attn_bwd_preprocess (rowsum(dO * O)),
            then _attn_bwd (a program per key block for dK and dV, then the same
            program's query block for dQ; BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2 =
            32, 128, 128, 32; 4 warps, 5 stages)
  flash     torch.autograd.grad of F.scaled_dot_product_attention(is_causal=True)

Every gradient is first compared with SDPA's (max abs difference / max |SDPA|
<= 2e-2, fp16). GPU time as benchmarks/loops.py measures it (torch profiler:
kernels, copies and fills per backward call).

    python3 benchmarks/tutorial_attention.py --tutorial PATH [--lengths 1024,4096,8192]
                                             [--out F]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import sys
import traceback

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loops  # noqa: E402  (timing and comparison helpers)

F = torch.nn.functional
D = 64


def load_tutorial(path):
    """The tutorial as a module. Older copies import
    triton.tools.experimental_descriptor (TMA helpers, gone from Triton 3.6)
    at the top; only their TMA kernels use it, not the kernels measured
    here, so an empty module stands in for it."""
    import types
    try:
        import triton.tools.experimental_descriptor  # noqa: F401
    except ImportError:
        sys.modules["triton.tools.experimental_descriptor"] = types.ModuleType(
            "triton.tools.experimental_descriptor")
    spec = importlib.util.spec_from_file_location("fused_attention_tutorial", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def jit_of(kernel):
    """The JITFunction under the tutorial's @triton.autotune (one config here)."""
    return getattr(kernel, "fn", kernel)


def causal_meta(forward):
    """The forward's causal switch: STAGE=3 (two loops: off-band, on-band) in
    most versions of the tutorial, CAUSAL=True in others."""
    names = forward.arg_names
    if "STAGE" in names:
        return {"STAGE": 3}
    if "CAUSAL" in names:
        return {"CAUSAL": True}
    raise RuntimeError(f"the tutorial's _attn_fwd has neither STAGE nor CAUSAL: {names}")


def forward_arguments(q, k, v, sm_scale, M, o):
    Z, H, L, _ = q.shape
    strides = [s for t in (q, k, v, o) for s in t.stride()]
    return (q, k, v, sm_scale, M, o, *strides, Z, H, L)


def tutorial_backward(tut, q, k, v, o, M, do, sm_scale):
    """The tutorial's _attention.backward, launched as it launches it."""
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    Z, H, L = q.shape[:3]
    PRE_BLOCK, BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2 = 128, 32, 128, 128, 32
    arg_k = k * (sm_scale * 1.4426950408889634)
    delta = torch.empty_like(M)
    tut._attn_bwd_preprocess[(L // PRE_BLOCK, Z * H)](o, do, delta, Z, H, L,
                                                     BLOCK_M=PRE_BLOCK, HEAD_DIM=D)
    tut._attn_bwd[(L // BLOCK_N1, 1, Z * H)](
        q, arg_k, v, sm_scale, do, dq, dk, dv, M, delta,
        q.stride(0), q.stride(1), q.stride(2), q.stride(3), H, L,
        BLOCK_M1=BLOCK_M1, BLOCK_N1=BLOCK_N1, BLOCK_M2=BLOCK_M2, BLOCK_N2=BLOCK_N2,
        BLK_SLICE_FACTOR=2, HEAD_DIM=D, num_warps=4, num_stages=5)
    return dq, dk, dv


def case(tut, L, heads, opts, failures):
    import tritonad
    torch.manual_seed(L)
    forward = jit_of(tut._attn_fwd)
    meta = dict(HEAD_DIM=D, BLOCK_M=opts.block_m, BLOCK_N=opts.block_n, **causal_meta(forward),
                num_warps=opts.warps, num_stages=opts.stages)
    q, k, v = (torch.empty(1, heads, L, D, device="cuda", dtype=torch.float16).normal_(0, 0.5)
               for _ in range(3))
    sm_scale = 1 / math.sqrt(D)
    do = torch.randn_like(q)
    grid = (triton.cdiv(L, opts.block_m), heads, 1)
    print(f"== tutorial attention L={L} heads={heads} D={D} fp16", flush=True)

    q4, k4, v4 = (t.clone().requires_grad_(True) for t in (q, k, v))
    with loops.sdpa_flash_context():
        out4 = F.scaled_dot_product_attention(q4, k4, v4, is_causal=True, scale=sm_scale)
    want = torch.autograd.grad(out4, (q4, k4, v4), do, retain_graph=True)

    def flash():
        torch.autograd.grad(out4, (q4, k4, v4), do, retain_graph=True)

    # The tutorial's own forward (for its backward's O and M) and backward.
    o = torch.empty_like(q)
    M = torch.empty(1, heads, L, device="cuda", dtype=torch.float32)
    forward[grid](*forward_arguments(q, k, v, sm_scale, M, o), **meta)
    errors = {"tutorial Out": loops.rel_err(o, out4.detach())}
    got = tutorial_backward(tut, q, k, v, o, M, do, sm_scale)
    errors["tutorial"] = max(loops.rel_err(g, w) for g, w in zip(got, want))
    calls = [("tutorial", lambda: tutorial_backward(tut, q, k, v, o, M, do, sm_scale)),
             ("flash", flash)]

    for label, mode, tune in (("tritonad.autograd", "auto", False), ("tuned", "auto", True),
                              ("deterministic", "deterministic", False)):
        try:
            op = tritonad.autograd(forward, outputs=("Out", "M"), mode=mode, tune=tune)
            inputs = tuple(t.clone().requires_grad_(True) for t in (q, k, v))
            out, _ = op[grid](*forward_arguments(*inputs, sm_scale, torch.empty_like(M),
                                                 torch.empty_like(o)), **meta)
            grads = torch.autograd.grad(out, inputs, do, retain_graph=True)
        except Exception as error:  # noqa: BLE001  (reported; the other rows still run)
            failures.append(f"L={L} {label}: {type(error).__name__}: {error}"[:2000])
            print(f"  {label}: {failures[-1]}", flush=True)
            continue
        errors[f"{label} Out"] = loops.rel_err(out, out4.detach())
        errors[label] = max(loops.rel_err(g, w) for g, w in zip(grads, want))
        print(f"  {label} schedule:\n    " + "\n    ".join(
            op.backward_kernel.schedule().splitlines()), flush=True)
        calls.insert(0, (label, lambda out=out, inputs=inputs: torch.autograd.grad(
            out, inputs, do, retain_graph=True)))
    print("  max abs diff / max |SDPA| (Out; dQ, dK, dV): "
          + ", ".join(f"{k} {e:.2e}" for k, e in errors.items()), flush=True)
    bad = [k for k, e in errors.items() if not e <= loops.ATTN_TOL]
    if bad:
        failures.append(f"L={L}: " + ", ".join(f"{k} {errors[k]:.2e}" for k in bad))
        # (a wrong Out fails its backward too: "tutorial Out" drops "tutorial")
        untimed = {k.removesuffix(" Out") for k in bad}
        calls = [(who, fn) for who, fn in calls if who not in untimed]
    times, parts = loops.time_calls(calls)
    return dict(L=L, heads=heads, times=times, parts=parts, errors=errors)


def report(rows, opts, failures) -> str:
    lines = [f"{torch.cuda.get_device_name()}, torch {torch.__version__}, "
             f"triton {triton.__version__}", "",
             f"Triton's fused-attention tutorial (`{os.path.basename(opts.tutorial)}`): its "
             f"causal forward `_attn_fwd` ({opts.block_m}x{opts.block_n} blocks, "
             f"{opts.warps} warps, {opts.stages} stages), fp16, D={D}. GPU us per backward:",
             "", "| L | heads | tritonad.autograd | tuned | deterministic | tutorial backward | "
             "flash | autograd / tutorial | tuned / tutorial | deterministic / tutorial | "
             "autograd / flash | tuned / flash | tutorial / flash |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def us(row, who):  # (None: not run, see Failures)
        return row["times"].get(who, (None,))[0]

    def text(value, digits):
        return "-" if value is None else f"{value:.{digits}f}"

    def ratio(x, y):
        return None if x is None or y is None else x / y
    for row in rows:
        a, u, d, t, f = (us(row, w) for w in ("tritonad.autograd", "tuned", "deterministic",
                                                 "tutorial", "flash"))
        cells = [text(v, 1) for v in (a, u, d, t, f)] + [
            text(ratio(x, y), 2) for x, y in ((a, t), (u, t), (d, t), (a, f), (u, f), (t, f))]
        lines.append(f"| {row['L']} | {row['heads']} | " + " | ".join(cells) + " |")
    lines += ["", "GPU time per call by kernel (us):"]
    for row in rows:
        for who, parts in row["parts"].items():
            lines.append(f"- L={row['L']} / {who}: {loops.top(parts)}")
    if failures:
        lines += ["", "Failures:", ""] + [f"- {f}" for f in failures]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tutorial", required=True,
                        help="path of a copy of Triton's python/tutorials/06-fused-attention.py")
    parser.add_argument("--lengths", default="1024,4096,8192")
    parser.add_argument("--block-m", type=int, default=64)
    parser.add_argument("--block-n", type=int, default=64)
    parser.add_argument("--warps", type=int, default=4)
    parser.add_argument("--stages", type=int, default=3)
    parser.add_argument("--out")
    opts = parser.parse_args()
    if not torch.cuda.is_available():
        print("no GPU: tutorial attention benchmark skipped")
        return 0
    tut = load_tutorial(opts.tutorial)
    rows, failures = [], []
    for L in (int(x) for x in opts.lengths.split(",") if x):
        try:
            rows.append(case(tut, L, 16 if L <= 2048 else 4, opts, failures))
        except Exception as error:  # noqa: BLE001
            traceback.print_exc()
            failures.append(f"L={L}: {type(error).__name__}: {error}"[:2000])
    text = report(rows, opts, failures)
    print(text)
    if opts.out:
        with open(opts.out, "w") as f:
            f.write(text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
