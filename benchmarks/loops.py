"""Backward of loops carrying a running max: GPU time of tritonad's derived kernels.

Two workloads whose forward loop carries a running max used only to stabilize
exponentials (the kernels are test/test_loops.py's):

  attention      causal flash attention forward (causal_attention_fwd, or with
                 --attention-kernel two_stage_causal_attention_fwd the same in two loops
                 as Triton's tutorial structures it), fp16, head dim 64,
                 L in 512 .. 8192, batch*heads 16 (L <= 2048) or 4 (L >= 4096),
                 BLOCK_M x BLOCK_N 64 x 64 by default. Backward of
                   tritonad  tritonad.grad(causal_attention_fwd) launched with zeroed
                             dQ/dK/dV (the three zero_() fills are part of the timed call)
                             and the upstream gradient of Out; no upstream gradient for
                             Lse (dLse=None), as torch gets none
                   tritonad.autograd  what a user pays: loss.backward() through
                             tritonad.autograd(causal_attention_fwd), whose forward saves
                             residuals (the loop's final max, sum and accumulator) that
                             the backward reads instead of re-running the forward loop
                   deterministic  the same through tritonad.autograd(..., mode=
                             "deterministic"): no atomics; dK and dV get programs of their
                             own (one per key block, looping over the query blocks that
                             reach it, reading the row statistics the forward's programs
                             stage), dQ is written once per element (checked at launch)
                   flash     torch.autograd.grad of F.scaled_dot_product_attention(q, k, v,
                             is_causal=True) on (B, H, L, D) fp16 tensors (the flash
                             backend where torch offers it)
                   compile   (--compile) torch.compile of the same math written out:
                             masked scores, fp32 softmax, p @ v
                 Before timing, tritonad's Out, dQ, dK, dV are compared with SDPA's: max abs
                 difference / max |SDPA|, which must be <= 2e-2 (fp16 inputs).
  ce             cross-entropy, 4096 rows x 32000 logits fp32, one program per row, an
                 online logsumexp over vocabulary blocks of 4096 (cross_entropy_fwd).
                 Backward of tritonad (tritonad.grad into zeroed dlogits, the fill timed;
                 and tritonad.autograd, what a user pays: a fresh buffer, overwritten)
                 against torch
                 eager and torch.compile of F.cross_entropy(logits, targets,
                 reduction='none'). tritonad's dlogits is first checked against the
                 fp64 reference (max abs err <= 1e-4 * max |ref|).

GPU time: the torch profiler's device time of every CUDA event (kernels, copies, fills)
of ITERS calls, divided by ITERS (as benchmarks/user_level.py; fewer calls when one call
takes long). Wall time: triton.testing.do_bench. The schedule note of the derived
kernel's loop is printed ("stabilizer": reversed in O(n); "n(n-1)/2": the quadratic
replay), with the kernels that take the GPU time.

    python3 benchmarks/loops.py [--out FILE] [--only attention|ce]
                                [--lengths 512,1024] [--compile] [--block-m 64 --block-n 64]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

import torch
import triton

_HERE = os.path.dirname(os.path.abspath(__file__))
_TEST = os.path.join(os.path.dirname(_HERE), "test")

ITERS = 20
CALL_BUDGET_S = 1.0       # profile at most about this much GPU time per measurement
ATTN_TOL = 2e-2           # fp16: max abs diff vs SDPA <= ATTN_TOL * max |SDPA|
CE_TOL = 1e-4             # fp32: max abs err vs fp64 <= CE_TOL * max |ref|
DEVICE = "cuda"
F = torch.nn.functional


def loop_kernels():
    """The kernels of test/corpus/online_softmax.py, imported on demand."""
    if _TEST not in sys.path:
        sys.path.insert(0, _TEST)
    from corpus import online_softmax
    return online_softmax


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------

def calls_for(fn) -> int:
    """How many calls to profile: ITERS, fewer where one call is long."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1000.0
    return max(3, min(ITERS, int(CALL_BUDGET_S / max(seconds, 1e-9))))


def gpu_time_us(fn, iters=None):
    """(GPU us per call, {kernel name: us per call}) from the torch profiler."""
    import user_level
    return user_level.gpu_time_us(fn, iters or calls_for(fn))


