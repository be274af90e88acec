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

// Whether `value` can be computed again at the kernel's entry: its
// arguments and constants through pure ops without regions (and the
// forward's program, `forwardProgram`, a coarsened loop's induction variable,
// which the caller maps to a value at the entry).
bool hoistable(Value value, tt::FuncOp kernel, Value forwardProgram = nullptr) {
  if (value == forwardProgram)
    return true;
  if (auto arg = dyn_cast<BlockArgument>(value))
    return arg.getOwner() == &kernel.getBody().front();
  Operation *def = value.getDefiningOp();
  if (!def || def->getNumRegions() || !isPure(def))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return hoistable(operand, kernel, forwardProgram);
  });
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

using Op = SymbolicInt::Op;

// How an expression moves as the program id along one axis grows (the other
// ids and the launch's arguments fixed): by an exact constant per program, or
// only one way, or either.
struct Slope {
  enum class Kind { Exact, Rising, Falling, Unknown } kind = Kind::Exact;
  int64_t perProgram = 0; // (Exact)

  static Slope exact(int64_t perProgram) { return {Kind::Exact, perProgram}; }
  static Slope of(Kind kind) { return {kind, 0}; }
  // 1 rising, -1 falling, 0 neither, nullopt either way
  std::optional<int> direction() const {
    switch (kind) {
    case Kind::Exact:
      return perProgram > 0 ? 1 : perProgram < 0 ? -1 : 0;
    case Kind::Rising:
      return 1;
    case Kind::Falling:
      return -1;
    case Kind::Unknown:
      return std::nullopt;
    }
    return std::nullopt;
  }
  bool constant() const { return kind == Kind::Exact && perProgram == 0; }
  Slope negated() const {
    switch (kind) {
    case Kind::Exact:
      return exact(-perProgram);
    case Kind::Rising:
      return of(Kind::Falling);
    case Kind::Falling:
      return of(Kind::Rising);
    case Kind::Unknown:
      return *this;
    }
    return *this;
  }
};

// Of a sum's (or min's, max's) terms moving as `a` and `b` do: one way where
// both move that way or not at all.
Slope together(Slope a, Slope b) {
  std::optional<int> da = a.direction(), db = b.direction();
  if (!da || !db || *da * *db < 0)
    return Slope::of(Slope::Kind::Unknown);
  int direction = *da ? *da : *db;
  return direction > 0   ? Slope::of(Slope::Kind::Rising)
         : direction < 0 ? Slope::of(Slope::Kind::Falling)
                         : Slope::exact(0);
}

// Whether a uniform expression is positive whatever the launch's arguments.
bool alwaysPositive(const SymbolicInt &expr) {
  switch (expr.op) {
  case Op::Constant:
    return expr.value > 0;
  case Op::NumPrograms:
    return true;
  case Op::Argument: // (the forward's programs that a coarsened backward strides over)
    return expr.name == contract::kPrograms;
  case Op::Add:
  case Op::Mul:
  case Op::Max:
    return llvm::all_of(expr.operands, alwaysPositive);
  default:
    return false;
  }
}

Slope slopeOf(const SymbolicInt &expr, int axis) {
  switch (expr.op) {
  case Op::Constant:
  case Op::Argument:
  case Op::NumPrograms:
    return Slope::exact(0);
  case Op::ProgramId:
    return Slope::exact(expr.value == axis ? 1 : 0);
  case Op::Add:
  case Op::Sub: {
    Slope a = slopeOf(expr.operands[0], axis);
    Slope b = slopeOf(expr.operands[1], axis);
    if (expr.op == Op::Sub)
      b = b.negated();
    if (a.kind == Slope::Kind::Exact && b.kind == Slope::Kind::Exact)
      return Slope::exact(a.perProgram + b.perProgram);
    return together(a, b);
  }
  case Op::Mul: {
    Slope a = slopeOf(expr.operands[0], axis);
    Slope b = slopeOf(expr.operands[1], axis);
    const SymbolicInt *factor = &expr.operands[1];
    if (!a.constant())
      std::swap(a, b);
    else
      factor = &expr.operands[0];
    if (!a.constant())
      return Slope::of(Slope::Kind::Unknown);
    if (factor->op == Op::Constant)
      return b.kind == Slope::Kind::Exact ? Slope::exact(b.perProgram * factor->value)
             : factor->value > 0          ? b
             : factor->value < 0          ? b.negated()
                                          : Slope::exact(0);
    if (b.constant())
      return b;
    return alwaysPositive(*factor) ? together(b, Slope::exact(0))
                                   : Slope::of(Slope::Kind::Unknown);
  }
  case Op::DivS: {
    // (a positive uniform divisor: a quotient moves as its dividend does)
    Slope a = slopeOf(expr.operands[0], axis);
    Slope b = slopeOf(expr.operands[1], axis);
    if (!b.constant() || !alwaysPositive(expr.operands[1]))
      return Slope::of(Slope::Kind::Unknown);
    return a.constant() ? a : together(a, Slope::exact(0));
  }
  case Op::Min:
  case Op::Max:
    return together(slopeOf(expr.operands[0], axis), slopeOf(expr.operands[1], axis));
  default:
    for (const SymbolicInt &operand : expr.operands)
      if (!slopeOf(operand, axis).constant())
        return Slope::of(Slope::Kind::Unknown);
    return Slope::exact(0);
  }
}

