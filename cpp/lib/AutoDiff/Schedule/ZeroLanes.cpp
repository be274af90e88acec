#include "tritonad/AutoDiff/ZeroLanes.h"

#include "tritonad/Analysis/AccessAnalysis.h"

#include "../TensorBuilders.h"
#include "tritonad/AutoDiff/GradientUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {

void maskConjuncts(Value mask, SmallVectorImpl<Value> &conjuncts) {
  if (auto both = mask.getDefiningOp<arith::AndIOp>()) {
    maskConjuncts(both.getLhs(), conjuncts);
    maskConjuncts(both.getRhs(), conjuncts);
    return;
  }
  if (auto broadcast = mask.getDefiningOp<tt::BroadcastOp>())
    return maskConjuncts(broadcast.getSrc(), conjuncts);
  if (isa<RankedTensorType>(mask.getType()) && !mask.getDefiningOp<tt::SplatOp>())
    conjuncts.push_back(mask);
}

void zeroOutside(Value value, SmallVectorImpl<Value> &conjuncts, int depth) {
  Operation *def = value.getDefiningOp();
  if (!def || depth > 16)
    return;
  if (isa<arith::TruncFOp, arith::ExtFOp, tt::FpToFpOp>(def))
    return zeroOutside(def->getOperand(0), conjuncts, depth + 1);
  if (isa<arith::MulFOp>(def)) {
    zeroOutside(def->getOperand(0), conjuncts, depth + 1);
    zeroOutside(def->getOperand(1), conjuncts, depth + 1);
    return;
  }
  if (auto load = dyn_cast<tt::LoadOp>(def)) {
    if (load.getMask() && load.getOther() && matchPattern(load.getOther(), m_AnyZeroFloat()))
      maskConjuncts(load.getMask(), conjuncts);
    return;
  }
  auto dot = dyn_cast<tt::DotOp>(def);
  if (!dot || !matchPattern(dot.getC(), m_AnyZeroFloat()))
    return;
  SmallVector<Value> rows, columns;
  zeroOutside(dot.getA(), rows, depth + 1);
  zeroOutside(dot.getB(), columns, depth + 1);
  auto extent = [](Value conjunct, int fromEnd) {
    ArrayRef<int64_t> shape = cast<RankedTensorType>(conjunct.getType()).getShape();
    return shape[shape.size() - fromEnd];
  };
  for (Value conjunct : rows)
    if (extent(conjunct, 1) == 1) // (the same along the contraction)
      conjuncts.push_back(conjunct);
  for (Value conjunct : columns)
    if (extent(conjunct, 2) == 1)
      conjuncts.push_back(conjunct);
}

namespace {

Value underSplats(Value value) {
  while (true) {
    if (auto splat = value.getDefiningOp<tt::SplatOp>())
      value = splat.getSrc();
    else if (auto broadcast = value.getDefiningOp<tt::BroadcastOp>())
      value = broadcast.getSrc();
    else
      return value;
  }
}

// A tile wrapped at an extent on the way to a rank-2 pointer tensor: the one
// `remsi(D, splat(M))` of a 1-D tile D by a scalar M that reaches it, each way
// through one expand_dims, along one axis, and address arithmetic only
// (tileRemainders); `axis` the pointer's axis its lanes run along.
struct Wrap {
  arith::RemSIOp remainder;
  Value bound; // M
  unsigned axis;
};

std::optional<Wrap> wrapOf(Value ptr) {
  auto type = dyn_cast<RankedTensorType>(ptr.getType());
  if (!type || type.getRank() != 2)
    return std::nullopt;
  SmallVector<TileRemainder> ways = tileRemainders(ptr);
  if (ways.empty())
    return std::nullopt;
  auto remainder = cast<arith::RemSIOp>(ways.front().op);
  if (cast<RankedTensorType>(remainder.getType()).getRank() != 1)
    return std::nullopt;
  std::optional<unsigned> axis;
  for (const TileRemainder &way : ways) {
    if (way.op != remainder || !way.plainPath || way.expandAxes.size() != 1)
      return std::nullopt;
    unsigned along = way.expandAxes.front() == 1 ? 0 : 1;
    if (axis && *axis != along)
      return std::nullopt;
    axis = along;
  }
  return Wrap{remainder, underSplats(remainder.getRhs()), *axis};
}

// Whether conjunct `c` is `dividend < bound` with its lanes along `axis`.
bool bounds(Value c, unsigned axis, Value dividend, Value bound) {
  auto type = cast<RankedTensorType>(c.getType());
  auto compare = c.getDefiningOp<arith::CmpIOp>();
  if (type.getRank() != 2 || type.getShape()[1 - axis] != 1 || !compare ||
      compare.getPredicate() != arith::CmpIPredicate::slt)
    return false;
  auto expand = compare.getLhs().getDefiningOp<tt::ExpandDimsOp>();
  return expand && expand.getAxis() == 1 - axis && expand.getSrc() == dividend &&
         underSplats(compare.getRhs()) == bound;
}

// Whether every use of `value` (through float casts and transposes) is a
// factor of a product of tiles contracting along `axis`, whose other factor
// is zero wherever `dividend < bound` is false along the contraction.
bool meetsOnlyZeros(Value value, unsigned axis, Value dividend, Value bound, int depth = 0) {
  if (value.use_empty() || depth > 8)
    return false;
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (isa<arith::ExtFOp, arith::TruncFOp, tt::FpToFpOp>(user)) {
      if (!meetsOnlyZeros(user->getResult(0), axis, dividend, bound, depth + 1))
        return false;
      continue;
    }
    if (auto trans = dyn_cast<tt::TransOp>(user)) {
      ArrayRef<int32_t> order = trans.getOrder();
      if (order.size() != 2 || order[0] != 1 ||
          !meetsOnlyZeros(trans.getResult(), 1 - axis, dividend, bound, depth + 1))
        return false;
      continue;
    }
    auto dot = dyn_cast<tt::DotOp>(user);
    if (!dot || use.getOperandNumber() > 1)
      return false;
    bool first = use.getOperandNumber() == 0;
    if (axis != (first ? 1u : 0u)) // (not the contraction)
      return false;
    SmallVector<Value> zero;
    zeroOutside(first ? dot.getB() : dot.getA(), zero);
    unsigned otherAxis = first ? 0 : 1;
    if (llvm::none_of(zero, [&](Value c) { return bounds(c, otherAxis, dividend, bound); }))
      return false;
  }
  return true;
}

