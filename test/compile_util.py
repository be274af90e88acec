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


def compile_on_cpu(bwd, types_, constexprs, num_warps=4):
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
    return triton.compile(ASTSource(bwd, signature, dict(constexprs)), target=TARGET,
                          options=dict(num_warps=num_warps))


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


def assert_records_declared(compiled):
    """Every record in a compiled backward's (or augmented forward's) metadata
    has the fields the core declares for it (LaunchContract.h, exported as
    launch_contract()['records']): none undeclared, none missing but the
    optional ones. Returns how many records it checked."""
    from tritonad import _C

    declared = {record: {f["name"]: f["optional"] for f in fields}
                for record, fields in _C.launch_contract()["records"].items()}
    checked = 0

    def check(record, value):
        nonlocal checked
        fields = declared[record]
        assert set(value) <= set(fields), (record, sorted(set(value) - set(fields)))
        assert {f for f, optional in fields.items() if not optional} <= set(value), \
            (record, sorted(set(fields) - set(value)))
        checked += 1

    metadata = compiled.metadata._asdict()
    for entries in metadata.get("tritonad_schedule", {}).values():
        for entry in entries:
            check("schedule_entry", entry)
    for by_shadow in metadata.get("tritonad_coverage", {}).values():
        for coverage in by_shadow.values():
            check("coverage", coverage)
    for regrid in metadata.get("tritonad_regrid", {}).values():
        if regrid:
            check("regrid", regrid)
            for part in regrid["parts"]:
                check("regrid_part", part)
                if part["coverage"] is not None:
                    check("coverage", part["coverage"])
    for requirements in metadata.get("tritonad_requirements", {}).values():
        for requirement in requirements:
            check("requirement", requirement)
    for residuals in metadata.get("tritonad_residuals", {}).values():
        if residuals:
            check("residuals", residuals)
    for scatter in metadata.get("tritonad_scatter", {}).values():
        if scatter:
            check("scatter", scatter)
            for columns in scatter["columns"]:
                check("scatter_columns", columns)
    return checked


def comparable_dump(text):
    """A derived kernel's text (IR, records) without what differs between two runs of
    the same derivation: the per-process counter in the backward's name and the core
    build's hash."""
    import re

    text = re.sub(r"__tritonad_bwd_\d+", "__tritonad_bwd_N", text)
    return re.sub(r"derived by tritonad [0-9a-f]+", "derived by tritonad <core>", text)
