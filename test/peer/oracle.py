"""The peer suite's oracle: tritonad's gradient of a library's forward kernel,
launched exactly as the library launches it, against the library's own backward
and an fp64 torch reference.

A case (``Case``) names the library module whose Python code launches the
kernel and the kernel's global name there. The library's launch code runs
unchanged; for the duration of the call globals of the library are replaced:

* ``kernel`` variant: the kernel, by ``tritonad.autograd(kernel, outputs=...)``
  (works under Triton's CPU interpreter too);
* ``launcher`` variant: the library's forward function (the Python function that
  allocates the outputs and launches the kernel), by ``@tritonad.autograd`` of it
  (GPU only: launchers are not recorded under the interpreter).

Nothing of the libraries' code is copied here: the cases only call it. On a GPU,
tritonad's forward and backward run twice, as a training loop calls them: the second
call replays what the first decided (call, launcher and launch plans), and each
gradient's error is the worse of the two.

Precision contract, per input gradient ``g`` (``relative_error``): its error
against the fp64 gradient is at most twice the library backward's error plus a
floor per dtype (``FLOOR``). Outcomes: ``match``; ``refused`` (tritonad raised
one of its located errors: acceptable, recorded with its cause); ``mismatch``
(a wrong gradient, a forward that differs from the library's, an output without
a gradient); ``crash`` (tritonad failed with an exception that is not one of its
located errors); ``library-error`` (the library's forward does not run here);
``reference-differs`` (the case's fp64 reference disagrees with the
library's forward: the case is wrong). Where the library does not run (Triton's
interpreter lacks something it uses), the peer is torch's autograd of the
reference in the test's dtype, and the result says so; in float32 on a GPU its
products run in TF32 where the library's forward is as far from fp64 as TF32
makes it (``tl.dot`` of float32 is TF32 by default, torch's matmul is not).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import random
import re
import sys
import traceback
from typing import Callable, Dict, List, Optional, Sequence, Tuple

# error = max|g - g64| / max(max|g64|, TINY)
TINY = 1e-30
FLOOR = {"float32": 1e-5, "bfloat16": 1e-2}
# The forward through tritonad runs the library's kernel (or tritonad's copy of it
# that also saves residuals): its outputs must equal the library's to this much.
FORWARD_TOLERANCE = {"float32": 1e-5, "bfloat16": 1e-2}

# The fp64 reference must agree with the library's forward to this much, else the
# case's reference is wrong (loose for float32: tl.dot of float32 is TF32 on a GPU).
REFERENCE_TOLERANCE = {"float32": 1e-2, "bfloat16": 5e-2}

STATUSES = ("match", "refused", "mismatch", "crash", "library-error", "reference-differs")

RESULTS: List["Result"] = []
"""Every result of this process (the table conftest.py writes at the end)."""


def relative_error(g, g64) -> float:
    """max|g - g64| / max(max|g64|, TINY), in float64; a missing gradient is zeros."""
    import torch

    if g is None:
        g = torch.zeros_like(g64)
    scale = max(float(g64.abs().max()) if g64.numel() else 0.0, TINY)
    if g.shape != g64.shape:
        return float("inf")
    return float((g.double() - g64).abs().max()) / scale if g64.numel() else 0.0


def within_contract(error: float, library_error: float, dtype: str) -> bool:
    """tritonad's error is at most 2x the library's plus the dtype's floor (NaN fails)."""
    return error <= 2.0 * library_error + FLOOR[dtype]


