"""The backward of an autotuned forward runs with the configuration the forward's
launch chose.

A config's meta-parameters (BLOCK sizes, the grid a ``META`` lambda computes from them)
decide which program handles which data and, for a forward that writes one partial
result per program (a loss the host then sums), the layout of its outputs. A backward
tuned on its own could pick another config: then it reads the upstream gradient of
those partial results in another layout, and its gradient is silently wrong. So the
backward never re-tunes: it looks up the config the forward's autotuner chose for the
same key (its ``key`` arguments and the dtypes of its arguments), and refuses to run
when the forward was not launched with that key in this process. Its own launch options
can still be searched with ``tritonad.grad(..., tune=True)``.
"""

from __future__ import annotations

from triton.runtime.jit import KernelInterface


class ForwardConfigError(RuntimeError):
    """The backward of an autotuned kernel was launched for a key the forward never ran."""


class FollowsForwardConfig(KernelInterface):
    """The backward `fn` of the autotuned forward `tuner`, launched with the config
    `tuner` chose for the same arguments."""

    def __init__(self, fn, tuner):
        self.fn = fn
        self.tuner = tuner
        self.arg_names = fn.arg_names

    def config_for(self, args, kwargs):
        tuner = self.tuner
        if len(tuner.configs) == 1:
            return tuner.configs[0]
        bound = dict(zip(self.arg_names, args))
        bound.update(kwargs)
        # (by the forward's names: a launch may pass a parameter named like a
        # launch keyword under the placeholders' name, see renamed_parameters)
        outer = {inner: name for name, inner in
                 getattr(self.fn, "tritonad_renamed", {}).items()}
        bound = {outer.get(name, name): value for name, value in bound.items()}
        # The forward's own arguments, in the order its autotuner saw them when
        # they were passed by position.
        forward_args = {name: bound[name] for name in tuner.arg_names if name in bound}
        config = _chosen_config(tuner, forward_args)
        if config is not None:
            return config
        # (the forward passed some of them by name, in another order: its key's
        # dtypes in another order)
        key = tuning_key(tuner, forward_args)
        values = sum(1 for name in tuner.keys if name in forward_args)
        matches = [c for cached, c in tuner.cache.items()
                   if cached[:values] == key[:values] and sorted(cached[values:]) ==
                   sorted(key[values:])]
        config = matches[0] if len(matches) == 1 else None
        if config is None:
            dtypes = key[values:]
            keys = ", ".join(f"{name}={forward_args.get(name)!r}" for name in tuner.keys)
            raise ForwardConfigError(
                f"the backward of the autotuned kernel {tuner.base_fn.__name__} runs with the "
                f"config its forward launch chose (BLOCK sizes and grids decide which program "
                f"handles which data), but the forward was not launched with these arguments "
                f"in this process (key: {keys}; dtypes {dtypes}): launch the forward first, "
                f"with the same arguments")
        return config

    def run(self, *args, grid, warmup, **kwargs):
        config = self.config_for(args, kwargs)
        self.best_config = config
        options = {**config.all_kwargs(), **kwargs}
        return self.fn.run(*args, grid=grid, warmup=warmup, **options)


def launched_as(kernel, arguments: dict):
    """(JITFunction, its arguments, what the wrappers filled in) that
    ``kernel[grid](**arguments)`` launches through `kernel`'s autotune and
    heuristics wrappers, as their ``run`` methods fill them in: each heuristic's
    value in turn, and the config an autotuner chose for these arguments' key
    (its meta-parameters and launch options). None where that launch is not
    this function of the arguments alone: an autotuner that has not chosen for
    this key yet, a config or kernel with pre-run hooks, a wrapper of another
    kind, a subclass of Triton's own (its run may choose otherwise, e.g. a
    config reloaded from disk)."""
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    arguments, filled = dict(arguments), {}
    while not isinstance(kernel, JITFunction):
        if type(kernel) is Heuristics:
            for name, heuristic in kernel.values.items():
                arguments[name] = filled[name] = heuristic(dict(arguments))
        elif type(kernel) is Autotuner:
            config = _chosen_config(kernel, arguments)
            if config is None or config.pre_hook is not None:
                return None
            chosen = config.all_kwargs()
            arguments.update(chosen)
            filled.update(chosen)
        else:
            return None
        kernel = kernel.fn
    return None if kernel.pre_run_hooks else (kernel, arguments, filled)


def _chosen_config(tuner, arguments: dict):
    """The config `tuner` launches with for `arguments` passed by name (in their
    order: the dtypes in its key follow it), as Autotuner.run looks it up; None
    where it has not chosen one."""
    if len(tuner.configs) == 1:
        return tuner.configs[0]
    return tuner.cache.get(tuning_key(tuner, arguments))


def tuning_key(tuner, arguments: dict) -> tuple:
    """The key `tuner` (an Autotuner) keeps its choice under for `arguments` passed
    by name (in their order: the dtypes in its key follow it), as Autotuner.run
    makes it."""
    own = {name: value for name, value in arguments.items() if name in tuner.arg_names}
    key = [own[name] for name in tuner.keys if name in own]
    key += [str(value.dtype) for value in own.values() if hasattr(value, "dtype")]
    return tuple(key)
