// Reverse-mode rules of the scf dialect: loops and branches are reversed as
// loops and branches. An scf.for is reversed by the cheapest strategy that
// applies: in forward order when its carried gradients are pure
// accumulations; with its stabilizers held at their final value; from a tape
// of its carried state (the driver's scratch memory); by replaying the
// iterations before each one.
#include "../ReverseSweep.h"
#include "../TensorBuilders.h"

#include "tritonad/Analysis/ShiftInvariance.h"
#include "tritonad/AutoDiff/ReverseModeInterface.h"
#include "tritonad/Dialect/Triton/Dialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/ScopeExit.h"

#include <cmath>

using namespace mlir;
using namespace tritonad;
namespace tt = mlir::triton;

namespace {

// Tells the driver how a loop was reversed (functions keep no schedule).
void noteLoop(const GradientUtils &state, Operation *loop, Strategy strategy, StringRef how) {
  if (state.driver())
    state.driver()->noteLoop(loop, strategy, how);
}

// Whether `value`, computed in `loop`'s body, depends on one of the `carried`
// block arguments.
bool dependsOnCarried(Value value, Operation *loop, const DenseSet<Value> &carried) {
  return computedFrom(value, loop, [&](BlockArgument arg) { return carried.contains(arg); });
}

// The carried value `acc` of `loop` is a pure accumulation: its only use is
// the op that computes its next value `next`, `acc + t` or `dot(a, b, acc)`,
// whose other operands do not depend on active carried values. Its adjoint
// is then the same in every iteration: the reverse loop needs no
// per-iteration cache.
bool isPureAccumulation(Operation *loop, Block *body, BlockArgument acc, Value next,
                        const DenseSet<Value> &carried) {
  // Neither the running value nor its update may be read elsewhere in the
  // body (a prefix sum stores `acc` every iteration): such a read gives later
  // iterations' adjoints to earlier values.
  Operation *update = next.getDefiningOp();
  bool pure = update && acc.hasOneUse() && acc.getUses().begin()->getOwner() == update &&
              update->getBlock() == body && next.hasOneUse() &&
              next.getUses().begin()->getOwner() == body->getTerminator();
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
  return pure;
}

LogicalResult checkAccumulation(Operation *loop, Block *body, unsigned j, BlockArgument acc,
                                Value next, const DenseSet<Value> &carried) {
  if (isPureAccumulation(loop, body, acc, next, carried))
    return success();
  return loop->emitError("cannot differentiate this ")
         << loop->getName() << ": loop-carried value #" << j
         << " is not a pure accumulation (acc = acc + f(...) or acc = tl.dot(a, b, acc)); "
         << "a while loop's other carried values would need their per-iteration values, "
         << "which tritonad recomputes only for scf.for (write the loop as a for loop)";
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
                                          GradientUtils &outer, const DenseSet<Value> &active,
                                          ArrayRef<Value> seeds, ArrayRef<Value> captured,
                                          SmallVectorImpl<Value> *recomputedYields = nullptr) {
  for (Operation &op : primal.without_terminator())
    cloneForRecompute(op, builder, mapping, outer.residuals());
  Operation *terminator = primal.getTerminator();
  if (recomputedYields)
    for (Value v : terminator->getOperands())
      recomputedYields->push_back(mapping.lookupOrDefault(v));
  GradientUtils state = outer.nested(mapping, active);
  for (auto [operand, seed] : llvm::zip(terminator->getOperands(), seeds))
    if (seed)
      state.accumulate(builder, operand, seed);
  if (failed(reverseSweep(primal, builder, state)))
    return failure();
  SmallVector<Value> adjoints;
  for (Value value : captured)
    adjoints.push_back(state.adjointOrZero(builder, value));
  return adjoints;
}

// A running sum of a captured value's adjoint (carried in summedType) plus
// one iteration's delta. Each delta keeps its own rounding: looking through
// the truncf of an f32 product to its operand would let Triton fold the sum
// into the product's accumulator, measured 19% slower on a causal attention's
// dQ (H100), and an f32 product in place of its f16 rounding, 10% (register
// pressure in the loop).
Value addToSum(OpBuilder &builder, Location loc, Value sum, Value delta) {
  return arith::AddFOp::create(builder, loc, sum,
                               castFloat(builder, loc, delta, getElementTypeOrSelf(sum)));
}

// The yield of a loop replayed in forward order: the recomputed inactive
// carried values, then each captured adjoint's running sum plus its delta.
void yieldForwardReplay(OpBuilder &builder, Location loc, ArrayRef<bool> isActive,
                        ArrayRef<Value> recomputed, ArrayRef<Value> deltas,
                        ValueRange running) {
  SmallVector<Value> yields;
  for (auto [j, active] : llvm::enumerate(isActive))
    if (!active)
      yields.push_back(recomputed[j]);
  for (auto [sum, delta] : llvm::zip(running, deltas))
    yields.push_back(addToSum(builder, loc, sum, delta));
  scf::YieldOp::create(builder, loc, yields);
}

// After such a loop: the captured values get their summed adjoints, and each
// active carried value's init gets its result's adjoint (the same in every
// iteration).
void accumulateForwardReplay(OpBuilder &builder, GradientUtils &state, ArrayRef<bool> isActive,
                             ArrayRef<Value> captured, ValueRange capturedAdjoints,
                             ValueRange results, ValueRange inits) {
  for (auto [value, adjoint] : llvm::zip(captured, capturedAdjoints))
    state.accumulate(builder, value,
                     castFloat(builder, value.getLoc(), adjoint, getElementTypeOrSelf(value)));
  for (auto [j, active] : llvm::enumerate(isActive))
    if (active)
      if (Value g = state.adjoint(results[j]))
        state.accumulate(builder, inits[j], g);
}

Value intConstant(OpBuilder &builder, Location loc, Type type, int64_t value) {
  return arith::ConstantOp::create(builder, loc, builder.getIntegerAttr(type, value));
}

// trips = max(ceil((upper - lower) / step), 0), in the induction variable's type.
Value tripCount(OpBuilder &builder, Location loc, Value lower, Value upper, Value step) {
  Type ivType = lower.getType();
  Value zero = intConstant(builder, loc, ivType, 0);
  Value one = intConstant(builder, loc, ivType, 1);
  Value span = arith::SubIOp::create(builder, loc, upper, lower);
  Value rounded = arith::AddIOp::create(builder, loc, span,
                                        arith::SubIOp::create(builder, loc, step, one));
  return arith::MaxSIOp::create(builder, loc, arith::DivSIOp::create(builder, loc, rounded, step),
                                zero);
}

// Gives the carried state of `loop` at the start of forward iteration `back`
// (0-based; `iv` is its induction variable), emitted at the builder.
using CarriedStateAt = llvm::function_ref<SmallVector<Value>(OpBuilder &, Value back, Value iv)>;

// Carried values that are not pure accumulations: the reverse visits
// iterations last to first, carrying their adjoints; `stateAt` rebuilds the
// carried state each iteration starts from.
LogicalResult reverseForLastToFirst(scf::ForOp loop, OpBuilder &builder, GradientUtils &state,
                                    Value trips, CarriedStateAt stateAt) {
  Location loc = loop.getLoc();
  const DenseSet<Value> &active = state.activeSet();
  unsigned n = loop.getNumRegionIterArgs();
  Value lower = state.forward(loop.getLowerBound());
  Value step = state.forward(loop.getStep());
  Type ivType = lower.getType();
  Value zero = intConstant(builder, loc, ivType, 0);
  Value one = intConstant(builder, loc, ivType, 1);

  SmallVector<unsigned> activeCarried;
  for (unsigned j = 0; j < n; ++j)
    if (active.contains(loop.getRegionIterArgs()[j]) || active.contains(loop.getResult(j)))
      activeCarried.push_back(j);
  SmallVector<Value> captured = capturedActiveValues(loop, active);
  SmallVector<Value> inits;
  for (unsigned j : activeCarried)
    inits.push_back(state.adjointOrZero(builder, loop.getResult(j)));
  for (Value value : captured)
    inits.push_back(createZero(builder, loc, summedType(value.getType())));

  auto reverse = scf::ForOp::create(builder, loc, zero, trips, one, inits);
  Block *body = reverse.getBody();
  if (!body->empty())
    body->getTerminator()->erase();
  OpBuilder bodyBuilder = OpBuilder::atBlockEnd(body);
  // The forward iteration this reverse iteration handles: last to first.
  Value back = arith::SubIOp::create(
      bodyBuilder, loc, arith::SubIOp::create(bodyBuilder, loc, trips, one),
      reverse.getInductionVar());
  Value iv = arith::AddIOp::create(bodyBuilder, loc, lower,
                                   arith::MulIOp::create(bodyBuilder, loc, back, step));
  SmallVector<Value> carriedState = stateAt(bodyBuilder, back, iv);

  IRMapping mapping = state.mapping();
  mapping.map(loop.getInductionVar(), iv);
  for (auto [j, arg] : llvm::enumerate(loop.getRegionIterArgs()))
    mapping.map(arg, carriedState[j]);
  SmallVector<Value> seeds(n);
  for (auto [k, j] : llvm::enumerate(activeCarried))
    seeds[j] = reverse.getRegionIterArgs()[k];
  SmallVector<Value> wanted(captured);
  for (unsigned j : activeCarried)
    wanted.push_back(loop.getRegionIterArgs()[j]);
  FailureOr<SmallVector<Value>> adjoints =
      reverseBody(*loop.getBody(), bodyBuilder, mapping, state, active, seeds, wanted);
  if (failed(adjoints))
    return failure();
  SmallVector<Value> yields;
  for (unsigned k = 0; k < activeCarried.size(); ++k)
    yields.push_back((*adjoints)[captured.size() + k]);
  for (auto [k, value] : llvm::enumerate(captured)) {
    Value running = reverse.getRegionIterArgs()[activeCarried.size() + k];
    yields.push_back(addToSum(bodyBuilder, loc, running, (*adjoints)[k]));
  }
  scf::YieldOp::create(bodyBuilder, loc, yields);

  for (auto [k, value] : llvm::enumerate(captured))
    state.accumulate(builder, value,
                     castFloat(builder, loc, reverse.getResult(activeCarried.size() + k),
                               getElementTypeOrSelf(value)));
  for (auto [k, j] : llvm::enumerate(activeCarried))
    state.accumulate(builder, loop.getInitArgs()[j], reverse.getResult(k));
  return success();
}

// The carried state at the start of iteration `iv`, replayed from the state
// `inits` at the start of iteration `start`.
SmallVector<Value> replayFrom(scf::ForOp loop, OpBuilder &builder, GradientUtils &state,
                              Value start, Value iv, ValueRange inits) {
  Location loc = loop.getLoc();
  auto replay =
      scf::ForOp::create(builder, loc, start, iv, state.forward(loop.getStep()), inits);
  Block *replayBody = replay.getBody();
  if (!replayBody->empty())
    replayBody->getTerminator()->erase();
  OpBuilder replayBuilder = OpBuilder::atBlockEnd(replayBody);
  IRMapping replayMapping = state.mapping();
  replayMapping.map(loop.getInductionVar(), replay.getInductionVar());
  for (auto [arg, value] : llvm::zip(loop.getRegionIterArgs(), replay.getRegionIterArgs()))
    replayMapping.map(arg, value);
  for (Operation &op : loop.getBody()->without_terminator())
    cloneForRecompute(op, replayBuilder, replayMapping, state.residuals());
  SmallVector<Value> yields;
  for (Value v : loop.getBody()->getTerminator()->getOperands())
    yields.push_back(replayMapping.lookupOrDefault(v));
  scf::YieldOp::create(replayBuilder, loc, yields);
  return SmallVector<Value>(replay.getResults());
}

// The carried state of iteration i rebuilt by replaying iterations [0, i)
// from the loop's inits: n(n-1)/2 replayed iterations for n, no memory.
LogicalResult reverseForByRecomputation(scf::ForOp loop, OpBuilder &builder,
                                        GradientUtils &state) {
  Location loc = loop.getLoc();
  Value lower = state.forward(loop.getLowerBound());
  Value trips = tripCount(builder, loc, lower, state.forward(loop.getUpperBound()),
                          state.forward(loop.getStep()));
  auto replayTo = [&](OpBuilder &bodyBuilder, Value, Value iv) {
    SmallVector<Value> inits;
    for (Value init : loop.getInitArgs())
      inits.push_back(state.forward(init));
    return replayFrom(loop, bodyBuilder, state, lower, iv, inits);
  };
  if (failed(reverseForLastToFirst(loop, builder, state, trips, replayTo)))
    return failure();
  noteLoop(state, loop, Strategy::Replayed,
           "reversed last iteration first; the carried state of iteration i is "
           "recomputed by replaying iterations [0, i) (n(n-1)/2 extra iterations, "
           "no scratch memory)");
  return success();
}

// The carried state stored by the recomputed forward loop into scratch memory
// (a tape) and read back by the reverse, last iteration first. The tape keeps
// every k-th iteration's state (k chosen at launch so that it fits, k = 1
// when it can: every state, no replay); the reverse replays the iterations
// between the nearest kept state and the one it needs, k/2 on average: O(n k)
// instead of the O(n^2) replay, with `bytes per state * ceil(n / k)` bytes per
// program. False when there is no tape for this loop (the kernel has none, its
// size is not known at launch, or a carried value is a pointer).
FailureOr<bool> reverseForByTape(scf::ForOp loop, OpBuilder &builder, GradientUtils &state) {
  if (!state.driver() || loop.getNumResults() == 0)
    return false;
  auto forwardLoop = state.forward(loop.getResult(0)).getDefiningOp<scf::ForOp>();
  if (!forwardLoop || forwardLoop == loop ||
      forwardLoop.getNumRegionIterArgs() != loop.getNumRegionIterArgs())
    return false;
  SmallVector<TapeSlot> slots;
  int64_t bytesPerState = 0;
  for (Value arg : loop.getRegionIterArgs()) {
    std::optional<TapeSlot> slot = tapeSlotFor(arg.getType());
    if (!slot)
      return false;
    slot->offset = bytesPerState;
    bytesPerState += (slot->bytes + 15) / 16 * 16; // aligned for vector accesses
    slots.push_back(*slot);
  }
  Location loc = loop.getLoc();
  OpBuilder before(forwardLoop);
  Value trips = tripCount(before, loc, forwardLoop.getLowerBound(), forwardLoop.getUpperBound(),
                          forwardLoop.getStep());
  Value perState = arith::ConstantOp::create(before, loc, before.getI64IntegerAttr(bytesPerState));
  auto bytesPerProgram = [&](OpBuilder &b, Value every) -> Value {
    // ceil(trips / every) kept states
    Value one = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(1));
    Value kept = arith::DivSIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc, i64Of(b, loc, trips),
                              arith::SubIOp::create(b, loc, every, one)),
        every);
    return arith::MulIOp::create(b, loc, kept, perState);
  };
  Value every;
  Value region = state.driver()->tapeRegion(before, loop, bytesPerState, bytesPerProgram, every);
  if (!region)
    return false;
  Type ivType = forwardLoop.getInductionVar().getType();
  auto toIv = [&](OpBuilder &b, Value v) -> Value {
    return ivType.isInteger(64) ? v : arith::TruncIOp::create(b, loc, ivType, v).getResult();
  };
  auto stateAddress = [&](OpBuilder &b, Value keptIndex, Value arg, const TapeSlot &slot) {
    Value offset = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, i64Of(b, loc, keptIndex), perState),
        arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(slot.offset)));
    return tapeAddress(b, loc, region, offset, arg.getType(), slot);
  };
  // The recomputed forward writes the state of every k-th iteration.
  {
    OpBuilder b = OpBuilder::atBlockBegin(forwardLoop.getBody());
    Value iteration = i64Of(
        b, loc,
        arith::DivSIOp::create(b, loc,
                               arith::SubIOp::create(b, loc, forwardLoop.getInductionVar(),
                                                     forwardLoop.getLowerBound()),
                               forwardLoop.getStep()));
    Value zero = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0));
    Value kept = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                       arith::RemSIOp::create(b, loc, iteration, every), zero);
    Value keptIndex = arith::DivSIOp::create(b, loc, iteration, every);
    for (auto [arg, slot] : llvm::zip(forwardLoop.getRegionIterArgs(), slots)) {
      Value value = arg;
      if (getElementTypeOrSelf(arg.getType()).isInteger(1)) {
        Type wide = slot.element;
        if (auto tensor = dyn_cast<RankedTensorType>(arg.getType()))
          wide = tensor.clone(slot.element);
        value = arith::ExtUIOp::create(b, loc, wide, arg);
      }
      createStore(b, loc, stateAddress(b, keptIndex, arg, slot), value,
                  predicate(b, loc, Value(), kept, arg.getType()));
    }
  }
  // Other threads of the program read what one wrote: a barrier, and loads
  // that bypass L1 (a nested loop rewrites the tape for each outer iteration).
  gpu::BarrierOp::create(builder, loc);
  Value lower = state.forward(loop.getLowerBound());
  Value step = state.forward(loop.getStep());
  auto readBack = [&](OpBuilder &b, Value back, Value iv) {
    Value keptIndex = arith::DivSIOp::create(b, loc, i64Of(b, loc, back), every);
    SmallVector<Value> values;
    for (auto [arg, slot] : llvm::zip(loop.getRegionIterArgs(), slots)) {
      Value value = createLoad(b, loc, stateAddress(b, keptIndex, arg, slot), Value(), Value());
      value.getDefiningOp()->setAttr(
          "cache", tt::CacheModifierAttr::get(b.getContext(), tt::CacheModifier::CG));
      if (getElementTypeOrSelf(arg.getType()).isInteger(1)) {
        Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(value.getType()));
        value = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, value, zero);
      }
      values.push_back(value);
    }
    // From the kept state to iteration `back`: none when k = 1.
    Value keptIteration =
        toIv(b, arith::MulIOp::create(b, loc, keptIndex, every).getResult());
    Value start = arith::AddIOp::create(b, loc, lower,
                                        arith::MulIOp::create(b, loc, keptIteration, step));
    return replayFrom(loop, b, state, start, iv, values);
  };
  if (failed(reverseForLastToFirst(loop, builder, state, trips, readBack)))
    return failure();
  noteLoop(state, loop, Strategy::Taped,
           "reversed last iteration first; the recomputed forward tapes each "
           "iteration's carried state (" +
               std::to_string(bytesPerState) +
               " bytes per iteration and program, in scratch memory the launcher "
               "allocates; where that would not fit, only every k-th iteration's, "
               "and the reverse replays the k/2 in between on average)");
  return true;
}

