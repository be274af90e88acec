#include "tritonad/Analysis/Activity.h"

#include "tritonad/Analysis/Dependence.h"
#include "tritonad/Dialect/Triton/Dialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include "mlir/Analysis/DataFlow/ConstantPropagationAnalysis.h"
#include "mlir/Analysis/DataFlow/DeadCodeAnalysis.h"
#include "mlir/Analysis/DataFlow/SparseAnalysis.h"
#include "mlir/Analysis/DataFlowFramework.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"

using namespace mlir;
using namespace mlir::dataflow;

namespace tritonad {
namespace {

/// One bit: "varies with the inputs" (forward) or "needed by the outputs"
/// (backward). Both directions only ever turn it on.
struct Flag {
  bool value = false;
  static Flag join(const Flag &lhs, const Flag &rhs) { return {lhs.value || rhs.value}; }
  static Flag meet(const Flag &lhs, const Flag &rhs) { return join(lhs, rhs); }
  bool operator==(const Flag &other) const { return value == other.value; }
  void print(raw_ostream &os) const { os << (value ? "active" : "inactive"); }
};

class Varied : public Lattice<Flag> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Varied)
  using Lattice::Lattice;
};

class Useful : public Lattice<Flag> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Useful)
  using Lattice::Lattice;
};

class VariedAnalysis : public SparseForwardDataFlowAnalysis<Varied> {
public:
  VariedAnalysis(DataFlowSolver &solver, const ActivitySeeds &seeds)
      : SparseForwardDataFlowAnalysis(solver), seeds(seeds) {}

  LogicalResult visitOperation(Operation *op, ArrayRef<const Varied *> operands,
                               ArrayRef<Varied *> results) override {
    bool anyVaried = false;
    for (auto [operand, lattice] : llvm::zip(op->getOperands(), operands))
      anyVaried |= lattice->getValue().value && !isHeld(operand);
    // Integers holding the bits of a varied float (tl.sort and tl.topk swap
    // values as integers through bitcasts) stay varied, so a float rebuilt
    // from them is active and meets the bitcast's missing rule: a located
    // error, not a gradient silently cut at the integer. Comparisons (i1) end
    // the chain: they carry no gradient in torch either.
    bool floatBits = isa<triton::BitcastOp, arith::BitcastOp>(op) && anyVaried;
    for (auto [operand, lattice] : llvm::zip(op->getOperands(), operands))
      floatBits |= lattice->getValue().value && isIntegerData(operand.getType());
    for (auto [result, lattice] : llvm::zip(op->getResults(), results)) {
      bool varies = !isHeld(result) &&
                    ((isDifferentiableType(result.getType()) && (anyVaried || seeds.varies(result))) ||
                     (floatBits && isIntegerData(result.getType())));
      propagateIfChanged(lattice, lattice->join(Flag{varies}));
    }
    return success();
  }

  bool isHeld(Value value) const {
    return seeds.heldConstant && seeds.heldConstant->contains(value);
  }

  static bool isIntegerData(Type type) {
    Type element = getElementTypeOrSelf(type);
    return element.isInteger() && !element.isInteger(1);
  }

  void setToEntryState(Varied *lattice) override {
    Value anchor = lattice->getAnchor();
    bool varies = isDifferentiableType(anchor.getType()) && seeds.varies(anchor);
    propagateIfChanged(lattice, lattice->join(Flag{varies}));
  }

private:
  const ActivitySeeds &seeds;
};

class UsefulAnalysis : public SparseBackwardDataFlowAnalysis<Useful> {
public:
  UsefulAnalysis(DataFlowSolver &solver, SymbolTableCollection &symbols,
                 const ActivitySeeds &seeds)
      : SparseBackwardDataFlowAnalysis(solver, symbols), seeds(seeds) {}

  LogicalResult visitOperation(Operation *op, ArrayRef<Useful *> operands,
                               ArrayRef<const Useful *> results) override {
    bool anyUseful = false;
    for (auto [result, lattice] : llvm::zip(op->getResults(), results))
      anyUseful |= lattice->getValue().value &&
                   !(seeds.heldConstant && seeds.heldConstant->contains(result));
    for (auto [operand, lattice] : llvm::zip(op->getOpOperands(), operands)) {
      bool useful = isDifferentiableType(operand.get().getType()) &&
                    (anyUseful || seeds.isUseful(operand));
      propagateIfChanged(lattice, lattice->meet(Flag{useful}));
    }
    return success();
  }

  // Operands of the function's return: the values the gradient is asked of.
  void setToExitState(Useful *lattice) override {
    bool useful = isDifferentiableType(lattice->getAnchor().getType());
    propagateIfChanged(lattice, lattice->meet(Flag{useful}));
  }
  // The returns of the analyzed function: never joined with call sites (the
  // gradient is asked of the function alone).
  LogicalResult visitCallableOperation(Operation *op, CallableOpInterface,
                                       ArrayRef<AbstractSparseLattice *> operands) override {
    for (auto [operand, lattice] : llvm::zip(op->getOpOperands(), operands)) {
      bool useful = isDifferentiableType(operand.get().getType()) && seeds.isUseful(operand);
      auto *typed = static_cast<Useful *>(lattice);
      propagateIfChanged(typed, typed->meet(Flag{useful}));
    }
    return success();
  }
  void visitBranchOperand(OpOperand &operand) override { markIfSeed(operand); }
  void visitCallOperand(OpOperand &operand) override { markIfSeed(operand); }
  void visitNonControlFlowArguments(RegionSuccessor &, ArrayRef<BlockArgument>) override {}

private:
  void markIfSeed(OpOperand &operand) {
    if (isDifferentiableType(operand.get().getType()) && seeds.isUseful(operand)) {
      Useful *lattice = getLatticeElement(operand.get());
      propagateIfChanged(lattice, lattice->meet(Flag{true}));
    }
  }

  const ActivitySeeds &seeds;
};

} // namespace

FailureOr<DenseSet<Value>> computeActiveValues(Operation *function, const ActivitySeeds &seeds) {
  DataFlowSolver solver(DataFlowConfig().setInterprocedural(false));
  SymbolTableCollection symbols;
  solver.load<DeadCodeAnalysis>();
  solver.load<SparseConstantPropagation>();
  solver.load<VariedAnalysis>(seeds);
  solver.load<UsefulAnalysis>(symbols, seeds);
  if (failed(solver.initializeAndRun(function)))
    return failure();

  DenseSet<Value> active;
  auto consider = [&](Value value) {
    if (!isDifferentiableType(value.getType()) ||
        (seeds.heldConstant && seeds.heldConstant->contains(value)))
      return;
    const Varied *varied = solver.lookupState<Varied>(value);
    const Useful *useful = solver.lookupState<Useful>(value);
    if (varied && varied->getValue().value && useful && useful->getValue().value)
      active.insert(value);
  };
  function->walk([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          consider(arg);
    for (Value result : op->getResults())
      consider(result);
  });
  return active;
}

} // namespace tritonad
