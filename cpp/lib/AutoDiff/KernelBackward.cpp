#include "tritonad/AutoDiff/KernelBackward.h"
#include "tritonad/LaunchContract.h"

#include "tritonad/Analysis/AccessAnalysis.h"
#include "tritonad/Analysis/ShiftInvariance.h"
#include "tritonad/Analysis/Activity.h"
#include "tritonad/AutoDiff/PointerInduction.h"
#include "tritonad/AutoDiff/Prepare.h"
#include "tritonad/AutoDiff/ProgramCoarsening.h"
#include "tritonad/AutoDiff/Regrid.h"
#include "tritonad/AutoDiff/ReverseModeInterface.h"

#include "ReverseSweep.h"
#include "StoresWriteOnce.h"
#include "TensorBuilders.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"

#include <set>

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

bool pointerSources(Value ptr, SmallVectorImpl<BlockArgument> &sources);


// Partial buffers: the workspace arguments of the backward kernel, and the
// shadows whose gradient goes there (slot group k of each, in order).
struct PartialBuffers {
  Value workspace; // !tt.ptr<f32 or f64>: groups x programs x slot elements
  Value slot;      // elements per slot (>= every partial shadow's span)
  SmallVector<BlockArgument> shadowed; // primal pointer arguments, group order
  // Programs along axes 1 and 2 too write the shadows (deterministic mode).
  bool acrossAxes = false;
  // Per shadow, the program axes its slots span, ascending: a slot per
  // program along them, pid_a + n_a * (pid_b + ...) (a 1-D grid: pid0). The
  // programs that differ along the other axes share a slot: they write
  // disjoint addresses of it (proved where the shadow was planned), so a
  // slot holds what they reach together, and the slots of the other axes
  // need not exist.
  DenseMap<BlockArgument, SmallVector<int>> slotAxes;
  // The union of every shadow's slot axes: the workspace's slots per group
  // are the product of the grid over them (the launch path computes it the same way).
  SmallVector<int> groupAxes;
  // Shadows every program along axis 0 adds to that took no partial buffer
  // where the grid has other axes, and why (for the schedule and a refusal).
  DenseMap<BlockArgument, std::string> declined;
};

// How a load's adjoint reaches its shadow, decided before anything of it is
// emitted (planLoadAdjoint); emission follows it (emitLoadAdjoint).
struct LoadAdjointPlan {
  enum class Write {
    // Each address is this program's alone: the plain write.
    Exclusive,
    // The plain write where a condition of the launch makes the addresses
    // the program's alone, an atomic add where it does not.
    ExclusiveWhere,
    // Deterministic mode: the plain write where the launch condition holds
    // (the launch refuses the others), with an atomic twin that Regrid may
    // take with it where `atomicTwin`.
    DeterministicWhere,
    // An atomic add.
    Atomic,
    // Deterministic mode: an atomic that re-parallelization may still replace
    // by programs of their own; one that remains is refused at launch.
    AtomicUnlessRegridded,
  };
  Write write = Write::Exclusive;
  std::string argument; // the primal pointer's name, the schedule's key
  // A store, not a read-add-write: the only write to each element.
  bool storeOnly = false;
  // A barrier before each accumulation: other threads of the program touch
  // its addresses (several load sites, or a loop revisiting them).
  bool ordered = false;
  UniformExpr condition; // ExclusiveWhere, DeterministicWhere
  bool atomicTwin = false; // DeterministicWhere
  // Where the stores cover the shadow for the launch path to skip zeroing it
  // (its condition: the emitted launch condition's, unless known here).
  std::optional<ShadowCoverage> coverage;
  bool coverageOnCondition = false;
  std::string regridMark; // AtomicUnlessRegridded: why an atomic was needed
  std::string requirement; // DeterministicWhere: the launch check's explanation
  // The schedule's entry; an earlier load site's entry stays where `keepsEarlier`.
  std::pair<Strategy, std::string> scheduled;
  bool keepsEarlier = false;
};

// How a store's or an atomic add's adjoint reads its shadow (the upstream
// gradient), decided before anything of it is emitted (planWriteAdjoint);
// emission follows it (emitWriteAdjoint). out[ptr] = v (a store) or
// out[ptr] += v (an atomic add)  =>  dv += dout[ptr], masked lanes 0.
struct WriteAdjointPlan {
  enum class Read {
    // dout is left as it is: an atomic add (the value out held before the
    // add reaches the result unchanged), or a store no later store
    // overwrites.
    Kept,
    // A later store through the same pointer overwrites this one at the
    // same address: once that store has taken the upstream gradient, this
    // one must see zero there: after the read, dout is zeroed, between
    // barriers (the read may be another thread's).
    Consumed,
  };
  Read read = Read::Kept;
  // Loops each of whose iterations rewrites the store's addresses: only the
  // last iteration's value survives, so only it reads the upstream.
  SmallVector<scf::ForOp, 2> lastIterationOf;
};

// The gradient `g` in the element type of the shadow it goes to (a partial
// buffer may be wider): an upcast of a value that was just rounded down
// takes the unrounded value instead.
Value convertForShadow(OpBuilder &builder, Location loc, Value g, Value shadowPtr) {
  auto pointer = cast<tt::PointerType>(getElementTypeOrSelf(shadowPtr.getType()));
  Type wanted = pointer.getPointeeType();
  if (getElementTypeOrSelf(g.getType()) == wanted)
    return g;
  if (auto truncate = g.getDefiningOp<arith::TruncFOp>())
    if (getElementTypeOrSelf(truncate.getIn().getType()) == wanted)
      return truncate.getIn();
  Type type = wanted;
  if (auto tensor = dyn_cast<RankedTensorType>(g.getType()))
    type = tensor.clone(wanted);
  return arith::ExtFOp::create(builder, loc, type, g);
}

// An f32 shadow of an f16/bf16 pointer: gradients that many programs add
// into are summed in f32 and rounded once (the launch path passes one where
// the schedule adds with atomics, and rounds it after the kernel).
bool widensHalfPrecision(Type primal, Type shadow) {
  auto primalPtr = dyn_cast<tt::PointerType>(primal);
  auto shadowPtr = dyn_cast<tt::PointerType>(shadow);
  return primalPtr && shadowPtr && isa<Float16Type, BFloat16Type>(primalPtr.getPointeeType()) &&
         shadowPtr.getPointeeType().isF32();
}

// A condition of the access analysis, emitted in the backward (its scalars
// are the recomputed forward's).
Value emitUniform(OpBuilder &builder, Location loc, const UniformExpr &expr,
                  const IRMapping &forward) {
  using Op = UniformExpr::Op;
  Type i64 = builder.getI64Type();
  auto operand = [&](unsigned k) { return emitUniform(builder, loc, expr.operands[k], forward); };
  switch (expr.op) {
  case Op::True:
    return arith::ConstantOp::create(builder, loc, builder.getBoolAttr(true));
  case Op::Constant:
    return arith::ConstantOp::create(builder, loc, builder.getI64IntegerAttr(expr.value));
  case Op::Scalar: {
    Value value = forward.lookupOrDefault(expr.scalar);
    return value.getType().isInteger(64) ? value
                                         : arith::ExtSIOp::create(builder, loc, i64, value);
  }
  case Op::NumPrograms: {
    auto axis = tt::ProgramIDDimAttr::get(builder.getContext(),
                                          static_cast<tt::ProgramIDDim>(expr.value));
    return arith::ExtSIOp::create(
        builder, loc, i64, tt::GetNumProgramsOp::create(builder, loc, builder.getI32Type(), axis));
  }
  case Op::Add:
    return arith::AddIOp::create(builder, loc, operand(0), operand(1));
  case Op::Sub:
    return arith::SubIOp::create(builder, loc, operand(0), operand(1));
  case Op::Mul:
    return arith::MulIOp::create(builder, loc, operand(0), operand(1));
  case Op::Min:
    return arith::MinSIOp::create(builder, loc, operand(0), operand(1));
  case Op::Max:
    return arith::MaxSIOp::create(builder, loc, operand(0), operand(1));
  case Op::LessEqual:
    return arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sle, operand(0), operand(1));
  case Op::GreaterEqual:
    return arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sge, operand(0), operand(1));
  case Op::And:
    return arith::AndIOp::create(builder, loc, operand(0), operand(1));
  case Op::Or:
    return arith::OrIOp::create(builder, loc, operand(0), operand(1));
  }
  llvm_unreachable("unknown UniformExpr op");
}

// Whether emitUniform's value of `expr` symbolizes (for the launch path):
// every op it emits does; a scalar where the recomputed forward's does.
bool symbolizable(const UniformExpr &expr, const IRMapping &forward) {
  if (expr.op == UniformExpr::Op::Scalar)
    return symbolize(forward.lookupOrDefault(expr.scalar)).has_value();
  return llvm::all_of(expr.operands,
                      [&](const UniformExpr &operand) { return symbolizable(operand, forward); });
}

// file:line:col of `loc`, for the schedule people read.
class KernelBackwardBuilder : public SweepDriver {
public:
  KernelBackwardBuilder(tt::FuncOp primal, DenseMap<BlockArgument, Value> shadows,
                        DenseSet<BlockArgument> knownPointers, KernelBackwardConfig options,
                        PartialBuffers partial)
      : primal(primal), shadows(std::move(shadows)), knownPointers(std::move(knownPointers)),
        mode(options.mode), overwrite(options.overwrite), partial(std::move(partial)) {}