// A carried value that holding a stabilizer at its final value F turns into a
// running logsumexp, c' = F + log(exp(c - F) + s) (FlashAttention-2 carries the
// logsumexp where others carry the sum): carried as E = exp(c - F) it is the
// accumulation E' = E + s, with c = F + log(E).
struct ExpDomainCarried {
  unsigned index;
  Value stabilizer; // F
  bool base2;       // log2 and exp2
};

// Reverses `loop`, whose active carried values are pure accumulations, in
// forward order: each iteration recomputes its forward and adds its
// contributions; the inactive carried values are recomputed alongside. The
// adjoints come from, and go to, `original`'s results and inits (`loop` may be
// a rewritten clone of it); `active` says which values of `loop` carry
// gradients; `expDomain` which of them the clone carries as exp(c - F).
LogicalResult reverseAccumulatingFor(scf::ForOp loop, scf::ForOp original,
                                     const DenseSet<Value> &active, OpBuilder &builder,
                                     GradientUtils &state,
                                     ArrayRef<ExpDomainCarried> expDomain = {}) {
  Location loc = loop.getLoc();
  unsigned n = loop.getNumRegionIterArgs();
  SmallVector<bool> isActive(n);
  for (unsigned j = 0; j < n; ++j)
    isActive[j] = active.contains(loop.getRegionIterArgs()[j]) ||
                  active.contains(loop.getResult(j));
  // Each iteration's term of E = exp(c - F) gets the adjoint of E's final
  // value: dc/dE = 1/E = exp(F - c) (base 2: exp2(F - c) / ln 2).
  SmallVector<Value> seeds(n);
  for (unsigned j = 0; j < n; ++j)
    if (isActive[j])
      seeds[j] = state.adjoint(original.getResult(j));
  for (const ExpDomainCarried &carried : expDomain) {
    Value g = seeds[carried.index];
    if (!g)
      continue;
    Value exponent = arith::SubFOp::create(builder, loc, state.forward(carried.stabilizer),
                                           state.forward(original.getResult(carried.index)));
    Value inverse = carried.base2 ? math::Exp2Op::create(builder, loc, exponent).getResult()
                                  : math::ExpOp::create(builder, loc, exponent).getResult();
    if (carried.base2)
      inverse = arith::MulFOp::create(
          builder, loc, inverse,
          createFloatConstant(builder, loc, inverse.getType(), 1.0 / std::log(2.0)));
    seeds[carried.index] = arith::MulFOp::create(
        builder, loc, g, castFloat(builder, loc, inverse, getElementTypeOrSelf(g)));
  }

  SmallVector<Value> captured = capturedActiveValues(loop, active);
  SmallVector<Value> inits;
  for (unsigned j = 0; j < n; ++j)
    if (!isActive[j])
      inits.push_back(state.forward(loop.getInitArgs()[j]));
  unsigned numRecomputed = inits.size();
  for (Value value : captured)
    inits.push_back(createZero(builder, loc, summedType(value.getType())));

  auto reverse = scf::ForOp::create(builder, loc, state.forward(loop.getLowerBound()),
                                    state.forward(loop.getUpperBound()),
                                    state.forward(loop.getStep()), inits);
  Block *body = reverse.getBody();
  if (!body->empty())
    body->getTerminator()->erase();
  OpBuilder bodyBuilder = OpBuilder::atBlockEnd(body);
  IRMapping mapping = state.mapping();
  mapping.map(loop.getInductionVar(), reverse.getInductionVar());
  unsigned next = 0;
  for (unsigned j = 0; j < n; ++j) {
    BlockArgument arg = loop.getRegionIterArgs()[j];
    if (isActive[j]) {
      // Its value is never needed (only accumulated into); its adjoint is the
      // loop result's, the same in every iteration.
      mapping.map(arg, createZero(bodyBuilder, loc, arg.getType()));
    } else {
      mapping.map(arg, reverse.getRegionIterArgs()[next++]);
    }
  }
  SmallVector<Value> recomputed;
  FailureOr<SmallVector<Value>> deltas = reverseBody(
      *loop.getBody(), bodyBuilder, mapping, state, active, seeds, captured, &recomputed);
  if (failed(deltas))
    return failure();
  yieldForwardReplay(bodyBuilder, loc, isActive, recomputed, *deltas,
                     reverse.getRegionIterArgs().drop_front(numRecomputed));
  // (an exp-domain value's start is inactive: the caller checked)
  for (const ExpDomainCarried &carried : expDomain)
    isActive[carried.index] = false;
  accumulateForwardReplay(builder, state, isActive, captured,
                          reverse.getResults().drop_front(numRecomputed), original.getResults(),
                          original.getInitArgs());
  return success();
}

