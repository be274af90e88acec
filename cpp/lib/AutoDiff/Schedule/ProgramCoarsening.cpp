#include "tritonad/AutoDiff/ProgramCoarsening.h"

#include "tritonad/Analysis/Dependence.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {

// Ops in `loop` that compute the same value in every iteration: pure ops and
// loads (the backward recomputes the forward without its stores, so a load
// reads the same memory in every iteration) whose operands come from outside.
static void hoistInvariants(scf::ForOp loop) {
  for (Operation &op : llvm::make_early_inc_range(loop.getBody()->without_terminator())) {
    // (values its regions capture count too: a branch computing from a
    // load of this iteration stays in the loop)
    bool invariant = !op.walk([&](Operation *nested) {
                          for (Value operand : nested->getOperands()) {
                            Operation *scope = operand.getParentRegion()->getParentOp();
                            if (loop->isAncestor(scope) && !op.isAncestor(scope))
                              return WalkResult::interrupt();
                          }
                          return WalkResult::advance();
                        }).wasInterrupted();
    bool movable = isa<tt::LoadOp>(op) ? !cast<tt::LoadOp>(op).getIsVolatile()
                                       : isMemoryEffectFree(&op);
    if (invariant && movable)
      op.moveBefore(loop);
  }
}

scf::ForOp coarsenPrograms(tt::FuncOp function, Value programs) {
  Block &entry = function.getBody().front();
  Operation *terminator = entry.getTerminator();
  OpBuilder builder(terminator);
  Location loc = function.getLoc();
  auto axis = tt::ProgramIDDimAttr::get(builder.getContext(), tt::ProgramIDDim::X);
  Value pid = tt::GetProgramIdOp::create(builder, loc, builder.getI32Type(), axis);
  Value count = tt::GetNumProgramsOp::create(builder, loc, builder.getI32Type(), axis);
  auto loop = scf::ForOp::create(builder, loc, pid, programs, count);
  markProgramLoop(loop);
  Operation *yield = loop.getBody()->getTerminator();
  for (Operation &op : llvm::make_early_inc_range(entry)) {
    if (&op == pid.getDefiningOp())
      break;
    op.moveBefore(yield);
  }
  loop.getBody()->walk([&](Operation *op) {
    if (auto inner = dyn_cast<tt::GetProgramIdOp>(op);
        inner && inner.getAxis() == tt::ProgramIDDim::X) {
      inner.replaceAllUsesWith(loop.getInductionVar());
      inner.erase();
    } else if (auto inner = dyn_cast<tt::GetNumProgramsOp>(op);
               inner && inner.getAxis() == tt::ProgramIDDim::X) {
      inner.replaceAllUsesWith(programs);
      inner.erase();
    }
  });
  hoistInvariants(loop);
  return loop;
}

} // namespace tritonad
