// The reverse sweep over a block, shared by function and kernel derivatives.
// It knows no op by name: every op's adjoint, loops, branches, loads and
// stores included, comes from its ReverseModeOpInterface model (Rules/).
#ifndef TRITONAD_LIB_AUTODIFF_REVERSESWEEP_H
#define TRITONAD_LIB_AUTODIFF_REVERSESWEEP_H

#include "tritonad/AutoDiff/GradientUtils.h"

#include "mlir/IR/Block.h"

namespace tritonad {

/// Whether `op` carries a gradient: one of its results or of its regions'
/// block arguments is active, or an op nested in it passes a gradient
/// without results (a store of an active value).
bool carriesGradient(mlir::Operation &op, const GradientUtils &gutils);

/// builder.clone(op, mapping), safe when `mapping` already maps the block
/// arguments of op's regions (from an earlier clone of an enclosing op):
/// Region::cloneInto would otherwise drop those arguments from the clone.
mlir::Operation *cloneWithRegions(mlir::OpBuilder &builder, mlir::Operation &op,
                                  mlir::IRMapping &mapping);

/// Clones `op` into a recomputed forward without its side effects: ops that
/// write memory, nested ones included, are left out (checkRecomputable has
/// made sure nothing reads their results). An op the forward saved (in
/// `residuals`) is not recomputed: its results map to the loads of them,
/// which precede it in its block and so are already mapped.
void cloneForRecompute(mlir::Operation &op, mlir::OpBuilder &builder, mlir::IRMapping &mapping,
                       const Residuals *residuals = nullptr);

/// Refuses a body where an op that writes memory has its result used (an
/// atomic's old value): recomputing it would repeat the write.
mlir::LogicalResult checkRecomputable(mlir::Operation *root);

/// Checks before emitting anything that every op carrying a gradient in
/// `block` has a rule that accepts it (region ops check their bodies).
mlir::LogicalResult checkDifferentiable(mlir::Block &block, const GradientUtils &gutils);

/// Emits the adjoints of the ops of `block` (its terminator excluded), last
/// to first, at the builder's insertion point.
mlir::LogicalResult reverseSweep(mlir::Block &block, mlir::OpBuilder &builder,
                                 GradientUtils &gutils);

} // namespace tritonad

#endif
