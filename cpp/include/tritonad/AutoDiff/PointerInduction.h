#ifndef TRITONAD_AUTODIFF_POINTERINDUCTION_H
#define TRITONAD_AUTODIFF_POINTERINDUCTION_H

#include "tritonad/Dialect/Triton/Dialect.h"

namespace tritonad {

/// Rewrites pointers advanced by a loop-invariant step in scf.for iter_args
/// (`ptrs += BLOCK_K * stride` in the Triton tutorials' matmul) as functions
/// of the induction variable: inside the body, the carried pointer becomes
/// `addptr(init, iteration * step)`. The backward can then rebuild the
/// pointer (and its shadow) in any iteration without carrying it, and the
/// access analysis sees an affine address. The carried value itself is left
/// in place for uses after the loop. Returns how many were rewritten.
unsigned rewritePointerInductions(mlir::triton::FuncOp function);

} // namespace tritonad

#endif