def wall_us(fn):
    import user_level
    return user_level.wall_us(fn)


def time_calls(calls):
    """{who: (GPU us, wall us)} and {who: GPU us by kernel}, printed."""
    times, parts = {}, {}
    for who, fn in calls:
        gpu, parts[who] = gpu_time_us(fn)
        times[who] = (gpu, wall_us(fn))
    print("  GPU us: " + ", ".join(f"{k} {v[0]:.1f}" for k, v in times.items()), flush=True)
    for who in times:
        print(f"    {who}: {top(parts[who])}")
    return times, parts


def top(parts, n=4):
    import user_level
    return user_level.top(parts, n)


def rel_err(got, want):
    """max |got - want| / max |want| (in fp64)."""
    want = want.double()
    return (got.double() - want).abs().max().item() / max(want.abs().max().item(), 1e-30)


def loop_kind(bwd) -> str:
    notes = [line for line in (bwd.schedule() or "").splitlines() if line.startswith("loop ")]
    if any("stabilizer" in n for n in notes):
        return "stabilizer"
    if any("n(n-1)/2" in n for n in notes):
        return "replay n(n-1)/2"
    return "other" if notes else "?"


def print_schedule(bwd):
    for line in (bwd.schedule() or "(no schedule reported)").splitlines():
        print(f"    {line}")


# ---------------------------------------------------------------------------
# Causal attention
# ---------------------------------------------------------------------------

def sdpa_flash_context():
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        return sdpa_kernel([SDPBackend.FLASH_ATTENTION])
    except Exception:  # noqa: BLE001  (older torch: whatever backend it picks)
        import contextlib
        return contextlib.nullcontext()