  LogicalResult build(tt::FuncOp bwd, ArrayRef<Value> primalArgsInBwd,
                      KernelBackwardReport &report);

private:
  bool isShadowed(Value ptr) const override {
    BlockArgument base = baseArgument(ptr);
    return base && shadows.count(base);
  }
  LogicalResult emitLoadAdjoint(OpBuilder &builder, Operation *load,
                                GradientUtils &gutils) override {
    return emitLoadAdjoint(builder, cast<tt::LoadOp>(load), gutils);
  }
  LogicalResult emitStoreAdjoint(OpBuilder &builder, Operation *store,
                                 GradientUtils &gutils) override {
    return emitWriteAdjoint(builder, store, gutils);
  }
  bool overwritesEarlierStore(Operation *store) const override {
    return storeSites.lookup(baseArgument(store->getOperand(0))) > 1 &&
           !firstStore.lookup(store);
  }
  Value tapeRegion(OpBuilder &builder, scf::ForOp loop, int64_t bytesPerState,
                   function_ref<Value(OpBuilder &, Value)> bytesPerProgram,
                   Value &every) override;
  void noteLoop(Operation *loop, Strategy strategy, StringRef how) override;
  LogicalResult validate();
  LogicalResult validateProvenance(Operation *access, Value ptr, bool carriesFloats);
  LogicalResult classifyStoreInLoops(tt::StoreOp store);
  Value lastIterationMask(OpBuilder &builder, Location loc, ArrayRef<scf::ForOp> loops,
                          Value ptr, const IRMapping &forward, Value mask);
  bool writtenOncePerProgram(tt::LoadOp load);
  Operation *loopRevisitingThroughOtherLanes(tt::LoadOp load,
                                             SmallVectorImpl<UniformExpr> &apartWhere);
  FailureOr<Value> shadowPointer(OpBuilder &builder, Value ptr, const IRMapping &forward);
  Value shadowRoot(Value ptr) const;
  FailureOr<LoadAdjointPlan> planLoadAdjoint(tt::LoadOp load, const IRMapping &forward);
  FailureOr<WriteAdjointPlan> planWriteAdjoint(Operation *write);
  LogicalResult emitWriteAdjoint(OpBuilder &builder, Operation *write, GradientUtils &state);
  LogicalResult emitLoadAdjoint(OpBuilder &builder, tt::LoadOp load, GradientUtils &state);
  // i1: this program is the first along every axis the kernel never reads
  // (null when it reads them all).
  Value firstDuplicate(OpBuilder &builder, Location loc) {
    Value result;
    for (int axis = 0; axis < 3; ++axis) {
      if (usedAxes[axis])
        continue;
      Value pid = tt::GetProgramIdOp::create(
          builder, loc, builder.getI32Type(),
          tt::ProgramIDDimAttr::get(builder.getContext(), static_cast<tt::ProgramIDDim>(axis)));
      Value zero = arith::ConstantOp::create(builder, loc, builder.getI32IntegerAttr(0));
      Value isFirst = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, pid, zero);
      result = result ? arith::AndIOp::create(builder, loc, result, isFirst).getResult() : isFirst;
    }
    return result;
  }

  void placePartialShadows(OpBuilder &builder, Location loc);

public:
  /// The backward's `tritonad_tape` argument (bytes) and the interval of
  /// the states it keeps (`tritonad_tape_every`, i32), if it has them.
  void setTape(Value bytes, Value keptEvery) {
    tape = bytes;
    tapeEvery = keptEvery;
  }
  /// The primal's loads of the values the forward saved (Residuals.h).
  void setResiduals(Residuals saved) { residuals = std::move(saved); }
  /// How each loop of the primal was reversed.
  Strategy loopStrategy(Operation *loop) const {
    return loopStrategies.lookup_or(loop, Strategy::Replayed);
  }

private:
  Value tape, tapeEvery;
  bool tapeTaken = false; // one taped loop per kernel: its region is the program's
  std::vector<LoopTape> tapes;
  std::vector<ScheduleEntry> loopNotes; // one per reversed loop, for the schedule
  DenseMap<Operation *, Strategy> loopStrategies;
  Residuals residuals;

  tt::FuncOp primal;
  DenseMap<BlockArgument, Value> shadows; // primal pointer argument -> shadow argument of bwd
  // Pointer arguments the caller named, with or without a shadow: a float
  // access through any other pointer argument is an error, not "no gradient".
  DenseSet<BlockArgument> knownPointers;
  // Stores inside loops that rewrite the same addresses every iteration: only
  // the last iteration's value survives, so only it reads the upstream.
  DenseMap<Operation *, SmallVector<scf::ForOp>> lastIterationOnly;
  AccumulationMode mode;
  bool overwrite;
  PartialBuffers partial;
  DenseSet<BlockArgument> inPartialBuffer;
  // primal argument name -> how its gradient is accumulated
  llvm::StringMap<std::pair<Strategy, std::string>> schedule;
  std::vector<ShadowCoverage> coverage;  // shadows stored once per element, and where
  std::vector<LaunchRequirement> requirements; // deterministic plain writes, checked at launch
  DenseMap<BlockArgument, std::string> shadowNames; // primal pointer -> its shadow's name
  bool usedAxes[3] = {false, false, false};
  DenseMap<BlockArgument, int> loadSites;  // shadowed argument -> loads of it
  // shadowed argument loaded at several places -> whether the union of their
  // addresses is exclusive per program (analyzed at its first accumulation)
  DenseMap<BlockArgument, ExclusiveAccess> unionAccess;
  ExclusiveAccess exclusiveUnion(BlockArgument base);
  DenseMap<BlockArgument, int> storeSites; // shadowed argument -> stores through it
  DenseMap<Operation *, bool> firstStore;  // the forward-first store of its argument
  DenseSet<BlockArgument> atomicallyAdded; // shadowed arguments the forward atomically adds to
};

LogicalResult KernelBackwardBuilder::validate() {
  DenseSet<BlockArgument> loaded, stored, plainStored;
  WalkResult walk = primal.walk([&](Operation *op) {
    if (residualIndex(op))
      return WalkResult::advance(); // scratch memory of tritonad's own
    if (isa<tt::LoadOp, tt::StoreOp, tt::AtomicRMWOp, tt::AtomicCASOp>(op) &&
        !isDifferentiableType(isa<tt::LoadOp>(op) ? op->getResult(0).getType()
                                                  : op->getOperand(1).getType())) {
      // Differentiated memory reinterpreted as integers (a pointer bitcast,
      // as tl.atomic_max of floats does): the gradient cannot follow the bits.
      SmallVector<BlockArgument> sources;
      (void)pointerSources(op->getOperand(0), sources);
      for (BlockArgument source : sources)
        if (auto pointer = dyn_cast<tt::PointerType>(source.getType());
            pointer && shadows.count(source) && isDifferentiableType(pointer.getPointeeType())) {
          op->emitError("cannot differentiate an access to the differentiated pointer '")
              << argumentName(source) << "' as integers (its pointer is bitcast"
              << (isa<tt::AtomicRMWOp, tt::AtomicCASOp>(op)
                      ? ", as tl.atomic_max and tl.atomic_min of floats do"
                      : "")
              << "): the gradient cannot follow the bits; pass None for its shadow if it "
              << "needs none";
          return WalkResult::interrupt();
        }
    }
    if (isa<tt::LoadOp, tt::StoreOp>(op)) {
      BlockArgument traced = baseArgumentThroughLoops(op->getOperand(0));
      if (traced && shadows.count(traced) && baseArgument(op->getOperand(0)) != traced) {
        op->emitError("cannot differentiate an access through a pointer carried by a loop "
                      "other than `ptrs += step` with a loop-invariant step (or after the "
                      "loop); compute the pointer from the loop's induction variable instead");
        return WalkResult::interrupt();
      }
    }
    if (auto load = dyn_cast<tt::LoadOp>(op)) {
      if (BlockArgument base = baseArgument(load.getPtr()))
        loaded.insert(base);
      if (failed(validateProvenance(op, load.getPtr(), isDifferentiableType(load.getType()))))
        return WalkResult::interrupt();
    } else if (auto store = dyn_cast<tt::StoreOp>(op)) {
      if (BlockArgument base = baseArgument(store.getPtr()))
        stored.insert(base);
      else if (!shadows.empty()) {
        op->emitError("cannot differentiate a store through a pointer that is not computed "
                      "from a kernel argument (splat/addptr/broadcast)");
        return WalkResult::interrupt();
      }
      bool floats = isDifferentiableType(store.getValue().getType());
      if (failed(validateProvenance(op, store.getPtr(), floats)) ||
          (floats && isShadowed(store.getPtr()) && failed(classifyStoreInLoops(store))))
        return WalkResult::interrupt();
    } else if (auto rmw = dyn_cast<tt::AtomicRMWOp>(op)) {
      // Y[ptr] += v commutes with every other add: the final Y is the sum
      // whatever the order, so each add reads the upstream at its addresses.
      bool floats = isDifferentiableType(rmw.getVal().getType());
      BlockArgument base = baseArgument(rmw.getPtr());
      if (base && shadows.count(base)) {
        if (rmw.getAtomicRmwOp() != tt::RMWOp::FADD || !floats) {
          op->emitError("cannot differentiate an atomic ")
              << stringifyRMWOp(rmw.getAtomicRmwOp()) << " of "
              << (floats ? "floats" : "integers") << " into a differentiated pointer: only atomic adds of floats carry a "
              << "gradient (an atomic max, min or exchange keeps one program's value, and "
              << "tritonad cannot tell which)";
          return WalkResult::interrupt();
        }
        stored.insert(base);
        atomicallyAdded.insert(base);
      }
      if (failed(validateProvenance(op, rmw.getPtr(), floats)))
        return WalkResult::interrupt();
    } else if (auto cas = dyn_cast<tt::AtomicCASOp>(op)) {
      BlockArgument base = baseArgument(cas.getPtr());
      if (base && shadows.count(base)) {
        op->emitError("cannot differentiate tl.atomic_cas into a differentiated pointer: the "
                      "value that survives depends on the order of the programs");
        return WalkResult::interrupt();
      }
    }
    if (auto store = dyn_cast<tt::StoreOp>(op))
      if (BlockArgument base = baseArgument(store.getPtr()))
        plainStored.insert(base);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  for (BlockArgument arg : atomicallyAdded)
    if (plainStored.contains(arg))
      return primal.emitError("pointer argument '")
             << argumentName(arg) << "' is both stored to and atomically added to: which "
             << "values survive depends on the order of the programs, so tritonad cannot "
             << "route its gradient; use one of the two for it";
  for (auto &[arg, shadow] : shadows)
    if (loaded.contains(arg) && stored.contains(arg))
      return primal.emitError("pointer argument '")
             << argumentName(arg) << "' is both loaded and stored (updated in place); tritonad "
             << "cannot tell the loaded values from the stored ones: write the result to a "
             << "separate output, or pass None for its shadow";
  return success();
}

// Pointer arguments `ptr` may be computed from, through any op; false when
// it may also come from somewhere else (memory, a while loop's state).
bool pointerSources(Value ptr, SmallVectorImpl<BlockArgument> &sources) {
  SmallVector<Value> worklist{ptr};
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      Operation *owner = arg.getOwner()->getParentOp();
      if (isa<tt::FuncOp>(owner)) {
        sources.push_back(arg);
      } else if (auto loop = dyn_cast<scf::ForOp>(owner)) {
        if (arg == loop.getInductionVar())
          continue;
        unsigned j = arg.getArgNumber() - 1;
        worklist.push_back(loop.getInitArgs()[j]);
        worklist.push_back(loop.getBody()->getTerminator()->getOperand(j));
      } else {
        return false;
      }
      continue;
    }
    Operation *def = value.getDefiningOp();
    if (isa<tt::LoadOp>(def))
      return false; // a pointer read from memory
    if (auto loop = dyn_cast<scf::ForOp>(def)) {
      unsigned j = cast<OpResult>(value).getResultNumber();
      worklist.push_back(loop.getInitArgs()[j]);
      worklist.push_back(loop.getBody()->getTerminator()->getOperand(j));
      continue;
    }
    if (auto branch = dyn_cast<scf::IfOp>(def)) {
      unsigned j = cast<OpResult>(value).getResultNumber();
      worklist.push_back(branch.thenYield().getOperand(j));
      if (!branch.getElseRegion().empty())
        worklist.push_back(branch.elseYield().getOperand(j));
      continue;
    }
    if (def->getNumRegions() != 0)
      return false;
    for (Value operand : def->getOperands())
      if (isa<tt::PointerType>(getElementTypeOrSelf(operand.getType())))
        worklist.push_back(operand);
  }
  return true;
}

