#include "tritonad/AutoDiff/ScatterSums.h"

#include "../TensorBuilders.h"
#include "tritonad/Analysis/AccessAnalysis.h"
#include "tritonad/AutoDiff/KernelBackward.h"
#include "tritonad/AutoDiff/Regrid.h"
#include "tritonad/LaunchContract.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/MapVector.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

// The kernel argument a pointer is computed from, through pointers carried
// by loops (their initial values); null where it is none.
BlockArgument kernelArgumentOf(Value ptr, tt::FuncOp kernel) {
  BlockArgument base = baseArgumentThroughLoops(ptr);
  return base && base.getOwner() == &kernel.getBody().front() ? base : BlockArgument();
}

BlockArgument scatterArgument(tt::FuncOp kernel, StringRef name) {
  for (BlockArgument arg : kernel.getBody().front().getArguments())
    if (isa<tt::PointerType>(arg.getType()) && argumentName(arg) == name)
      return arg;
  return BlockArgument();
}

std::optional<int64_t> constantOf(Value value) {
  APInt constant;
  if (matchPattern(value, m_ConstantInt(&constant)))
    return constant.getSExtValue();
  return std::nullopt;
}

// Whether `value` can be computed again at the kernel's entry: its
// arguments and constants through pure ops without regions.
bool hoistable(Value value, tt::FuncOp kernel) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return arg.getOwner() == &kernel.getBody().front();
  Operation *def = value.getDefiningOp();
  if (!def || def->getNumRegions() || !isPure(def))
    return false;
  return llvm::all_of(def->getOperands(),
                      [&](Value operand) { return hoistable(operand, kernel); });
}

// `value` (hoistable) computed at the kernel's entry.
Value hoisted(OpBuilder &entry, Value value, IRMapping &copies) {
  if (isa<BlockArgument>(value) || copies.contains(value))
    return copies.lookupOrDefault(value);
  Operation *def = value.getDefiningOp();
  for (Value operand : def->getOperands())
    hoisted(entry, operand, copies);
  Operation *copy = entry.clone(*def, copies);
  return copy->getResult(cast<OpResult>(value).getResultNumber());
}

// The grid-stride loop of partial buffers' coarsening (ProgramCoarsening.h):
// `for v in range(program_id(0), tritonad_programs, num_programs(0))`, whose
// induction variable is the forward's program id along axis 0.
bool isProgramLoop(scf::ForOp loop) {
  auto lower = loop.getLowerBound().getDefiningOp<tt::GetProgramIdOp>();
  auto step = loop.getStep().getDefiningOp<tt::GetNumProgramsOp>();
  auto upper = dyn_cast<BlockArgument>(loop.getUpperBound());
  return lower && step && lower.getAxis() == tt::ProgramIDDim::X &&
         step.getAxis() == tt::ProgramIDDim::X && upper &&
         argumentName(upper) == contract::kPrograms;
}

