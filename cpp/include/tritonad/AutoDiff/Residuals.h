// Residuals: values the forward saves for the backward (JAX's word; Enzyme's
// augmented forward and its tape). The backward of a kernel recomputes its
// forward; a reduction or a loop costs a pass over memory to recompute (a
// layer norm's mean and variance, a softmax's max and sum, an online
// logsumexp, flash attention's running max, sum and accumulator). When
// tritonad launches the forward itself (the torch bridge), an augmented
// forward stores such values into a per-program region of a residual buffer,
// and the backward reads them instead of recomputing them.
//
// Which values: the results of the ops at the top level of the prepared
// forward's body that recompute a pass (tt.reduce, scf.for, scf.while) and
// that the backward reads (planned by deriving the backward with every
// shadow and every candidate offered, and keeping the candidates whose loads
// survive dead-code elimination; a loop only where its reverse needs no more
// than its results: forward order or final stabilizers).
//
// Forward and backward are compiled separately, each from the forward's TTIR:
// both compute the layout and its fingerprint (the prepared forward and the
// layout), and the launch passes the buffer only to a backward whose
// fingerprint equals the forward's.
#ifndef TRITONAD_AUTODIFF_RESIDUALS_H
#define TRITONAD_AUTODIFF_RESIDUALS_H

#include "tritonad/AutoDiff/GradientUtils.h"
#include "tritonad/Schedule.h"
#include "tritonad/Dialect/Triton/Dialect.h"
#include "tritonad/LaunchContract.h"

#include <string>
#include <vector>

namespace tritonad {

/// The name of the residual buffer's argument (an i8 pointer) of the
/// augmented forward and of a backward that reads it.
inline constexpr const char *kResidualsArgument = contract::kResiduals;

/// Where the saved values live in each program's region of the buffer.
struct ResidualLayout {
  struct Entry {
    unsigned candidate = 0;       // index into residualCandidates()
    std::vector<int64_t> offsets; // bytes into the region, one per result (-1: not saved)
    std::string name;             // the value's name in the kernel, for the schedule
    std::string location;
  };
  std::vector<Entry> entries;
  int64_t bytesPerProgram = 0; // the region of one program (of the linearized grid)
  std::string forward;         // forwardFingerprint() of the prepared forward
  /// The prepared forward and this layout: a backward reads the buffer of a
  /// forward only when their fingerprints are equal.
  std::string fingerprint;

  bool empty() const { return entries.empty(); }
};

/// The ops whose results a residual buffer may hold, in body order: tt.reduce,
/// scf.for and scf.while at the top level of `prepared`'s body whose results
/// are all int (not i1) or float scalars or ranked tensors.
llvm::SmallVector<mlir::Operation *> residualCandidates(mlir::triton::FuncOp prepared);

/// A hash of the prepared forward as printed without locations (before any
/// residual is inserted into it).
std::string forwardFingerprint(mlir::triton::FuncOp prepared);

/// The layout of the candidates `chosen` (indices, ascending), 16-byte
/// aligned, of the prepared forward whose fingerprint is `forward`.
ResidualLayout layoutResiduals(mlir::triton::FuncOp prepared, llvm::ArrayRef<unsigned> chosen,
                               llvm::StringRef forward);

/// Inserts before each op of `layout` the loads of its results from this
/// program's region of `base` (an i8 pointer argument of `prepared`); they are
/// marked with their candidate's index (`tritonad.residual`).
Residuals insertResidualLoads(mlir::triton::FuncOp prepared, mlir::Value base,
                              const ResidualLayout &layout);

/// Inserts after each op of `layout` the stores of its results into this
/// program's region of `base`.
void insertResidualStores(mlir::triton::FuncOp prepared, mlir::Value base,
                          const ResidualLayout &layout);

/// The candidate index a residual load was marked with, if it is one.
std::optional<unsigned> residualIndex(mlir::Operation *op);

/// Drops the marks of insertResidualLoads under `root` (once no one asks).
void unmarkResidualLoads(mlir::Operation *root);

/// One schedule entry per saved value.
std::vector<ScheduleEntry> describeResiduals(const ResidualLayout &layout);

} // namespace tritonad

#endif