@dataclasses.dataclass
class Case:
    """One forward kernel of a library, as the library launches it.

    name: the table's row ("liger.rms_norm").
    module: the library module whose code launches the kernel(s).
    kernels: {global name: outputs= for tritonad.autograd}; a name is looked up
        in module, or written "other.module:name".
    launcher: the library's forward function(s) (names as in kernels) that the
        launcher variant decorates, or None where none launches the kernel(s)
        alone.
    make(dtype, device): the inputs, a dict; tensors that get gradients have
        requires_grad (leaves).
    forward(module, inputs): runs the library's forward code; the outputs
        (a tensor or a tuple of tensors) whose gradient is checked.
    library(module, inputs): the same outputs through the library's own
        autograd.Function (its backward is the peer).
    reference(inputs): the same outputs in torch, given float64 inputs.
    interpret: runs in Triton's CPU interpreter (float32).
    grad_options: options of tritonad.autograd(kernel, outputs=..., **options).
    """

    name: str
    module: str
    kernels: Dict[str, Tuple[str, ...]]
    launcher: Optional[object]
    make: Callable
    forward: Callable
    library: Callable
    reference: Callable
    interpret: bool = False
    dtypes: Tuple[str, ...] = ("float32", "bfloat16")
    grad_options: Dict[str, object] = dataclasses.field(default_factory=dict)

    def launchers(self) -> Tuple[str, ...]:
        if self.launcher is None:
            return ()
        return (self.launcher,) if isinstance(self.launcher, str) else tuple(self.launcher)

    def variants(self, device: str) -> List[str]:
        found = ["kernel"]
        if self.launchers() and device != "cpu":
            found.append("launcher")
        return found


@dataclasses.dataclass
class Result:
    kernel: str
    variant: str
    dtype: str
    device: str
    status: str
    errors: Dict[str, float] = dataclasses.field(default_factory=dict)
    library_errors: Dict[str, float] = dataclasses.field(default_factory=dict)
    schedule: str = ""
    message: str = ""
    seed: int = 0
    peer: str = "library"
    configs: str = ""  # the autotuned kernels' configs this run took (_configs_chosen_by_seed)

    def describe(self) -> str:
        pairs = ", ".join(f"{name}: {self.errors.get(name, float('nan')):.2e} vs library "
                          f"{self.library_errors.get(name, float('nan')):.2e}"
                          for name in sorted(set(self.errors) | set(self.library_errors)))
        text = f"{self.kernel} [{self.variant}, {self.dtype}, {self.device}] {self.status}"
        if pairs:
            text += f" ({pairs}; floor {FLOOR.get(self.dtype)})"
        if self.peer != "library":
            text += f" [peer: {self.peer}]"
        if self.message:
            text += f": {self.message}"
        if self.configs:
            text += f" [autotuned: {self.configs}]"
        return text + f" (TRITONAD_TEST_SEED={self.seed})"

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def seed() -> int:
    """Fresh per test; TRITONAD_TEST_SEED=<seed> replays one."""
    given = os.environ.get("TRITONAD_TEST_SEED")
    return int(given) if given else int.from_bytes(os.urandom(4), "little")


# An autotuned kernel's config is a choice its autotuner makes by timing, and a
# backward must be right for every config. The suite's autotuners therefore choose
# at random (each config still compiled and run once), from a stream seeded by the
# case's seed: runs sweep the configs, and TRITONAD_TEST_SEED replays a choice.
# TRITONAD_PEER_AUTOTUNE=bench keeps Triton's timing.
_CONFIG_CHOICE = random.Random(0)


def _chosen_by_seed(kernel_call, quantiles=None, **_):
    kernel_call()
    time = _CONFIG_CHOICE.random()
    return [time, time, time] if quantiles else time


@contextlib.contextmanager
def _configs_chosen_by_seed(device: str):
    """Within the block, autotuners choose by the seeded stream instead of timing,
    and not from their disk cache (fla keeps one by default): scoped to a case, so
    the other GPU tests of a session keep Triton's own tuning."""
    if device != "cuda" or os.environ.get("TRITONAD_PEER_AUTOTUNE") == "bench":
        yield
        return
    from triton.runtime import autotuner, driver

    def choose_again(self, tuning_key, configs, bench_fn):
        bench_fn()
        return False

    saved = driver.active.get_benchmarker, autotuner.Autotuner.check_disk_cache
    driver.active.get_benchmarker = lambda: _chosen_by_seed
    autotuner.Autotuner.check_disk_cache = choose_again
    try:
        yield
    finally:
        driver.active.get_benchmarker, autotuner.Autotuner.check_disk_cache = saved


