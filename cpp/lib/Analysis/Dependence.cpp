#include "tritonad/Analysis/Dependence.h"

#include "tritonad/Dialect/Triton/Dialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {

static constexpr StringLiteral kProgramLoop = "tritonad.program_loop";

bool isDifferentiableType(Type type) { return isa<FloatType>(getElementTypeOrSelf(type)); }

bool writesMemory(Operation *op) {
  if (auto effects = dyn_cast<MemoryEffectOpInterface>(op))
    return effects.hasEffect<MemoryEffects::Write>();
  return !op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() &&
         !op->hasTrait<OpTrait::IsTerminator>();
}

bool computedFrom(Value value, Operation *scope, function_ref<bool(BlockArgument)> wanted) {
  SmallVector<Value> worklist{value};
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    if (!current || !seen.insert(current).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(current)) {
      if (wanted(arg))
        return true;
      continue;
    }
    Operation *def = current.getDefiningOp();
    if (scope && !scope->isAncestor(def))
      continue;
    def->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        worklist.push_back(operand);
    });
  }
  return false;
}

bool dependsOn(Value value, function_ref<bool(Value)> isSource) {
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
    // Results of region ops (loops, branches, reductions) depend on what
    // their regions compute from: every operand used inside counts.
    current.getDefiningOp()->walk([&](Operation *inner) {
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

bool isProgramLoop(scf::ForOp loop) { return loop->hasAttr(kProgramLoop); }

void markProgramLoop(scf::ForOp loop) {
  loop->setAttr(kProgramLoop, UnitAttr::get(loop->getContext()));
}

bool dependsOnProgramLoop(Value value, scf::ForOp loop) {
  Value programId = loop.getInductionVar();
  return dependsOn(value, [&](Value candidate) { return candidate == programId; });
}

} // namespace tritonad
