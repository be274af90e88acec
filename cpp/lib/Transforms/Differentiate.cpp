#include "tritonad/AutoDiff/Differentiate.h"
#include "tritonad/Transforms/Passes.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
#define GEN_PASS_DEF_DIFFERENTIATE
#include "tritonad/Transforms/Passes.h.inc"

namespace {

struct DifferentiatePass : public impl::DifferentiateBase<DifferentiatePass> {
  using DifferentiateBase::DifferentiateBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (functionName.empty()) {
      module.emitError("tritonad-differentiate needs function=<name of a tt.func>");
      return signalPassFailure();
    }
    SmallVector<unsigned> indices(wrt.begin(), wrt.end());
    if (failed(differentiateInto(module, functionName, vjpName, indices, /*zeroNonFloat=*/false)))
      signalPassFailure();
  }
};

} // namespace
} // namespace tritonad
