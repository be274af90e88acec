#include "tritonad/AutoDiff/StaggerIterations.h"
#include "tritonad/Transforms/Passes.h"

namespace tritonad {
#define GEN_PASS_DEF_STAGGERITERATIONS
#include "tritonad/Transforms/Passes.h.inc"

namespace {

struct StaggerIterationsPass : public impl::StaggerIterationsBase<StaggerIterationsPass> {
  using StaggerIterationsBase::StaggerIterationsBase;

  void runOnOperation() override {
    staggerIterations(getOperation(), enable, [](mlir::Operation *loop, llvm::StringRef note) {
      mlir::emitRemark(loop->getLoc()) << note;
    });
  }
};

} // namespace
} // namespace tritonad
