#include "tritonad/Analysis/ShiftInvariance.h"

#include "tritonad/Analysis/CombineRegion.h"
#include "tritonad/Analysis/Dependence.h"

#include "tritonad/Dialect/Triton/Dialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

// How a value depends on a perturbation of the candidate. Within a loop that
// carries the candidate, `prev` is the perturbation of the value the
// iteration starts from and `cur` that of the value it computes; elsewhere
// only `cur` is used.
enum class Dependence {
  Free,     // does not depend on it
  Zero,     // the constant 0 (free, and also "scaled" by anything)
  Infinite, // the constant +-inf (free, and also "shifted" by anything)
  Shifted,  // v + prev*d_prev + cur*d_cur
  Scaled,   // v * exp(prev*d_prev + cur*d_cur)
  Unknown,
};

struct Shift {
  Dependence kind = Dependence::Free;
  bool negative = false; // of an Infinite
  double prev = 0, cur = 0;
  // For each axis of the candidate, the axis of this value along which its
  // perturbation varies (-1 where the candidate's axis has size 1).
  SmallVector<int, 4> axes;

  static Shift of(Dependence kind) { return Shift{kind, false, 0, 0, {}}; }
  static Shift infinity(bool negative) { return Shift{Dependence::Infinite, negative, 0, 0, {}}; }
  bool isFree() const {
    return kind == Dependence::Free || kind == Dependence::Zero || kind == Dependence::Infinite;
  }
  bool isTagged() const { return kind == Dependence::Shifted || kind == Dependence::Scaled; }
  bool sameForm(const Shift &other) const {
    return kind == other.kind && axes == other.axes && std::abs(prev - other.prev) < 1e-9 &&
           std::abs(cur - other.cur) < 1e-9;
  }
  bool operator==(const Shift &other) const {
    if (isTagged())
      return sameForm(other);
    return kind == other.kind && (kind != Dependence::Infinite || negative == other.negative);
  }
};

Shift tagged(Dependence kind, double prev, double cur, ArrayRef<int> axes) {
  if (std::abs(prev) < 1e-12 && std::abs(cur) < 1e-12)
    return Shift::of(Dependence::Free);
  return Shift{kind, false, prev, cur, SmallVector<int, 4>(axes)};
}

Shift unknown() { return Shift::of(Dependence::Unknown); }

// The value of a merge (select, branch results, loop entry and back edge).
Shift join(const Shift &a, const Shift &b) {
  using D = Dependence;
  if (a.kind == D::Unknown || b.kind == D::Unknown)
    return unknown();
  if (a.isFree() && b.isFree())
    return a == b ? a : Shift::of(D::Free);
  if (a.isTagged() && b.isTagged())
    return a.sameForm(b) ? a : unknown();
  const Shift &t = a.isTagged() ? a : b;
  const Shift &f = a.isTagged() ? b : a;
  // 0 * e^d = 0 and -inf + d = -inf: constants that every scale or shift keeps.
  if ((t.kind == D::Scaled && f.kind == D::Zero) || (t.kind == D::Shifted && f.kind == D::Infinite))
    return t;
  return unknown();
}

// a + sign * b.
Shift addLike(const Shift &a, const Shift &b, double sign) {
  using D = Dependence;
  if (a.kind == D::Unknown || b.kind == D::Unknown)
    return unknown();
  // +-inf plus anything finite (a perturbation included) stays +-inf.
  bool aInf = a.kind == D::Infinite, bInf = b.kind == D::Infinite;
  if (aInf || bInf) {
    bool bNegative = sign > 0 ? b.negative : !b.negative;
    if (aInf && bInf)
      return a.negative == bNegative ? Shift::infinity(a.negative) : unknown(); // inf - inf
    if (a.kind == D::Scaled || b.kind == D::Scaled)
      return unknown();
    return Shift::infinity(aInf ? a.negative : bNegative);
  }
  if (a.isFree() && b.isFree())
    return Shift::of(a.kind == D::Zero && b.kind == D::Zero ? D::Zero : D::Free);
  if (a.kind == D::Shifted && b.kind == D::Shifted)
    return a.axes == b.axes
               ? tagged(D::Shifted, a.prev + sign * b.prev, a.cur + sign * b.cur, a.axes)
               : unknown();
  if (a.kind == D::Shifted && (b.kind == D::Free || b.kind == D::Zero))
    return a;
  if (b.kind == D::Shifted && (a.kind == D::Free || a.kind == D::Zero))
    return tagged(D::Shifted, sign * b.prev, sign * b.cur, b.axes);
  if (a.kind == D::Scaled && b.kind == D::Scaled)
    return a.sameForm(b) ? a : unknown();
  if (a.kind == D::Scaled && b.kind == D::Zero)
    return a;
  if (b.kind == D::Scaled && a.kind == D::Zero)
    return b;
  return unknown();
}


