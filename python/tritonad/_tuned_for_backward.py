"""An autotuned forward launched for tritonad tunes among the configs whose backward
fits the device.

The backward of an autotuned forward runs with the config the forward's launch chose
(_forward_config.py): its tiles are the forward's. A forward's autotuner picks by the
forward's speed alone, and the derived backward holds more tiles than its forward
(the forward's, their adjoints, a loop's recomputed state): a config the forward runs
well may leave a backward that needs more shared memory than the device has with any
number of pipeline stages (fla's fused_chunk_fwd_kernel at BV = 128 in fp32: 288 KiB
against 227). Its backward then cannot launch, whichever way it is called.

So, while tritonad launches such a forward (tritonad.autograd, kernel and launcher
forms), each of its autotuners that has a config to choose

  - prunes, before it benchmarks, the configs whose backward does not fit the device
    with one stage (the launch path lowers the stages to what fits,
    _partial._with_stages_that_fit); where none fits, it keeps them all (the
    backward's launch then says which backward does not fit);
  - where it chose a config for this key before (a launch outside tritonad, without
    this pruning) whose backward does not fit while another config's does, forgets
    that choice first, so that it tunes again among those that fit, before this
    launch: the forward runs with the config its backward will follow.

The forward's results do not change (an autotuner's configs compute one function),
only which of its configs it runs with; nothing changes where every backward fits.
Each config's backward is compiled once to learn its shared memory (Triton keeps it
in its cache; the one chosen is the one the backward launches).
"""

from __future__ import annotations

import contextlib

from tritonad import _forward_config, _partial

_LAUNCH_KEYWORDS = ("grid", "warmup")


def _tuners(kernel):
    """The autotuners with several configs that `kernel` is wrapped in."""
    from triton.runtime.autotuner import Autotuner

    layer = kernel
    while layer is not None and not hasattr(layer, "device_caches"):
        if isinstance(layer, Autotuner) and len(layer.configs) > 1:
            yield layer
        layer = getattr(layer, "fn", None)


def _pairs(kernel, backward) -> tuple:
    """(forward autotuner, the backward's FollowsForwardConfig of it) for each
    autotuner of `kernel` with several configs."""
    follows = {}
    layer = backward
    while layer is not None and hasattr(layer, "fn") and not hasattr(layer, "device_caches"):
        if isinstance(layer, _forward_config.FollowsForwardConfig):
            follows[id(layer.tuner)] = layer
        layer = layer.fn
    return tuple((tuner, follows[id(tuner)]) for tuner in _tuners(kernel)
                 if id(tuner) in follows)


def has_choices(kernel) -> bool:
    """Whether `kernel` is in an autotuner with several configs."""
    return any(True for _ in _tuners(kernel))


@contextlib.contextmanager
def tuned_for_backward(kernel, backward):
    """Launches of `kernel` inside the block (a forward wrapped in autotuners; its
    tritonad backward `backward`, wrapped alike) tune among the configs whose
    backward fits (the module's docstring). Nothing is done for a kernel without
    such autotuners, or for a backward whose parameters are renamed."""
    pairs = _pairs(kernel, backward) if backward is not None and \
        not getattr(backward, "tritonad_renamed", None) else ()
    installed = []
    for tuner, follows in pairs:
        if "run" in tuner.__dict__:  # (someone else's instance override: left alone)
            continue
        tuner.run = _run_for(tuner, follows)
        installed.append(tuner)
    try:
        yield
    finally:
        for tuner in installed:
            tuner.__dict__.pop("run", None)


def _run_for(tuner, follows):
    def run(*args, **kwargs):
        arguments = _forward_arguments(tuner, args, kwargs)
        if not _on_gpu(arguments):  # (the interpreter: no device limits)
            return type(tuner).run(tuner, *args, **kwargs)
        key = _forward_config.tuning_key(tuner, arguments)
        checked = tuner.__dict__.setdefault("tritonad_checked_keys", set())
        if key not in checked:
            chosen = tuner.cache.get(key)
            if chosen is not None and not _fits(follows, chosen, arguments, kwargs) and \
                    any(_fits(follows, c, arguments, kwargs) for c in tuner.configs):
                del tuner.cache[key]  # (tuned again below, among those that fit)
        own_prune = tuner.prune_configs

        def prune(prune_kwargs):
            configs = own_prune(prune_kwargs)
            fitting = [c for c in configs if _fits(follows, c, arguments, kwargs)]
            return fitting or configs

        tuner.prune_configs = prune
        try:
            return type(tuner).run(tuner, *args, **kwargs)
        finally:
            tuner.__dict__.pop("prune_configs", None)
            checked.add(key)
    return run


def _forward_arguments(tuner, args, kwargs) -> dict:
    arguments = dict(zip(tuner.arg_names, args))
    arguments.update((k, v) for k, v in kwargs.items() if k not in _LAUNCH_KEYWORDS)
    return arguments


def _on_gpu(arguments) -> bool:
    return any(getattr(getattr(v, "device", None), "type", None) == "cuda"
               for v in arguments.values())


def _fits(follows, config, arguments, kwargs) -> bool:
    """Whether the backward `follows` launches for `config` fits the device's shared
    memory with one pipeline stage (decided once per tuning key and config)."""
    memo = follows.__dict__.setdefault("tritonad_fits", {})
    # (configs that differ in their stages alone have one answer)
    key = (_forward_config.tuning_key(follows.tuner, arguments),
           tuple(sorted((k, repr(v)) for k, v in config.all_kwargs().items()
                        if k != "num_stages")))
    if key not in memo:
        memo[key] = _compiled_fits(follows, config, arguments, kwargs)
    return memo[key]


def _compiled_fits(follows, config, arguments, kwargs) -> bool:
    import torch
    from triton.runtime.errors import OutOfResources

    # (every gradient wanted: the largest backward the forward's launches may need)
    shadows = {shadow: torch.empty_like(arguments[pointer])
               for pointer, shadow in follows.shadows.items()
               if isinstance(arguments.get(pointer), torch.Tensor) and
               arguments[pointer].is_floating_point()}
    options = {**arguments, **shadows, **config.all_kwargs(), "num_stages": 1}
    try:
        kernel = follows.fn.run(grid=kwargs.get("grid"), warmup=True, **options)
    except OutOfResources:
        return False
    except Exception:  # (not a question of resources: its launch will say what it is)
        return True
    return _partial.fits(kernel)
