#include "tritonad/AutoDiff/Differentiate.h"
#include "tritonad/AutoDiff/AdjointState.h"
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
    auto primal = module.lookupSymbol<tt::FuncOp>(functionName);
    if (!primal) {
      module.emitError("no tt.func named @") << functionName << " to differentiate";
      return signalPassFailure();
    }

    SmallVector<unsigned> indices(wrt.begin(), wrt.end());
    if (indices.empty())
      for (BlockArgument arg : primal.getArguments())
        if (isDifferentiableType(arg.getType()))
          indices.push_back(arg.getArgNumber());

    FunctionType type = getVJPType(primal, indices);
    std::string name = vjpName.empty() ? functionName + "_vjp" : std::string(vjpName);
    auto vjp = module.lookupSymbol<tt::FuncOp>(name);
    if (vjp) {
      if (vjp.getFunctionType() != type) {
        vjp.emitError("@") << name << " has type " << vjp.getFunctionType()
                           << " but the VJP of @" << functionName << " has type " << type;
        return signalPassFailure();
      }
      vjp.getBody().dropAllReferences();
      vjp.getBody().getBlocks().clear();
    } else {
      OpBuilder builder(module.getContext());
      builder.setInsertionPointAfter(primal);
      vjp = tt::FuncOp::create(builder, primal.getLoc(), name, type);
      vjp.setPrivate();
    }
    if (failed(buildFunctionVJP(primal, indices, vjp)))
      return signalPassFailure();
  }
};

} // namespace
} // namespace tritonad
