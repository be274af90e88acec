#include "tritonad/AutoDiff/Prepare.h"

#include "mlir/Conversion/ControlFlowToSCF/ControlFlowToSCF.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/Dominance.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

// Upstream's cf -> scf lifting, with tt.return for the exits it creates and
// without scf.index_switch (the reverse sweep and Triton's lowering know only
// scf.if and scf.while).
class TritonControlFlowToSCF : public ControlFlowToSCFTransformation {
public:
  FailureOr<Operation *> createStructuredBranchRegionOp(
      OpBuilder &builder, Operation *controlFlowCondOp, TypeRange resultTypes,
      MutableArrayRef<Region> regions) override {
    if (!isa<cf::CondBranchOp>(controlFlowCondOp) && regions.size() != 2) {
      controlFlowCondOp->emitError("cannot differentiate this control flow: a branch with ")
          << regions.size() << " successors would need scf.index_switch";
      return failure();
    }
    return ControlFlowToSCFTransformation::createStructuredBranchRegionOp(
        builder, controlFlowCondOp, resultTypes, regions);
  }

  FailureOr<Operation *> createUnreachableTerminator(Location loc, OpBuilder &builder,
                                                     Region &region) override {
    auto function = dyn_cast<tt::FuncOp>(region.getParentOp());
    if (!function)
      return failure();
    SmallVector<Value> results;
    for (Type type : function.getFunctionType().getResults())
      results.push_back(ub::PoisonOp::create(builder, loc, type));
    return tt::ReturnOp::create(builder, loc, TypeRange{}, results).getOperation();
  }
};

} // namespace

LogicalResult liftControlFlow(tt::FuncOp function) {
  if (function.isExternal() || function.getBody().hasOneBlock())
    return success();
  for (Block &block : function.getBody())
    for (Operation &op : block)
      if (op.hasTrait<OpTrait::IsTerminator>() &&
          !isa<cf::BranchOp, cf::CondBranchOp, tt::ReturnOp>(op))
        return op.emitError("cannot differentiate control flow ending in '")
               << op.getName() << "'";
  TritonControlFlowToSCF interface;
  DominanceInfo dominance(function);
  FailureOr<bool> changed = transformCFGToSCF(function.getBody(), interface, dominance);
  if (failed(changed) || !function.getBody().hasOneBlock())
    return function.emitError("cannot differentiate @")
           << function.getName()
           << ": its control flow (an early return or break) could not be restructured "
           << "into scf.if / scf.while";
  return success();
}

} // namespace tritonad