LogicalResult KernelBackwardBuilder::validateProvenance(Operation *access, Value ptr,
                                                        bool carriesFloats) {
  if (!carriesFloats || shadows.empty())
    return success();
  StringRef what = isa<tt::LoadOp>(access)        ? "load"
                   : isa<tt::AtomicRMWOp>(access) ? "atomic add"
                                                  : "store";
  BlockArgument base = baseArgument(ptr);
  if (base && base.getOwner() == &primal.getBody().front()) {
    if (shadows.count(base) || knownPointers.contains(base))
      return success();
    std::string name = argumentName(base);
    if (llvm::count_if(primal.getArguments(), [&](BlockArgument arg) {
          return argumentName(arg) == name;
        }) > 1)
      return access->emitError("this ")
             << what << " goes through an element of the tuple parameter '" << name
             << "': tritonad does not differentiate tuples of pointers yet; pass the pointers "
             << "as separate parameters";
    return access->emitError("this ")
           << what << " goes through pointer parameter '" << name
           << "', which tritonad was not told about, so its gradient would be lost: name it in "
           << "pointers=(...) of tritonad.grad (or report the kernel: tritonad reads the "
           << "pointers from its source)";
  }
  SmallVector<BlockArgument> sources;
  bool known = pointerSources(ptr, sources);
  if (known && llvm::all_of(sources, [&](BlockArgument arg) {
        return knownPointers.contains(arg) && !shadows.count(arg);
      }))
    return success(); // only pointers whose gradient nobody asked for
  return access->emitError("cannot differentiate this ")
         << what << ": tritonad cannot tell which pointer parameter its address comes from "
         << "(a pointer chosen by tl.where, read from memory, carried by a while loop, or by a "
         << "for loop other than `ptrs += step`), so it cannot form the gradient's address; "
         << "compute the address from one pointer parameter (and the loop's counter)";
}

// Whether `value`, used inside `loop`, changes between its iterations (it
// depends on the induction variable or a carried value; a nested loop's state
// counts as varying).
bool dependsOnLoopState(Value value, scf::ForOp loop) {
  return computedFrom(value, loop, [&](BlockArgument arg) {
    return loop->isAncestor(arg.getOwner()->getParentOp());
  });
}

// Whether the addresses or the mask of a load or store change between the
// iterations of `loop`.
bool accessMovesWithLoop(Value ptr, Value mask, scf::ForOp loop) {
  return dependsOnLoopState(ptr, loop) || (mask && dependsOnLoopState(mask, loop));
}

// Whether `value` is computed from `arg` (a block argument).
bool pointerDependsOn(Value value, BlockArgument arg) {
  return computedFrom(value, nullptr, [&](BlockArgument candidate) { return candidate == arg; });
}

// A store inside loops is correct to differentiate when, for every enclosing
// loop, either each iteration writes its own addresses, or every iteration
// writes the same addresses (then only the last one's value survives).
LogicalResult KernelBackwardBuilder::classifyStoreInLoops(tt::StoreOp store) {
  SmallVector<Operation *> path; // enclosing ops, innermost first
  for (Operation *op = store->getParentOp(); op && op != primal.getOperation();
       op = op->getParentOp())
    path.push_back(op);
  for (auto [depth, op] : llvm::enumerate(path)) {
    if (isa<scf::WhileOp>(op))
      return store.emitError("cannot differentiate a store inside a while loop: tritonad "
                             "cannot tell which iteration's value survives at each address");
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!loop || isProgramLoop(loop)) // (its iterations are programs of the forward)
      continue;
    if (accessMovesWithLoop(store.getPtr(), store.getMask(), loop)) {
      IterationDisjointness disjoint =
          iterationDisjointness(store.getPtr(), store.getMask(), loop);
      if (disjoint.proven)
        continue;
      if (disjoint.condition) {
        // (a row stride that is an argument: each launch checks its rows apart)
        std::string refusal =
            "the store at " + locationText(store.getLoc()) + " writes, in the iterations of " +
            "the loop at " + locationText(loop.getLoc()) + ", tiles " + disjoint.move +
            " elements apart" +
            (disjoint.stepOnOneProgram ? " (a grid-stride step counted for one program)" : "") +
            ", each " +
            disjoint.span + " elements wide" +
            (disjoint.interleaved.empty()
                 ? std::string()
                 : ", nor do they interleave within the tile (" + disjoint.interleaved + ")") +
            ": they overlap, and the backward cannot tell which write survives; pass strides "
            "that keep the tiles apart (a row stride at least the row's width)";
        Value shadow = shadows.lookup(baseArgument(store.getPtr()));
        requirements.push_back({shadow ? argumentName(cast<BlockArgument>(shadow)) : "",
                                *disjoint.condition,
                                "iterations of the loop at " + locationText(loop.getLoc()) +
                                    " store to disjoint addresses where " + disjoint.move +
                                    " >= " + disjoint.span,
                                refusal});
        continue;
      }
      return store.emitError("cannot differentiate a store inside a loop whose addresses may "
                             "repeat across iterations (only the last write survives, and "
                             "tritonad cannot tell which one that is); give each iteration its "
                             "own addresses, e.g. offsets `k + tl.arange(0, BLOCK)` for "
                             "`k in range(0, n, BLOCK)`");
    }
    // Every iteration writes the same addresses: the last one wins, provided
    // that the last iteration does write them all.
    for (Operation *inner : ArrayRef<Operation *>(path).take_front(depth)) {
      Value condition;
      if (auto branch = dyn_cast<scf::IfOp>(inner))
        condition = branch.getCondition();
      bool varies = condition && dependsOnLoopState(condition, loop);
      if (auto innerLoop = dyn_cast<scf::ForOp>(inner))
        varies = dependsOnLoopState(innerLoop.getLowerBound(), loop) ||
                 dependsOnLoopState(innerLoop.getUpperBound(), loop) ||
                 dependsOnLoopState(innerLoop.getStep(), loop);
      if (varies || isa<scf::WhileOp>(inner))
        return store.emitError("cannot differentiate a store that rewrites the same addresses "
                               "in every iteration of a loop but only under a condition that "
                               "changes between iterations: tritonad cannot tell which "
                               "iteration's value survives");
    }
    lastIterationOnly[store].push_back(loop);
  }
  return success();
}

// Whether a program reaches each address of `load` at most once: every loop
// around it moves the addresses past the tile in each iteration.
bool KernelBackwardBuilder::writtenOncePerProgram(tt::LoadOp load) {
  for (Operation *op = load->getParentOp(); op && op != primal.getOperation();
       op = op->getParentOp()) {
    if (isa<scf::WhileOp>(op))
      return false;
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!loop)
      continue;
    if (isProgramLoop(loop)) {
      // Addresses computed from its program id are other programs' (the
      // exclusivity proof covers them); addresses that are not are revisited
      // (an inner loop's own iterations do not count here).
      if (!dependsOnProgramLoop(load.getPtr(), loop) &&
          !(load.getMask() && dependsOnProgramLoop(load.getMask(), loop)))
        return false;
      continue;
    }
    if (!iterationsTouchDisjointAddresses(load.getPtr(), load.getMask(), loop))
      return false;
  }
  return true;
}

// The loop around `load` whose iterations touch overlapping addresses through
// different lanes (a sliding window), if any. Addresses that do not move with
// a loop are revisited by the same lane (same op, same layout: same thread),
// which program order keeps consistent; disjoint ones are never revisited.
// Loops whose iterations are disjoint under a condition of the launch (a row
// stride that is an argument) add it to `apartWhere` instead.
Operation *KernelBackwardBuilder::loopRevisitingThroughOtherLanes(
    tt::LoadOp load, SmallVectorImpl<UniformExpr> &apartWhere) {
  for (Operation *op = load->getParentOp(); op && op != primal.getOperation();
       op = op->getParentOp()) {
    if (auto loop = dyn_cast<scf::WhileOp>(op)) {
      // No induction variable to reason with: addresses that move with the
      // carried values may overlap between iterations.
      if (llvm::any_of(loop.getAfter().getArguments(), [&](BlockArgument arg) {
            return pointerDependsOn(load.getPtr(), arg);
          }))
        return loop;
      continue;
    }
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!loop || isProgramLoop(loop)) // (between programs: the exclusivity proof)
      continue;
    if (!accessMovesWithLoop(load.getPtr(), load.getMask(), loop))
      continue;
    IterationDisjointness disjoint = iterationDisjointness(load.getPtr(), load.getMask(), loop);
    if (disjoint.proven)
      continue;
    if (!disjoint.uniform)
      return loop;
    apartWhere.push_back(*disjoint.uniform);
  }
  return nullptr;
}

// `mask` (of the accesses through `ptr`) restricted to the last iteration of
// each of `loops`, which rewrite those addresses in every iteration.
Value KernelBackwardBuilder::lastIterationMask(OpBuilder &builder, Location loc,
                                               ArrayRef<scf::ForOp> loops, Value ptr,
                                               const IRMapping &forward, Value mask) {
  if (loops.empty())
    return mask;
  Value isLast;
  for (scf::ForOp loop : loops) {
    Value iv = forward.lookupOrDefault(loop.getInductionVar());
    Value next = arith::AddIOp::create(builder, loc, iv, forward.lookupOrDefault(loop.getStep()));
    Value last = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sge, next,
                                       forward.lookupOrDefault(loop.getUpperBound()));
    isLast = isLast ? arith::AndIOp::create(builder, loc, isLast, last).getResult() : last;
  }
  if (auto tensor = dyn_cast<RankedTensorType>(ptr.getType()))
    isLast = tt::SplatOp::create(builder, loc, tensor.clone(builder.getI1Type()), isLast);
  return mask ? arith::AndIOp::create(builder, loc, mask, isLast).getResult() : isLast;
}

