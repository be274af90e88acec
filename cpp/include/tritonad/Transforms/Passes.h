#ifndef TRITONAD_TRANSFORMS_PASSES_H
#define TRITONAD_TRANSFORMS_PASSES_H

#include "tritonad/AutoDiff/KernelBackward.h"
#include "tritonad/Coverage.h"

#include "mlir/Pass/Pass.h"

namespace tritonad {
#define GEN_PASS_DECL
#include "tritonad/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tritonad/Transforms/Passes.h.inc"

/// The `shadows=` option of the kernel passes: "shadow:pointer" pairs.
mlir::FailureOr<llvm::SmallVector<ShadowBinding>>
parseShadowBindings(mlir::ModuleOp module, llvm::ArrayRef<std::string> pairs);
} // namespace tritonad

#endif