// The pure ops between `remainder` and `root` (operands first), or nothing
// where some op on the way is not pure.
SmallVector<Operation *> pathFrom(Operation *remainder, Value root) {
  SmallVector<Operation *> order;
  llvm::DenseMap<Operation *, bool> reaches;
  bool pure = true;
  std::function<bool(Value)> visit = [&](Value value) -> bool {
    Operation *def = value.getDefiningOp();
    if (!def || def->getNumRegions())
      return false;
    if (def == remainder)
      return true;
    if (auto it = reaches.find(def); it != reaches.end())
      return it->second;
    reaches[def] = false;
    bool any = false;
    for (Value operand : def->getOperands())
      any |= visit(operand);
    reaches[def] = any;
    if (any) {
      pure &= isMemoryEffectFree(def);
      order.push_back(def);
    }
    return any;
  };
  visit(root);
  return pure ? order : SmallVector<Operation *>();
}

} // namespace

int unwrapLoadsMeetingZeros(tt::FuncOp kernel) {
  SmallVector<tt::LoadOp> loads;
  kernel.walk([&](tt::LoadOp load) { loads.push_back(load); });
  int rewritten = 0;
  for (tt::LoadOp load : loads) {
    if (!load.getBoundaryCheck().empty() ||
        (load.getOther() && !matchPattern(load.getOther(), m_AnyZeroFloat())))
      continue;
    std::optional<Wrap> wrap = wrapOf(load.getPtr());
    if (!wrap)
      continue;
    Value dividend = wrap->remainder.getLhs();
    if (!meetsOnlyZeros(load.getResult(), wrap->axis, dividend, wrap->bound))
      continue;
    SmallVector<Operation *> path = pathFrom(wrap->remainder, load.getPtr());
    if (path.empty())
      continue;
    IRMapping unwrapped;
    unwrapped.map(wrap->remainder.getResult(), dividend);
    for (Operation *op : path) {
      OpBuilder b(op);
      b.setInsertionPointAfter(op);
      b.clone(*op, unwrapped);
    }
    OpBuilder b(load);
    Location loc = load.getLoc();
    auto type = cast<RankedTensorType>(load.getType());
    auto dividendType = cast<RankedTensorType>(dividend.getType());
    unsigned expandAxis = 1 - wrap->axis;
    SmallVector<int64_t> lanes(2, 1);
    lanes[wrap->axis] = dividendType.getShape()[0];
    auto lanesType = RankedTensorType::get(lanes, dividendType.getElementType());
    Value expanded = tt::ExpandDimsOp::create(b, loc, lanesType, dividend, expandAxis);
    Value extent = tt::SplatOp::create(b, loc, lanesType, wrap->bound);
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, expanded, extent);
    Value mask = tt::BroadcastOp::create(b, loc, type.clone(b.getI1Type()), inside);
    if (load.getMask())
      mask = arith::AndIOp::create(b, loc, load.getMask(), mask);
    Value other = load.getOther() ? load.getOther() : createZero(b, loc, type);
    Value replacement = createLoad(b, loc, unwrapped.lookup(load.getPtr()), mask, other);
    load.getResult().replaceAllUsesWith(replacement);
    load.erase();
    ++rewritten;
  }
  return rewritten;
}

} // namespace tritonad
