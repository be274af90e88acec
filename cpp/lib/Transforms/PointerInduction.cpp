#include "tritonad/AutoDiff/PointerInduction.h"
#include "tritonad/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace tritonad {
#define GEN_PASS_DEF_POINTERINDUCTION
#include "tritonad/Transforms/Passes.h.inc"

namespace {

struct PointerInductionPass : public impl::PointerInductionBase<PointerInductionPass> {
  void runOnOperation() override { rewritePointerInductions(getOperation()); }
};

} // namespace
} // namespace tritonad
