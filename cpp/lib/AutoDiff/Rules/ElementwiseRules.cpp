#include "ElementwiseRules.h"

#include "tritonad/Analysis/CombineRegion.h"
#include "tritonad/Analysis/ShiftInvariance.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

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

// Through the ops that copy a value to other lanes or layouts.
static Value throughCopies(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isa<triton::BroadcastOp, triton::ExpandDimsOp, triton::SplatOp>(def))
      break;
    value = def->getOperand(0);
  }
  return value;
}

// A maximum, or a loop's running maximum (the result of an scf.for whose
// iterations yield one: the final max an online softmax's reverse reuses).
static bool isMaximum(Value value, int depth = 0) {
  value = throughCopies(value);
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  if (auto loop = dyn_cast<scf::ForOp>(def))
    return depth < 4 &&
           isMaximum(loop.getYieldedValues()[cast<OpResult>(value).getResultNumber()], depth + 1);
  if (isa<arith::MaxNumFOp, arith::MaximumFOp>(def))
    return true;
  auto reduce = dyn_cast<triton::ReduceOp>(def);
  return reduce && reduce.getNumOperands() == 1 &&
         matchCombiner<arith::MaxNumFOp, arith::MaximumFOp>(reduce.getCombineOp().front(), 0, 1);
}

// x - m, or (x - m) * c with c > 0, for m a maximum.
static bool isDifferenceWithMaximum(Value value) {
  if (auto scaled = value.getDefiningOp<arith::MulFOp>()) {
    for (Value factor : {scaled.getLhs(), scaled.getRhs()}) {
      std::optional<double> constant = floatConstant(throughCopies(factor));
      if (constant && *constant > 0)
        return isDifferenceWithMaximum(factor == scaled.getLhs() ? scaled.getRhs()
                                                                  : scaled.getLhs());
    }
    return false;
  }
  auto difference = value.getDefiningOp<arith::SubFOp>();
  return difference && isMaximum(difference.getRhs());
}

bool mayOverflow(Env &env) {
  return !isDifferenceWithMaximum(env.op->getOperand(0)) &&
         !isDifferenceWithMaximum(env.operands[0]);
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
