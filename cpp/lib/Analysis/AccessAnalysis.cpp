// The access analysis: which programs, lanes and iterations touch which
// addresses. Its core is a sparse forward dataflow analysis in the style of
// Triton's AxisInfo: the lattice of an integer value is its affine form in
// the program ids, the lane indices and the loops' induction variables, with
// coefficients that are constants times uniform scalars, and each op has a
// visitor. Exclusivity, coverage and per-iteration disjointness are read from
// the solved lattices; the analysis writes no IR.
#include "tritonad/Analysis/AccessAnalysis.h"

#include "tritonad/Analysis/Dependence.h"
#include "tritonad/Analysis/MaskBounds.h"
#include "tritonad/Dialect/Triton/Dialect.h"

#include "mlir/Analysis/DataFlow/ConstantPropagationAnalysis.h"
#include "mlir/Analysis/DataFlow/DeadCodeAnalysis.h"
#include "mlir/Analysis/DataFlow/SparseAnalysis.h"
#include "mlir/Analysis/DataFlowFramework.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>
#include <set>
#include <tuple>

using namespace mlir;
using namespace mlir::dataflow;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

// constant * product(factors): a coefficient of an address term. Factors are
// primal scalars that are the same for every program and lane.
struct Coefficient {
  int64_t constant = 1;
  SmallVector<Value, 2> factors;
  bool isConstant() const { return factors.empty(); }
  bool operator==(const Coefficient &other) const {
    return constant == other.constant && factors == other.factors;
  }
};

// Variables an address depends on: the program id along axis k (0..2), or the
// lane index along tensor dim d (3 + d).
using Variable = int;
constexpr Variable kFirstLane = 3;
// Induction variables of scf.for loops: kFirstIv + 2 * (the loop's number in
// the function) for the variable itself, + 1 for its zero-based iteration
// number ((iv - lb) / step, as the pointer-induction rewrite computes it).
// Iterations of one program run in sequence, so they may revisit addresses;
// only programs must stay apart. Keys (scalars a re-parallelized
// accumulation's addresses take from its group) are -1 - k.
constexpr Variable kFirstIv = 1000;
// A program id's digits in a uniform divisor d (pid // d, pid % d: batch and
// head from one axis): kFirstProgramDigit + 6 * (d's number) + 2 * axis, + 1
// for the remainder. Like program ids, fixed within a program.
constexpr Variable kFirstProgramDigit = 1000000;

bool isLane(Variable var) { return var >= kFirstLane && var < kFirstIv; }
bool isProgramDigit(Variable var) { return var >= kFirstProgramDigit; }
bool isIv(Variable var) { return var >= kFirstIv && !isProgramDigit(var); }
int axisOfDigit(Variable var) { return (var - kFirstProgramDigit) % 6 / 2; }
bool isRemainderDigit(Variable var) { return (var - kFirstProgramDigit) % 2 == 1; }

// offset = sum(coefficient_v * v) + (uniform part, irrelevant to collisions
// within one access; between two accesses of one pointer, a constant part
// tells how far apart they are).
struct Affine {
  std::map<Variable, Coefficient> terms;
  bool hasUniform = false; // a non-zero uniform part exists
  // The uniform part where it is a known constant (0 without one), nullopt
  // where it involves anything else. (Not in ==: one access's collisions
  // do not depend on it.)
  std::optional<int64_t> constant = 0;
  void setUniformUnknown() {
    hasUniform = true;
    constant = std::nullopt;
  }
  bool operator==(const Affine &other) const {
    return hasUniform == other.hasUniform && terms == other.terms;
  }
};

std::optional<int64_t> constantInt(Value value) {
  APInt result;
  if (matchPattern(value, m_ConstantInt(&result)))
    return result.getSExtValue();
  // A widened constant (a block pointer's i32 offset as an i64 index) is one,
  // as is a splat of one (a pointer advanced by a constant, before cleanup).
  if (auto splat = value.getDefiningOp<tt::SplatOp>())
    return constantInt(splat.getSrc());
  if (auto widened = value.getDefiningOp<arith::ExtSIOp>())
    return constantInt(widened.getIn());
  if (auto widened = value.getDefiningOp<arith::ExtUIOp>())
    if (matchPattern(widened.getIn(), m_ConstantInt(&result)))
      return static_cast<int64_t>(result.getZExtValue());
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// The lattice
//===----------------------------------------------------------------------===//

struct AffineValue {
  enum class State { Uninitialized, Known, Unknown };
  State state = State::Uninitialized;
  Affine affine;
  // The value as a factor of a coefficient, when it is the same in every
  // program and lane (a kernel argument, a constant, integer arithmetic on
  // those; a splat stands for its scalar); null otherwise.
  Value uniform;

  static AffineValue unknown() {
    AffineValue value;
    value.state = State::Unknown;
    return value;
  }
  static AffineValue of(Affine affine, Value uniform = Value()) {
    AffineValue value;
    value.state = State::Known;
    value.affine = std::move(affine);
    value.uniform = uniform;
    return value;
  }
  static AffineValue join(const AffineValue &lhs, const AffineValue &rhs) {
    if (lhs.state == State::Uninitialized)
      return rhs;
    if (rhs.state == State::Uninitialized || lhs == rhs)
      return lhs;
    return unknown();
  }
  bool operator==(const AffineValue &other) const {
    return state == other.state && affine == other.affine &&
           affine.constant == other.affine.constant && uniform == other.uniform;
  }
  void print(raw_ostream &os) const {
    if (state != State::Known) {
      os << (state == State::Unknown ? "unknown" : "uninitialized");
      return;
    }
    for (auto &[var, coefficient] : affine.terms)
      os << coefficient.constant << (coefficient.isConstant() ? "" : "*s") << "*v" << var << " + ";
    os << (affine.hasUniform ? "u" : "0");
  }
};

class AffineLattice : public Lattice<AffineValue> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AffineLattice)
  using Lattice::Lattice;
};

// The loops of a function, numbered for their variables, and the keys of
// one question.
struct AccessVariables {
  SmallVector<scf::ForOp> loops;
  ArrayRef<Value> keys;
  // Remainders of tiles taken as their dividend (`(key + lanes) % M` where the
  // caller checks at launch that no lane reaches M: analyzeCoverage's wraps).
  ArrayRef<Operation *> transparent;

  Variable ivVariable(scf::ForOp loop, bool iterationNumber) const {
    auto it = llvm::find(loops, loop);
    assert(it != loops.end() && "a loop of the analyzed function");
    return kFirstIv + 2 * static_cast<Variable>(it - loops.begin()) + (iterationNumber ? 1 : 0);
  }
  scf::ForOp loopOf(Variable var) const { return loops[(var - kFirstIv) / 2]; }
  bool isIterationNumber(Variable var) const { return (var - kFirstIv) % 2 == 1; }

  // The divisors of integer divisions and remainders in the function (their
  // scalars, extensions stripped), numbered for the program-id digits.
  SmallVector<Value> divisors;
  std::optional<Variable> programDigit(int axis, Value divisor, bool remainder) const {
    auto it = llvm::find(divisors, divisor);
    if (it == divisors.end())
      return std::nullopt;
    return kFirstProgramDigit + 6 * static_cast<Variable>(it - divisors.begin()) + 2 * axis +
           (remainder ? 1 : 0);
  }
  std::optional<Variable> keyVariable(Value value) const {
    auto it = llvm::find(keys, value);
    if (it == keys.end())
      return std::nullopt;
    return -1 - static_cast<Variable>(it - keys.begin());
  }
};

Affine variableTerm(Variable var) {
  Affine affine;
  affine.terms[var] = Coefficient{};
  return affine;
}

std::optional<Affine> scale(const Affine &affine, Value factor) {
  Affine result = affine;
  std::optional<int64_t> constant = constantInt(factor);
  for (auto &[var, coefficient] : result.terms) {
    if (constant)
      coefficient.constant *= *constant;
    else
      coefficient.factors.push_back(factor);
  }
  if (constant && *constant == 0)
    result.terms.clear();
  if (result.constant)
    result.constant = constant ? std::optional<int64_t>(*result.constant * *constant)
                      : *result.constant == 0 ? std::optional<int64_t>(0)
                                              : std::nullopt;
  return result;
}

Value stripExtensions(Value value);

// Whether two coefficients have the same runtime factors (a scalar and its
// sign extension count as one: `row_start * stride` before a loop, and
// `(iv - row_start) * (i64)stride` inside it, as pointer induction writes it).
bool sameFactors(const Coefficient &lhs, const Coefficient &rhs) {
  auto stripped = [](const Coefficient &c) {
    SmallVector<void *> sorted;
    for (Value v : c.factors)
      sorted.push_back(stripExtensions(v).getAsOpaquePointer());
    llvm::sort(sorted);
    return sorted;
  };
  return stripped(lhs) == stripped(rhs);
}

std::optional<Affine> combine(const Affine &lhs, const Affine &rhs, int64_t sign) {
  Affine result = lhs;
  result.hasUniform |= rhs.hasUniform;
  result.constant = lhs.constant && rhs.constant
                        ? std::optional<int64_t>(*lhs.constant + sign * *rhs.constant)
                        : std::nullopt;
  for (const auto &[var, coefficient] : rhs.terms) {
    auto it = result.terms.find(var);
    if (it == result.terms.end()) {
      Coefficient c = coefficient;
      c.constant *= sign;
      result.terms[var] = c;
      continue;
    }
    // Two terms of one variable only combine when their runtime factors are
    // the same (plain constants, or one stride times constants).
    if (!sameFactors(it->second, coefficient))
      return std::nullopt;
    it->second.constant += sign * coefficient.constant;
    if (it->second.constant == 0)
      result.terms.erase(it);
  }
  return result;
}

// Lane variables of `affine` renumbered for tt.expand_dims at `axis`.
Affine expandLanes(const Affine &affine, unsigned axis) {
  Affine result;
  result.hasUniform = affine.hasUniform;
  result.constant = affine.constant;
  for (auto &[var, coefficient] : affine.terms)
    result.terms[isLane(var) && var - kFirstLane >= static_cast<int>(axis) ? var + 1 : var] =
        coefficient;
  return result;
}

Value stripExtensions(Value value) {
  while (auto ext = value.getDefiningOp<arith::ExtSIOp>())
    value = ext.getIn();
  return value;
}

//===----------------------------------------------------------------------===//
// The analysis: one visitor per op
//===----------------------------------------------------------------------===//

// Values whose lattice the analysis trusts: op results, the kernel's
// arguments and loops' induction variables. A value that flows in through
// control flow (a loop-carried value, a branch's or loop's result) is not:
// the affine form keeps only whether a uniform part exists, not its value,
// and that part may differ between iterations or between the programs that
// take either branch (addresses pid * B + 3 and pid * B + B + 3 collide).
bool isModelled(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    Operation *owner = arg.getOwner()->getParentOp();
    if (isa<tt::FuncOp>(owner))
      return true;
    auto loop = dyn_cast<scf::ForOp>(owner);
    return loop && arg == loop.getInductionVar();
  }
  return !isa<RegionBranchOpInterface>(value.getDefiningOp());
}

// What the analysis knows of `value` given its lattice: a key's variable (the
// one place keys are read: whatever the lattice of a key holds), the lattice
// of a modelled value, nothing otherwise.
std::optional<AffineValue> trustedValue(Value value, const AffineValue &lattice,
                                        const AccessVariables &variables) {
  if (std::optional<Variable> key = variables.keyVariable(value))
    return AffineValue::of(variableTerm(*key));
  if (lattice.state != AffineValue::State::Known || !isModelled(value))
    return std::nullopt;
  return lattice;
}

class AffineAccessAnalysis : public SparseForwardDataFlowAnalysis<AffineLattice> {
public:
  AffineAccessAnalysis(DataFlowSolver &solver, const AccessVariables &variables)
      : SparseForwardDataFlowAnalysis(solver), variables(variables) {}

  LogicalResult visitOperation(Operation *op, ArrayRef<const AffineLattice *> operands,
                               ArrayRef<AffineLattice *> results) override {
    for (AffineLattice *result : results)
      propagateIfChanged(result, result->join(visit(op, operands, result->getAnchor())));
    return success();
  }

  // The induction variable of an scf.for (the other arguments of a region are
  // joined from the values flowing in).
  void visitNonControlFlowArguments(Operation *op, const RegionSuccessor &successor,
                                    ArrayRef<AffineLattice *> argLattices,
                                    unsigned firstIndex) override {
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!loop || argLattices.empty() || argLattices[0]->getAnchor() != loop.getInductionVar())
      return SparseForwardDataFlowAnalysis::visitNonControlFlowArguments(op, successor,
                                                                         argLattices, firstIndex);
    AffineValue iv = AffineValue::unknown();
    std::optional<int64_t> step = constantInt(loop.getStep());
    if (isProgramLoop(loop))
      // A coarsened program's virtual program ids: distinct across all
      // iterations of all programs, like the program id they replace.
      iv = AffineValue::of(variableTerm(0));
    else if (!step || *step > 0)
      iv = AffineValue::of(variableTerm(variables.ivVariable(loop, false)));
    propagateIfChanged(argLattices[0], argLattices[0]->join(iv));
  }

  // Arguments of the kernel are uniform; anything else reaching an entry
  // state (a region the analysis does not model) is unknown.
  void setToEntryState(AffineLattice *lattice) override {
    auto arg = dyn_cast<BlockArgument>(lattice->getAnchor());
    AffineValue value = AffineValue::unknown();
    if (arg && isa<tt::FuncOp>(arg.getOwner()->getParentOp()) &&
        !isa<RankedTensorType>(arg.getType())) {
      Affine affine;
      affine.setUniformUnknown();
      value = AffineValue::of(affine, arg);
    }
    propagateIfChanged(lattice, lattice->join(value));
  }

