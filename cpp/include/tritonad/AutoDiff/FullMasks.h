// Masks that hold everywhere at a launch: a derived backward repeats the
// forward's masks (`offs < n`, `offs_k < K - k * BK`), and for most launches
// of a tiled kernel they are true in every lane (n a multiple of the block).
// The backward is then compiled in two variants: with its masks, and, for
// launches that satisfy a condition the launch path evaluates, without the
// masks that condition makes always true. Triton compiles the second with
// plain, vectorized, pipelined loads and stores, as it compiles a kernel
// written for aligned sizes. (The launch path picks the variant through
// hidden arguments: python/tritonad/_masks.py.)
#ifndef TRITONAD_AUTODIFF_FULLMASKS_H
#define TRITONAD_AUTODIFF_FULLMASKS_H

#include "tritonad/Coverage.h"
#include "tritonad/Dialect/Triton/Dialect.h"

#include <optional>

namespace tritonad {

/// Marks each comparison feeding the mask of a load, store or atomic of
/// `kernel` that is true everywhere under a launch condition
/// (alwaysTrueCondition) and returns the conjunction of those conditions,
/// per program (ProgramId leaves of the kernel's grid as it is now: run it
/// before the kernel's programs are regridded); nullopt where nothing is
/// marked. The marks survive cloning (re-parallelization copies them with
/// the comparisons).
/// `marked` (optional) sees each marked comparison with its own condition.
std::optional<SymbolicInt> markFullMasks(
    mlir::triton::FuncOp kernel,
    llvm::function_ref<void(mlir::Operation *, const SymbolicInt &)> marked = nullptr);

/// `full`: replaces each marked comparison by true and drops the masks that
/// leaves true; either way removes the marks. Returns whether it replaced
/// anything.
bool specializeFullMasks(mlir::triton::FuncOp kernel, bool full);

} // namespace tritonad

#endif
