"""What a user pays in wall time for forward + backward of one op, host included.

For GELU, SwiGLU, softmax, layer norm and RMSNorm (the forward kernels of bench.py),
at a small size (launches dominate: 65,536 elements, 64 x 1024 rows) and a medium one
(4M elements, 1024 x 4096 rows), one step -- the forward call and ``.backward()`` --
is timed as a training loop runs it: the mean wall time per step over 100 steps
launched back to back, then a synchronize, in 7 rounds that time every method in turn
(the best round per method; host and GPU overlap as they do in training, so the slower
of the two is what shows), for

  eager      torch autograd on the torch reference
  compile    torch.compile of the torch reference
  hand       a hand-written ``torch.autograd.Function``: the same Triton forward and the
             hand-written Triton backward of bench.py (fresh gradient buffers)
  kernel     ``tritonad.autograd(forward_kernel, outputs=...)`` launched like the kernel
  launcher   a Python launcher (allocates outputs, launches the kernel) decorated with
             ``@tritonad.autograd``, the form most users write

and, with ``--graphs``, the replay time of the same step captured in a CUDA graph
(``torch.cuda.graph``), or the error capture raised. Every method's gradients are
first checked against eager torch in fp64 (a wrong method is reported, not timed).

    python3 benchmarks/host_overhead.py [--ops gelu,ln] [--sizes small,medium]
                                        [--dtype fp32|bf16] [--graphs] [--no-compile]
                                        [--profile gelu] [--breakdown] [--out FILE]

``--breakdown`` adds the forward alone (its graph made and dropped) per method.

``--profile OP`` prints where the host time of the ``launcher`` and ``kernel`` steps
goes (cProfile, 200 steps, top functions by own time).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test"))
import bench  # noqa: E402  (forward kernels, hand-written backward kernels)
from gpu_util import captured  # noqa: E402

import tritonad  # noqa: E402

import torch._functorch.config  # noqa: E402

torch._functorch.config.donated_buffer = False
F = torch.nn.functional
DEVICE = "cuda"
EW_BLOCK = 1024
METHODS = ("eager", "compile", "hand", "kernel", "launcher")
SIZES = {"small": dict(n=1 << 16, m=64, cols=1024), "medium": dict(n=1 << 22, m=1024, cols=4096)}


@dataclass
class Op:
    """One op at one size: the inputs (leaves) and, per method, a forward returning y."""
    name: str
    inputs: List[torch.Tensor]
    forwards: Dict[str, Callable[[], torch.Tensor]]
    reference: Callable[..., torch.Tensor]


def _groups(m: int) -> int:
    return min(m, 2 * torch.cuda.get_device_properties(0).multi_processor_count)


def _f32(*shape):
    return torch.empty(*shape, device=DEVICE, dtype=torch.float32)


def _hand_function(forward, backward):
    """A torch.autograd.Function as people write them: forward(ctx, *inputs) launches
    the Triton forward and saves what the backward reads; backward launches the
    hand-written kernels into fresh buffers."""
    class Hand(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            y, saved = forward(*inputs)
            ctx.save_for_backward(*saved)
            return y

        @staticmethod
        def backward(ctx, dy):
            return backward(dy.contiguous(), *ctx.saved_tensors)
    return Hand.apply


def gelu(size, dtype) -> Op:
    n = size["n"]
    grid = (triton.cdiv(n, EW_BLOCK),)
    x = torch.randn(n, device=DEVICE, dtype=dtype, requires_grad=True)
    kernel = tritonad.autograd(bench.gelu_fwd, outputs=("y_ptr",))

    @tritonad.autograd
    def launcher(x):
        y = torch.empty_like(x)
        bench.gelu_fwd[(triton.cdiv(x.numel(), EW_BLOCK),)](x, y, x.numel(), BLOCK=EW_BLOCK)
        return y

    def fwd(x):
        y = torch.empty_like(x)
        bench.gelu_fwd[grid](x, y, n, BLOCK=EW_BLOCK)
        return y, (x,)

    def bwd(dy, x):
        dx = torch.empty_like(x)
        bench.gelu_bwd_hand[grid](x, dy, dx, n, BLOCK=EW_BLOCK)
        return dx
    hand = _hand_function(fwd, bwd)
    return Op("GELU", [x], {
        "kernel": lambda: kernel[grid](x, torch.empty_like(x), n, BLOCK=EW_BLOCK),
        "launcher": lambda: launcher(x),
        "hand": lambda: hand(x),
    }, F.gelu)


def swiglu(size, dtype) -> Op:
    n = size["n"]
    grid = (triton.cdiv(n, EW_BLOCK),)
    a = torch.randn(n, device=DEVICE, dtype=dtype, requires_grad=True)
    b = torch.randn(n, device=DEVICE, dtype=dtype, requires_grad=True)
    kernel = tritonad.autograd(bench.swiglu_fwd, outputs=("y_ptr",))

    @tritonad.autograd
    def launcher(a, b):
        y = torch.empty_like(a)
        bench.swiglu_fwd[(triton.cdiv(a.numel(), EW_BLOCK),)](a, b, y, a.numel(),
                                                               BLOCK=EW_BLOCK)
        return y

    def fwd(a, b):
        y = torch.empty_like(a)
        bench.swiglu_fwd[grid](a, b, y, n, BLOCK=EW_BLOCK)
        return y, (a, b)

    def bwd(dy, a, b):
        da, db = torch.empty_like(a), torch.empty_like(b)
        bench.swiglu_bwd_hand[grid](a, b, dy, da, db, n, BLOCK=EW_BLOCK)
        return da, db
    hand = _hand_function(fwd, bwd)
    return Op("SwiGLU", [a, b], {
        "kernel": lambda: kernel[grid](a, b, torch.empty_like(a), n, BLOCK=EW_BLOCK),
        "launcher": lambda: launcher(a, b),
        "hand": lambda: hand(a, b),
    }, lambda s, t: F.silu(s) * t)


def softmax(size, dtype) -> Op:
    m, n = size["m"], size["cols"]
    block, nw = bench.row_block(n)
    x = torch.randn(m, n, device=DEVICE, dtype=dtype, requires_grad=True)
    kernel = tritonad.autograd(bench.softmax_fwd, outputs=("y_ptr",))

    @tritonad.autograd
    def launcher(x):
        y = torch.empty_like(x)
        bench.softmax_fwd[(x.shape[0],)](y, x, x.stride(0), y.stride(0), x.shape[1],
                                         BLOCK_N=block, num_warps=nw)
        return y

    def fwd(x):
        y = torch.empty_like(x)
        bench.softmax_fwd[(m,)](y, x, x.stride(0), y.stride(0), n, BLOCK_N=block,
                                num_warps=nw)
        return y, (y,)

    def bwd(dy, y):
        dx = torch.empty_like(y)
        bench.softmax_bwd_hand[(m,)](dx, y, dy, y.stride(0), n, BLOCK_N=block, num_warps=nw)
        return dx
    hand = _hand_function(fwd, bwd)
    return Op("softmax", [x], {
        "kernel": lambda: kernel[(m,)](torch.empty_like(x), x, x.stride(0), x.stride(0), n,
                                       BLOCK_N=block, num_warps=nw),
        "launcher": lambda: launcher(x),
        "hand": lambda: hand(x),
    }, lambda t: torch.softmax(t, -1))


def layer_norm(size, dtype) -> Op:
    m, n = size["m"], size["cols"]
    block, nw = bench.row_block(n)
    x = torch.randn(m, n, device=DEVICE, dtype=dtype, requires_grad=True)
    w = torch.randn(n, device=DEVICE, dtype=dtype, requires_grad=True)
    b = torch.randn(n, device=DEVICE, dtype=dtype, requires_grad=True)
    kernel = tritonad.autograd(bench.layernorm_fwd, outputs=("Y",), wrt=("X", "W", "B"))
    groups = _groups(m)

    @tritonad.autograd
    def launcher(x, w, b):
        y = torch.empty_like(x)
        mean, rstd = _f32(x.shape[0]), _f32(x.shape[0])
        bench.layernorm_fwd[(x.shape[0],)](x, y, w, b, mean, rstd, x.stride(0), x.shape[1],
                                           bench.LN_EPS, BLOCK_N=block, num_warps=nw)
        return y

    def fwd(x, w, b):
        y, mean, rstd = torch.empty_like(x), _f32(m), _f32(m)
        bench.layernorm_fwd[(m,)](x, y, w, b, mean, rstd, x.stride(0), n, bench.LN_EPS,
                                  BLOCK_N=block, num_warps=nw)
        return y, (x, w, mean, rstd)

    def bwd(dy, x, w, mean, rstd):
        dx = torch.empty_like(x)
        pdw, pdb = _f32(groups, n), _f32(groups, n)
        dw, db = torch.empty_like(w), torch.empty_like(w)
        bench.layernorm_bwd_hand_dx[(groups,)](x, dy, dx, w, mean, rstd, pdw, pdb, x.stride(0),
                                               m, n, groups, BLOCK_N=block, num_warps=nw)
        bench.layernorm_bwd_hand_dwdb[(triton.cdiv(n, bench.LN_BLOCK_C),)](
            pdw, pdb, dw, db, groups, n, BLOCK_G=bench.LN_BLOCK_G, BLOCK_C=bench.LN_BLOCK_C)
        return dx, dw, db
    hand = _hand_function(fwd, bwd)
    return Op("layer norm", [x, w, b], {
        "kernel": lambda: kernel[(m,)](x, torch.empty_like(x), w, b, _f32(m), _f32(m),
                                       x.stride(0), n, bench.LN_EPS, BLOCK_N=block,
                                       num_warps=nw),
        "launcher": lambda: launcher(x, w, b),
        "hand": lambda: hand(x, w, b),
    }, lambda t, ww, bb: F.layer_norm(t, (n,), ww, bb, bench.LN_EPS))


def rms_norm(size, dtype) -> Op:
    m, n = size["m"], size["cols"]
    block, nw = bench.row_block(n)
    x = torch.randn(m, n, device=DEVICE, dtype=dtype, requires_grad=True)
    w = torch.randn(n, device=DEVICE, dtype=dtype, requires_grad=True)
    kernel = tritonad.autograd(bench.rmsnorm_fwd, outputs=("Y",), wrt=("X", "W"))
    groups = _groups(m)

    @tritonad.autograd
    def launcher(x, w):
        y, rstd = torch.empty_like(x), _f32(x.shape[0])
        bench.rmsnorm_fwd[(x.shape[0],)](x, y, w, rstd, x.stride(0), x.shape[1], bench.LN_EPS,
                                         BLOCK_N=block, num_warps=nw)
        return y

    def fwd(x, w):
        y, rstd = torch.empty_like(x), _f32(m)
        bench.rmsnorm_fwd[(m,)](x, y, w, rstd, x.stride(0), n, bench.LN_EPS, BLOCK_N=block,
                                num_warps=nw)
        return y, (x, w, rstd)

    def bwd(dy, x, w, rstd):
        dx, pdw, dw = torch.empty_like(x), _f32(groups, n), torch.empty_like(w)
        bench.rmsnorm_bwd_hand_dx[(groups,)](x, dy, dx, w, rstd, pdw, x.stride(0), m, n,
                                             groups, BLOCK_N=block, num_warps=nw)
        bench.rmsnorm_bwd_hand_dw[(triton.cdiv(n, bench.LN_BLOCK_C),)](
            pdw, dw, groups, n, BLOCK_G=bench.LN_BLOCK_G, BLOCK_C=bench.LN_BLOCK_C)
        return dx, dw
    hand = _hand_function(fwd, bwd)

    def reference(t, ww):
        t32 = t.float()
        return (t32 * torch.rsqrt(t32.pow(2).mean(-1, keepdim=True) + bench.LN_EPS) *
                ww.float()).to(t.dtype)
    return Op("RMSNorm", [x, w], {
        "kernel": lambda: kernel[(m,)](x, torch.empty_like(x), w, _f32(m), x.stride(0), n,
                                       bench.LN_EPS, BLOCK_N=block, num_warps=nw),
        "launcher": lambda: launcher(x, w),
        "hand": lambda: hand(x, w),
    }, reference)


OPS = {"gelu": gelu, "swiglu": swiglu, "softmax": softmax, "ln": layer_norm, "rms": rms_norm}


def add_torch_methods(op: Op, compile_: bool) -> None:
    op.forwards["eager"] = lambda: op.reference(*op.inputs)
    if compile_:
        compiled = torch.compile(op.reference)
        op.forwards["compile"] = lambda: compiled(*op.inputs)


def step_of(op: Op, forward: Callable[[], torch.Tensor], dy: torch.Tensor):
    def step():
        for t in op.inputs:
            t.grad = None
        forward().backward(dy)
    return step


def interleaved_wall_us(steps: Dict[str, Callable[[], None]], rounds: int = 7,
                        iterations: int = 100) -> Dict[str, float]:
    """Mean wall time per step (us) of each method: `rounds` rounds, each timing
    `iterations` steps of every method in turn, the best round per method. A
    shared host's slow spells then fall on every method alike instead of on
    whichever was being timed (methods timed one after another moved by up to
    2x between runs)."""
    for step in steps.values():
        for _ in range(10):
            step()
    torch.cuda.synchronize()
    best = {method: float("inf") for method in steps}
    for _ in range(rounds):
        for method, step in steps.items():
            start = time.perf_counter()
            for _ in range(iterations):
                step()
            torch.cuda.synchronize()
            best[method] = min(best[method], (time.perf_counter() - start) / iterations * 1e6)
    return best


def wall_us(step, iterations: int = 300) -> float:
    """Mean wall time per step (us) of `iterations` steps back to back, best of three."""
    for _ in range(10):
        step()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(iterations):
            step()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / iterations * 1e6)
    return best


def check(op: Op, method: str, dy: torch.Tensor) -> Optional[str]:
    """None, or why the method's gradients are wrong (against fp64 eager)."""
    step_of(op, op.forwards[method], dy)()
    got = [t.grad.clone() for t in op.inputs]
    leaves = [t.detach().double().requires_grad_() for t in op.inputs]
    op.reference(*leaves).backward(dy.double())
    bound = 1e-4 if op.inputs[0].dtype == torch.float32 else 3e-2
    for i, (g, leaf) in enumerate(zip(got, leaves)):
        want = leaf.grad
        error = (g.double() - want).abs().max().item() / max(want.abs().max().item(), 1e-30)
        if not error <= bound:
            return f"gradient {i}: error {error:.2e} relative to its largest element"
    return None