private:
  std::optional<AffineValue> known(const AffineLattice *lattice) const {
    return trustedValue(lattice->getAnchor(), lattice->getValue(), variables);
  }

  // A uniform value's lattice: no variable, a uniform part unless it is 0.
  static AffineValue uniformValue(Value factor) {
    Affine affine;
    std::optional<int64_t> c = constantInt(factor);
    affine.hasUniform = !c || *c != 0;
    affine.constant = c;
    return AffineValue::of(affine, factor);
  }

  AffineValue visit(Operation *op, ArrayRef<const AffineLattice *> operands, Value result) {
    auto operand = [&](unsigned i) { return known(operands[i]); };
    // Integer arithmetic on uniform scalars is uniform.
    bool scalar = !isa<RankedTensorType>(result.getType());
    if (scalar && isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::ExtSIOp, arith::ExtUIOp,
                      arith::TruncIOp, arith::DivSIOp, arith::MaxSIOp, arith::MinSIOp>(op) &&
        llvm::all_of(llvm::seq<unsigned>(0, operands.size()), [&](unsigned i) {
          std::optional<AffineValue> value = operand(i);
          return value && value->uniform;
        }))
      return uniformValue(result);
    return llvm::TypeSwitch<Operation *, AffineValue>(op)
        .Case<arith::ConstantOp>([&](arith::ConstantOp constant) {
          if (scalar || isa<SplatElementsAttr>(constant.getValue()))
            return uniformValue(result);
          return AffineValue::unknown();
        })
        .Case<tt::GetProgramIdOp>([&](tt::GetProgramIdOp pid) {
          return AffineValue::of(variableTerm(static_cast<int>(pid.getAxis())));
        })
        .Case<tt::MakeRangeOp>([&](tt::MakeRangeOp range) {
          Affine affine = variableTerm(kFirstLane);
          affine.hasUniform = range.getStartAttr().getInt() != 0;
          affine.constant = range.getStartAttr().getInt();
          return AffineValue::of(affine);
        })
        .Case<tt::SplatOp>([&](tt::SplatOp) {
          std::optional<AffineValue> source = operand(0);
          if (!source)
            return AffineValue::unknown();
          // A splat of a uniform scalar stands for the scalar.
          return source->uniform ? uniformValue(source->uniform)
                                 : AffineValue::of(source->affine);
        })
        .Case<tt::BroadcastOp, arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp>([&](Operation *) {
          std::optional<AffineValue> source = operand(0);
          if (!source)
            return AffineValue::unknown();
          // (a widened splat constant stays one: pointer induction's i64 step)
          if (isa<arith::ExtSIOp, arith::ExtUIOp>(op) && source->uniform && constantInt(result))
            return uniformValue(result);
          return AffineValue::of(source->affine);
        })
        .Case<tt::ExpandDimsOp>([&](tt::ExpandDimsOp expand) {
          std::optional<AffineValue> source = operand(0);
          return source ? AffineValue::of(expandLanes(source->affine, expand.getAxis()))
                        : AffineValue::unknown();
        })
        .Case<arith::AddIOp, arith::SubIOp>([&](Operation *) {
          std::optional<AffineValue> lhs = operand(0), rhs = operand(1);
          std::optional<Affine> sum;
          if (lhs && rhs)
            sum = combine(lhs->affine, rhs->affine, isa<arith::AddIOp>(op) ? 1 : -1);
          return sum ? AffineValue::of(*sum) : AffineValue::unknown();
        })
        .Case<arith::MulIOp>([&](arith::MulIOp) { return visitMul(operands); })
        .Case<arith::DivSIOp>([&](arith::DivSIOp divide) {
          AffineValue iteration = iterationNumber(divide);
          return iteration.state == AffineValue::State::Known ? iteration
                                                               : programDigit(op, operands);
        })
        .Case<arith::RemSIOp>([&](Operation *) {
          if (llvm::is_contained(variables.transparent, op)) {
            std::optional<AffineValue> dividend = operand(0);
            return dividend ? AffineValue::of(dividend->affine) : AffineValue::unknown();
          }
          return programDigit(op, operands);
        })
        .Default([](Operation *) { return AffineValue::unknown(); });
  }

  // pid // d and pid % d (a scalar program id, d uniform): digits of the
  // program id, which they determine together.
  AffineValue programDigit(Operation *op, ArrayRef<const AffineLattice *> operands) {
    std::optional<AffineValue> dividend = known(operands[0]), divisor = known(operands[1]);
    if (isa<RankedTensorType>(op->getResultTypes()[0]) || !dividend || !divisor ||
        !divisor->uniform || dividend->affine.hasUniform || dividend->affine.terms.size() != 1)
      return AffineValue::unknown();
    auto [axis, coefficient] = *dividend->affine.terms.begin();
    if (axis < 0 || axis >= kFirstLane || !coefficient.isConstant() || coefficient.constant != 1)
      return AffineValue::unknown();
    std::optional<Variable> digit = variables.programDigit(
        axis, stripExtensions(op->getOperand(1)), isa<arith::RemSIOp>(op));
    return digit ? AffineValue::of(variableTerm(*digit)) : AffineValue::unknown();
  }

  // affine * uniform: the uniform operand's scalar becomes a factor of every
  // coefficient (a tensor factor must be a splat constant).
  AffineValue visitMul(ArrayRef<const AffineLattice *> operands) {
    for (int i = 0; i < 2; ++i) {
      std::optional<AffineValue> factor = known(operands[1 - i]);
      if (!factor || !factor->uniform)
        continue;
      std::optional<AffineValue> other = known(operands[i]);
      if (!other)
        return AffineValue::unknown();
      // (a tensor factor is a splat constant, which `scale` multiplies in)
      if (isa<RankedTensorType>(factor->uniform.getType()) && !constantInt(factor->uniform))
        return AffineValue::unknown();
      std::optional<Affine> scaled = scale(other->affine, factor->uniform);
      return scaled ? AffineValue::of(*scaled) : AffineValue::unknown();
    }
    return AffineValue::unknown();
  }

  // `(iv - lb) / step` (or `iv / step` from 0) of an scf.for: the iteration
  // number, exact because iv = lb + k * step.
  AffineValue iterationNumber(arith::DivSIOp divide) {
    Value numerator = stripExtensions(divide.getLhs());
    Value lowerBound;
    if (auto sub = numerator.getDefiningOp<arith::SubIOp>()) {
      lowerBound = stripExtensions(sub.getRhs());
      numerator = stripExtensions(sub.getLhs());
    }
    auto iv = dyn_cast<BlockArgument>(numerator);
    auto loop = iv ? dyn_cast<scf::ForOp>(iv.getOwner()->getParentOp()) : scf::ForOp();
    if (!loop || iv != loop.getInductionVar() || isProgramLoop(loop))
      return AffineValue::unknown();
    auto same = [](Value a, Value b) {
      std::optional<int64_t> ca = constantInt(a), cb = constantInt(b);
      return stripExtensions(a) == stripExtensions(b) || (ca && cb && *ca == *cb);
    };
    bool fromLowerBound = lowerBound ? same(lowerBound, loop.getLowerBound())
                                     : constantInt(loop.getLowerBound()) == 0;
    std::optional<int64_t> step = constantInt(loop.getStep());
    if (!fromLowerBound || !same(divide.getRhs(), loop.getStep()) || (step && *step <= 0))
      return AffineValue::unknown();
    return AffineValue::of(variableTerm(variables.ivVariable(loop, true)));
  }

  const AccessVariables &variables;
};

// The solved analysis of the function around `anchor`, for one set of keys.
class AffineAccess {
public:
  explicit AffineAccess(Operation *anchor, ArrayRef<Value> keys = {},
                        ArrayRef<Operation *> transparent = {})
      : solver(DataFlowConfig().setInterprocedural(false)) {
    Operation *function = anchor;
    if (!isa<tt::FuncOp>(function))
      function = anchor->getParentOfType<tt::FuncOp>();
    variables.keys = keys;
    variables.transparent = transparent;
    function->walk([&](scf::ForOp loop) { variables.loops.push_back(loop); });
    function->walk([&](Operation *op) {
      if (!isa<arith::DivSIOp, arith::RemSIOp>(op) || isa<RankedTensorType>(op->getResultTypes()[0]))
        return;
      Value divisor = stripExtensions(op->getOperand(1));
      if (!llvm::is_contained(variables.divisors, divisor))
        variables.divisors.push_back(divisor);
    });
    solver.load<DeadCodeAnalysis>();
    solver.load<SparseConstantPropagation>();
    solver.load<AffineAccessAnalysis>(variables);
    solved = succeeded(solver.initializeAndRun(function));
  }

  /// The affine form of an integer value; nullopt where it has none.
  std::optional<Affine> affine(Value value) const {
    std::optional<AffineValue> known = lookup(value);
    return known ? std::optional<Affine>(known->affine) : std::nullopt;
  }
  /// The scalar a uniform value stands for; nullopt where it is not uniform.
  std::optional<Value> uniform(Value value) const {
    std::optional<AffineValue> known = lookup(value);
    return known && known->uniform ? std::optional<Value>(known->uniform) : std::nullopt;
  }
  const AccessVariables &vars() const { return variables; }

  /// The lattice of `value`, printed with the variables' names.
  std::string describe(Value value) const {
    const AffineLattice *lattice = solved ? solver.lookupState<AffineLattice>(value) : nullptr;
    if (!lattice || lattice->getValue().state == AffineValue::State::Uninitialized)
      return "uninitialized";
    std::optional<AffineValue> known = lookup(value);
    if (!known)
      return "unknown";
    if (known->uniform)
      return "uniform";
    std::string text;
    for (auto &[var, coefficient] : known->affine.terms) {
      text += std::to_string(coefficient.constant);
      for (size_t k = 0; k < coefficient.factors.size(); ++k)
        text += "*s";
      text += "*" + variableName(var) + " + ";
    }
    return text + (known->affine.hasUniform ? "u" : "0");
  }

  // Strips a pointer chain down to its offsets: base + sum(offsets).
  std::optional<Affine> pointerOffsets(Value ptr) const {
    std::optional<Affine> offsets = Affine{};
    Value cursor = ptr;
    while (offsets) {
      Operation *def = cursor.getDefiningOp();
      if (!def)
        break; // the base pointer argument
      if (auto addptr = dyn_cast<tt::AddPtrOp>(def)) {
        std::optional<Affine> term = affine(addptr.getOffset());
        offsets = term ? combine(*offsets, *term, 1) : std::nullopt;
        cursor = addptr.getPtr();
      } else if (isa<tt::SplatOp, tt::BroadcastOp>(def)) {
        // Neither renumbers dims (broadcast keeps them; splat comes from a scalar).
        cursor = def->getOperand(0);
      } else {
        offsets = std::nullopt;
      }
    }
    return offsets;
  }

private:
  std::string variableName(Variable var) const {
    if (var < 0)
      return "key" + std::to_string(-1 - var);
    if (var < kFirstLane)
      return "pid" + std::to_string(var);
    if (isLane(var))
      return "lane" + std::to_string(var - kFirstLane);
    if (isProgramDigit(var))
      return "pid" + std::to_string(axisOfDigit(var)) + (isRemainderDigit(var) ? "%" : "/") + "d" +
             std::to_string((var - kFirstProgramDigit) / 6);
    return (variables.isIterationNumber(var) ? "iteration" : "iv") +
           std::to_string((var - kFirstIv) / 2);
  }

  std::optional<AffineValue> lookup(Value value) const {
    const AffineLattice *lattice = solved ? solver.lookupState<AffineLattice>(value) : nullptr;
    return trustedValue(value, lattice ? lattice->getValue() : AffineValue(), variables);
  }

  AccessVariables variables;
  DataFlowSolver solver;
  bool solved = false;
};

//===----------------------------------------------------------------------===//
// Masks: one walk over the conjuncts
//===----------------------------------------------------------------------===//

// One conjunct of a mask: `lhs < bound` (lanes renumbered through
// expand_dims; `lhs < u - x` is read as `lhs + x < u`, a loop's tail mask), a
// key (i1) of a re-parallelized accumulation, `lhs >= 0` that holds where the
// keys in lhs are >= 0, or something else.
struct MaskConjunct {
  enum class Kind { Bound, ConditionKey, NonNegativeKeys, Other };
  Kind kind = Kind::Other;
  Affine lhs;
  Value bound; // uniform
  Variable key = 0;
};

// Whether every value of `affine` is >= 0: program ids, lanes and induction
// variables of loops starting at >= 0, with non-negative constant coefficients.
// With `keysNonNegative`, a re-parallelized accumulation's keys count as >= 0
// (what the launch checks of the keys the addresses use).
bool provablyNonNegative(const AccessVariables &vars, const Affine &affine,
                         bool keysNonNegative = false) {
  if (affine.hasUniform)
    return false;
  for (auto &[var, c] : affine.terms) {
    if ((var < 0 && !keysNonNegative) || isProgramDigit(var) || !c.isConstant() ||
        c.constant < 0)
      return false;
    if (isIv(var) && !vars.isIterationNumber(var)) {
      std::optional<int64_t> lower = constantInt(vars.loopOf(var).getLowerBound());
      if (!lower || *lower < 0)
        return false;
    }
  }
  return true;
}