// Why `atomic` cannot go through slots, or "" where it can (`decision` then
// holds its lanes and loops).
std::string whyNotScattered(tt::AtomicRMWOp atomic, tt::FuncOp kernel,
                            const llvm::DenseSet<BlockArgument> &loaded, bool coarsened,
                            ScatterDecision &decision) {
  if (atomic.getAtomicRmwOp() != tt::RMWOp::FADD)
    return "it is not a floating-point add";
  if (!atomic.getResult().use_empty())
    return "its result is used";
  decision.shadow = kernelArgumentOf(atomic.getPtr(), kernel);
  if (!decision.shadow)
    return "its pointer is not computed from one of the kernel's arguments";
  if (loaded.contains(decision.shadow))
    return "the backward also reads '" + argumentName(decision.shadow) +
           "', which the slots would add to only after the kernel";
  auto tensor = dyn_cast<RankedTensorType>(atomic.getVal().getType());
  decision.lanes = tensor ? tensor.getNumElements() : 1;
  for (Operation *parent = atomic->getParentOp(); parent != kernel.getOperation();
       parent = parent->getParentOp()) {
    if (isa<scf::IfOp>(parent))
      continue; // (a slot a branch does not reach keeps offset 0: no element)
    auto loop = dyn_cast<scf::ForOp>(parent);
    if (!loop)
      return "it is inside '" + parent->getName().getStringRef().str() + "' at " +
             locationText(parent->getLoc());
    if (isProgramLoop(loop)) {
      decision.programLoop = loop;
      continue;
    }
    std::optional<int64_t> step = constantOf(loop.getStep());
    std::optional<SymbolicInt> lower = symbolize(loop.getLowerBound());
    std::optional<SymbolicInt> upper = symbolize(loop.getUpperBound());
    if (!step || *step <= 0 || !lower || !upper || !hoistable(loop.getLowerBound(), kernel) ||
        !hoistable(loop.getUpperBound(), kernel))
      return "the loop at " + locationText(loop.getLoc()) +
             " around it runs a number of iterations that depends on the program or on "
             "loaded values (each program's slots are counted before the launch)";
    SymbolicInt rounded = SymbolicInt::of(
        SymbolicInt::Op::Add, {SymbolicInt::of(SymbolicInt::Op::Sub, {*upper, *lower}),
                               SymbolicInt::constant(*step - 1)});
    decision.loops.insert(decision.loops.begin(), loop);
    decision.trips.insert(
        decision.trips.begin(),
        SymbolicInt::of(SymbolicInt::Op::Max,
                        {SymbolicInt::of(SymbolicInt::Op::DivS,
                                         {rounded, SymbolicInt::constant(*step)}),
                         SymbolicInt::constant(0)}));
  }
  if (coarsened && !decision.programLoop)
    return "the backward's programs stride over the forward's (partial buffers), and it is "
           "outside their loop";
  return "";
}

// A load whose value only goes back, plus something, to the addresses it
// read (a plain write's read-add-write): adding the slots after the kernel
// commutes with it.
bool isAccumulation(tt::LoadOp load) {
  if (!load.getResult().hasOneUse())
    return false;
  auto add = dyn_cast<arith::AddFOp>(*load.getResult().getUsers().begin());
  if (!add || !add.getResult().hasOneUse())
    return false;
  auto store = dyn_cast<tt::StoreOp>(*add.getResult().getUsers().begin());
  return store && store.getPtr() == load.getPtr() && store.getValue() == add.getResult();
}

// lanes * trips of every loop around it.
SymbolicInt widthOf(const ScatterDecision &decision) {
  SymbolicInt width = SymbolicInt::constant(decision.lanes);
  for (const SymbolicInt &trips : decision.trips)
    width = SymbolicInt::of(SymbolicInt::Op::Mul, {std::move(width), trips});
  return width;
}

} // namespace

ScatterPlan planScatterSums(tt::FuncOp kernel, bool takeTwins) {
  ScatterPlan plan;
  BlockArgument index = scatterArgument(kernel, contract::kScatterIndex);
  BlockArgument values = scatterArgument(kernel, contract::kScatterValues);
  // (programs that stride over the forward's: partial buffers' coarsening)
  bool coarsened = llvm::any_of(kernel.getBody().front().getArguments(), [](BlockArgument arg) {
    return argumentName(arg) == contract::kPrograms && !arg.use_empty();
  });
  llvm::DenseSet<BlockArgument> loaded;
  kernel.walk([&](tt::LoadOp load) {
    if (isAccumulation(load))
      return;
    if (BlockArgument base = kernelArgumentOf(load.getPtr(), kernel))
      loaded.insert(base);
  });
  kernel.walk([&](tt::AtomicRMWOp atomic) {
    if (!atomic->hasAttr(kUnlessRegridded) && !atomic->hasAttr(kRefusedUnlessExclusive))
      return;
    ScatterDecision decision;
    decision.atomic = atomic;
    decision.refusedTwin = atomic->hasAttr(kRefusedUnlessExclusive);
    decision.why = !index || !values
                       ? "the launch passed no scatter slots (tritonad_scatter_index, "
                         "tritonad_scatter_values)"
                   : decision.refusedTwin && !takeTwins
                       ? "a plain write beside re-parallelized parts keeps its launch check"
                       : whyNotScattered(atomic, kernel, loaded, coarsened, decision);
    decision.scattered = decision.why.empty();
    if (decision.shadow)
      decision.shadowName = argumentName(decision.shadow);
    plan.decisions.push_back(std::move(decision));
  });
  // Columns grouped by shadow, in the order the shadows first appear.
  llvm::MapVector<BlockArgument, std::vector<SymbolicInt>> widths;
  for (ScatterDecision &decision : plan.decisions)
    if (decision.scattered)
      widths[decision.shadow].push_back(widthOf(decision));
  auto sum = [](SymbolicInt total, const SymbolicInt &width) {
    return total.op == SymbolicInt::Op::Constant && total.value == 0
               ? width
               : SymbolicInt::of(SymbolicInt::Op::Add, {std::move(total), width});
  };
  SymbolicInt begin = SymbolicInt::constant(0);
  for (auto &[shadow, shadowWidths] : widths) {
    SymbolicInt end = begin;
    for (const SymbolicInt &width : shadowWidths)
      end = sum(std::move(end), width);
    plan.slots.columns.push_back({argumentName(shadow), begin, end});
    begin = end;
  }
  plan.slots.perProgram = begin;
  return plan;
}

