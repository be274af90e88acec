#include "tritonad/Analysis/AccessAnalysis.h"
#include "tritonad/Transforms/Passes.h"

namespace tritonad {
#define GEN_PASS_DEF_TESTAFFINEACCESS
#include "tritonad/Transforms/Passes.h.inc"

namespace {

struct TestAffineAccessPass : public impl::TestAffineAccessBase<TestAffineAccessPass> {
  void runOnOperation() override {
    forEachAffineForm(getOperation(), [](mlir::Value value, llvm::StringRef form) {
      mlir::Location loc = value.getLoc();
      if (auto arg = mlir::dyn_cast<mlir::BlockArgument>(value))
        loc = arg.getOwner()->getParentOp()->getLoc();
      mlir::emitRemark(loc) << form;
    });
  }
};

} // namespace
} // namespace tritonad
