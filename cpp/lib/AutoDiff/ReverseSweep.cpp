#include "ReverseSweep.h"

#include "tritonad/AutoDiff/ReverseModeInterface.h"
#include "tritonad/Dialect/Triton/Dialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

bool carriesGradient(Operation &op, const DenseSet<Value> &active) {
  bool result = false;
  op.walk([&](Operation *inner) {
    for (Value v : inner->getResults())
      result |= active.contains(v);
    for (Region &region : inner->getRegions())
      for (Block &block : region)
        for (Value arg : block.getArguments())
          result |= active.contains(arg);
  });
  return result;
}

// Whether `value`, computed in `loop`'s body, depends on one of the `carried`
// block arguments.
bool dependsOnCarried(Value value, scf::ForOp loop, const DenseSet<Value> &carried) {
  SmallVector<Value> worklist{value};
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    if (!seen.insert(current).second)
      continue;
    if (carried.contains(current))
      return true;
    Operation *def = current.getDefiningOp();
    if (!def || !loop->isAncestor(def))
      continue;
    def->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        worklist.push_back(operand);
    });
  }
  return false;
}

// Active iter_arg #j of `loop` is a pure accumulation: its only use is the op
// that computes its next value, `acc + t` or `dot(a, b, acc)`, whose other
// operands do not depend on active carried values. Its adjoint is then the
// same in every iteration: the reverse loop needs no per-iteration cache.
LogicalResult checkAccumulation(scf::ForOp loop, unsigned j, const DenseSet<Value> &carried) {
  BlockArgument acc = loop.getRegionIterArgs()[j];
  Value next = loop.getBody()->getTerminator()->getOperand(j);
  Operation *update = next.getDefiningOp();
  bool pure = update && acc.hasOneUse() && acc.getUses().begin()->getOwner() == update &&
              update->getBlock() == loop.getBody();
  if (pure) {
    if (auto add = dyn_cast<arith::AddFOp>(update))
      pure = (add.getLhs() == acc) != (add.getRhs() == acc);
    else if (auto dot = dyn_cast<tt::DotOp>(update))
      pure = dot.getC() == acc && dot.getA() != acc && dot.getB() != acc;
    else
      pure = false;
  }
  if (pure)
    for (Value operand : update->getOperands())
      if (operand != acc && dependsOnCarried(operand, loop, carried))
        pure = false;
  if (pure)
    return success();
  return loop.emitError("cannot differentiate this scf.for: loop-carried value #")
         << j << " is not a pure accumulation (acc = acc + f(...) or acc = tl.dot(a, b, acc)); "
         << "carried values such as an online softmax's running max need a per-iteration "
         << "cache, which tritonad does not implement yet";
}

// Active values defined outside `op` and used inside it: the reverse region
// accumulates their adjoints and hands them out through its results.
SmallVector<Value> capturedActiveValues(Operation *op, const DenseSet<Value> &active) {
  SmallVector<Value> captured;
  DenseSet<Value> seen;
  op->walk([&](Operation *inner) {
    if (inner == op)
      return;
    for (Value operand : inner->getOperands()) {
      if (!active.contains(operand) || seen.contains(operand))
        continue;
      Region *defRegion = operand.getParentRegion();
      if (op->isProperAncestor(defRegion->getParentOp()) || defRegion->getParentOp() == op)
        continue;
      seen.insert(operand);
      captured.push_back(operand);
    }
  });
  return captured;
}