// `x >= 0` (or `x > -1`, `0 <= x`) with x provably non-negative, the keys
// taken as >= 0: the lower bound of a block pointer's boundary check. The
// affine form of x, where the conjunct is one.
std::optional<Affine> nonNegativeBound(const AffineAccess &access, arith::CmpIOp cmp) {
  Value lhs = cmp.getLhs(), rhs = cmp.getRhs();
  int64_t below;
  switch (cmp.getPredicate()) {
  case arith::CmpIPredicate::sge: below = 0; break;
  case arith::CmpIPredicate::sgt: below = -1; break;
  case arith::CmpIPredicate::sle: std::swap(lhs, rhs); below = 0; break;
  case arith::CmpIPredicate::slt: std::swap(lhs, rhs); below = -1; break;
  default: return std::nullopt;
  }
  std::optional<int64_t> limit = constantInt(rhs);
  std::optional<Affine> affine = access.affine(lhs);
  if (!limit || *limit > below || !affine ||
      !provablyNonNegative(access.vars(), *affine, /*keysNonNegative=*/true))
    return std::nullopt;
  return affine;
}

void collectConjuncts(const AffineAccess &access, Value mask,
                      SmallVectorImpl<MaskConjunct> &conjuncts) {
  Operation *def = mask.getDefiningOp();
  if (auto splat = dyn_cast_or_null<tt::SplatOp>(def))
    if (std::optional<Variable> key = access.vars().keyVariable(splat.getSrc())) {
      MaskConjunct conjunct;
      conjunct.kind = MaskConjunct::Kind::ConditionKey;
      conjunct.key = *key;
      conjuncts.push_back(conjunct);
      return;
    }
  if (auto andOp = dyn_cast_or_null<arith::AndIOp>(def)) {
    collectConjuncts(access, andOp.getLhs(), conjuncts);
    collectConjuncts(access, andOp.getRhs(), conjuncts);
    return;
  }
  if (auto broadcast = dyn_cast_or_null<tt::BroadcastOp>(def))
    return collectConjuncts(access, broadcast.getSrc(), conjuncts);
  if (auto expand = dyn_cast_or_null<tt::ExpandDimsOp>(def)) {
    size_t first = conjuncts.size();
    collectConjuncts(access, expand.getSrc(), conjuncts);
    for (MaskConjunct &conjunct : llvm::drop_begin(conjuncts, first))
      conjunct.lhs = expandLanes(conjunct.lhs, expand.getAxis());
    return;
  }
  MaskConjunct conjunct;
  auto cmp = dyn_cast_or_null<arith::CmpIOp>(def);
  if (!cmp) {
    conjuncts.push_back(conjunct);
    return;
  }
  if (std::optional<Affine> nonNegative = nonNegativeBound(access, cmp)) {
    bool usesKeys = llvm::any_of(nonNegative->terms, [](auto &term) { return term.first < 0; });
    if (!usesKeys)
      return; // true for every lane: it restricts nothing
    conjunct.kind = MaskConjunct::Kind::NonNegativeKeys;
    conjunct.lhs = *nonNegative;
    conjuncts.push_back(conjunct);
    return;
  }
  Value lhs = cmp.getLhs(), rhs = cmp.getRhs();
  switch (cmp.getPredicate()) {
  case arith::CmpIPredicate::slt: break;
  case arith::CmpIPredicate::sgt: std::swap(lhs, rhs); break;
  default: conjuncts.push_back(conjunct); return;
  }
  std::optional<Affine> affine = access.affine(lhs);
  std::optional<Value> bound = access.uniform(rhs);
  if (affine && !bound) {
    // lhs < u - x, as a loop's tail mask `offs < K - k * BLOCK`: lhs + x < u.
    Value difference = rhs;
    while (isa_and_nonnull<tt::SplatOp, tt::BroadcastOp>(difference.getDefiningOp()))
      difference = difference.getDefiningOp()->getOperand(0);
    if (auto sub = difference.getDefiningOp<arith::SubIOp>()) {
      std::optional<Affine> moved = access.affine(sub.getRhs());
      bound = access.uniform(sub.getLhs());
      affine = moved && bound ? combine(*affine, *moved, 1) : std::nullopt;
    }
  }
  if (affine && bound) {
    conjunct.kind = MaskConjunct::Kind::Bound;
    conjunct.lhs = *affine;
    conjunct.bound = *bound;
  }
  conjuncts.push_back(conjunct);
}

SmallVector<MaskConjunct> maskConjuncts(const AffineAccess &access, Value mask) {
  SmallVector<MaskConjunct> conjuncts;
  if (mask)
    collectConjuncts(access, mask, conjuncts);
  return conjuncts;
}

// Masks `E < bound` where E is a sum of lanes and induction variables with
// non-negative constant coefficients and no other part (so E >= 0 when the
// loops start at >= 0): every accessed E lies in [0, bound).
bool isNonNegativeSum(const AccessVariables &vars, const Affine &affine) {
  if (affine.hasUniform || affine.terms.empty())
    return false;
  for (auto &[var, c] : affine.terms) {
    if (var < kFirstLane || isProgramDigit(var) || !c.isConstant() || c.constant < 0)
      return false;
    if (isIv(var)) {
      std::optional<int64_t> lower = constantInt(vars.loopOf(var).getLowerBound());
      if (!lower || *lower < 0)
        return false;
    }
  }
  return true;
}

// Upper bounds on lane indices implied by the mask: `lane_d < bound`.
std::map<int, Value> laneBounds(ArrayRef<MaskConjunct> conjuncts) {
  std::map<int, Value> bounds;
  for (const MaskConjunct &conjunct : conjuncts) {
    if (conjunct.kind != MaskConjunct::Kind::Bound || conjunct.lhs.hasUniform ||
        conjunct.lhs.terms.size() != 1)
      continue;
    auto [var, coefficient] = *conjunct.lhs.terms.begin();
    if (isLane(var) && coefficient.isConstant() && coefficient.constant == 1)
      bounds[var - kFirstLane] = conjunct.bound;
  }
  return bounds;
}

// i64 expressions of the condition, over the primal's uniform scalars.
UniformExpr constantExpr(int64_t v) {
  UniformExpr e;
  e.op = UniformExpr::Op::Constant;
  e.value = v;
  return e;
}
UniformExpr scalarExpr(Value primal) {
  if (auto splat = primal.getDefiningOp<tt::SplatOp>())
    primal = splat.getSrc();
  if (std::optional<int64_t> c = constantInt(primal))
    return constantExpr(*c);
  UniformExpr e;
  e.op = UniformExpr::Op::Scalar;
  e.scalar = primal;
  return e;
}
UniformExpr binaryExpr(UniformExpr::Op op, UniformExpr lhs, UniformExpr rhs) {
  UniformExpr e;
  e.op = op;
  e.operands = {std::move(lhs), std::move(rhs)};
  return e;
}
UniformExpr coefficientExpr(const Coefficient &c) {
  UniformExpr result = constantExpr(c.constant);
  for (Value factor : c.factors)
    result = binaryExpr(UniformExpr::Op::Mul, result, scalarExpr(factor));
  return result;
}

} // namespace

// The order in which the digits of an address are stacked: lanes and the
// iterations of the program's loops with constant strides first (ascending;
// iterations only widen the span), then runtime strides from the innermost
// dim outwards, then the program axes. A digit that merges a dim's lanes with
// a program axis (rows split over programs and lanes alike) holds programs
// apart: it comes after every iteration (a loop's reach along the columns
// must stay below the row stride, or a program's last row meets the next
// program's first). A mask `E < bound` clamps the span of the digits stacked
// so far where they are exactly E's terms (the columns a loop and its lanes
// reach, `k + cols < N`).
enum DigitOrder {
  kConstantStrides = 0,
  kRuntimeStrides = 1000, // minus the dim
  kGridStride = 1550, // a grid-stride loop's rows: its programs and iterations at once
  kPrograms = 2000, // plus the axis
};

// A grid-stride loop over program axis `axis`: `for r in range(c * pid, ub,
// c * tl.num_programs(axis))` with a launch-uniform `ub` (the tutorial's
// softmax, c = 1; Liger's BLOCK_ROW rows per iteration, c = BLOCK_ROW). Its
// iterations across all programs take the distinct values c * j, j < ub.
struct GridStride {
  int axis;
  int64_t perRow;
};
std::optional<GridStride> gridStrideOf(const AffineAccess &access, scf::ForOp loop) {
  std::optional<Affine> lower = access.affine(loop.getLowerBound());
  if (!lower || lower->hasUniform || lower->terms.size() != 1 || !symbolize(loop.getUpperBound()))
    return std::nullopt;
  auto [axis, perRow] = *lower->terms.begin();
  if (axis < 0 || axis > 2 || !perRow.isConstant() || perRow.constant < 1)
    return std::nullopt;
  std::optional<SymbolicInt> step = symbolize(loop.getStep());
  if (!step)
    return std::nullopt;
  auto isPrograms = [&](const SymbolicInt &e) {
    return e.op == SymbolicInt::Op::NumPrograms && e.value == axis;
  };
  auto isPerRow = [&](const SymbolicInt &e) {
    return e.op == SymbolicInt::Op::Constant && e.value == perRow.constant;
  };
  bool matches = perRow.constant == 1 && isPrograms(*step);
  if (step->op == SymbolicInt::Op::Mul) {
    const SymbolicInt &lhs = step->operands[0], &rhs = step->operands[1];
    matches |= (isPrograms(lhs) && isPerRow(rhs)) || (isPerRow(lhs) && isPrograms(rhs));
  }
  if (!matches)
    return std::nullopt;
  return GridStride{axis, perRow.constant};
}

namespace {

// Loads of one pointer at several places whose addresses differ by constants
// only (x[i] and x[i + 1]): their union is the lowest one's addresses
// shifted by 0..spread. Where each load's mask bounds its own shifted index
// (`i + c < n`, the same terms and bound for all), the union stays below
// `n - lowest` along those terms.
struct SiteShifts {
  int64_t spread = 0;
  int64_t lowest = 0;
  size_t lowestSite = 0; // (its index among the loads)
  SmallVector<std::pair<Value, int64_t>> sites; // (mask, its address's constant)
};

ExclusiveAccess analyzeAccess(Value ptr, Value mask, ArrayRef<bool> usedAxes,
                              const SiteShifts *shifts);

} // namespace

ExclusiveAccess analyzeExclusiveAccess(Value ptr, Value mask, ArrayRef<bool> usedAxes) {
  return analyzeAccess(ptr, mask, usedAxes, nullptr);
}