// The carried arguments of `loop` that carry gradients (by `active`), and
// whether each of them is a pure accumulation.
struct CarriedGradients {
  DenseSet<Value> args;
  bool accumulateOnly = true;
};

CarriedGradients carriedGradients(scf::ForOp loop, const DenseSet<Value> &active) {
  CarriedGradients carried;
  for (auto [j, arg] : llvm::enumerate(loop.getRegionIterArgs()))
    if (active.contains(arg) || active.contains(loop.getResult(j)))
      carried.args.insert(arg);
  Operation *terminator = loop.getBody()->getTerminator();
  for (BlockArgument arg : loop.getRegionIterArgs())
    if (carried.args.contains(arg) &&
        !isPureAccumulation(loop, loop.getBody(), arg,
                            terminator->getOperand(arg.getArgNumber() - 1), carried.args))
      carried.accumulateOnly = false;
  return carried;
}

// Folds what holding the stabilizers at their final value made constant:
// m - m, exp(0), shape changes of splat constants, x * 1 and x + 0 (the
// last ones by the ops' own folders). `origin` forgets erased values.
void foldSubstitutedBody(Block &body, DenseMap<Value, Value> &origin) {
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    if (op.getNumRegions() == 0 && op.getNumResults() == 1)
      ops.push_back(&op);
  for (Operation *op : ops) {
    Value result = op->getResult(0);
    OpBuilder builder(op);
    Value replacement;
    auto sub = dyn_cast<arith::SubFOp>(op);
    if (sub && sub.getLhs() == sub.getRhs()) {
      replacement = createZero(builder, op->getLoc(), result.getType());
    } else if (isa<tt::ExpandDimsOp, tt::BroadcastOp, tt::SplatOp, tt::ReshapeOp>(op)) {
      if (std::optional<double> constant = floatConstant(op->getOperand(0)))
        replacement = createFloatConstant(builder, op->getLoc(), result.getType(), *constant);
    } else {
      SmallVector<OpFoldResult> folded;
      if (succeeded(op->fold(folded)) && folded.size() == 1) {
        if (auto value = dyn_cast<Value>(folded[0]))
          replacement = value;
        else if (auto typed = dyn_cast_or_null<TypedAttr>(dyn_cast<Attribute>(folded[0]));
                 typed && typed.getType() == result.getType())
          replacement = arith::ConstantOp::create(builder, op->getLoc(), typed);
      }
    }
    if (!replacement || replacement == result)
      continue;
    result.replaceAllUsesWith(replacement);
    origin.erase(result);
    op->erase();
  }
}

