// Reverse-mode rules of the tt dialect: shapes, dot, reductions, scans and
// device-library calls. Loads and stores are the kernel driver's business
// (they need the shadow pointers), see KernelBackward.cpp.
#include "ElementwiseRules.h"
#include "TritonRules.h"
#include "../TensorBuilders.h"

#include "tritonad/Analysis/CombineRegion.h"
#include "tritonad/Dialect/Triton/Dialect.h"

#include <cmath>

using namespace mlir;
using namespace tritonad;
using namespace tritonad::rules;
namespace tt = mlir::triton;

namespace {

//===----------------------------------------------------------------------===//
// Elementwise tt ops and libdevice calls (declared)
//===----------------------------------------------------------------------===//

const RuleTable &tritonElementwiseRules() {
  static const RuleTable table = [] {
    RuleTable t;
    t.declare<tt::PreciseSqrtOp>(formulas::sqrt());
    t.declare<tt::PreciseDivFOp>(formulas::div());
    // torch.clamp: the gradient passes where min <= x <= max.
    t.declare<tt::ClampFOp>({select(X(0) < X(1), 0.0, select(X(0) > X(2), 0.0, G)),
                             select(X(0) < X(1), G, 0.0), select(X(0) > X(2), G, 0.0)});
    return t;
  }();
  return table;
}

// Rules of tt.extern_elementwise, keyed by the libdevice function's name
// without its `__nv_` prefix (a float variant's trailing `f` is also tried).
// Functions that a math op also computes share its formula.
const llvm::StringMap<Partials> &libdeviceRules() {
  static const llvm::StringMap<Partials> table = [] {
    const double ln10 = std::log(10.0);
    const double twoOverSqrtPi = 2.0 / std::sqrt(M_PI);
    llvm::StringMap<Partials> t;
    for (StringRef name : {"exp", "fast_exp"})
      t[name] = formulas::exp();
    t["exp2"] = formulas::exp2();
    t["exp10"] = {saturating(G * Y * ln10)};
    t["expm1"] = formulas::expm1();
    for (StringRef name : {"log", "fast_log"})
      t[name] = formulas::log();
    t["log2"] = formulas::log2();
    t["log10"] = {safe(G / (X(0) * ln10), 0)};
    t["log1p"] = formulas::log1p();
    t["sqrt"] = formulas::sqrt();
    t["rsqrt"] = formulas::rsqrt();
    t["sin"] = formulas::sin();
    t["cos"] = formulas::cos();
    t["tan"] = formulas::tan();
    t["tanh"] = formulas::tanh();
    t["sinh"] = {G * (exp(X(0)) + exp(-X(0))) * 0.5};
    t["cosh"] = {G * (exp(X(0)) - exp(-X(0))) * 0.5};
    t["asin"] = {safe(G / sqrt(1.0 - X(0) * X(0)), 0)};
    t["acos"] = {safe(-G / sqrt(1.0 - X(0) * X(0)), 0)};
    t["atan"] = {G / (X(0) * X(0) + 1.0)};
    t["asinh"] = {G / sqrt(X(0) * X(0) + 1.0)};
    t["acosh"] = {safe(G / sqrt(X(0) * X(0) - 1.0), 0)};
    t["atanh"] = {safe(G / (1.0 - X(0) * X(0)), 0)};
    t["erf"] = formulas::erf();
    t["erfc"] = {-G * twoOverSqrtPi * exp(-(X(0) * X(0)))};
    t["pow"] = formulas::pow();
    t["fabs"] = formulas::abs();
    for (StringRef name : {"floor", "ceil", "trunc", "round", "rint"})
      t[name] = formulas::stepFunction();
    for (StringRef name : {"fdiv_rn", "div_rn"})
      t[name] = formulas::div();
    for (StringRef name : {"fmaf", "fma"})
      t[name] = formulas::fma();
    return t;
  }();
  return table;
}

const Partials *lookupLibdeviceRule(StringRef symbol) {
  symbol.consume_front("__nv_");
  const llvm::StringMap<Partials> &table = libdeviceRules();
  auto it = table.find(symbol);
  if (it == table.end() && symbol.ends_with("f"))
    it = table.find(symbol.drop_back());
  return it == table.end() ? nullptr : &it->second;
}

struct ExternElementwiseModel
    : public ReverseModeOpInterface::ExternalModel<ExternElementwiseModel,
                                                   tt::ExternElementwiseOp> {
  LogicalResult emitAdjoint(Operation *op, OpBuilder &builder, GradientUtils &state) const {
    auto call = cast<tt::ExternElementwiseOp>(op);
    const Partials *partials = lookupLibdeviceRule(call.getSymbol());
    if (!partials)
      return op->emitError("no derivative rule for device-library function '")
             << call.getSymbol() << "'";
    return emitElementwiseAdjoint(op, builder, state, *partials);
  }
};

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

/// Base for single-operand, single-result ops: `rule(g)` is the operand's adjoint.
template <typename Derived, typename OpT>
struct UnaryShapeModel : public ReverseModeOpInterface::ExternalModel<Derived, OpT> {
  LogicalResult emitAdjoint(Operation *op, OpBuilder &builder, GradientUtils &state) const {
    Value g = state.adjoint(op->getResult(0));
    Value source = op->getOperand(0);
    if (!g || !state.isActive(source))
      return success();
    FailureOr<Value> delta =
        static_cast<const Derived *>(this)->rule(cast<OpT>(op), builder, g, state);
    if (failed(delta))
      return failure();
    state.accumulate(builder, source, *delta);
    return success();
  }
};

struct SplatModel : UnaryShapeModel<SplatModel, tt::SplatOp> {
  FailureOr<Value> rule(tt::SplatOp op, OpBuilder &builder, Value g, GradientUtils &) const {
    return sumAll(builder, op.getLoc(), g);
  }
};

struct BroadcastModel : UnaryShapeModel<BroadcastModel, tt::BroadcastOp> {
  FailureOr<Value> rule(tt::BroadcastOp op, OpBuilder &builder, Value g, GradientUtils &) const {
    return sumToShape(builder, op.getLoc(), g, op.getSrc().getType().getShape());
  }
};

struct ExpandDimsModel : UnaryShapeModel<ExpandDimsModel, tt::ExpandDimsOp> {
  FailureOr<Value> rule(tt::ExpandDimsOp op, OpBuilder &builder, Value g, GradientUtils &) const {
    return reshape(builder, op.getLoc(), g, op.getSrc().getType());
  }
};

// The combine region of a single-operand tt.reduce is `lhs + rhs`.
bool isSumReduce(tt::ReduceOp reduce);

bool onlySummedWhole(tt::ReshapeOp op) {
  if (op.getType().getRank() != 1)
    return false;
  return llvm::all_of(op->getUsers(), [](Operation *user) {
    auto reduce = dyn_cast<tt::ReduceOp>(user);
    return reduce && reduce.getSrcs().size() == 1 && isSumReduce(reduce);
  });
}

struct ReshapeModel : UnaryShapeModel<ReshapeModel, tt::ReshapeOp> {
  FailureOr<Value> rule(tt::ReshapeOp op, OpBuilder &builder, Value g, GradientUtils &) const {
    // A reordering flatten is fine when only full sums consume it (tl.sum(x)
    // without an axis): their adjoint is the same for every element.
    if (op.getAllowReorder() && !onlySummedWhole(op))
      return op.emitError("cannot differentiate tt.reshape with allow_reorder: the element "
                          "order is unspecified; use tl.reshape(x, shape, can_reorder=False)");
    return reshape(builder, op.getLoc(), g, op.getSrc().getType());
  }
};

struct TransModel : UnaryShapeModel<TransModel, tt::TransOp> {
  FailureOr<Value> rule(tt::TransOp op, OpBuilder &builder, Value g, GradientUtils &) const {
    ArrayRef<int32_t> order = op.getOrder();
    SmallVector<int32_t> inverse(order.size());
    for (auto [i, dim] : llvm::enumerate(order))
      inverse[dim] = i;
    return tt::TransOp::create(builder, op.getLoc(), TypeRange{op.getSrc().getType()},
                               ValueRange{g},
                               {builder.getNamedAttr("order", builder.getDenseI32ArrayAttr(inverse))})
        .getResult();
  }
};

struct FpToFpModel : UnaryShapeModel<FpToFpModel, tt::FpToFpOp> {
  FailureOr<Value> rule(tt::FpToFpOp op, OpBuilder &builder, Value g, GradientUtils &) const {
    Type srcType = op.getSrc().getType();
    SmallVector<NamedAttribute> attrs;
    if (getElementTypeOrSelf(srcType).getIntOrFloatBitWidth() <
        getElementTypeOrSelf(g.getType()).getIntOrFloatBitWidth())
      attrs.push_back(builder.getNamedAttr(
          "rounding", tt::RoundingModeAttr::get(builder.getContext(), tt::RoundingMode::RTNE)));
    return tt::FpToFpOp::create(builder, op.getLoc(), TypeRange{srcType}, ValueRange{g}, attrs)
        .getResult();
  }
};

struct JoinModel : public ReverseModeOpInterface::ExternalModel<JoinModel, tt::JoinOp> {
  LogicalResult emitAdjoint(Operation *op, OpBuilder &builder, GradientUtils &state) const {
    auto join = cast<tt::JoinOp>(op);
    Value g = state.adjoint(join.getResult());
    if (!g)
      return success();
    Type half = join.getLhs().getType();
    auto split = tt::SplitOp::create(builder, op->getLoc(), TypeRange{half, half}, ValueRange{g});
    state.accumulate(builder, join.getLhs(), split.getOutLHS());
    state.accumulate(builder, join.getRhs(), split.getOutRHS());
    return success();
  }
};

struct SplitModel : public ReverseModeOpInterface::ExternalModel<SplitModel, tt::SplitOp> {
  LogicalResult emitAdjoint(Operation *op, OpBuilder &builder, GradientUtils &state) const {
    auto split = cast<tt::SplitOp>(op);
    if (!state.adjoint(split.getOutLHS()) && !state.adjoint(split.getOutRHS()))
      return success();
    Value lhs = state.adjointOrZero(builder, split.getOutLHS());
    Value rhs = state.adjointOrZero(builder, split.getOutRHS());
    state.accumulate(builder, split.getSrc(),
                     tt::JoinOp::create(builder, op->getLoc(), TypeRange{split.getSrc().getType()},
                                        ValueRange{lhs, rhs}));
    return success();
  }
};

struct CatModel : public ReverseModeOpInterface::ExternalModel<CatModel, tt::CatOp> {
  LogicalResult emitAdjoint(Operation *op, OpBuilder &, GradientUtils &) const {
    return op->emitError("cannot differentiate tt.cat: Triton may reorder the elements of its "
                         "result, so no element maps to a known operand element; use tl.join "
                         "(exact layout) instead");
  }
};

//===----------------------------------------------------------------------===//
// tt.dot
//===----------------------------------------------------------------------===//

Value transposeLastTwo(OpBuilder &builder, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int32_t> order;
  SmallVector<int64_t> shape(type.getShape());
  for (int i = 0; i < type.getRank(); ++i)
    order.push_back(i);
  std::swap(order[type.getRank() - 1], order[type.getRank() - 2]);
  std::swap(shape[type.getRank() - 1], shape[type.getRank() - 2]);
  return tt::TransOp::create(builder, loc, TypeRange{type.clone(shape)}, ValueRange{value},
                             {builder.getNamedAttr("order", builder.getDenseI32ArrayAttr(order))});
}

// The operand `forward` (of the primal dot operand `primal`) as the adjoint's
// product reads it: where it may hold non-finite padding (a K tile loaded with
// other=-inf), its entries are zeroed along each contraction index whose line
// of `g` is all zero (g reduced over `gAxis`, the dim the product keeps; `g` as
// the product takes it, in the operands' dtype: what rounds to 0 is 0 there).
// Masked lanes get such lines, and 0 * inf = NaN would reach every lane of
// the product; torch never sees the padding, so those terms are 0 there. The
// other terms, real infinities included, are the product's own.
Value withoutPaddingOfDeadLines(OpBuilder &builder, Location loc, Value primal, Value forward,
                                Value g, int gAxis) {
  if (!mayHoldNonFinitePadding(primal) && !mayHoldNonFinitePadding(forward))
    return forward;
  auto gType = cast<RankedTensorType>(g.getType());
  Value zeroG = createZero(builder, loc, gType);
  Value nonzero = arith::CmpFOp::create(builder, loc, arith::CmpFPredicate::UNE, g, zeroG);
  Value live = anyAlongAxis(builder, loc, nonzero, gAxis);
  // `live` runs along the operand's contraction dim (b's last, a's second to
  // last); the operand's other dim is the one put back.
  auto type = cast<RankedTensorType>(forward.getType());
  int spread = gAxis == gType.getRank() - 2 ? type.getRank() - 2 : type.getRank() - 1;
  Value liveHere = broadcastAlongAxis(builder, loc, live, spread,
                                      type.clone(builder.getI1Type()));
  return arith::SelectOp::create(builder, loc, liveHere, forward,
                                 createZero(builder, loc, type));
}

struct DotModel : public ReverseModeOpInterface::ExternalModel<DotModel, tt::DotOp> {
  // d = a x b + c:  da = g x b^T, db = a^T x g, dc = g. The products take the
  // operands' dtype (g is cast to it, as hand-written fp16 backward kernels do),
  // accumulate in d's element type and keep the input precision.
  LogicalResult emitAdjoint(Operation *op, OpBuilder &builder, GradientUtils &state) const {
    auto dot = cast<tt::DotOp>(op);
    Value g = state.adjoint(dot.getD());
    if (!g)
      return success();
    Location loc = op->getLoc();
    Value a = state.forward(dot.getA()), b = state.forward(dot.getB());
    Type accElement = getElementTypeOrSelf(g.getType());
    auto product = [&](Value lhs, Value rhs, RankedTensorType operandType) -> Value {
      auto accType = operandType.clone(accElement);
      Value zero = createZero(builder, loc, accType);
      Value result = tt::DotOp::create(
          builder, loc, TypeRange{accType}, ValueRange{lhs, rhs, zero},
          {builder.getNamedAttr("inputPrecision", dot.getInputPrecisionAttr()),
           builder.getNamedAttr("maxNumImpreciseAcc", dot.getMaxNumImpreciseAccAttr())});
      // (an operand rounded down for the product, attention's p.to(v.dtype):
      // the rounding's own adjoint takes this product unrounded)
      return castFloat(builder, loc, result, operandType.getElementType());
    };
    int rank = cast<RankedTensorType>(g.getType()).getRank();
    if (state.isActive(dot.getA())) {
      Value gInB = castFloat(builder, loc, g, dot.getB().getType().getElementType());
      Value bLive = withoutPaddingOfDeadLines(builder, loc, dot.getB(), b, gInB, rank - 2);
      state.accumulate(builder, dot.getA(),
                       product(gInB, transposeLastTwo(builder, loc, bLive), dot.getA().getType()));
    }
    if (state.isActive(dot.getB())) {
      Value gInA = castFloat(builder, loc, g, dot.getA().getType().getElementType());
      Value aLive = withoutPaddingOfDeadLines(builder, loc, dot.getA(), a, gInA, rank - 1);
      state.accumulate(builder, dot.getB(),
                       product(transposeLastTwo(builder, loc, aLive), gInA, dot.getB().getType()));
    }
    state.accumulate(builder, dot.getC(), g);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// tt.reduce and tt.scan: the combine region decides the rule
//===----------------------------------------------------------------------===//

// Whether every result of the combine region selects, under one shared
// condition, between the lhs and rhs element of its operand: the reduction
// then picks one whole lane (argmax/argmin style).
bool isLaneSelection(Block &block, unsigned numOperands) {
  Value sharedCondition;
  for (unsigned i = 0; i < numOperands; ++i) {
    auto select = block.getTerminator()->getOperand(i).getDefiningOp<arith::SelectOp>();
    if (!select)
      return false;
    Value lhs = block.getArgument(i), rhs = block.getArgument(numOperands + i);
    bool picks = (select.getTrueValue() == lhs && select.getFalseValue() == rhs) ||
                 (select.getTrueValue() == rhs && select.getFalseValue() == lhs);
    if (!picks || (sharedCondition && select.getCondition() != sharedCondition))
      return false;
    sharedCondition = select.getCondition();
  }
  return true;
}

// A reduction that keeps the larger (or smaller) of two values: tl.max / tl.min,
// or a combiner of the user's that selects with a comparison of its operands
// (`tl.where(a > b, a, b)`).
struct Extremum {
  bool isMax;
  bool nanWins;
};
std::optional<Extremum> extremumOf(Block &combine) {
  Operation *combiner = combine.getTerminator()->getOperand(0).getDefiningOp();
  if (matchCombiner<arith::MaxNumFOp, arith::MaximumFOp, arith::MinNumFOp, arith::MinimumFOp>(
          combine, 0, 1))
    return Extremum{isa<arith::MaxNumFOp, arith::MaximumFOp>(combiner),
                    isa<arith::MaximumFOp, arith::MinimumFOp>(combiner)};
  auto select = dyn_cast_or_null<arith::SelectOp>(combiner);
  auto compare = select ? select.getCondition().getDefiningOp<arith::CmpFOp>() : nullptr;
  if (!compare || !isLaneSelection(combine, 1))
    return std::nullopt;
  Value lhs = combine.getArgument(0), rhs = combine.getArgument(1);
  bool comparesInOrder = compare.getLhs() == lhs && compare.getRhs() == rhs;
  if (!comparesInOrder && !(compare.getLhs() == rhs && compare.getRhs() == lhs))
    return std::nullopt;
  using P = arith::CmpFPredicate;
  bool greater;
  switch (compare.getPredicate()) {
  case P::OGT: case P::OGE: case P::UGT: case P::UGE: greater = true; break;
  case P::OLT: case P::OLE: case P::ULT: case P::ULE: greater = false; break;
  default: return std::nullopt;
  }
  // Picks the compared left side when the comparison holds.
  bool picksLeftWhenTrue = select.getTrueValue() == compare.getLhs();
  return Extremum{greater == picksLeftWhenTrue, false};
}

// The dimension along which `value` enumerates distinct indices (a make_range
// expanded, broadcast or offset by a splat), if provable.
std::optional<int64_t> rangeDimension(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (isa<tt::MakeRangeOp>(def))
    return 0;
  if (auto expand = dyn_cast<tt::ExpandDimsOp>(def)) {
    std::optional<int64_t> dim = rangeDimension(expand.getSrc());
    if (!dim)
      return std::nullopt;
    return *dim >= expand.getAxis() ? *dim + 1 : *dim;
  }
  if (auto broadcast = dyn_cast<tt::BroadcastOp>(def))
    return rangeDimension(broadcast.getSrc());
  if (isa<arith::AddIOp, arith::SubIOp>(def)) {
    for (unsigned i = 0; i < 2; ++i) {
      Operation *other = def->getOperand(1 - i).getDefiningOp();
      if (other && isa<tt::SplatOp, arith::ConstantOp>(other))
        if (std::optional<int64_t> dim = rangeDimension(def->getOperand(i)))
          return dim;
    }
  }
  return std::nullopt;
}

// Whether two copies of `value` that Triton computes in different layouts may
// differ in their bits: something in its computation sums in an order that
// depends on the layout (a scan, a reduction, a dot), or a loop or branch
// carries it (conservatively). Elementwise ops on loads are bitwise the same.
bool mayDifferBetweenLayouts(Value value) {
  SmallVector<Value> work{value};
  DenseSet<Value> seen;
  while (!work.empty()) {
    Value current = work.pop_back_val();
    if (!seen.insert(current).second)
      continue;
    Operation *def = current.getDefiningOp();
    if (!def) {
      if (!isa<tt::FuncOp>(cast<BlockArgument>(current).getOwner()->getParentOp()))
        return true;
      continue;
    }
    if (isa<tt::ScanOp, tt::ReduceOp, tt::DotOp>(def) || def->getNumRegions())
      return true;
    llvm::append_range(work, def->getOperands());
  }
  return false;
}

Value exclusiveProduct(OpBuilder &builder, Location loc, Value x, int axis, bool reverse);
Value multiplyFloats(OpBuilder &builder, Value lhs, Value rhs);

bool isSumReduce(tt::ReduceOp reduce) {
  return matchCombiner<arith::AddFOp>(reduce.getCombineOp().front(), 0, 1) != nullptr;
}

struct ReduceModel : public ReverseModeOpInterface::ExternalModel<ReduceModel, tt::ReduceOp> {
  LogicalResult emitAdjoint(Operation *op, OpBuilder &builder, GradientUtils &state) const {
    auto reduce = cast<tt::ReduceOp>(op);
    Block &combine = reduce.getCombineOp().front();
    unsigned n = reduce.getSrcs().size();
    int axis = reduce.getAxis();
    Location loc = op->getLoc();

    bool allSums = true;
    for (unsigned i = 0; i < n; ++i)
      allSums &= matchCombiner<arith::AddFOp>(combine, i, n) != nullptr ||
                 !isDifferentiableType(reduce.getSrcs()[i].getType());
    if (allSums) {
      for (unsigned i = 0; i < n; ++i) {
        Value src = reduce.getSrcs()[i];
        Value g = state.adjoint(reduce.getResult()[i]);
        if (g && state.isActive(src))
          state.accumulate(builder, src,
                           broadcastAlongAxis(builder, loc, g, axis,
                                              cast<RankedTensorType>(src.getType())));
      }
      return success();
    }

    if (std::optional<Extremum> extremum = n == 1 ? extremumOf(combine) : std::nullopt) {
      // tl.max / tl.min: like torch.max(x, dim), the gradient goes to the first
      // element attaining the extremum. Its position comes from one reduction
      // of (value, index) keys, not from comparing floats: Triton may
      // recompute x in two layouts whose values differ in the last bit, and
      // `x == max(x)` on the other copy can then match nothing. Where every
      // copy is bitwise the same (x computed elementwise from loads), and for
      // fp64 (whose bits do not fit a key with the index), the first element
      // equal to the extremum: cheaper, the same element.
      Value src = reduce.getSrcs()[0];
      Value g = state.adjoint(reduce.getResult()[0]);
      if (!g || !state.isActive(src))
        return success();
      bool isMax = extremum->isMax, nanWins = extremum->nanWins;
      auto srcType = cast<RankedTensorType>(src.getType());
      Value indices = indexAlongAxis(builder, loc, srcType, axis);
      Value x = state.forward(src);
      Value chosen;
      if (srcType.getElementType().getIntOrFloatBitWidth() <= 32 &&
          mayDifferBetweenLayouts(src)) {
        chosen = firstExtremumIndex(builder, loc, x, indices, axis, isMax, nanWins);
      } else {
        // (the extremum of this kernel's x: one the forward saved as a
        // residual comes from another kernel, whose rounding of x may differ
        // in the last bit, and then no element would equal it)
        Value forwardExtremum = state.forward(reduce.getResult()[0]);
        if (!forwardExtremum.getDefiningOp<tt::ReduceOp>()) {
          IRMapping onX;
          onX.map(src, x);
          forwardExtremum = builder.clone(*reduce, onX)->getResult(0);
        }
        Value extremum = broadcastAlongAxis(builder, loc, forwardExtremum, axis, srcType);
        Value hits = arith::CmpFOp::create(builder, loc, arith::CmpFPredicate::OEQ, x, extremum);
        chosen = firstIndexWhere(builder, loc, hits, indices, axis);
      }
      Value isChosen = arith::CmpIOp::create(
          builder, loc, arith::CmpIPredicate::eq, indices,
          broadcastAlongAxis(builder, loc, chosen, axis,
                             cast<RankedTensorType>(indices.getType())));
      Value spread = broadcastAlongAxis(builder, loc, g, axis, srcType);
      state.accumulate(builder, src,
                       arith::SelectOp::create(builder, loc, isChosen, spread,
                                               createZero(builder, loc, srcType)));
      return success();
    }

    if (n == 1 && matchCombiner<arith::MulFOp>(combine, 0, 1)) {
      // A product: dx_k = g prod_{i != k} x_i, the exclusive products from
      // both ends (two scans), no division, so zeros in x get torch's finite
      // gradient.
      Value src = reduce.getSrcs()[0];
      Value g = state.adjoint(reduce.getResult()[0]);
      if (!g || !state.isActive(src))
        return success();
      auto srcType = cast<RankedTensorType>(src.getType());
      Value x = state.forward(src);
      Value fromStart = exclusiveProduct(builder, loc, x, axis, false);
      Value fromEnd = exclusiveProduct(builder, loc, x, axis, true);
      Value others = multiplyFloats(builder, fromStart, fromEnd);
      state.accumulate(builder, src,
                       multiplyFloats(builder, broadcastAlongAxis(builder, loc, g, axis, srcType),
                                      others));
      return success();
    }

    if (isLaneSelection(combine, n)) {
      // argmax/argmin style: the gradient goes to the lane whose index the
      // reduction returned; needs an operand that provably enumerates the axis.
      std::optional<unsigned> indexOperand;
      for (unsigned i = 0; i < n; ++i)
        if (rangeDimension(reduce.getSrcs()[i]) == axis)
          indexOperand = i;
      for (unsigned i = 0; i < n; ++i) {
        Value src = reduce.getSrcs()[i];
        Value g = state.adjoint(reduce.getResult()[i]);
        if (!g || !state.isActive(src))
          continue;
        if (!indexOperand)
          return op->emitError("cannot differentiate this selecting tt.reduce: none of its "
                               "operands is a tl.arange index along the reduced axis, so the "
                               "selected element is unknown");
        auto srcType = cast<RankedTensorType>(src.getType());
        Value indices = state.forward(reduce.getSrcs()[*indexOperand]);
        Value chosen = broadcastAlongAxis(builder, loc,
                                          state.forward(reduce.getResult()[*indexOperand]), axis,
                                          cast<RankedTensorType>(indices.getType()));
        Value isChosen = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, indices,
                                               chosen);
        Value spread = broadcastAlongAxis(builder, loc, g, axis, srcType);
        state.accumulate(builder, src,
                         arith::SelectOp::create(builder, loc, isChosen, spread,
                                                 createZero(builder, loc, srcType)));
      }
      return success();
    }

    return emitCombinerReduceAdjoint(reduce, builder, state);
  }
};

Value multiplyFloats(OpBuilder &builder, Value lhs, Value rhs) {
  return arith::MulFOp::create(builder, lhs.getLoc(), lhs, rhs).getResult();
}

// R_k = sum_{j>=k} g_j prod_{k<i<=j} x_i (j, i in scan order): a scan in the
// opposite order over segments (R, product of all but the first, first);
// `one` is a tensor of ones shaped like x.
Value weightedSuffixSum(OpBuilder &builder, Location loc, Value x, Value g, Value one, int axis,
                        bool reverse) {
  return scanWith(builder, loc, {g, one, x}, axis, !reverse,
                  [&](OpBuilder &b, ValueRange after, ValueRange before) {
                    Value bridge = multiplyFloats(b, before[1], after[2]);
                    Value r = arith::AddFOp::create(b, loc, before[0],
                                                    multiplyFloats(b, bridge, after[0]));
                    return SmallVector<Value>{r, multiplyFloats(b, bridge, after[1]), before[2]};
                  })[0];
}

// y_k = prod_{i<=k} x_i (in scan order)  =>  dx_k = E_k * R_k with
// E_k = exclusiveProduct(x) and R_k = weightedSuffixSum(x, g): no division,
// so zeros in x give torch's finite gradient.
Value cumulativeProductAdjoint(OpBuilder &builder, Location loc, Value x, Value g, int axis,
                               bool reverse) {
  // (one statement each: the IR's order must not be the compiler's order of
  // evaluating arguments)
  Value exclusive = exclusiveProduct(builder, loc, x, axis, reverse);
  Value one = createFloatConstant(builder, loc, x.getType(), 1.0);
  Value suffix = weightedSuffixSum(builder, loc, x, g, one, axis, reverse);
  return multiplyFloats(builder, exclusive, suffix);
}

// E_k = prod_{i<k} x_i (in scan order; 1 for the first): a scan over
// segments (product of all but the last, product).
Value exclusiveProduct(OpBuilder &builder, Location loc, Value x, int axis, bool reverse) {
  Value one = createFloatConstant(builder, loc, x.getType(), 1.0);
  return scanWith(builder, loc, {one, x}, axis, reverse,
                  [&](OpBuilder &b, ValueRange earlier, ValueRange later) {
                    return SmallVector<Value>{multiplyFloats(b, earlier[1], later[0]),
                                              multiplyFloats(b, earlier[1], later[1])};
                  })[0];
}

// A first-order linear recurrence h_k = a_k h_{k-1} + b_k as an associative
// scan: the combiner composes affine maps, (a1, b1) then (a2, b2) gives
// (a1 a2, b1 a2 + b2). The operand indices of a and b, if `combine` is that
// (in any operand order of its commutative ops).
std::optional<std::pair<unsigned, unsigned>> matchLinearRecurrence(Block &combine) {
  Operation *terminator = combine.getTerminator();
  if (combine.getNumArguments() != 4 || terminator->getNumOperands() != 2)
    return std::nullopt;
  auto isPair = [](Operation *op, Value x, Value y) {
    return op && op->getNumOperands() == 2 &&
           ((op->getOperand(0) == x && op->getOperand(1) == y) ||
            (op->getOperand(0) == y && op->getOperand(1) == x));
  };
  for (unsigned a = 0; a < 2; ++a) {
    unsigned b = 1 - a;
    Value a1 = combine.getArgument(a), b1 = combine.getArgument(b);
    Value a2 = combine.getArgument(2 + a), b2 = combine.getArgument(2 + b);
    auto product = terminator->getOperand(a).getDefiningOp<arith::MulFOp>();
    auto sum = terminator->getOperand(b).getDefiningOp<arith::AddFOp>();
    if (!product || !sum || !isPair(product, a1, a2))
      continue;
    for (unsigned side = 0; side < 2; ++side) {
      auto scaled = sum->getOperand(side).getDefiningOp<arith::MulFOp>();
      if (sum->getOperand(1 - side) == b2 && isPair(scaled, b1, a2))
        return std::make_pair(a, b);
    }
  }
  return std::nullopt;
}

// The adjoints of h_k = a_k h_{k-1} + b_k (h before the first: 0) given
// g = dL/dh: lambda_k = g_k + a_{k+1} lambda_{k+1} = weightedSuffixSum(a, g)
// (no shift of a needed), db = lambda and da_k = lambda_k h_{k-1}, where
// h_{k-1} comes from a scan over segments (the map without the last element:
// ea, eb; the whole map: a, b).
std::pair<Value, Value> linearRecurrenceAdjoint(OpBuilder &builder, Location loc, Value a,
                                                Value b, Value g, int axis, bool reverse) {
  Value one = createFloatConstant(builder, loc, a.getType(), 1.0);
  Value zero = createZero(builder, loc, a.getType());
  auto affine = [](OpBuilder &bld, Value h, Value scale, Value shift) {
    return arith::AddFOp::create(bld, h.getLoc(), multiplyFloats(bld, h, scale), shift)
        .getResult();
  };
  Value lambda = weightedSuffixSum(builder, loc, a, g, one, axis, reverse);
  Value previous = scanWith(builder, loc, {one, zero, a, b}, axis, reverse,
                            [&](OpBuilder &bld, ValueRange earlier, ValueRange later) {
                              return SmallVector<Value>{
                                  multiplyFloats(bld, earlier[2], later[0]),
                                  affine(bld, earlier[3], later[0], later[1]),
                                  multiplyFloats(bld, earlier[2], later[2]),
                                  affine(bld, earlier[3], later[2], later[3])};
                            })[1];
  return {multiplyFloats(builder, lambda, previous), lambda};
}

struct ScanModel : public ReverseModeOpInterface::ExternalModel<ScanModel, tt::ScanOp> {
  LogicalResult emitAdjoint(Operation *op, OpBuilder &builder, GradientUtils &state) const {
    auto scan = cast<tt::ScanOp>(op);
    Block &combine = scan.getCombineOp().front();
    unsigned n = scan.getSrcs().size();
    int axis = scan.getAxis();
    bool reverse = scan.getReverse();
    Location loc = op->getLoc();
    if (auto recurrence = matchLinearRecurrence(combine)) {
      auto [ia, ib] = *recurrence;
      Value a = scan.getSrcs()[ia], b = scan.getSrcs()[ib];
      // The coefficients' running product (result ia) is a cumulative product.
      if (Value gProduct = state.adjoint(scan.getResult()[ia]); gProduct && state.isActive(a))
        state.accumulate(builder, a,
                         cumulativeProductAdjoint(builder, loc, state.forward(a), gProduct, axis,
                                                  reverse));
      if (Value g = state.adjoint(scan.getResult()[ib])) {
        auto [da, db] = linearRecurrenceAdjoint(builder, loc, state.forward(a), state.forward(b),
                                                g, axis, reverse);
        if (state.isActive(a))
          state.accumulate(builder, a, da);
        if (state.isActive(b))
          state.accumulate(builder, b, db);
      }
      return success();
    }
    for (unsigned i = 0; i < n; ++i) {
      Value src = scan.getSrcs()[i];
      Value g = state.adjoint(scan.getResult()[i]);
      if (!g || !state.isActive(src))
        continue;
      if (matchCombiner<arith::AddFOp>(combine, i, n)) {
        // y_j = sum_{k<=j} x_k  =>  dx_k = sum_{j>=k} g_j.
        state.accumulate(builder, src, cumulativeSum(builder, loc, g, axis, !reverse));
        continue;
      }
      if (matchCombiner<arith::MulFOp>(combine, i, n)) {
        state.accumulate(builder, src,
                         cumulativeProductAdjoint(builder, loc, state.forward(src), g, axis,
                                                  reverse));
        continue;
      }
      InFlightDiagnostic diag = op->emitError(
          "cannot differentiate tt.scan: its combine region is not a sum, a product or a "
          "first-order linear recurrence ((a1, b1), (a2, b2)) -> (a1 * a2, b1 * a2 + b2)");
      for (Operation &inner : combine.without_terminator())
        diag.attachNote(inner.getLoc()) << "combine region op: " << inner.getName();
      return diag;
    }
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Memory: the driver owns the shadows and chooses how each access's gradient
// moves (plain, atomic, partial buffer; see KernelBackward.cpp)
//===----------------------------------------------------------------------===//

/// A load through a shadowed pointer: its result's adjoint is accumulated
/// into the shadow, at the same addresses under the same mask.
struct LoadModel : public ReverseModeOpInterface::ExternalModel<LoadModel, tt::LoadOp> {
  bool needsAdjoint(Operation *op, const GradientUtils &gutils) const {
    auto load = cast<tt::LoadOp>(op);
    return (gutils.driver() && gutils.driver()->isShadowed(load.getPtr())) ||
           readsDifferentiatedOther(load, gutils);
  }
  LogicalResult emitAdjoint(Operation *op, OpBuilder &builder, GradientUtils &gutils) const {
    auto load = cast<tt::LoadOp>(op);
    // The lanes the mask turns off read `other`: theirs is its adjoint
    // (`tl.load(x + offs, mask=m, other=w)` pads with a differentiated w).
    if (readsDifferentiatedOther(load, gutils))
      if (Value g = gutils.adjoint(load.getResult())) {
        Location loc = op->getLoc();
        Value off = gutils.forward(load.getMask());
        // (an adjoint just rounded down from f32, a half-precision load widened
        // for the math, is selected unrounded and rounded after: the rounding
        // of `other` to the load's type takes the unrounded lanes back)
        auto rounded = g.getDefiningOp<arith::TruncFOp>();
        Value lanes = rounded ? rounded.getIn() : g;
        Value padding = arith::SelectOp::create(builder, loc, off,
                                                createZero(builder, loc, lanes.getType()), lanes);
        if (rounded)
          padding = arith::TruncFOp::create(builder, loc, g.getType(), padding);
        gutils.accumulate(builder, load.getOther(), padding);
      }
    if (gutils.driver() && gutils.driver()->isShadowed(load.getPtr()))
      return gutils.driver()->emitLoadAdjoint(builder, op, gutils);
    return success();
  }
  // (without a mask every lane reads memory: `other` is never read)
  static bool readsDifferentiatedOther(tt::LoadOp load, const GradientUtils &gutils) {
    return load.getMask() && load.getOther() && gutils.isActive(load.getOther());
  }
  LogicalResult verifyDifferentiable(Operation *op, const GradientUtils &gutils) const {
    if (gutils.driver())
      return success();
    return op->emitError("cannot differentiate a load in a device function: memory has no "
                         "shadow there; differentiate the kernel that loads it");
  }
};

/// A store through a shadowed pointer: the stored value's adjoint is read
/// from the shadow (the upstream gradient).
struct StoreModel : public ReverseModeOpInterface::ExternalModel<StoreModel, tt::StoreOp> {
  bool needsAdjoint(Operation *op, const GradientUtils &gutils) const {
    return gutils.driver() && gutils.driver()->isShadowed(cast<tt::StoreOp>(op).getPtr());
  }
  bool passesGradientWithoutResults(Operation *op, const GradientUtils &gutils) const {
    return gutils.isActive(cast<tt::StoreOp>(op).getValue()) ||
           (gutils.driver() && gutils.driver()->overwritesEarlierStore(op));
  }
  LogicalResult emitAdjoint(Operation *op, OpBuilder &builder, GradientUtils &gutils) const {
    return gutils.driver()->emitStoreAdjoint(builder, op, gutils);
  }
};

/// An atomic add through a shadowed pointer (the kernel driver accepts
/// float adds only): the added value's adjoint is read from the shadow.
struct AtomicAddModel
    : public ReverseModeOpInterface::ExternalModel<AtomicAddModel, tt::AtomicRMWOp> {
  bool needsAdjoint(Operation *op, const GradientUtils &gutils) const {
    return gutils.driver() && gutils.driver()->isShadowed(cast<tt::AtomicRMWOp>(op).getPtr());
  }
  bool passesGradientWithoutResults(Operation *op, const GradientUtils &gutils) const {
    return gutils.isActive(cast<tt::AtomicRMWOp>(op).getVal());
  }
  LogicalResult emitAdjoint(Operation *op, OpBuilder &builder, GradientUtils &gutils) const {
    return gutils.driver()->emitStoreAdjoint(builder, op, gutils);
  }
  LogicalResult verifyDifferentiable(Operation *op, const GradientUtils &gutils) const {
    if (gutils.driver())
      return success();
    return op->emitError("cannot differentiate an atomic in a device function: memory has no "
                         "shadow there; differentiate the kernel that updates it");
  }
};

} // namespace

void tritonad::registerTritonReverseModeRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, tt::TritonDialect *) {
    tritonElementwiseRules().attach(context);
    tt::ExternElementwiseOp::attachInterface<ExternElementwiseModel>(*context);
    tt::SplatOp::attachInterface<SplatModel>(*context);
    tt::BroadcastOp::attachInterface<BroadcastModel>(*context);
    tt::ExpandDimsOp::attachInterface<ExpandDimsModel>(*context);
    tt::ReshapeOp::attachInterface<ReshapeModel>(*context);
    tt::TransOp::attachInterface<TransModel>(*context);
    tt::FpToFpOp::attachInterface<FpToFpModel>(*context);
    tt::JoinOp::attachInterface<JoinModel>(*context);
    tt::SplitOp::attachInterface<SplitModel>(*context);
    tt::CatOp::attachInterface<CatModel>(*context);
    attachGatherRule(context);
    tt::DotOp::attachInterface<DotModel>(*context);
    tt::ReduceOp::attachInterface<ReduceModel>(*context);
    tt::ScanOp::attachInterface<ScanModel>(*context);
    tt::LoadOp::attachInterface<LoadModel>(*context);
    tt::StoreOp::attachInterface<StoreModel>(*context);
    tt::AtomicRMWOp::attachInterface<AtomicAddModel>(*context);
    tt::BitcastOp::attachInterface<BitcastModel<tt::BitcastOp>>(*context);
  });
}