def graph_replay_ms(step) -> str:
    """The step captured in a CUDA graph and replayed (warm-up on a side stream, as
    torch's documentation does), or the error capture raised."""
    try:
        graph = captured(step)
        graph.replay()
        torch.cuda.synchronize()
        return f"{wall_us(graph.replay):.1f}"
    except Exception as error:  # noqa: BLE001  (reported in the table)
        torch.cuda.synchronize()
        return "fails: " + str(error).splitlines()[0][:70]


def profile(op: Op, dy: torch.Tensor) -> str:
    report = io.StringIO()
    for method in ("hand", "launcher", "kernel"):
        step = step_of(op, op.forwards[method], dy)
        for _ in range(20):
            step()
        torch.cuda.synchronize()
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(200):
            step()
        torch.cuda.synchronize()
        profiler.disable()
        report.write(f"\n### {op.name}, {method}: host time per step by function "
                     "(cProfile, 200 steps)\n```\n")
        stats = pstats.Stats(profiler, stream=report)
        stats.sort_stats("tottime").print_stats(30)
        report.write("```\n")
    return report.getvalue()


@dataclass
class Measured:
    """One op at one size: wall us per step by method (None where the method is
    absent or failed; errors says why it failed)."""
    key: str
    size_name: str
    shape: str
    op: Op
    dy: torch.Tensor
    times: Dict[str, Optional[float]]
    errors: Dict[str, str]
    forwards: Dict[str, float]              # --breakdown: the forward alone


