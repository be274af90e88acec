#include "tritonad/Analysis/Padding.h"

#include "tritonad/Dialect/Triton/Dialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace {

bool holdsNonFiniteConstant(Value value) {
  DenseFPElementsAttr constant;
  if (!matchPattern(value, m_Constant(&constant)))
    return false;
  return llvm::any_of(constant.getValues<APFloat>(),
                      [](const APFloat &v) { return !v.isFinite(); });
}

// Device-library functions (tt.extern_elementwise, by symbol without `__nv_`
// and a float variant's `f`) that keep finite values finite, as their math ops.
bool isFiniteLibdeviceCall(Operation *op) {
  auto call = dyn_cast<tt::ExternElementwiseOp>(op);
  if (!call)
    return false;
  static const llvm::StringSet<> finite = {
      "exp", "fast_exp", "exp2", "exp10", "expm1", "sin", "cos", "tan", "tanh", "sinh", "cosh",
      "atan", "asinh", "erf", "erfc", "fabs", "floor", "ceil", "trunc", "round", "rint",
      "fma"};
  StringRef symbol = call.getSymbol();
  symbol.consume_front("__nv_");
  return finite.contains(symbol) ||
         (symbol.ends_with("f") && finite.contains(symbol.drop_back()));
}

// Ops that can make a non-finite value of a finite one in a padded lane
// (log(0), x / 0, rsqrt(0), pow(0, -1)); anything not known to keep finite
// values finite counts as one.
bool keepsFiniteLanesFinite(Operation *op) {
  if (isFiniteLibdeviceCall(op))
    return true;
  return isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::NegFOp, arith::MaxNumFOp,
             arith::MinNumFOp, arith::MaximumFOp, arith::MinimumFOp, arith::SelectOp,
             arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp, arith::CmpFOp,
             arith::ConstantOp, math::ExpOp, math::Exp2Op, math::ExpM1Op, math::TanhOp, math::SinOp,
             math::CosOp, math::TanOp, math::ErfOp, math::AbsFOp, math::FmaOp, math::FloorOp,
             math::CeilOp, math::TruncOp, math::RoundOp, math::RoundEvenOp, math::CopySignOp,
             tt::BroadcastOp, tt::ExpandDimsOp, tt::ReshapeOp, tt::TransOp, tt::JoinOp,
             tt::SplitOp, tt::ReduceOp, tt::ScanOp, tt::DotOp, tt::ClampFOp>(op);
}

class PaddingWalk {
public:
  bool mayHold(Value value) {
    if (tritonad::isLaneUniform(value))
      return false;
    auto [it, inserted] = known.try_emplace(value, false); // a cycle: decided elsewhere
    if (!inserted)
      return it->second;
    bool result = compute(value);
    known[value] = result;
    return result;
  }

private:
  bool compute(Value value) {
    if (auto arg = dyn_cast<BlockArgument>(value))
      return fromBlockArgument(arg);
    Operation *op = value.getDefiningOp();
    if (holdsNonFiniteConstant(value))
      return true;
    if (auto load = dyn_cast<tt::LoadOp>(op)) {
      if (load.getPadding() && *load.getPadding() == tt::PaddingOption::PAD_NAN)
        return true;
      return load.getOther() && mayHold(load.getOther());
    }
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      unsigned i = cast<OpResult>(value).getResultNumber();
      return mayHold(loop.getInitArgs()[i]) || mayHold(loop.getYieldedValues()[i]);
    }
    if (auto branch = dyn_cast<scf::IfOp>(op)) {
      unsigned i = cast<OpResult>(value).getResultNumber();
      for (Region *region : {&branch.getThenRegion(), &branch.getElseRegion()})
        if (!region->empty() &&
            mayHold(region->front().getTerminator()->getOperand(i)))
          return true;
      return false;
    }
    // x / y: a padded zero of y's makes inf; a uniform y has no padding.
    if (auto divide = dyn_cast<arith::DivFOp>(op))
      return mayHold(divide.getLhs()) || !tritonad::isLaneUniform(divide.getRhs());
    if (!keepsFiniteLanesFinite(op))
      return true;
    for (Value operand : op->getOperands())
      if (isa<FloatType>(getElementTypeOrSelf(operand.getType())) && mayHold(operand))
        return true;
    // A reduction or scan's combiner may divide (a logsumexp combiner).
    bool unknownInside = false;
    op->walk([&](Operation *inner) {
      if (inner != op && !inner->hasTrait<OpTrait::IsTerminator>() &&
          !keepsFiniteLanesFinite(inner))
        unknownInside = true;
    });
    return unknownInside;
  }

  // A loop's carried value holds what its start or its iterations put there;
  // a while loop's state may hold anything. A device function's arguments are
  // its caller's values: padding they hold is the caller's to clear (the
  // kernel the function VJP is called from has the mask).
  bool fromBlockArgument(BlockArgument arg) {
    Operation *owner = arg.getOwner()->getParentOp(); // null: a rule's scratch block
    if (owner && isa<tt::FuncOp>(owner))
      return false;
    auto loop = dyn_cast_or_null<scf::ForOp>(owner);
    if (!loop)
      return isa<FloatType>(getElementTypeOrSelf(arg.getType()));
    if (arg == loop.getInductionVar())
      return false;
    unsigned i = arg.getArgNumber() - loop.getNumInductionVars();
    return mayHold(loop.getInitArgs()[i]) || mayHold(loop.getYieldedValues()[i]);
  }

  llvm::DenseMap<Value, bool> known;
};

} // namespace

bool tritonad::isLaneUniform(Value value) {
  return !isa<RankedTensorType>(value.getType()) || value.getDefiningOp<tt::SplatOp>();
}

bool tritonad::mayHoldNonFinitePadding(Value value) { return PaddingWalk().mayHold(value); }
