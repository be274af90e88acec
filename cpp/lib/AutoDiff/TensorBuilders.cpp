#include "TensorBuilders.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {

namespace {
// Fills a reduce/scan combine region with `lhs + rhs`.
template <typename ReturnOpT>
void buildAddCombiner(OpBuilder &builder, Location loc, Region &region, Type element) {
  OpBuilder::InsertionGuard guard(builder);
  Block *block = builder.createBlock(&region, {}, {element, element}, {loc, loc});
  Value sum = arith::AddFOp::create(builder, loc, block->getArgument(0), block->getArgument(1));
  ReturnOpT::create(builder, loc, TypeRange{}, ValueRange{sum});
}
} // namespace

Value sumAlongAxis(OpBuilder &builder, Location loc, Value src, int axis) {
  auto type = cast<RankedTensorType>(src.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.erase(shape.begin() + axis);
  Type resultType =
      shape.empty() ? type.getElementType() : RankedTensorType::get(shape, type.getElementType());
  auto reduce = tt::ReduceOp::create(builder, loc, TypeRange{resultType}, ValueRange{src},
                                     {builder.getNamedAttr("axis", builder.getI32IntegerAttr(axis))});
  buildAddCombiner<tt::ReduceReturnOp>(builder, loc, reduce.getCombineOp(), type.getElementType());
  return reduce.getResult()[0];
}

Value reshape(OpBuilder &builder, Location loc, Value src, RankedTensorType type) {
  if (src.getType() == type)
    return src;
  if (!isa<RankedTensorType>(src.getType())) // a full reduction of a rank-1 tensor
    return tt::SplatOp::create(builder, loc, TypeRange{type}, ValueRange{src});
  return tt::ReshapeOp::create(builder, loc, TypeRange{type}, ValueRange{src});
}

Value sumAll(OpBuilder &builder, Location loc, Value src) {
  auto type = cast<RankedTensorType>(src.getType());
  Value flat = reshape(builder, loc, src,
                       RankedTensorType::get({type.getNumElements()}, type.getElementType()));
  return sumAlongAxis(builder, loc, flat, 0);
}

Value sumToShape(OpBuilder &builder, Location loc, Value src, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(src.getType());
  Value current = src;
  for (int axis = type.getRank() - 1; axis >= 0; --axis) {
    if (shape[axis] != 1 || type.getShape()[axis] == 1)
      continue;
    Value reduced = sumAlongAxis(builder, loc, current, axis);
    auto currentShape = cast<RankedTensorType>(current.getType()).getShape();
    SmallVector<int64_t> kept(currentShape);
    kept[axis] = 1;
    current = reshape(builder, loc, reduced, RankedTensorType::get(kept, type.getElementType()));
  }
  return current;
}

Value broadcastAlongAxis(OpBuilder &builder, Location loc, Value reduced, int axis,
                         RankedTensorType type) {
  if (!isa<RankedTensorType>(reduced.getType()))
    return tt::SplatOp::create(builder, loc, TypeRange{type}, ValueRange{reduced});
  SmallVector<int64_t> kept(type.getShape());
  kept[axis] = 1;
  auto keptType = RankedTensorType::get(kept, type.getElementType());
  Value expanded = tt::ExpandDimsOp::create(builder, loc, TypeRange{keptType}, ValueRange{reduced},
                                            {builder.getNamedAttr("axis", builder.getI32IntegerAttr(axis))});
  if (keptType == type)
    return expanded;
  return tt::BroadcastOp::create(builder, loc, TypeRange{type}, ValueRange{expanded});
}

Value cumulativeSum(OpBuilder &builder, Location loc, Value src, int axis, bool reverse) {
  auto type = cast<RankedTensorType>(src.getType());
  auto scan = tt::ScanOp::create(
      builder, loc, TypeRange{type}, ValueRange{src},
      {builder.getNamedAttr("axis", builder.getI32IntegerAttr(axis)),
       builder.getNamedAttr("reverse", builder.getBoolAttr(reverse))});
  buildAddCombiner<tt::ScanReturnOp>(builder, loc, scan.getCombineOp(), type.getElementType());
  return scan.getResult()[0];
}

Value castFloat(OpBuilder &builder, Location loc, Value value, Type element) {
  Type from = getElementTypeOrSelf(value.getType());
  if (from == element)
    return value;
  Type target = element;
  if (auto tensor = dyn_cast<RankedTensorType>(value.getType()))
    target = tensor.clone(element);
  if (from.getIntOrFloatBitWidth() < element.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(builder, loc, target, value);
  return arith::TruncFOp::create(builder, loc, target, value);
}

Value createLoad(OpBuilder &builder, Location loc, Value ptr, Value mask, Value other) {
  OperationState state(loc, tt::LoadOp::getOperationName());
  state.addOperands(ptr);
  if (mask)
    state.addOperands(mask);
  if (other)
    state.addOperands(other);
  state.addAttribute("operandSegmentSizes",
                     builder.getDenseI32ArrayAttr({1, mask ? 1 : 0, other ? 1 : 0}));
  state.addTypes(tt::getPointeeType(ptr.getType()));
  return builder.create(state)->getResult(0);
}

void createStore(OpBuilder &builder, Location loc, Value ptr, Value value, Value mask) {
  OperationState state(loc, tt::StoreOp::getOperationName());
  state.addOperands({ptr, value});
  if (mask)
    state.addOperands(mask);
  builder.create(state);
}

Value predicate(OpBuilder &builder, Location loc, Value mask, Value cond, Type like) {
  if (auto tensor = dyn_cast<RankedTensorType>(like))
    cond = tt::SplatOp::create(builder, loc, tensor.clone(builder.getI1Type()), cond);
  return mask ? arith::AndIOp::create(builder, loc, mask, cond).getResult() : cond;
}

void createAtomicAdd(OpBuilder &builder, Location loc, Value ptr, Value value, Value mask) {
  MLIRContext *context = builder.getContext();
  OperationState state(loc, tt::AtomicRMWOp::getOperationName());
  state.addOperands({ptr, value});
  if (mask)
    state.addOperands(mask);
  state.addAttribute("atomic_rmw_op", tt::RMWOpAttr::get(context, tt::RMWOp::FADD));
  state.addAttribute("sem", tt::MemSemanticAttr::get(context, tt::MemSemantic::RELAXED));
  state.addAttribute("scope", tt::MemSyncScopeAttr::get(context, tt::MemSyncScope::GPU));
  state.addTypes(value.getType());
  builder.create(state);
}

} // namespace tritonad
