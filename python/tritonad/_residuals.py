"""Residuals: values the forward saves for the backward.

A derived backward recomputes the forward from the inputs. Where the forward
reduces or loops (a layer norm's mean and variance, a softmax's max and sum,
an online logsumexp, flash attention's running statistics and accumulator),
that costs a pass over memory. When tritonad launches the forward itself
(``tritonad.autograd``), it launches an augmented forward instead: the user's
kernel, prepared as the backward sees it, that also stores those values (the
results of top-level reductions and loops that the backward reads) into a
per-program region of a buffer; the backward reads them instead of
recomputing them. The core decides which values (cpp AutoDiff/Residuals.h);
``schedule()`` lists them as ``residual`` entries.

Forward and backward are compiled separately. Each records a fingerprint of
the prepared forward and the layout; the buffer reaches a backward only when
its fingerprint equals the forward's (else the backward recomputes).
"""

from __future__ import annotations

import math
from typing import Optional

from tritonad import _contract, _coverage, _launch_plan
from tritonad._forward_config import launched_as

RESIDUALS = _contract.declared("tritonad_residuals")  # the i8 pointer of both kernels
_METADATA = _contract.metadata_key("residuals")  # {kernel: None or a residuals record}
_BYTES, _FINGERPRINT = _contract.fields("residuals", "bytes", "fingerprint")


def recorded(kernel) -> Optional[dict]:
    """The residuals a compiled kernel saves or reads (None: none)."""
    by_name = getattr(getattr(kernel, "metadata", None), _METADATA, None) or {}
    values = [v for v in by_name.values() if v]
    return values[-1] if values else None


def launch_forward(forward, kernel, grid, bound, names,
                   by_memory: bool = True) -> Optional["torch.Tensor"]:
    """Runs the forward: `forward` (the augmented forward, or None) with a fresh
    residual buffer where it saves values, else the user's `kernel`. Returns the
    buffer (None when nothing was saved), which records the launch (`names`: the
    forward's parameters) so that a backward of another launch refuses it: its
    tensors by memory and layout, or (`by_memory` False: torch's autograd hands
    the backward its saved tensors, possibly moved, e.g. offloaded to the CPU
    and back) by layout only."""
    device_tensor = _launch_plan.device_of(bound)
    # (CPU tensors: the interpreter, which launches the user's kernel; a launch
    # being recorded, e.g. traced by torch.compile on fake tensors: the
    # recorder sees the user's kernel)
    if forward is None or device_tensor is None or device_tensor.device.type == "cpu" or \
            _launch_plan.LAUNCHER_RECORDER.get() is not None:
        kernel[grid](**bound)
        return None
    grid_now = _coverage.grid_of(grid, bound)
    decided = _saving_decision(forward, grid, grid_now, bound, device_tensor.device)
    if decided.compiled is None:
        kernel[grid](**bound)
        return None
    step = PlannedForward(forward, decided, grid_now, device_tensor.device,
                          _launch_of(bound, names, grid_now, by_memory))
    return step(bound)


def _saving_decision(forward, grid, grid_now, bound, device) -> "_SavingForward":
    """Whether the augmented forward saves anything for these arguments, and how
    much: decided when it is compiled, once per key (as a backward's launch plan)."""
    import torch

    key = _launch_plan.key_of(bound, grid_now, (torch.cuda.current_device(),))
    decided = _launch_plan.lookup(forward, key)
    if decided is None:
        compiled = forward.run(grid=grid, warmup=True,
                               **{**bound, RESIDUALS: _launch_plan.placeholder(device, "int8")})
        saved = recorded(compiled)
        decided = _SavingForward(compiled if saved is not None and grid_now else None, saved)
        _launch_plan.store(forward, key, decided)
    return decided


def planned_forward(forward, kernel, grid, bound, names) -> Optional["PlannedForward"]:
    """The forward launch of these arguments (the augmented forward where it saves
    residuals, else the user's compiled `kernel`, through its autotune and
    heuristics wrappers as they launched it) for later launches with the same
    layouts, scalars and grid (tritonad.autograd's call plans); their residuals
    identify the launch by layout (torch hands the backward its saved tensors,
    possibly moved). None where a launch must go through Triton's own path: CPU
    tensors (the interpreter), a recorded launch, pre-run hooks, an autotuner
    that has not chosen a config for these arguments."""
    device_tensor = _launch_plan.device_of(bound)
    if device_tensor is None or device_tensor.device.type != "cuda" or \
            _launch_plan.LAUNCHER_RECORDER.get() is not None:
        return None
    launched = launched_as(kernel, bound)
    if launched is None:
        return None
    jit, arguments, filled = launched
    device = device_tensor.device
    grid_now = _coverage.grid_of(grid, arguments)
    if forward is not None:  # (a kernel without wrappers: arguments is bound)
        decided = _saving_decision(forward, grid, grid_now, bound, device)
        if decided.compiled is not None:
            return PlannedForward(forward, decided, grid_now, device,
                                  _launch_of(bound, names, grid_now, by_memory=False))
    compiled = jit.run(grid=grid, warmup=True, **arguments)
    return PlannedForward(jit, _SavingForward(compiled, None), grid_now, device, None, filled)


