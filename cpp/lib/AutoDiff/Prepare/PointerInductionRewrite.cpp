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

// The op computing the next value of a carried pointer from the pointer
// itself: `addptr(carried, step)` for a tensor of pointers, `advance(carried,
// offsets)` for a block pointer (steps not yet checked for invariance).
Operation *pointerAdvance(scf::ForOp loop, unsigned j) {
  BlockArgument carried = loop.getRegionIterArgs()[j];
  Operation *next = loop.getBody()->getTerminator()->getOperand(j).getDefiningOp();
  if (!next || next->getBlock() != loop.getBody() || next->getOperand(0) != carried)
    return nullptr;
  if (isa<tt::PointerType>(getElementTypeOrSelf(carried.getType())) && isa<tt::AddPtrOp>(next))
    return next;
  if (isa<tt::AdvanceOp>(next))
    return next;
  return nullptr;
}

unsigned rewriteLoop(scf::ForOp loop) {
  unsigned rewritten = 0;
  Block *body = loop.getBody();
  bool any = false;
  for (unsigned j = 0; j < loop.getNumRegionIterArgs(); ++j)
    any |= pointerAdvance(loop, j) != nullptr;
  if (!any)
    return 0;
  // `ptrs += BLOCK_K * stride` computes its step inside the body.
  moveLoopInvariantCode(cast<LoopLikeOpInterface>(loop.getOperation()));
  OpBuilder builder = OpBuilder::atBlockBegin(body);
  Value iteration;
  for (auto [j, carried] : llvm::enumerate(loop.getRegionIterArgs())) {
    Operation *advance = pointerAdvance(loop, j);
    if (!advance || !llvm::all_of(advance->getOperands().drop_front(), [&](Value step) {
          return loop.isDefinedOutsideOfLoop(step);
        }))
      continue;
    if (!iteration && !(iteration = iterationNumber(builder, loop)))
      return rewritten;
    Location loc = advance->getLoc();
    Value init = loop.getInitArgs()[j];
    Value current;
    if (auto addptr = dyn_cast<tt::AddPtrOp>(advance)) {
      Value offset = scaledStep(builder, loc, iteration, addptr.getOffset());
      current = tt::AddPtrOp::create(builder, loc, carried.getType(), init, offset);
    } else {
      // Block pointers advance by i32 offsets, as the forward does.
      Value iteration32 = arith::TruncIOp::create(builder, loc, builder.getI32Type(), iteration);
      SmallVector<Value> offsets;
      for (Value step : advance->getOperands().drop_front())
        offsets.push_back(arith::MulIOp::create(builder, loc, iteration32, step));
      current = tt::AdvanceOp::create(builder, loc, carried.getType(), init, offsets);
    }
    carried.replaceUsesWithIf(current, [&](OpOperand &use) { return use.getOwner() != advance; });
    ++rewritten;
  }
  return rewritten;
}

// A while loop's value carried unchanged from its before region to its
// after region (`scf.condition(%c) %a, %b`: the after region's j-th argument
// is the before region's j-th): the index among the before region's
// arguments, or nullopt.
std::optional<unsigned> forwardedIndex(scf::WhileOp loop, unsigned afterIndex) {
  auto condition = cast<scf::ConditionOp>(loop.getBefore().front().getTerminator());
  auto arg = dyn_cast<BlockArgument>(condition.getArgs()[afterIndex]);
  if (!arg || arg.getOwner() != &loop.getBefore().front())
    return std::nullopt;
  return arg.getArgNumber();
}

// The value the after region yields for the before region's argument
// `beforeIndex`: the next iteration's.
Value yieldedFor(scf::WhileOp loop, unsigned beforeIndex) {
  return loop.getAfter().front().getTerminator()->getOperand(beforeIndex);
}

// `while k < n: ... p += BLOCK; k += BLOCK`: a pointer advanced in a while
// loop beside a counter advanced by a loop-invariant step. The iteration is
// (k - k0) / step_k, so the pointer inside the after region is
// init + iteration * step_p, as for a for loop (a pointer carried by a while
// loop has no provenance the backward can follow).
unsigned rewriteWhileLoop(scf::WhileOp loop) {
  Block &after = loop.getAfter().front();
  auto advancesPointer = [&](BlockArgument carried) {
    std::optional<unsigned> index = forwardedIndex(loop, carried.getArgNumber());
    auto advance = index ? yieldedFor(loop, *index).getDefiningOp<tt::AddPtrOp>() : nullptr;
    return advance && advance.getPtr() == carried;
  };
  if (llvm::none_of(after.getArguments(), advancesPointer))
    return 0;
  // (`p += BLOCK` and `k += BLOCK` compute their steps inside the body)
  moveLoopInvariantCode(cast<LoopLikeOpInterface>(loop.getOperation()));
  auto definedOutside = [&](Value value) {
    return !loop->isAncestor(value.getParentRegion()->getParentOp());
  };
  // (the after argument, the before index) of a counter `k = k + step`
  std::optional<std::pair<BlockArgument, unsigned>> counter;
  Value counterStep;
  for (BlockArgument arg : after.getArguments()) {
    std::optional<unsigned> index = forwardedIndex(loop, arg.getArgNumber());
    if (!index || !isa<IntegerType>(arg.getType()))
      continue;
    auto add = yieldedFor(loop, *index).getDefiningOp<arith::AddIOp>();
    if (!add || add->getBlock() != &after)
      continue;
    Value step = add.getLhs() == arg ? add.getRhs() : add.getRhs() == arg ? add.getLhs() : Value();
    if (step && definedOutside(step) && !isConstantInt(step, 0)) {
      counter = {arg, *index};
      counterStep = step;
      break;
    }
  }
  if (!counter)
    return 0;
  unsigned rewritten = 0;
  Value iteration;
  OpBuilder builder = OpBuilder::atBlockBegin(&after);
  for (BlockArgument carried : after.getArguments()) {
    std::optional<unsigned> index = forwardedIndex(loop, carried.getArgNumber());
    if (!index || !isa<tt::PointerType>(getElementTypeOrSelf(carried.getType())))
      continue;
    auto advance = yieldedFor(loop, *index).getDefiningOp<tt::AddPtrOp>();
    if (!advance || advance->getBlock() != &after || advance.getPtr() != carried ||
        !definedOutside(advance.getOffset()))
      continue;
    Location loc = advance.getLoc();
    if (!iteration) {
      Value k0 = toI64(builder, loc, loop.getInits()[counter->second]);
      Value travelled =
          arith::SubIOp::create(builder, loc, toI64(builder, loc, counter->first), k0);
      iteration = isConstantInt(counterStep, 1)
                      ? travelled
                      : arith::DivSIOp::create(builder, loc, travelled,
                                               toI64(builder, loc, counterStep))
                            .getResult();
    }
    Value offset = scaledStep(builder, loc, iteration, advance.getOffset());
    Value current = tt::AddPtrOp::create(builder, loc, carried.getType(),
                                         loop.getInits()[*index], offset);
    carried.replaceUsesWithIf(current, [&](OpOperand &use) { return use.getOwner() != advance; });
    ++rewritten;
  }
  return rewritten;
}

} // namespace

unsigned rewritePointerInductions(tt::FuncOp function) {
  unsigned rewritten = 0;
  function.walk([&](scf::ForOp loop) { rewritten += rewriteLoop(loop); });
  function.walk([&](scf::WhileOp loop) { rewritten += rewriteWhileLoop(loop); });
  return rewritten;
}

} // namespace tritonad