// The shadow's copy of the pointer computation of `ptr`, rebuilt from the
// shadow argument with the recomputed offsets.
FailureOr<Value> KernelBackwardBuilder::shadowPointer(OpBuilder &builder, Value ptr,
                                                      const IRMapping &forward) {
  if (auto arg = dyn_cast<BlockArgument>(ptr)) {
    if (Value shadow = shadows.lookup(arg))
      return shadow;
    return failure();
  }
  Operation *def = ptr.getDefiningOp();
  FailureOr<Value> source = shadowPointer(builder, def->getOperand(0), forward);
  if (failed(source))
    return failure();
  IRMapping mapping;
  for (Value operand : def->getOperands())
    mapping.map(operand, forward.lookupOrDefault(operand));
  mapping.map(def->getOperand(0), *source);
  Operation *clone = builder.clone(*def, mapping);
  // A partial buffer's pointee may be wider than the primal's (fp32 slots
  // for a bf16 weight): the pointer chain takes the buffer's pointer type.
  Type pointer = getElementTypeOrSelf(source->getType());
  Value result = clone->getResult(0);
  if (getElementTypeOrSelf(result.getType()) != pointer) {
    if (auto tensor = dyn_cast<RankedTensorType>(result.getType()))
      result.setType(tensor.clone(pointer));
    else
      result.setType(pointer);
  }
  return result;
}

// How the adjoint of a store or an atomic add reads its shadow: left as it
// is or consumed, on the last iteration of the loops that rewrite its
// addresses; or the located refusal. Emits no IR.
FailureOr<WriteAdjointPlan> KernelBackwardBuilder::planWriteAdjoint(Operation *write) {
  using Read = WriteAdjointPlan::Read;
  WriteAdjointPlan plan;
  auto store = dyn_cast<tt::StoreOp>(write);
  Value ptr = store ? store.getPtr() : cast<tt::AtomicRMWOp>(write).getPtr();
  if (!shadowRoot(ptr))
    return write->emitError("cannot form the shadow address of this ")
           << (store ? "store" : "atomic add");
  if (!store)
    return plan;
  if (auto it = lastIterationOnly.find(store); it != lastIterationOnly.end())
    plan.lastIterationOf.assign(it->second.begin(), it->second.end());
  if (overwritesEarlierStore(store))
    plan.read = Read::Consumed;
  return plan;
}

LogicalResult KernelBackwardBuilder::emitWriteAdjoint(OpBuilder &builder, Operation *write,
                                                      GradientUtils &state) {
  auto store = dyn_cast<tt::StoreOp>(write);
  auto add = dyn_cast<tt::AtomicRMWOp>(write);
  Value ptr = store ? store.getPtr() : add.getPtr();
  Value value = store ? store.getValue() : add.getVal();
  Value primalMask = store ? store.getMask() : add.getMask();
  // (a value that carries no gradient still takes the upstream away from an
  // earlier store it overwrites)
  bool active = state.isActive(value);
  if (!active && !(store && overwritesEarlierStore(store)))
    return success();
  FailureOr<WriteAdjointPlan> plan = planWriteAdjoint(write);
  if (failed(plan))
    return failure();
  const IRMapping &forward = state.mapping();
  Value shadow = *shadowPointer(builder, ptr, forward);
  Location loc = write->getLoc();
  Value mask = primalMask ? forward.lookupOrDefault(primalMask) : Value();
  mask = lastIterationMask(builder, loc, plan->lastIterationOf, ptr, forward, mask);
  // (an f32 shadow of an f16/bf16 tensor: read wide, taken in the value's type)
  Type shadowElement =
      cast<tt::PointerType>(getElementTypeOrSelf(shadow.getType())).getPointeeType();
  Type shadowValueType = shadowElement;
  if (auto tensor = dyn_cast<RankedTensorType>(value.getType()))
    shadowValueType = tensor.clone(shadowElement);
  if (active) {
    Value other = mask ? createZero(builder, loc, shadowValueType) : Value();
    Value upstream = castFloat(builder, loc, createLoad(builder, loc, shadow, mask, other),
                               getElementTypeOrSelf(value.getType()));
    state.accumulate(builder, value, upstream);
  }
  if (plan->read == WriteAdjointPlan::Read::Consumed) {
    // Every thread reads the upstream gradient before any thread zeroes it (a
    // scalar's store is one thread's: without this barrier the other warps of
    // the program could read the zero, a race seen on a cross-entropy whose
    // ignored rows return early).
    gpu::BarrierOp::create(builder, loc);
    createStore(builder, loc, shadow, createZero(builder, loc, shadowValueType), mask);
    // The earlier store's read may happen in another thread (another layout):
    // the barrier makes the zeros visible to every thread of the program.
    gpu::BarrierOp::create(builder, loc);
  }
  return success();
}

// The shadow argument (or partial buffer slot) that shadowPointer rebuilds
// the address of `ptr` from; null where it cannot.
Value KernelBackwardBuilder::shadowRoot(Value ptr) const {
  while (!isa<BlockArgument>(ptr))
    ptr = ptr.getDefiningOp()->getOperand(0);
  return shadows.lookup(cast<BlockArgument>(ptr));
}

// How the adjoint of `load` reaches its shadow: plain read-add-write or store,
// in a partial buffer, atomic, predicated on a launch condition, deferred to
// re-parallelization in deterministic mode; or the located refusal. Emits no IR.
FailureOr<LoadAdjointPlan> KernelBackwardBuilder::planLoadAdjoint(tt::LoadOp load,
                                                                 const IRMapping &forward) {
  using Write = LoadAdjointPlan::Write;
  Value root = shadowRoot(load.getPtr());
  if (!root)
    return load.emitError("cannot form the shadow address of this load");
  // (the element type the gradient takes in the shadow: a partial buffer's may be wider)
  Type shadowElement =
      cast<tt::PointerType>(getElementTypeOrSelf(root.getType())).getPointeeType();
  LoadAdjointPlan plan;
  BlockArgument base = baseArgument(load.getPtr());
  plan.argument = argumentName(base);
  const std::string &name = plan.argument;
  bool toPartialBuffer = inPartialBuffer.contains(base);
  // The caller's zeros (or the zeroed slot of a partial buffer) need not be
  // read where this is the only write to each element: one load site, and no
  // loop around it revisiting addresses.
  plan.storeOnly = (overwrite || toPartialBuffer) && loadSites.lookup(base) == 1 &&
                   writtenOncePerProgram(load);
  auto plainLabel = [&](StringRef why) {
    return (plan.storeOnly ? "overwrite (" : "plain (") + why.str() + ")";
  };
  // (where the shadow took no partial buffer on a grid of several axes: why)
  std::string declinedWhy = partial.declined.count(base)
                                ? "; no partial buffer: " + partial.declined.lookup(base)
                                : std::string();
  auto refusedWithoutAtomics = [&]() -> FailureOr<LoadAdjointPlan> {
    return load.emitError("cannot accumulate the gradient of '")
           << name << "' with atomics, which this kernel would need here: GPUs have no "
           << "atomic add for fp8 (load it as a wider type, or make each program own its "
           << "addresses)";
  };
  // The plan, unless it needs an atomic add the shadow's type has none of.
  auto planned = [&]() -> FailureOr<LoadAdjointPlan> {
    bool needsAtomic = plan.write == Write::Atomic || plan.write == Write::AtomicUnlessRegridded ||
                       plan.write == Write::ExclusiveWhere;
    if (needsAtomic && !hasArithmetic(shadowElement))
      return refusedWithoutAtomics();
    return plan;
  };
  // Deterministic mode: an atomic that re-parallelization may still replace
  // by programs of their own (it runs after differentiation), marked with
  // why it was needed; one that remains is then this error.
  auto deferToRegrid = [&](std::string why) {
    why += declinedWhy;
    plan.write = Write::AtomicUnlessRegridded;
    plan.regridMark = "deterministic mode: " + why;
    plan.scheduled = {Strategy::Atomic,
                      "atomic unless re-parallelized (deterministic mode: " + why + ")"};
    return planned();
  };
  if (mode == AccumulationMode::Atomic) {
    plan.write = Write::Atomic;
    plan.scheduled = {Strategy::Atomic, "atomic (atomics requested)"};
    return planned();
  }
  // Threads of one program are not ordered between two accesses: where
  // another thread may touch an address of this accumulation before or after
  // it in the same program (another load site of the pointer, or another
  // iteration of a loop that moves the addresses by less than the tile), a
  // barrier before each accumulation orders them (bar.sync orders the
  // program's global memory accesses). Triton's branch conditions and trip
  // counts are scalars, the same for every thread of a program, so the
  // barrier is reached by all of them wherever it sits.
  int sites = loadSites.lookup(base);
  SmallVector<UniformExpr> apartWhere;
  Operation *revisiting = loopRevisitingThroughOtherLanes(load, apartWhere);
  plan.ordered = sites > 1 || revisiting;
  if (plan.ordered)
    apartWhere.clear(); // (the barrier orders the iterations: no condition on them)
  std::string orderedWhy =
      sites > 1 ? "loaded at " + std::to_string(sites) + " places"
      : revisiting
          ? "the loop at " + locationText(revisiting->getLoc()) +
                " moves its addresses by less than the tile: iterations revisit addresses "
                "through other lanes"
          : "";
  auto orderedLabel = [&](std::string label) {
    if (!plan.ordered)
      return label;
    return label + "; " + orderedWhy + ", each accumulation after a barrier, in program order";
  };
  // Where every element is stored once, the caller may learn at launch time
  // that the stores cover the whole tensor (or, for a partial buffer, every
  // slot) and skip zero-filling it.
  auto coverWhere = [&](bool conditionKnown, bool onCondition) {
    if (!plan.storeOnly || !conditionKnown)
      return;
    std::optional<ShadowCoverage> covered =
        analyzeCoverage(load, load.getPtr(), load.getMask());
    if (!covered)
      return;
    covered->shadow = shadowNames.lookup(base);
    if (!onCondition) {
      SymbolicInt always;
      always.value = 1;
      covered->condition = std::move(always);
    }
    plan.coverage = std::move(covered);
    plan.coverageOnCondition = onCondition;
  };
  if (toPartialBuffer) {
    // Each program owns its slot: exclusive by construction. (Across axes, a
    // program's slot holds its part of the shadow only: no coverage.)
    coverWhere(!partial.acrossAxes, false);
    plan.write = Write::Exclusive;
    SmallVector<int> slotAxes = partial.slotAxes.lookup(base);
    std::string summed = std::string(plan.storeOnly ? "stores" : "accumulates") +
                         " their sum in its own slot; the slots are summed after the kernel: "
                         "no atomics, deterministic";
    if (!partial.acrossAxes || slotAxes.size() == 3) {
      plan.scheduled = {Strategy::PartialBuffer,
                        orderedLabel("partial buffer (every program adds to it: each program of "
                                     "the backward handles several of the forward's and " +
                                     summed) +
                            ")"};
      return planned();
    }
    // (programs along the slot's axes share the shadow's addresses; those
    // along the others were proved apart when the buffer was planned)
    std::string axes, shared;
    for (int axis : slotAxes) {
      axes += (axes.empty() ? "" : ", ") + std::to_string(axis);
      shared += (shared.empty() ? "" : " and ") + std::string(axis == 0 ? "the programs of axis 0 "
                                                                           "(each program of the "
                                                                           "backward handles "
                                                                           "several of the "
                                                                           "forward's)"
                                                                         : "the programs of axis " +
                                                                               std::to_string(axis));
    }
    plan.scheduled = {
        Strategy::PartialBuffer,
        orderedLabel("partial buffer across axes " + axes + " (" + shared +
                     " read the same addresses: each " + summed +
                     "; programs along the other axes write disjoint addresses of a slot, "
                     "so a slot is as wide as what they reach together") +
            ")"};
    return planned();
  }
  ExclusiveAccess access = sites > 1
                               ? exclusiveUnion(base)
                               : analyzeExclusiveAccess(load.getPtr(), load.getMask(), usedAxes);
  // Iterations apart only for some launches (a runtime row stride): exclusive
  // where that holds as well.
  for (UniformExpr &apart : apartWhere) {
    if (access.known && !*access.known)
      break;
    UniformExpr both;
    both.op = UniformExpr::Op::And;
    both.operands = {access.known ? UniformExpr() : access.condition, std::move(apart)};
    access.condition = std::move(both);
    access.known = std::nullopt;
  }
  if (access.known && *access.known) {
    coverWhere(true, false);
    plan.write = Write::Exclusive;
    plan.scheduled = {plan.storeOnly ? Strategy::Overwrite : Strategy::Plain,
                      plainLabel(orderedLabel(access.explanation))};
    plan.keepsEarlier = true;
    return planned();
  }
  if (mode == AccumulationMode::Deterministic) {
    // Exclusive for some launches: the plain write, and the launch path
    // refuses the others (no atomic to fall back on).
    if (access.known || !symbolizable(access.condition, forward))
      return deferToRegrid("cannot prove that each address of '" + name +
                           "' is touched by one program only (" +
                           (sites > 1 ? "loaded at " + std::to_string(sites) + " places: "
                                      : std::string()) +
                           access.explanation + "); accumulating its gradient needs atomics");
    coverWhere(true, true);
    plan.write = Write::DeterministicWhere;
    plan.condition = access.condition;
    // (with an atomic twin that Regrid may take with it, giving the sum
    // programs of its own that need no condition, or scatter slots may
    // take where the condition fails; else it goes and the launch refuses)
    plan.atomicTwin = hasArithmetic(shadowElement);
    plan.requirement = access.explanation + declinedWhy;
    plan.scheduled = {plan.storeOnly ? Strategy::Overwrite : Strategy::Plain,
                      plainLabel(orderedLabel(std::string("deterministic mode: each address "
                                                          "written by one program where ") +
                                              kRuntimeCondition + ", which the launch checks" +
                                              declinedWhy))};
    return planned();
  }
  if (access.known && !*access.known) {
    plan.write = Write::Atomic;
    plan.scheduled = {Strategy::Atomic, "atomic (" +
                                            (plan.ordered ? orderedWhy + ": " : std::string()) +
                                            access.explanation + ")"};
    return planned();
  }
  // Exclusive only for some launch configurations: checked at run time.
  coverWhere(symbolizable(access.condition, forward), true);
  plan.write = Write::ExclusiveWhere;
  plan.condition = access.condition;
  plan.scheduled = {plan.storeOnly ? Strategy::OverwriteWhenDisjoint
                                   : Strategy::PlainWhenDisjoint,
                    orderedLabel((plan.storeOnly ? "overwrite when " : "plain when ") +
                                 std::string(kRuntimeCondition) +
                                 ", else atomic (predicated on a condition uniform over the "
                                 "program)")};
  return planned();
}

