// Stabilizers: values whose choice does not change what a function computes.
//
// A max subtracted before exponentiating (softmax, logsumexp, the running max
// of an online softmax or of flash attention) leaves the results unchanged
// whatever value it takes: shift it by d and every exponential built from it
// is scaled by e^-d, so is every sum and dot of those, and the final ratio (or
// log + max) cancels the scale. Its gradient is exactly zero, so the backward
// holds it constant. A loop that carries one may use its final value in every
// iteration: the rescaling factors exp(m_prev - m_new) become 1 and the other
// carried values plain accumulations, reversed in O(n).
//
// findStabilizers proves this on the IR by abstract interpretation, one
// candidate at a time: each value is classified by how it depends on a
// perturbation d of the candidate (free of it, shifted by c*d, scaled by
// e^(c*d), or unknown), with one rule per op; a loop relates the perturbation
// of the previous iteration's value to the current one's. The candidate is a
// stabilizer when everything that leaves the function (stored values,
// addresses and masks, returned values, atomics, branch and loop conditions)
// is free of it. Candidates are max/min reductions and loop-carried values
// updated by max/min with their previous value (monotone: the final value
// bounds every iteration's, so exponentials rebuilt from it cannot overflow).
#ifndef TRITONAD_ANALYSIS_SHIFTINVARIANCE_H
#define TRITONAD_ANALYSIS_SHIFTINVARIANCE_H

#include "tritonad/Schedule.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>
#include <vector>

namespace tritonad {

struct Stabilizer {
  /// The max/min that defines it (inside `loop` when it is carried).
  mlir::Value value;
  /// The loop that carries it, or null.
  mlir::scf::ForOp loop;
  /// Its index among `loop`'s carried values.
  unsigned carried = 0;
  /// The value its loop's reverse holds it at: the last value of its family
  /// (loops that continue one another hold one family: flash attention's
  /// off-diagonal then diagonal loop).
  mlir::Value finalValue;
  /// How many loops hold its family (1: it alone).
  unsigned familySize = 1;
};

struct Stabilizers {
  llvm::SmallVector<Stabilizer> found;
  /// Every SSA value of every stabilizer (for a carried one: the max, the
  /// iteration argument and the loop result): held constant by the backward.
  llvm::DenseSet<mlir::Value> heldConstant;

  /// The stabilizers `loop` carries.
  llvm::SmallVector<const Stabilizer *> carriedBy(mlir::Operation *loop) const;

  /// One schedule entry per stabilizer, located, for the schedule people read.
  std::vector<ScheduleEntry> describe() const;
};

/// The stabilizers of `function` (a tt.func), proven one at a time with the
/// ones already found held constant.
Stabilizers findStabilizers(mlir::Operation *function);

/// The value of a float constant (scalar or splat), if `value` is one.
std::optional<double> floatConstant(mlir::Value value);

} // namespace tritonad

#endif
