#include "tritonad/AutoDiff/FullMasks.h"

#include "tritonad/Analysis/MaskBounds.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

constexpr const char *kFullMaskMark = "tritonad.full_mask";
constexpr int kMaxDepth = 32;

// Ops through which a mask is true everywhere when its operands are: a
// conjunction, and reshapes of the lanes.
bool passesTruth(Operation *op) {
  return isa<arith::AndIOp, tt::BroadcastOp, tt::ExpandDimsOp, tt::SplatOp, tt::ReshapeOp,
             tt::TransOp>(op);
}

void collectComparisons(Value mask, llvm::SetVector<arith::CmpIOp> &comparisons,
                        int depth = 0) {
  Operation *def = mask ? mask.getDefiningOp() : nullptr;
  if (!def || depth > kMaxDepth)
    return;
  if (auto cmp = dyn_cast<arith::CmpIOp>(def)) {
    comparisons.insert(cmp);
    return;
  }
  if (passesTruth(def))
    for (Value operand : def->getOperands())
      collectComparisons(operand, comparisons, depth + 1);
}

bool alwaysTrue(Value mask, int depth = 0) {
  if (matchPattern(mask, m_One()))
    return true;
  Operation *def = mask.getDefiningOp();
  if (!def || depth > kMaxDepth || !passesTruth(def))
    return false;
  return llvm::all_of(def->getOperands(),
                      [&](Value operand) { return alwaysTrue(operand, depth + 1); });
}

Value maskOf(Operation *op) {
  return TypeSwitch<Operation *, Value>(op)
      .Case<tt::LoadOp, tt::StoreOp, tt::AtomicRMWOp>([](auto access) { return access.getMask(); })
      .Default([](Operation *) { return Value(); });
}

} // namespace

std::optional<SymbolicInt>
markFullMasks(tt::FuncOp kernel,
              llvm::function_ref<void(Operation *, const SymbolicInt &)> marked) {
  llvm::SetVector<arith::CmpIOp> comparisons;
  kernel.walk([&](Operation *op) { collectComparisons(maskOf(op), comparisons); });
  std::optional<SymbolicInt> all;
  llvm::StringSet<> seen;
  for (arith::CmpIOp cmp : comparisons) {
    std::optional<SymbolicInt> condition = alwaysTrueCondition(cmp);
    if (!condition)
      continue;
    cmp->setAttr(kFullMaskMark, UnitAttr::get(cmp.getContext()));
    if (marked)
      marked(cmp, *condition);
    if (!seen.insert(symbolicText(*condition)).second)
      continue;
    all = all ? SymbolicInt::of(SymbolicInt::Op::And, {std::move(*all), std::move(*condition)})
              : std::move(*condition);
  }
  return all;
}

bool specializeFullMasks(tt::FuncOp kernel, bool full) {
  SmallVector<arith::CmpIOp> marked;
  kernel.walk([&](arith::CmpIOp cmp) {
    if (cmp->removeAttr(kFullMaskMark))
      marked.push_back(cmp);
  });
  if (!full || marked.empty())
    return false;
  for (arith::CmpIOp cmp : marked) {
    OpBuilder b(cmp);
    Type type = cmp.getType();
    TypedAttr truth = isa<RankedTensorType>(type)
                          ? TypedAttr(DenseElementsAttr::get(cast<ShapedType>(type), true))
                          : TypedAttr(b.getBoolAttr(true));
    Value constant = arith::ConstantOp::create(b, cmp.getLoc(), type, truth);
    cmp.replaceAllUsesWith(constant);
    cmp.erase();
  }
  kernel.walk([&](Operation *op) {
    Value mask = maskOf(op);
    if (!mask || !alwaysTrue(mask))
      return;
    if (auto load = dyn_cast<tt::LoadOp>(op)) {
      load.getOtherMutable().clear();
      load.getMaskMutable().clear();
    } else if (auto store = dyn_cast<tt::StoreOp>(op)) {
      store.getMaskMutable().clear();
    } else if (auto atomic = dyn_cast<tt::AtomicRMWOp>(op)) {
      atomic.getMaskMutable().clear();
    }
  });
  return true;
}

} // namespace tritonad