def attention_case(L, opts, failures):
    tk = loop_kernels()
    import tritonad

    BH = 16 if L <= 2048 else 4
    B, H = (2, 8) if BH == 16 else (1, 4)
    D, dtype = opts.head_dim, torch.float16
    sm_scale = D ** -0.5
    print(f"\n== causal attention L={L} B*H={BH} D={D} fp16", flush=True)
    q, k, v = (torch.randn(BH, L, D, device=DEVICE, dtype=dtype) for _ in range(3))
    out = torch.empty_like(q)
    lse = torch.empty(BH, L, device=DEVICE, dtype=torch.float32)
    grid = (triton.cdiv(L, opts.block_m), BH)
    meta = dict(BLOCK_M=opts.block_m, BLOCK_N=opts.block_n, HEAD_DIM=D,
                num_warps=opts.warps, num_stages=opts.stages)
    args = (q, k, v, out, lse, sm_scale, L, q.stride(0), q.stride(1))
    kernel = getattr(tk, opts.attention_kernel)
    kernel[grid](*args, **meta)
    dout = torch.randn_like(q)

    bwd = tritonad.grad(kernel)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    upstream = dout.clone()

    def launch():
        bwd[grid](*args, dQ=dq, dK=dk, dV=dv, dOut=upstream, dLse=None, **meta)

    def tritonad_call():
        dq.zero_()
        dk.zero_()
        dv.zero_()
        launch()
    launch()                                  # compiles (and derives) the backward
    torch.cuda.synchronize()
    if "dOut" in (bwd.written_shadows() or ()):
        # the backward consumes its upstream gradient: refresh it (timed too)
        def tritonad_call():  # noqa: F811
            dq.zero_()
            dk.zero_()
            dv.zero_()
            upstream.copy_(dout)
            launch()
    tritonad_call()
    got = (dq.clone(), dk.clone(), dv.clone())

    q4, k4, v4 = (t.detach().view(B, H, L, D).clone().requires_grad_(True) for t in (q, k, v))
    dout4 = dout.view(B, H, L, D)
    with sdpa_flash_context():
        out4 = F.scaled_dot_product_attention(q4, k4, v4, is_causal=True, scale=sm_scale)
    want = torch.autograd.grad(out4, (q4, k4, v4), dout4, retain_graph=True)

    def flash_call():
        torch.autograd.grad(out4, (q4, k4, v4), dout4, retain_graph=True)

    errors = {"Out": rel_err(out, out4.detach().reshape(BH, L, D))}
    for name, g, w in zip(("dQ", "dK", "dV"), got, want):
        errors[name] = rel_err(g, w.reshape(BH, L, D))
    ok = all(e <= ATTN_TOL for e in errors.values()) and all(
        bool(torch.isfinite(g).all()) for g in got)
    print("  tritonad vs SDPA, max abs diff / max |SDPA|: "
          + ", ".join(f"{k} {e:.2e}" for k, e in errors.items())
          + f" (tol {ATTN_TOL:g}) {'ok' if ok else 'MISMATCH'}")
    print_schedule(bwd)
    kind = loop_kind(bwd)
    if not ok:
        failures.append(f"attention L={L}: " + ", ".join(
            f"{k} {e:.2e}" for k, e in errors.items() if not e <= ATTN_TOL))
        print("  CHECK FAILED: not timed", flush=True)
        return None

    # What a user pays: the torch op, whose forward saves residuals (the loop's
    # final statistics and accumulator) that its backward reads.
    op = tritonad.autograd(kernel, outputs=("Out", "Lse"))
    user_in = tuple(t.detach().clone().requires_grad_(True) for t in (q, k, v))
    user_out = op[grid](*user_in, torch.empty_like(out), torch.empty_like(lse), *args[5:],
                        **meta)[0]
    user_grads = torch.autograd.grad(user_out, user_in, dout, retain_graph=True)
    user_err = max(rel_err(g, w.reshape(BH, L, D)) for g, w in zip(user_grads, want))
    print(f"  tritonad.autograd vs SDPA, max over dQ, dK, dV: {user_err:.2e}")
    print("  tritonad.autograd schedule: " + "\n    ".join(
        op.backward_kernel.schedule().splitlines()))
    if not user_err <= ATTN_TOL:
        failures.append(f"attention L={L} through tritonad.autograd: {user_err:.2e}")
    calls = [("tritonad", tritonad_call),
             ("tritonad.autograd", lambda: torch.autograd.grad(user_out, user_in, dout,
                                                               retain_graph=True)),
             ("flash", flash_call)]
    det = tritonad.autograd(kernel, outputs=("Out", "Lse"), mode="deterministic")
    det_in = tuple(t.detach().clone().requires_grad_(True) for t in (q, k, v))
    det_out = det[grid](*det_in, torch.empty_like(out), torch.empty_like(lse), *args[5:],
                        **meta)[0]

    def det_call():
        return torch.autograd.grad(det_out, det_in, dout, retain_graph=True)
    first = det_call()
    det_err = max(rel_err(g, w.reshape(BH, L, D)) for g, w in zip(first, want))
    reproducible = all(torch.equal(x, y) for x, y in zip(first, det_call()))
    from tritonad import _regrid
    print(f"  deterministic vs SDPA, max over dQ, dK, dV: {det_err:.2e}; bitwise "
          f"reproducible {reproducible}; parts: {_regrid.describe(_regrid.last_table)}")
    print("  deterministic schedule: " + "\n    ".join(
        det.backward_kernel.schedule().splitlines()))
    if not det_err <= ATTN_TOL or not reproducible:
        failures.append(f"attention L={L} deterministic: error {det_err:.2e}, "
                        f"reproducible {reproducible}")
    calls.insert(2, ("deterministic", det_call))
    if opts.tune:
        # The backward's own launch options (tune=True), searched on the first call.
        tuned = tritonad.autograd(kernel, outputs=("Out", "Lse"), tune=True)
        tuned_in = tuple(t.detach().clone().requires_grad_(True) for t in (q, k, v))
        tuned_out = tuned[grid](*tuned_in, torch.empty_like(out), torch.empty_like(lse),
                                *args[5:], **meta)[0]

        def tuned_call():
            return torch.autograd.grad(tuned_out, tuned_in, dout, retain_graph=True)
        tuned_err = max(rel_err(g, w.reshape(BH, L, D)) for g, w in zip(tuned_call(), want))
        print(f"  tuned vs SDPA, max over dQ, dK, dV: {tuned_err:.2e}")
        if not tuned_err <= ATTN_TOL:
            failures.append(f"attention L={L} tuned: error {tuned_err:.2e}")
        calls.insert(2, ("tuned", tuned_call))
    if opts.compile:
        keep = torch.ones(L, L, dtype=torch.bool, device=DEVICE).tril()

        def attn_math(a, b, c):
            s = (a @ b.transpose(-1, -2)).float() * sm_scale
            s = s.masked_fill(~keep, float("-inf"))
            return torch.softmax(s, -1).to(c.dtype) @ c
        compiled = torch.compile(attn_math, dynamic=False)
        qc, kc, vc = (t.detach().clone().requires_grad_(True) for t in (q4, k4, v4))
        outc = compiled(qc, kc, vc)
        wantc = torch.autograd.grad(outc, (qc, kc, vc), dout4, retain_graph=True)
        print("  compile vs SDPA (information): "
              + ", ".join(f"{n} {rel_err(g, w):.2e}"
                          for n, g, w in zip(("dQ", "dK", "dV"), wantc, want)))
        calls.append(("compile", lambda: torch.autograd.grad(outc, (qc, kc, vc), dout4,
                                                             retain_graph=True)))
    times, parts = time_calls(calls)
    return dict(L=L, BH=BH, times=times, parts=parts, errors=errors, loop=kind)


