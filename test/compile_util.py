"""Deriving backwards on the CPU: Triton's front end compiles for an sm_90 target
(no GPU needed), and tritonad derives inside its ttir stage, so the schedule, the
derived IR and the rendering can be checked without a device."""

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from tritonad._partial import WORKSPACE_TYPES

TARGET = GPUTarget("cuda", 90, 32)


def compile_backward(bwd, types, constexprs, none=(), overrides=None):
    """Compiles the backward (a JITFunction) to PTX on the CPU; shadows get the
    type of their pointer unless overridden; `none` shadows are passed as None."""
    types = dict(types)
    for ptr, shadow in bwd.shadows.items():
        types.setdefault(shadow, types[ptr])
    types.update(overrides or {})
    signature, consts = {}, dict(constexprs)
    for name in bwd.launch_signature:
        if name in constexprs:
            signature[name] = "constexpr"
        elif name in none:
            signature[name] = "constexpr"
            consts[name] = None
        else:
            signature[name] = types[name]
    return triton.compile(ASTSource(bwd, signature, consts), target=TARGET)


def compile_on_cpu(bwd, types_, constexprs):
    """The backward compiled on the CPU (for an sm_90 target) with the
    workspace parameters present, as tritonad's launch path passes them on a GPU
    (partial buffers, tapes and tables included)."""
    types_ = dict(types_)
    for ptr, shadow in bwd.shadows.items():
        types_.setdefault(shadow, types_[ptr])
    types_.update(WORKSPACE_TYPES)
    # (no residuals: the user launches the forward, tritonad.autograd does not)
    constexprs = dict(constexprs, tritonad_residuals=None)
    signature = {n: "constexpr" if n in constexprs else types_[n] for n in bwd.arg_names}
    return triton.compile(ASTSource(bwd, signature, dict(constexprs)), target=TARGET)


def compile_for_schedule(bwd, types_, constexprs):
    """Derives the backward on the CPU; its schedule."""
    compile_on_cpu(bwd, types_, constexprs)
    return bwd.schedule()


def parse_schedule(text):
    """A schedule's lines as {subject: what}."""
    out = {}
    for line in text.strip().splitlines():
        name, _, what = line.partition(":")
        out[name.strip()] = what.strip()
    return out