// Recomputes `primal` (a region's block) into the builder's block under
// `mapping`, seeds the adjoints of the terminator operands, sweeps it, and
// returns the adjoints of `captured` (zeros where none).
FailureOr<SmallVector<Value>> reverseBody(Block &primal, OpBuilder &builder, IRMapping &mapping,
                                          AdjointState &outer, ArrayRef<Value> seeds,
                                          ArrayRef<Value> captured, const SweepHooks &hooks,
                                          SmallVectorImpl<Value> *recomputedYields = nullptr) {
  for (Operation &op : primal.without_terminator())
    hooks.cloneForward(op, builder, mapping);
  Operation *terminator = primal.getTerminator();
  if (recomputedYields)
    for (Value v : terminator->getOperands())
      recomputedYields->push_back(mapping.lookupOrDefault(v));
  AdjointState state(mapping, outer.activeSet());
  for (auto [operand, seed] : llvm::zip(terminator->getOperands(), seeds))
    if (seed)
      state.accumulate(builder, operand, seed);
  if (failed(reverseSweep(primal, builder, state, hooks)))
    return failure();
  SmallVector<Value> adjoints;
  for (Value value : captured)
    adjoints.push_back(state.adjointOrZero(builder, value));
  return adjoints;
}

LogicalResult reverseFor(scf::ForOp loop, OpBuilder &builder, AdjointState &state,
                         const SweepHooks &hooks) {
  Location loc = loop.getLoc();
  const DenseSet<Value> &active = state.activeSet();
  unsigned n = loop.getNumRegionIterArgs();
  SmallVector<bool> isActive(n);
  DenseSet<Value> carried;
  for (unsigned j = 0; j < n; ++j) {
    isActive[j] = active.contains(loop.getRegionIterArgs()[j]) ||
                  active.contains(loop.getResult(j));
    if (isActive[j])
      carried.insert(loop.getRegionIterArgs()[j]);
  }
  for (unsigned j = 0; j < n; ++j)
    if (isActive[j] && failed(checkAccumulation(loop, j, carried)))
      return failure();

  SmallVector<Value> captured = capturedActiveValues(loop, active);
  SmallVector<Value> inits;
  for (unsigned j = 0; j < n; ++j)
    if (!isActive[j])
      inits.push_back(state.forward(loop.getInitArgs()[j]));
  unsigned numRecomputed = inits.size();
  for (Value value : captured)
    inits.push_back(createZero(builder, loc, value.getType()));

  auto reverse = scf::ForOp::create(builder, loc, state.forward(loop.getLowerBound()),
                                    state.forward(loop.getUpperBound()),
                                    state.forward(loop.getStep()), inits);
  Block *body = reverse.getBody();
  if (!body->empty())
    body->getTerminator()->erase();
  OpBuilder bodyBuilder = OpBuilder::atBlockEnd(body);
  IRMapping mapping = state.mapping();
  mapping.map(loop.getInductionVar(), reverse.getInductionVar());
  SmallVector<Value> seeds(n);
  unsigned next = 0;
  for (unsigned j = 0; j < n; ++j) {
    BlockArgument arg = loop.getRegionIterArgs()[j];
    if (isActive[j]) {
      // Its value is never needed (only accumulated into); its adjoint is the
      // loop result's, the same in every iteration.
      mapping.map(arg, createZero(bodyBuilder, loc, arg.getType()));
      seeds[j] = state.adjoint(loop.getResult(j));
    } else {
      mapping.map(arg, reverse.getRegionIterArgs()[next++]);
    }
  }
  SmallVector<Value> recomputed;
  FailureOr<SmallVector<Value>> deltas = reverseBody(*loop.getBody(), bodyBuilder, mapping, state,
                                                     seeds, captured, hooks, &recomputed);
  if (failed(deltas))
    return failure();
  SmallVector<Value> yields;
  for (unsigned j = 0; j < n; ++j)
    if (!isActive[j])
      yields.push_back(recomputed[j]);
  for (auto [k, delta] : llvm::enumerate(*deltas)) {
    Value running = reverse.getRegionIterArgs()[numRecomputed + k];
    yields.push_back(arith::AddFOp::create(bodyBuilder, loc, running, delta));
  }
  scf::YieldOp::create(bodyBuilder, loc, yields);

  for (auto [k, value] : llvm::enumerate(captured))
    state.accumulate(builder, value, reverse.getResult(numRecomputed + k));
  for (unsigned j = 0; j < n; ++j)
    if (isActive[j])
      if (Value g = state.adjoint(loop.getResult(j)))
        state.accumulate(builder, loop.getInitArgs()[j], g);
  return success();
}