# ---------------------------------------------------------------------------
# Cross-entropy
# ---------------------------------------------------------------------------

def ce_case(opts, failures, rows=4096, V=32000, block=4096):
    tk = loop_kernels()
    import tritonad
    import torch._functorch.config

    torch._functorch.config.donated_buffer = False  # time a compiled backward repeatedly
    print(f"\n== cross-entropy {rows} x {V} fp32, BLOCK {block}", flush=True)
    logits = torch.randn(rows, V, device=DEVICE) * 3
    targets = torch.randint(0, V, (rows,), device=DEVICE, dtype=torch.int64)
    loss = torch.empty(rows, device=DEVICE)
    nw = opts.ce_warps
    tk.cross_entropy_fwd[(rows,)](logits, targets, loss, logits.stride(0), V, BLOCK=block,
                                  num_warps=nw)
    dloss = torch.randn(rows, device=DEVICE)
    bwd = tritonad.grad(tk.cross_entropy_fwd)
    dlogits = torch.zeros_like(logits)
    upstream = dloss.clone()

    def launch():
        bwd[(rows,)](logits, targets, loss, logits.stride(0), V, dlogits=dlogits,
                     dtargets=None, dloss=upstream, BLOCK=block, num_warps=nw)

    def tritonad_call():
        dlogits.zero_()
        launch()
    launch()
    torch.cuda.synchronize()
    if "dloss" in (bwd.written_shadows() or ()):
        def tritonad_call():  # noqa: F811
            dlogits.zero_()
            upstream.copy_(dloss)
            launch()
    tritonad_call()

    ref_in = logits.double().requires_grad_(True)
    ref_loss = F.cross_entropy(ref_in, targets, reduction="none")
    (ref,) = torch.autograd.grad(ref_loss, ref_in, dloss.double())
    loss_err = rel_err(loss, ref_loss.detach())
    err = rel_err(dlogits, ref)
    del ref_in, ref_loss, ref
    ok = err <= CE_TOL and loss_err <= CE_TOL and bool(torch.isfinite(dlogits).all())
    print(f"  tritonad vs torch fp64, max abs err / max |ref|: loss {loss_err:.2e}, "
          f"dlogits {err:.2e} (tol {CE_TOL:g}) {'ok' if ok else 'MISMATCH'}")
    print_schedule(bwd)
    kind = loop_kind(bwd)
    if not ok:
        failures.append(f"cross-entropy: loss {loss_err:.2e}, dlogits {err:.2e}")
        print("  CHECK FAILED: not timed", flush=True)
        return None

    def ce(t):
        return F.cross_entropy(t, targets, reduction="none")
    eager_in = logits.clone().requires_grad_(True)
    eager_out = ce(eager_in)
    compiled = torch.compile(ce, dynamic=False)
    comp_in = logits.clone().requires_grad_(True)
    comp_out = compiled(comp_in)
    torch.autograd.grad(comp_out, comp_in, dloss, retain_graph=True)
    # What a user pays: the torch op (fresh gradient buffer, overwritten where the
    # stores cover it, so no zero fill).
    op = tritonad.autograd(tk.cross_entropy_fwd, outputs=("loss",))
    user_in = logits.clone().requires_grad_(True)
    user_out = op[(rows,)](user_in, targets, torch.empty_like(loss), logits.stride(0), V,
                           BLOCK=block, num_warps=nw)
    (user_grad,) = torch.autograd.grad(user_out, user_in, dloss, retain_graph=True)
    user_err = rel_err(user_grad, dlogits)
    print(f"  tritonad.autograd vs tritonad.grad: {user_err:.2e}")
    if user_err > CE_TOL:
        failures.append(f"cross-entropy through tritonad.autograd: {user_err:.2e}")
    calls = [("tritonad", tritonad_call),
             ("tritonad.autograd", lambda: torch.autograd.grad(user_out, user_in, dloss,
                                                               retain_graph=True)),
             ("eager", lambda: torch.autograd.grad(eager_out, eager_in, dloss,
                                                   retain_graph=True)),
             ("compile", lambda: torch.autograd.grad(comp_out, comp_in, dloss,
                                                     retain_graph=True))]
    times, parts = time_calls(calls)
    return dict(shape=f"{rows} x {V}", block=block, times=times, parts=parts, err=err,
                loop=kind)


