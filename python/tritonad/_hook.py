"""The Triton stage hook through which tritonad rewrites TTIR.

Triton 3.6 has one `knobs.runtime.add_stages_inspection_hook`. tritonad's hook
wraps the "ttir" stage: before Triton's own make_ttir passes (inline,
canonicalize, ...) run on the module `make_ir` produced, every registered
rewriter sees the module's text and may return new text, which Triton parses
back. Rewriters are keyed by a marker string so modules that do not mention
tritonad are left untouched (and not even printed twice).

A rewriter also receives the compile's `metadata` dict, which Triton writes to
its cache as JSON after the last stage and hands back on a cache hit (there the
stages do not run): rewriters record what they derived under "tritonad_*" keys,
and the compilation listener installed next to the hook gives those keys back
to each rewriter's `restore` when Triton serves a kernel from its cache.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import Callable, Dict, Tuple

_REWRITERS: Dict[str, Tuple[int, Callable[[str, dict], str]]] = {}
_RESTORERS: Dict[str, Callable[[dict], None]] = {}
_DERIVING: set = set()  # (markers of rewriters that write derivatives)
_installed = False
_previous_hook = None
_previous_listener = None


def build_id() -> str:
    """A digest of the compiled core and the Python package.

    Embedded in every generated jit function so Triton's cache key changes
    whenever tritonad does: a kernel compiled by another build is never served.
    """
    global _BUILD_ID
    try:
        return _BUILD_ID
    except NameError:
        pass
    from tritonad import _C

    digest = hashlib.sha256()
    digest.update(Path(_C.__file__).read_bytes())
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.read_bytes())
    _BUILD_ID = digest.hexdigest()[:16]
    return _BUILD_ID


def register_rewriter(marker: str, rewrite: Callable[[str, dict], str],
                      restore: Callable[[dict], None], order: int,
                      derives: bool = True) -> None:
    """Calls `rewrite(ttir_text, metadata) -> ttir_text` on every module containing
    `marker` (rewriters of lower `order` first, whatever the order of registration),
    and `restore(metadata)` on the metadata of every cache hit. `derives`: the
    rewrite writes derivatives (their modules are lowered as _lowered_safely
    says); a forward that only saves its residuals does not."""
    _REWRITERS[marker] = (order, rewrite)
    _RESTORERS[marker] = restore
    if derives:
        _DERIVING.add(marker)
    else:
        _DERIVING.discard(marker)
    _install()


def _install() -> None:
    global _installed, _previous_hook, _previous_listener
    if _installed:
        return
    from triton import knobs

    _previous_hook = knobs.runtime.add_stages_inspection_hook
    knobs.runtime.add_stages_inspection_hook = _stages_hook
    _previous_listener = knobs.compilation.listener
    knobs.compilation.listener = _listener
    _installed = True


def _listener(*, src, metadata, metadata_group, times, cache_hit):
    if _previous_listener is not None:
        _previous_listener(src=src, metadata=metadata, metadata_group=metadata_group,
                           times=times, cache_hit=cache_hit)
    if cache_hit and any(key.startswith("tritonad_") for key in metadata):
        for restore in _RESTORERS.values():
            restore(metadata)


def _stages_hook(backend, stages, options, language, capability):
    if _previous_hook is not None:
        _previous_hook(backend, stages, options, language, capability)
    if "ttir" not in stages:
        return
    original = stages["ttir"]
    derived = []  # (this compile's module holds derivatives tritonad wrote)

    def ttir_stage(src, metadata):
        module = _rewrite_module(src, metadata, derived)
        return original(module, metadata)

    stages["ttir"] = ttir_stage
    if "ttgir" in stages:
        lower = stages["ttgir"]
        stages["ttgir"] = lambda src, metadata: (
            _lowered_safely(lower, src, metadata) if derived else lower(src, metadata))


def _rewrite_module(module, metadata, derived=None):
    """The module as tritonad's rewriters leave it; appends True to `derived`
    where one of them writes derivatives."""
    text = module.str()
    active = sorted(entry for marker, entry in _REWRITERS.items() if marker in text)
    if not active:
        return module
    if derived is not None and any(marker in text for marker in _DERIVING):
        derived.append(True)
    for _, rewrite in active:
        text = rewrite(text, metadata)
    return parse_ttir(text, module.context)


# Triton 3.6 on Hopper miscompiled derived backwards where a warpgroup MMA
# (wgmma) takes its first operand from registers, converted from an accumulator
# tile narrower than 64 columns of a wgmma of another instruction shape: fla's
# chunk_delta_rule h kernel at BV = 32 with 4 warps (64x32 tiles, instruction
# shape N 32 into N 64: wrong dk, dv, dbeta, the same every run; right with the
# same TTIR lowered without wgmma); likely also the attention miscompile at
# BLOCK_N = 32 that Schedule/Regrid.cpp's stagesTiles avoids (dS, 64x32, into
# dQ's product). Tiles of 64 columns or more are right whatever the shapes:
# attention at head dim 128 with 8 warps converts dS (64x64, instruction shape
# N 32) into dQ's product (N 64), and its gradients match. Such a module is
# lowered again with the warp MMA only.
WARP_MMA_ONLY = "tritonad_warp_mma_only"
_WARPGROUP_LAYOUT = re.compile(
    r"^(#mma\w*) = #ttg\.nvidia_mma<\{versionMajor = 3,[^\n]*instrShape = \[([\d, ]+)\]", re.M)
_ACCUMULATOR_TO_FIRST_OPERAND = re.compile(
    r"ttg\.convert_layout %\S+ : tensor<\d+x(\d+)x[^,>]*, (#mma\w*)> -> "
    r"tensor<[^,>]*, #ttg\.dot_op<\{opIdx = 0, parent = (#mma\w*)")


def regroups_accumulator(ttgir: str) -> bool:
    """Whether a module converts an accumulator tile of a wgmma, narrower than 64
    columns, into the register operand of a wgmma of another instruction shape."""
    shapes = {layout: shape.replace(" ", "")
              for layout, shape in _WARPGROUP_LAYOUT.findall(ttgir)}
    return any(int(columns) < 64 and source in shapes and target in shapes and
               shapes[source] != shapes[target]
               for columns, source, target in _ACCUMULATOR_TO_FIRST_OPERAND.findall(ttgir))


def _lowered_safely(lower, module, metadata):
    """The "ttgir" stage of a module tritonad rewrote: lowered again with the
    warp MMA only where the first lowering regroups an accumulator (recorded in
    metadata[WARP_MMA_ONLY])."""
    text = module.str()
    lowered = lower(module, metadata)
    if not regroups_accumulator(lowered.str()):
        return lowered
    again = parse_ttir(text, module.context)
    # (Triton reads DISABLE_MMA_V3 in the pass, when it runs: set only around it)
    before = os.environ.get("DISABLE_MMA_V3")
    os.environ["DISABLE_MMA_V3"] = "1"
    try:
        lowered = lower(again, metadata)
    finally:
        if before is None:
            del os.environ["DISABLE_MMA_V3"]
        else:
            os.environ["DISABLE_MMA_V3"] = before
    metadata[WARP_MMA_ONLY] = True
    return lowered


def parse_ttir(text: str, context):
    """Parses TTIR text into a Triton module (Triton only parses files)."""
    from triton._C.libtriton import ir

    with tempfile.TemporaryDirectory(prefix="tritonad-") as tmp:
        path = os.path.join(tmp, "module.ttir")
        with open(path, "w") as f:
            f.write(text)
        module = ir.parse_mlir_module(path, context)
    module.context = context
    return module
