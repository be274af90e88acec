#ifndef TRITONAD_TRANSFORMS_PASSES_H
#define TRITONAD_TRANSFORMS_PASSES_H

#include "tritonad/AutoDiff/KernelBackward.h"

#include "mlir/Pass/Pass.h"

namespace tritonad {
#define GEN_PASS_DECL
#include "tritonad/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tritonad/Transforms/Passes.h.inc"
} // namespace tritonad

#endif