LogicalResult KernelBackwardBuilder::emitLoadAdjoint(OpBuilder &builder, tt::LoadOp load,
                                                     GradientUtils &state) {
  // v = x[ptr]  =>  dx[ptr] += dv
  using Write = LoadAdjointPlan::Write;
  Value g = state.adjoint(load.getResult());
  if (!g)
    return success();
  const IRMapping &forward = state.mapping();
  FailureOr<LoadAdjointPlan> plan = planLoadAdjoint(load, forward);
  if (failed(plan))
    return failure();
  Value shadow = *shadowPointer(builder, load.getPtr(), forward);
  Location loc = load.getLoc();
  Value mask = load.getMask() ? forward.lookupOrDefault(load.getMask()) : Value();
  g = convertForShadow(builder, loc, g, shadow);
  // Accesses are predicated rather than branched: Triton 3.6's Hopper pipeliner
  // fails on a dot result consumed inside an scf.if of a pipelined loop.
  auto emitPlain = [&](Value mask) {
    if (plan->ordered)
      gpu::BarrierOp::create(builder, loc);
    if (plan->storeOnly) {
      createStore(builder, loc, shadow, g, mask);
      return;
    }
    Value other = mask ? createZero(builder, loc, g.getType()) : Value();
    Value old = createLoad(builder, loc, shadow, mask, other);
    createStore(builder, loc, shadow, addFloats(builder, loc, old, g), mask);
  };
  auto emitAtomic = [&](Value mask) { return createAtomicAdd(builder, loc, shadow, g, mask); };
  // (marked as twins, for Regrid: the atomic may get programs of its own)
  // (not where several accumulations share the shadow: Regrid takes a twin
  // whole, and would leave the others behind; unmarked, it keeps the atomics)
  auto markLast = [&](StringRef mark) {
    if (!plan->ordered)
      std::prev(builder.getInsertionPoint())->setAttr(mark, builder.getUnitAttr());
  };
  // The launch condition's value (symbolized for the launch path: the plan
  // made sure it can be), and the coverage it conditions.
  auto emitCondition = [&](std::optional<SymbolicInt> &symbol) {
    Value exclusive = emitUniform(builder, loc, plan->condition, forward);
    symbol = symbolize(exclusive);
    if (plan->coverageOnCondition)
      plan->coverage->condition = *symbol;
    return exclusive;
  };
  auto negated = [&](Value condition) -> Value {
    Value always = arith::ConstantOp::create(builder, loc, builder.getBoolAttr(true));
    return arith::XOrIOp::create(builder, loc, condition, always);
  };

  // Programs along an axis the kernel never reads are duplicates of the first
  // one (they store the same values to the same places): only it accumulates.
  if (Value first = firstDuplicate(builder, loc))
    mask = predicate(builder, loc, mask, first, g.getType());
  switch (plan->write) {
  case Write::Exclusive:
    emitPlain(mask);
    break;
  case Write::Atomic:
    emitAtomic(mask);
    break;
  case Write::AtomicUnlessRegridded:
    emitAtomic(mask)->setAttr(kUnlessRegridded, builder.getStringAttr(plan->regridMark));
    break;
  case Write::DeterministicWhere: {
    std::optional<SymbolicInt> condition;
    Value exclusive = emitCondition(condition);
    emitPlain(predicate(builder, loc, mask, exclusive, g.getType()));
    if (plan->atomicTwin) {
      markLast(kWhenExclusive);
      Value otherwise = negated(exclusive);
      emitAtomic(predicate(builder, loc, mask, otherwise, g.getType()))
          ->setAttr(kRefusedUnlessExclusive, builder.getUnitAttr());
      markLast(kUnlessExclusive);
    }
    requirements.push_back(
        {shadowNames.lookup(baseArgument(load.getPtr())), *condition, plan->requirement});
    break;
  }
  case Write::ExclusiveWhere: {
    std::optional<SymbolicInt> condition;
    Value exclusive = emitCondition(condition);
    Value otherwise = negated(exclusive);
    emitPlain(predicate(builder, loc, mask, exclusive, g.getType()));
    markLast(kWhenExclusive);
    emitAtomic(predicate(builder, loc, mask, otherwise, g.getType()));
    markLast(kUnlessExclusive);
    break;
  }
  }
  if (plan->coverage)
    coverage.push_back(std::move(*plan->coverage));
  if (!plan->keepsEarlier || !schedule.count(plan->argument))
    schedule[plan->argument] = plan->scheduled;
  return success();
}

// The union of the addresses of every load of `base`, analyzed once.
ExclusiveAccess KernelBackwardBuilder::exclusiveUnion(BlockArgument base) {
  auto it = unionAccess.find(base);
  if (it != unionAccess.end())
    return it->second;
  SmallVector<std::pair<Value, Value>> accesses;
  primal.walk([&](tt::LoadOp load) {
    if (baseArgument(load.getPtr()) == base)
      accesses.push_back({load.getPtr(), load.getMask()});
  });
  return unionAccess[base] = analyzeExclusiveUnion(accesses, usedAxes);
}

// Slot k * programs + pid of the workspace holds this program's part of the
// k-th partial shadow, addressed like the shadow itself: programs, the grid's
// product over the axes of any shadow's slots; pid, the program's index over
// the axes of this shadow's own.
void KernelBackwardBuilder::placePartialShadows(OpBuilder &builder, Location loc) {
  if (partial.shadowed.empty())
    return;
  Type i64 = builder.getI64Type();
  Value ids[3], counts[3];
  Value count;
  for (int axis : llvm::reverse(partial.groupAxes)) {
    auto dim = tt::ProgramIDDimAttr::get(builder.getContext(), static_cast<tt::ProgramIDDim>(axis));
    ids[axis] = arith::ExtSIOp::create(
        builder, loc, i64, tt::GetProgramIdOp::create(builder, loc, builder.getI32Type(), dim));
    counts[axis] = arith::ExtSIOp::create(
        builder, loc, i64, tt::GetNumProgramsOp::create(builder, loc, builder.getI32Type(), dim));
    count = count ? arith::MulIOp::create(builder, loc, counts[axis], count).getResult()
                  : counts[axis];
  }
  // (this program's index over `axes`, the outermost axis first)
  DenseMap<unsigned, Value> pidOver; // axes as a bit set -> index
  auto pidOf = [&](ArrayRef<int> axes) {
    unsigned bits = 0;
    for (int axis : axes)
      bits |= 1u << axis;
    Value &pid = pidOver[bits];
    if (!pid)
      for (int axis : llvm::reverse(axes))
        pid = pid ? arith::AddIOp::create(builder, loc, ids[axis],
                                          arith::MulIOp::create(builder, loc, counts[axis], pid))
                        .getResult()
                  : ids[axis];
    return pid;
  };
  pidOf(partial.groupAxes);
  Value slot = partial.slot;
  if (slot.getType() != i64)
    slot = arith::ExtSIOp::create(builder, loc, i64, slot);
  for (auto [group, arg] : llvm::enumerate(partial.shadowed)) {
    Value pid = pidOf(partial.slotAxes.lookup(arg));
    Value first = arith::ConstantOp::create(builder, loc, builder.getI64IntegerAttr(group));
    Value index = arith::AddIOp::create(
        builder, loc, arith::MulIOp::create(builder, loc, first, count), pid);
    Value offset = arith::MulIOp::create(builder, loc, index, slot);
    shadows[arg] = tt::AddPtrOp::create(builder, loc, partial.workspace.getType(),
                                        partial.workspace, offset);
    inPartialBuffer.insert(arg);
  }
}