// Erases the ops of `body` whose results nothing reads (the stabilizer's own
// update once it is held at its final value reads the other carried values).
void eraseDeadOps(Block &body, DenseMap<Value, Value> &origin) {
  for (bool erased = true; erased;) {
    erased = false;
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (isOpTriviallyDead(op)) {
        for (Value result : op->getResults())
          origin.erase(result);
        op->erase();
        erased = true;
      }
  }
}

// Carried value #j of `clone` (stabilizers held at `finals`) as a running
// logsumexp: its update is F + log(S) and its every read exp(c - F).
std::optional<ExpDomainCarried> runningLogSumExp(scf::ForOp clone, unsigned j,
                                                 ArrayRef<Value> finals) {
  BlockArgument carried = clone.getRegionIterArgs()[j];
  auto add = clone.getBody()->getTerminator()->getOperand(j).getDefiningOp<arith::AddFOp>();
  if (!add || add->getBlock() != clone.getBody() || carried.use_empty())
    return std::nullopt;
  for (unsigned side = 0; side < 2; ++side) {
    Value stabilizer = add->getOperand(side);
    Operation *log = add->getOperand(1 - side).getDefiningOp();
    if (!llvm::is_contained(finals, stabilizer) || !isa_and_nonnull<math::LogOp, math::Log2Op>(log))
      continue;
    bool base2 = isa<math::Log2Op>(log);
    bool readAsExp = llvm::all_of(carried.getUsers(), [&](Operation *user) {
      auto sub = dyn_cast<arith::SubFOp>(user);
      if (!sub || sub.getLhs() != carried || sub.getRhs() != stabilizer || !sub->hasOneUse())
        return false;
      Operation *exp = *sub->getUsers().begin();
      return base2 ? isa<math::Exp2Op>(exp) : isa<math::ExpOp>(exp);
    });
    if (readAsExp)
      return ExpDomainCarried{j, stabilizer, base2};
  }
  return std::nullopt;
}

