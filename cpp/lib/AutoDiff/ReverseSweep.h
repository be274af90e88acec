// The reverse sweep over a block, shared by function and kernel derivatives:
// rules for ordinary ops, hooks for loads and stores, and the reverse of
// structured control flow (scf.for, scf.if) kept as control flow.
#ifndef TRITONAD_LIB_AUTODIFF_REVERSESWEEP_H
#define TRITONAD_LIB_AUTODIFF_REVERSESWEEP_H

#include "tritonad/AutoDiff/GradientUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Block.h"

#include <functional>

namespace tritonad {

struct SweepHooks {
  /// Clones a primal op into the recomputed forward (kernels drop stores).
  std::function<void(mlir::Operation &, mlir::OpBuilder &, mlir::IRMapping &)> cloneForward;
  /// Emits the adjoint of an op that has no ReverseModeOpInterface rule
  /// (loads, stores). Returns true when it handled the op.
  std::function<mlir::FailureOr<bool>(mlir::Operation &, mlir::OpBuilder &, AdjointState &)>
      special;
  /// Told how each loop was reversed (for the schedule people can inspect).
  std::function<void(mlir::Operation *, llvm::StringRef)> note;
  /// Scratch memory for a loop's carried state (a tape): emits (at the
  /// builder) the byte pointer of this program's region, given the bytes the
  /// loop needs per program as a function of the kept-state interval (the
  /// tape keeps every `every`-th iteration's state, `every` an i64 chosen at
  /// launch), or returns null when there is no tape for this loop (then it is
  /// replayed).
  std::function<mlir::Value(mlir::OpBuilder &, mlir::scf::ForOp, int64_t bytesPerState,
                            llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Value every)>
                                bytesPerProgram,
                            mlir::Value &every)>
      tapeRegion;
};

/// builder.clone(op, mapping), safe when `mapping` already maps the block
/// arguments of op's regions (from an earlier clone of an enclosing op):
/// Region::cloneInto would otherwise drop those arguments from the clone.
mlir::Operation *cloneWithRegions(mlir::OpBuilder &builder, mlir::Operation &op,
                                  mlir::IRMapping &mapping);

/// Clones `op` into a recomputed forward without its side effects: ops that
/// write memory, nested ones included, are left out (checkRecomputable has
/// made sure nothing reads their results).
void cloneForRecompute(mlir::Operation &op, mlir::OpBuilder &builder, mlir::IRMapping &mapping);

/// Refuses a body where an op that writes memory has its result used (an
/// atomic's old value): recomputing it would repeat the write.
mlir::LogicalResult checkRecomputable(mlir::Operation *root);

/// Checks before emitting anything that every op carrying a gradient in
/// `block` (nested regions included) can be differentiated.
mlir::LogicalResult checkDifferentiable(mlir::Block &block, const llvm::DenseSet<mlir::Value> &active,
                                        bool kernel);

/// Emits the adjoints of the ops of `block` (its terminator excluded), last
/// to first, at the builder's insertion point.
mlir::LogicalResult reverseSweep(mlir::Block &block, mlir::OpBuilder &builder,
                                 AdjointState &state, const SweepHooks &hooks);

} // namespace tritonad

#endif