Shift ofConstant(Value value) {
  std::optional<double> c = floatConstant(value);
  if (c && *c == 0.0)
    return Shift::of(Dependence::Zero);
  if (c && std::isinf(*c))
    return Shift::infinity(*c < 0);
  return Shift::of(Dependence::Free);
}

// a * b, or a / b.
Shift multiplyLike(const Shift &a, const Shift &b, Value bValue, bool divide) {
  using D = Dependence;
  if (a.kind == D::Unknown || b.kind == D::Unknown)
    return unknown();
  if ((a.kind == D::Zero && b.kind == D::Infinite) || (b.kind == D::Zero && a.kind == D::Infinite))
    return unknown(); // 0 * inf
  if (a.kind == D::Zero)
    return a;
  if (b.kind == D::Zero && !divide)
    return b;
  if (a.isFree() && b.isFree())
    return Shift::of(D::Free);
  double sign = divide ? -1.0 : 1.0;
  if (a.kind == D::Scaled && b.kind == D::Free)
    return a;
  if (b.kind == D::Scaled && a.kind == D::Free)
    return tagged(D::Scaled, sign * b.prev, sign * b.cur, b.axes);
  if (a.kind == D::Scaled && b.kind == D::Scaled)
    return a.axes == b.axes
               ? tagged(D::Scaled, a.prev + sign * b.prev, a.cur + sign * b.cur, a.axes)
               : unknown();
  // (v + d) * k = v * k + k * d for a constant k.
  if (a.kind == D::Shifted && b.kind == D::Free)
    if (std::optional<double> k = floatConstant(bValue); k && *k != 0.0 && std::isfinite(*k)) {
      double factor = divide ? 1.0 / *k : *k;
      return tagged(D::Shifted, a.prev * factor, a.cur * factor, a.axes);
    }
  return unknown();
}

// max(a, b) and min(a, b): shifts and positive scales keep the order.
Shift extremum(const Shift &a, const Shift &b) {
  if (a.kind == Dependence::Unknown || b.kind == Dependence::Unknown)
    return unknown();
  if (a.isFree() && b.isFree())
    return Shift::of(Dependence::Free);
  return join(a, b);
}

// Comparisons see no perturbation when both sides move alike.
Shift compare(const Shift &a, const Shift &b) {
  Shift merged = extremum(a, b);
  return merged.kind == Dependence::Unknown ? merged : Shift::of(Dependence::Free);
}

// A reduction along `axis`: only along an axis where the perturbation is the
// same for every element.
Shift reduceAlong(const Shift &input, int axis, bool isSum) {
  if (!input.isTagged())
    return input.kind == Dependence::Unknown ? input : Shift::of(Dependence::Free);
  if (llvm::is_contained(input.axes, axis))
    return unknown();
  if (isSum && input.kind == Dependence::Shifted)
    return unknown();
  Shift result = input;
  for (int &a : result.axes)
    if (a > axis)
      --a;
  return result;
}

// The op of a single-operand combine region: addf (a sum) or a max/min.
Operation *combinerOp(tt::ReduceOp reduce) {
  if (reduce.getNumOperands() != 1)
    return nullptr;
  return matchCombiner<arith::AddFOp, arith::MaxNumFOp, arith::MaximumFOp, arith::MinNumFOp,
                       arith::MinimumFOp>(reduce.getCombineOp().front(), 0, 1);
}

bool isExtremumOp(Operation *op) {
  return isa_and_nonnull<arith::MaxNumFOp, arith::MaximumFOp, arith::MinNumFOp, arith::MinimumFOp>(
      op);
}

SmallVector<int, 4> identityAxes(Type type) {
  SmallVector<int, 4> axes;
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    for (auto [i, size] : llvm::enumerate(tensor.getShape()))
      axes.push_back(size == 1 ? -1 : static_cast<int>(i));
  return axes;
}