Value KernelBackwardBuilder::tapeRegion(OpBuilder &b, scf::ForOp loop, int64_t bytesPerState,
                                        function_ref<Value(OpBuilder &, Value)> bytesPerProgram,
                                        Value &every) {
  if (!tape || tapeTaken)
    return Value();
  // The launcher sizes the tape: the trip count must follow from the
  // arguments alone (not from a program id or an enclosing loop).
  std::optional<SymbolicInt> lower = symbolize(loop.getLowerBound());
  std::optional<SymbolicInt> upper = symbolize(loop.getUpperBound());
  std::optional<SymbolicInt> step = symbolize(loop.getStep());
  if (!lower || !upper || !step)
    return Value();
  using Op = SymbolicInt::Op;
  SymbolicInt rounded =
      SymbolicInt::of(Op::Add, {SymbolicInt::of(Op::Sub, {*upper, *lower}),
                                SymbolicInt::of(Op::Sub, {*step, SymbolicInt::constant(1)})});
  SymbolicInt trips = SymbolicInt::of(
      Op::Max, {SymbolicInt::of(Op::DivS, {rounded, *step}), SymbolicInt::constant(0)});
  tapeTaken = true;
  tapes.push_back({locationText(loop.getLoc()), bytesPerState, trips});
  Location loc = loop.getLoc();
  Type i64 = b.getI64Type();
  // The interval of kept states, chosen at launch (1 without the argument).
  every = tapeEvery ? arith::ExtSIOp::create(b, loc, i64, tapeEvery).getResult()
                    : arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(1)).getResult();
  every = arith::MaxSIOp::create(
      b, loc, every, arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(1)));
  // This program's region: programs are numbered x fastest.
  Value program = linearProgramId(b, loc, {true, true, true});
  Value offset = arith::MulIOp::create(b, loc, program, bytesPerProgram(b, every));
  return tt::AddPtrOp::create(b, loc, tape.getType(), tape, offset).getResult();
}

void KernelBackwardBuilder::noteLoop(Operation *loop, Strategy strategy, StringRef how) {
  loopStrategies[loop] = strategy;
  ScheduleEntry entry;
  auto forLoop = dyn_cast<scf::ForOp>(loop);
  if (forLoop && isProgramLoop(forLoop)) {
    entry.kind = ScheduleEntry::Kind::Programs;
    entry.strategy = Strategy::GridStride;
    entry.how = "each program of the backward handles programs p, p + G, p + 2G, ... of the "
                "forward (G launched, a grid-stride loop), for the partial buffers";
  } else {
    entry.kind = ScheduleEntry::Kind::Loop;
    entry.subject = loop->getName().getStringRef().str();
    entry.location = locationText(loop->getLoc());
    entry.strategy = strategy;
    entry.how = how.str();
  }
  loopNotes.push_back(std::move(entry));
}

LogicalResult KernelBackwardBuilder::build(tt::FuncOp bwd, ArrayRef<Value> primalArgsInBwd,
                                           KernelBackwardReport &report) {
  if (failed(validate()))
    return failure();
  for (auto &[arg, shadow] : shadows)
    shadowNames[arg] = argumentName(cast<BlockArgument>(shadow));
  for (BlockArgument arg : partial.shadowed) {
    report.partialShadows.push_back(shadowNames.lookup(arg));
    SmallVector<int> axes = partial.slotAxes.lookup(arg);
    report.partialSlotAxes.emplace_back(axes.begin(), axes.end());
  }
  primal.walk([&](tt::GetProgramIdOp pid) { usedAxes[static_cast<int>(pid.getAxis())] = true; });
  // Programs along an axis the kernel never reads repeat each other's
  // stores, but each of their atomic adds counts: they are not duplicates.
  if (!atomicallyAdded.empty())
    std::fill(std::begin(usedAxes), std::end(usedAxes), true);
  if (failed(checkStoresWriteOnce(
          primal, usedAxes,
          [&](tt::StoreOp store) {
            return isShadowed(store.getPtr()) &&
                   isDifferentiableType(store.getValue().getType());
          },
          [&](tt::StoreOp store) { return shadowNames.lookup(baseArgument(store.getPtr())); },
          requirements)))
    return failure();
  primal.walk([&](Operation *op) {
    if (auto load = dyn_cast<tt::LoadOp>(op))
      if (isShadowed(load.getPtr()))
        ++loadSites[baseArgument(load.getPtr())];
    if (auto store = dyn_cast<tt::StoreOp>(op))
      if (isShadowed(store.getPtr()))
        firstStore[op] = storeSites[baseArgument(store.getPtr())]++ == 0;
  });
  Block &primalBody = primal.getBody().front();
  auto loadVaries = [&](Value value) {
    auto load = value.getDefiningOp<tt::LoadOp>();
    return load && isShadowed(load.getPtr());
  };
  auto storedThroughShadow = [&](OpOperand &operand) {
    Operation *owner = operand.getOwner();
    if (auto store = dyn_cast<tt::StoreOp>(owner))
      return operand.get() == store.getValue() && isShadowed(store.getPtr());
    if (auto add = dyn_cast<tt::AtomicRMWOp>(owner))
      return operand.get() == add.getVal() && isShadowed(add.getPtr());
    return false;
  };
  Stabilizers stabilizers = findStabilizers(primal);
  ActivitySeeds seeds{loadVaries, storedThroughShadow, &stabilizers.heldConstant};
  FailureOr<DenseSet<Value>> active = computeActiveValues(primal, seeds);
  if (failed(active))
    return primal.emitError("activity analysis failed");

  Block *body = &bwd.getBody().front();
  OpBuilder builder = OpBuilder::atBlockEnd(body);
  IRMapping forward;
  for (auto [arg, value] : llvm::zip(primalBody.getArguments(), primalArgsInBwd))
    forward.map(arg, value);
  GradientUtils state(forward, *active, this);
  state.setStabilizers(&stabilizers);
  state.setResiduals(&residuals);
  if (failed(checkRecomputable(primal)) || failed(checkDifferentiable(primalBody, state)))
    return failure();

  placePartialShadows(builder, primal.getLoc());
  for (Operation &op : primalBody.without_terminator())
    cloneForRecompute(op, builder, forward, &residuals);
  if (failed(reverseSweep(primalBody, builder, state)))
    return failure();
  tt::ReturnOp::create(builder, primalBody.getTerminator()->getLoc(), TypeRange{}, ValueRange{});

  SmallVector<BlockArgument> shadowed;
  for (auto &[arg, shadow] : shadows)
    shadowed.push_back(arg);
  llvm::sort(shadowed, [](BlockArgument a, BlockArgument b) {
    return a.getArgNumber() < b.getArgNumber();
  });
  for (BlockArgument arg : shadowed) {
    ScheduleEntry entry;
    entry.subject = argumentName(arg);
    auto it = schedule.find(entry.subject);
    if (it != schedule.end()) {
      std::tie(entry.strategy, entry.how) = it->second;
    } else if (atomicallyAdded.contains(arg)) {
      entry.strategy = Strategy::Output;
      entry.how = "output, atomically added to: its shadow is read (the upstream gradient)";
    } else if (storeSites.lookup(arg)) {
      entry.strategy = Strategy::Output;
      entry.how = "output: its shadow is read (the upstream gradient)" +
                  std::string(storeSites.lookup(arg) > 1 ? ", then zeroed where overwritten" : "");
    } else {
      entry.strategy = Strategy::NoGradient;
      entry.how = "no gradient reaches it";
    }
    std::string shadowName = shadowNames.lookup(arg);
    if (llvm::count_if(coverage, [&](const ShadowCoverage &c) { return c.shadow == shadowName; }) ==
        1) {
      entry.notes.push_back("no zero fill where these stores reach every element of the tensor "
                            "(checked at launch)");
      for (const ShadowCoverage &c : coverage)
        if (c.shadow == shadowName)
          report.coverage.push_back(c);
    }
    report.schedule.entries.push_back(std::move(entry));
  }
  for (ScheduleEntry &entry : stabilizers.describe())
    report.schedule.entries.push_back(std::move(entry));
  for (ScheduleEntry &entry : loopNotes)
    report.schedule.entries.push_back(std::move(entry));
  report.tapes = tapes;
  report.requirements = requirements;
  // Which shadows the backward writes (read from the IR it emitted).
  DenseSet<Value> shadowArgs;
  for (auto &[arg, shadow] : shadows)
    shadowArgs.insert(shadow);
  std::set<std::string> written;
  bwd.walk([&](Operation *op) {
    if (!isa<tt::StoreOp, tt::AtomicRMWOp>(op))
      return;
    BlockArgument base = baseArgument(op->getOperand(0));
    if (base && shadowArgs.contains(base))
      written.insert(argumentName(base));
  });
  report.writtenShadows.assign(written.begin(), written.end());
  return success();
}

} // namespace

