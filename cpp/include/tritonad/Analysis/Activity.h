// Activity analysis: which values carry gradients. A value is active when it
// varies with a differentiated input (forward dataflow) and is useful to a
// differentiated output (backward dataflow), and its type is floating point.
// Integers, booleans, pointers, masks and index arithmetic never are.
#ifndef TRITONAD_ANALYSIS_ACTIVITY_H
#define TRITONAD_ANALYSIS_ACTIVITY_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace tritonad {

struct ActivitySeeds {
  /// Values that vary with the inputs by themselves: differentiated
  /// arguments, loads from differentiated pointers.
  llvm::function_ref<bool(mlir::Value)> varies;
  /// Operands whose gradient is asked for: returned values, values stored
  /// through differentiated pointers.
  llvm::function_ref<bool(mlir::OpOperand &)> isUseful;
  /// Values held constant (stabilizers, see Analysis/ShiftInvariance.h):
  /// never active, and no gradient flows through them.
  const llvm::DenseSet<mlir::Value> *heldConstant = nullptr;
};

/// Runs both analyses on `function` (not across calls) and returns the
/// active values.
llvm::FailureOr<llvm::DenseSet<mlir::Value>> computeActiveValues(mlir::Operation *function,
                                                                const ActivitySeeds &seeds);

} // namespace tritonad

#endif
