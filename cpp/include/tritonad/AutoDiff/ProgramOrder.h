// Longest programs first. A derived backward runs on the forward's grid, and
// where its loops' trip counts vary by program (attention's loop over the keys
// up to the diagonal) a launch in the grid's order starts the longest programs
// last: with a few hundred programs the GPU then idles behind a tail of them
// (the derived backward of Triton's causal attention tutorial took 413 us at
// L = 8192 with 4 heads in grid order, 264 us longest first; benchmarks/loops.md).
// The kernel instead reads which program it is from a permutation the launch
// path computes from each program's work (python/tritonad/_order.py).
#ifndef TRITONAD_AUTODIFF_PROGRAMORDER_H
#define TRITONAD_AUTODIFF_PROGRAMORDER_H

#include "tritonad/Coverage.h"
#include "tritonad/Dialect/Triton/Dialect.h"

#include <optional>
#include <string>
#include <vector>

namespace tritonad {

struct ProgramOrder {
  /// Per program (ProgramId leaves): the work to order by, the sum over the
  /// kernel's outermost loops of trips times the ops an iteration runs. Only
  /// its order between programs matters.
  SymbolicInt work;
  /// Where the loops whose trip counts vary by program are, for people.
  std::vector<std::string> loops;
};

/// Where some outermost loop's trip count of `kernel` depends on the program
/// and every outermost loop's bounds are expressions of the program ids and
/// the arguments: rewrites the kernel to read its program ids from
/// `tritonad_regrid` (int64 word i: the program, numbered x fastest, that
/// launch index i runs) and returns the work to order by. nullopt, kernel
/// unchanged, where the work does not vary or is unknown, or the kernel has no
/// such argument.
std::optional<ProgramOrder> orderProgramsByWork(mlir::triton::FuncOp kernel);

} // namespace tritonad

#endif