// Carries `carried` of `clone` as E = exp(c - F): its reads exp(c - F) become
// E and its update the sum S inside F + log(S). Its starting value is never
// read: the forward-order reverse maps active carried values to zeros.
void carryInExpDomain(scf::ForOp clone, const ExpDomainCarried &carried,
                      DenseMap<Value, Value> &origin) {
  BlockArgument arg = clone.getRegionIterArgs()[carried.index];
  Operation *terminator = clone.getBody()->getTerminator();
  auto add = terminator->getOperand(carried.index).getDefiningOp<arith::AddFOp>();
  Operation *log = add.getLhs() == carried.stabilizer ? add.getRhs().getDefiningOp()
                                                      : add.getLhs().getDefiningOp();
  for (Operation *sub : llvm::make_early_inc_range(arg.getUsers())) {
    Operation *exp = *sub->getUsers().begin();
    exp->getResult(0).replaceAllUsesWith(Value(arg));
    origin.erase(exp->getResult(0));
    origin.erase(sub->getResult(0));
    exp->erase();
    sub->erase();
  }
  terminator->setOperand(carried.index, log->getOperand(0));
  eraseDeadOps(*clone.getBody(), origin);
}

// A loop that carries stabilizers (Analysis/ShiftInvariance.h): what it
// computes does not change with their values, so its reverse runs the body
// with every stabilizer at its final value. The rescaling factors
// exp(m_prev - m_new) fold to 1, the other carried values become pure
// accumulations, and the loop is reversed in forward order like one: O(n),
// no cache. False when the rewritten body is not such a loop.
FailureOr<bool> reverseForWithFinalStabilizers(scf::ForOp loop, OpBuilder &builder,
                                               GradientUtils &state) {
  if (!state.stabilizers())
    return false;
  SmallVector<const Stabilizer *> stabilizers = state.stabilizers()->carriedBy(loop);
  SmallVector<unsigned> held;
  for (const Stabilizer *stabilizer : stabilizers)
    held.push_back(stabilizer->carried);
  bool writes = false;
  loop.getBody()->walk([&](Operation *op) { writes |= writesMemory(op); });
  // A store's adjoint is keyed to the store op by the kernel driver.
  if (held.empty() || writes)
    return false;
  // From max = -inf the first iteration rescales the other carried values by
  // exp(-inf - m) = 0; with the final max it would rescale them by 1. Only
  // the gradient of their starting values differs: they must carry none.
  for (unsigned j : held) {
    std::optional<double> init = floatConstant(loop.getInitArgs()[j]);
    if (init && std::isinf(*init))
      for (auto [k, start] : llvm::enumerate(loop.getInitArgs()))
        if (state.isActive(start) && !llvm::is_contained(held, k))
          return false;
  }

  // The rewritten body is a clone placed at the end of the loop's block (the
  // kernel driver's analyses of its loads need it inside the function, and a
  // later loop of the family defines the final value), erased once reversed.
  OpBuilder primalBuilder(loop->getContext());
  primalBuilder.setInsertionPoint(loop->getBlock()->getTerminator());
  IRMapping cloneMap;
  auto clone = cast<scf::ForOp>(primalBuilder.clone(*loop.getOperation(), cloneMap));
  auto eraseClone = llvm::make_scope_exit([&] { clone->erase(); });
  DenseMap<Value, Value> origin;
  for (auto [primal, copy] : cloneMap.getValueMap())
    origin[copy] = primal;
  for (auto [primal, copy] : llvm::zip(loop.getResults(), clone.getResults()))
    origin[copy] = primal;
  Operation *terminator = clone.getBody()->getTerminator();
  for (const Stabilizer *stabilizer : stabilizers) {
    unsigned j = stabilizer->carried;
    Value final = stabilizer->finalValue;
    Value update = terminator->getOperand(j);
    clone.getRegionIterArgs()[j].replaceAllUsesWith(final);
    update.replaceAllUsesWith(final);
  }
  foldSubstitutedBody(*clone.getBody(), origin);
  eraseDeadOps(*clone.getBody(), origin);
  SmallVector<Value> finals;
  for (const Stabilizer *stabilizer : stabilizers)
    finals.push_back(stabilizer->finalValue);
  SmallVector<ExpDomainCarried> expDomain;
  for (unsigned j = 0; j < clone.getNumRegionIterArgs(); ++j)
    if (!llvm::is_contained(held, j) && !state.isActive(loop.getInitArgs()[j]))
      if (std::optional<ExpDomainCarried> carried = runningLogSumExp(clone, j, finals)) {
        carryInExpDomain(clone, *carried, origin);
        expDomain.push_back(*carried);
      }

  DenseSet<Value> active = state.activeSet();
  auto addIfActive = [&](Value value) {
    auto it = origin.find(value);
    if (it != origin.end() && state.isActive(it->second))
      active.insert(value);
  };
  for (Value arg : clone.getRegionIterArgs())
    addIfActive(arg);
  for (Value result : clone.getResults())
    addIfActive(result);
  clone.getBody()->walk([&](Operation *op) {
    for (Value result : op->getResults())
      addIfActive(result);
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Value arg : block.getArguments())
          addIfActive(arg);
  });
  if (!carriedGradients(clone, active).accumulateOnly)
    return false;

  if (failed(reverseAccumulatingFor(clone, loop, active, builder, state, expDomain)))
    return failure();
  {
    auto numbered = [](ArrayRef<unsigned> indices) {
      std::string list;
      for (auto [k, j] : llvm::enumerate(indices))
        list += (k ? ", #" : "#") + std::to_string(j);
      return list;
    };
    std::string how = "reversed in forward order: carried value";
    how += held.size() > 1 ? "s " : " ";
    how += numbered(held);
    how += " only stabilize" + std::string(held.size() > 1 ? "" : "s") +
           " exponentials (a stabilizer: the results do not change with its value, shift "
           "invariance checked on the IR), so it carries no gradient and the reverse uses its "
           "final value; the other carried gradients are then pure accumulations (no cache, "
           "no recomputation)";
    if (!expDomain.empty()) {
      SmallVector<unsigned> indices;
      for (const ExpDomainCarried &carried : expDomain)
        indices.push_back(carried.index);
      how += "; carried value" + std::string(indices.size() > 1 ? "s " : " ") +
             numbered(indices) + ", a running logsumexp, accumulated as exp(value - final max)";
    }
    noteLoop(state, loop, Strategy::FinalStabilizers, how);
  }
  return true;
}

