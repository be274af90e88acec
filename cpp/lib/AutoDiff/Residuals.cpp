#include "tritonad/AutoDiff/Residuals.h"

#include "TensorBuilders.h"

#include "tritonad/AutoDiff/KernelBackward.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {

namespace {

constexpr const char *kResidualAttr = "tritonad.residual";

bool savable(Type type) {
  if (isa<ShapedType>(type) && !isa<RankedTensorType>(type))
    return false;
  Type element = getElementTypeOrSelf(type);
  return element.isIntOrFloat() && !element.isInteger(1);
}

// The name Triton gave the value (its Python variable), if any.
std::string valueName(Location loc) {
  std::string name;
  loc->walk([&](Location nested) {
    if (auto named = dyn_cast<NameLoc>(nested)) {
      name = named.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name;
}

// The byte pointer of this program's region. Programs are linearized over the
// axes the forward reads, x + nx * (y + ny * z) (in i64): programs that differ
// only on an axis it ignores compute the same values, and share a region.
Value programRegion(OpBuilder &builder, Location loc, tt::FuncOp prepared, Value base,
                    int64_t bytesPerProgram) {
  std::array<bool, 3> used = {false, false, false};
  prepared.walk([&](tt::GetProgramIdOp pid) { used[static_cast<int>(pid.getAxis())] = true; });
  Value linear = linearProgramId(builder, loc, used);
  if (!linear)
    return base;
  Value bytes = arith::ConstantOp::create(builder, loc, builder.getI64IntegerAttr(bytesPerProgram));
  Value offset = arith::MulIOp::create(builder, loc, linear, bytes);
  return tt::AddPtrOp::create(builder, loc, base.getType(), base, offset);
}

Value residualAddress(OpBuilder &builder, Location loc, Value region, int64_t offset, Type type) {
  std::optional<TapeSlot> slot = tapeSlotFor(type);
  Value bytes = arith::ConstantOp::create(builder, loc, builder.getI64IntegerAttr(offset));
  return tapeAddress(builder, loc, region, bytes, type, *slot);
}

} // namespace

// A backward and a forward compiled from different code never agree on a layout.
std::string forwardFingerprint(tt::FuncOp prepared) {
  std::string text;
  llvm::raw_string_ostream os(text);
  prepared->print(os, OpPrintingFlags().useLocalScope());
  // (xxh3: the same in every process; llvm::hash_value is seeded per process
  // where LLVM's ABI-breaking checks are on, and a forward in Triton's cache
  // may come from another process than its backward)
  return llvm::utohexstr(llvm::xxh3_64bits(text));
}

SmallVector<Operation *> residualCandidates(tt::FuncOp prepared) {
  SmallVector<Operation *> candidates;
  for (Operation &op : prepared.getBody().front().without_terminator())
    // (a result that cannot be saved must be unused: a loop's pointer that
    // advanced with it, which the recompute then does not need)
    if (isa<tt::ReduceOp, scf::ForOp, scf::WhileOp>(op) &&
        llvm::any_of(op.getResultTypes(), savable) &&
        llvm::all_of(op.getResults(),
                     [](Value result) { return savable(result.getType()) || result.use_empty(); }))
      candidates.push_back(&op);
  return candidates;
}

ResidualLayout layoutResiduals(tt::FuncOp prepared, ArrayRef<unsigned> chosen,
                              StringRef forward) {
  SmallVector<Operation *> candidates = residualCandidates(prepared);
  ResidualLayout layout;
  layout.forward = forward.str();
  std::string described = forward.str();
  for (unsigned index : chosen) {
    Operation *op = candidates[index];
    ResidualLayout::Entry entry;
    entry.candidate = index;
    for (Type type : op->getResultTypes()) {
      if (!savable(type)) {
        entry.offsets.push_back(-1);
        continue;
      }
      entry.offsets.push_back(layout.bytesPerProgram);
      layout.bytesPerProgram += (tapeSlotFor(type)->bytes + 15) / 16 * 16;
    }
    entry.name = valueName(op->getLoc());
    if (entry.name.empty())
      entry.name = op->getName().getStringRef().str();
    entry.location = locationText(op->getLoc());
    described += ";" + std::to_string(index);
    for (int64_t offset : entry.offsets)
      described += "@" + std::to_string(offset);
    layout.entries.push_back(std::move(entry));
  }
  described += ";" + std::to_string(layout.bytesPerProgram);
  layout.fingerprint = described;
  return layout;
}

namespace {

// Calls `visit(builder, op, result, address)` for each result of each op of
// `layout`, its address in this program's region of `base`; the builder is
// placed before the op when `before`, else after it.
void forEachResidual(tt::FuncOp prepared, Value base, const ResidualLayout &layout, bool before,
                     llvm::function_ref<void(OpBuilder &, const ResidualLayout::Entry &,
                                             Value result, Value address)>
                         visit) {
  if (layout.empty())
    return;
  SmallVector<Operation *> candidates = residualCandidates(prepared);
  OpBuilder builder = OpBuilder::atBlockBegin(&prepared.getBody().front());
  Value region = programRegion(builder, prepared.getLoc(), prepared, base, layout.bytesPerProgram);
  for (const ResidualLayout::Entry &entry : layout.entries) {
    Operation *op = candidates[entry.candidate];
    if (before)
      builder.setInsertionPoint(op);
    else
      builder.setInsertionPointAfter(op);
    for (auto [result, offset] : llvm::zip_equal(op->getResults(), entry.offsets))
      if (offset >= 0)
        visit(builder, entry, result,
              residualAddress(builder, op->getLoc(), region, offset, result.getType()));
  }
}

} // namespace

Residuals insertResidualLoads(tt::FuncOp prepared, Value base, const ResidualLayout &layout) {
  Residuals loads;
  forEachResidual(prepared, base, layout, /*before=*/true,
                  [&](OpBuilder &builder, const ResidualLayout::Entry &entry, Value result,
                      Value address) {
                    Value loaded = createLoad(builder, result.getLoc(), address, Value(), Value());
                    loaded.getDefiningOp()->setAttr(kResidualAttr,
                                                    builder.getI32IntegerAttr(entry.candidate));
                    Operation *op = result.getDefiningOp();
                    auto &values = loads[op];
                    values.resize(op->getNumResults()); // (null: a result not saved)
                    values[cast<OpResult>(result).getResultNumber()] = loaded;
                  });
  return loads;
}

void insertResidualStores(tt::FuncOp prepared, Value base, const ResidualLayout &layout) {
  forEachResidual(prepared, base, layout, /*before=*/false,
                  [](OpBuilder &builder, const ResidualLayout::Entry &, Value result,
                     Value address) {
                    createStore(builder, result.getLoc(), address, result, Value());
                  });
}

void unmarkResidualLoads(Operation *root) {
  root->walk([](Operation *op) { op->removeAttr(kResidualAttr); });
}

std::optional<unsigned> residualIndex(Operation *op) {
  if (auto index = op->getAttrOfType<IntegerAttr>(kResidualAttr))
    return static_cast<unsigned>(index.getInt());
  return std::nullopt;
}

std::vector<ScheduleEntry> describeResiduals(const ResidualLayout &layout) {
  std::vector<ScheduleEntry> entries;
  for (const ResidualLayout::Entry &saved : layout.entries) {
    ScheduleEntry entry;
    entry.kind = ScheduleEntry::Kind::Residual;
    entry.subject = saved.name;
    entry.location = saved.location;
    entry.strategy = Strategy::Saved;
    entry.how = "saved by the forward (" + std::to_string(layout.bytesPerProgram) +
                " bytes of residuals per program, all values), read instead of recomputed";
    entries.push_back(std::move(entry));
  }
  return entries;
}

} // namespace tritonad
