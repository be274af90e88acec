"""Launch options of the backward's own: each backward launch (the forward's
programs, the re-parallelized parts, a partial-buffer grid) may run with other
``num_warps`` / ``num_stages`` than the forward's. The derived kernel computes
the same gradient with any of them; what changes is its speed, and the best
options for a backward (dA's products read dC and B^T, not A and B) are
rarely the forward's.

``tune=True`` (``tritonad.grad`` / ``tritonad.autograd``) searches around the
forward's options: pipeline stages up, then down, while the launch gets
faster, then twice and half the warps at the best stage count. ``tune=[{...},
...]`` times exactly the given launch options instead. Each trial starts from
the tensors' content before the launch (what the backward writes is saved and
restored), and the choice is kept per compiled kernel, grid and integer
arguments, as ``triton.autotune`` keeps one per key. With
``TRITON_PRINT_AUTOTUNING=1`` each choice is printed.
"""

from __future__ import annotations

import statistics
from typing import Dict, Optional, Sequence

import triton

# What a launch may be tuned over, and the bounds of the derived search.
TUNABLE = ("num_warps", "num_stages", "maxnreg")
_WARPS = (2, 4, 8)
_MAX_STAGES = 6
# A candidate replaces the current one only if it is this much faster (timing
# noise would otherwise pick among equals at random).
_MARGIN = 0.02
# Timed launches per candidate (after one untimed: the module load).
_TRIALS = 9
# A launch shorter than this is launch-bound: no option makes it faster.
_WORTH_US = 8.0


def validate(tune) -> None:
    """Raises TypeError for a `tune` that is not False, True or a list of
    launch-option dicts."""
    if tune is True or tune is False:
        return
    if isinstance(tune, (list, tuple)) and tune and all(isinstance(c, dict) for c in tune):
        for candidate in tune:
            unknown = sorted(set(candidate) - set(TUNABLE))
            if unknown or not candidate:
                raise TypeError(f"tune: each candidate is a dict of launch options among "
                                f"{list(TUNABLE)}, got {candidate!r}")
            for name, value in candidate.items():
                if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                    raise TypeError(f"tune: {name}={value!r} in {candidate!r} is not a "
                                    f"positive integer")
        return
    raise TypeError(f"tune must be False (the forward's launch options), True (searched "
                    f"around them) or a list of launch-option dicts such as "
                    f"[{{'num_warps': 8, 'num_stages': 3}}], got {tune!r}")


def launch(run, grid, kwargs, tune, written, user_cap, fits, resident, clock=None):
    """run(grid, **kwargs) with its tuned options (`tune`: True or a list of
    candidates, as validate() takes). `written`: the tensors the launch may
    write (restored after each trial); `user_cap`: the ``maxnreg`` the caller
    passed (kept), None where the launch path may cap registers; `fits(kernel)`
    and `resident(run, grid, kernel, arguments)` are the launch path's checks
    that a compiled kernel loads on the device, and its register cap.
    `clock(go, restore)`: GPU microseconds of go() (restore() before each run;
    CUDA events by default)."""
    if any(int(extent) <= 0 for extent in grid):
        return run(grid=grid, warmup=False, **kwargs)
    kernel = run(grid=grid, warmup=True, **kwargs)
    if getattr(kernel, "_init_handles", None) is None:  # (the interpreter: nothing to time)
        return run(grid=grid, warmup=False, **kwargs)
    key = (tuple(int(e) for e in grid),
           tuple((n, v) for n, v in kwargs.items()
                 if isinstance(v, int) and not isinstance(v, bool)))
    chosen = kernel.__dict__.setdefault("tritonad_tuned", {})
    if key not in chosen:
        import torch
        if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
            # (no timing inside a CUDA graph's capture: the forward's options)
            return run(grid=grid, warmup=False, **kwargs)
        search = _Search(run, grid, kwargs, written, user_cap, fits, resident,
                         clock or gpu_microseconds)
        chosen[key] = search.best(kernel, tune)
    return run(grid=grid, warmup=False, **_with(kwargs, chosen[key]))


def _with(kwargs: dict, options: dict) -> dict:
    """kwargs with `options` (a ``maxnreg`` of None: no register cap)."""
    arguments = {**kwargs, **options}
    if arguments.get("maxnreg", 0) is None:
        del arguments["maxnreg"]
    return arguments