LogicalResult reverseFor(scf::ForOp loop, OpBuilder &builder, GradientUtils &state) {
  const DenseSet<Value> &active = state.activeSet();
  if (!carriedGradients(loop, active).accumulateOnly) {
    FailureOr<bool> stabilized = reverseForWithFinalStabilizers(loop, builder, state);
    if (failed(stabilized))
      return failure();
    if (*stabilized)
      return success();
    // A loop of a family must be reversed with the family's final value, as
    // the others are (their adjoints are of the values that makes).
    if (state.stabilizers())
      for (const Stabilizer *stabilizer : state.stabilizers()->carriedBy(loop))
        if (stabilizer->familySize > 1)
          return loop.emitError("cannot differentiate this loop: its running max continues "
                                "another loop's (one stabilizer family), but its other carried "
                                "values do not become accumulations when the max is held at "
                                "its final value; write the loops as one loop");
    FailureOr<bool> taped = reverseForByTape(loop, builder, state);
    if (failed(taped))
      return failure();
    if (*taped)
      return success();
    return reverseForByRecomputation(loop, builder, state);
  }
  noteLoop(state, loop, Strategy::ForwardOrder,
           "reversed in forward order: its carried gradients are pure "
           "accumulations (no cache, no recomputation)");
  return reverseAccumulatingFor(loop, loop, active, builder, state);
}

