#ifndef TRITONAD_LIB_AUTODIFF_INLINING_H
#define TRITONAD_LIB_AUTODIFF_INLINING_H

#include "tritonad/Dialect/Triton/Dialect.h"

namespace tritonad {

/// Inlines every tt.call in `function` (recursively), as Triton's make_ttir
/// would, and drops unreachable blocks. Calls to noinline helpers are errors:
/// their bodies must be visible to be differentiated.
mlir::LogicalResult inlineAllCalls(mlir::triton::FuncOp function);

} // namespace tritonad

#endif
