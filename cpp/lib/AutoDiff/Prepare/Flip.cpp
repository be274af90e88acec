// tl.flip, as Triton 3.6 writes it (triton/language/standard.py `flip`): the
// float is bitcast to an integer, the flipped dim (2^k long) is reshaped into k
// dims of size 2, and per level `y = y ^ xor_sum(y, axis, keep_dims=True)`
// swaps the two elements of one size-2 dim; then reshape and bitcast back.
// The gradient cannot follow the integer bits, so this exact pattern becomes
// the same permutation on the floats: reshape, per level a swap along the
// size-2 dim (tt.trans to put it last where it is not, tt.split, tt.join of
// the halves swapped, tt.trans back), reshape. Anything else is left alone
// (and the bitcast stays a located error).
#include "tritonad/AutoDiff/Prepare.h"

#include "tritonad/Analysis/CombineRegion.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

Operation *soleUser(Value value) {
  return value.hasOneUse() ? *value.getUsers().begin() : nullptr;
}

// The match of one flip: the bitcasts that open and close it, the flipped
// dim and the number of size-2 levels it was reshaped into.
struct FlipMatch {
  tt::BitcastOp toInteger, toFloat;
  int64_t dim;
  int64_t levels;
};

// `y ^ broadcast(expand_dims(xor-reduce(y, axis), axis))`, y's only other
// user; returns the xori and sets `axis`.
arith::XOrIOp matchXorLevel(Value y, int64_t &axis) {
  if (!llvm::hasNItems(y.getUsers(), 2))
    return nullptr;
  for (Operation *user : y.getUsers()) {
    auto reduce = dyn_cast<tt::ReduceOp>(user);
    if (!reduce || reduce.getSrcs().size() != 1 ||
        !matchCombiner<arith::XOrIOp>(reduce.getCombineOp().front(), 0, 1))
      continue;
    auto expand = dyn_cast_or_null<tt::ExpandDimsOp>(soleUser(reduce.getResult()[0]));
    if (!expand || expand.getAxis() != reduce.getAxis())
      return nullptr;
    auto broadcast = dyn_cast_or_null<tt::BroadcastOp>(soleUser(expand.getResult()));
    if (!broadcast || broadcast.getType() != y.getType())
      return nullptr;
    auto xorOp = dyn_cast_or_null<arith::XOrIOp>(soleUser(broadcast.getResult()));
    if (!xorOp || !llvm::is_contained(y.getUsers(), xorOp.getOperation()))
      return nullptr;
    Value other = xorOp.getLhs() == y ? xorOp.getRhs() : xorOp.getLhs();
    if (other != broadcast.getResult())
      return nullptr;
    axis = reduce.getAxis();
    return xorOp;
  }
  return nullptr;
}

std::optional<FlipMatch> matchFlip(tt::BitcastOp toInteger) {
  auto floatType = dyn_cast<RankedTensorType>(toInteger.getSrc().getType());
  auto intType = dyn_cast<RankedTensorType>(toInteger.getType());
  if (!floatType || !intType || !isa<FloatType>(floatType.getElementType()) ||
      !isa<IntegerType>(intType.getElementType()))
    return std::nullopt;
  auto split = dyn_cast_or_null<tt::ReshapeOp>(soleUser(toInteger.getResult()));
  if (!split || split.getAllowReorder() || split.getEfficientLayout())
    return std::nullopt;
  // Walk the xor levels; their axes are dim, dim + 1, ... in order.
  Value y = split.getResult();
  SmallVector<int64_t> axes;
  int64_t axis;
  while (arith::XOrIOp level = matchXorLevel(y, axis)) {
    axes.push_back(axis);
    y = level.getResult();
  }
  auto merge = dyn_cast_or_null<tt::ReshapeOp>(soleUser(y));
  if (!merge || merge.getAllowReorder() || merge.getType() != intType)
    return std::nullopt;
  auto toFloat = dyn_cast_or_null<tt::BitcastOp>(soleUser(merge.getResult()));
  if (!toFloat || toFloat.getType() != floatType)
    return std::nullopt;
  ArrayRef<int64_t> shape = floatType.getShape();
  int64_t rank = shape.size(), levels = axes.size();
  // The flipped dim, 2^levels long, reshaped into `levels` dims of 2.
  auto splitsDim = [&](int64_t dim) {
    if (dim >= rank || shape[dim] != (int64_t(1) << levels))
      return false;
    SmallVector<int64_t> expected(shape.take_front(dim));
    expected.append(levels, 2);
    llvm::append_range(expected, shape.drop_front(dim + 1));
    return split.getType().getShape() == ArrayRef<int64_t>(expected);
  };
  if (axes.empty()) {
    // A flip along a dim of size 1 (no level): the identity.
    for (int64_t dim = 0; dim < rank; ++dim)
      if (splitsDim(dim))
        return FlipMatch{toInteger, toFloat, dim, 0};
    return std::nullopt;
  }
  int64_t dim = axes.front();
  for (auto [i, a] : llvm::enumerate(axes))
    if (a != dim + static_cast<int64_t>(i))
      return std::nullopt;
  if (!splitsDim(dim))
    return std::nullopt;
  return FlipMatch{toInteger, toFloat, dim, levels};
}

