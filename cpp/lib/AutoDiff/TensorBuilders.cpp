#include "TensorBuilders.h"

#include "tritonad/AutoDiff/GradientUtils.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {

// maxsi / minsi of an integer tensor along `axis`.
Value integerExtremum(OpBuilder &builder, Location loc, Value src, int axis, bool isMax) {
  auto type = cast<RankedTensorType>(src.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.erase(shape.begin() + axis);
  Type element = type.getElementType();
  Type resultType = shape.empty() ? element : Type(RankedTensorType::get(shape, element));
  auto reduce = tt::ReduceOp::create(builder, loc, TypeRange{resultType}, ValueRange{src},
                                     {builder.getNamedAttr("axis", builder.getI32IntegerAttr(axis))});
  OpBuilder::InsertionGuard guard(builder);
  Block *block = builder.createBlock(&reduce.getCombineOp(), {}, {element, element}, {loc, loc});
  Value lhs = block->getArgument(0), rhs = block->getArgument(1);
  Value best = isMax ? arith::MaxSIOp::create(builder, loc, lhs, rhs).getResult()
                     : arith::MinSIOp::create(builder, loc, lhs, rhs).getResult();
  tt::ReduceReturnOp::create(builder, loc, TypeRange{}, ValueRange{best});
  return reduce.getResult()[0];
}

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
  // f16/bf16 adjoints (a bf16 weight's gradient summed over a block of rows)
  // are summed in f32 and rounded once, as hand-written backwards do; a sum
  // of a sum (sumToShape, one axis at a time) takes the unrounded f32 sum.
  Type summed = summedType(type.getElementType());
  if (summed != type.getElementType()) {
    auto rounded = src.getDefiningOp<arith::TruncFOp>();
    Value wide = rounded && getElementTypeOrSelf(rounded.getIn().getType()) == summed
                     ? rounded.getIn()
                     : castFloat(builder, loc, src, summed);
    return castFloat(builder, loc, sumAlongAxis(builder, loc, wide, axis), type.getElementType());
  }
  SmallVector<int64_t> shape(type.getShape());
  shape.erase(shape.begin() + axis);
  Type resultType =
      shape.empty() ? type.getElementType() : RankedTensorType::get(shape, type.getElementType());
  auto reduce = tt::ReduceOp::create(builder, loc, TypeRange{resultType}, ValueRange{src},
                                     {builder.getNamedAttr("axis", builder.getI32IntegerAttr(axis))});
  buildAddCombiner<tt::ReduceReturnOp>(builder, loc, reduce.getCombineOp(), type.getElementType());
  return reduce.getResult()[0];
}

Value indexAlongAxis(OpBuilder &builder, Location loc, RankedTensorType type, int axis) {
  int64_t size = type.getShape()[axis];
  Type i32 = builder.getI32Type();
  Value range = tt::MakeRangeOp::create(builder, loc, RankedTensorType::get({size}, i32), 0,
                                        static_cast<int32_t>(size));
  // Unit dimensions by expand_dims, not a reshape: Triton's AxisInfo sees
  // through expand_dims, so the addresses these indices make (a tape's, a
  // residual's) keep their contiguity and the loads stay coalesced (through
  // a reshape, a residual tile was loaded column by column).
  SmallVector<int64_t> kept{size};
  Value shaped = range;
  for (int dim = 0; dim < type.getRank(); ++dim) {
    if (dim == axis)
      continue;
    int at = dim < axis ? 0 : static_cast<int>(kept.size());
    kept.insert(kept.begin() + at, 1);
    shaped = tt::ExpandDimsOp::create(builder, loc, RankedTensorType::get(kept, i32), shaped, at);
  }
  auto full = RankedTensorType::get(type.getShape(), i32);
  if (shaped.getType() == full)
    return shaped;
  return tt::BroadcastOp::create(builder, loc, TypeRange{full}, ValueRange{shaped});
}