namespace {

ExclusiveAccess analyzeAccess(Value ptr, Value mask, ArrayRef<bool> usedAxes,
                              const SiteShifts *shifts) {
  ExclusiveAccess result;
  AffineAccess access(ptr.getParentRegion()->getParentOp());
  std::optional<Affine> offsets = access.pointerOffsets(ptr);
  if (!offsets) {
    result.known = false;
    result.explanation = "addresses not analyzable";
    return result;
  }

  auto type = dyn_cast<RankedTensorType>(ptr.getType());
  ArrayRef<int64_t> shape = type ? type.getShape() : ArrayRef<int64_t>{};
  SmallVector<MaskConjunct> conjuncts = maskConjuncts(access, mask);
  std::map<int, Value> bounds = laneBounds(conjuncts);

  using Op = UniformExpr::Op;
  // Digits of a mixed-radix number: (coefficient, extent). The address is
  // collision-free if, in order, each coefficient >= the span of the previous
  // digits: sum(coefficient_j * (extent_j - 1)) + 1.
  struct Digit {
    Coefficient coefficient;
    UniformExpr extent;
    std::optional<int64_t> constantExtent;
    int order; // see DigitOrder
    bool sequential = false;            // an induction variable: only widens the span
    Affine terms; // the offsets' terms it stands for (iterations as induction variables)
    // An iteration's move per step (coefficient times a constant step), where
    // it stacks above programs' rows and must clear them as a digit does.
    std::optional<int64_t> perStep;
  };
  SmallVector<Digit> digits;
  // An iteration number n of a loop with a constant step s, moving the
  // address by a multiple of s, as its induction variable: c * n is
  // (c / s) * (iv - lb), the same addresses up to a constant (so a pointer
  // advanced by BLOCK and a mask on `k + cols` name one variable).
  auto asInductionVariable = [&](Variable var, Coefficient coefficient) {
    if (isIv(var) && access.vars().isIterationNumber(var) && coefficient.isConstant()) {
      scf::ForOp loop = access.vars().loopOf(var);
      std::optional<int64_t> step = constantInt(loop.getStep());
      if (step && *step > 0 && coefficient.constant % *step == 0) {
        coefficient.constant /= *step;
        var = access.vars().ivVariable(loop, false);
      }
    }
    Affine term;
    term.terms[var] = coefficient;
    return term;
  };
  // A mask `P * pid_a + lane_d < bound`, P the tile's extent along dim d: the
  // programs' rows and the lanes' are one index below `bound`. Where the
  // address moves by c per lane along d and by P * c per program along a,
  // they are one digit, of coefficient c and extent min(programs_a * P,
  // bound): the rows of the last program's tile past the bound are masked
  // off and do not count against the next digit (a sequence's tail tile).
  std::map<int, UniformExpr> rowsOfDim; // dim d -> the merged digit's extent
  std::map<int, Affine> rowsTerms;      // dim d -> its lane's and program's terms
  bool mergedAxis[3] = {false, false, false};
  // (the same with a program id's remainder digit, `(pid % d) * P + lane`: the
  // rows of one head whose blocks a folded grid's programs split; its extent
  // min(d * P, bound))
  std::set<Variable> mergedRemainders;
  for (const MaskConjunct &range : conjuncts) {
    if (range.kind != MaskConjunct::Kind::Bound || range.lhs.hasUniform ||
        range.lhs.terms.size() != 2)
      continue;
    auto first = range.lhs.terms.begin(), second = std::next(first);
    if (isLane(first->first))
      std::swap(first, second);
    auto [axis, perProgram] = *first;
    auto [lane, perLane] = *second;
    bool remainder = isProgramDigit(axis) && isRemainderDigit(axis);
    if ((!remainder && (axis < 0 || axis > 2 || mergedAxis[axis])) ||
        (remainder && mergedRemainders.count(axis)) || !isLane(lane) ||
        !perProgram.isConstant() || !perLane.isConstant() || perLane.constant != 1)
      continue;
    int dim = lane - kFirstLane;
    if (dim >= static_cast<int>(shape.size()) || shape[dim] != perProgram.constant ||
        rowsOfDim.count(dim) || bounds.count(dim))
      continue;
    auto laneTerm = offsets->terms.find(lane), programTerm = offsets->terms.find(axis);
    if (laneTerm == offsets->terms.end() || programTerm == offsets->terms.end())
      continue;
    Coefficient tile = laneTerm->second;
    tile.constant *= perProgram.constant;
    if (!(programTerm->second == tile))
      continue;
    UniformExpr programs;
    programs.op = Op::NumPrograms;
    programs.value = axis;
    if (remainder) // (pid % d < d)
      programs = scalarExpr(access.vars().divisors[(axis - kFirstProgramDigit) / 6]);
    rowsOfDim[dim] =
        binaryExpr(Op::Min, binaryExpr(Op::Mul, programs, constantExpr(perProgram.constant)),
                   scalarExpr(range.bound));
    rowsTerms[dim].terms = {*laneTerm, *programTerm};
    if (remainder)
      mergedRemainders.insert(axis);
    else
      mergedAxis[axis] = true;
  }
  for (auto [dim, size] : llvm::enumerate(shape)) {
    auto it = offsets->terms.find(kFirstLane + dim);
    if (it == offsets->terms.end()) {
      if (size > 1) {
        result.known = false;
        result.explanation = "lanes along dim " + std::to_string(dim) + " share addresses";
        return result;
      }
      continue;
    }
    if (size == 1)
      continue;
    Digit digit{it->second, constantExpr(size), size, 0};
    digit.terms.terms = {*it};
    if (auto rows = rowsOfDim.find(dim); rows != rowsOfDim.end()) {
      digit.extent = rows->second;
      digit.constantExtent = std::nullopt;
      digit.terms = rowsTerms[dim];
    } else if (auto bound = bounds.find(dim); bound != bounds.end()) {
      digit.extent = binaryExpr(Op::Min, digit.extent, scalarExpr(bound->second));
      digit.constantExtent = std::nullopt;
    }
    // Constant coefficients first (ascending), then runtime strides from the
    // innermost dim outwards.
    digit.order = it->second.isConstant() ? kConstantStrides
                                          : kRuntimeStrides - static_cast<int>(dim);
    digits.push_back(digit);
  }
  // Induction variables: iterations of a program run in sequence, so they may
  // revisit addresses; they widen what the program touches by
  // coefficient * (the induction variable's reach, ub - 1 - lb).
  for (auto &[var, coefficient] : offsets->terms) {
    if (!isIv(var))
      continue;
    scf::ForOp loop = access.vars().loopOf(var);
    // A grid-stride loop's rows are distinct over its programs and iterations
    // alike: one digit for both, where the address reads its program id
    // through the loop only.
    std::optional<GridStride> rows =
        access.vars().isIterationNumber(var) ? std::nullopt : gridStrideOf(access, loop);
    if (rows && !mergedAxis[rows->axis] && !offsets->terms.count(rows->axis) &&
        llvm::none_of(offsets->terms, [](auto &term) { return isProgramDigit(term.first); })) {
      Coefficient perRow = coefficient;
      perRow.constant *= rows->perRow;
      Digit digit{perRow, scalarExpr(loop.getUpperBound()), std::nullopt, kGridStride};
      digit.terms.terms = {{var, coefficient}};
      digits.push_back(digit);
      mergedAxis[rows->axis] = true;
      continue;
    }
    if (!coefficient.isConstant() || coefficient.constant < 0) {
      result.known = false;
      result.explanation = "a loop moves the addresses by a runtime or negative stride";
      return result;
    }
    Affine term = asInductionVariable(var, coefficient);
    UniformExpr reach = binaryExpr(
        Op::Max,
        binaryExpr(Op::Sub, scalarExpr(loop.getUpperBound()), scalarExpr(loop.getLowerBound())),
        constantExpr(1)); // (the extent: reach + 1)
    Digit digit{term.terms.begin()->second, reach, std::nullopt, kConstantStrides};
    digit.sequential = true;
    digit.terms = term;
    std::optional<int64_t> step = constantInt(loop.getStep());
    if (access.vars().isIterationNumber(var))
      digit.perStep = coefficient.constant;
    else if (step && *step > 0)
      digit.perStep = coefficient.constant * *step;
    digits.push_back(digit);
  }
  // Masks `E < bound` with E >= 0 a sum of lanes and iterations: where the
  // digits stacked so far are exactly E's terms, their span is at most bound.
  // (a bound's terms as the digits' are: iteration numbers as induction variables)
  auto digitTerms = [&](const Affine &lhs) {
    std::optional<Affine> normalized = Affine{};
    for (auto &[var, c] : lhs.terms)
      if (normalized)
        normalized = combine(*normalized, asInductionVariable(var, c), 1);
    return normalized;
  };
  SmallVector<std::pair<Affine, UniformExpr>> clamps;
  for (const MaskConjunct &range : conjuncts) {
    if (range.kind != MaskConjunct::Kind::Bound || !isNonNegativeSum(access.vars(), range.lhs))
      continue;
    if (std::optional<Affine> normalized = digitTerms(range.lhs))
      clamps.push_back({*normalized, scalarExpr(range.bound)});
  }
  // The bound every shifted load's mask puts on its own shifted index: its
  // terms (as `clamps` has them) and bound, where all masks have one.
  std::optional<std::pair<Affine, Value>> shiftClamp;
  if (shifts) {
    SmallVector<std::pair<Affine, Value>> common;
    for (auto [index, site] : llvm::enumerate(shifts->sites)) {
      SmallVector<std::pair<Affine, Value>> here;
      for (const MaskConjunct &range : maskConjuncts(access, site.first)) {
        if (range.kind != MaskConjunct::Kind::Bound || range.lhs.constant != site.second)
          continue;
        Affine lanes = range.lhs;
        lanes.hasUniform = false;
        lanes.constant = 0;
        if (!isNonNegativeSum(access.vars(), lanes))
          continue;
        if (std::optional<Affine> normalized = digitTerms(lanes))
          here.push_back({*normalized, stripExtensions(range.bound)});
      }
      if (index == 0) {
        common = std::move(here);
        continue;
      }
      llvm::erase_if(common, [&](const std::pair<Affine, Value> &clamp) {
        return llvm::none_of(here, [&](const std::pair<Affine, Value> &other) {
          return other.first == clamp.first && other.second == clamp.second;
        });
      });
    }
    if (!common.empty())
      shiftClamp = common.front();
  }
  // (ties: lanes, then iterations, then a merged digit)
  auto isMerged = [](const Digit &digit) {
    return digit.terms.terms.size() > 1 && !digit.sequential;
  };
  auto sortKey = [&](const Digit &digit) {
    return std::make_tuple(digit.order, digit.coefficient.constant,
                           isMerged(digit) ? 2 : digit.sequential ? 1 : 0);
  };
  std::stable_sort(digits.begin(), digits.end(), [&](const Digit &a, const Digit &b) {
    return sortKey(a) < sortKey(b);
  });
  SmallVector<UniformExpr> positiveDivisors;
  // (a program id or one of its digits: its term where the address uses it)
  auto programDigit = [&](auto term, UniformExpr extent, int axis) {
    Digit digit{Coefficient{0, {}}, std::move(extent), std::nullopt, kPrograms + axis};
    if (term != offsets->terms.end()) {
      digit.coefficient = term->second;
      digit.terms.terms = {*term};
    }
    return digit;
  };
  for (int axis = 0; axis < 3; ++axis) {
    UniformExpr programs;
    programs.op = Op::NumPrograms;
    programs.value = axis;
    // The program id's digits pid % d and pid // d (in that order: the
    // remainder is the inner one, a head within its batch) stand for it where
    // the address uses them: distinct programs differ in pid or in both digits
    // of one divisor. A digit the address ignores beside its sibling needs a
    // single value, as an ignored axis does. pid // d < programs (d >= 1).
    // Every digit the address uses counts, whatever else holds of the axis.
    bool digitsUsed = false;
    for (Value divisor : access.vars().divisors) {
      Variable quotient = *access.vars().programDigit(axis, divisor, false);
      auto q = offsets->terms.find(quotient), r = offsets->terms.find(quotient + 1);
      if (q == offsets->terms.end() && r == offsets->terms.end())
        continue;
      digitsUsed = true;
      UniformExpr divisorExpr = scalarExpr(divisor);
      positiveDivisors.push_back(binaryExpr(Op::GreaterEqual, divisorExpr, constantExpr(1)));
      if (!mergedRemainders.count(quotient + 1)) // (else in its rows' digit)
        digits.push_back(programDigit(r, binaryExpr(Op::Min, divisorExpr, programs), axis));
      digits.push_back(programDigit(q, programs, axis));
    }
    if (!usedAxes[axis] || mergedAxis[axis])
      continue;
    auto it = offsets->terms.find(axis);
    if (it == offsets->terms.end()) {
      // Programs along an axis the address ignores all touch the same memory
      // unless there is only one of them.
      if (!digitsUsed)
        digits.push_back(programDigit(it, programs, axis));
      continue;
    }
    digits.push_back(programDigit(it, programs, axis));
  }

  // Stacks `ordered` as a mixed-radix number: the condition that each digit's
  // coefficient covers the span of those before it, or the digit whose
  // constant stride is statically below that span.
  struct Stacked {
    UniformExpr ok;
    bool allStatic;
    std::string overlap; // non-empty: lanes or programs statically overlap
  };
  auto stack = [&](ArrayRef<Digit> ordered) -> Stacked {
    Stacked stacked{UniformExpr{}, positiveDivisors.empty(), ""};
    UniformExpr &ok = stacked.ok;
    ok.op = Op::True;
    for (const UniformExpr &positive : positiveDivisors)
      ok = binaryExpr(Op::And, ok, positive);
    UniformExpr span = constantExpr(1);
    std::optional<int64_t> constantSpan = 1; // span of the digits so far, if static
    Affine stackedTerms;
    bool programsBelow = false; // a merged digit (programs' rows) is stacked
    // Shifted loads: their spread joins the span below every program digit,
    // at the digits their masks bound (then no further than that bound).
    bool shifted = shifts == nullptr;
    auto shift = [&](bool clamped) {
      shifted = true;
      span = binaryExpr(Op::Add, span, constantExpr(shifts->spread));
      std::optional<int64_t> bound =
          clamped ? constantInt(shiftClamp->second) : std::optional<int64_t>();
      if (constantSpan && (!clamped || bound))
        constantSpan = std::min(*constantSpan + shifts->spread,
                                clamped ? *bound - shifts->lowest : INT64_MAX);
      else
        constantSpan = std::nullopt;
      if (clamped)
        span = binaryExpr(Op::Min, span,
                          binaryExpr(Op::Sub, scalarExpr(shiftClamp->second),
                                     constantExpr(shifts->lowest)));
    };
    auto clamp = [&](const Digit &digit) {
      std::optional<Affine> sum = combine(stackedTerms, digit.terms, 1);
      if (!sum) { // (never a clamp's terms again)
        stackedTerms.setUniformUnknown();
        return;
      }
      stackedTerms = *sum;
      for (auto &[terms, bound] : clamps) {
        if (!(terms == stackedTerms))
          continue;
        span = binaryExpr(Op::Min, span, bound);
        constantSpan = std::nullopt;
      }
      if (!shifted && shiftClamp && !programsBelow && shiftClamp->first == stackedTerms)
        shift(true);
    };
    for (const Digit &digit : ordered) {
      if (!shifted && (isMerged(digit) || digit.order >= kGridStride))
        shift(false);
      auto clampAfter = llvm::make_scope_exit([&] { clamp(digit); });
      UniformExpr extentMinusOne = binaryExpr(Op::Sub, digit.extent, constantExpr(1));
      programsBelow |= isMerged(digit);
      if (digit.sequential && programsBelow) {
        // Above programs' rows (a loop down the rows of a tile whose columns
        // programs split): each step must clear what lies below, or an
        // iteration reaches another program's addresses.
        if (!digit.perStep) {
          stacked.overlap = "a loop moves the addresses by a runtime step within programs' rows";
          return stacked;
        }
        if (constantSpan) {
          if (*digit.perStep < *constantSpan) {
            stacked.overlap = "a loop's step " + std::to_string(*digit.perStep) +
                              " reaches other programs' addresses (span " +
                              std::to_string(*constantSpan) + ")";
            return stacked;
          }
        } else {
          ok = binaryExpr(Op::And, ok,
                          binaryExpr(Op::GreaterEqual, constantExpr(*digit.perStep), span));
        }
      }
      if (digit.sequential) {
        UniformExpr grown =
            binaryExpr(Op::Mul, coefficientExpr(digit.coefficient), extentMinusOne);
        span = binaryExpr(Op::Add, span, grown);
        constantSpan = std::nullopt;
        stacked.allStatic = false;
        continue;
      }
      if (digit.coefficient.isConstant() && digit.coefficient.constant == 0) {
        // A used program axis the address ignores: needs exactly one program.
        ok = binaryExpr(Op::And, ok, binaryExpr(Op::LessEqual, digit.extent, constantExpr(1)));
        stacked.allStatic = false;
        constantSpan = std::nullopt;
        continue;
      }
      if (digit.coefficient.isConstant() && constantSpan) {
        if (digit.coefficient.constant < *constantSpan) {
          stacked.overlap = "lanes or programs overlap (stride " +
                            std::to_string(digit.coefficient.constant) + " < span " +
                            std::to_string(*constantSpan) + ")";
          return stacked;
        }
      } else {
        ok = binaryExpr(Op::And, ok,
                        binaryExpr(Op::GreaterEqual, coefficientExpr(digit.coefficient), span));
        stacked.allStatic = false;
      }
      span = binaryExpr(Op::Add, span,
                        binaryExpr(Op::Mul, coefficientExpr(digit.coefficient), extentMinusOne));
      if (constantSpan && digit.coefficient.isConstant() && digit.constantExtent)
        constantSpan = *constantSpan + digit.coefficient.constant * (*digit.constantExtent - 1);
      else
        constantSpan = std::nullopt;
    }
    return stacked;
  };
  Stacked stacked = stack(digits);
  // Another order of the digits that stacks proves distinct addresses too: the
  // launch may take either (where one is proven statically, that one alone).
  auto eitherOrder = [&](const Stacked &other) {
    if (!other.overlap.empty() || (stacked.overlap.empty() && stacked.allStatic))
      return;
    stacked = !stacked.overlap.empty() || other.allStatic
                  ? other
                  : Stacked{binaryExpr(Op::Or, stacked.ok, other.ok), false, ""};
  };
  // A runtime stride between lanes may put the programs innermost: a
  // transposed view's program reads a column (stride 1 per program, the row
  // stride per lane). Any order of the digits proves distinct addresses, so
  // the launch may take either; not with in-program iterations (which revisit
  // addresses), and without the mask's clamp of the in-program span (which
  // no longer applies there).
  auto isProgramsDigit = [](const Digit &digit) { return digit.order >= kPrograms; };
  bool runtimeLaneStride = llvm::any_of(digits, [&](const Digit &digit) {
    return !isProgramsDigit(digit) && !digit.sequential && !digit.coefficient.isConstant();
  });
  if (runtimeLaneStride &&
      llvm::none_of(digits, [](const Digit &digit) { return digit.sequential; }) &&
      llvm::any_of(digits, isProgramsDigit)) {
    SmallVector<Digit> programsFirst;
    llvm::copy_if(digits, std::back_inserter(programsFirst), isProgramsDigit);
    for (const Digit &digit : digits)
      if (!isProgramsDigit(digit))
        programsFirst.push_back(digit);
    eitherOrder(stack(programsFirst));
  }
  // Runtime strides with the outer dims innermost too: a tile's last dim need
  // not have the smaller stride (a transposed view: stride 1 along dim 0, the
  // row stride along dim 1). Either order proves distinct addresses where it
  // stacks, so the launch may take either (as above, not with in-program
  // iterations).
  auto runtimeStride = [](const Digit &digit) {
    return digit.order > kConstantStrides && digit.order <= kRuntimeStrides;
  };
  if (llvm::count_if(digits, runtimeStride) > 1 &&
      llvm::none_of(digits, [](const Digit &digit) { return digit.sequential; })) {
    // (kRuntimeStrides - dim becomes kRuntimeStrides / 2 + dim: still after
    // the constant strides, before the programs)
    auto outerFirstKey = [&](const Digit &digit) {
      auto key = sortKey(digit);
      if (runtimeStride(digit))
        std::get<0>(key) = kRuntimeStrides / 2 + (kRuntimeStrides - digit.order);
      return key;
    };
    SmallVector<Digit> outerFirst(digits.begin(), digits.end());
    std::stable_sort(outerFirst.begin(), outerFirst.end(), [&](const Digit &a, const Digit &b) {
      return outerFirstKey(a) < outerFirstKey(b);
    });
    eitherOrder(stack(outerFirst));
  }
  // Constant strides in any order: the digits sorted by stride (a transposed
  // view with constexpr strides, or a grid-stride loop down its columns, puts
  // the programs innermost). Not with in-program iterations or shifted loads
  // (their spread joins the span below the programs).
  bool constantStrides = llvm::all_of(digits, [](const Digit &digit) {
    return digit.coefficient.isConstant() && digit.coefficient.constant >= 0 &&
           !digit.sequential;
  });
  if (!shifts && constantStrides) {
    // (digits of stride 0, program axes the address ignores, need one program
    // wherever they stand: only the others are reordered)
    SmallVector<size_t> order;
    for (auto [index, digit] : llvm::enumerate(digits))
      if (digit.coefficient.constant != 0)
        order.push_back(index);
    SmallVector<size_t> sorted = order;
    std::stable_sort(sorted.begin(), sorted.end(), [&](size_t a, size_t b) {
      return digits[a].coefficient.constant < digits[b].coefficient.constant;
    });
    if (sorted != order) { // (else the order above: nothing new to stack)
      SmallVector<Digit> byStride;
      for (size_t index : sorted)
        byStride.push_back(digits[index]);
      for (const Digit &digit : digits)
        if (digit.coefficient.constant == 0)
          byStride.push_back(digit);
      eitherOrder(stack(byStride));
    }
  }
  if (!stacked.overlap.empty()) {
    result.known = false;
    result.explanation = stacked.overlap;
    return result;
  }
  result.condition = stacked.ok;
  if (stacked.allStatic) {
    result.known = true;
    result.explanation = "proven: offsets from program_id with strides >= the tile extent";
  } else {
    result.explanation = "checked at run time: " + std::string(kRuntimeCondition);
  }
  return result;
}

// Whether `a` and `b` take the same values over the lanes and iterations of
// one program: the same value, or the same side-effect-free op on operands
// that do. An induction variable of one loop stands for one of another loop
// whose bounds and step are the same (their iterations take the same
// values); `ivs` keeps that correspondence one-to-one.
bool sameValues(Value a, Value b, DenseMap<Value, Value> &ivs, DenseMap<Value, Value> &reverse,
                unsigned depth = 0) {
  auto argA = dyn_cast<BlockArgument>(a), argB = dyn_cast<BlockArgument>(b);
  if (a == b) {
    // (an induction variable both use stands for itself from now on)
    if (argA && isa<scf::ForOp>(argA.getOwner()->getParentOp())) {
      auto [it, fresh] = ivs.try_emplace(a, a);
      if (!fresh)
        return it->second == a;
      return reverse.try_emplace(a, a).first->second == a;
    }
    return true;
  }
  if (a.getType() != b.getType() || depth > 64)
    return false;
  if (argA || argB) {
    if (!argA || !argB)
      return false;
    auto loopA = dyn_cast<scf::ForOp>(argA.getOwner()->getParentOp());
    auto loopB = dyn_cast<scf::ForOp>(argB.getOwner()->getParentOp());
    if (!loopA || !loopB || argA != loopA.getInductionVar() || argB != loopB.getInductionVar())
      return false;
    if (Value mapped = ivs.lookup(a))
      return mapped == b;
    if (reverse.count(b))
      return false;
    ivs[a] = b;
    reverse[b] = a;
    return sameValues(loopA.getLowerBound(), loopB.getLowerBound(), ivs, reverse, depth + 1) &&
           sameValues(loopA.getUpperBound(), loopB.getUpperBound(), ivs, reverse, depth + 1) &&
           sameValues(loopA.getStep(), loopB.getStep(), ivs, reverse, depth + 1);
  }
  Operation *opA = a.getDefiningOp(), *opB = b.getDefiningOp();
  if (opA->getName() != opB->getName() || opA->getNumRegions() || opB->getNumRegions() ||
      !isMemoryEffectFree(opA) || opA->getAttrDictionary() != opB->getAttrDictionary() ||
      opA->getNumOperands() != opB->getNumOperands() ||
      cast<OpResult>(a).getResultNumber() != cast<OpResult>(b).getResultNumber())
    return false;
  for (auto [x, y] : llvm::zip(opA->getOperands(), opB->getOperands()))
    if (!sameValues(x, y, ivs, reverse, depth + 1))
      return false;
  return true;
}

// The first loop of the function with the same bounds and step as `loop`
// (their iterations take the same values), neither inside the other.
scf::ForOp representativeLoop(const AccessVariables &vars, scf::ForOp loop) {
  for (scf::ForOp candidate : vars.loops) {
    if (candidate == loop)
      return loop;
    if (candidate->isAncestor(loop) || loop->isAncestor(candidate))
      continue;
    auto same = [](Value a, Value b) {
      DenseMap<Value, Value> ivs, reverse;
      return sameValues(a, b, ivs, reverse);
    };
    if (same(candidate.getLowerBound(), loop.getLowerBound()) &&
        same(candidate.getUpperBound(), loop.getUpperBound()) &&
        same(candidate.getStep(), loop.getStep()))
      return candidate;
  }
  return loop;
}

// `affine` with each loop's variables those of its representative loop, its
// factors without extensions (i32 and i64 strides alike), and
// an iteration number n of a loop from 0 by a constant step s as the
// induction variable s * n: the same form for the same addresses walked by
// two loops with the same bounds (a pointer advanced by the step in one, an
// offset `k + tl.arange(...)` in the other). Nullopt where two loops of the
// form would become one variable.
std::optional<Affine> canonicalForm(const AccessVariables &vars, const Affine &affine) {
  Affine result;
  result.hasUniform = affine.hasUniform;
  result.constant = affine.constant;
  DenseMap<Operation *, Operation *> originOf; // representative -> the loop it stands for
  for (auto &[var, coefficient] : affine.terms) {
    Affine term;
    Variable canonical = var;
    Coefficient c = coefficient;
    // (a block pointer's strides are the i32 arguments widened to i64; a
    // pointer advanced by `BLOCK * stride` moves by the constant times the
    // stride, as `k * stride` does)
    SmallVector<Value, 2> factors;
    for (Value factor : c.factors) {
      factor = stripExtensions(factor);
      while (auto product = factor.getDefiningOp<arith::MulIOp>()) {
        std::optional<int64_t> lhs = constantInt(product.getLhs());
        std::optional<int64_t> rhs = constantInt(product.getRhs());
        if (!lhs && !rhs)
          break;
        c.constant *= lhs ? *lhs : *rhs;
        factor = stripExtensions(lhs ? product.getRhs() : product.getLhs());
      }
      factors.push_back(factor);
    }
    llvm::sort(factors, [](Value a, Value b) {
      return a.getAsOpaquePointer() < b.getAsOpaquePointer();
    });
    c.factors = factors;
    if (isIv(var)) {
      scf::ForOp loop = vars.loopOf(var);
      bool number = vars.isIterationNumber(var);
      std::optional<int64_t> lower = constantInt(loop.getLowerBound());
      std::optional<int64_t> step = constantInt(loop.getStep());
      if (number && lower && *lower == 0 && step && *step > 0 && c.constant % *step == 0) {
        c.constant /= *step;
        number = false;
      }
      scf::ForOp representative = representativeLoop(vars, loop);
      auto [it, fresh] = originOf.try_emplace(representative, loop);
      if (!fresh && it->second != loop.getOperation())
        return std::nullopt;
      canonical = vars.ivVariable(representative, number);
    }
    term.terms[canonical] = c;
    std::optional<Affine> sum = combine(result, term, 1);
    if (!sum)
      return std::nullopt;
    result = *sum;
  }
  return result;
}

// What one access's pointer and mask have in common with another's.
struct AccessMatch {
  bool sameAddresses = false; // the same addresses over a program's lanes and iterations
  bool maskImplied = false;   // where the other's mask holds, this one's does
};

// `mask`'s conjuncts (its arith.andi tree).
void conjunctsOf(Value mask, SmallVectorImpl<Value> &conjuncts) {
  if (auto both = mask.getDefiningOp<arith::AndIOp>()) {
    conjunctsOf(both.getLhs(), conjuncts);
    conjunctsOf(both.getRhs(), conjuncts);
    return;
  }
  conjuncts.push_back(mask);
}

// Matches access `a` against `b`: the same expression (up to induction
// variables of loops with the same bounds), or the same affine form with no
// uniform part (a block pointer's i64 offsets and a plain pointer's i32 ones);
// a's mask implied where every conjunct of a's is one of b's (no mask: always).
AccessMatch matchAccess(const AffineAccess &access, std::pair<Value, Value> a,
                        std::pair<Value, Value> b) {
  AccessMatch match;
  auto [ptrA, maskA] = a;
  auto [ptrB, maskB] = b;
  if (ptrA.getType() != ptrB.getType())
    return match;
  DenseMap<Value, Value> ivs, reverse;
  bool structural = sameValues(ptrA, ptrB, ivs, reverse);
  auto canonicalOffsets = [&](Value ptr) -> std::optional<Affine> {
    std::optional<Affine> offsets = access.pointerOffsets(ptr);
    return offsets ? canonicalForm(access.vars(), *offsets) : std::nullopt;
  };
  if (!structural) {
    std::optional<Affine> offsetsA = canonicalOffsets(ptrA), offsetsB = canonicalOffsets(ptrB);
    if (!offsetsA || !offsetsB || offsetsA->hasUniform || !(*offsetsA == *offsetsB) ||
        baseArgument(ptrA) != baseArgument(ptrB))
      return match;
  }
  match.sameAddresses = true;
  if (!maskA) {
    match.maskImplied = true;
    return match;
  }
  if (!maskB)
    return match;
  SmallVector<Value> conjunctsA, conjunctsB;
  conjunctsOf(maskA, conjunctsA);
  conjunctsOf(maskB, conjunctsB);
  SmallVector<MaskConjunct> boundsB = maskConjuncts(access, maskB);
  match.maskImplied = llvm::all_of(conjunctsA, [&](Value conjunct) {
    if (structural && llvm::any_of(conjunctsB, [&](Value other) {
          DenseMap<Value, Value> ivsHere = ivs, reverseHere = reverse;
          return sameValues(conjunct, other, ivsHere, reverseHere);
        }))
      return true;
    // (an affine bound `lhs < n` that b's mask has too, or one that holds everywhere)
    SmallVector<MaskConjunct> bounds = maskConjuncts(access, conjunct);
    return llvm::all_of(bounds, [&](const MaskConjunct &bound) {
      std::optional<Affine> lhs = canonicalForm(access.vars(), bound.lhs);
      return bound.kind == MaskConjunct::Kind::Bound && lhs &&
             llvm::any_of(boundsB, [&](const MaskConjunct &other) {
               return other.kind == MaskConjunct::Kind::Bound &&
                      canonicalForm(access.vars(), other.lhs) == lhs &&
                      stripExtensions(other.bound) == stripExtensions(bound.bound);
             });
    });
  });
  return match;
}

// The loads' addresses as one's shifted by constants (SiteShifts), where they
// are the same affine form through one pointer but for their constant parts.
std::optional<SiteShifts> shiftedSites(const AffineAccess &access,
                                       ArrayRef<std::pair<Value, Value>> accesses) {
  SiteShifts shifts;
  std::optional<Affine> first;
  for (auto [ptr, mask] : accesses) {
    if (ptr.getType() != accesses.front().first.getType() ||
        baseArgument(ptr) != baseArgument(accesses.front().first))
      return std::nullopt;
    std::optional<Affine> offsets = access.pointerOffsets(ptr);
    if (offsets)
      offsets = canonicalForm(access.vars(), *offsets);
    if (!offsets || !offsets->constant || (first && !(first->terms == offsets->terms)))
      return std::nullopt;
    if (!first)
      first = offsets;
    shifts.sites.push_back({mask, *offsets->constant});
  }
  auto [lowest, highest] = std::minmax_element(
      shifts.sites.begin(), shifts.sites.end(),
      [](auto &a, auto &b) { return a.second < b.second; });
  shifts.lowestSite = lowest - shifts.sites.begin();
  shifts.lowest = lowest->second;
  shifts.spread = highest->second - lowest->second;
  return shifts;
}

// Whether every scalar `condition` reads is defined in a region enclosing each
// load's pointer: the launch-checked write of each load's gradient evaluates
// it there. (Loads under different branches: a scalar of one branch's address
// arithmetic is not visible in the other.)
bool visibleAtEach(const UniformExpr &condition, ArrayRef<std::pair<Value, Value>> accesses) {
  if (condition.op == UniformExpr::Op::Scalar && condition.scalar) {
    Region *defined = Value(condition.scalar).getParentRegion();
    return llvm::all_of(accesses, [&](auto access) {
      return defined->isAncestor(access.first.getParentRegion());
    });
  }
  return llvm::all_of(condition.operands,
                      [&](const UniformExpr &operand) { return visibleAtEach(operand, accesses); });
}

// `result`, or unknown where its run-time condition is not visible at each load.
ExclusiveAccess visibleOrUnknown(ExclusiveAccess result,
                                 ArrayRef<std::pair<Value, Value>> accesses) {
  if (!result.known && !visibleAtEach(result.condition, accesses)) {
    result.known = false;
    result.explanation = "the condition that keeps programs apart (" + result.explanation +
                         ") reads scalars of one branch's address arithmetic, which the loads "
                         "under other branches cannot evaluate";
  }
  return result;
}

} // namespace

