// Re-parallelization: a derived backward that adds a product of tiles into a
// gradient from every program of the forward (dA[m, k] += dC[m, n] B[k, n]^T
// in program (m, n) at iteration k) gets programs of its own for that
// gradient, one per (tile, iteration), each looping over the forward programs
// that share the tile and adding their sum once: the schedule of a
// hand-written matmul backward, derived from the IR.
#ifndef TRITONAD_AUTODIFF_REGRID_H
#define TRITONAD_AUTODIFF_REGRID_H

#include "tritonad/Coverage.h"
#include "tritonad/Dialect/Triton/Dialect.h"
#include "tritonad/LaunchContract.h"

#include <string>
#include <utility>
#include <vector>

namespace tritonad {

/// The name of the kernel argument (`!tt.ptr<i64>`) through which the launch
/// path passes the grouping (layout: `Regrid` in Coverage.h).
inline constexpr const char *kRegridArgument = contract::kRegrid;

/// The kernel's hidden argument `name`, a pointer to integers of `width`
/// bits (the launch path's tables and scratch); null where it has none (a
/// compile that specialized it away).
mlir::BlockArgument hiddenArgument(mlir::triton::FuncOp kernel, llvm::StringRef name,
                                   unsigned width);

/// The twin writes of an accumulation whose exclusivity is checked at run
/// time (KernelBackward): the plain write taken when each address belongs to
/// one program, and the atomic add taken otherwise. Complementary, so the
/// atomic may move into programs of its own while the plain write stays.
inline constexpr const char *kWhenExclusive = "tritonad.when_exclusive";
inline constexpr const char *kUnlessExclusive = "tritonad.unless_exclusive";

/// Deterministic mode (KernelBackward): an atomic add that only programs of
/// their own may replace; its value says why the forward's schedule needed
/// the atomic (the error, located, where the atomic remains).
inline constexpr const char *kUnlessRegridded = "tritonad.unless_regridded";

/// Deterministic mode: the atomic twin of a plain write whose exclusivity
/// the launch checks (and refuses the launches where it does not hold).
/// Re-parallelization may take both twins (the sum then needs no condition);
/// where it does not, the atomic goes (`dropRefusedTwins`).
inline constexpr const char *kRefusedUnlessExclusive = "tritonad.refused_unless_exclusive";

/// Removes those marks (they are for this pass only).
void dropExclusivityMarks(mlir::triton::FuncOp kernel);

/// Erases the atomics marked kRefusedUnlessExclusive.
void dropRefusedTwins(mlir::triton::FuncOp kernel);

/// Keeps only `programs`' branch of a kernel regridAccumulations transformed
/// (the Parts kernel still reads the number of forward programs, 0 in its
/// launch's table); does nothing for All or a kernel it did not transform.
void keepRegridPrograms(mlir::triton::FuncOp kernel, RegridPrograms programs);

/// What became of one shadow: re-parallelized (how), or left with atomics in
/// a loop whose gradient is a dot product (why).
struct RegridNote {
  std::string shadow; // the backward's shadow argument
  bool reparallelized = false;
  std::string how;
};

struct RegridReport {
  Regrid regrid;
  std::vector<RegridNote> notes;
  /// Shadows whose plain write taken where the launch proves exclusivity
  /// (kWhenExclusive) went with the atomic into programs of their own: the
  /// coverage KernelBackward recorded for that write no longer holds.
  std::vector<std::string> untwinned;
  /// Loads whose wrapped lanes only meet zeros in products, loaded unwrapped
  /// (ZeroLanes.h: unwrapLoadsMeetingZeros).
  int unwrappedLoads = 0;
};

/// Moves the atomic accumulations into `shadows` (argument names) that qualify
/// into programs of their own (see Regrid in Coverage.h): each is a
/// `tt.atomic_rmw fadd` directly in a top-level scf.for of `kernel`, of a value
/// computed with a tt.dot from the program, the induction variable and memory
/// nothing in the kernel writes, at addresses and under a mask that depend on
/// the program only through integer scalars the launch path can evaluate. The
/// forward's schedule stays, for everything else, in programs
/// [0, mainPrograms). Does nothing where `kernel` has no `tritonad_regrid`
/// argument or nothing qualifies. Never fails: what does not qualify keeps its
/// atomics, and `report.notes` says why.
/// `overwrite`: the caller passes the shadows to be overwritten (see
/// KernelBackwardConfig).
/// Fails, with the located error each carries, where an atomic marked
/// `kUnlessRegridded` remains in `kernel` (`notes`: why re-parallelization
/// left it, added to the error).
mlir::LogicalResult checkDeterministic(mlir::triton::FuncOp kernel,
                                       const std::vector<RegridNote> &notes);

/// `deterministic`: the caller refuses atomics (mode="deterministic"): parts
/// are taken where they are correct, whatever they cost.
void regridAccumulations(mlir::triton::FuncOp kernel, llvm::ArrayRef<std::string> shadows,
                         bool overwrite, bool deterministic, RegridReport &report);

} // namespace tritonad

#endif