// The abstract interpretation of `function` for one candidate; held values
// (stabilizers proven before) are free: they may take any value.
class ShiftInterpreter {
public:
  ShiftInterpreter(const DenseSet<Value> &held, Stabilizer candidate)
      : held(held), candidate(candidate) {}

  bool isInvariant(Operation *function) {
    for (Region &region : function->getRegions())
      for (Block &block : region)
        visitBlock(block);
    return !leaks;
  }

private:
  Shift get(Value value) const {
    if (held.contains(value))
      return Shift::of(Dependence::Free);
    auto it = tags.find(value);
    return it == tags.end() ? Shift::of(Dependence::Free) : it->second;
  }
  void set(Value value, Shift shift) { tags[value] = std::move(shift); }

  // Something that leaves the function must not depend on the candidate.
  void requireFree(Value value) {
    if (!get(value).isFree())
      leaks = true;
  }

  void visitBlock(Block &block) {
    for (Operation &op : block) {
      if (leaks)
        return;
      visit(&op);
    }
  }

  Shift perturbation(double prev, double cur) const {
    return tagged(Dependence::Shifted, prev, cur, identityAxes(candidate.value.getType()));
  }

  bool capturesTagged(Operation *op) const {
    bool found = false;
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        if (!op->isAncestor(operand.getParentRegion()->getParentOp()) && !get(operand).isFree())
          found = true;
    });
    return found;
  }

  void visit(Operation *op) {
    if (auto loop = dyn_cast<scf::ForOp>(op))
      return visitFor(loop);
    if (auto branch = dyn_cast<scf::IfOp>(op))
      return visitIf(branch);
    if (op->hasTrait<OpTrait::IsTerminator>()) {
      // Region terminators are read by their parents; the function's return
      // and a while's condition leave the region.
      if (isa<tt::ReturnOp, scf::ConditionOp>(op))
        for (Value operand : op->getOperands())
          requireFree(operand);
      return;
    }
    if (isa<scf::WhileOp>(op) || (op->getNumRegions() != 0 && !isa<tt::ReduceOp>(op))) {
      // No rule follows a perturbation through these: nothing perturbed may
      // enter, nor may the candidate be defined inside.
      if (capturesTagged(op) || op->isAncestor(candidate.value.getDefiningOp()) ||
          llvm::any_of(op->getOperands(), [&](Value v) { return !get(v).isFree(); })) {
        leaks = true;
        return;
      }
      for (Region &region : op->getRegions())
        for (Block &block : region)
          visitBlock(block);
      return;
    }
    if (writesMemory(op)) {
      for (Value operand : op->getOperands())
        requireFree(operand);
      for (Value result : op->getResults())
        set(result, unknown());
      return;
    }
    SmallVector<Shift> results = rule(op);
    for (auto [result, shift] : llvm::zip(op->getResults(), results))
      set(result, shift);
    if (!candidate.loop && op == candidate.value.getDefiningOp())
      set(candidate.value, perturbation(0, 1));
  }

  // One rule per op: how results depend on the perturbation given operands.
  SmallVector<Shift> rule(Operation *op) {
    SmallVector<Shift> none(op->getNumResults(), Shift::of(Dependence::Free));
    auto operand = [&](unsigned i) { return get(op->getOperand(i)); };
    auto all = [&](Shift s) { return SmallVector<Shift>(op->getNumResults(), s); };
    if (isa<arith::ConstantOp>(op))
      return {ofConstant(op->getResult(0))};
    bool anyTagged = llvm::any_of(op->getOperands(), [&](Value v) { return !get(v).isFree(); });
    // Exact zeros and infinities matter to the arithmetic that carries them
    // (exp(-inf - m) = 0 annihilates a rescaled carried value); elsewhere a
    // value free of the perturbation gives results free of it.
    bool exactConstants = llvm::any_of(op->getOperands(), [&](Value v) {
      Dependence kind = get(v).kind;
      return kind == Dependence::Zero || kind == Dependence::Infinite;
    });
    bool keepsConstants =
        isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp, tt::PreciseDivFOp,
            arith::NegFOp, arith::SelectOp, math::ExpOp, math::Exp2Op, math::LogOp,
            math::Log2Op, arith::ExtFOp, arith::TruncFOp, tt::FpToFpOp, tt::BroadcastOp,
            tt::SplatOp, tt::ExpandDimsOp, tt::TransOp>(op);
    if (!anyTagged && !(exactConstants && keepsConstants) &&
        !(isa<tt::ReduceOp>(op) && capturesTagged(op)))
      return none;
    if (isa<arith::AddFOp>(op))
      return {addLike(operand(0), operand(1), 1.0)};
    if (isa<arith::SubFOp>(op))
      return {addLike(operand(0), operand(1), -1.0)};
    if (isa<arith::MulFOp>(op)) {
      if (operand(0).kind == Dependence::Shifted)
        return {multiplyLike(operand(0), operand(1), op->getOperand(1), false)};
      return {multiplyLike(operand(1), operand(0), op->getOperand(0), false)};
    }
    if (isa<arith::DivFOp, tt::PreciseDivFOp>(op))
      return {multiplyLike(operand(0), operand(1), op->getOperand(1), true)};
    if (isa<arith::NegFOp>(op)) {
      Shift s = operand(0);
      if (s.kind == Dependence::Infinite)
        return {Shift::infinity(!s.negative)};
      return {s.kind == Dependence::Shifted ? tagged(s.kind, -s.prev, -s.cur, s.axes) : s};
    }
    if (isExtremumOp(op))
      return {extremum(operand(0), operand(1))};
    if (isa<arith::CmpFOp>(op))
      return {compare(operand(0), operand(1))};
    if (isa<arith::SelectOp>(op)) {
      if (!operand(0).isFree())
        return all(unknown());
      return {join(operand(1), operand(2))};
    }
    if (isa<math::ExpOp, math::Exp2Op>(op)) {
      Shift s = operand(0);
      if (s.kind == Dependence::Infinite)
        return {s.negative ? Shift::of(Dependence::Zero) : s};
      if (s.isFree())
        return {Shift::of(Dependence::Free)};
      if (s.kind != Dependence::Shifted)
        return all(unknown());
      double base = isa<math::Exp2Op>(op) ? std::log(2.0) : 1.0;
      return {tagged(Dependence::Scaled, s.prev * base, s.cur * base, s.axes)};
    }
    if (isa<math::LogOp, math::Log2Op>(op)) {
      Shift s = operand(0);
      if (s.kind == Dependence::Zero)
        return {Shift::infinity(true)};
      if (s.isFree())
        return {Shift::of(Dependence::Free)};
      if (s.kind != Dependence::Scaled)
        return all(unknown());
      double base = isa<math::Log2Op>(op) ? 1.0 / std::log(2.0) : 1.0;
      return {tagged(Dependence::Shifted, s.prev * base, s.cur * base, s.axes)};
    }
    // Shape and precision changes move the perturbation with the elements.
    if (isa<arith::ExtFOp, arith::TruncFOp, tt::FpToFpOp, tt::BroadcastOp, tt::SplatOp>(op))
      return {operand(0)};
    if (auto expand = dyn_cast<tt::ExpandDimsOp>(op)) {
      Shift s = operand(0);
      for (int &a : s.axes)
        if (a >= static_cast<int>(expand.getAxis()))
          ++a;
      return {s};
    }
    if (auto trans = dyn_cast<tt::TransOp>(op)) {
      Shift s = operand(0);
      ArrayRef<int32_t> order = trans.getOrder();
      for (int &a : s.axes)
        if (a >= 0)
          a = static_cast<int>(llvm::find(order, a) - order.begin());
      return {s};
    }
    if (isa<tt::ReshapeOp>(op)) {
      Shift s = operand(0);
      bool uniform = llvm::all_of(s.axes, [](int a) { return a < 0; });
      return {uniform ? s : unknown()};
    }
    if (auto reduce = dyn_cast<tt::ReduceOp>(op)) {
      Operation *combiner = combinerOp(reduce);
      if (!combiner)
        return all(unknown());
      return {reduceAlong(operand(0), reduce.getAxis(), isa<arith::AddFOp>(combiner))};
    }
    if (auto dot = dyn_cast<tt::DotOp>(op))
      return {ruleForDot(dot)};
    return all(unknown());
  }

  // a @ b + c: a perturbation of a's rows or of b's columns (constant along
  // the contraction) scales the product.
  Shift ruleForDot(tt::DotOp dot) {
    Shift a = get(dot.getA()), b = get(dot.getB()), c = get(dot.getC());
    if (cast<RankedTensorType>(dot.getType()).getRank() != 2)
      return a.isFree() && b.isFree() && c.isFree() ? Shift::of(Dependence::Free) : unknown();
    Shift product = unknown();
    if (a.kind == Dependence::Zero || b.kind == Dependence::Zero)
      product = Shift::of(Dependence::Zero);
    else if (a.isFree() && b.isFree())
      product = Shift::of(Dependence::Free);
    else if (a.kind == Dependence::Scaled && b.kind == Dependence::Free &&
             !llvm::is_contained(a.axes, 1))
      product = a;
    else if (b.kind == Dependence::Scaled && a.kind == Dependence::Free &&
             !llvm::is_contained(b.axes, 0))
      product = b;
    return addLike(product, c, 1.0);
  }

  void visitIf(scf::IfOp branch) {
    requireFree(branch.getCondition());
    visitBlock(*branch.thenBlock());
    if (branch.elseBlock())
      visitBlock(*branch.elseBlock());
    for (auto [i, result] : llvm::enumerate(branch.getResults())) {
      Shift merged = get(branch.thenYield().getOperand(i));
      if (branch.elseBlock())
        merged = join(merged, get(branch.elseYield().getOperand(i)));
      set(result, merged);
    }
  }

  // The index of a carried value of `loop` that continues the candidate: it
  // starts from the candidate's latest value (a previous loop's result) and is
  // updated by max/min with its previous value (flash attention's two loops,
  // off-diagonal then diagonal blocks, threading m, l and acc through).
  std::optional<unsigned> continuationIndex(scf::ForOp loop, ArrayRef<Shift> entry) {
    if (!candidate.loop || loop->getBlock() != candidate.loop->getBlock())
      return std::nullopt;
    Operation *terminator = loop.getBody()->getTerminator();
    for (auto [j, arg] : llvm::enumerate(loop.getRegionIterArgs())) {
      const Shift &start = entry[j];
      Operation *def = terminator->getOperand(j).getDefiningOp();
      if (start.kind == Dependence::Shifted && std::abs(start.prev) < 1e-12 &&
          std::abs(start.cur - 1) < 1e-12 && start.axes == identityAxes(arg.getType()) &&
          isExtremumOp(def) && def->getBlock() == loop.getBody() &&
          llvm::is_contained(def->getOperands(), arg))
        return j;
    }
    return std::nullopt;
  }

  // Tags in terms of the perturbation after the previous instance, seen from
  // inside a loop: that instance is the loop's `prev` in its first iteration.
  static Shift curToPrev(const Shift &shift) {
    if (!shift.isTagged())
      return shift;
    if (std::abs(shift.prev) > 1e-12)
      return unknown();
    return tagged(shift.kind, shift.cur, 0, shift.axes);
  }

  // Runs `loop`'s body once with the carried values tagged `carried`; the
  // carried candidate's update (`update`, if any) is the new perturbation.
  void visitBody(scf::ForOp loop, ArrayRef<Shift> carried, Operation *update) {
    set(loop.getInductionVar(), Shift::of(Dependence::Free));
    for (auto [arg, shift] : llvm::zip(loop.getRegionIterArgs(), carried))
      set(arg, shift);
    for (Operation &op : loop.getBody()->without_terminator()) {
      if (leaks)
        return;
      visit(&op);
      if (&op == update)
        set(op.getResult(0), perturbation(0, 1));
    }
  }

  // Carried values: a fixpoint over the back edge. In a loop that carries the
  // candidate (or continues it), the perturbation of the value an iteration
  // computes is the next iteration's `prev`.
  void visitFor(scf::ForOp loop) {
    for (Value bound : {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()})
      requireFree(bound);
    unsigned n = loop.getNumRegionIterArgs();
    SmallVector<Shift> entry;
    for (Value init : loop.getInitArgs())
      entry.push_back(get(init));
    std::optional<unsigned> index;
    if (candidate.loop && loop == candidate.loop)
      index = candidate.carried;
    bool continuation = false;
    if (!index && (index = continuationIndex(loop, entry))) {
      continuation = true;
      continuations.push_back({loop.getBody()->getTerminator()->getOperand(*index), loop,
                               *index});
    }
    bool carriesCandidate = index.has_value();
    bool enclosesCandidate =
        !carriesCandidate && loop->isProperAncestor(candidate.value.getDefiningOp());
    Operation *terminator = loop.getBody()->getTerminator();
    Operation *update =
        carriesCandidate ? terminator->getOperand(*index).getDefiningOp() : nullptr;
    SmallVector<Shift> carried(entry);
    if (continuation)
      for (Shift &shift : carried)
        shift = curToPrev(shift);
    SmallVector<Shift> yielded(n);
    // Starting from max = -inf (or min = +inf), the first iteration rescales
    // the other carried values by exp(-inf) = 0: whatever they start from
    // (flash attention's l = 1) is gone after it. Run it apart, exactly.
    bool peeled = carriesCandidate && entry[*index].kind == Dependence::Infinite;
    if (peeled) {
      visitBody(loop, entry, update);
      if (leaks)
        return;
      for (unsigned j = 0; j < n; ++j)
        carried[j] = curToPrev(get(terminator->getOperand(j)));
    }
    if (carriesCandidate)
      carried[*index] = perturbation(1, 0);
    for (int round = 0; round < 6 && !leaks; ++round) {
      visitBody(loop, carried, update);
      if (leaks)
        return;
      bool changed = false;
      for (unsigned j = 0; j < n; ++j) {
        yielded[j] = get(terminator->getOperand(j));
        if (carriesCandidate && j == *index)
          continue;
        Shift next = yielded[j];
        if (carriesCandidate)
          next = curToPrev(next); // the next iteration starts from this one's value
        else if (enclosesCandidate && !next.isFree())
          next = unknown(); // each iteration perturbs a different candidate value
        next = join(carried[j], next);
        if (round == 5 && !(next == carried[j]))
          next = unknown();
        changed |= !(next == carried[j]);
        carried[j] = next;
      }
      if (!changed)
        break;
    }
    for (unsigned j = 0; j < n; ++j) {
      Shift result = carried[j];
      // After the loop `cur` is the latest instance of the candidate: this
      // loop's last, or (no iteration) the one its carried values started
      // from. A first loop that runs no iteration has none to perturb.
      if (carriesCandidate)
        result = j == *index ? perturbation(0, 1)
                 : peeled    ? yielded[j]
                             : join(entry[j], yielded[j]);
      set(loop.getResult(j), result);
    }
  }

