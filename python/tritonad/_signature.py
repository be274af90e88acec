"""The derived kernels' parameters as a launch sees them: placeholder names,
parameters renamed where they collide with Triton's launch keywords, and the
checks of the shadows a caller passes."""

from __future__ import annotations

import functools
from typing import Dict

from tritonad._launch_plan import span

_BWD_MARKER = "__tritonad_bwd_"
_FWD_MARKER = "__tritonad_fwd_"  # the forward that saves residuals (_residuals.py)


# Parameter names Triton's launch itself takes or overwrites (run's ``grid`` and
# ``warmup``, the ``debug`` and ``instrumentation_mode`` it sets): such a parameter
# can only be passed by position.
POSITIONAL_ONLY_NAMES = frozenset({"grid", "warmup", "debug", "instrumentation_mode"})
# Those and Triton's compile options, which tritonad's launch path passes itself
# (the tuned num_warps / num_stages / maxnreg): a kernel parameter of one of these
# names would collide with them, so the placeholders take it under another name.
_LAUNCH_KEYWORDS = POSITIONAL_ONLY_NAMES | frozenset({
    "num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion",
    "launch_cooperative_grid", "launch_pdl", "sanitize_overflow"})
_RENAMED_PREFIX = "tritonad_param_"


@functools.lru_cache(maxsize=None)
def _launch_keywords() -> frozenset:
    names = set(_LAUNCH_KEYWORDS)
    try:  # (the option fields of the backend tritonad derives for)
        from triton.backends.nvidia.compiler import CUDAOptions
        names.update(CUDAOptions.__dataclass_fields__)
    except Exception:  # noqa: BLE001  (another Triton layout: the fixed list)
        pass
    return frozenset(names)


def renamed_parameters(names) -> Dict[str, str]:
    """{parameter: the placeholders' name for it} for the parameters named like a
    launch keyword (a ``num_stages: tl.constexpr``, a ``grid``)."""
    keywords = _launch_keywords()
    return {n: f"{_RENAMED_PREFIX}{n}" for n in names if n in keywords}


def inner_arguments(arguments: dict, renamed: Dict[str, str], kernel_name: str) -> dict:
    """A launch's arguments by the placeholder's names (see renamed_parameters)."""
    if not renamed:
        return arguments
    inner = {}
    for key, value in arguments.items():
        name = renamed.get(key, key)
        if name in inner:
            raise TypeError(f"{kernel_name}: argument {key!r} given twice")
        inner[name] = value
    return inner


def user_grid(grid, renamed: Dict[str, str]):
    """A grid callable sees the arguments by the kernel's own names, as Triton's
    launch gives them."""
    if not renamed or not callable(grid):
        return grid
    outer = {inner: name for name, inner in renamed.items()}
    return lambda meta: grid({outer.get(k, k): v for k, v in meta.items()})


def check_shadows(kernel_name: str, arguments: dict, shadows: Dict[str, str],
                  renamed: Dict[str, str]) -> bool:
    """Refuses a shadow that the backward could not address as it addresses its
    pointer's tensor: on another device, laid out with other strides, or
    smaller (the backward would write out of bounds). Dtypes: the core.
    Returns whether the verdict follows from the tensors' layouts alone (then a
    launch with the same layouts needs no check)."""
    import torch

    by_layout = True
    for pointer, shadow in shadows.items():
        tensor, buffer = arguments.get(renamed.get(pointer, pointer)), arguments.get(shadow)
        if not isinstance(tensor, torch.Tensor) or not isinstance(buffer, torch.Tensor):
            continue
        where = f"shadow {shadow!r} of {kernel_name} (the gradient of {pointer!r})"
        fix = f"allocate it like {pointer!r}, e.g. torch.zeros_like({pointer})"
        if buffer.device != tensor.device:
            raise ValueError(f"{where} is on {buffer.device} but {pointer!r} is on "
                             f"{tensor.device}: {fix}")
        widened = buffer.dtype == torch.float32 and tensor.dtype in (torch.float16,
                                                                     torch.bfloat16)
        if buffer.dtype != tensor.dtype and not widened:
            continue  # (the core names both types when it derives)
        if buffer.shape == tensor.shape and any(
                a != b for a, b, n in zip(buffer.stride(), tensor.stride(), tensor.shape)
                if n > 1):
            raise ValueError(
                f"{where} has strides {tuple(buffer.stride())} but {pointer!r} has "
                f"{tuple(tensor.stride())}: the backward addresses it at {pointer!r}'s "
                f"offsets, so the gradient would land in other elements; {fix} (or "
                f"torch.empty_strided with {pointer!r}'s strides, zero-filled)")
        needed = span(tensor)
        if span(buffer) >= needed:
            continue
        by_layout = False
        available = buffer.untyped_storage().nbytes() // buffer.element_size() - \
            buffer.storage_offset()
        if available < needed:
            raise ValueError(
                f"{where} holds {max(available, 0)} elements from its first one, but the "
                f"backward addresses it as {pointer!r} (shape {tuple(tensor.shape)}, strides "
                f"{tuple(tensor.stride())}: {needed} elements from its first), so it would "
                f"write out of bounds; {fix}")
    return by_layout
