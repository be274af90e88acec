#include "tritonad/AutoDiff/FunctionVJP.h"

#include "tritonad/Analysis/ShiftInvariance.h"
#include "tritonad/Analysis/Activity.h"
#include "tritonad/AutoDiff/Prepare.h"
#include "tritonad/AutoDiff/ReverseModeInterface.h"

#include "ReverseSweep.h"

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

LogicalResult validate(tt::FuncOp primal, ArrayRef<unsigned> wrt, bool zeroNonFloat,
                       bool inlined = true) {
  if (primal.isExternal())
    return primal.emitError("cannot differentiate @") << primal.getName() << ": it has no body";
  if (inlined && !primal.getBody().hasOneBlock())
    return primal.emitError("cannot differentiate @")
           << primal.getName() << ": its body has more than one block";
  for (unsigned index : wrt) {
    if (index >= primal.getNumArguments())
      return primal.emitError("wrt index ")
             << index << " out of range: @" << primal.getName() << " has "
             << primal.getNumArguments() << " arguments";
    Type type = primal.getArgument(index).getType();
    bool integer = isa<IntegerType>(getElementTypeOrSelf(type));
    if (!isDifferentiableType(type) && !(zeroNonFloat && integer))
      return primal.emitError("argument ")
             << index << " of @" << primal.getName() << " has type "
             << primal.getArgument(index).getType()
             << "; only floating-point scalars and tensors can be differentiated";
  }
  return success();
}

} // namespace

LogicalResult buildFunctionVJP(tt::FuncOp primal, ArrayRef<unsigned> wrt, tt::FuncOp vjp,
                               bool zeroNonFloat) {
  if (failed(validate(primal, wrt, zeroNonFloat)))
    return failure();
  Block &primalBody = primal.getBody().front();
  DenseSet<unsigned> wrtSet(wrt.begin(), wrt.end());
  auto isWrtArgument = [&](Value value) {
    auto arg = dyn_cast<BlockArgument>(value);
    return arg && arg.getOwner() == &primalBody && wrtSet.contains(arg.getArgNumber());
  };
  Operation *terminator = primalBody.getTerminator();
  auto isReturned = [&](OpOperand &operand) { return operand.getOwner() == terminator; };
  Stabilizers stabilizers = findStabilizers(primal);
  ActivitySeeds seeds{isWrtArgument, isReturned, &stabilizers.heldConstant};
  FailureOr<DenseSet<Value>> active = computeActiveValues(primal, seeds);
  if (failed(active))
    return primal.emitError("activity analysis failed");

  IRMapping forward;
  GradientUtils state(forward, *active);
  state.setStabilizers(&stabilizers);
  // Rules must exist for every op that carries a gradient: check them all
  // before emitting anything.
  if (failed(checkRecomputable(primal)) || failed(checkDifferentiable(primalBody, state)))
    return failure();

  Block *body = vjp.addEntryBlock();
  OpBuilder builder = OpBuilder::atBlockEnd(body);
  for (BlockArgument arg : primalBody.getArguments())
    forward.map(arg, body->getArgument(arg.getArgNumber()));
  for (Operation &op : primalBody.without_terminator())
    cloneForRecompute(op, builder, forward);

  unsigned numInputs = primal.getNumArguments();
  for (auto [index, returned] : llvm::enumerate(terminator->getOperands()))
    state.accumulate(builder, returned, body->getArgument(numInputs + index));
  if (failed(reverseSweep(primalBody, builder, state)))
    return failure();

  SmallVector<Value> gradients;
  for (unsigned index : wrt) {
    BlockArgument arg = primal.getArgument(index);
    if (isDifferentiableType(arg.getType())) {
      gradients.push_back(state.adjointOrZero(builder, arg));
      continue;
    }
    Type type = arg.getType();
    auto zero = builder.getIntegerAttr(getElementTypeOrSelf(type), 0);
    TypedAttr value = zero;
    if (auto tensor = dyn_cast<RankedTensorType>(type))
      value = DenseElementsAttr::get(tensor, zero);
    gradients.push_back(arith::ConstantOp::create(builder, arg.getLoc(), value));
  }
  tt::ReturnOp::create(builder, terminator->getLoc(), TypeRange{}, gradients);
  return success();
}

LogicalResult differentiateInto(ModuleOp module, StringRef primalName, StringRef intoName,
                                ArrayRef<unsigned> wrt, bool zeroNonFloat) {
  auto primal = module.lookupSymbol<tt::FuncOp>(primalName);
  if (!primal)
    return module.emitError("no tt.func named @") << primalName << " to differentiate";

  for (unsigned index : wrt)
    if (index >= primal.getNumArguments())
      return primal.emitError("wrt index ")
             << index << " out of range: @" << primalName << " has " << primal.getNumArguments()
             << " arguments";
  SmallVector<unsigned> indices(wrt.begin(), wrt.end());
  if (indices.empty())
    for (BlockArgument arg : primal.getArguments())
      if (isDifferentiableType(arg.getType()))
        indices.push_back(arg.getArgNumber());
  FunctionType type = getVJPType(primal, indices);

  OpBuilder builder(module.getContext());
  tt::FuncOp vjp;
  if (!intoName.empty())
    vjp = module.lookupSymbol<tt::FuncOp>(intoName);
  if (vjp) {
    if (vjp.getFunctionType() != type)
      return vjp.emitError("@") << intoName << " has type " << vjp.getFunctionType()
                                << " but the VJP of @" << primalName << " has type " << type
                                << " (the primal's inputs, one cotangent per output, and one "
                                << "gradient per differentiated input)";
    vjp.getBody().dropAllReferences();
    vjp.getBody().getBlocks().clear();
  } else {
    builder.setInsertionPointAfter(primal);
    std::string name = intoName.empty() ? (primalName + "_vjp").str() : intoName.str();
    vjp = tt::FuncOp::create(builder, primal.getLoc(), name, type);
    vjp.setPrivate();
  }

  // Differentiate an inlined scratch copy; the module keeps its calls.
  builder.setInsertionPoint(vjp);
  auto scratch = cast<tt::FuncOp>(builder.clone(*primal));
  scratch.setName((primalName + "__tritonad_scratch").str());
  scratch.setPrivate();
  LogicalResult result = validate(primal, indices, zeroNonFloat, /*inlined=*/false);
  if (succeeded(result))
    result = prepareForDifferentiation(scratch);
  if (succeeded(result))
    result = buildFunctionVJP(scratch, indices, vjp, zeroNonFloat);
  scratch.erase();
  return result;
}

} // namespace tritonad
