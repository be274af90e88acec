#include "tritonad/AutoDiff/KernelBackward.h"

#include "tritonad/AutoDiff/AccessAnalysis.h"
#include "tritonad/AutoDiff/Activity.h"
#include "tritonad/AutoDiff/PointerInduction.h"
#include "tritonad/AutoDiff/ReverseModeInterface.h"

#include "Inlining.h"
#include "ReverseSweep.h"
#include "TensorBuilders.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

std::string argumentName(BlockArgument arg) {
  if (auto name = dyn_cast<NameLoc>(arg.getLoc()))
    return name.getName().str();
  return "";
}

// The function argument a pointer value is computed from, if any.
BlockArgument baseArgument(Value ptr) {
  while (Operation *def = ptr.getDefiningOp()) {
    if (!isa<tt::SplatOp, tt::AddPtrOp, tt::BroadcastOp, tt::ExpandDimsOp, tt::ReshapeOp,
             tt::TransOp>(def))
      return {};
    ptr = def->getOperand(0);
  }
  return dyn_cast<BlockArgument>(ptr);
}

// Like baseArgument, but follows pointers carried through scf.for iter_args
// back to their initial values.
BlockArgument traceBase(Value ptr) {
  BlockArgument base = baseArgument(ptr);
  while (base) {
    auto loop = dyn_cast<scf::ForOp>(base.getOwner()->getParentOp());
    if (!loop || base.getArgNumber() == 0)
      return base;
    base = baseArgument(loop.getInitArgs()[base.getArgNumber() - 1]);
  }
  return base;
}

class KernelBackwardBuilder {
public:
  KernelBackwardBuilder(tt::FuncOp primal, DenseMap<BlockArgument, Value> shadows,
                        AccumulationMode mode)
      : primal(primal), shadows(std::move(shadows)), mode(mode) {}

  LogicalResult build(tt::FuncOp bwd, ArrayRef<Value> primalArgsInBwd, std::string &report);

private:
  bool isShadowed(Value ptr) {
    BlockArgument base = baseArgument(ptr);
    return base && shadows.count(base);
  }
  LogicalResult validate();
  FailureOr<Value> shadowPointer(OpBuilder &builder, Value ptr, const IRMapping &forward);
  LogicalResult emitStoreAdjoint(OpBuilder &builder, tt::StoreOp store, AdjointState &state);
  LogicalResult emitLoadAdjoint(OpBuilder &builder, tt::LoadOp load, AdjointState &state);
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

  tt::FuncOp primal;
  DenseMap<BlockArgument, Value> shadows; // primal pointer argument -> shadow argument of bwd
  AccumulationMode mode;
  llvm::StringMap<std::string> schedule; // primal argument name -> how it is accumulated
  bool usedAxes[3] = {false, false, false};
  DenseMap<BlockArgument, int> loadSites;  // shadowed argument -> loads of it
  DenseMap<BlockArgument, int> storeSites; // shadowed argument -> stores through it
  DenseMap<Operation *, bool> firstStore;  // the forward-first store of its argument
};