ExclusiveAccess analyzeExclusiveUnion(ArrayRef<std::pair<Value, Value>> accesses,
                                      ArrayRef<bool> usedAxes) {
  Value first = accesses.front().first;
  AffineAccess access(first.getParentRegion()->getParentOp());
  for (auto other : accesses.drop_front())
    if (!matchAccess(access, accesses.front(), other).sameAddresses) {
      // (addresses that differ by constants: the lowest load's shifted,
      // bounded by the masks where they bound each shift alike)
      std::optional<SiteShifts> shifts = shiftedSites(access, accesses);
      ExclusiveAccess result;
      if (!shifts) {
        result.known = false;
        result.explanation = "its loads read different addresses";
        return result;
      }
      // (one mask for every load, e.g. RoPE's halves under `cols < HALF`,
      // bounds the lanes of each alike)
      Value mask = accesses.front().second;
      for (auto other : accesses)
        if (other.second != mask)
          mask = Value();
      result = analyzeAccess(accesses[shifts->lowestSite].first, mask, usedAxes, &*shifts);
      result.explanation = "its loads read addresses up to " + std::to_string(shifts->spread) +
                           " elements apart; " + result.explanation;
      return visibleOrUnknown(std::move(result), accesses);
    }
  // The same addresses: the union is that of the access whose mask every
  // other's implies, or, without one, where any of them reaches (the tile).
  std::pair<Value, Value> weakest{accesses.front().first, Value()};
  for (auto candidate : accesses)
    if (llvm::all_of(accesses, [&](auto other) {
          return matchAccess(access, candidate, other).maskImplied;
        })) {
      weakest = candidate;
      break;
    }
  ExclusiveAccess result = analyzeExclusiveAccess(weakest.first, weakest.second, usedAxes);
  if (!result.known || *result.known)
    result.explanation = "its loads read the same addresses; " + result.explanation;
  return visibleOrUnknown(std::move(result), accesses);
}

} // namespace tritonad