Value firstExtremumIndex(OpBuilder &builder, Location loc, Value values, Value indices, int axis,
                         bool isMax, bool nanWins) {
  // One i64 key per element, (value as an ordered integer) << 32 | (index,
  // complemented for max), reduced by a single-operand maxsi/minsi: Triton
  // 3.6 pairs the operands of a multi-operand reduce wrongly on H100 when
  // they were flattened by tt.reshape (its own tl.max(return_indices=True)
  // returns wrong indices there), and one operand is one consumer of `values`.
  auto valueType = cast<RankedTensorType>(values.getType());
  auto indexType = cast<RankedTensorType>(indices.getType());
  auto like = [&](Type element) { return valueType.clone(element); };
  Type f32 = builder.getF32Type(), i32 = builder.getI32Type(), i64 = builder.getI64Type();
  Value x = castFloat(builder, loc, values, f32);
  // NaN: the winner (tl.max(propagate_nan=True)) or the loser, as the
  // infinity that wins or loses (a tie with it goes to the lower index).
  bool wantHigh = nanWins == isMax;
  Value infinity = arith::ConstantOp::create(
      builder, loc, DenseElementsAttr::get(like(f32), APFloat::getInf(APFloat::IEEEsingle(),
                                                                      /*Negative=*/!wantHigh)));
  Value isNan = arith::CmpFOp::create(builder, loc, arith::CmpFPredicate::UNO, x, x);
  x = arith::SelectOp::create(builder, loc, isNan, infinity, x);
  auto splatInt = [&](Type element, int64_t v) -> Value {
    return arith::ConstantOp::create(
        builder, loc, DenseElementsAttr::get(like(element), builder.getIntegerAttr(element, v)));
  };
  // Signed order of the bits = order of the floats (negatives: magnitude
  // bits flipped); -0.0 sorts just below +0.0.
  Value bits = tt::BitcastOp::create(builder, loc, like(i32), x); // (Triton lowers tt.bitcast)
  Value sign = arith::ShRSIOp::create(builder, loc, bits, splatInt(i32, 31));
  Value ordered = arith::XOrIOp::create(
      builder, loc, bits, arith::AndIOp::create(builder, loc, sign, splatInt(i32, 0x7FFFFFFF)));
  Value high = arith::ShLIOp::create(
      builder, loc, arith::ExtSIOp::create(builder, loc, like(i64), ordered), splatInt(i64, 32));
  Value index = arith::ExtUIOp::create(builder, loc, like(i64), indices);
  int64_t last = valueType.getShape()[axis] - 1;
  if (isMax) // (the lower index must win a tie of the max)
    index = arith::SubIOp::create(builder, loc, splatInt(i64, last), index);
  Value key = arith::OrIOp::create(builder, loc, high, index);

  SmallVector<int64_t> shape(valueType.getShape());
  shape.erase(shape.begin() + axis);
  Value chosen = integerExtremum(builder, loc, key, axis, isMax);
  auto scalarOr = [&](Type element, int64_t v) -> Value {
    if (shape.empty())
      return arith::ConstantOp::create(builder, loc, builder.getIntegerAttr(element, v));
    auto type = RankedTensorType::get(shape, element);
    return arith::ConstantOp::create(builder, loc,
                                     DenseElementsAttr::get(type, builder.getIntegerAttr(element, v)));
  };
  Value low = arith::AndIOp::create(builder, loc, chosen, scalarOr(i64, 0xFFFFFFFFll));
  if (isMax)
    low = arith::SubIOp::create(builder, loc, scalarOr(i64, last), low);
  Type indexResult = shape.empty() ? indexType.getElementType()
                                   : Type(RankedTensorType::get(shape, indexType.getElementType()));
  return arith::TruncIOp::create(builder, loc, indexResult, low);
}

Value firstIndexWhere(OpBuilder &builder, Location loc, Value hits, Value indices, int axis) {
  auto indexType = cast<RankedTensorType>(indices.getType());
  Type i32 = indexType.getElementType();
  Value none = arith::ConstantOp::create(
      builder, loc, DenseElementsAttr::get(indexType, builder.getIntegerAttr(i32, INT32_MAX)));
  Value candidates = arith::SelectOp::create(builder, loc, hits, indices, none);
  return integerExtremum(builder, loc, candidates, axis, /*isMax=*/false);
}

Value anyAlongAxis(OpBuilder &builder, Location loc, Value hits, int axis) {
  auto type = cast<RankedTensorType>(hits.getType());
  Value asInt = arith::ExtUIOp::create(builder, loc, type.clone(builder.getI32Type()), hits);
  Value most = integerExtremum(builder, loc, asInt, axis, /*isMax=*/true);
  Value zero = arith::ConstantOp::create(builder, loc, builder.getZeroAttr(most.getType()));
  return arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ne, most, zero);
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

