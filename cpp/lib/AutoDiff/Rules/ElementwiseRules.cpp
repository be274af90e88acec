#include "ElementwiseRules.h"

using namespace mlir;

namespace tritonad::rules {

bool readsNonFinitePadding(Env &env, unsigned reads) {
  for (unsigned i = 0, e = env.operands.size(); i < e && i < 31; ++i)
    if ((reads & (1u << i)) && (mayHoldNonFinitePadding(env.op->getOperand(i)) ||
                                mayHoldNonFinitePadding(env.operands[i])))
      return true;
  return (reads & Expr::kResult) && (mayHoldNonFinitePadding(env.op->getResult(0)) ||
                                      mayHoldNonFinitePadding(env.result));
}

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
    state.accumulate(builder, operand, guardedAgainstPadding(*partial).emit(env));
  }
  return success();
}

} // namespace tritonad::rules
