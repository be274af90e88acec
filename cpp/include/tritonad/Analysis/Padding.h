// Which values may hold non-finite padding: lanes a mask turned off whose
// value is -inf, +inf or NaN (`tl.load(..., other=-float("inf"))`, a block
// pointer's `padding_option="nan"`, log(0) of a zero-padded lane). Such a lane
// gets a zero adjoint, and 0 * inf = NaN would reach real lanes through a sum
// or a dot; torch never sees those lanes, so its gradient stays finite.
#ifndef TRITONAD_ANALYSIS_PADDING_H
#define TRITONAD_ANALYSIS_PADDING_H

#include "mlir/IR/Value.h"

namespace tritonad {

/// Whether `value` is the same in every lane (a scalar, a splat): it has no
/// masked-out lanes of its own.
bool isLaneUniform(mlir::Value value);

/// Whether some lanes of `value` may hold non-finite padding (conservative:
/// true where it cannot tell). Lane-uniform values have none, finite constants
/// hold none, a masked load without `other` reads zeros; a device function's
/// arguments are taken as its caller cleared them (the caller has the mask).
bool mayHoldNonFinitePadding(mlir::Value value);

} // namespace tritonad

#endif
