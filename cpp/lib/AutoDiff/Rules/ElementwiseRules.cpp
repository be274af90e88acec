#include "ElementwiseRules.h"

using namespace mlir;

namespace tritonad::rules {

LogicalResult emitElementwiseAdjoint(Operation *op, OpBuilder &builder, GradientUtils &state,
                                     const Partials &partials) {
  Value resultAdjoint = state.adjoint(op->getResult(0));
  if (!resultAdjoint)
    return success();
  Env env{op, builder, op->getLoc(), op->getResult(0).getType(), {}, state.forward(op->getResult(0)),
          resultAdjoint};
  for (Value operand : op->getOperands())
    env.operands.push_back(state.forward(operand));
  for (auto [index, partial] : llvm::enumerate(partials)) {
    Value operand = op->getOperand(index);
    if (!partial || !state.isActive(operand))
      continue;
    state.accumulate(builder, operand, partial->emit(env));
  }
  return success();
}

} // namespace tritonad::rules
