#include "tritonad/AutoDiff/Differentiate.h"

#include "tritonad/AutoDiff/Activity.h"
#include "tritonad/AutoDiff/ReverseModeInterface.h"

#include "mlir/IR/IRMapping.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {

FunctionType getVJPType(tt::FuncOp primal, ArrayRef<unsigned> wrt) {
  FunctionType type = primal.getFunctionType();
  SmallVector<Type> inputs(type.getInputs());
  llvm::append_range(inputs, type.getResults());
  SmallVector<Type> results;
  for (unsigned index : wrt)
    results.push_back(type.getInput(index));
  return FunctionType::get(primal.getContext(), inputs, results);
}

namespace {

LogicalResult validate(tt::FuncOp primal, ArrayRef<unsigned> wrt) {
  if (primal.isExternal())
    return primal.emitError("cannot differentiate @") << primal.getName() << ": it has no body";
  if (!primal.getBody().hasOneBlock())
    return primal.emitError("cannot differentiate @")
           << primal.getName() << ": its body has more than one block";
  for (unsigned index : wrt) {
    if (index >= primal.getNumArguments())
      return primal.emitError("wrt index ")
             << index << " out of range: @" << primal.getName() << " has "
             << primal.getNumArguments() << " arguments";
    if (!isDifferentiableType(primal.getArgument(index).getType()))
      return primal.emitError("argument ")
             << index << " of @" << primal.getName() << " has type "
             << primal.getArgument(index).getType()
             << "; only floating-point scalars and tensors can be differentiated";
  }
  return success();
}

} // namespace

LogicalResult buildFunctionVJP(tt::FuncOp primal, ArrayRef<unsigned> wrt, tt::FuncOp vjp) {
  if (failed(validate(primal, wrt)))
    return failure();
  Block &primalBody = primal.getBody().front();
  DenseSet<unsigned> wrtSet(wrt.begin(), wrt.end());
  auto isWrtArgument = [&](Value value) {
    auto arg = dyn_cast<BlockArgument>(value);
    return arg && arg.getOwner() == &primalBody && wrtSet.contains(arg.getArgNumber());
  };
  Operation *terminator = primalBody.getTerminator();
  auto isReturned = [&](OpOperand &operand) { return operand.getOwner() == terminator; };
  ActivitySeeds seeds{isWrtArgument, isReturned};
  FailureOr<DenseSet<Value>> active = computeActiveValues(primal, seeds);
  if (failed(active))
    return primal.emitError("activity analysis failed");

  // Rules must exist for every op that carries a gradient; check them all
  // before emitting anything.
  for (Operation &op : primalBody.without_terminator()) {
    bool carries = llvm::any_of(op.getResults(), [&](Value v) { return active->contains(v); });
    if (!carries)
      continue;
    if (op.getNumRegions() != 0 && !isa<tt::ReduceOp, tt::ScanOp>(op))
      return op.emitError("cannot differentiate '")
             << op.getName() << "' here: control flow inside a differentiated function is not "
             << "supported yet";
    if (!isa<ReverseModeOpInterface>(op))
      return op.emitError("no derivative rule for '") << op.getName() << "'";
  }

  Block *body = vjp.addEntryBlock();
  OpBuilder builder = OpBuilder::atBlockEnd(body);
  IRMapping forward;
  for (BlockArgument arg : primalBody.getArguments())
    forward.map(arg, body->getArgument(arg.getArgNumber()));
  for (Operation &op : primalBody.without_terminator())
    builder.clone(op, forward);

  AdjointState state(forward, *active);
  unsigned numInputs = primal.getNumArguments();
  for (auto [index, returned] : llvm::enumerate(terminator->getOperands()))
    state.accumulate(builder, returned, body->getArgument(numInputs + index));

  for (Operation &op : llvm::reverse(primalBody.without_terminator())) {
    bool carries = llvm::any_of(op.getResults(), [&](Value v) { return state.adjoint(v); });
    if (!carries)
      continue;
    if (failed(cast<ReverseModeOpInterface>(op).emitAdjoint(builder, state)))
      return failure();
  }

  SmallVector<Value> gradients;
  for (unsigned index : wrt) {
    BlockArgument arg = primal.getArgument(index);
    gradients.push_back(state.adjointOrZero(builder, arg));
  }
  tt::ReturnOp::create(builder, terminator->getLoc(), TypeRange{}, gradients);
  return success();
}

} // namespace tritonad