namespace {

// Input shadows that every program of the forward adds to (the addresses and
// mask of every load of it are the same in all programs along axis 0: a
// weight shared by all rows) get partial buffers when the backward kernel has
// the workspace arguments (`tritonad_workspace`, `tritonad_slot`,
// `tritonad_programs`) and the forward uses program axis 0 only, or, with
// `acrossAxes` (deterministic mode, where atomics are no alternative), other
// axes too: each program of the backward's grid then has a slot of its own,
// as wide as the shadow (a bias indexed by the tile's columns: each program
// writes its part of it). Declined, with the reason kept for the schedule, in
// a kernel with a contraction over a loop: the re-parallelized schedule
// (Regrid) gives its operands' gradients programs of their own, where a slot
// per program would hold a copy of a whole operand (a 2-D-grid matmul's B),
// and a bias joins their part. The forward is then coarsened along axis 0.
LogicalResult planPartialBuffers(tt::FuncOp scratch, tt::FuncOp into,
                                 const llvm::StringMap<BlockArgument> &byName,
                                 const DenseMap<BlockArgument, Value> &shadows,
                                 PartialBuffers &partial, SmallVectorImpl<BlockArgument> &callArgs,
                                 bool acrossAxes) {
  auto workspace = byName.lookup(contract::kWorkspace);
  auto slot = byName.lookup(contract::kSlot);
  auto programs = byName.lookup(contract::kPrograms);
  if (!workspace || !slot || !programs || !programs.getType().isInteger(32) ||
      !isa<tt::PointerType>(workspace.getType()) || !slot.getType().isInteger())
    return success();
  unsigned bufferWidth = cast<tt::PointerType>(workspace.getType()).getPointeeType()
                             .getIntOrFloatBitWidth();
  bool usedAxes[3] = {false, false, false};
  scratch.walk([&](tt::GetProgramIdOp pid) { usedAxes[static_cast<int>(pid.getAxis())] = true; });
  bool axisZero = usedAxes[0], otherAxes = usedAxes[1] || usedAxes[2];
  if ((otherAxes && !acrossAxes) || !axisZero)
    return success();
  partial.acrossAxes = otherAxes;
  // (a product accumulated over a loop: operands as large as the contraction,
  // Regrid's; a single tile's product leaves operands of a tile's size)
  bool contracts = false;
  scratch.walk([&](tt::DotOp dot) { contracts |= dot->getParentOfType<scf::ForOp>() != nullptr; });
  // Per shadowed argument: loaded only (as floats the workspace holds), and
  // the used axes along which every load's address and mask are the same.
  struct Sharing {
    bool loadsOnly = true;
    bool along[3] = {true, true, true};
    SmallVector<std::pair<Value, Value>> loads;
  };
  llvm::MapVector<BlockArgument, Sharing> sharing;
  scratch.walk([&](Operation *op) {
    if (!isa<tt::LoadOp, tt::StoreOp, tt::AtomicRMWOp, tt::AtomicCASOp>(op))
      return;
    BlockArgument base = baseArgument(op->getOperand(0));
    if (!base || !shadows.count(base))
      return;
    Sharing &shared = sharing[base];
    auto load = dyn_cast<tt::LoadOp>(op);
    auto floatType = dyn_cast<FloatType>(getElementTypeOrSelf(
        load ? load.getType() : op->getOperand(1).getType()));
    if (!load || !floatType || floatType.getWidth() > bufferWidth) {
      shared.loadsOnly = false;
      return;
    }
    shared.loads.push_back({load.getPtr(), load.getMask()});
    for (int axis = 0; axis < 3; ++axis)
      shared.along[axis] = shared.along[axis] && usedAxes[axis] &&
                           !dependsOnProgramId(load.getPtr(), axis) &&
                           !(load.getMask() && dependsOnProgramId(load.getMask(), axis));
  });
  for (auto &[arg, shared] : sharing) {
    if (!shared.loadsOnly)
      continue;
    if (shared.along[0] && partial.acrossAxes && contracts) {
      partial.declined[arg] =
          "the kernel contracts (tt.dot in a loop) on a grid of several axes: the "
          "re-parallelized schedule gives its operands' gradients programs of their own, "
          "where a partial buffer would hold a copy of the whole shadow per program";
      continue;
    }
    SmallVector<int> axes;
    for (int axis = 0; axis < 3; ++axis)
      if (shared.along[axis])
        axes.push_back(axis);
    // (shared along axis 0 alone, or no axis: the plain schedules' case)
    if (axes.empty() || (!shared.along[0] && (!partial.acrossAxes || contracts)))
      continue;
    if (partial.acrossAxes) {
      // Programs that differ along the other axes share a slot: where their
      // addresses (the union of the loads') are not proved disjoint, every
      // program of the grid has a slot of its own (shared along axis 0), or
      // none (shared along other axes only: the others' schedules decide).
      bool apartAlong[3] = {false, false, false};
      for (int axis = 0; axis < 3; ++axis)
        apartAlong[axis] = usedAxes[axis] && !shared.along[axis];
      ExclusiveAccess apart = shared.loads.size() == 1
                                  ? analyzeExclusiveAccess(shared.loads[0].first,
                                                           shared.loads[0].second, apartAlong)
                                  : analyzeExclusiveUnion(shared.loads, apartAlong);
      if (!apart.known || !*apart.known) {
        if (!shared.along[0])
          continue;
        axes = {0, 1, 2};
      }
    }
    partial.shadowed.push_back(arg);
    partial.slotAxes[arg] = axes;
  }
  if (partial.shadowed.empty())
    return success();
  llvm::sort(partial.shadowed, [](BlockArgument a, BlockArgument b) {
    return a.getArgNumber() < b.getArgNumber();
  });
  std::set<int> groupAxes;
  for (BlockArgument arg : partial.shadowed)
    groupAxes.insert(partial.slotAxes[arg].begin(), partial.slotAxes[arg].end());
  partial.groupAxes.assign(groupAxes.begin(), groupAxes.end());
  partial.workspace = workspace;
  partial.slot = slot;
  unsigned index = scratch.getNumArguments();
  // Named like the backward's argument it stands for: the launch evaluates
  // expressions over it by that name.
  Location named = NameLoc::get(StringAttr::get(scratch.getContext(), argumentName(programs)));
  if (failed(scratch.insertArgument(index, programs.getType(), {}, named)))
    return failure();
  coarsenPrograms(scratch, scratch.getArgument(index));
  callArgs.push_back(programs);
  return success();
}

} // namespace

namespace {

// The placeholder kernel `@into` calls the primal once (the one named, or its
// only call): its operands say which of its arguments carry the primal's.
struct PlaceholderCall {
  tt::FuncOp into, primal;
  SmallVector<BlockArgument> callArgs;
};

FailureOr<PlaceholderCall> findPlaceholderCall(ModuleOp module, StringRef primalName,
                                               StringRef intoName) {
  auto into = module.lookupSymbol<tt::FuncOp>(intoName);
  if (!into)
    return module.emitError("no tt.func named @") << intoName;
  if (into.isExternal())
    return into.emitError("@") << intoName << " has no body";
  if (into.getNumResults() != 0)
    return into.emitError("the kernel must return nothing");
  tt::CallOp call;
  unsigned calls = 0;
  into.walk([&](tt::CallOp candidate) {
    ++calls;
    if (primalName.empty() || candidate.getCallee() == primalName)
      call = candidate;
  });
  if (primalName.empty() && calls != 1)
    return into.emitError("@") << intoName << " must call the forward kernel exactly once";
  if (!call)
    return into.emitError("@") << intoName << " does not call @" << primalName;
  auto primal = module.lookupSymbol<tt::FuncOp>(call.getCallee());
  if (!primal)
    return module.emitError("no tt.func named @") << call.getCallee();
  PlaceholderCall found{into, primal, {}};
  for (Value operand : call.getOperands()) {
    auto arg = dyn_cast<BlockArgument>(operand);
    if (!arg || arg.getOwner() != &into.getBody().front())
      return call.emitError("the call to the forward kernel must pass the placeholder's own "
                            "arguments");
    found.callArgs.push_back(arg);
  }
  return found;
}

// The primal's private copy, in the shape the sweep understands. Forward and
// backward both start here, so their residual layouts index the same ops.
FailureOr<tt::FuncOp> prepareScratch(tt::FuncOp primal) {
  OpBuilder builder(primal);
  auto scratch = cast<tt::FuncOp>(builder.clone(*primal));
  scratch.setName((primal.getName() + "__tritonad_scratch").str());
  scratch.setPrivate();
  if (failed(prepareForDifferentiation(scratch)) ||
      (rewritePointerInductions(scratch), failed(lowerBlockPointers(scratch)))) {
    scratch.erase();
    return failure();
  }
  return scratch;
}

// An i8 pointer argument of the placeholder named `tritonad_residuals`.
BlockArgument residualsArgument(tt::FuncOp into) {
  for (BlockArgument arg : into.getArguments())
    if (argumentName(arg) == kResidualsArgument) {
      auto pointer = dyn_cast<tt::PointerType>(arg.getType());
      return pointer && pointer.getPointeeType().isInteger(8) ? arg : BlockArgument();
    }
  return {};
}

// Empties the placeholder's body (its entry block stays, with its arguments).
Block &clearBody(tt::FuncOp into) {
  Block &entry = into.getBody().front();
  while (&into.getBody().back() != &entry) {
    into.getBody().back().dropAllReferences();
    into.getBody().back().erase();
  }
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(entry))) {
    op.dropAllReferences();
    op.erase();
  }
  return entry;
}

// A scratch argument standing for the placeholder's `arg` (named like it).
BlockArgument appendArgument(tt::FuncOp scratch, BlockArgument arg) {
  unsigned index = scratch.getNumArguments();
  Location named = NameLoc::get(StringAttr::get(scratch.getContext(), argumentName(arg)));
  if (failed(scratch.insertArgument(index, arg.getType(), {}, named)))
    return {};
  return scratch.getArgument(index);
}

} // namespace

namespace {

// The values the backward computes from data it loads (other than the
// residuals): recomputed, and the forward's kernel may have rounded them
// differently in the last bit. One pass in program order (a region's block
// arguments are not counted).
DenseSet<Value> recomputedFromData(tt::FuncOp function) {
  DenseSet<Value> fromData;
  function.walk<WalkOrder::PreOrder>([&](Operation *op) {
    auto load = dyn_cast<tt::LoadOp>(op);
    bool data = load ? !residualIndex(load)
                     : llvm::any_of(op->getOperands(),
                                    [&](Value operand) { return fromData.contains(operand); });
    if (data)
      fromData.insert(op->result_begin(), op->result_end());
  });
  return fromData;
}

// Whether `saved` reaches a comparison (or a float min/max, which compares)
// with a value in `fromData`. Such a comparison could decide otherwise than in
// either kernel (`x == max(x)`), so the saved value is recomputed with the
// data instead. Comparing it with constants or other saved values
// (`acc > 0`) decides as the forward did.
bool comparedWithRecomputed(Value saved, const DenseSet<Value> &fromData) {
  SmallVector<Value> work{saved};
  DenseSet<Value> derived;
  while (!work.empty()) {
    Value value = work.pop_back_val();
    if (!derived.insert(value).second)
      continue;
    for (Operation *user : value.getUsers()) {
      if (isa<arith::CmpFOp, arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
              arith::MinNumFOp>(user) &&
          llvm::any_of(user->getOperands(), [&](Value operand) {
            return !derived.contains(operand) && fromData.contains(operand);
          }))
        return true;
      for (Value result : user->getResults())
        work.push_back(result);
    }
  }
  return false;
}

} // namespace

