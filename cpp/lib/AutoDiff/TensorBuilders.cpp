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

} // namespace tritonad