# ---------------------------------------------------------------------------

def split_list(values):
    return [v.strip() for item in (values or []) for v in item.split(",") if v.strip()]


def report(attention_rows, ce_row, opts, failures) -> str:
    lines = []
    if attention_rows:
        extra = " compile GPU us | tritonad/compile |" if opts.compile else ""
        tuned = " tuned GPU us | tuned/flash |" if opts.tune else ""
        header = ("| L | B*H | tritonad GPU us | tritonad.autograd GPU us | "
                  "deterministic GPU us | flash GPU us | "
                  "tritonad/flash | tritonad.autograd/flash | deterministic/flash |" + tuned
                  + extra
                  + " tritonad wall us | flash wall us | loop | max diff vs SDPA (dQ, dK, dV) |")
        lines += [f"Causal attention ({opts.attention_kernel}), fp16, D={opts.head_dim}, "
                  f"BLOCK_M={opts.block_m}, "
                  f"BLOCK_N={opts.block_n}, num_warps={opts.warps}, num_stages={opts.stages}:",
                  "", header, "|" + "---|" * (header.count("|") - 1)]
        for r in attention_rows:
            t = r["times"]
            user = t["tritonad.autograd"][0]
            det = t["deterministic"][0]
            cells = [str(r["L"]), str(r["BH"]), f"{t['tritonad'][0]:.1f}", f"{user:.1f}",
                     f"{det:.1f}", f"{t['flash'][0]:.1f}",
                     f"{t['tritonad'][0] / t['flash'][0]:.2f}",
                     f"{user / t['flash'][0]:.2f}", f"{det / t['flash'][0]:.2f}"]
            if opts.tune:
                cells += [f"{t['tuned'][0]:.1f}", f"{t['tuned'][0] / t['flash'][0]:.2f}"]
            if opts.compile:
                cells += [f"{t['compile'][0]:.1f}", f"{t['tritonad'][0] / t['compile'][0]:.2f}"]
            cells += [f"{t['tritonad'][1]:.1f}", f"{t['flash'][1]:.1f}", r["loop"],
                      ", ".join(f"{r['errors'][n]:.1e}" for n in ("dQ", "dK", "dV"))]
            lines.append("| " + " | ".join(cells) + " |")
        lines += ["", "GPU time per call by kernel (us):"]
        for r in attention_rows:
            for who, parts in r["parts"].items():
                lines.append(f"- L={r['L']} / {who}: {top(parts, 5)}")
        lines.append("")
    if ce_row:
        t = ce_row["times"]
        header = ("| rows x V | tritonad GPU us | tritonad.autograd GPU us | eager GPU us | "
                  "compile GPU us | tritonad/compile | tritonad.autograd/compile | "
                  "tritonad/eager | tritonad wall us | compile wall us | loop | "
                  "max err vs fp64 |")
        lines += [f"Cross-entropy, fp32, BLOCK={ce_row['block']}, num_warps={opts.ce_warps}:",
                  "", header, "|" + "---|" * (header.count("|") - 1)]
        user = t["tritonad.autograd"][0]
        lines.append(f"| {ce_row['shape']} | {t['tritonad'][0]:.1f} | {user:.1f} | "
                     f"{t['eager'][0]:.1f} | "
                     f"{t['compile'][0]:.1f} | {t['tritonad'][0] / t['compile'][0]:.2f} | "
                     f"{user / t['compile'][0]:.2f} | "
                     f"{t['tritonad'][0] / t['eager'][0]:.2f} | {t['tritonad'][1]:.1f} | "
                     f"{t['compile'][1]:.1f} | {ce_row['loop']} | {ce_row['err']:.1e} |")
        lines += ["", "GPU time per call by kernel (us):"]
        for who, parts in ce_row["parts"].items():
            lines.append(f"- {who}: {top(parts, 5)}")
        lines.append("")
    lines.append("GPU us: torch-profiler device time of every kernel, copy and fill per "
                 "backward call; tritonad's includes the zero fills of its gradient buffers. "
                 "wall us: triton.testing.do_bench. loop: the derived kernel's schedule note "
                 "(stabilizer: O(n) reversal; replay n(n-1)/2: quadratic recomputation).")
    if failures:
        lines += ["", "FAILED: " + "; ".join(failures)]
    head = (f"{torch.cuda.get_device_name()}, torch {torch.__version__}, "
            f"triton {triton.__version__}\n\n")
    return head + "\n".join(lines) + "\n"


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="also write the markdown table here")
    parser.add_argument("--only", choices=["attention", "ce"], help="run one workload")
    parser.add_argument("--lengths", action="append", metavar="512,1024",
                        help="attention sequence lengths (default 512,1024,2048,4096,8192)")
    parser.add_argument("--compile", action="store_true",
                        help="also time torch.compile of the attention math")
    parser.add_argument("--block-m", type=int, default=64)
    parser.add_argument("--block-n", type=int, default=64)
    parser.add_argument("--head-dim", type=int, default=64, choices=(64, 128),
                        help="attention head dimension")
    parser.add_argument("--warps", type=int, default=4, help="attention num_warps")
    parser.add_argument("--stages", type=int, default=2, help="attention num_stages")
    parser.add_argument("--attention-kernel", default="causal_attention_fwd",
                        choices=["causal_attention_fwd", "two_stage_causal_attention_fwd"],
                        help="one key loop, or two as in Triton's tutorial (off-diagonal "
                             "blocks, then the diagonal)")
    parser.add_argument("--ce-warps", type=int, default=8, help="cross-entropy num_warps")
    parser.add_argument("--tune", action="store_true",
                        help="also time tritonad.autograd(..., tune=True): the backward's "
                             "own launch options")
    return parser


