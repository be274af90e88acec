"""Call plans: ``tritonad.autograd``'s launches decided once per layout, then replayed.

A differentiable kernel's call checks its arguments (outputs that own their
elements, inputs it can differentiate, outputs apart from what it reads),
decides the forward launch (the user's compiled kernel, or the augmented
forward that saves residuals), and its backward decides the gradient buffers
(uninitialized where the kernel stores every element, fp32 where programs add
into them with atomics), which upstream gradients it can read in place, and
the derived backward's launch (a _launch_plan.LaunchPlan). Each of these
follows from the call's key: its tensors' dtypes, devices, shapes, strides,
16-byte alignment and requires_grad, its other arguments, the grid, whether
grad mode is on (and, for the backward, which gradients are needed and the
upstream gradients' layouts). Memory sharing does not: each call compares the
byte ranges of the pairs the in-place check compares, and a call where two
meet takes the deciding path again (which refuses it, or finds them apart).

The first call with a key runs the deciding path and keeps its decisions here;
later calls with the key replay them: a key, a lookup, the forward's compiled
launch, the backward's allocations and recorded launches. A call the deciding
path could not plan (CPU tensors, the interpreter, renamed parameters, an
argument that is not hashable, pre-run hooks) is decided each time, as before.
A kernel wrapped in autotune or heuristics is planned as its wrappers launch
it: the first call with a key lets its autotuner choose, the plan keeps the
compiled kernel of that config and the values its heuristics filled in (they
read the arguments the key holds); the backward follows the same config
(_forward_config.py).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from tritonad._coverage import grid_of

PLAN_LIMIT = 64  # per differentiable kernel


def key_of(bound: dict, grid, grad_enabled: bool, launched: Optional[dict] = None,
           filled: Optional[dict] = None) -> Optional[tuple]:
    """What a call's decisions depend on, or None where the call is not planned
    (a tensor off the GPU or fake, an argument that is not hashable).
    `grad_enabled`: torch's grad mode where the user called (not inside the
    autograd.Function's forward, where it is off). `launched`: the arguments the
    kernel's wrappers launch it with (a grid function reads the meta-parameters
    an autotuner's config fills in), of which they `filled` in these."""
    import torch

    parts: List[object] = [None, grad_enabled, tuple(bound)]
    on_gpu = False
    for value in bound.values():
        if isinstance(value, torch.Tensor):
            if not value.is_cuda:
                return None
            on_gpu = True
            try:
                address = value.data_ptr()
            except RuntimeError:  # (fake tensors: torch.compile tracing; not planned)
                return None
            parts.append((value.dtype, value.device, value.shape, value.stride(),
                          address & 15, value.requires_grad))
        else:
            parts.append((type(value), value))
    if not on_gpu:
        return None
    # (the grid last: evaluated on fake tensors' symbolic sizes it would specialize them)
    parts[0] = grid_of(grid, bound if launched is None else launched)
    parts.append(torch.cuda.current_device())  # (where Triton launches)
    if filled:
        parts.append(tuple(filled.items()))
    key = tuple(parts)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def byte_extent(t) -> int:
    """Bytes from t's first element to the end of its last (strides are not negative)."""
    if not t.numel():
        return 0
    return (1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))) * t.element_size()


class CallPlan:
    """One key's decisions: the differentiable arguments, the pairs of tensors that
    must not share memory (with their byte extents), the forward launch, and the
    backward steps by (needed gradients, upstream layouts)."""

    __slots__ = ("differentiable", "apart", "forward", "backwards")

    def __init__(self, differentiable, apart, forward):
        self.differentiable: Tuple[str, ...] = tuple(differentiable)
        self.apart: Tuple[Tuple[str, str, int, int], ...] = tuple(apart)
        self.forward = forward  # (_residuals.PlannedForward)
        self.backwards: Dict[tuple, Optional["BackwardStep"]] = {}

    def memory_apart(self, bound) -> bool:
        """Whether this call's pairs that must be apart are (by byte ranges)."""
        for a, b, extent_a, extent_b in self.apart:
            start_a, start_b = bound[a].data_ptr(), bound[b].data_ptr()
            if start_a < start_b + extent_b and start_b < start_a + extent_a:
                return False
        return True


def upstream_key(needs_input_grad, grads) -> tuple:
    """What a backward's decisions depend on beyond its call's key."""
    return (needs_input_grad, tuple(
        None if g is None else (g.dtype, g.device, g.shape, g.stride(), g.data_ptr() & 15)
        for g in grads))


class BackwardStep:
    """A backward decided for one call key and upstream key:
    ``grads``: (name, shadow, uninitialized, dtype or None) for each gradient made
    (as shadow_like makes it; a dtype: an fp32 buffer the kernel adds into, copied
    into the gradient after); ``upstream``: (output position, shadow, copied) for
    each upstream gradient the kernel reads; ``launch``: the derived backward's
    LaunchPlan; ``device``: where it runs."""

    __slots__ = ("grads", "upstream", "launch", "device")

    def __init__(self, grads, upstream, launch, device):
        self.grads, self.upstream, self.launch, self.device = grads, upstream, launch, device


def last_plan(used: list):
    """The one plan a backward's launch used (collecting_used), or None where it
    launched other than through one replayable plan."""
    return used[0] if len(used) == 1 else None
