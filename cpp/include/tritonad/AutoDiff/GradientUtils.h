// The gradient utilities of one reverse sweep (Enzyme's GradientUtils): the
// map from primal values to their recomputed forward values and to their
// accumulated adjoints, and the services of the driver that runs the sweep
// (shadow memory, tapes, the schedule). Every rule, region and memory ops'
// included, reaches the sweep through this object.
#ifndef TRITONAD_AUTODIFF_GRADIENTUTILS_H
#define TRITONAD_AUTODIFF_GRADIENTUTILS_H

#include "tritonad/Analysis/Dependence.h"
#include "tritonad/Schedule.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::scf {
class ForOp;
}

namespace tritonad {

struct Stabilizers;
class GradientUtils;

/// Ops of the primal whose results the forward saved (its residuals): each
/// maps to the primal's loads of those values, placed before it. Recomputing
/// such an op means taking the loaded values instead (ReverseSweep.h).
using Residuals = llvm::DenseMap<mlir::Operation *, llvm::SmallVector<mlir::Value>>;

/// What the driver of a sweep provides beyond the rules: a kernel's driver
/// owns the shadows of pointer arguments and the scratch memory; a function's
/// driver has none (then loads and stores carry no gradient).
class SweepDriver {
public:
  virtual ~SweepDriver() = default;

  /// Whether loads and stores through `ptr` have shadow memory.
  virtual bool isShadowed(mlir::Value ptr) const = 0;
  /// The adjoint of a load through a shadowed pointer: its result's adjoint
  /// is accumulated into the shadow (by the strategy the driver chose).
  virtual llvm::LogicalResult emitLoadAdjoint(mlir::OpBuilder &builder, mlir::Operation *load,
                                              GradientUtils &gutils) = 0;
  /// The adjoint of a store (or an atomic add) through a shadowed pointer:
  /// the stored (added) value's adjoint is read from the shadow.
  virtual llvm::LogicalResult emitStoreAdjoint(mlir::OpBuilder &builder, mlir::Operation *store,
                                               GradientUtils &gutils) = 0;
  /// Whether `store` overwrites an earlier store through the same pointer:
  /// its adjoint then takes the upstream gradient away from that store's
  /// (zeroes it at its addresses), even where the value it stores carries
  /// no gradient (a constant: `tl.store(y, 0.0, mask=...)` after `y = f(x)`).
  virtual bool overwritesEarlierStore(mlir::Operation *store) const { return false; }
  /// Scratch memory for a loop's carried state (a tape): emits (at the
  /// builder) the byte pointer of this program's region, given the bytes the
  /// loop needs per program as a function of the kept-state interval (the
  /// tape keeps every `every`-th iteration's state, `every` an i64 chosen at
  /// launch), or returns null when there is no tape for this loop (then it is
  /// replayed).
  virtual mlir::Value
  tapeRegion(mlir::OpBuilder &builder, mlir::scf::ForOp loop, int64_t bytesPerState,
             llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Value every)> bytesPerProgram,
             mlir::Value &every) {
    return mlir::Value();
  }
  /// Told how each loop was reversed (for the schedule people can inspect).
  virtual void noteLoop(mlir::Operation *loop, Strategy strategy, llvm::StringRef how) {}
};

/// Whether Triton can do arithmetic on this float type (fp8 it cannot).
bool hasArithmetic(mlir::Type type);

/// lhs + rhs; fp8 values are added in fp32 and rounded once.
mlir::Value addFloats(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value lhs,
                      mlir::Value rhs);

/// The type a running sum of adjoints of `type` values is carried in across
/// a reversed loop's iterations: f32 for f16 and bf16, whose running sums
/// would round at every iteration (a loop's hundreds of blocks), as
/// hand-written kernels sum in f32 and round once; `type` otherwise.
mlir::Type summedType(mlir::Type type);


class GradientUtils {
public:
  GradientUtils(mlir::IRMapping &forward, const llvm::DenseSet<mlir::Value> &active,
                SweepDriver *driver = nullptr)
      : forwardMap(forward), activeValues(active), sweepDriver(driver) {}

  /// The utilities of a nested sweep (a region's body): the same driver and
  /// stabilizers, its own forward mapping, activity and adjoints.
  GradientUtils nested(mlir::IRMapping &forward, const llvm::DenseSet<mlir::Value> &active) const {
    GradientUtils inner(forward, active, sweepDriver);
    inner.stabilizerFacts = stabilizerFacts;
    inner.savedResiduals = savedResiduals;
    return inner;
  }

  /// The driver's services; null for a function (no memory, no tapes).
  SweepDriver *driver() const { return sweepDriver; }

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

  /// The values the forward saved (null: none).
  const Residuals *residuals() const { return savedResiduals; }
  void setResiduals(const Residuals *saved) { savedResiduals = saved; }

private:
  mlir::IRMapping &forwardMap;
  const llvm::DenseSet<mlir::Value> &activeValues;
  llvm::DenseMap<mlir::Value, mlir::Value> adjoints;
  SweepDriver *sweepDriver;
  const Stabilizers *stabilizerFacts = nullptr;
  const Residuals *savedResiduals = nullptr;
};

/// A zero of `type` (float scalar or tensor).
mlir::Value createZero(mlir::OpBuilder &builder, mlir::Location loc, mlir::Type type);

/// A float constant of `type` (splat for tensors).
mlir::Value createFloatConstant(mlir::OpBuilder &builder, mlir::Location loc, mlir::Type type,
                                double value);

} // namespace tritonad

#endif