def lengths_of(opts):
    return [int(x) for x in split_list(opts.lengths)] or [512, 1024, 2048, 4096, 8192]


def measure(opts):
    """The workloads opts choose (build_parser's options), checked then timed:
    (attention rows, cross-entropy row or None, failures). Used by main and
    benchmarks/results.py."""
    torch.manual_seed(0)
    failures, attention_rows, ce_row = [], [], None
    if opts.only in (None, "attention"):
        for L in lengths_of(opts):
            try:
                row = attention_case(L, opts, failures)
            except Exception as error:  # noqa: BLE001
                traceback.print_exc()
                failures.append(f"attention L={L}: {type(error).__name__}: {error}")
                row = None
            if row:
                attention_rows.append(row)
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    if opts.only in (None, "ce"):
        try:
            ce_row = ce_case(opts, failures)
        except Exception as error:  # noqa: BLE001
            traceback.print_exc()
            failures.append(f"cross-entropy: {type(error).__name__}: {error}")
    return attention_rows, ce_row, failures


def main():
    parser = build_parser()
    opts = parser.parse_args()
    try:
        lengths_of(opts)
    except ValueError:
        parser.error(f"--lengths takes integers: {opts.lengths}")
    if not torch.cuda.is_available():
        print("no GPU: loop benchmark skipped")
        return 0

    start = time.perf_counter()
    attention_rows, ce_row, failures = measure(opts)
    text = report(attention_rows, ce_row, opts, failures)
    import user_level
    return user_level.finish(text, opts.out, failures, start)


if __name__ == "__main__":
    sys.exit(main())