// `expr` with each program id replaced by the first or the last program's
// (`programs`: the count along each axis).
SymbolicInt atExtremes(const SymbolicInt &expr, const std::array<bool, 3> &last,
                       const std::array<SymbolicInt, 3> &programs) {
  if (expr.op == Op::ProgramId) {
    int axis = static_cast<int>(expr.value);
    return last[axis] ? SymbolicInt::of(Op::Sub, {programs[axis], SymbolicInt::constant(1)})
                      : SymbolicInt::constant(0);
  }
  SymbolicInt copy = expr;
  for (SymbolicInt &operand : copy.operands)
    operand = atExtremes(operand, last, programs);
  return copy;
}

// The scf.for around `op` that strides over the forward's programs in a
// coarsened backward, if any.
scf::ForOp programLoopAround(Operation *op) {
  for (auto loop = op->getParentOfType<scf::ForOp>(); loop;
       loop = loop->getParentOfType<scf::ForOp>())
    if (isProgramLoop(loop))
      return loop;
  return nullptr;
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
  // (in a coarsened backward the forward's program along axis 0 is the
  // program loop's induction variable, and the forward's count along it
  // tritonad_programs; the launched program ids are not the forward's)
  decision.programLoop = programLoopAround(atomic);
  Value forwardProgram =
      decision.programLoop ? decision.programLoop.getInductionVar() : Value();
  auto asProgramId = [&](BlockArgument arg) -> std::optional<SymbolicInt> {
    if (arg != forwardProgram)
      return std::nullopt;
    SymbolicInt id;
    id.op = Op::ProgramId;
    id.value = 0;
    return id;
  };
  std::array<SymbolicInt, 3> programs;
  for (int axis = 0; axis < 3; ++axis) {
    programs[axis].op = Op::NumPrograms;
    programs[axis].value = axis;
  }
  if (decision.programLoop) {
    programs[0].op = Op::Argument;
    programs[0].name = contract::kPrograms;
  }
  for (Operation *parent = atomic->getParentOp(); parent != kernel.getOperation();
       parent = parent->getParentOp()) {
    if (isa<scf::IfOp>(parent))
      continue; // (a slot a branch does not reach keeps offset 0: no element)
    auto loop = dyn_cast<scf::ForOp>(parent);
    if (!loop)
      return "it is inside '" + parent->getName().getStringRef().str() + "' at " +
             locationText(parent->getLoc());
    if (loop == decision.programLoop)
      continue;
    std::optional<SymbolicInt> step = symbolize(loop.getStep());
    std::optional<SymbolicInt> trips =
        forwardProgram ? symbolicTripCount(loop, /*programIds=*/false, asProgramId)
                       : symbolicTripCount(loop, /*programIds=*/true);
    if (!trips || !hoistable(loop.getLowerBound(), kernel, forwardProgram) ||
        !hoistable(loop.getUpperBound(), kernel, forwardProgram) ||
        !hoistable(loop.getStep(), kernel))
      return "the loop at " + locationText(loop.getLoc()) +
             " around it runs a number of iterations that depends on loaded values (each "
             "program's slots are counted before the launch)";
    if (!step || !alwaysPositive(*step))
      return "the loop at " + locationText(loop.getLoc()) +
             " around it steps by an amount not known to be positive (a positive constant "
             "or the grid's size)";
    // (trips that move one way along each axis: the most at one end of it)
    std::array<bool, 3> last = {false, false, false};
    for (int axis = 0; axis < 3; ++axis) {
      std::optional<int> direction = slopeOf(*trips, axis).direction();
      if (!direction)
        return "the loop at " + locationText(loop.getLoc()) +
               " around it runs a number of iterations that depends on the program in a way "
               "that does not move one way along each grid axis (each program's row of "
               "slots has room for the most any program runs)";
      last[axis] = *direction > 0;
    }
    decision.loops.insert(decision.loops.begin(), loop);
    decision.trips.insert(decision.trips.begin(), atExtremes(*trips, last, programs));
    decision.extremes.insert(decision.extremes.begin(), last);
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

// How many elements the address (or integer offset) `value` moves from one
// lane to the next along its last axis: a constant, or nullopt where it is
// not one (data, a runtime stride). Pointers carried by a loop move as their
// initial value where each iteration adds the same to every lane.
std::optional<int64_t> stepAlongLastAxis(Value value, int depth = 0) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || type.getShape().back() == 1)
    return 0;
  if (depth > 32)
    return std::nullopt;
  auto step = [&](Value of) { return stepAlongLastAxis(of, depth + 1); };
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
    if (!loop || arg.getArgNumber() == 0)
      return std::nullopt;
    unsigned carried = arg.getArgNumber() - 1;
    auto next = loop.getBody()->getTerminator()->getOperand(carried).getDefiningOp<tt::AddPtrOp>();
    std::optional<int64_t> moved = next && next.getPtr() == arg ? step(next.getOffset())
                                                                 : std::nullopt;
    if (!moved || *moved != 0)
      return std::nullopt;
    return step(loop.getInitArgs()[carried]);
  }
  Operation *def = value.getDefiningOp();
  if (!def)
    return std::nullopt;
  auto sum = [](std::optional<int64_t> a, std::optional<int64_t> b) -> std::optional<int64_t> {
    if (!a || !b)
      return std::nullopt;
    return *a + *b;
  };
  if (auto add = dyn_cast<tt::AddPtrOp>(def))
    return sum(step(add.getPtr()), step(add.getOffset()));
  if (isa<tt::SplatOp>(def))
    return 0;
  if (isa<tt::MakeRangeOp>(def))
    return 1;
  if (auto constant = dyn_cast<arith::ConstantOp>(def)) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    return dense && dense.isSplat() ? std::optional<int64_t>(0) : std::nullopt;
  }
  if (isa<tt::BroadcastOp, arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp>(def))
    return step(def->getOperand(0));
  if (auto expand = dyn_cast<tt::ExpandDimsOp>(def))
    return step(expand.getSrc()); // (a new last axis has size 1: handled above)
  if (auto add = dyn_cast<arith::AddIOp>(def))
    return sum(step(add.getLhs()), step(add.getRhs()));
  if (auto sub = dyn_cast<arith::SubIOp>(def)) {
    std::optional<int64_t> rhs = step(sub.getRhs());
    return sum(step(sub.getLhs()), rhs ? std::optional<int64_t>(-*rhs) : std::nullopt);
  }
  if (auto mul = dyn_cast<arith::MulIOp>(def)) {
    for (auto [factor, other] : {std::pair(mul.getLhs(), mul.getRhs()),
                                 std::pair(mul.getRhs(), mul.getLhs())}) {
      APInt constant;
      if (matchPattern(factor, m_ConstantInt(&constant))) {
        std::optional<int64_t> moved = step(other);
        return moved ? std::optional<int64_t>(*moved * constant.getSExtValue()) : std::nullopt;
      }
    }
    std::optional<int64_t> lhs = step(mul.getLhs()), rhs = step(mul.getRhs());
    return lhs && rhs && *lhs == 0 && *rhs == 0 ? std::optional<int64_t>(0) : std::nullopt;
  }
  return std::nullopt;
}

