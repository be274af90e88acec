// State of one reverse sweep: the map from primal values to their recomputed
// forward values and to their accumulated adjoints.
#ifndef TRITONAD_AUTODIFF_GRADIENTUTILS_H
#define TRITONAD_AUTODIFF_GRADIENTUTILS_H

#include "tritonad/Analysis/Dependence.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace tritonad {

struct Stabilizers;

/// Whether Triton can do arithmetic on this float type (fp8 it cannot).
bool hasArithmetic(mlir::Type type);

/// lhs + rhs; fp8 values are added in fp32 and rounded once.
mlir::Value addFloats(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value lhs,
                      mlir::Value rhs);


class AdjointState {
public:
  AdjointState(mlir::IRMapping &forward, const llvm::DenseSet<mlir::Value> &active)
      : forwardMap(forward), activeValues(active) {}

  /// The primal -> recomputed forward mapping.
  mlir::IRMapping &mapping() const { return forwardMap; }
  const llvm::DenseSet<mlir::Value> &activeSet() const { return activeValues; }

  /// The recomputed forward value of a primal value.
  mlir::Value forward(mlir::Value primal) const { return forwardMap.lookupOrDefault(primal); }

  /// Whether `primal` carries a gradient (depends on a differentiated input
  /// and influences a differentiated output).
  bool isActive(mlir::Value primal) const { return activeValues.contains(primal); }

  /// The adjoint accumulated so far for `primal`, or null (zero) if none.
  mlir::Value adjoint(mlir::Value primal) const { return adjoints.lookup(primal); }

  /// The adjoint of `primal`, materializing a zero constant if there is none.
  mlir::Value adjointOrZero(mlir::OpBuilder &builder, mlir::Value primal);

  /// adjoint(primal) += delta; ignored for inactive values. `delta` must have
  /// primal's type.
  void accumulate(mlir::OpBuilder &builder, mlir::Value primal, mlir::Value delta);

  /// Sets the adjoint outright (used when seeding).
  void setAdjoint(mlir::Value primal, mlir::Value adjoint) { adjoints[primal] = adjoint; }

  /// The stabilizers of the function being differentiated (null: none known).
  const Stabilizers *stabilizers() const { return stabilizerFacts; }
  void setStabilizers(const Stabilizers *facts) { stabilizerFacts = facts; }

private:
  mlir::IRMapping &forwardMap;
  const llvm::DenseSet<mlir::Value> &activeValues;
  llvm::DenseMap<mlir::Value, mlir::Value> adjoints;
  const Stabilizers *stabilizerFacts = nullptr;
};

/// A zero of `type` (float scalar or tensor).
mlir::Value createZero(mlir::OpBuilder &builder, mlir::Location loc, mlir::Type type);

/// A float constant of `type` (splat for tensors).
mlir::Value createFloatConstant(mlir::OpBuilder &builder, mlir::Location loc, mlir::Type type,
                                double value);

} // namespace tritonad

#endif
