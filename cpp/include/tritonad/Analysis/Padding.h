// Which values may hold non-finite padding: lanes a mask turned off whose
// value is -inf, +inf or NaN (`tl.load(..., other=-float("inf"))`, a block
// pointer's `padding_option="nan"`, log(0) of a zero-padded lane). Such a lane
// gets a zero adjoint, and 0 * inf = NaN would reach real lanes through a sum
// or a dot; torch never sees those lanes, so its gradient stays finite.
#ifndef TRITONAD_ANALYSIS_PADDING_H
#define TRITONAD_ANALYSIS_PADDING_H

#include "mlir/IR/Value.h"

namespace tritonad {

/// Whether some lanes of `value` may hold non-finite padding (conservative:
/// true where it cannot tell). Scalars and splats are uniform (no padding of
/// their own), finite constants hold none, a masked load without `other` reads
/// zeros; function arguments may hold anything.
bool mayHoldNonFinitePadding(mlir::Value value);

} // namespace tritonad

#endif