class PlannedForward:
    """A forward launch decided for one layout: the compiled kernel on its grid,
    and, where it saves residuals, the buffer each launch gets (returned, marked
    with the forward's fingerprint and `launch`, what identifies the launch)."""

    __slots__ = ("launch", "saved", "programs", "device", "identity", "filled")

    def __init__(self, jit, decided, grid_now, device, identity, filled=None):
        self.launch = _launch_plan.CompiledLaunch(jit, decided.compiled, grid_now)
        self.saved = decided.saved
        self.programs = math.prod(int(extent) for extent in grid_now)
        self.device, self.identity = device, identity
        self.filled = filled or None  # (by autotune and heuristics wrappers)

    def __call__(self, bound):
        import torch

        if self.saved is None:
            self.launch({**bound, **self.filled} if self.filled else bound)
            return None
        buffer = torch.empty(max(self.programs * int(self.saved[_BYTES]), 16),
                             dtype=torch.int8, device=self.device)
        self.launch({**bound, RESIDUALS: buffer})
        buffer.tritonad_fingerprint = self.saved[_FINGERPRINT]
        buffer.tritonad_launch = self.identity
        return buffer


class _SavingForward:
    """The augmented forward's decision for a key: its compiled kernel where it
    saves residuals (None: the user's kernel runs instead), what it saves."""

    __slots__ = ("compiled", "saved")

    def __init__(self, compiled, saved):
        self.compiled, self.saved = compiled, saved


def _launch_of(arguments, names, grid_now, by_memory: bool = True) -> dict:
    """What identifies a launch to its residuals: the grid, and each argument of
    the forward (a tensor by its memory, if `by_memory`, and layout; anything
    else by value)."""
    import torch

    def identity(value):
        if isinstance(value, torch.Tensor):
            return (value.data_ptr() if by_memory else None, tuple(value.shape),
                    tuple(value.stride()), value.dtype)
        return value if isinstance(value, (bool, int, str, type(None))) else repr(value)
    return {"grid": tuple(grid_now), "by_memory": by_memory,
            **{n: identity(arguments.get(n)) for n in names}}


def check_launch(buffer, grid, kwargs) -> None:
    """Raises unless the backward is launched as the forward that filled `buffer`."""
    launch = getattr(buffer, "tritonad_launch", None)
    if launch is None:
        raise TypeError(f"{RESIDUALS} takes what the derived backward's forward launch "
                        f"returned (bwd.forward[grid](...)), got a {type(buffer).__name__}")
    names = [n for n in launch if n not in ("grid", "by_memory")]
    now = _launch_of(kwargs, names, _coverage.grid_of(grid, kwargs), launch["by_memory"])
    differs = [n for n in launch if now[n] != launch[n]]
    if differs:
        raise ValueError(f"{RESIDUALS} were saved by a forward launched with another "
                         f"{differs[0]} than this backward's: pass the residuals of the "
                         f"forward launch this backward differentiates (the same grid and "
                         f"arguments)")


class ForwardLaunch:
    """``bwd.forward``: launches the forward of a derived backward ``bwd`` so
    that it saves residuals for it. ``bwd.forward[grid](*args, **kwargs)``
    takes the forward kernel's arguments, runs it (the augmented forward where
    the backward reads residuals, else the kernel itself) and returns the
    residuals: a device buffer, or None when nothing was saved. Pass them to
    the backward of the same launch as ``bwd[grid](..., tritonad_residuals=r)``;
    the backward then reads them instead of recomputing the forward's
    reductions and loops. A backward of another launch (another grid or other
    arguments) refuses them."""

    def __init__(self, kernel, augmented, names):
        # (augmented: the _ResidualForward placeholder, None where there is none)
        self.kernel, self.augmented, self.names = kernel, augmented, list(names)

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(grid, args, kwargs)

    def run(self, grid, args, kwargs):
        from tritonad._source import bind_arguments

        bound = bind_arguments(self.names, args, kwargs)
        forward = self.augmented.get() if self.augmented is not None else None
        return launch_forward(forward, self.kernel, grid, bound, self.names)


def checked(run, grid, kernel, kwargs):
    """The backward to launch: `kernel` (compiled with the residual buffer in
    kwargs) if it reads the buffer that forward wrote, else the kernel compiled
    without it (it recomputes)."""
    buffer = kwargs.get(RESIDUALS)
    if buffer is None:
        return kernel
    check_launch(buffer, grid, kwargs)
    reads = recorded(kernel)
    if reads is not None and reads[_FINGERPRINT] == getattr(buffer, "tritonad_fingerprint",
                                                              None):
        return kernel
    kwargs[RESIDUALS] = None  # (another specialization: the recomputing backward)
    return run(grid=grid, warmup=True, **kwargs)
