// Counted while loops as the for loops they spell.
#include "tritonad/AutoDiff/Prepare.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace tritonad {

namespace {

// `while i < n: ...; i += c`: the test, the increment and the counter's
// position.
struct Counter {
  arith::CmpIOp compare;
  arith::AddIOp increment;
  unsigned position;
};

// The counter of `while i < n: ...; i += c` (i carried, the constant c > 0),
// whose final value nothing reads after the loop; nullopt for any other loop.
std::optional<Counter> unreadPositiveCounter(scf::WhileOp loop) {
  Block *before = loop.getBeforeBody();
  if (!llvm::hasSingleElement(before->without_terminator()))
    return std::nullopt;
  auto compare = dyn_cast<arith::CmpIOp>(before->front());
  if (!compare || compare.getPredicate() != arith::CmpIPredicate::slt)
    return std::nullopt;
  auto counter = dyn_cast<BlockArgument>(compare.getLhs());
  if (!counter || counter.getOwner() != before)
    return std::nullopt;
  unsigned position = counter.getArgNumber();
  auto increment = loop.getYieldOp().getResults()[position].getDefiningOp<arith::AddIOp>();
  Value counterAfter = loop.getAfterBody()->getArgument(position);
  if (!increment || (increment.getLhs() != counterAfter && increment.getRhs() != counterAfter))
    return std::nullopt;
  Value step = increment.getLhs() == counterAfter ? increment.getRhs() : increment.getLhs();
  APInt constant;
  if (!matchPattern(step, m_ConstantInt(&constant)) || !constant.isStrictlyPositive())
    return std::nullopt;
  // (upstream's uplift gives the loop's final counter as its last iteration's
  // value, not the first that fails the test: only a counter nothing reads)
  if (position >= loop->getNumResults() || !loop->getResult(position).use_empty())
    return std::nullopt;
  return Counter{compare, increment, position};
}

} // namespace

void upliftCountedWhileLoops(triton::FuncOp function) {
  SmallVector<scf::WhileOp> loops;
  function.walk([&](scf::WhileOp loop) { loops.push_back(loop); });
  IRRewriter rewriter(function.getContext());
  for (scf::WhileOp loop : loops) {
    std::optional<Counter> counter = unreadPositiveCounter(loop);
    if (!counter)
      continue;
    Operation *following = loop->getNextNode();
    Operation *increment = counter->increment;
    rewriter.setInsertionPoint(loop);
    // (Triton's front end materializes constants where they are used: a
    // constant step or bound inside the loop is hoisted, as uplifting needs
    // both defined before it)
    for (OpOperand *use : {&counter->compare->getOpOperand(1), &increment->getOpOperand(0),
                           &increment->getOpOperand(1)}) {
      auto constant = use->get().getDefiningOp<arith::ConstantOp>();
      if (constant && loop->isAncestor(constant))
        use->set(rewriter.clone(*constant)->getResult(0));
    }
    // (a loop outside its other requirements, such as arguments forwarded out
    // of order, stays a while loop)
    FailureOr<scf::ForOp> uplifted = scf::upliftWhileToForLoop(rewriter, loop);
    if (failed(uplifted))
      continue;
    // The counter's increment and its final value are now unread.
    if (isOpTriviallyDead(increment))
      rewriter.eraseOp(increment);
    SmallVector<Operation *> made;
    for (Operation *op = uplifted->getOperation()->getNextNode(); op && op != following;
         op = op->getNextNode())
      made.push_back(op);
    for (Operation *op : llvm::reverse(made))
      if (isOpTriviallyDead(op))
        rewriter.eraseOp(op);
  }
}

} // namespace tritonad