// Lanes per key of a scattered add: its last axis's size where its addresses
// step by one element along it, else 1.
int64_t lanesPerKey(tt::AtomicRMWOp atomic) {
  auto tensor = dyn_cast<RankedTensorType>(atomic.getPtr().getType());
  if (!tensor || tensor.getShape().back() == 1)
    return 1;
  std::optional<int64_t> step = stepAlongLastAxis(atomic.getPtr());
  return step && *step == 1 ? tensor.getShape().back() : 1;
}

// `lanes` * the trips of every loop around the add.
SymbolicInt widthOf(const ScatterDecision &decision, int64_t lanes) {
  SymbolicInt width = SymbolicInt::constant(lanes);
  for (const SymbolicInt &trips : decision.trips)
    width = SymbolicInt::of(SymbolicInt::Op::Mul, {std::move(width), trips});
  return width;
}

// The shadow's slots and their lanes per key: a group of columns.
using ColumnGroup = std::pair<BlockArgument, int64_t>;

} // namespace

ScatterPlan planScatterSums(tt::FuncOp kernel) {
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
                   : whyNotScattered(atomic, kernel, loaded, coarsened, decision);
    decision.scattered = decision.why.empty();
    if (decision.scattered)
      decision.lanesPerKey = lanesPerKey(atomic);
    if (decision.shadow)
      decision.shadowName = argumentName(decision.shadow);
    plan.decisions.push_back(std::move(decision));
  });
  // Columns grouped by shadow and lanes per key, in the order they first
  // appear: (values, keys) of each site.
  llvm::MapVector<ColumnGroup, std::vector<std::pair<SymbolicInt, SymbolicInt>>> widths;
  for (ScatterDecision &decision : plan.decisions)
    if (decision.scattered)
      widths[{decision.shadow, decision.lanesPerKey}].push_back(
          {widthOf(decision, decision.lanes),
           widthOf(decision, decision.lanes / decision.lanesPerKey)});
  auto sum = [](SymbolicInt total, const SymbolicInt &width) {
    return total.op == SymbolicInt::Op::Constant && total.value == 0
               ? width
               : SymbolicInt::of(SymbolicInt::Op::Add, {std::move(total), width});
  };
  SymbolicInt begin = SymbolicInt::constant(0), indexBegin = SymbolicInt::constant(0);
  for (auto &[group, groupWidths] : widths) {
    SymbolicInt end = begin, indexEnd = indexBegin;
    for (const auto &[width, keys] : groupWidths) {
      end = sum(std::move(end), width);
      indexEnd = sum(std::move(indexEnd), keys);
    }
    plan.slots.columns.push_back(
        {argumentName(group.first), begin, end, indexBegin, indexEnd, group.second});
    begin = end;
    indexBegin = indexEnd;
  }
  plan.slots.perProgram = begin;
  plan.slots.indexPerProgram = indexBegin;
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
  llvm::DenseMap<Operation *, Value> tripsOf;
  // (where the trips vary by program, the extreme program's: its ids stand
  // in for the program's own in the bounds' copies)
  // (the first of `count` programs, 0, or the last, count - 1)
  auto endOf = [&](Value count, bool last) -> Value {
    Type type = count.getType();
    auto integer = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(entry, loc, type, entry.getIntegerAttr(type, v));
    };
    return last ? arith::SubIOp::create(entry, loc, count, integer(1)).getResult() : integer(0);
  };
  std::array<std::array<Value, 2>, 3> extremeIds;
  auto extremeId = [&](int axis, bool last) {
    Value &id = extremeIds[axis][last];
    if (!id)
      id = endOf(tt::GetNumProgramsOp::create(entry, loc, entry.getI32Type(),
                                              static_cast<tt::ProgramIDDim>(axis)),
                 last);
    return id;
  };
  auto trips = [&](scf::ForOp loop, const std::array<bool, 3> &last, scf::ForOp programLoop) {
    Value &value = tripsOf[loop];
    if (value)
      return value;
    IRMapping atExtreme;
    kernel.walk([&](tt::GetProgramIdOp read) {
      int axis = static_cast<int>(read.getAxis());
      atExtreme.map(read.getResult(), extremeId(axis, last[axis]));
    });
    // (the forward's programs, tritonad_programs of them: a kernel argument)
    if (programLoop)
      atExtreme.map(programLoop.getInductionVar(), endOf(programLoop.getUpperBound(), last[0]));
    Value lower = i64Of(entry, loc, hoisted(entry, loop.getLowerBound(), atExtreme));
    Value upper = i64Of(entry, loc, hoisted(entry, loop.getUpperBound(), atExtreme));
    Value step = i64Of(entry, loc, hoisted(entry, loop.getStep(), atExtreme));
    Value rounded = arith::AddIOp::create(
        entry, loc, arith::SubIOp::create(entry, loc, upper, lower),
        arith::SubIOp::create(entry, loc, step, constant(entry, 1)));
    value = arith::MaxSIOp::create(entry, loc, arith::DivSIOp::create(entry, loc, rounded, step),
                                   constant(entry, 0));
    return value;
  };
  llvm::MapVector<ColumnGroup, SmallVector<const ScatterDecision *>> byGroup;
  for (const ScatterDecision &decision : plan.decisions)
    if (decision.scattered)
      byGroup[{decision.shadow, decision.lanesPerKey}].push_back(&decision);
  llvm::DenseMap<const ScatterDecision *, Value> firstSlot, firstKey;
  Value column = constant(entry, 0), keyColumn = constant(entry, 0);
  for (auto &[group, decisions] : byGroup)
    for (const ScatterDecision *decision : decisions) {
      firstSlot[decision] = column;
      firstKey[decision] = keyColumn;
      Value repeats = constant(entry, 1);
      for (auto [loop, last] : llvm::zip(decision->loops, decision->extremes))
        repeats = arith::MulIOp::create(entry, loc, repeats,
                                        trips(loop, last, decision->programLoop));
      auto times = [&](int64_t lanes) {
        return arith::MulIOp::create(entry, loc, repeats, constant(entry, lanes));
      };
      column = arith::AddIOp::create(entry, loc, column, times(decision->lanes));
      keyColumn = arith::AddIOp::create(entry, loc, keyColumn,
                                        times(decision->lanes / decision->lanesPerKey));
    }
  // This program's rows: x + nx * (y + ny * z), every axis (x: the forward's
  // program that the coarsened loop runs, and nx the forward's count).
  Value program = linearProgramId(entry, loc, {true, true, true});
  auto rowStart = [&](OpBuilder &b, Location at, scf::ForOp programLoop, Value length) -> Value {
    if (!programLoop)
      return arith::MulIOp::create(b, at, program, length);
    Value inner = linearProgramId(b, at, {false, true, true});
    Value row = i64Of(b, at, programLoop.getInductionVar());
    if (inner)
      row = arith::AddIOp::create(
          b, at, row,
          arith::MulIOp::create(b, at, i64Of(b, at, programLoop.getUpperBound()), inner));
    return arith::MulIOp::create(b, at, row, length);
  };
  Type valueElement = cast<tt::PointerType>(valuesArg.getType()).getPointeeType();
  for (const ScatterDecision &decision : plan.decisions) {
    if (!decision.scattered)
      continue;
    tt::AtomicRMWOp atomic = decision.atomic;
    OpBuilder b(atomic);
    Location at = atomic.getLoc();
    // (the iteration, outermost loop slowest, selects a block of `lanes`
    // values and of lanes / lanesPerKey keys)
    auto slotOf = [&](Value first, Value length, int64_t lanes) -> Value {
      Value slot = arith::AddIOp::create(b, at, rowStart(b, at, decision.programLoop, length),
                                         first);
      Value block = constant(b, lanes);
      for (int i = static_cast<int>(decision.loops.size()) - 1; i >= 0; --i) {
        scf::ForOp loop = decision.loops[i];
        Value iteration = arith::DivSIOp::create(
            b, at, arith::SubIOp::create(b, at, i64Of(b, at, loop.getInductionVar()),
                                         i64Of(b, at, loop.getLowerBound())),
            i64Of(b, at, loop.getStep()));
        slot = arith::AddIOp::create(b, at, slot, arith::MulIOp::create(b, at, iteration, block));
        block = arith::MulIOp::create(b, at, block, tripsOf.lookup(loop));
      }
      return slot;
    };
    Value slot = slotOf(firstSlot.lookup(&decision), column, decision.lanes);
    Value keySlot = slotOf(firstKey.lookup(&decision), keyColumn,
                           decision.lanes / decision.lanesPerKey);
    Value ptr = atomic.getPtr();
    Value value = castFloat(b, at, atomic.getVal(), valueElement);
    Value mask = atomic.getMask();
    auto tensor = dyn_cast<RankedTensorType>(ptr.getType());
    auto elementBytes = static_cast<int64_t>(
        cast<tt::PointerType>(getElementTypeOrSelf(ptr.getType())).getPointeeType()
            .getIntOrFloatBitWidth() / 8);
    Value base = tt::PtrToIntOp::create(b, at, i64, decision.shadow);
    // (each slot's index in the program's block, row-major over `shape`)
    auto laneIndex = [&](ArrayRef<int64_t> shape) -> Value {
      auto ints = RankedTensorType::get(shape, i64);
      Value lane;
      int64_t stride = 1;
      for (int axis = static_cast<int>(shape.size()) - 1; axis >= 0; --axis) {
        Value along = arith::ExtSIOp::create(
            b, at, ints, indexAlongAxis(b, at, RankedTensorType::get(shape, b.getI32Type()), axis));
        Value scaled = stride == 1 ? along
                                   : arith::MulIOp::create(
                                         b, at, along,
                                         tt::SplatOp::create(b, at, ints, constant(b, stride)));
        lane = lane ? arith::AddIOp::create(b, at, lane, scaled).getResult() : scaled;
        stride *= shape[axis];
      }
      return lane;
    };
    auto address = [&](Value pointer, Value at0, ArrayRef<int64_t> shape) -> Value {
      if (shape.empty())
        return tt::AddPtrOp::create(b, at, pointer.getType(), pointer, at0);
      auto ints = RankedTensorType::get(shape, i64);
      auto pointers = RankedTensorType::get(shape, pointer.getType());
      return tt::AddPtrOp::create(
          b, at, pointers, tt::SplatOp::create(b, at, pointers, pointer),
          arith::AddIOp::create(b, at, tt::SplatOp::create(b, at, ints, at0), laneIndex(shape)));
    };
    // 1 + each lane's element offset from the shadow's pointer
    Value offset;
    if (tensor) {
      auto ints = RankedTensorType::get(tensor.getShape(), i64);
      Value addresses = tt::PtrToIntOp::create(b, at, ints, ptr);
      offset = arith::SubIOp::create(b, at, addresses, tt::SplatOp::create(b, at, ints, base));
      offset = arith::DivSIOp::create(
          b, at, offset, tt::SplatOp::create(b, at, ints, constant(b, elementBytes)));
      offset = arith::AddIOp::create(b, at, offset,
                                     tt::SplatOp::create(b, at, ints, constant(b, 1)));
    } else {
      offset = arith::SubIOp::create(b, at, tt::PtrToIntOp::create(b, at, i64, ptr), base);
      offset = arith::DivSIOp::create(b, at, offset, constant(b, elementBytes));
      offset = arith::AddIOp::create(b, at, offset, constant(b, 1));
    }
    ArrayRef<int64_t> shape = tensor ? tensor.getShape() : ArrayRef<int64_t>();
    if (decision.lanesPerKey == 1) {
      // (masked like the add: a lane it leaves out keeps the slot's 0, and a
      // refused twin whose launch condition holds writes no slot at all)
      createStore(b, at, address(indexArg, keySlot, shape), offset, mask);
      createStore(b, at, address(valuesArg, slot, shape), value, mask);
    } else {
      // A key per run of lanes along the last axis: `lanes` + the element
      // offset of its first lane (every lane's offset less its index along
      // the axis; at least 1 where some lane is active, though the first lane
      // may be masked off below the shadow's first element), written where
      // some lane of the run is active; the run's values, 0 where the mask
      // leaves a lane out (nothing where it leaves every lane out: a refused
      // twin whose launch condition holds writes no slot).
      int last = static_cast<int>(shape.size()) - 1;
      auto ints = RankedTensorType::get(shape, i64);
      Value along = arith::ExtSIOp::create(
          b, at, ints, indexAlongAxis(b, at, RankedTensorType::get(shape, b.getI32Type()), last));
      Value key = integerExtremum(b, at, arith::SubIOp::create(b, at, offset, along), last,
                                  /*isMax=*/true);
      // (offset holds 1 + the element: lanes - 1 more)
      Value beyond = constant(b, decision.lanesPerKey - 1);
      key = arith::AddIOp::create(
          b, at, key,
          shape.size() > 1
              ? tt::SplatOp::create(b, at, RankedTensorType::get(shape.drop_back(), i64), beyond)
                    .getResult()
              : beyond);
      Value active = mask ? anyAlongAxis(b, at, mask, last) : Value();
      createStore(b, at, address(indexArg, keySlot, shape.drop_back()), key, active);
      if (mask) {
        auto zero = arith::ConstantOp::create(b, at, b.getZeroAttr(value.getType()));
        value = arith::SelectOp::create(b, at, mask, value, zero);
        mask = broadcastAlongAxis(b, at, active, last, cast<RankedTensorType>(mask.getType()));
      }
      createStore(b, at, address(valuesArg, slot, shape), value, mask);
    }
    atomic.erase();
  }
}

} // namespace tritonad