SmallVector<Value> scanWith(
    OpBuilder &builder, Location loc, ValueRange srcs, int axis, bool reverse,
    llvm::function_ref<SmallVector<Value>(OpBuilder &, ValueRange, ValueRange)> combine) {
  auto scan = tt::ScanOp::create(
      builder, loc, srcs.getTypes(), srcs,
      {builder.getNamedAttr("axis", builder.getI32IntegerAttr(axis)),
       builder.getNamedAttr("reverse", builder.getBoolAttr(reverse))});
  OpBuilder::InsertionGuard guard(builder);
  SmallVector<Type> types;
  for (Value src : srcs)
    types.push_back(getElementTypeOrSelf(src.getType()));
  types.append(SmallVector<Type>(types));
  Block *block = builder.createBlock(&scan.getCombineOp(), {}, types,
                                     SmallVector<Location>(types.size(), loc));
  unsigned n = srcs.size();
  SmallVector<Value> results = combine(builder, block->getArguments().take_front(n),
                                       block->getArguments().drop_front(n));
  tt::ScanReturnOp::create(builder, loc, TypeRange{}, results);
  return SmallVector<Value>(scan.getResult().begin(), scan.getResult().end());
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

Operation *createAtomicAdd(OpBuilder &builder, Location loc, Value ptr, Value value,
                           Value mask) {
  MLIRContext *context = builder.getContext();
  OperationState state(loc, tt::AtomicRMWOp::getOperationName());
  state.addOperands({ptr, value});
  if (mask)
    state.addOperands(mask);
  state.addAttribute("atomic_rmw_op", tt::RMWOpAttr::get(context, tt::RMWOp::FADD));
  state.addAttribute("sem", tt::MemSemanticAttr::get(context, tt::MemSemantic::RELAXED));
  state.addAttribute("scope", tt::MemSyncScopeAttr::get(context, tt::MemSyncScope::GPU));
  state.addTypes(value.getType());
  return builder.create(state);
}

std::optional<TapeSlot> tapeSlotFor(Type type) {
  Type element = getElementTypeOrSelf(type);
  if (!element.isIntOrFloat())
    return std::nullopt; // pointers are not taped
  int64_t numel = 1;
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    numel = tensor.getNumElements();
  else if (isa<ShapedType>(type))
    return std::nullopt;
  unsigned width = element.getIntOrFloatBitWidth();
  if (width == 1)
    element = IntegerType::get(type.getContext(), 8);
  return TapeSlot{element, numel * std::max(width, 8u) / 8, 0};
}

Value tapeAddress(OpBuilder &builder, Location loc, Value base, Value offset, Type type,
                  const TapeSlot &slot) {
  Value bytePtr = tt::AddPtrOp::create(builder, loc, base.getType(), base, offset);
  auto pointer = tt::PointerType::get(slot.element, 1);
  Value typed = tt::BitcastOp::create(builder, loc, pointer, bytePtr);
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return typed;
  auto indexType = RankedTensorType::get(tensor.getShape(), builder.getI32Type());
  Value flat;
  int64_t stride = 1;
  for (int axis = tensor.getRank() - 1; axis >= 0; --axis) {
    Value index = indexAlongAxis(builder, loc, indexType, axis);
    if (stride != 1)
      index = arith::MulIOp::create(
          builder, loc, index,
          arith::ConstantOp::create(builder, loc,
                                    DenseElementsAttr::get(indexType, builder.getI32IntegerAttr(
                                                                          stride))));
    flat = flat ? arith::AddIOp::create(builder, loc, flat, index).getResult() : index;
    stride *= tensor.getShape()[axis];
  }
  auto pointers = RankedTensorType::get(tensor.getShape(), pointer);
  Value splat = tt::SplatOp::create(builder, loc, pointers, typed);
  return tt::AddPtrOp::create(builder, loc, pointers, splat, flat);
}

Value i64Of(OpBuilder &builder, Location loc, Value value) {
  if (value.getType().isInteger(64))
    return value;
  return arith::ExtSIOp::create(builder, loc, builder.getI64Type(), value);
}

Value programCount(OpBuilder &builder, Location loc, unsigned axis) {
  auto dim = tt::ProgramIDDimAttr::get(builder.getContext(), static_cast<tt::ProgramIDDim>(axis));
  return i64Of(builder, loc, tt::GetNumProgramsOp::create(builder, loc, builder.getI32Type(), dim));
}

Value linearProgramId(OpBuilder &builder, Location loc, const std::array<bool, 3> &used,
                      Value *programs) {
  Type i32 = builder.getI32Type();
  Value linear;
  for (int axis = 2; axis >= 0; --axis) {
    if (!used[axis])
      continue;
    auto dim = tt::ProgramIDDimAttr::get(builder.getContext(), static_cast<tt::ProgramIDDim>(axis));
    Value pid = i64Of(builder, loc, tt::GetProgramIdOp::create(builder, loc, i32, dim));
    Value count = linear || programs ? programCount(builder, loc, axis) : Value();
    linear = linear ? arith::AddIOp::create(builder, loc, pid,
                                            arith::MulIOp::create(builder, loc, count, linear))
                    : pid;
    if (programs)
      *programs = *programs ? arith::MulIOp::create(builder, loc, *programs, count).getResult()
                            : count;
  }
  return linear;
}

} // namespace tritonad
