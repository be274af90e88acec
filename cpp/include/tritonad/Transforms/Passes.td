#ifndef TRITONAD_TRANSFORMS_PASSES
#define TRITONAD_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

#endif