def _autotuners(case: Case) -> Dict[str, object]:
    """{kernel name: its autotuner} of the case's kernels that have one."""
    from triton.runtime.autotuner import Autotuner

    found = {}
    for name in case.kernels:
        wrapper = getattr(*resolve(case, name))
        while wrapper is not None and not isinstance(wrapper, Autotuner):
            wrapper = getattr(wrapper, "fn", None)
        if wrapper is not None:
            found[name.rpartition(":")[2]] = wrapper
    return found


def config_variants(case: Case) -> List[Tuple[str, int]]:
    """(kernel, config index) per distinct block sizes and num_warps of each of the
    case's autotuned kernels (the first config of each; num_stages aside)."""
    variants = []
    for name, tuner in _autotuners(case).items():
        seen = {}
        for index, config in enumerate(tuner.configs):
            seen.setdefault((tuple(sorted(config.kwargs.items())), config.num_warps), index)
        if len(seen) > 1:
            variants += [(name, index) for index in seen.values()]
    return variants


@contextlib.contextmanager
def pinned_config(case: Case, kernel: str, index: int, others: Optional[int] = None):
    """Within the block, the autotuned `kernel` of `case` has its config `index` only
    (and, `others` given, every other autotuned kernel its config `others`)."""
    tuners = _autotuners(case)
    pinned = {name: index if name == kernel else others for name in tuners
              if name == kernel or others is not None}
    saved = {name: tuners[name].configs for name in pinned}
    for name, at in pinned.items():
        tuners[name].configs = [saved[name][at]]
        tuners[name].cache.clear()
    try:
        yield saved[kernel][index]
    finally:
        for name, configs in saved.items():
            tuners[name].configs = configs
            tuners[name].cache.clear()


def _configs_taken(case: Case) -> str:
    """'kernel: config; ...' of the case's autotuned kernels that chose one."""
    return "; ".join(f"{name}: {tuner.best_config}" for name, tuner in _autotuners(case).items()
                     if len(tuner.configs) > 1 and getattr(tuner, "best_config", None))


# ---------------------------------------------------------------------------
# Running one case
# ---------------------------------------------------------------------------

_WRAPPED: Dict[tuple, object] = {}


def resolve(case: Case, name: str):
    """(module, attribute) a kernels/launcher name stands for."""
    module_name, _, attribute = name.rpartition(":")
    return importlib.import_module(module_name or case.module), attribute


def _kernel_wrapper(case: Case, name: str):
    import tritonad

    key = ("kernel", case.module, name, tuple(sorted(case.grad_options.items())))
    if key not in _WRAPPED:
        module, attribute = resolve(case, name)
        _WRAPPED[key] = tritonad.autograd(getattr(module, attribute), outputs=case.kernels[name],
                                          **case.grad_options)
    return _WRAPPED[key]


def _launcher_wrapper(case: Case, name: str):
    import tritonad

    key = ("launcher", case.module, name)
    if key not in _WRAPPED:
        module, attribute = resolve(case, name)
        _WRAPPED[key] = tritonad.autograd(getattr(module, attribute))
    return _WRAPPED[key]


@contextlib.contextmanager
def replaced(replacements: Dict[tuple, object]):
    """Module globals ({(module, name): value}) replaced for the block (the
    library's code looks them up when it runs)."""
    saved = {key: getattr(*key) for key in replacements}
    try:
        for (module, name), value in replacements.items():
            setattr(module, name, value)
        yield
    finally:
        for (module, name), value in saved.items():
            setattr(module, name, value)


def replacements_for(case: Case, variant: str) -> Dict[tuple, object]:
    if variant == "kernel":
        return {resolve(case, n): _kernel_wrapper(case, n) for n in case.kernels}
    return {resolve(case, n): _launcher_wrapper(case, n) for n in case.launchers()}


class _Context:
    """Stands for torch's ctx where a case runs an autograd.Function's forward
    itself (the library launches its kernels there); what it saves is not needed."""

    def save_for_backward(self, *tensors):
        pass


