#include "tritonad/Analysis/MaskBounds.h"
#include "tritonad/AutoDiff/ProgramOrder.h"
#include "tritonad/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace tritonad {
#define GEN_PASS_DEF_ORDERPROGRAMS
#include "tritonad/Transforms/Passes.h.inc"

namespace {

struct OrderProgramsPass : public impl::OrderProgramsBase<OrderProgramsPass> {
  using OrderProgramsBase::OrderProgramsBase;

  void runOnOperation() override {
    if (std::optional<ProgramOrder> order = orderProgramsByWork(getOperation()))
      mlir::emitRemark(getOperation().getLoc())
          << "programs launched longest first by work " << symbolicText(order->work);
  }
};

} // namespace
} // namespace tritonad