// scf.while, replayed in forward order like scf.for: the condition is
// recomputed from the inactive carried values (so the trip count is the
// forward's), and active carried values must be pure accumulations.
LogicalResult reverseWhile(scf::WhileOp loop, OpBuilder &builder, GradientUtils &state) {
  Location loc = loop.getLoc();
  const DenseSet<Value> &active = state.activeSet();
  Block &before = loop.getBefore().front();
  Block &after = loop.getAfter().front();
  scf::ConditionOp condition = loop.getConditionOp();
  unsigned n = loop.getInits().size();
  bool forwardsCarried = condition.getArgs().size() == n && after.getNumArguments() == n;
  for (unsigned j = 0; forwardsCarried && j < n; ++j)
    forwardsCarried = condition.getArgs()[j] == before.getArgument(j);
  if (!forwardsCarried)
    return loop.emitError("cannot differentiate this scf.while: its condition region must "
                          "forward the carried values unchanged (as Triton's `while` does)");
  SmallVector<bool> isActive(n);
  DenseSet<Value> carried;
  for (unsigned j = 0; j < n; ++j) {
    isActive[j] = active.contains(before.getArgument(j)) || active.contains(after.getArgument(j)) ||
                  active.contains(loop.getResult(j));
    if (isActive[j])
      carried.insert(after.getArgument(j));
  }
  for (unsigned j = 0; j < n; ++j) {
    if (!isActive[j])
      continue;
    BlockArgument inBefore = before.getArgument(j);
    if (!inBefore.hasOneUse() || inBefore.getUses().begin()->getOwner() != condition)
      return loop.emitError("cannot differentiate this scf.while: its condition depends on "
                            "the differentiated carried value #")
             << j;
    if (failed(checkAccumulation(loop, &after, j, after.getArgument(j),
                                 loop.getYieldOp()->getOperand(j), carried)))
      return failure();
  }

  SmallVector<Value> captured = capturedActiveValues(loop, active);
  SmallVector<Value> inits;
  for (unsigned j = 0; j < n; ++j)
    if (!isActive[j])
      inits.push_back(state.forward(loop.getInits()[j]));
  unsigned numRecomputed = inits.size();
  for (Value value : captured)
    inits.push_back(createZero(builder, loc, summedType(value.getType())));
  SmallVector<Type> types;
  SmallVector<Location> locs;
  for (Value init : inits) {
    types.push_back(init.getType());
    locs.push_back(loc);
  }
  auto reverse = scf::WhileOp::create(builder, loc, types, inits);
  Block *reverseBefore = builder.createBlock(&reverse.getBefore(), {}, types, locs);
  Block *reverseAfter = builder.createBlock(&reverse.getAfter(), {}, types, locs);
  builder.setInsertionPointAfter(reverse);

  // Condition: recomputed from the inactive carried values.
  OpBuilder beforeBuilder = OpBuilder::atBlockEnd(reverseBefore);
  IRMapping beforeMapping = state.mapping();
  unsigned next = 0;
  for (unsigned j = 0; j < n; ++j)
    if (!isActive[j])
      beforeMapping.map(before.getArgument(j), reverseBefore->getArgument(next++));
  for (Operation &op : before.without_terminator())
    cloneForRecompute(op, beforeBuilder, beforeMapping, state.residuals());
  scf::ConditionOp::create(beforeBuilder, loc,
                           beforeMapping.lookupOrDefault(condition.getCondition()),
                           reverseBefore->getArguments());

  // Body: recompute, then sweep it backward.
  OpBuilder bodyBuilder = OpBuilder::atBlockEnd(reverseAfter);
  IRMapping mapping = state.mapping();
  SmallVector<Value> seeds(n);
  next = 0;
  for (unsigned j = 0; j < n; ++j) {
    BlockArgument arg = after.getArgument(j);
    if (isActive[j]) {
      mapping.map(arg, createZero(bodyBuilder, loc, arg.getType()));
      seeds[j] = state.adjoint(loop.getResult(j));
    } else {
      mapping.map(arg, reverseAfter->getArgument(next++));
    }
  }
  SmallVector<Value> recomputed;
  FailureOr<SmallVector<Value>> deltas =
      reverseBody(after, bodyBuilder, mapping, state, active, seeds, captured, &recomputed);
  if (failed(deltas))
    return failure();
  yieldForwardReplay(bodyBuilder, loc, isActive, recomputed, *deltas,
                     ValueRange(reverseAfter->getArguments()).drop_front(numRecomputed));
  accumulateForwardReplay(builder, state, isActive, captured,
                          reverse.getResults().drop_front(numRecomputed), loop.getResults(),
                          loop.getInits());
  return success();
}