def function_forward(function, *args, **kwargs):
    """`function.forward(ctx, ...)`: the library's launches, outside autograd's
    Function (whose forward would run with gradients off), with a stand-in ctx."""
    return function.forward(_Context(), *args, **kwargs)


def _as_tuple(outputs) -> tuple:
    return tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)


def _leaves(inputs: dict) -> Dict[str, object]:
    import torch

    return {k: v for k, v in inputs.items()
            if isinstance(v, torch.Tensor) and v.requires_grad}


def _grads(outputs, leaves: Dict[str, object], cotangents):
    import torch

    # (a cotangent drawn for the peer's output may differ in dtype from this output)
    pairs = [(o, c.to(o.dtype)) for o, c in zip(outputs, cotangents) if c is not None]
    grads = torch.autograd.grad([o for o, _ in pairs], list(leaves.values()),
                                [c for _, c in pairs], allow_unused=True)
    return dict(zip(leaves, grads))


def _cotangents(outputs) -> list:
    """Random upstream gradients for the outputs that carry one (None elsewhere)."""
    import torch

    return [torch.randn(o.shape, device=o.device).to(o.dtype)
            if o.requires_grad and o.is_floating_point() else None for o in outputs]


def _clones(tensors) -> list:
    return [None if t is None else t.clone() for t in tensors]


def _copies(inputs: dict) -> dict:
    import torch

    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def _float64_inputs(inputs: dict) -> dict:
    import torch

    out = {}
    for k, v in inputs.items():
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            out[k] = v.detach().double().requires_grad_(v.requires_grad)
        else:
            out[k] = v
    return out


_LOCATED = None


def _located_types():
    global _LOCATED
    if _LOCATED is None:
        import tritonad
        _LOCATED = (tritonad.DifferentiationError, tritonad.MLIRError, tritonad.RenderError)
    return _LOCATED


def _from_tritonad(exc: BaseException) -> bool:
    import tritonad

    root = os.path.dirname(os.path.abspath(tritonad.__file__))
    tb = exc.__traceback__
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(root + os.sep):
            return True
        tb = tb.tb_next
    return False


_SOURCE_LINE = re.compile(r"\.py:\d+")


def classify(exc: BaseException, names: Sequence[str] = ()) -> Tuple[str, str]:
    """(status, message) of an exception the tritonad path raised. A refusal is a
    located error: one of tritonad's error types (possibly wrapped by Triton's
    compiler), or a ValueError/TypeError/NotImplementedError tritonad raises whose
    message names the kernel (`names`: the kernels and the launcher) or a source
    line. Anything else is a crash: a defect to report."""
    chain, seen = [], set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    for e in chain:
        if isinstance(e, _located_types()):
            return "refused", f"{type(e).__name__}: {_first_lines(e)}"
    for e in chain:
        if isinstance(e, (ValueError, TypeError, NotImplementedError)) and _from_tritonad(e):
            text = str(e)
            if any(n in text for n in names) or _SOURCE_LINE.search(text):
                return "refused", f"{type(e).__name__}: {_first_lines(e)}"
    where = _innermost(exc)
    return "crash", f"{type(exc).__name__}{where}: {_first_lines(exc)}"


def _innermost(exc: BaseException) -> str:
    """' at file:line' of the innermost frame in tritonad, else of the innermost."""
    import tritonad

    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    root = os.path.dirname(os.path.abspath(tritonad.__file__))
    ours = [f for f in frames if os.path.abspath(f.filename).startswith(root + os.sep)]
    frame = (ours or frames or [None])[-1]
    if frame is None:
        return ""
    return f" at {os.path.relpath(frame.filename, os.path.dirname(root))}:{frame.lineno}" \
        if frame in ours else f" at {frame.filename}:{frame.lineno}"


def _first_lines(exc: BaseException, n: int = 3) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    text = " | ".join(lines[:n])
    return text[:600]