class _Search:
    """Times candidate launch options of one launch."""

    def __init__(self, run, grid, kwargs, written, user_cap, fits, resident, clock):
        self.run, self.grid, self.kwargs, self.user_cap = run, grid, kwargs, user_cap
        self.fits, self.resident, self.clock = fits, resident, clock
        seen = set()
        self.saved = []
        for tensor in written:
            if tensor is not None and id(tensor) not in seen:
                seen.add(id(tensor))
                self.saved.append((tensor, tensor.clone()))
        # per candidate (sorted items): (GPU us or None where it does not fit,
        # the options it ran with, register cap included)
        self.timed: Dict[tuple, tuple] = {}

    def best(self, kernel, tune) -> dict:
        try:
            if tune is True:
                options = self._search(kernel.metadata.num_warps,
                                       getattr(kernel.metadata, "num_stages", 1))
            else:
                options = self._fastest(tune)
        finally:
            self._restore()
        if triton.knobs.autotuning.print:
            tried = ", ".join(f"{ran}: {'does not fit' if t is None else f'{t:.1f} us'}"
                              for t, ran in self.timed.values())
            print(f"tritonad: backward launch on grid {tuple(self.grid)}: "
                  f"{options or 'the forward options'} ({tried})")
        return options

    def _search(self, warps: int, stages: int) -> dict:
        start = current = {"num_warps": warps, "num_stages": stages}
        base = self._time(current)
        if base is None or base < _WORTH_US:
            return {}
        for direction in (1, -1):
            moved = False
            while 1 <= current["num_stages"] + direction <= _MAX_STAGES:
                candidate = {**current, "num_stages": current["num_stages"] + direction}
                if not self._better(candidate, current):
                    break
                current, moved = candidate, True
            if moved:
                break
        for other in (2 * current["num_warps"], current["num_warps"] // 2):
            candidate = {**current, "num_warps": other}
            if other in _WARPS and self._better(candidate, current):
                current = candidate
                break
        return {} if current == start else self._ran(current)

    def _fastest(self, candidates: Sequence[dict]) -> dict:
        timed = [(self._time(c), i) for i, c in enumerate(candidates)]
        timed = [(t, i) for t, i in timed if t is not None]
        if not timed:
            raise RuntimeError(f"tritonad: none of the launch options tune={list(candidates)} "
                               f"fits the device for this backward launch")
        return self._ran(candidates[min(timed)[1]])

    def _better(self, candidate: dict, current: dict) -> bool:
        time = self._time(candidate)
        return time is not None and time < self._time(current) * (1 - _MARGIN)

    def _ran(self, options: dict) -> dict:
        return self.timed[tuple(sorted(options.items()))][1]

    def _time(self, options: dict) -> Optional[float]:
        """Median GPU microseconds of the launch with `options` (and the launch
        path's register cap for them, unless the options or the caller give
        one), None where it does not fit."""
        key = tuple(sorted(options.items()))
        if key not in self.timed:
            self.timed[key] = self._measure(options)
        return self.timed[key][0]

    def _measure(self, options: dict) -> tuple:
        from triton.compiler.errors import CompileTimeAssertionFailure
        from triton.runtime.errors import OutOfResources, PTXASError

        arguments = _with(self.kwargs, {"maxnreg": self.user_cap, **options})
        try:
            kernel = self.run(grid=self.grid, warmup=True, **arguments)
            if not self.fits(kernel):
                return None, options
            if "maxnreg" not in arguments:
                self.resident(self.run, self.grid, kernel, arguments)
            self._restore()
            self.run(grid=self.grid, warmup=False, **arguments)
        except (OutOfResources, CompileTimeAssertionFailure, PTXASError):
            return None, options
        time = self.clock(lambda: self.run(grid=self.grid, warmup=False, **arguments),
                          self._restore)
        return time, {**options, "maxnreg": arguments.get("maxnreg")}

    def _restore(self):
        for tensor, copy in self.saved:
            tensor.copy_(copy)


# GPU cycles the stream spins before each timed launch, so that the launch is
# queued before its start event runs (about 100 us: more than a Python launch
# takes), and the events time the kernel, not the host.
_LEAD_CYCLES = 200_000


def gpu_microseconds(go, restore) -> float:
    """Median GPU time of go() over _TRIALS runs, each from restored tensors
    (the restore is outside the timed span)."""
    import torch
    events = []
    for _ in range(_TRIALS):
        restore()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(_LEAD_CYCLES)
        start.record()
        go()
        end.record()
        events.append((start, end))
    torch.cuda.synchronize()
    return 1000.0 * statistics.median(s.elapsed_time(e) for s, e in events)