LogicalResult reverseIf(scf::IfOp branch, OpBuilder &builder, GradientUtils &state) {
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
                                                         mapping, state, state.activeSet(), seeds,
                                                         captured);
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


// One model for scf.for, scf.while and scf.if: `Reverse` emits the reverse of
// the op; the bodies are checked like the block around them.
template <typename OpT, LogicalResult (*Reverse)(OpT, OpBuilder &, GradientUtils &)>
struct RegionModel : public ReverseModeOpInterface::ExternalModel<RegionModel<OpT, Reverse>, OpT> {
  LogicalResult emitAdjoint(Operation *op, OpBuilder &builder, GradientUtils &gutils) const {
    return Reverse(cast<OpT>(op), builder, gutils);
  }
  bool needsAdjoint(Operation *op, const GradientUtils &gutils) const {
    return carriesGradient(*op, gutils);
  }
  LogicalResult verifyDifferentiable(Operation *op, const GradientUtils &gutils) const {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        if (failed(checkDifferentiable(block, gutils)))
          return failure();
    return success();
  }
};

} // namespace

void tritonad::registerScfReverseModeRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, scf::SCFDialect *) {
    scf::ForOp::attachInterface<RegionModel<scf::ForOp, reverseFor>>(*context);
    scf::WhileOp::attachInterface<RegionModel<scf::WhileOp, reverseWhile>>(*context);
    scf::IfOp::attachInterface<RegionModel<scf::IfOp, reverseIf>>(*context);
  });
}
