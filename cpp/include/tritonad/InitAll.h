#ifndef TRITONAD_INITALL_H
#define TRITONAD_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace tritonad {
/// The dialects TTIR uses: tt (ours), arith, math, scf, cf, ub, func.
void registerAllDialects(mlir::DialectRegistry &registry);
/// tritonad's passes plus the upstream cleanups (canonicalize, cse, inline ...).
void registerAllPasses();
} // namespace tritonad

#endif