def schedule_of(case: Case, variant: str) -> str:
    """First line of each derived backward's schedule ('' when unknown)."""
    from tritonad._launcher import backward_kernel

    lines = []
    for name in case.kernels:
        try:
            if variant == "kernel":
                bwd = _kernel_wrapper(case, name).backward_kernel
            else:
                bwd = backward_kernel(getattr(*resolve(case, name)), "auto")
            schedule = bwd.schedule()
        except Exception:  # noqa: BLE001  (the schedule is a report, not a check)
            schedule = None
        if schedule:
            first = str(schedule).splitlines()[0]
            lines.append(first if len(case.kernels) == 1 else f"{name}: {first}")
    return "; ".join(lines)


@contextlib.contextmanager
def _tf32_products(on: bool):
    """torch's float32 matmuls (einsum, @) in TF32 within the block, if `on`."""
    import torch

    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = on or saved
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def run_case(case: Case, dtype: str, device: str, variant: str,
             case_seed: Optional[int] = None) -> Result:
    """Runs one case; never raises for what the library or tritonad do."""
    import torch

    case_seed = seed() if case_seed is None else case_seed
    result = Result(case.name, variant, dtype, "interpreter" if device == "cpu" else device,
                    "crash", seed=case_seed)
    torch.manual_seed(case_seed)
    _CONFIG_CHOICE.seed(case_seed)
    for tuner in _autotuners(case).values():  # (each case chooses afresh: the seed replays it)
        tuner.cache.clear()
    try:
        with _configs_chosen_by_seed(device):
            return _run_case(case, dtype, device, variant, result)
    finally:
        result.configs = _configs_taken(case)


