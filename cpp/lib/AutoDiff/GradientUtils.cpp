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

Type summedType(Type type) {
  if (!isa<Float16Type, BFloat16Type>(getElementTypeOrSelf(type)))
    return type;
  Type f32 = Float32Type::get(type.getContext());
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return tensor.clone(f32);
  return f32;
}

void GradientUtils::accumulate(OpBuilder &builder, Value primal, Value delta) {
  if (!delta || !isActive(primal))
    return;
  Value &slot = adjoints[primal];
  slot = slot ? addFloats(builder, delta.getLoc(), slot, delta) : delta;
}

} // namespace tritonad