LogicalResult KernelBackwardBuilder::validate() {
  DenseSet<BlockArgument> loaded, stored;
  WalkResult walk = primal.walk([&](Operation *op) {
    if (isa<tt::LoadOp, tt::StoreOp>(op)) {
      BlockArgument traced = traceBase(op->getOperand(0));
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
      else if (isa<tt::PointerType>(getElementTypeOrSelf(load.getPtr().getType())) &&
               isDifferentiableType(load.getType())) {
        // A load through a pointer we cannot trace: fine only if it carries no gradient.
      }
    } else if (auto store = dyn_cast<tt::StoreOp>(op)) {
      if (BlockArgument base = baseArgument(store.getPtr()))
        stored.insert(base);
      else {
        op->emitError("cannot differentiate a store through a pointer that is not computed "
                      "from a kernel argument (splat/addptr/broadcast)");
        return WalkResult::interrupt();
      }
    } else if (isa<tt::AtomicRMWOp, tt::AtomicCASOp>(op)) {
      BlockArgument base = baseArgument(op->getOperand(0));
      if (base && shadows.count(base)) {
        op->emitError("cannot differentiate an atomic update of a differentiated pointer");
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  for (auto &[arg, shadow] : shadows)
    if (loaded.contains(arg) && stored.contains(arg))
      return primal.emitError("pointer argument '")
             << argumentName(arg) << "' is both loaded and stored (updated in place); tritonad "
             << "cannot tell the loaded values from the stored ones: write the result to a "
             << "separate output, or pass None for its shadow";
  return success();
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
  return builder.clone(*def, mapping)->getResult(0);
}

LogicalResult KernelBackwardBuilder::emitStoreAdjoint(OpBuilder &builder, tt::StoreOp store,
                                                      AdjointState &state) {
  // out[ptr] = v  =>  dv += dout[ptr] (masked lanes: 0)
  Value value = store.getValue();
  if (!state.isActive(value))
    return success();
  const IRMapping &forward = state.mapping();
  FailureOr<Value> shadow = shadowPointer(builder, store.getPtr(), forward);
  if (failed(shadow))
    return store.emitError("cannot form the shadow address of this store");
  Location loc = store.getLoc();
  Value mask = store.getMask() ? forward.lookupOrDefault(store.getMask()) : Value();
  Value other = mask ? createZero(builder, loc, value.getType()) : Value();
  Value upstream = createLoad(builder, loc, *shadow, mask, other);
  state.accumulate(builder, value, upstream);
  // Several stores through one pointer: a later store overwrites an earlier
  // one at the same address, so once a store has taken the upstream
  // gradient, earlier stores must see zero there (the shadow is consumed).
  if (storeSites.lookup(baseArgument(store.getPtr())) > 1 && !firstStore.lookup(store))
    createStore(builder, loc, *shadow, createZero(builder, loc, value.getType()), mask);
  return success();
}

LogicalResult KernelBackwardBuilder::emitLoadAdjoint(OpBuilder &builder, tt::LoadOp load,
                                                     AdjointState &state) {
  // v = x[ptr]  =>  dx[ptr] += dv
  Value g = state.adjoint(load.getResult());
  if (!g)
    return success();
  const IRMapping &forward = state.mapping();
  FailureOr<Value> shadow = shadowPointer(builder, load.getPtr(), forward);
  if (failed(shadow))
    return load.emitError("cannot form the shadow address of this load");
  Location loc = load.getLoc();
  Value mask = load.getMask() ? forward.lookupOrDefault(load.getMask()) : Value();
  std::string name = argumentName(baseArgument(load.getPtr()));

  auto emitPlain = [&](OpBuilder &b) {
    Value other = mask ? createZero(b, loc, g.getType()) : Value();
    Value old = createLoad(b, loc, *shadow, mask, other);
    createStore(b, loc, *shadow, arith::AddFOp::create(b, loc, old, g), mask);
  };
  auto emitAtomic = [&](OpBuilder &b) {
    createAtomicAdd(b, loc, *shadow, g, mask);
  };

  // Programs along an axis the kernel never reads are duplicates of the first
  // one (they store the same values to the same places): only it accumulates.
  OpBuilder::InsertionGuard guard(builder);
  if (Value first = firstDuplicate(builder, loc)) {
    auto onlyFirst = scf::IfOp::create(builder, loc, TypeRange{}, first, /*else=*/false);
    builder.setInsertionPointToStart(onlyFirst.thenBlock());
  }
  if (mode == AccumulationMode::Atomic) {
    emitAtomic(builder);
    schedule[name] = "atomic (atomics requested)";
    return success();
  }
  BlockArgument base = baseArgument(load.getPtr());
  if (loadSites.lookup(base) > 1) {
    // Threads of one program are not ordered between two accesses: several
    // accumulations into one shadow are only safe as atomics.
    if (mode == AccumulationMode::Deterministic)
      return load.emitError("deterministic mode: '")
             << name << "' is loaded at " << loadSites.lookup(base)
             << " places; accumulating their gradients into one shadow needs atomics";
    emitAtomic(builder);
    schedule[name] = "atomic (loaded at " + std::to_string(loadSites.lookup(base)) +
                     " places: accumulations into one shadow are not ordered)";
    return success();
  }
  ExclusiveAccess access = analyzeExclusiveAccess(builder, loc, load.getPtr(), load.getMask(),
                                                  forward, usedAxes);
  if (access.known && *access.known) {
    emitPlain(builder);
    if (!schedule.count(name))
      schedule[name] = "plain (" + access.explanation + ")";
    return success();
  }
  if (mode == AccumulationMode::Deterministic)
    return load.emitError("deterministic mode: cannot prove that each address of '")
           << name << "' is touched by one program only (" << access.explanation
           << "); accumulating its gradient needs atomics";
  if (access.known && !*access.known) {
    emitAtomic(builder);
    schedule[name] = "atomic (" + access.explanation + ")";
    return success();
  }
  // Exclusive only for some launch configurations: check at run time.
  auto branch = scf::IfOp::create(builder, loc, TypeRange{}, access.condition, /*else=*/true);
  OpBuilder thenBuilder = branch.getThenBodyBuilder();
  emitPlain(thenBuilder);
  OpBuilder elseBuilder = branch.getElseBodyBuilder();
  emitAtomic(elseBuilder);
  schedule[name] = "plain when " + access.explanation.substr(access.explanation.find(':') + 2) +
                   ", else atomic (a branch uniform over the program)";
  return success();
}

LogicalResult KernelBackwardBuilder::build(tt::FuncOp bwd, ArrayRef<Value> primalArgsInBwd,
                                           std::string &report) {
  if (failed(validate()))
    return failure();
  primal.walk([&](tt::GetProgramIdOp pid) { usedAxes[static_cast<int>(pid.getAxis())] = true; });
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
    auto store = dyn_cast<tt::StoreOp>(operand.getOwner());
    return store && operand.getOperandNumber() == 1 && isShadowed(store.getPtr());
  };
  ActivitySeeds seeds{loadVaries, storedThroughShadow};
  FailureOr<DenseSet<Value>> active = computeActiveValues(primal, seeds);
  if (failed(active))
    return primal.emitError("activity analysis failed");

  if (failed(checkDifferentiable(primalBody, *active, /*kernel=*/true)))
    return failure();

  Block *body = &bwd.getBody().front();
  OpBuilder builder = OpBuilder::atBlockEnd(body);
  IRMapping forward;
  for (auto [arg, value] : llvm::zip(primalBody.getArguments(), primalArgsInBwd))
    forward.map(arg, value);
  SweepHooks hooks;
  // Recompute the forward without its side effects: stores are not replayed.
  hooks.cloneForward = [](Operation &op, OpBuilder &b, IRMapping &mapping) {
    if (isa<tt::StoreOp>(op) || (isa<tt::AtomicRMWOp, tt::AtomicCASOp>(op) && op.use_empty()))
      return;
    Operation *clone = cloneWithRegions(b, op, mapping);
    SmallVector<Operation *> nestedStores;
    clone->walk([&](tt::StoreOp store) { nestedStores.push_back(store); });
    for (Operation *store : nestedStores)
      store->erase();
  };
  hooks.special = [&](Operation &op, OpBuilder &b, AdjointState &state) -> FailureOr<bool> {
    if (auto store = dyn_cast<tt::StoreOp>(op)) {
      if (isShadowed(store.getPtr()) && failed(emitStoreAdjoint(b, store, state)))
        return failure();
      return true;
    }
    if (auto load = dyn_cast<tt::LoadOp>(op)) {
      if (isShadowed(load.getPtr()) && failed(emitLoadAdjoint(b, load, state)))
        return failure();
      return true;
    }
    return false;
  };
  std::string loopNotes;
  hooks.note = [&](Operation *loop, StringRef how) {
    std::string where;
    llvm::raw_string_ostream os(where);
    if (auto file = loop->getLoc()->findInstanceOf<FileLineColLoc>())
      os << file.getFilename().getValue() << ":" << file.getLine() << ":" << file.getColumn();
    else
      loop->getLoc().print(os);
    loopNotes += "loop " + loop->getName().getStringRef().str() + " at " + where + ": " +
                 how.str() + "\n";
  };
  for (Operation &op : primalBody.without_terminator())
    hooks.cloneForward(op, builder, forward);

  AdjointState state(forward, *active);
  if (failed(reverseSweep(primalBody, builder, state, hooks)))
    return failure();
  tt::ReturnOp::create(builder, primalBody.getTerminator()->getLoc(), TypeRange{}, ValueRange{});

  SmallVector<BlockArgument> shadowed;
  for (auto &[arg, shadow] : shadows)
    shadowed.push_back(arg);
  llvm::sort(shadowed, [](BlockArgument a, BlockArgument b) {
    return a.getArgNumber() < b.getArgNumber();
  });
  for (BlockArgument arg : shadowed) {
    std::string name = argumentName(arg);
    auto it = schedule.find(name);
    std::string how;
    if (it != schedule.end())
      how = it->second;
    else if (storeSites.lookup(arg))
      how = "output: its shadow is read (the upstream gradient)" +
            std::string(storeSites.lookup(arg) > 1 ? ", then zeroed where overwritten" : "");
    else
      how = "no gradient reaches it";
    report += name + ": " + how + "\n";
  }
  report += loopNotes;
  return success();
}

} // namespace

LogicalResult differentiateKernelInto(ModuleOp module, StringRef primalName, StringRef intoName,
                                      ArrayRef<ShadowBinding> bindings, AccumulationMode mode,
                                      std::string &report) {
  auto primal = module.lookupSymbol<tt::FuncOp>(primalName);
  auto into = module.lookupSymbol<tt::FuncOp>(intoName);
  if (!primal || !into)
    return module.emitError("no tt.func named @") << (primal ? intoName : primalName);
  if (into.isExternal())
    return into.emitError("@") << intoName << " has no body";
  if (into.getNumResults() != 0)
    return into.emitError("the backward kernel must return nothing");

  // The placeholder calls the primal once: its operands say which backward
  // arguments carry the primal's arguments.
  tt::CallOp call;
  into.walk([&](tt::CallOp candidate) {
    if (candidate.getCallee() == primalName)
      call = candidate;
  });
  if (!call)
    return into.emitError("@") << intoName << " does not call @" << primalName;
  SmallVector<BlockArgument> callArgs;
  for (Value operand : call.getOperands()) {
    auto arg = dyn_cast<BlockArgument>(operand);
    if (!arg || arg.getOwner() != &into.getBody().front())
      return call.emitError("the call to the forward kernel must pass the backward kernel's "
                            "own arguments");
    callArgs.push_back(arg);
  }

  OpBuilder builder(module.getContext());
  builder.setInsertionPoint(into);
  auto scratch = cast<tt::FuncOp>(builder.clone(*primal));
  scratch.setName((primalName + "__tritonad_scratch").str());
  scratch.setPrivate();
  auto cleanup = llvm::make_scope_exit([&] { scratch.erase(); });
  if (failed(inlineAllCalls(scratch)))
    return failure();
  rewritePointerInductions(scratch);

  llvm::StringMap<BlockArgument> byName;
  for (BlockArgument arg : into.getArguments())
    byName[argumentName(arg)] = arg;
  llvm::StringMap<unsigned> primalByName;
  for (BlockArgument arg : scratch.getArguments())
    primalByName[argumentName(arg)] = arg.getArgNumber();

  DenseMap<BlockArgument, Value> shadows;
  for (const ShadowBinding &binding : bindings) {
    auto shadowIt = byName.find(binding.shadow);
    if (shadowIt == byName.end())
      continue; // the shadow was None: specialized away
    auto primalIt = primalByName.find(binding.primal);
    if (primalIt == primalByName.end())
      return into.emitError("the forward kernel has no runtime pointer argument '")
             << binding.primal << "' for shadow '" << binding.shadow << "'";
    BlockArgument primalArg = scratch.getArgument(primalIt->second);
    if (!isa<tt::PointerType>(primalArg.getType()))
      return into.emitError("'") << binding.primal << "' is not a pointer (it has type "
                                 << primalArg.getType() << "): only pointer parameters have "
                                 << "shadows";
    if (primalArg.getType() != shadowIt->second.getType())
      return into.emitError("shadow '")
             << binding.shadow << "' has type " << shadowIt->second.getType() << " but '"
             << binding.primal << "' has type " << primalArg.getType()
             << ": pass a gradient buffer of the same dtype";
    shadows[primalArg] = shadowIt->second;
  }

  // Rebuild the placeholder's body.
  SmallVector<Value> primalArgsInBwd(callArgs.begin(), callArgs.end());
  Block &entry = into.getBody().front();
  while (&into.getBody().back() != &entry) {
    into.getBody().back().dropAllReferences();
    into.getBody().back().erase();
  }
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(entry))) {
    op.dropAllReferences();
    op.erase();
  }
  KernelBackwardBuilder backward(scratch, std::move(shadows), mode);
  return backward.build(into, primalArgsInBwd, report);
}

} // namespace tritonad