def measure(ops: List[str], sizes: List[str], dtype, compile_: bool,
            breakdown: bool = False) -> List[Measured]:
    """Every method's gradients checked, then its step timed, for every op at every
    size. Used by main and benchmarks/results.py."""
    torch.manual_seed(0)
    made = []
    for size_name in sizes:
        for key in ops:
            op = OPS[key](SIZES[size_name], dtype)
            add_torch_methods(op, compile_)
            dy = torch.randn_like(op.forwards["eager"]())
            shape = (f"{SIZES[size_name]['n']}" if key in ("gelu", "swiglu") else
                     f"{SIZES[size_name]['m']}x{SIZES[size_name]['cols']}")
            m = Measured(key, size_name, shape, op, dy, {}, {}, {})
            timed = {}
            for method in METHODS:
                if method not in op.forwards:
                    m.times[method] = None
                    continue
                try:
                    wrong = check(op, method, dy)
                except Exception as error:  # noqa: BLE001
                    traceback.print_exc()
                    wrong = f"raised {type(error).__name__}: {error}"
                if wrong:
                    print(f"CHECK FAILED {op.name} {size_name} {method}: {wrong}")
                    m.times[method] = None
                    m.errors[method] = wrong
                    continue
                timed[method] = step_of(op, op.forwards[method], dy)
                if breakdown:
                    m.forwards[method] = wall_us(op.forwards[method])
            m.times.update(interleaved_wall_us(timed))
            print(f"{op.name} {shape}: " + ", ".join(
                f"{k} {v:.1f}" for k, v in m.times.items() if v is not None), flush=True)
            made.append(m)
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--sizes", default="small,medium")
    parser.add_argument("--dtype", default="fp32", choices=("fp32", "bf16"))
    parser.add_argument("--graphs", action="store_true")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--profile", default="")
    parser.add_argument("--breakdown", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args()
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    lines = [f"{torch.cuda.get_device_name()}, {args.dtype}, triton {triton.__version__}, "
             f"torch {torch.__version__}; forward + backward wall time per step (us), "
             "steps back to back",
             "", "| op | size | " + " | ".join(METHODS) + " | kernel / hand | launcher / hand |"
             " launcher / eager |", "|---" * (len(METHODS) + 5) + "|"]
    graph_lines = ["", "CUDA graph replay of the same step (us)", "",
                   "| op | size | " + " | ".join(METHODS) + " |",
                   "|---" * (len(METHODS) + 2) + "|"]
    breakdown_lines = ["", "Forward alone, wall time per call (us)", "",
                       "| op | size | " + " | ".join(METHODS) + " |",
                       "|---" * (len(METHODS) + 2) + "|"]
    made = measure(args.ops.split(","), args.sizes.split(","), dtype, not args.no_compile,
                   breakdown=args.breakdown)
    status = int(any(m.errors for m in made))
    profiles = []
    for m in made:
        def ratio(a, b):
            ta, tb = m.times.get(a), m.times.get(b)
            return f"{ta / tb:.2f}x" if ta is not None and tb is not None else "-"
        cells = [f"{m.times[k]:.1f}" if m.times.get(k) is not None else
                 "CHECK FAILED" if k in m.errors else "-" for k in METHODS]
        lines.append(f"| {m.op.name} | {m.shape} | " + " | ".join(cells) +
                     f" | {ratio('kernel', 'hand')} | {ratio('launcher', 'hand')} | "
                     f"{ratio('launcher', 'eager')} |")
        if args.breakdown:
            breakdown_lines.append(f"| {m.op.name} | {m.shape} | " + " | ".join(
                f"{m.forwards[k]:.1f}" if k in m.forwards else "-" for k in METHODS) + " |")
        if m.key in args.profile.split(",") and m.size_name == args.sizes.split(",")[0]:
            profiles.append(profile(m.op, m.dy))
    # (last: a capture that fails can leave torch's CUDA state unusable for what follows)
    for m in made if args.graphs else ():
        cells = [graph_replay_ms(step_of(m.op, m.op.forwards[k], m.dy))
                 if m.times.get(k) is not None and k != "compile" else "-" for k in METHODS]
        graph_lines.append(f"| {m.op.name} | {m.shape} | " + " | ".join(cells) + " |")
        print(graph_lines[-1], flush=True)
    text = "\n".join(lines + (breakdown_lines if args.breakdown else []) +
                     (graph_lines if args.graphs else [])) + "\n" + "".join(profiles)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