namespace tritonad {

void forEachAffineForm(Operation *function, function_ref<void(Value, StringRef)> visit) {
  AffineAccess access(function);
  function->walk([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (getElementTypeOrSelf(arg.getType()).isInteger())
            visit(arg, access.describe(arg));
    for (Value result : op->getResults())
      if (getElementTypeOrSelf(result.getType()).isInteger())
        visit(result, access.describe(result));
  });
}

namespace {

std::optional<SymbolicInt> symbolicCoefficient(const Coefficient &coefficient) {
  std::optional<SymbolicInt> result;
  if (coefficient.constant != 1 || coefficient.factors.empty())
    result = SymbolicInt::constant(coefficient.constant);
  for (Value factor : coefficient.factors) {
    std::optional<SymbolicInt> symbol = symbolize(factor);
    if (!symbol)
      return std::nullopt;
    result = result ? SymbolicInt::of(SymbolicInt::Op::Mul, {*result, *symbol}) : *symbol;
  }
  return result;
}

SymbolicInt symbolicAbs(SymbolicInt value) {
  using Op = SymbolicInt::Op;
  SymbolicInt negated = SymbolicInt::of(Op::Sub, {SymbolicInt::constant(0), value});
  return SymbolicInt::of(Op::Max, {std::move(value), std::move(negated)});
}

// `expression` (the ops iterationDisjointness builds) over the values of
// `function`: its arguments by name, the grid; nullopt where an argument is
// not found.
std::optional<UniformExpr> uniformOf(const SymbolicInt &expression, tt::FuncOp function) {
  using Op = SymbolicInt::Op;
  UniformExpr result;
  switch (expression.op) {
  case Op::Constant:
    return constantExpr(expression.value);
  case Op::NumPrograms:
    result.op = UniformExpr::Op::NumPrograms;
    result.value = expression.value;
    return result;
  case Op::Argument:
    for (BlockArgument arg : function.getArguments())
      if (argumentName(arg) == expression.name)
        return scalarExpr(arg);
    return std::nullopt;
  case Op::Add: result.op = UniformExpr::Op::Add; break;
  case Op::Sub: result.op = UniformExpr::Op::Sub; break;
  case Op::Mul: result.op = UniformExpr::Op::Mul; break;
  case Op::Min: result.op = UniformExpr::Op::Min; break;
  case Op::Max: result.op = UniformExpr::Op::Max; break;
  case Op::Ge: result.op = UniformExpr::Op::GreaterEqual; break;
  default: return std::nullopt;
  }
  for (const SymbolicInt &operand : expression.operands) {
    std::optional<UniformExpr> converted = uniformOf(operand, function);
    if (!converted)
      return std::nullopt;
    result.operands.push_back(std::move(*converted));
  }
  return result;
}

// The value of an expression of constants (the ops iterationDisjointness
// builds); nullopt where it reads the launch's values.
std::optional<int64_t> constantValue(const SymbolicInt &expression) {
  using Op = SymbolicInt::Op;
  if (expression.op == Op::Constant)
    return expression.value;
  SmallVector<int64_t, 2> values;
  for (const SymbolicInt &operand : expression.operands) {
    std::optional<int64_t> value = constantValue(operand);
    if (!value)
      return std::nullopt;
    values.push_back(*value);
  }
  if (values.size() != 2)
    return std::nullopt;
  switch (expression.op) {
  case Op::Add: return values[0] + values[1];
  case Op::Sub: return values[0] - values[1];
  case Op::Mul: return values[0] * values[1];
  case Op::Min: return std::min(values[0], values[1]);
  case Op::Max: return std::max(values[0], values[1]);
  case Op::Ge: return values[0] >= values[1];
  case Op::Or: return values[0] != 0 || values[1] != 0;
  case Op::DivS:
    return values[1] == 0 ? std::nullopt : std::optional<int64_t>(values[0] / values[1]);
  default: return std::nullopt;
  }
}

// `step` (a product of constants, arguments and the grid's sizes) on a grid
// of one program; nullopt where it is something else.
std::optional<SymbolicInt> withOneProgram(const SymbolicInt &step) {
  using Op = SymbolicInt::Op;
  switch (step.op) {
  case Op::Constant:
  case Op::Argument:
    return step;
  case Op::NumPrograms:
    return SymbolicInt::constant(1);
  case Op::Mul: {
    std::optional<SymbolicInt> lhs = withOneProgram(step.operands[0]);
    std::optional<SymbolicInt> rhs = withOneProgram(step.operands[1]);
    if (!lhs || !rhs)
      return std::nullopt;
    if (lhs->op == Op::Constant && lhs->value == 1)
      return rhs;
    if (rhs->op == Op::Constant && rhs->value == 1)
      return lhs;
    return SymbolicInt::of(Op::Mul, {*lhs, *rhs});
  }
  default:
    return std::nullopt;
  }
}

// The static proofs of iterationDisjointness: a constant move of at least the
// tile's span, or a runtime stride moved past the tile's extent along its dim.
bool iterationsProvablyDisjoint(const Affine &offsets, const Coefficient &move,
                                bool constantLanes, int64_t span, RankedTensorType type) {
  if (constantLanes && move.isConstant() && std::abs(move.constant) >= span)
    return true;
  // Runtime strides: the loop moves the index along one tile dim d (its
  // coefficient is a multiple of d's stride) by at least the tile's extent
  // there, so iterations touch disjoint index tuples. Distinct tuples are
  // distinct addresses under the assumption every store is differentiated
  // with: the lanes of a store do not overwrite each other.
  auto factors = [](const Coefficient &c) {
    SmallVector<void *> sorted;
    for (Value v : c.factors)
      sorted.push_back(v.getAsOpaquePointer());
    llvm::sort(sorted);
    return sorted;
  };
  for (auto &[var, coefficient] : offsets.terms) {
    if (var < kFirstLane || var >= kFirstIv || coefficient.constant == 0 ||
        factors(coefficient) != factors(move) || move.constant % coefficient.constant != 0)
      continue;
    if (std::abs(move.constant / coefficient.constant) >= type.getShape()[var - kFirstLane])
      return true;
  }
  return false;
}

} // namespace

// A constant the value is at most (a constant, widened, or the min of one and
// anything: `min(BC, n - start)`); nullopt where none is known.
static std::optional<int64_t> constantUpperBound(Value value) {
  if (std::optional<int64_t> known = constantInt(value))
    return known;
  Operation *def = value.getDefiningOp();
  if (auto cast = dyn_cast_or_null<arith::BitcastOp>(def))
    if (cast.getIn().getType() == cast.getType())
      return constantUpperBound(cast.getIn());
  if (isa_and_nonnull<arith::ExtSIOp>(def))
    return constantUpperBound(def->getOperand(0));
  if (isa_and_nonnull<arith::MinSIOp>(def)) {
    std::optional<int64_t> lhs = constantUpperBound(def->getOperand(0));
    std::optional<int64_t> rhs = constantUpperBound(def->getOperand(1));
    if (lhs && rhs)
      return std::min(*lhs, *rhs);
    return lhs ? lhs : rhs;
  }
  return std::nullopt;
}

// A constant the trip count of `loop` is at most (a constant start and step,
// an end at most a constant); nullopt where none is known.
static std::optional<int64_t> tripCountBound(scf::ForOp loop) {
  std::optional<int64_t> lower = constantInt(loop.getLowerBound());
  std::optional<int64_t> upper = constantUpperBound(loop.getUpperBound());
  std::optional<int64_t> step = constantInt(loop.getStep());
  if (!lower || !upper || !step || *step <= 0)
    return std::nullopt;
  return *upper <= *lower ? 0 : (*upper - *lower + *step - 1) / *step;
}

// Scalars defined outside `loop` that the addresses or mask of an access in it
// depend on and that the analysis cannot express (a digit of a program id's
// digit, `(pid // n) % h`; a loaded index): whatever they are, they stay the
// same through the loop's iterations, which is all iteration disjointness
// needs of them. Empty where every such scalar has an affine form.
static SmallVector<Value> fixedThroughLoop(const AffineAccess &access, scf::ForOp loop,
                                    ArrayRef<Value> roots) {
  SmallVector<Value> fixed, pending;
  DenseSet<Value> seen;
  for (Value root : roots)
    if (root)
      pending.push_back(root);
  while (!pending.empty()) {
    Value value = pending.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    bool integer = getElementTypeOrSelf(value.getType()).isIntOrIndex();
    if (integer && access.affine(value))
      continue;
    bool outside = !loop.getRegion().isAncestor(value.getParentRegion());
    if (outside && integer && !isa<RankedTensorType>(value.getType())) {
      fixed.push_back(value);
      continue;
    }
    if (Operation *def = value.getDefiningOp())
      if (def->getNumRegions() == 0)
        for (Value operand : def->getOperands())
          pending.push_back(operand);
  }
  return fixed;
}

static IterationDisjointness iterationDisjointnessIn(const AffineAccess &access, Value ptr, Value mask,
                                              scf::ForOp loop);

IterationDisjointness iterationDisjointness(Value ptr, Value mask, scf::ForOp loop) {
  AffineAccess access(loop);
  SmallVector<Value> fixed = fixedThroughLoop(access, loop, {ptr, mask});
  if (fixed.empty())
    return iterationDisjointnessIn(access, ptr, mask, loop);
  // (each such scalar a variable of its own, as a re-parallelized part's keys are:
  // fixed here, like program ids)
  AffineAccess keyed(loop, fixed);
  return iterationDisjointnessIn(keyed, ptr, mask, loop);
}

static IterationDisjointness iterationDisjointnessIn(const AffineAccess &access, Value ptr, Value mask,
                                              scf::ForOp loop) {
  using Op = SymbolicInt::Op;
  IterationDisjointness result;
  std::optional<Affine> offsets = access.pointerOffsets(ptr);
  std::map<int, Value> bounded = laneBounds(maskConjuncts(access, mask));
  // A runtime step (a grid-stride loop's tl.num_programs) is positive, as
  // scf.for's must be: each iteration then moves the addresses by at least
  // the induction variable's coefficient.
  std::optional<int64_t> step = constantInt(loop.getStep());
  if (!offsets || (step && *step <= 0))
    return result;
  auto type = dyn_cast<RankedTensorType>(ptr.getType());
  std::optional<Coefficient> move; // address change per iteration
  bool moveTimesStep = false;      // (move is the induction variable's coefficient)
  bool constantLanes = true;
  int64_t span = 1; // what one iteration touches: 1 + sum |c_d| * (size_d - 1)
  // The same span for the launch to evaluate (runtime coefficients, bounds).
  std::optional<SymbolicInt> spanAtLaunch = SymbolicInt::constant(1);
  // The strides of the lane dims of more than one lane, for the interleaved
  // alternative below.
  SmallVector<std::optional<SymbolicInt>> spreadStrides;
  // (and their constant strides, 0 for a runtime one)
  SmallVector<int64_t> spreadConstants;
  for (auto &[var, coefficient] : offsets->terms) {
    if (var < kFirstLane || isProgramDigit(var))
      continue; // program ids and their digits: fixed within a program
    if (var >= kFirstIv) {
      if (access.vars().loopOf(var) != loop || move)
        return result; // another loop moves the addresses as well
      move = coefficient;
      moveTimesStep = !access.vars().isIterationNumber(var);
      if (moveTimesStep)
        move->constant *= step.value_or(1);
      continue;
    }
    if (!type)
      return result;
    constantLanes &= coefficient.isConstant();
    int64_t size = type.getShape()[var - kFirstLane];
    int64_t extent = size;
    std::optional<SymbolicInt> extentAtLaunch = SymbolicInt::constant(size);
    auto bound = bounded.find(var - kFirstLane);
    if (bound != bounded.end()) {
      if (std::optional<int64_t> limit = constantInt(bound->second)) {
        extent = std::clamp<int64_t>(*limit, 1, extent);
        extentAtLaunch = SymbolicInt::constant(extent);
      } else if (std::optional<SymbolicInt> limit = symbolize(bound->second)) {
        // (`cols < n_cols`: the lanes a runtime width leaves; where it leaves
        // none, nothing is stored and the condition need not hold)
        extentAtLaunch = SymbolicInt::of(Op::Min, {*limit, SymbolicInt::constant(size)});
      }
    }
    span += std::abs(coefficient.constant) * (extent - 1);
    std::optional<SymbolicInt> laneStride = symbolicCoefficient(coefficient);
    if (size > 1) { // (a constant stride: a sliding window, left to the error)
      spreadStrides.push_back(coefficient.isConstant() ? std::nullopt : laneStride);
      spreadConstants.push_back(coefficient.isConstant() ? std::abs(coefficient.constant) : 0);
    }
    if (!laneStride || !spanAtLaunch) {
      spanAtLaunch = std::nullopt;
      continue;
    }
    bool unitStride = coefficient.isConstant() && std::abs(coefficient.constant) == 1;
    if (unitStride && spanAtLaunch->op == Op::Constant && spanAtLaunch->value == 1) {
      spanAtLaunch = extentAtLaunch; // (1 + (extent - 1))
      continue;
    }
    SymbolicInt reach = SymbolicInt::of(Op::Sub, {*extentAtLaunch, SymbolicInt::constant(1)});
    if (!unitStride)
      reach = SymbolicInt::of(Op::Mul, {symbolicAbs(*laneStride), reach});
    spanAtLaunch = SymbolicInt::of(Op::Add, {*spanAtLaunch, reach});
  }
  if (!move)
    return result;
  result.proven = iterationsProvablyDisjoint(*offsets, *move, constantLanes, span, type);
  // Or the iterations interleave inside the one dim of lanes at a constant
  // stride, in a loop whose trip count a constant bounds (column j of each row
  // in iteration j of `for j in range(0, min(BC, n))`): that stride at least
  // what the iterations span, |move| * (trips - 1) + 1. Within one program.
  std::optional<int64_t> trips = tripCountBound(loop);
  if (!result.proven && spreadConstants.size() == 1 && spreadConstants[0] > 0 &&
      move->isConstant() && trips && step)
    result.proven = spreadConstants[0] >= std::abs(move->constant) * (*trips - 1) + 1;
  if (result.proven)
    return result;
  // Otherwise the launch decides, where the arguments give the move and the
  // span: |move| >= span (a row stride that covers the row's extent).
  std::optional<SymbolicInt> moveAtLaunch = symbolicCoefficient(*move);
  if (moveAtLaunch && moveTimesStep && !step) { // (a runtime step, not folded into move)
    std::optional<SymbolicInt> stepAtLaunch = symbolize(loop.getStep());
    // A grid-stride step (tl.num_programs(0) * BLOCK_ROW) counts with one
    // program, as the static proof counts a runtime step as 1: the programs'
    // rows interleave at that granularity, so rows apart at it keep the
    // programs apart too, not only one program's iterations.
    if (stepAtLaunch)
      if (std::optional<SymbolicInt> least = withOneProgram(*stepAtLaunch)) {
        result.stepOnOneProgram = symbolicText(*least) != symbolicText(*stepAtLaunch);
        stepAtLaunch = least;
      }
    if (!stepAtLaunch)
      moveAtLaunch = std::nullopt;
    else if (stepAtLaunch->op != Op::Constant || stepAtLaunch->value != 1)
      moveAtLaunch = SymbolicInt::of(Op::Mul, {*moveAtLaunch, *stepAtLaunch});
  }
  if (!moveAtLaunch || !spanAtLaunch)
    return result;
  SymbolicInt condition = SymbolicInt::of(Op::Ge, {symbolicAbs(*moveAtLaunch), *spanAtLaunch});
  // (the backward's own predicate takes this one: sufficient, without a division)
  std::optional<UniformExpr> uniform = uniformOf(condition, loop->getParentOfType<tt::FuncOp>());
  // Or the iterations interleave inside one dim of lanes (column j of each
  // row in iteration j: `rows * n_chunks + k // BLOCK`): that dim's stride at
  // least what the iterations span, |move| * (trips - 1) + 1. Within one
  // program (not with a grid-stride step, whose programs interleave too).
  std::optional<SymbolicInt> lower = symbolize(loop.getLowerBound());
  std::optional<SymbolicInt> upper = symbolize(loop.getUpperBound());
  std::optional<SymbolicInt> stride = symbolize(loop.getStep());
  if (spreadStrides.size() == 1 && spreadStrides[0] && !result.stepOnOneProgram && lower &&
      upper && stride) {
    SymbolicInt trips = SymbolicInt::of(
        Op::DivS, {SymbolicInt::of(Op::Add, {SymbolicInt::of(Op::Sub, {*upper, *lower}),
                                             SymbolicInt::of(Op::Sub, {*stride,
                                                                       SymbolicInt::constant(1)})}),
                   *stride});
    SymbolicInt reach = SymbolicInt::of(
        Op::Add, {SymbolicInt::of(Op::Mul, {symbolicAbs(*moveAtLaunch),
                                            SymbolicInt::of(Op::Sub, {trips,
                                                                      SymbolicInt::constant(1)})}),
                  SymbolicInt::constant(1)});
    SymbolicInt interleaved = SymbolicInt::of(Op::Ge, {symbolicAbs(*spreadStrides[0]), reach});
    condition = SymbolicInt::of(Op::Or, {condition, interleaved});
    result.interleaved = "|" + symbolicText(*spreadStrides[0]) + "| >= " + symbolicText(reach);
  }
  if (std::optional<int64_t> known = constantValue(condition)) {
    // (a grid-stride step's constant part: 4 * tl.num_programs moves by 4)
    result.proven = *known != 0;
    return result;
  }
  result.condition = condition;
  result.uniform = uniform;
  result.move = "|" + symbolicText(*moveAtLaunch) + "|";
  result.span = symbolicText(*spanAtLaunch);
  return result;
}

bool iterationsTouchDisjointAddresses(Value ptr, Value mask, scf::ForOp loop) {
  return iterationDisjointness(ptr, mask, loop).proven;
}


} // namespace tritonad

