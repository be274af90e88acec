#include "tritonad/AutoDiff/PointerInduction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

bool isConstantInt(Value value, int64_t expected) {
  APInt result;
  return matchPattern(value, m_ConstantInt(&result)) && result.getSExtValue() == expected;
}

Value toI64(OpBuilder &builder, Location loc, Value value) {
  Type type = builder.getI64Type();
  if (auto tensor = dyn_cast<RankedTensorType>(value.getType()))
    type = tensor.clone(builder.getI64Type());
  if (value.getType() == type)
    return value;
  return arith::ExtSIOp::create(builder, loc, type, value);
}

// The zero-based iteration number of `loop`'s current iteration, as i64.
Value iterationNumber(OpBuilder &builder, scf::ForOp loop) {
  Location loc = loop.getLoc();
  Value iv = loop.getInductionVar();
  if (!isa<IntegerType>(iv.getType()))
    return {};
  Value count = toI64(builder, loc, iv);
  // The usual `for k in range(0, n)` needs no arithmetic (and keeps the
  // address affine in k for the access analysis).
  if (!isConstantInt(loop.getLowerBound(), 0))
    count = arith::SubIOp::create(builder, loc, count,
                                  toI64(builder, loc, loop.getLowerBound()));
  if (!isConstantInt(loop.getStep(), 1))
    count = arith::DivSIOp::create(builder, loc, count, toI64(builder, loc, loop.getStep()));
  return count;
}

// iteration * step, shaped like `step` (i64 elements: the forward advanced a
// 64-bit pointer, so the product must not wrap at 32 bits).
Value scaledStep(OpBuilder &builder, Location loc, Value iteration, Value step) {
  if (auto splat = step.getDefiningOp<tt::SplatOp>()) {
    Value scalar = arith::MulIOp::create(builder, loc, iteration,
                                         toI64(builder, loc, splat.getSrc()));
    auto type = cast<RankedTensorType>(step.getType()).clone(builder.getI64Type());
    return tt::SplatOp::create(builder, loc, type, scalar);
  }
  if (auto tensor = dyn_cast<RankedTensorType>(step.getType())) {
    Value splatted = tt::SplatOp::create(builder, loc, tensor.clone(builder.getI64Type()),
                                         iteration);
    return arith::MulIOp::create(builder, loc, splatted, toI64(builder, loc, step));
  }
  return arith::MulIOp::create(builder, loc, iteration, toI64(builder, loc, step));
}

// The carried pointer whose next value is `addptr(carried, step)` (step
// not yet checked for invariance), if any.
tt::AddPtrOp pointerAdvance(scf::ForOp loop, unsigned j) {
  BlockArgument carried = loop.getRegionIterArgs()[j];
  if (!isa<tt::PointerType>(getElementTypeOrSelf(carried.getType())))
    return {};
  auto advance = loop.getBody()->getTerminator()->getOperand(j).getDefiningOp<tt::AddPtrOp>();
  if (!advance || advance.getPtr() != carried || advance->getBlock() != loop.getBody())
    return {};
  return advance;
}

unsigned rewriteLoop(scf::ForOp loop) {
  unsigned rewritten = 0;
  Block *body = loop.getBody();
  bool any = false;
  for (unsigned j = 0; j < loop.getNumRegionIterArgs(); ++j)
    any |= static_cast<bool>(pointerAdvance(loop, j));
  if (!any)
    return 0;
  // `ptrs += BLOCK_K * stride` computes its step inside the body.
  moveLoopInvariantCode(cast<LoopLikeOpInterface>(loop.getOperation()));
  OpBuilder builder = OpBuilder::atBlockBegin(body);
  Value iteration;
  for (auto [j, carried] : llvm::enumerate(loop.getRegionIterArgs())) {
    tt::AddPtrOp advance = pointerAdvance(loop, j);
    if (!advance || !loop.isDefinedOutsideOfLoop(advance.getOffset()))
      continue;
    if (!iteration && !(iteration = iterationNumber(builder, loop)))
      return rewritten;
    Location loc = advance.getLoc();
    Value offset = scaledStep(builder, loc, iteration, advance.getOffset());
    Value current = tt::AddPtrOp::create(builder, loc, carried.getType(),
                                         loop.getInitArgs()[j], offset);
    carried.replaceUsesWithIf(current, [&](OpOperand &use) { return use.getOwner() != advance; });
    ++rewritten;
  }
  return rewritten;
}

} // namespace

unsigned rewritePointerInductions(tt::FuncOp function) {
  unsigned rewritten = 0;
  function.walk([&](scf::ForOp loop) { rewritten += rewriteLoop(loop); });
  return rewritten;
}

} // namespace tritonad
