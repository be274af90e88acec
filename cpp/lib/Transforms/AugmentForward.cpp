#include "tritonad/AutoDiff/KernelBackward.h"
#include "tritonad/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;

namespace tritonad {
#define GEN_PASS_DEF_AUGMENTFORWARD
#include "tritonad/Transforms/Passes.h.inc"

namespace {

struct AugmentForwardPass : public impl::AugmentForwardBase<AugmentForwardPass> {
  using AugmentForwardBase::AugmentForwardBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<SmallVector<ShadowBinding>> bindings = parseShadowBindings(module, shadowBindings);
    if (failed(bindings))
      return signalPassFailure();
    ResidualLayout layout;
    if (failed(augmentForwardInto(module, forwardName, intoName, *bindings, mode, layout)))
      return signalPassFailure();
    Location loc = module.lookupSymbol(intoName)->getLoc();
    for (const ScheduleEntry &entry : describeResiduals(layout))
      mlir::emitRemark(loc) << entry.render();
  }
};

} // namespace
} // namespace tritonad