void emitScatterSums(tt::FuncOp kernel, const ScatterPlan &plan) {
  // (an atomic that stays says why, for checkDeterministic's error)
  for (const ScatterDecision &decision : plan.decisions) {
    tt::AtomicRMWOp atomic = decision.atomic;
    auto why = atomic->getAttrOfType<StringAttr>(kUnlessRegridded);
    if (!decision.scattered && why)
      atomic->setAttr(kUnlessRegridded,
                      StringAttr::get(atomic.getContext(),
                                      why.getValue().str() +
                                          "; not summed through scatter slots: " +
                                          decision.why));
  }
  if (plan.slots.empty())
    return;
  BlockArgument indexArg = scatterArgument(kernel, contract::kScatterIndex);
  BlockArgument valuesArg = scatterArgument(kernel, contract::kScatterValues);
  Location loc = kernel.getLoc();
  OpBuilder entry = OpBuilder::atBlockBegin(&kernel.getBody().front());
  Type i64 = entry.getI64Type();
  auto constant = [&](OpBuilder &b, int64_t value) -> Value {
    return arith::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(value));
  };
  // At the entry: each loop's trips, each site's width, the shadows' columns
  // and the row's length (as the plan's expressions say).
  IRMapping copies;
  llvm::DenseMap<Operation *, Value> tripsOf;
  auto trips = [&](scf::ForOp loop) {
    Value &value = tripsOf[loop];
    if (value)
      return value;
    Value lower = i64Of(entry, loc, hoisted(entry, loop.getLowerBound(), copies));
    Value upper = i64Of(entry, loc, hoisted(entry, loop.getUpperBound(), copies));
    int64_t step = *constantOf(loop.getStep());
    Value rounded = arith::AddIOp::create(entry, loc, arith::SubIOp::create(entry, loc, upper,
                                                                             lower),
                                          constant(entry, step - 1));
    value = arith::MaxSIOp::create(
        entry, loc, arith::DivSIOp::create(entry, loc, rounded, constant(entry, step)),
        constant(entry, 0));
    return value;
  };
  llvm::MapVector<BlockArgument, SmallVector<const ScatterDecision *>> byShadow;
  for (const ScatterDecision &decision : plan.decisions)
    if (decision.scattered)
      byShadow[decision.shadow].push_back(&decision);
  llvm::DenseMap<const ScatterDecision *, Value> firstSlot;
  Value column = constant(entry, 0);
  for (auto &[shadow, decisions] : byShadow)
    for (const ScatterDecision *decision : decisions) {
      firstSlot[decision] = column;
      Value width = constant(entry, decision->lanes);
      for (scf::ForOp loop : decision->loops)
        width = arith::MulIOp::create(entry, loc, width, trips(loop));
      column = arith::AddIOp::create(entry, loc, column, width);
    }
  // This program's row: x + nx * (y + ny * z), every axis (x: the forward's
  // program that the coarsened loop runs, and nx the forward's count).
  Value rowStart = arith::MulIOp::create(
      entry, loc, linearProgramId(entry, loc, {true, true, true}), column);
  auto coarsenedRowStart = [&](OpBuilder &b, Location at, scf::ForOp programLoop) -> Value {
    Value inner = linearProgramId(b, at, {false, true, true});
    Value row = i64Of(b, at, programLoop.getInductionVar());
    if (inner)
      row = arith::AddIOp::create(
          b, at, row,
          arith::MulIOp::create(b, at, i64Of(b, at, programLoop.getUpperBound()), inner));
    return arith::MulIOp::create(b, at, row, column);
  };
  Type valueElement = cast<tt::PointerType>(valuesArg.getType()).getPointeeType();
  for (const ScatterDecision &decision : plan.decisions) {
    if (!decision.scattered)
      continue;
    tt::AtomicRMWOp atomic = decision.atomic;
    OpBuilder b(atomic);
    Location at = atomic.getLoc();
    // (the iteration, outermost loop slowest, selects a block of `lanes` slots)
    Value slot = arith::AddIOp::create(
        b, at,
        decision.programLoop ? coarsenedRowStart(b, at, decision.programLoop) : rowStart,
        firstSlot.lookup(&decision));
    Value block = constant(b, decision.lanes);
    for (int i = static_cast<int>(decision.loops.size()) - 1; i >= 0; --i) {
      scf::ForOp loop = decision.loops[i];
      Value iteration = arith::DivSIOp::create(
          b, at, arith::SubIOp::create(b, at, i64Of(b, at, loop.getInductionVar()),
                                       i64Of(b, at, loop.getLowerBound())),
          i64Of(b, at, loop.getStep()));
      slot = arith::AddIOp::create(b, at, slot, arith::MulIOp::create(b, at, iteration, block));
      block = arith::MulIOp::create(b, at, block, tripsOf.lookup(loop));
    }
    Value ptr = atomic.getPtr();
    Value value = castFloat(b, at, atomic.getVal(), valueElement);
    auto tensor = dyn_cast<RankedTensorType>(ptr.getType());
    auto elementBytes = static_cast<int64_t>(
        cast<tt::PointerType>(getElementTypeOrSelf(ptr.getType())).getPointeeType()
            .getIntOrFloatBitWidth() / 8);
    Value base = tt::PtrToIntOp::create(b, at, i64, decision.shadow);
    Value offset, slots;
    if (tensor) {
      auto ints = RankedTensorType::get(tensor.getShape(), i64);
      Value lane;
      int64_t stride = 1;
      for (int axis = tensor.getRank() - 1; axis >= 0; --axis) {
        Value along = arith::ExtSIOp::create(
            b, at, ints,
            indexAlongAxis(b, at, RankedTensorType::get(tensor.getShape(), b.getI32Type()),
                           axis));
        Value scaled = stride == 1 ? along
                                   : arith::MulIOp::create(
                                         b, at, along,
                                         tt::SplatOp::create(b, at, ints, constant(b, stride)));
        lane = lane ? arith::AddIOp::create(b, at, lane, scaled).getResult() : scaled;
        stride *= tensor.getShape()[axis];
      }
      slots = arith::AddIOp::create(b, at, tt::SplatOp::create(b, at, ints, slot), lane);
      Value addresses = tt::PtrToIntOp::create(b, at, ints, ptr);
      offset = arith::SubIOp::create(b, at, addresses, tt::SplatOp::create(b, at, ints, base));
      offset = arith::DivSIOp::create(
          b, at, offset, tt::SplatOp::create(b, at, ints, constant(b, elementBytes)));
      offset = arith::AddIOp::create(b, at, offset,
                                     tt::SplatOp::create(b, at, ints, constant(b, 1)));
    } else {
      slots = slot;
      offset = arith::SubIOp::create(b, at, tt::PtrToIntOp::create(b, at, i64, ptr), base);
      offset = arith::DivSIOp::create(b, at, offset, constant(b, elementBytes));
      offset = arith::AddIOp::create(b, at, offset, constant(b, 1));
    }
    auto address = [&](Value pointer) -> Value {
      if (!tensor)
        return tt::AddPtrOp::create(b, at, pointer.getType(), pointer, slots);
      auto pointers = RankedTensorType::get(tensor.getShape(), pointer.getType());
      return tt::AddPtrOp::create(b, at, pointers, tt::SplatOp::create(b, at, pointers, pointer),
                                  slots);
    };
    // (masked like the add: a lane it leaves out keeps the slot's 0, and a
    // refused twin whose launch condition holds writes no slot at all)
    createStore(b, at, address(indexArg), offset, atomic.getMask());
    createStore(b, at, address(valuesArg), value, atomic.getMask());
    atomic.erase();
  }
}

} // namespace tritonad