public:
  /// Loops found continuing the candidate, in program order.
  SmallVector<Stabilizer> continuations;

private:
  const DenseSet<Value> &held;
  Stabilizer candidate;
  DenseMap<Value, Shift> tags;
  bool leaks = false;
};

SmallVector<Stabilizer> candidatesOf(Operation *function) {
  SmallVector<Stabilizer> candidates;
  function->walk([&](Operation *op) {
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      Operation *terminator = loop.getBody()->getTerminator();
      for (auto [j, arg] : llvm::enumerate(loop.getRegionIterArgs())) {
        Value next = terminator->getOperand(j);
        Operation *def = next.getDefiningOp();
        // The max taken with its previous value, or with another running value of
        // the loop (FlashAttention-2's max with the running logsumexp).
        auto isCarried = [&](Value operand) {
          return llvm::is_contained(loop.getRegionIterArgs(), operand);
        };
        if (isa<FloatType>(getElementTypeOrSelf(arg.getType())) && isExtremumOp(def) &&
            def->getBlock() == loop.getBody() && llvm::any_of(def->getOperands(), isCarried))
          candidates.push_back({next, loop, static_cast<unsigned>(j)});
      }
    }
    if (auto reduce = dyn_cast<tt::ReduceOp>(op))
      if (isExtremumOp(combinerOp(reduce)) &&
          isa<FloatType>(getElementTypeOrSelf(reduce->getResult(0).getType())))
        candidates.push_back({reduce->getResult(0), nullptr, 0});
  });
  return candidates;
}

} // namespace