LogicalResult differentiateKernelInto(ModuleOp module, StringRef primalName, StringRef intoName,
                                      ArrayRef<ShadowBinding> bindings,
                                      const KernelBackwardConfig &options,
                                      KernelBackwardReport &report) {
  module.getContext()->getOrLoadDialect<gpu::GPUDialect>(); // barriers between shadow accesses
  FailureOr<PlaceholderCall> found = findPlaceholderCall(module, primalName, intoName);
  if (failed(found))
    return failure();
  tt::FuncOp into = found->into;
  SmallVector<BlockArgument> callArgs = std::move(found->callArgs);
  primalName = found->primal.getName();
  // Planned before this derivation's scratch exists (the plan derives a copy).
  BlockArgument residualsArg = residualsArgument(into);
  ResidualLayout planned;
  if (residualsArg && !options.offerAllResiduals)
    planned = planResiduals(module, primalName, bindings, options.mode);

  FailureOr<tt::FuncOp> prepared = prepareScratch(found->primal);
  if (failed(prepared))
    return failure();
  tt::FuncOp scratch = *prepared;
  auto cleanup = llvm::make_scope_exit([&] { scratch.erase(); });
  // The residuals: every candidate when planning, else the plan's, where the
  // forward that saved them is this one.
  ResidualLayout layout;
  std::string forwardHash = residualsArg ? forwardFingerprint(scratch) : "";
  if (residualsArg && options.offerAllResiduals) {
    SmallVector<unsigned> all;
    for (unsigned i = 0, e = residualCandidates(scratch).size(); i < e; ++i)
      all.push_back(i);
    layout = layoutResiduals(scratch, all, forwardHash);
  } else if (!planned.empty() && planned.forward == forwardHash) {
    layout = std::move(planned);
  }
  Residuals residualLoads;
  if (!layout.empty()) {
    BlockArgument base = appendArgument(scratch, residualsArg);
    if (!base)
      return failure();
    residualLoads = insertResidualLoads(scratch, base, layout);
    callArgs.push_back(residualsArg);
  }

  llvm::StringMap<BlockArgument> byName;
  for (BlockArgument arg : into.getArguments())
    byName[argumentName(arg)] = arg;
  llvm::StringMap<unsigned> primalByName;
  for (BlockArgument arg : scratch.getArguments())
    primalByName[argumentName(arg)] = arg.getArgNumber();

  DenseMap<BlockArgument, Value> shadows;
  DenseSet<BlockArgument> knownPointers;
  for (const ShadowBinding &binding : bindings) {
    auto primalIt = primalByName.find(binding.primal);
    if (primalIt == primalByName.end())
      continue; // a constexpr (specialized away) or not a parameter at all
    BlockArgument primalArg = scratch.getArgument(primalIt->second);
    // An integer that Python's reading of the source could not tell from a
    // pointer (`x_ptr + start + offs`): no shadow, nothing to do.
    if (!isa<tt::PointerType>(primalArg.getType()))
      continue;
    knownPointers.insert(primalArg);
    auto shadowIt = binding.shadow.empty() ? byName.end() : byName.find(binding.shadow);
    if (shadowIt == byName.end())
      continue; // no gradient wanted: the shadow was None (specialized away) or left out
    if (primalArg.getType() != shadowIt->second.getType() &&
        !widensHalfPrecision(primalArg.getType(), shadowIt->second.getType()))
      return into.emitError("shadow '")
             << binding.shadow << "' has type " << shadowIt->second.getType() << " but '"
             << binding.primal << "' has type " << primalArg.getType()
             << ": pass a gradient buffer of the same dtype";
    shadows[primalArg] = shadowIt->second;
  }

  PartialBuffers partial;
  if (options.mode != AccumulationMode::Atomic &&
      failed(planPartialBuffers(scratch, into, byName, shadows, partial, callArgs,
                                options.mode == AccumulationMode::Deterministic)))
    return failure();

  // Rebuild the placeholder's body.
  SmallVector<Value> primalArgsInBwd(callArgs.begin(), callArgs.end());
  Block &entry = clearBody(into);
  KernelBackwardBuilder backward(scratch, std::move(shadows), std::move(knownPointers), options,
                                 std::move(partial));
  backward.setResiduals(std::move(residualLoads));
  if (BlockArgument tape = byName.lookup(contract::kTape)) {
    auto pointer = dyn_cast<tt::PointerType>(tape.getType());
    BlockArgument every = byName.lookup(contract::kTapeEvery);
    if (every && !every.getType().isInteger(32))
      every = BlockArgument();
    if (pointer && pointer.getPointeeType().isInteger(8))
      backward.setTape(tape, every);
  }
  if (failed(backward.build(into, primalArgsInBwd, report)))
    return failure();
  if (options.offerAllResiduals) {
    // Read: a load that dead-code elimination keeps; a loop only where its
    // reverse took no more than its results (a taped loop would be replayed).
    IRRewriter rewriter(module.getContext());
    (void)runRegionDCE(rewriter, into->getRegions());
    SmallVector<Operation *> candidates = residualCandidates(scratch);
    std::set<unsigned> read;
    DenseSet<Value> fromData = recomputedFromData(into);
    into.walk([&](tt::LoadOp load) {
      std::optional<unsigned> index = residualIndex(load);
      if (!index)
        return;
      Operation *op = candidates[*index];
      Strategy strategy = backward.loopStrategy(op);
      // (a stabilizer's value does not matter, compared or not)
      if (strategy == Strategy::FinalStabilizers ||
          ((isa<tt::ReduceOp>(op) || strategy == Strategy::ForwardOrder) &&
           !comparedWithRecomputed(load.getResult(), fromData)))
        read.insert(*index);
    });
    report.residuals =
        layoutResiduals(scratch, SmallVector<unsigned>(read.begin(), read.end()), forwardHash);
    return success();
  }
  report.residuals = std::move(layout);
  for (ScheduleEntry &entry : describeResiduals(report.residuals))
    report.schedule.entries.push_back(std::move(entry));
  unmarkResidualLoads(into);
  return success();
}

std::string locationText(Location loc) {
  // Inside Triton's own library (tl.sum, tl.max), the user's call site.
  FileLineColLoc user, library;
  loc->walk([&](Location nested) {
    if (auto file = dyn_cast<FileLineColLoc>(nested)) {
      StringRef name = file.getFilename().getValue();
      if (!name.contains("/triton/language/") && !name.contains("/triton/runtime/")) {
        user = file;
        return WalkResult::interrupt();
      }
      if (!library)
        library = file;
    }
    return WalkResult::advance();
  });
  FileLineColLoc file = user ? user : library;
  std::string text;
  llvm::raw_string_ostream os(text);
  if (file)
    os << file.getFilename().getValue() << ":" << file.getLine() << ":" << file.getColumn();
  else
    loc.print(os);
  return text;
}

} // namespace tritonad

namespace tritonad {

ResidualLayout planResiduals(ModuleOp module, StringRef primalName,
                             ArrayRef<ShadowBinding> bindings, AccumulationMode mode) {
  MLIRContext *context = module.getContext();
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  auto primal = copy->lookupSymbol<tt::FuncOp>(primalName);
  if (!primal || primal.isExternal())
    return {};
  // The plan's diagnostics are not the user's: the derivation that follows
  // reports its own.
  ScopedDiagnosticHandler quiet(context, [](Diagnostic &) { return success(); });
  auto named = [&](StringRef name) { return NameLoc::get(StringAttr::get(context, name)); };
  // A backward placeholder with a shadow for every binding and the residuals.
  SmallVector<Type> types;
  SmallVector<Location> locations;
  for (BlockArgument arg : primal.getArguments()) {
    types.push_back(arg.getType());
    locations.push_back(named(argumentName(arg)));
  }
  unsigned primalArgs = types.size();
  for (const ShadowBinding &binding : bindings) {
    if (binding.shadow.empty())
      continue;
    for (BlockArgument arg : primal.getArguments())
      if (argumentName(arg) == binding.primal && isa<tt::PointerType>(arg.getType())) {
        types.push_back(arg.getType());
        locations.push_back(named(binding.shadow));
        break;
      }
  }
  OpBuilder builder(context);
  types.push_back(tt::PointerType::get(builder.getI8Type(), 1));
  locations.push_back(named(kResidualsArgument));
  builder.setInsertionPointToEnd(copy->getBody());
  constexpr StringLiteral planName = "__tritonad_residual_plan";
  auto plan = tt::FuncOp::create(builder, primal.getLoc(), planName,
                                 builder.getFunctionType(types, {}));
  Block *entry = new Block();
  plan.getBody().push_back(entry);
  for (auto [type, location] : llvm::zip_equal(types, locations))
    entry->addArgument(type, location);
  builder.setInsertionPointToEnd(entry);
  tt::CallOp::create(builder, primal.getLoc(), primalName, TypeRange{},
                     ValueRange(entry->getArguments().take_front(primalArgs)));
  tt::ReturnOp::create(builder, primal.getLoc(), TypeRange{}, ValueRange{});

  KernelBackwardConfig config;
  config.mode = mode;
  config.overwrite = true;
  config.offerAllResiduals = true;
  KernelBackwardReport report;
  if (failed(differentiateKernelInto(*copy, primalName, planName, bindings, config, report)))
    return {};
  return report.residuals;
}

LogicalResult augmentForwardInto(ModuleOp module, StringRef primalName, StringRef intoName,
                                 ArrayRef<ShadowBinding> bindings, AccumulationMode mode,
                                 ResidualLayout &layout) {
  layout = {};
  FailureOr<PlaceholderCall> found = findPlaceholderCall(module, primalName, intoName);
  if (failed(found))
    return failure();
  BlockArgument residualsArg = residualsArgument(found->into);
  if (!residualsArg)
    return found->into.emitError("the forward that saves residuals needs an i8 pointer "
                                 "argument '")
           << kResidualsArgument << "'";
  ResidualLayout planned = planResiduals(module, found->primal.getName(), bindings, mode);
  if (planned.empty())
    return success();
  FailureOr<tt::FuncOp> prepared = prepareScratch(found->primal);
  if (failed(prepared))
    return failure();
  tt::FuncOp scratch = *prepared;
  auto cleanup = llvm::make_scope_exit([&] { scratch.erase(); });
  if (forwardFingerprint(scratch) != planned.forward || !scratch.getBody().hasOneBlock())
    return success();
  BlockArgument base = appendArgument(scratch, residualsArg);
  if (!base)
    return failure();
  insertResidualStores(scratch, base, planned);

  // The placeholder's body becomes the prepared forward with its stores.
  IRMapping mapping;
  for (auto [arg, value] :
       llvm::zip_equal(scratch.getArguments().drop_back(), found->callArgs))
    mapping.map(arg, value);
  mapping.map(base, residualsArg);
  tt::FuncOp into = found->into;
  Block &entry = clearBody(into);
  OpBuilder builder = OpBuilder::atBlockEnd(&entry);
  for (Operation &op : scratch.getBody().front())
    builder.clone(op, mapping);
  layout = std::move(planned);
  return success();
}

} // namespace tritonad