def _run_case(case: Case, dtype: str, device: str, variant: str, result: Result) -> Result:
    import torch

    module = importlib.import_module(case.module)
    inputs = case.make(getattr(torch, dtype), device)
    leaves = _leaves(inputs)

    # The peer: the library's forward and backward. Each path gets copies (the
    # library writes into some of its inputs); gradients reach the leaves. Where
    # the library's backward cannot run here (Triton's interpreter lacks what it
    # uses), the peer is torch's autograd of the reference in the test's dtype.
    try:
        peer_out = _as_tuple(case.library(module, _copies(inputs)))
    except Exception as exc:  # noqa: BLE001
        result.status = "library-error"
        result.message = (f"the library's forward fails here (so would its kernel under "
                          f"tritonad): {type(exc).__name__}: {_first_lines(exc, 1)}")
        return result
    cotangents = _cotangents(peer_out)
    try:
        peer_grads = _grads(peer_out, leaves, _clones(cotangents))
        peer_failure = None
    except Exception as exc:  # noqa: BLE001
        peer_grads, peer_failure = None, exc

    # The fp64 reference.
    inputs64 = _float64_inputs(inputs)
    leaves64 = _leaves(inputs64)
    reference_out = _as_tuple(case.reference(_copies(inputs64)))
    reference_grads = _grads(reference_out, leaves64, [
        None if c is None else c.double() for c in cotangents])
    reference_error = max((relative_error(p.detach(), r.detach().to(p.device))
                           for p, r, c in zip(peer_out, reference_out, cotangents)
                           if c is not None), default=0.0)
    if not reference_error <= REFERENCE_TOLERANCE[dtype]:
        result.status = "reference-differs"
        result.message = (f"the case's fp64 reference differs from the library's forward "
                          f"(relative {reference_error:.2e}): fix the reference")
        return result

    if peer_failure is not None:
        # The library's kernels multiply float32 in TF32 (tl.dot's default) where
        # their forward is that far from fp64; torch's peer then does the same.
        tf32 = (dtype == "float32" and device == "cuda" and
                reference_error > FORWARD_TOLERANCE[dtype])
        products = " with TF32 products, as the library forward's" if tf32 else ""
        result.peer = (f"torch {dtype}{products} (the library's backward fails here: "
                       f"{type(peer_failure).__name__}: {_first_lines(peer_failure, 1)[:160]})")
        with _tf32_products(tf32):
            torch_out = _as_tuple(case.reference(_copies(inputs)))
            peer_grads = _grads(torch_out, leaves, _clones(cotangents))
    ungraded = [name for name, g in peer_grads.items() if g is None]
    if ungraded:
        result.status = "reference-differs"
        result.message = (f"the peer gives {', '.join(ungraded)} no gradient: the case must "
                          f"not ask for one (requires_grad=False)")
        return result

    # tritonad, through the library's launch code; on a GPU twice, as a training
    # loop calls it: the second call replays what the first decided (call and
    # launcher plans, launch plans).
    calls = []  # (forward error, gradients) per call
    try:
        for _ in range(2 if device == "cuda" else 1):
            with replaced(replacements_for(case, variant)):
                out = _as_tuple(case.forward(module, _copies(inputs)))
            missing = [i for i, (o, c) in enumerate(zip(out, cotangents))
                       if c is not None and not o.requires_grad]
            if missing:
                result.status = "mismatch"
                result.message = (f"output {missing[0]} carries no gradient (no grad_fn): the "
                                  f"gradient of the inputs through it is silently lost")
                result.schedule = schedule_of(case, variant)
                return result
            calls.append((max((relative_error(o.detach(), r.detach().to(o.device).double())
                               for o, r, c in zip(out, peer_out, cotangents) if c is not None),
                              default=0.0),
                          _grads(out, leaves, _clones(cotangents))))
    except Exception as exc:  # noqa: BLE001
        result.status, result.message = classify(
            exc, [resolve(case, n)[1] for n in (*case.kernels, *case.launchers())])
        result.schedule = schedule_of(case, variant)
        return result
    result.schedule = schedule_of(case, variant)

    worst = {}  # gradient name -> the call whose error it reports
    for name in leaves:
        g64 = reference_grads[name]
        if g64 is None:
            g64 = torch.zeros(leaves64[name].shape, dtype=torch.float64, device=device)
        errors = [relative_error(grads[name], g64) for _, grads in calls]
        worst[name] = max(range(len(calls)), key=lambda i: errors[i])
        result.errors[name] = errors[worst[name]]
        result.library_errors[name] = relative_error(peer_grads[name], g64)
    forward_error = max(error for error, _ in calls)
    if not forward_error <= FORWARD_TOLERANCE[dtype]:
        result.status = "mismatch"
        result.message = (f"tritonad's forward differs from the library's (relative "
                          f"{forward_error:.2e}): the launch is not the library's")
        return result
    bad = [name for name in leaves if not within_contract(
        result.errors[name], result.library_errors[name], dtype)]
    result.status = "mismatch" if bad else "match"
    if bad:
        result.message = (f"gradient of {', '.join(bad)} outside the contract" +
                          ("" if len(calls) == 1 else
                           f" (call {worst[bad[0]] + 1} of {len(calls)}: the second "
                           f"replays what the first decided)"))
    return result


def format_table(results: Sequence[Result]) -> str:
    """A markdown table: kernel, variant, dtype, device, tritonad's error, the
    library's error (max over the inputs), status, schedule or cause."""
    head = ("| kernel | variant | dtype | device | tritonad err | library err | status | "
            "schedule / cause |")
    rows = [head, "|" + "---|" * 8]
    for r in sorted(results, key=lambda r: (r.kernel, r.variant, r.dtype, r.device)):
        err = max(r.errors.values()) if r.errors else None
        lib = max(r.library_errors.values()) if r.library_errors else None
        note = r.schedule if r.status == "match" else (r.message or r.schedule)
        if r.peer != "library":
            note += f" [peer: {r.peer}]"
        note = note.replace("|", "/").replace("\n", " ")
        rows.append(f"| {r.kernel} | {r.variant} | {r.dtype} | {r.device} | "
                    f"{'' if err is None else f'{err:.2e}'} | "
                    f"{'' if lib is None else f'{lib:.2e}'} | {r.status} | {note} |")
    return "\n".join(rows) + "\n"


# Defects of tritonad this suite found, by (case, device): the failure is then
# an xfail naming the defect, as long as its message holds the needle; a case
# that passes again fails until its entry is removed (the fix is noticed).
KNOWN_DEFECTS: Dict[Tuple[str, str], Tuple[str, str]] = {}