std::optional<double> floatConstant(Value value) {
  Attribute attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  if (auto splat = dyn_cast<SplatElementsAttr>(attr))
    attr = splat.getSplatValue<Attribute>();
  if (auto scalar = dyn_cast<FloatAttr>(attr))
    return scalar.getValueAsDouble();
  return std::nullopt;
}

SmallVector<const Stabilizer *> Stabilizers::carriedBy(Operation *loop) const {
  SmallVector<const Stabilizer *> carried;
  for (const Stabilizer &s : found)
    if (s.loop && static_cast<Operation *>(s.loop) == loop)
      carried.push_back(&s);
  return carried;
}

std::vector<ScheduleEntry> Stabilizers::describe() const {
  std::vector<ScheduleEntry> entries;
  for (const Stabilizer &s : found) {
    ScheduleEntry entry;
    entry.kind = ScheduleEntry::Kind::Stabilizer;
    entry.strategy = Strategy::Stabilizer;
    bool isMin = isa<arith::MinNumFOp, arith::MinimumFOp>(s.value.getDefiningOp());
    entry.subject = isMin ? "min" : "max";
    // The user's line, not the line of tl.max inside triton.language.
    Location loc = s.value.getLoc();
    loc->walk([&](Location inner) {
      if (auto call = dyn_cast<CallSiteLoc>(inner)) {
        loc = call.getCaller();
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    llvm::raw_string_ostream where(entry.location);
    if (auto file = loc->findInstanceOf<FileLineColLoc>())
      where << file.getFilename().getValue() << ":" << file.getLine() << ":" << file.getColumn();
    else
      loc.print(where);
    entry.how = std::string(s.loop ? "a loop's running " : "a ") + entry.subject +
                " that only stabilizes exponentials carries no gradient (the results do not "
                "change with its value; shift invariance checked on the IR)";
    entries.push_back(std::move(entry));
  }
  return entries;
}

// Whether `value` is computed from constants only (tl.zeros(...) + 1.0): no
// argument, no memory, no program id.
static bool isConstantExpression(Value value) {
  SmallVector<Value> worklist{value};
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    if (!seen.insert(current).second)
      continue;
    Operation *def = current.getDefiningOp();
    if (!def || def->getNumRegions() != 0 || !isMemoryEffectFree(def) ||
        isa<tt::GetProgramIdOp, tt::GetNumProgramsOp>(def))
      return false;
    llvm::append_range(worklist, def->getOperands());
  }
  return true;
}

// The loops of a family are reversed together, each with the family's final
// value: none may fall back to another strategy (their adjoints would be of
// other values). Refused here what would make one fall back: a store in a
// body, and a first loop from max = -inf whose other carried floats start
// from anything but constants (the first iteration's rescaling by 0, which the
// final value turns into 1, would pass their gradient on; pointers and
// integers, such as a pointer advanced per iteration, carry none).
static bool reversibleAsFamily(ArrayRef<Stabilizer> family) {
  for (Stabilizer member : family) {
    bool writes = false;
    member.loop.getBody()->walk([&](Operation *op) { writes |= writesMemory(op); });
    if (writes)
      return false;
  }
  Stabilizer root = family.front();
  scf::ForOp first = root.loop;
  std::optional<double> start = floatConstant(first.getInitArgs()[root.carried]);
  if (start && std::isinf(*start))
    for (Value init : first.getInitArgs())
      if (isa<FloatType>(getElementTypeOrSelf(init.getType())) && !isConstantExpression(init))
        return false;
  return true;
}

Stabilizers findStabilizers(Operation *function) {
  Stabilizers result;
  SmallVector<Stabilizer> pending = candidatesOf(function);
  // One candidate at a time, the proven ones held: a stabilizer computed from
  // another (the max over a loop's per-lane running maxima) is found in a
  // later round.
  for (bool progress = true; progress && !pending.empty();) {
    progress = false;
    for (const Stabilizer &candidate : pending) {
      ShiftInterpreter interpreter(result.heldConstant, candidate);
      if (!interpreter.isInvariant(function))
        continue;
      // The loops continuing it hold the same family of values: each loop's
      // reverse uses the family's final value (the last loop's result).
      SmallVector<Stabilizer> family{candidate};
      family.append(interpreter.continuations.begin(), interpreter.continuations.end());
      if (family.size() > 1 && !reversibleAsFamily(family))
        continue;
      Stabilizer last = family.back();
      Value final = last.loop ? last.loop.getResult(last.carried) : last.value;
      DenseSet<Value> taken;
      for (Stabilizer member : family) {
        member.finalValue = final;
        member.familySize = family.size();
        result.found.push_back(member);
        taken.insert(member.value);
        result.heldConstant.insert(member.value);
        if (member.loop) {
          result.heldConstant.insert(member.loop.getRegionIterArgs()[member.carried]);
          result.heldConstant.insert(member.loop.getResult(member.carried));
        }
      }
      // (a continuation is no candidate of its own any more)
      llvm::erase_if(pending, [&](const Stabilizer &other) { return taken.contains(other.value); });
      progress = true;
      break;
    }
  }
  return result;
}

} // namespace tritonad
