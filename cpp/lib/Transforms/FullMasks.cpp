#include "tritonad/AutoDiff/FullMasks.h"
#include "tritonad/Analysis/MaskBounds.h"
#include "tritonad/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace tritonad {
#define GEN_PASS_DEF_FULLMASKS
#include "tritonad/Transforms/Passes.h.inc"

namespace {

struct FullMasksPass : public impl::FullMasksBase<FullMasksPass> {
  using FullMasksBase::FullMasksBase;

  void runOnOperation() override {
    std::optional<SymbolicInt> condition =
        markFullMasks(getOperation(), [](mlir::Operation *cmp, const SymbolicInt &holds) {
          mlir::emitRemark(cmp->getLoc()) << "true everywhere when " << symbolicText(holds);
        });
    if (condition)
      mlir::emitRemark(getOperation().getLoc())
          << "launch condition: " << symbolicText(*condition);
    specializeFullMasks(getOperation(), full);
  }
};

} // namespace
} // namespace tritonad