# Cases without a fair peer on a device and dtype: the library's backward does not
# run there, and torch's autograd in that dtype computes at another precision than
# the library's kernels, so a mismatch against it is no evidence either way: an
# xfail saying why, as long as the peer is torch's.
NO_FAIR_PEER: Dict[Tuple[str, str, str], str] = {
    ("fla.chunk_simple_gla", "cuda", "float32"): (
        "fla disables this backward on Triton 3.6 on Hopper (its #640); the forward's fp32 "
        "tl.dot products run in TF32, which puts any backward of it at ~1.5e-3 against fp64 "
        "(tritonad's here: 1.3-1.9e-3; on fla.fused_chunk_simple_gla, whose backward runs, "
        "tritonad 1.6e-3 against fla's own 2.1e-3), while torch fp32 is at 1e-6"),
    # (torch's TF32 products are no fair peer either: on an H200, tritonad 1.5-1.7e-3 here
    # and on chunk_simple_gla against 2.6-4.9e-4 for torch with TF32 products; where a
    # hand-written Triton backward of a TF32 forward runs, fused_chunk_simple_gla's, it is
    # at 1.7e-3 and tritonad at 1.6e-3)
    ("fla.parallel_nsa", "cuda", "float32"): (
        "fla's backward does not compile on Triton 3.6; the forward's fp32 tl.dot products "
        "run in TF32, which puts a Triton backward of it at ~1.5e-3 against fp64 (tritonad's "
        "here: 1.4-1.8e-3), above torch's even with TF32 products (2.6-4.8e-4)"),
}


def report(result: Result, passing: str = "match") -> None:
    """Records the result and ends the test by its status (`passing`: the status
    that passes: "match", or "derived" for derivation only)."""
    import pytest

    RESULTS.append(result)
    if os.environ.get("TRITONAD_PEER_TABLE"):  # (after each case: a killed run keeps its rows)
        with open(os.environ["TRITONAD_PEER_TABLE"], "w") as f:
            f.write(format_table(RESULTS))
    known = KNOWN_DEFECTS.get((result.kernel, result.device))
    if known is not None:
        needle, defect = known
        if result.status in ("crash", "mismatch") and needle in result.message:
            pytest.xfail(reason=f"known tritonad defect: {defect}. Seen: {result.message}")
        if result.status == passing:
            pytest.fail(f"{result.kernel} on {result.device} passes now: remove its entry "
                        f"from oracle.KNOWN_DEFECTS ({defect})", pytrace=False)
    if result.status == passing:
        return
    unfair = NO_FAIR_PEER.get((result.kernel, result.device, result.dtype))
    if unfair and result.status == "mismatch" and result.peer.startswith("torch"):
        pytest.xfail(reason=f"no fair peer: {unfair}. Seen: {result.message}")
    if result.status == "refused":
        pytest.xfail(reason=f"tritonad refuses: {result.message}")
    if result.status == "library-error":
        pytest.skip(result.message)
    pytest.fail(result.describe(), pytrace=False)


def main_interpreted(argv: Sequence[str], cases: Dict[str, Case]) -> None:
    """Runs `cases` in Triton's CPU interpreter (float32); argv: out.json [names].
    Writes {name: result dict}. For test_peer_interpret.py (a fresh Python, with
    TRITON_INTERPRET=1 set before Triton is imported)."""
    import json

    out, names = argv[0], list(argv[1:]) or sorted(cases)
    results = {}
    for name in names:
        case = cases[name]
        try:
            result = run_case(case, "float32", "cpu", "kernel")
        except Exception as exc:  # noqa: BLE001  (the harness itself: report, go on)
            result = Result(case.name, "kernel", "float32", "interpreter", "crash",
                            message=f"harness: {type(exc).__name__}: {_first_lines(exc)}")
        results[name] = result.as_dict()
        print(result.describe(), file=sys.stderr, flush=True)
    with open(out, "w") as f:
        json.dump(results, f, indent=1)


