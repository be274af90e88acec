#include "tritonad/AutoDiff/ProgramCoarsening.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {

static constexpr StringLiteral kProgramLoop = "tritonad.program_loop";

bool isProgramLoop(scf::ForOp loop) { return loop->hasAttr(kProgramLoop); }

// Whether `value` is computed from a value `isSource` accepts, through any op,
// loop bounds and carried values included (a while loop's state counts).
static bool dependsOn(Value value, llvm::function_ref<bool(Value)> isSource) {
  SmallVector<Value> worklist{value};
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    if (!seen.insert(current).second)
      continue;
    if (isSource(current))
      return true;
    if (auto arg = dyn_cast<BlockArgument>(current)) {
      Operation *owner = arg.getOwner()->getParentOp();
      if (isa<tt::FuncOp>(owner))
        continue;
      if (auto loop = dyn_cast<scf::ForOp>(owner)) {
        if (arg == loop.getInductionVar()) {
          worklist.append({loop.getLowerBound(), loop.getUpperBound(), loop.getStep()});
        } else {
          unsigned j = arg.getArgNumber() - 1;
          worklist.push_back(loop.getInitArgs()[j]);
          worklist.push_back(loop.getBody()->getTerminator()->getOperand(j));
        }
        continue;
      }
      return true; // a while loop's state, a reduction's operands: assume it does
    }
    Operation *def = current.getDefiningOp();
    // Results of region ops (loops, branches, reductions) depend on what
    // their regions compute from: every operand used inside counts.
    def->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        worklist.push_back(operand);
    });
  }
  return false;
}

bool dependsOnProgramId(Value value, int axis) {
  return dependsOn(value, [&](Value candidate) {
    auto pid = candidate.getDefiningOp<tt::GetProgramIdOp>();
    return pid && static_cast<int>(pid.getAxis()) == axis;
  });
}

bool dependsOnProgramLoop(Value value, scf::ForOp loop) {
  Value programId = loop.getInductionVar();
  return dependsOn(value, [&](Value candidate) { return candidate == programId; });
}

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
  loop->setAttr(kProgramLoop, builder.getUnitAttr());
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
