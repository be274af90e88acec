// When is a mask true everywhere? A comparison such as `pid * B + arange(B) <
// n`, or `arange(BK) < K - k * BK` in a loop over k, is true in every lane of
// every program and iteration for some launches (n a multiple of B, K of BK):
// then the loads and stores it guards need no mask at all, and Triton
// compiles them as plain, vectorized, pipelined accesses. The analysis gives
// that condition as data the launch path evaluates, per program, with the
// launch's arguments and grid (the pass that uses it: FullMasks.h).
#ifndef TRITONAD_ANALYSIS_MASKBOUNDS_H
#define TRITONAD_ANALYSIS_MASKBOUNDS_H

#include "tritonad/Coverage.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <optional>
#include <string>

namespace tritonad {

/// A condition, per program (ProgramId leaves), under which `cmp` yields true
/// in every lane and every iteration of the loops around it; nullopt where
/// the analysis cannot bound it. Each side must be affine in the lanes
/// (make_range, splat, expand_dims, broadcast, constant factors) plus a sum of
/// scalars that symbolize (arguments, program ids, the grid, arithmetic on
/// them) and are affine in the induction variables of at most two scf.for
/// loops whose bounds symbolize: the extremes then lie at the loops' first
/// and last iterations and at the lanes' ends. Signed predicates only; for
/// integers narrower than 64 bits, the condition also bounds each side to the
/// type's range, so that the device's wrapping arithmetic agrees with the
/// exact values the launch path computes.
std::optional<SymbolicInt> alwaysTrueCondition(mlir::arith::CmpIOp cmp);

/// `expression` as text, for remarks and tests: "(n - ((pid0 * 64) + 63))".
std::string symbolicText(const SymbolicInt &expression);

} // namespace tritonad

#endif