# ---------------------------------------------------------------------------
# Derivation only (CPU, no interpreter): for kernels the interpreter cannot run
# ---------------------------------------------------------------------------

class _LaunchRecorder:
    """Stands for a kernel in the library's module: records each launch
    (``kernel[grid](*args, **kwargs)``) without running it."""

    def __init__(self, name: str):
        self.name = name
        self.launches: List[tuple] = []

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.launches.append((grid, args, kwargs))
        return launch


def _launch_arguments(kernel, args, kwargs) -> Tuple[dict, dict]:
    """(the forward's arguments by name, launch options) as the kernel's wrappers
    complete them: heuristics compute theirs, an autotuner gives its first config."""
    from triton.runtime.autotuner import Autotuner, Heuristics

    from tritonad._kernel_grad import unwrap

    fn, wrappers = unwrap(kernel)
    names = list(fn.arg_names)
    bound = dict(zip(names, args))
    options = {}
    for key, value in kwargs.items():
        (bound if key in names else options)[key] = value
    for wrapper in wrappers:
        if isinstance(wrapper, Heuristics):
            for key, heuristic in wrapper.values.items():
                bound[key] = heuristic(dict(bound))
        elif isinstance(wrapper, Autotuner):
            config = wrapper.configs[0]
            bound.update(config.kwargs)
            options.setdefault("num_warps", config.num_warps)
    return bound, options


def derive_case(case: Case, dtype: str = "float32") -> Result:
    """Derives the backward of each of the case's kernels for the argument types
    of the library's own launch (recorded, not run, on CPU tensors), up to TTIR for
    an sm_90 target: tritonad's derivation without a GPU. Statuses: "derived",
    "refused", "crash", "library-error" (the library's forward does not reach the
    launch here)."""
    import torch

    from tritonad._kernel_grad import unwrap

    case_seed = seed()
    result = Result(case.name, "kernel", dtype, "derive sm_90", "crash", seed=case_seed)
    torch.manual_seed(case_seed)
    module = importlib.import_module(case.module)
    inputs = case.make(getattr(torch, dtype), "cpu")
    recorders = {resolve(case, n): _LaunchRecorder(n) for n in case.kernels}
    try:
        with replaced(recorders):
            case.forward(module, _copies(inputs))
    except Exception as exc:  # noqa: BLE001
        if not any(r.launches for r in recorders.values()):
            result.status = "library-error"
            result.message = (f"the library's forward does not reach its launch on the CPU: "
                              f"{type(exc).__name__}: {_first_lines(exc, 1)}")
            return result
    # Every kernel is derived (one refusal does not hide another kernel's outcome);
    # the case's status is the worst: crash, then refused, then derived.
    outcomes = []
    for key, recorder in recorders.items():
        name = recorder.name
        if not recorder.launches:
            result.status = "library-error"
            result.message = f"the library's forward did not launch {name} here"
            return result
        try:
            backward = unwrap(_kernel_wrapper(case, name).backward_kernel)[0]
            _, args, kwargs = recorder.launches[0]
            bound, _ = _launch_arguments(getattr(*key), args, kwargs)
            # (derived on the CPU for these arguments' types, as bwd.derived_ir(...) does)
            backward.derived_ir(**{n: v for n, v in bound.items()
                                   if n in backward.launch_signature})
            outcomes.append((key[1], "derived", ""))
        except Exception as exc:  # noqa: BLE001
            outcomes.append((key[1], *classify(exc, [key[1]])))
    statuses = [status for _, status, _ in outcomes]
    result.status = next(s for s in ("crash", "refused", "derived") if s in statuses)
    result.message = "; ".join(f"{kernel}: {message}" for kernel, status, message in outcomes
                               if status != "derived")
    if result.status != "derived" and len(outcomes) > 1:
        derived = [kernel for kernel, status, _ in outcomes if status == "derived"]
        if derived:
            result.message += f" (derived: {', '.join(derived)})"
    result.schedule = schedule_of(case, "kernel")
    return result
