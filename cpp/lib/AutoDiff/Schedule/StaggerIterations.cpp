#include "tritonad/AutoDiff/StaggerIterations.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

// The grid axes whose program ids `value` is computed from (through any op,
// regions included: an over-approximation only loses staggering).
std::array<bool, 3> programAxesOf(Value value) {
  std::array<bool, 3> axes = {false, false, false};
  SmallVector<Value> worklist = {value};
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value next = worklist.pop_back_val();
    Operation *def = next.getDefiningOp();
    if (!def || !seen.insert(next).second)
      continue;
    if (auto pid = dyn_cast<tt::GetProgramIdOp>(def)) {
      axes[static_cast<int>(pid.getAxis())] = true;
      continue;
    }
    def->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        worklist.push_back(operand);
    });
  }
  return axes;
}

// Carried value `j` of `loop` is a sum: `acc + term` or `dot(a, b, acc)`,
// read nowhere else.
bool isSum(scf::ForOp loop, unsigned j) {
  BlockArgument acc = loop.getRegionIterArgs()[j];
  Value next = loop.getBody()->getTerminator()->getOperand(j);
  Operation *update = next.getDefiningOp();
  if (!update || update->getBlock() != loop.getBody() || !acc.hasOneUse() ||
      acc.getUses().begin()->getOwner() != update || !next.hasOneUse())
    return false;
  if (auto add = dyn_cast<arith::AddFOp>(update))
    return (add.getLhs() == acc) != (add.getRhs() == acc);
  if (auto dot = dyn_cast<tt::DotOp>(update))
    return dot.getC() == acc && dot.getA() != acc && dot.getB() != acc;
  return false;
}

// Carried value `j` of `loop` feeds only its own next value and the loop's
// result is unused (a pointer the forward advanced, now computed from the
// induction variable): its per-iteration values are never read.
bool isDeadRecurrence(scf::ForOp loop, unsigned j) {
  if (!loop.getResult(j).use_empty())
    return false;
  Operation *yield = loop.getBody()->getTerminator();
  SmallVector<Value> worklist = {loop.getRegionIterArgs()[j]};
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (user == yield) {
        if (use.getOperandNumber() != j)
          return false;
        continue;
      }
      if (user->getBlock() != loop.getBody() || user->getNumRegions() != 0 ||
          !isMemoryEffectFree(user))
        return false;
      for (Value result : user->getResults())
        worklist.push_back(result);
    }
  }
  return true;
}

Value castTo(OpBuilder &builder, Location loc, Value value, Type type) {
  if (value.getType() == type)
    return value;
  if (cast<IntegerType>(value.getType()).getWidth() < cast<IntegerType>(type).getWidth())
    return arith::ExtSIOp::create(builder, loc, type, value);
  return arith::TruncIOp::create(builder, loc, type, value);
}

// (n - 1 - t + r) mod n in place of iteration t, r the sum of the program
// ids along `axes`.
void rotateReversed(scf::ForOp loop, const std::array<bool, 3> &axes) {
  Value iv = loop.getInductionVar();
  Type type = iv.getType();
  Location loc = loop.getLoc();
  OpBuilder builder = OpBuilder::atBlockBegin(loop.getBody());
  Value lower = loop.getLowerBound(), upper = loop.getUpperBound(), step = loop.getStep();
  auto constant = [&](int64_t value) {
    return arith::ConstantOp::create(builder, loc, builder.getIntegerAttr(type, value));
  };
  Value one = constant(1);
  // (inside the body the loop runs, so n >= 1 and 0 <= t < n)
  Value span = arith::SubIOp::create(builder, loc, upper, lower);
  Value trips = arith::DivSIOp::create(
      builder, loc,
      arith::AddIOp::create(builder, loc, span, arith::SubIOp::create(builder, loc, step, one)),
      step);
  Value offset = arith::SubIOp::create(builder, loc, iv, lower);
  Value t = arith::DivSIOp::create(builder, loc, offset, step);
  Value r;
  for (int axis = 0; axis < 3; ++axis) {
    if (!axes[axis])
      continue;
    Value pid = tt::GetProgramIdOp::create(
        builder, loc, builder.getI32Type(),
        tt::ProgramIDDimAttr::get(builder.getContext(), static_cast<tt::ProgramIDDim>(axis)));
    pid = castTo(builder, loc, pid, type);
    r = r ? arith::AddIOp::create(builder, loc, r, pid).getResult() : pid;
  }
  Value start = arith::RemSIOp::create(builder, loc, r, trips);
  Value last = arith::SubIOp::create(builder, loc, trips, one);
  Value rotated = arith::RemSIOp::create(
      builder, loc,
      arith::AddIOp::create(builder, loc, arith::SubIOp::create(builder, loc, last, t), start),
      trips);
  Value staggered = arith::AddIOp::create(
      builder, loc, lower, arith::MulIOp::create(builder, loc, rotated, step));
  iv.replaceUsesWithIf(staggered,
                       [&](OpOperand &use) { return use.getOwner() != offset.getDefiningOp(); });
}

// The axes along which `loop`'s atomic adds reach addresses other programs
// also reach: those their addresses do not depend on, of the axes the
// forward reads (its mark lists them; along another one, programs are copies
// of the first).
std::array<bool, 3> sharedAxes(scf::ForOp loop) {
  std::array<bool, 3> read = {false, false, false};
  if (auto axes = loop->getAttrOfType<DenseI32ArrayAttr>(kIndependentIterations))
    for (int32_t axis : axes.asArrayRef())
      if (axis >= 0 && axis < 3)
        read[axis] = true;
  std::array<bool, 3> shared = {false, false, false};
  loop.getBody()->walk([&](tt::AtomicRMWOp atomic) {
    std::array<bool, 3> used = programAxesOf(atomic.getPtr());
    for (int axis = 0; axis < 3; ++axis)
      shared[axis] |= read[axis] && !used[axis];
  });
  return shared;
}

} // namespace

unsigned staggerIterations(tt::FuncOp kernel, bool enable,
                           llvm::function_ref<void(Operation *, StringRef)> staggered) {
  SmallVector<scf::ForOp> marked;
  kernel.walk([&](scf::ForOp loop) {
    if (loop->hasAttr(kIndependentIterations))
      marked.push_back(loop);
  });
  unsigned rewritten = 0;
  for (scf::ForOp loop : marked) {
    std::array<bool, 3> axes = sharedAxes(loop);
    loop->removeAttr(kIndependentIterations);
    if (!enable || !isa<IntegerType>(loop.getInductionVar().getType()))
      continue;
    if (!llvm::is_contained(axes, true))
      continue;
    bool orderFree = true;
    for (unsigned j = 0; j < loop.getNumRegionIterArgs(); ++j)
      orderFree &= isSum(loop, j) || isDeadRecurrence(loop, j);
    if (!orderFree)
      continue;
    rotateReversed(loop, axes);
    ++rewritten;
    if (!staggered)
      continue;
    std::string along;
    for (int axis = 0; axis < 3; ++axis)
      if (axes[axis])
        along += (along.empty() ? "program_id(" : " + program_id(") + std::to_string(axis) + ")";
    staggered(loop, "staggered: each program runs the iterations last to first from a start "
                    "rotated by " +
                        along +
                        ", so that programs adding atomically into the same addresses reach "
                        "different ones at each step");
  }
  return rewritten;
}

} // namespace tritonad