LogicalResult reverseIf(scf::IfOp branch, OpBuilder &builder, AdjointState &state,
                        const SweepHooks &hooks) {
  Location loc = branch.getLoc();
  SmallVector<Value> captured = capturedActiveValues(branch, state.activeSet());
  SmallVector<Type> types;
  for (Value value : captured)
    types.push_back(value.getType());
  SmallVector<Value> seeds;
  for (Value result : branch.getResults())
    seeds.push_back(state.adjoint(result));
  auto reverse = scf::IfOp::create(builder, loc, types, state.forward(branch.getCondition()),
                                   /*withElseRegion=*/true);
  for (auto [primalRegion, reverseRegion] :
       {std::pair{&branch.getThenRegion(), &reverse.getThenRegion()},
        std::pair{&branch.getElseRegion(), &reverse.getElseRegion()}}) {
    Block *block = &reverseRegion->front();
    if (!block->empty() && block->back().hasTrait<OpTrait::IsTerminator>())
      block->back().erase();
    OpBuilder blockBuilder = OpBuilder::atBlockEnd(block);
    SmallVector<Value> deltas;
    if (primalRegion->empty()) {
      for (Value value : captured)
        deltas.push_back(createZero(blockBuilder, loc, value.getType()));
    } else {
      IRMapping mapping = state.mapping();
      FailureOr<SmallVector<Value>> result = reverseBody(primalRegion->front(), blockBuilder,
                                                         mapping, state, seeds, captured, hooks);
      if (failed(result))
        return failure();
      deltas = *result;
    }
    scf::YieldOp::create(blockBuilder, loc, deltas);
  }
  for (auto [k, value] : llvm::enumerate(captured))
    state.accumulate(builder, value, reverse.getResult(k));
  return success();
}

} // namespace

LogicalResult checkDifferentiable(Block &block, const DenseSet<Value> &active, bool kernel) {
  for (Operation &op : block.without_terminator()) {
    if (!carriesGradient(op, active))
      continue;
    if (isa<scf::ForOp>(op) || isa<scf::IfOp>(op)) {
      for (Region &region : op.getRegions())
        for (Block &inner : region)
          if (failed(checkDifferentiable(inner, active, kernel)))
            return failure();
      continue;
    }
    if (op.getNumRegions() != 0 && !isa<tt::ReduceOp, tt::ScanOp>(op))
      return op.emitError("cannot differentiate '")
             << op.getName() << "': only scf.for and scf.if carry gradients through control "
             << "flow (scf.while is not supported yet)";
    if (kernel && isa<tt::LoadOp, tt::StoreOp>(op))
      continue;
    if (!isa<ReverseModeOpInterface>(op))
      return op.emitError("no derivative rule for '") << op.getName() << "'";
  }
  return success();
}

LogicalResult reverseSweep(Block &block, OpBuilder &builder, AdjointState &state,
                           const SweepHooks &hooks) {
  const DenseSet<Value> &active = state.activeSet();
  for (Operation &op : llvm::reverse(block.without_terminator())) {
    if (hooks.special) {
      FailureOr<bool> handled = hooks.special(op, builder, state);
      if (failed(handled))
        return failure();
      if (*handled)
        continue;
    }
    if (!carriesGradient(op, active))
      continue;
    LogicalResult result = success();
    if (auto loop = dyn_cast<scf::ForOp>(op))
      result = reverseFor(loop, builder, state, hooks);
    else if (auto branch = dyn_cast<scf::IfOp>(op))
      result = reverseIf(branch, builder, state, hooks);
    else if (llvm::any_of(op.getResults(), [&](Value v) { return state.adjoint(v); }))
      result = cast<ReverseModeOpInterface>(op).emitAdjoint(builder, state);
    if (failed(result))
      return failure();
  }
  return success();
}

} // namespace tritonad
