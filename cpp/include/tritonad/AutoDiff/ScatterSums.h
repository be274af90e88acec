// Scatter sums: deterministic mode's schedule for the atomic accumulations
// nothing else removes. Where re-parallelization left an atomic add (its
// addresses come from a row table, or are not analyzable, or programs' tiles
// may overlap), each program instead stores every lane's contribution and its
// element offset (a key per lane, or per run of lanes whose addresses step by
// one element along the last axis) into slots of its own; after the kernel
// the launch path sorts the keys, stably, and adds into each element the
// values of the keys that cover it, in key order, then slot order: program,
// site, iteration, lane. No atomics, the same sum bit for bit on every run,
// each element's sum in fp32 and rounded once.
#ifndef TRITONAD_AUTODIFF_SCATTERSUMS_H
#define TRITONAD_AUTODIFF_SCATTERSUMS_H

#include "tritonad/Coverage.h"
#include "tritonad/Dialect/Triton/Dialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include <array>
#include <string>
#include <vector>

namespace tritonad {

/// One atomic add deterministic mode must not keep, and whether slots can
/// take it (and why not).
struct ScatterDecision {
  mlir::triton::AtomicRMWOp atomic;
  mlir::BlockArgument shadow;
  std::string shadowName;
  // The atomic twin of a plain write whose exclusivity the launch would check.
  bool refusedTwin = false;
  bool scattered = false;
  std::string why;   // when not scattered: why, for the located error
  int64_t lanes = 0; // elements per execution
  // Lanes per key: the last axis's size where the add's addresses step by one
  // element along it (each run of them one key), else 1 (a key per lane).
  int64_t lanesPerKey = 1;
  // The scf.for loops around it, outermost first, and their trip counts:
  // where a loop's trips vary by program, the most any program runs (every
  // row of slots has room for them), which the program at `extremes` runs
  // (per axis: true the last program, false the first).
  llvm::SmallVector<mlir::scf::ForOp> loops;
  std::vector<SymbolicInt> trips;
  std::vector<std::array<bool, 3>> extremes;
  // The coarsened grid-stride loop around it (its iterations are the
  // forward's programs along axis 0), if any.
  mlir::scf::ForOp programLoop;
};

struct ScatterPlan {
  std::vector<ScatterDecision> decisions; // IR order
  ScatterSlots slots;                     // of the scattered ones, grouped by shadow
};

/// Decides, for each atomic add that deterministic mode marked
/// (`tritonad.unless_regridded`, or the twin `tritonad.refused_unless_exclusive`
/// of a plain write the launch would otherwise check), whether it can go
/// through scatter slots: the kernel has both scatter arguments, the add's
/// result is unused, its pointer is computed from a shadow argument that no
/// load of the kernel reads (but to add to what it read), and every loop
/// around it is an scf.for whose step is a positive constant or the grid's
/// size and whose bounds are expressions of the arguments and program ids.
/// Every program's row has the same number of slots, counted when the launch
/// is: where a loop's trips vary by program, as many as the program that runs
/// the most (the trip count must move one way along each grid axis, so that
/// the first or the last program along it is that program).
/// Emits no IR.
ScatterPlan planScatterSums(mlir::triton::FuncOp kernel);

/// Replaces the scattered atomics of `plan` by stores into their slots, and
/// adds to the deterministic-mode mark of each it did not scatter why, for
/// checkDeterministic's error.
void emitScatterSums(mlir::triton::FuncOp kernel, const ScatterPlan &plan);

} // namespace tritonad

#endif