Value transpose(OpBuilder &builder, Location loc, Value value, ArrayRef<int32_t> order) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape;
  for (int32_t d : order)
    shape.push_back(type.getDimSize(d));
  return tt::TransOp::create(builder, loc, TypeRange{type.clone(shape)}, ValueRange{value},
                             {builder.getNamedAttr("order", builder.getDenseI32ArrayAttr(order))})
      .getResult();
}

// Swaps the two elements of the size-2 `axis` of `value`.
Value swapPairs(OpBuilder &builder, Location loc, Value value, int64_t axis) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t rank = type.getRank();
  SmallVector<int32_t> toLast, back(rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      toLast.push_back(d);
  toLast.push_back(axis);
  for (auto [i, d] : llvm::enumerate(toLast))
    back[d] = i;
  bool moves = axis != rank - 1;
  Value last = moves ? transpose(builder, loc, value, toLast) : value;
  auto lastType = cast<RankedTensorType>(last.getType());
  Type half = lastType.clone(lastType.getShape().drop_back());
  auto halves = tt::SplitOp::create(builder, loc, TypeRange{half, half}, ValueRange{last});
  Value swapped = tt::JoinOp::create(builder, loc, TypeRange{lastType},
                                     ValueRange{halves.getOutRHS(), halves.getOutLHS()});
  return moves ? transpose(builder, loc, swapped, back) : swapped;
}

void rewriteFlip(FlipMatch match) {
  OpBuilder builder(match.toFloat);
  Location loc = match.toFloat.getLoc();
  Value x = match.toInteger.getSrc();
  auto floatType = cast<RankedTensorType>(x.getType());
  auto split = cast<tt::ReshapeOp>(*match.toInteger->getUsers().begin());
  Value y = tt::ReshapeOp::create(
      builder, loc, TypeRange{floatType.clone(split.getType().getShape())}, ValueRange{x});
  for (int64_t level = 0; level < match.levels; ++level)
    y = swapPairs(builder, loc, y, match.dim + level);
  Value flipped = tt::ReshapeOp::create(builder, loc, TypeRange{floatType}, ValueRange{y});
  match.toFloat.getResult().replaceAllUsesWith(flipped);
  // The integer chain is dead now: erase it, users first (an op pushed twice
  // is skipped by pointer before it is touched).
  SmallVector<Operation *> erased;
  SmallVector<Operation *> work{match.toFloat};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (llvm::is_contained(erased, op) || !op->use_empty())
      continue;
    erased.push_back(op);
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp(); def && def != x.getDefiningOp())
        work.push_back(def);
    op->erase();
  }
}

} // namespace

void rewriteFlips(tt::FuncOp function) {
  SmallVector<FlipMatch> matches;
  function.walk([&](tt::BitcastOp bitcast) {
    if (std::optional<FlipMatch> match = matchFlip(bitcast))
      matches.push_back(*match);
  });
  for (FlipMatch &match : matches)
    rewriteFlip(match);
}

} // namespace tritonad
