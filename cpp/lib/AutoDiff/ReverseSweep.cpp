#include "ReverseSweep.h"

#include "tritonad/AutoDiff/ReverseModeInterface.h"

using namespace mlir;

namespace tritonad {

bool carriesGradient(Operation &op, const GradientUtils &gutils) {
  bool result = false;
  op.walk([&](Operation *inner) {
    for (Value v : inner->getResults())
      result |= gutils.isActive(v);
    // A loop or branch whose only active content is a store of a value
    // computed before it: the store's adjoint (reading the upstream) is there.
    if (auto rule = dyn_cast<ReverseModeOpInterface>(inner); rule && inner != &op)
      result |= rule.passesGradientWithoutResults(gutils);
    for (Region &region : inner->getRegions())
      for (Block &block : region)
        for (Value arg : block.getArguments())
          result |= gutils.isActive(arg);
  });
  return result;
}

Operation *cloneWithRegions(OpBuilder &builder, Operation &op, IRMapping &mapping) {
  op.walk([&](Block *block) {
    mapping.erase(block);
    for (BlockArgument arg : block->getArguments())
      mapping.erase(arg);
  });
  return builder.clone(op, mapping);
}

void cloneForRecompute(Operation &op, OpBuilder &builder, IRMapping &mapping,
                       const Residuals *residuals) {
  if (residuals) {
    auto saved = residuals->find(&op);
    // A saved op whose loads the recompute has not reached is recomputed:
    // program coarsening hoists an op the same in every program (a reduction
    // over a weight) out of the program loop, while its loads stay in it. A
    // null load is a result not saved, which nothing uses.
    if (saved != residuals->end() &&
        llvm::all_of(saved->second,
                     [&](Value loaded) { return !loaded || mapping.contains(loaded); })) {
      for (auto [result, loaded] : llvm::zip_equal(op.getResults(), saved->second))
        if (loaded)
          mapping.map(result, mapping.lookup(loaded));
      return;
    }
  }
  if (writesMemory(&op))
    return; // checkRecomputable: nothing reads its results
  Operation *clone = cloneWithRegions(builder, op, mapping);
  SmallVector<Operation *> writers;
  clone->walk([&](Operation *inner) {
    if (inner != clone && writesMemory(inner))
      writers.push_back(inner);
  });
  for (Operation *writer : writers)
    writer->erase();
}

LogicalResult checkRecomputable(Operation *root) {
  WalkResult walk = root->walk([&](Operation *op) {
    if (op == root || !writesMemory(op) || op->use_empty())
      return WalkResult::advance();
    op->emitError("cannot differentiate a kernel that uses the result of '")
        << op->getName() << "': the backward recomputes the forward, and replaying this op "
        << "would update memory a second time";
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

LogicalResult checkDifferentiable(Block &block, const GradientUtils &gutils) {
  for (Operation &op : block.without_terminator()) {
    if (!carriesGradient(op, gutils))
      continue;
    auto rule = dyn_cast<ReverseModeOpInterface>(op);
    if (!rule && op.getNumRegions() != 0)
      return op.emitError("cannot differentiate '")
             << op.getName() << "': no reverse-mode rule for this op with regions (scf.for, "
             << "scf.while, scf.if, tt.reduce and tt.scan carry gradients through regions)";
    if (!rule)
      return op.emitError("no derivative rule for '") << op.getName() << "'";
    if (failed(rule.verifyDifferentiable(gutils)))
      return failure();
  }
  return success();
}

LogicalResult reverseSweep(Block &block, OpBuilder &builder, GradientUtils &gutils) {
  for (Operation &op : llvm::reverse(block.without_terminator())) {
    // checkDifferentiable made sure that an op without a rule carries no
    // gradient.
    auto rule = dyn_cast<ReverseModeOpInterface>(op);
    if (rule && rule.needsAdjoint(gutils) && failed(rule.emitAdjoint(builder, gutils)))
      return failure();
  }
  return success();
}

} // namespace tritonad
