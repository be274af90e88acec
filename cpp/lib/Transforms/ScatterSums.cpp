#include "tritonad/Analysis/MaskBounds.h"
#include "tritonad/AutoDiff/ScatterSums.h"
#include "tritonad/Transforms/Passes.h"

namespace tritonad {
#define GEN_PASS_DEF_SCATTERSUMS
#include "tritonad/Transforms/Passes.h.inc"

namespace {

struct ScatterSumsPass : public impl::ScatterSumsBase<ScatterSumsPass> {
  using ScatterSumsBase::ScatterSumsBase;

  void runOnOperation() override {
    ScatterPlan plan = planScatterSums(getOperation());
    emitScatterSums(getOperation(), plan);
    if (plan.slots.empty())
      return;
    auto remark = mlir::emitRemark(getOperation().getLoc());
    remark << symbolicText(plan.slots.perProgram) << " scatter slots per program, "
           << symbolicText(plan.slots.indexPerProgram) << " keys";
    for (const ScatterColumns &columns : plan.slots.columns)
      remark << "; " << columns.shadow << ": [" << symbolicText(columns.begin) << ", "
             << symbolicText(columns.end) << "), keys [" << symbolicText(columns.indexBegin)
             << ", " << symbolicText(columns.indexEnd) << "), " << columns.lanes << " per key";
  }
};

} // namespace
} // namespace tritonad
