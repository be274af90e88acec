#include "StoresWriteOnce.h"

#include "tritonad/Analysis/AccessAnalysis.h"
#include "tritonad/Analysis/Dependence.h"
#include "tritonad/AutoDiff/KernelBackward.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {

namespace {

// What `value` is computed from, through pure ops: the program id axes it
// reads, and whether it reads lanes (tt.make_range), memory (a load or any op
// with effects or regions) or a loop's induction or carried values.
struct Sources {
  bool axes[3] = {false, false, false};
  bool lanes = false;
  bool other = false; // memory, regions, loop-carried values
};

Sources sourcesOf(Value value) {
  Sources sources;
  SmallVector<Value> pending{value};
  DenseSet<Value> seen;
  while (!pending.empty()) {
    Value current = pending.pop_back_val();
    if (!seen.insert(current).second)
      continue;
    Operation *def = current.getDefiningOp();
    if (!def) {
      auto arg = cast<BlockArgument>(current);
      auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
      if (loop && arg == loop.getInductionVar()) {
        if (isProgramLoop(loop)) { // (a coarsened program's virtual program ids)
          std::fill(std::begin(sources.axes), std::end(sources.axes), true);
          continue;
        }
        // (its values: the bounds' and step's, a grid-stride loop's program id)
        pending.append({loop.getLowerBound(), loop.getUpperBound(), loop.getStep()});
        continue;
      }
      if (!isa<tt::FuncOp>(arg.getOwner()->getParentOp()))
        sources.other = true;
      continue;
    }
    if (auto pid = dyn_cast<tt::GetProgramIdOp>(def)) {
      sources.axes[static_cast<int>(pid.getAxis())] = true;
      continue;
    }
    if (isa<tt::MakeRangeOp>(def)) {
      sources.lanes = true;
      continue;
    }
    if (def->getNumRegions() || !isPure(def)) {
      sources.other = true;
      continue;
    }
    for (Value operand : def->getOperands())
      pending.push_back(operand);
  }
  return sources;
}

// Whether the store runs wherever the kernel's body runs: no enclosing branch
// or while loop (scf.for iterations only repeat it).
bool outsideBranches(tt::StoreOp store, tt::FuncOp primal) {
  for (Operation *op = store->getParentOp(); op && op != primal.getOperation();
       op = op->getParentOp())
    if (!isa<scf::ForOp>(op))
      return false;
  return true;
}

} // namespace

LogicalResult checkStoresWriteOnce(tt::FuncOp primal, ArrayRef<bool> usedAxes,
                                   function_ref<bool(tt::StoreOp)> differentiated,
                                   function_ref<std::string(tt::StoreOp)> shadowOf,
                                   std::vector<LaunchRequirement> &requirements) {
  WalkResult walk = primal.walk([&](tt::StoreOp store) {
    if (!differentiated(store) || !outsideBranches(store, primal))
      return WalkResult::advance();
    Sources address = sourcesOf(store.getPtr());
    Sources mask = store.getMask() ? sourcesOf(store.getMask()) : Sources();
    if (address.other || mask.other)
      return WalkResult::advance(); // (addresses or writers chosen by data: taken as apart)
    std::string where = locationText(store.getLoc());
    std::string consequence =
        ": the forward keeps one of the values written to an address, and the backward cannot "
        "tell whose, so each writer would receive the whole upstream gradient (a gradient as many "
        "times too large as there are writers where they write the same value)";
    // Lanes (or programs) proven to share addresses, under a mask that enables
    // every lane of every program or none.
    if (!mask.lanes && !mask.axes[0] && !mask.axes[1] && !mask.axes[2]) {
      ExclusiveAccess access = analyzeExclusiveAccess(store.getPtr(), Value(), usedAxes);
      StringRef explanation = access.explanation;
      if (access.known == false && (explanation.starts_with("lanes along dim") ||
                                    explanation.starts_with("lanes or programs overlap"))) {
        store.emitError("cannot differentiate a store whose lanes or programs write the same "
                        "addresses (")
            << explanation << ")" << consequence
            << "; give each lane and program addresses of its own (or mask all but one writer)";
        return WalkResult::interrupt();
      }
    }
    // A grid axis the kernel reads but neither the address nor the mask does:
    // its programs write the same addresses, unless there is one of them.
    for (int axis = 0; axis < 3; ++axis) {
      if (!usedAxes[axis] || address.axes[axis] || mask.axes[axis])
        continue;
      SymbolicInt programs;
      programs.op = SymbolicInt::Op::NumPrograms;
      programs.value = axis;
      SymbolicInt one = SymbolicInt::of(SymbolicInt::Op::Le, {programs, SymbolicInt::constant(1)});
      std::string refusal = "the store at " + where + " writes the same addresses in every " +
                            "program along grid axis " + std::to_string(axis) +
                            " (its address and mask do not read tl.program_id(" +
                            std::to_string(axis) + "))" + consequence +
                            "; give each program addresses of its own, or launch one program "
                            "along that axis";
      requirements.push_back({shadowOf(store), one,
                              "one program along grid axis " + std::to_string(axis) +
                                  " writes what the store at " + where + " writes",
                              refusal});
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

} // namespace tritonad
