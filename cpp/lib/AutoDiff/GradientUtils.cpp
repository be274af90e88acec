#include "tritonad/AutoDiff/GradientUtils.h"

#include "tritonad/Dialect/Triton/Dialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace tritonad {

Value createFloatConstant(OpBuilder &builder, Location loc, Type type, double value) {
  auto element = cast<FloatType>(getElementTypeOrSelf(type));
  auto scalar = builder.getFloatAttr(element, value);
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return arith::ConstantOp::create(builder, loc, tensor,
                                     DenseElementsAttr::get(tensor, scalar));
  return arith::ConstantOp::create(builder, loc, element, scalar);
}

Value createZero(OpBuilder &builder, Location loc, Type type) {
  return createFloatConstant(builder, loc, type, 0.0);
}

Value GradientUtils::adjointOrZero(OpBuilder &builder, Value primal) {
  if (Value existing = adjoint(primal))
    return existing;
  return createZero(builder, primal.getLoc(), primal.getType());
}

bool hasArithmetic(Type type) {
  return getElementTypeOrSelf(type).getIntOrFloatBitWidth() >= 16;
}

Value addFloats(OpBuilder &builder, Location loc, Value lhs, Value rhs) {
  if (hasArithmetic(lhs.getType()))
    return arith::AddFOp::create(builder, loc, lhs, rhs);
  // fp8 has no arithmetic in Triton: add in fp32, round once.
  Type f32 = builder.getF32Type();
  Type wide = f32;
  if (auto tensor = dyn_cast<RankedTensorType>(lhs.getType()))
    wide = tensor.clone(f32);
  auto widen = [&](Value v) {
    return triton::FpToFpOp::create(builder, loc, TypeRange{wide}, ValueRange{v}).getResult();
  };
  Value sum = arith::AddFOp::create(builder, loc, widen(lhs), widen(rhs));
  return triton::FpToFpOp::create(
             builder, loc, TypeRange{lhs.getType()}, ValueRange{sum},
             {builder.getNamedAttr("rounding", triton::RoundingModeAttr::get(
                                                   builder.getContext(), triton::RoundingMode::RTNE))})
      .getResult();
}

bool sumsInF32(Type type) {
  return isa<Float16Type, BFloat16Type>(getElementTypeOrSelf(type));
}

Type summedType(Type type) {
  if (!sumsInF32(type))
    return type;
  Type f32 = Float32Type::get(type.getContext());
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return tensor.clone(f32);
  return f32;
}

Value widenFloat(OpBuilder &builder, Location loc, Value value) {
  Type wide = summedType(value.getType());
  if (wide == value.getType())
    return value;
  if (auto rounded = value.getDefiningOp<arith::TruncFOp>())
    if (rounded.getIn().getType() == wide)
      return rounded.getIn();
  return arith::ExtFOp::create(builder, loc, wide, value);
}

Value convertFloat(OpBuilder &builder, Location loc, Value value, Type type) {
  if (value.getType() == type)
    return value;
  if (getElementTypeOrSelf(value.getType()).getIntOrFloatBitWidth() <
      getElementTypeOrSelf(type).getIntOrFloatBitWidth())
    return arith::ExtFOp::create(builder, loc, type, value);
  return arith::TruncFOp::create(builder, loc, type, value);
}

void GradientUtils::accumulate(OpBuilder &builder, Value primal, Value delta) {
  if (!delta || !isActive(primal))
    return;
  Location loc = delta.getLoc();
  if (sumsInF32(primal.getType()) && delta.getType() == primal.getType()) {
    Value wide = widenFloat(builder, loc, delta);
    Value &sum = sums[primal];
    if (!sum && adjoints.lookup(primal))
      sum = widenFloat(builder, loc, adjoints.lookup(primal));
    if (!sum) {
      sum = wide;
      adjoints[primal] = delta;
      return;
    }
    sum = arith::AddFOp::create(builder, loc, sum, wide);
    adjoints[primal] = convertFloat(builder, loc, sum, primal.getType());
    return;
  }
  Value &slot = adjoints[primal];
  slot = slot ? addFloats(builder, loc, slot, delta) : delta;
}

Value GradientUtils::summedAdjoint(OpBuilder &builder, Value primal) {
  if (Value sum = sums.lookup(primal))
    return sum;
  Value narrow = adjoint(primal);
  return narrow ? widenFloat(builder, narrow.getLoc(), narrow) : narrow;
}

} // namespace tritonad
