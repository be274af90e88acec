#include "tritonad/AutoDiff/AdjointState.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace tritonad {

bool isDifferentiableType(Type type) {
  return isa<FloatType>(getElementTypeOrSelf(type));
}

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

Value AdjointState::adjointOrZero(OpBuilder &builder, Value primal) {
  if (Value existing = adjoint(primal))
    return existing;
  return createZero(builder, primal.getLoc(), primal.getType());
}

void AdjointState::accumulate(OpBuilder &builder, Value primal, Value delta) {
  if (!delta || !isActive(primal))
    return;
  Value &slot = adjoints[primal];
  slot = slot ? arith::AddFOp::create(builder, delta.getLoc(), slot, delta).getResult() : delta;
}

} // namespace tritonad