namespace tritonad {
namespace {

// The mask as conjuncts `affine < uniform` (and keys met as conditions, and
// the keys whose values must be >= 0 for the rest to hold); false if any
// conjunct is something else.
bool clampsOf(ArrayRef<MaskConjunct> conjuncts, SmallVectorImpl<std::pair<Affine, Value>> &clamps,
              SmallVectorImpl<int> &conditionKeys, SmallVectorImpl<int> &nonNegativeKeys) {
  for (const MaskConjunct &conjunct : conjuncts) {
    if (conjunct.kind == MaskConjunct::Kind::ConditionKey) {
      conditionKeys.push_back(-1 - conjunct.key);
      continue;
    }
    if (conjunct.kind == MaskConjunct::Kind::NonNegativeKeys) {
      for (auto &[var, coefficient] : conjunct.lhs.terms)
        if (var < 0)
          nonNegativeKeys.push_back(-1 - var);
      continue;
    }
    if (conjunct.kind != MaskConjunct::Kind::Bound || conjunct.lhs.hasUniform)
      return false;
    clamps.push_back({conjunct.lhs, conjunct.bound});
  }
  return true;
}

} // namespace

// Constants >= 0 and sums and products of non-negative values, then the
// affine form (which does not keep the value of a constant part).
static bool provablyNonNegative(const AffineAccess &access, Value value, unsigned depth = 0) {
  if (std::optional<int64_t> constant = constantInt(value))
    return *constant >= 0;
  if (std::optional<Affine> affine = access.affine(value);
      affine && provablyNonNegative(access.vars(), *affine))
    return true;
  Operation *def = value.getDefiningOp();
  if (!def || depth > 8)
    return false;
  if (isa<arith::ExtSIOp, tt::SplatOp, tt::BroadcastOp, tt::ExpandDimsOp>(def))
    return provablyNonNegative(access, def->getOperand(0), depth + 1);
  if (isa<arith::AddIOp, arith::MulIOp>(def))
    return provablyNonNegative(access, def->getOperand(0), depth + 1) &&
           provablyNonNegative(access, def->getOperand(1), depth + 1);
  return false;
}

SmallVector<bool> provablyNonNegative(Operation *function, ArrayRef<Value> values) {
  AffineAccess access(function);
  return llvm::map_to_vector(values,
                             [&](Value value) { return provablyNonNegative(access, value); });
}

std::string argumentName(BlockArgument arg) {
  if (auto name = dyn_cast<NameLoc>(arg.getLoc()))
    return name.getName().str();
  return "";
}

static BlockArgument baseArgumentOf(Value ptr, bool throughBitcasts) {
  while (Operation *def = ptr.getDefiningOp()) {
    if (!isa<tt::SplatOp, tt::AddPtrOp, tt::BroadcastOp, tt::ExpandDimsOp, tt::ReshapeOp,
             tt::TransOp>(def) &&
        !(throughBitcasts && isa<tt::BitcastOp>(def)))
      return {};
    ptr = def->getOperand(0);
  }
  return dyn_cast<BlockArgument>(ptr);
}

BlockArgument baseArgument(Value ptr) { return baseArgumentOf(ptr, false); }

BlockArgument baseArgumentThroughBitcasts(Value ptr) { return baseArgumentOf(ptr, true); }

BlockArgument baseArgumentThroughLoops(Value ptr) {
  BlockArgument base = baseArgument(ptr);
  while (base) {
    auto loop = dyn_cast<scf::ForOp>(base.getOwner()->getParentOp());
    if (!loop || base.getArgNumber() == 0)
      return base;
    base = baseArgument(loop.getInitArgs()[base.getArgNumber() - 1]);
  }
  return base;
}

std::optional<SymbolicInt> symbolicTripCount(
    scf::ForOp loop, bool programIds,
    llvm::function_ref<std::optional<SymbolicInt>(BlockArgument)> regionArgument) {
  using Op = SymbolicInt::Op;
  std::optional<SymbolicInt> lower = symbolize(loop.getLowerBound(), programIds, regionArgument);
  std::optional<SymbolicInt> upper = symbolize(loop.getUpperBound(), programIds, regionArgument);
  std::optional<SymbolicInt> step = symbolize(loop.getStep(), programIds, regionArgument);
  if (!lower || !upper || !step)
    return std::nullopt;
  SymbolicInt rounded = SymbolicInt::of(
      Op::Add, {SymbolicInt::of(Op::Sub, {*upper, *lower}),
                SymbolicInt::of(Op::Sub, {*step, SymbolicInt::constant(1)})});
  return SymbolicInt::of(
      Op::Max, {SymbolicInt::of(Op::DivS, {rounded, *step}), SymbolicInt::constant(0)});
}

std::optional<SymbolicInt>
symbolize(Value scalar, bool programIds,
          llvm::function_ref<std::optional<SymbolicInt>(BlockArgument)> regionArgument) {
  using Op = SymbolicInt::Op;
  if (auto splat = scalar.getDefiningOp<tt::SplatOp>())
    scalar = splat.getSrc();
  if (std::optional<int64_t> c = constantInt(scalar))
    return SymbolicInt::constant(getElementTypeOrSelf(scalar.getType()).isInteger(1) ? *c != 0
                                                                                    : *c);
  if (isa<RankedTensorType>(scalar.getType()))
    return std::nullopt;
  if (auto arg = dyn_cast<BlockArgument>(scalar)) {
    if (!isa<tt::FuncOp>(arg.getOwner()->getParentOp()))
      return regionArgument ? regionArgument(arg) : std::nullopt;
    auto name = dyn_cast<NameLoc>(arg.getLoc());
    if (!name)
      return std::nullopt;
    SymbolicInt result;
    result.op = Op::Argument;
    result.name = name.getName().str();
    return result;
  }
  Operation *def = scalar.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (auto programs = dyn_cast<tt::GetNumProgramsOp>(def)) {
    SymbolicInt result;
    result.op = Op::NumPrograms;
    result.value = static_cast<int64_t>(programs.getAxis());
    return result;
  }
  if (auto pid = dyn_cast<tt::GetProgramIdOp>(def); pid && programIds) {
    SymbolicInt result;
    result.op = Op::ProgramId;
    result.value = static_cast<int64_t>(pid.getAxis());
    return result;
  }
  if (isa<arith::ExtSIOp, arith::TruncIOp>(def))
    return symbolize(def->getOperand(0), programIds, regionArgument);
  if (isa<tt::LoadOp>(def) && def->hasAttr(kProgramSlotAttr) && programIds) {
    SymbolicInt result;
    result.op = Op::ProgramSlot;
    return result;
  }
  std::optional<Op> op;
  if (auto cmp = dyn_cast<arith::CmpIOp>(def)) {
    switch (cmp.getPredicate()) {
    case arith::CmpIPredicate::slt: op = Op::Lt; break;
    case arith::CmpIPredicate::sle: op = Op::Le; break;
    case arith::CmpIPredicate::sgt: op = Op::Gt; break;
    case arith::CmpIPredicate::sge: op = Op::Ge; break;
    case arith::CmpIPredicate::eq: op = Op::Eq; break;
    case arith::CmpIPredicate::ne: op = Op::Ne; break;
    default: return std::nullopt; // unsigned: not modelled
    }
  } else if (isa<arith::AddIOp>(def)) op = Op::Add;
  else if (isa<arith::SubIOp>(def)) op = Op::Sub;
  else if (isa<arith::MulIOp>(def)) op = Op::Mul;
  else if (isa<arith::DivSIOp>(def)) op = Op::DivS;
  else if (isa<arith::RemSIOp>(def)) op = Op::RemS;
  else if (isa<arith::MinSIOp>(def)) op = Op::Min;
  else if (isa<arith::MaxSIOp>(def)) op = Op::Max;
  else if (isa<arith::AndIOp>(def)) op = Op::And;
  else if (isa<arith::OrIOp>(def)) op = Op::Or;
  else if (isa<arith::XOrIOp>(def)) op = Op::Xor;
  else if (isa<arith::SelectOp>(def)) op = Op::Select;
  if (!op)
    return std::nullopt;
  std::vector<SymbolicInt> operands;
  for (Value operand : def->getOperands()) {
    std::optional<SymbolicInt> symbol = symbolize(operand, programIds, regionArgument);
    if (!symbol)
      return std::nullopt;
    operands.push_back(std::move(*symbol));
  }
  return SymbolicInt::of(*op, std::move(operands));
}

SmallVector<TileRemainder> tileRemainders(Value ptr) {
  SmallVector<TileRemainder> found;
  struct Step {
    Value value;
    SmallVector<unsigned> expandAxes; // outermost first
    bool lanesKnown, plainPath;
  };
  SmallVector<Step> work{{ptr, {}, true, true}};
  std::set<std::tuple<void *, SmallVector<unsigned>, bool, bool>> seen;
  while (!work.empty()) {
    Step step = work.pop_back_val();
    Operation *def = step.value.getDefiningOp();
    if (!def || def->getNumRegions() ||
        !seen.insert({step.value.getAsOpaquePointer(), step.expandAxes, step.lanesKnown,
                      step.plainPath})
             .second)
      continue;
    if (auto remainder = dyn_cast<arith::RemSIOp>(def);
        remainder && isa<RankedTensorType>(remainder.getType())) {
      Value divisor = remainder.getRhs();
      if (auto splat = divisor.getDefiningOp<tt::SplatOp>())
        divisor = splat.getSrc();
      if (!isa<RankedTensorType>(divisor.getType()))
        found.push_back({def, SmallVector<unsigned>(llvm::reverse(step.expandAxes)),
                         step.lanesKnown, step.plainPath});
    }
    Step next = step;
    if (auto expand = dyn_cast<tt::ExpandDimsOp>(def))
      next.expandAxes.push_back(expand.getAxis());
    else if (isa<tt::TransOp, tt::ReshapeOp, tt::JoinOp, tt::SplitOp>(def))
      next.lanesKnown = false;
    next.plainPath &= isa<tt::AddPtrOp, tt::SplatOp, tt::BroadcastOp, tt::ExpandDimsOp,
                          arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::ExtSIOp,
                          arith::ConstantOp>(def);
    for (Value operand : def->getOperands())
      work.push_back({operand, next.expandAxes, next.lanesKnown, next.plainPath});
  }
  return found;
}

std::optional<ShadowCoverage> analyzeCoverage(Operation *accessOp, Value ptr, Value mask,
                                              ArrayRef<Value> keys, KeyedDigits *keyed) {
  using Op = SymbolicInt::Op;
  scf::ForOp programLoop;
  for (Operation *parent = accessOp->getParentOp(); !isa<tt::FuncOp>(parent);
       parent = parent->getParentOp()) {
    auto loop = dyn_cast<scf::ForOp>(parent);
    if (!loop)
      return std::nullopt; // a branch or a while loop: not every program writes
    if (isProgramLoop(loop))
      programLoop = loop;
  }
  // A part's addresses may wrap a tile's rows or columns at the tensor's
  // extent, as the matmul tutorial spells `(pid_m * BLOCK_M + arange) % M`:
  // each remainder of a tile by a launch-uniform scalar is taken as its
  // dividend, and its bound becomes a wrap the launch checks no lane reaches
  // (then the remainder changes nothing).
  SmallVector<TileRemainder> wrapping;
  SmallVector<Operation *> transparent;
  if (keyed && keyed->allowWraps)
    wrapping = tileRemainders(ptr);
  for (const TileRemainder &remainder : wrapping)
    if (!llvm::is_contained(transparent, remainder.op))
      transparent.push_back(remainder.op);
  AffineAccess access(accessOp, keys, transparent);
  std::optional<Affine> offsets = access.pointerOffsets(ptr);
  if (!offsets || offsets->hasUniform)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(ptr.getType());
  if (keyed)
    keyed->digitOfKey.assign(keys.size(), -1);

  ShadowCoverage coverage;
  std::map<Variable, int> digitOf;
  for (auto &[var, coefficient] : offsets->terms) {
    std::optional<SymbolicInt> factor = symbolicCoefficient(coefficient);
    if (!factor)
      return std::nullopt;
    ShadowCoverage::Digit digit{*factor, SymbolicInt::constant(1)};
    if (isProgramDigit(var))
      return std::nullopt; // (which pairs of digits occur is not a product)
    if (var < 0) {
      // A key's values (their spacing and count) are the launch's to find.
      if (!keyed)
        return std::nullopt;
      keyed->digitOfKey[-1 - var] = coverage.digits.size();
    } else if (var < kFirstLane) {
      std::optional<SymbolicInt> programs;
      if (var == 0 && programLoop) {
        programs = symbolize(programLoop.getUpperBound());
      } else {
        SymbolicInt grid;
        grid.op = Op::NumPrograms;
        grid.value = var;
        programs = grid;
      }
      if (!programs)
        return std::nullopt;
      digit.extent = *programs;
    } else if (var < kFirstIv) {
      if (!type)
        return std::nullopt;
      digit.extent = SymbolicInt::constant(type.getShape()[var - kFirstLane]);
    } else {
      bool isIterationNumber = access.vars().isIterationNumber(var);
      scf::ForOp loop = access.vars().loopOf(var);
      std::optional<int64_t> step = constantInt(loop.getStep());
      std::optional<SymbolicInt> lower = symbolize(loop.getLowerBound());
      std::optional<SymbolicInt> upper = symbolize(loop.getUpperBound());
      if (!step || *step <= 0 || !lower || !upper)
        return std::nullopt;
      if (!isIterationNumber) {
        // iv = lb + k * step: only lb = 0 adds nothing uniform.
        if (constantInt(loop.getLowerBound()) != 0)
          return std::nullopt;
        digit.coefficient =
            SymbolicInt::of(Op::Mul, {digit.coefficient, SymbolicInt::constant(*step)});
      }
      // k in [0, cdiv(ub - lb, step))
      digit.extent = SymbolicInt::of(
          Op::DivS, {SymbolicInt::of(Op::Add, {SymbolicInt::of(Op::Sub, {*upper, *lower}),
                                               SymbolicInt::constant(*step - 1)}),
                     SymbolicInt::constant(*step)});
    }
    digitOf[var] = coverage.digits.size();
    coverage.digits.push_back(std::move(digit));
  }

  SmallVector<std::pair<Affine, Value>> clamps;
  SmallVector<int> conditionKeys, nonNegativeKeys;
  if (!clampsOf(maskConjuncts(access, mask), clamps, conditionKeys, nonNegativeKeys))
    return std::nullopt;
  // The launch checks that the values of every key the offsets use are
  // 0, s, 2s, ... (see _regrid._reaches_each_once): those are >= 0.
  for (int key : nonNegativeKeys)
    if (!keyed || keyed->digitOfKey[key] < 0)
      return std::nullopt;
  // `affine < bound` over the digits; nullopt unless each term is a digit's
  // with a constant coefficient >= 0.
  auto clampOf = [&](const Affine &affine, Value bound) -> std::optional<ShadowCoverage::Clamp> {
    ShadowCoverage::Clamp clamp;
    std::optional<SymbolicInt> symbol = symbolize(bound);
    if (!symbol || affine.hasUniform)
      return std::nullopt;
    clamp.bound = *symbol;
    for (auto &[var, coefficient] : affine.terms) {
      auto it = digitOf.find(var);
      if (it == digitOf.end() || !coefficient.isConstant() || coefficient.constant < 0)
        return std::nullopt;
      int64_t k = coefficient.constant;
      // The clamp counts iterations of `iv` itself: k * iv = k * step * index.
      if (var >= kFirstIv && !access.vars().isIterationNumber(var))
        k *= *constantInt(access.vars().loopOf(var).getStep());
      clamp.terms.push_back({it->second, k});
    }
    return clamp;
  };
  for (auto &[affine, bound] : clamps) {
    std::optional<ShadowCoverage::Clamp> clamp = clampOf(affine, bound);
    if (!clamp)
      return std::nullopt;
    coverage.clamps.push_back(std::move(*clamp));
  }
  for (const TileRemainder &remainder : wrapping) {
    if (!remainder.lanesKnown)
      return std::nullopt;
    // (the dividend's lanes as the pointer's: the wrap bounds those digits)
    std::optional<Affine> dividend = access.affine(remainder.op->getOperand(0));
    if (dividend)
      for (unsigned axis : remainder.expandAxes)
        dividend = expandLanes(*dividend, axis);
    std::optional<Value> divisor = access.uniform(remainder.op->getOperand(1));
    std::optional<ShadowCoverage::Clamp> wrap =
        dividend && divisor ? clampOf(*dividend, *divisor) : std::nullopt;
    if (!wrap)
      return std::nullopt;
    coverage.wraps.push_back(std::move(*wrap));
  }
  if (keyed)
    keyed->conditionKeys.assign(conditionKeys.begin(), conditionKeys.end());
  return coverage;
}

} // namespace tritonad
