#include "tritonad/Analysis/AccessAnalysis.h"

#include "tritonad/Analysis/Dependence.h"
#include "tritonad/Dialect/Triton/Dialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"


#include <map>

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

// constant * product(factors): a coefficient of an address term. Factors are
// primal scalars that are the same for every program and lane.
struct Coefficient {
  int64_t constant = 1;
  SmallVector<Value, 2> factors;
  bool isConstant() const { return factors.empty(); }
};

// Variables an address depends on: the program id along axis k (0..2), or the
// lane index along tensor dim d (3 + d).
using Variable = int;
constexpr Variable kFirstLane = 3;
// Induction variables of enclosing scf.for loops: kFirstIv + position in
// InductionVariables::all. Iterations of one program run in sequence, so they
// may revisit addresses; only programs must stay apart.
constexpr Variable kFirstIv = 1000;

// The loop variables one analysis has met, passed explicitly through the
// matcher (no global state: Triton compiles kernels on several threads).
struct InductionVariables {
  // An induction variable, or the zero-based iteration number of its loop
  // ((iv - lb) / step, as the pointer-induction rewrite computes it).
  SmallVector<std::pair<Value, bool>> all;
  Variable variableOf(Value iv, bool iterationNumber = false) {
    for (auto [i, known] : llvm::enumerate(all))
      if (known == std::make_pair(iv, iterationNumber))
        return kFirstIv + i;
    all.push_back({iv, iterationNumber});
    return kFirstIv + all.size() - 1;
  }
  scf::ForOp loopOf(Variable var) const {
    return cast<scf::ForOp>(cast<BlockArgument>(all[var - kFirstIv].first).getOwner()->getParentOp());
  }
  // Scalars treated as variables (-1 - k for keys[k]): the values a
  // re-parallelized accumulation's addresses take from its group's key.
  ArrayRef<Value> keys;
  // Keys (i1) met as whole conjuncts of a mask (`splat(key)`).
  SmallVector<int> conditionKeys;
  std::optional<Variable> keyVariable(Value value) const {
    auto it = llvm::find(keys, value);
    if (it == keys.end())
      return std::nullopt;
    return -1 - static_cast<Variable>(it - keys.begin());
  }
};

// offset = sum(coefficient_v * v) + (uniform part, irrelevant to collisions).
struct Affine {
  std::map<Variable, Coefficient> terms;
  bool hasUniform = false; // a non-zero uniform part exists
};

std::optional<int64_t> constantInt(Value value) {
  APInt result;
  if (matchPattern(value, m_ConstantInt(&result)))
    return result.getSExtValue();
  return std::nullopt;
}

// A scalar that is uniform across programs and lanes (a constant, a function
// argument, arithmetic on those), possibly splatted.
std::optional<Value> uniformScalar(Value value) {
  if (auto splat = value.getDefiningOp<tt::SplatOp>())
    value = splat.getSrc();
  if (isa<RankedTensorType>(value.getType())) {
    if (auto c = value.getDefiningOp<arith::ConstantOp>())
      if (auto dense = dyn_cast<SplatElementsAttr>(c.getValue()))
        return value; // splat constant: handled through constantInt on the tensor
    return std::nullopt;
  }
  // Function arguments are uniform; loop induction variables and carried
  // values are not (programs may be at different iterations).
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (isa<tt::FuncOp>(arg.getOwner()->getParentOp()))
      return value;
    return std::nullopt;
  }
  Operation *def = value.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (isa<arith::ConstantOp>(def))
    return value;
  if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::ExtSIOp, arith::ExtUIOp,
          arith::TruncIOp, arith::DivSIOp, arith::MaxSIOp, arith::MinSIOp>(def) &&
      llvm::all_of(def->getOperands(), [](Value v) { return uniformScalar(v).has_value(); }))
    return value;
  return std::nullopt;
}

std::optional<Affine> analyze(InductionVariables &ivs, Value value);

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
  return result;
}

std::optional<Affine> combine(const Affine &lhs, const Affine &rhs, int64_t sign) {
  Affine result = lhs;
  result.hasUniform |= rhs.hasUniform;
  for (const auto &[var, coefficient] : rhs.terms) {
    auto it = result.terms.find(var);
    if (it == result.terms.end()) {
      Coefficient c = coefficient;
      c.constant *= sign;
      result.terms[var] = c;
      continue;
    }
    // Two terms of one variable only combine when both are plain constants.
    if (!it->second.isConstant() || !coefficient.isConstant())
      return std::nullopt;
    it->second.constant += sign * coefficient.constant;
    if (it->second.constant == 0)
      result.terms.erase(it);
  }
  return result;
}

Value stripExtensions(Value value) {
  while (auto ext = value.getDefiningOp<arith::ExtSIOp>())
    value = ext.getIn();
  return value;
}

// `(iv - lb) / step` (or `iv / step` from 0) of an scf.for: the iteration
// number, exact because iv = lb + k * step.
std::optional<Affine> iterationNumber(InductionVariables &ivs, arith::DivSIOp divide) {
  Value numerator = stripExtensions(divide.getLhs());
  Value lowerBound;
  if (auto sub = numerator.getDefiningOp<arith::SubIOp>()) {
    lowerBound = stripExtensions(sub.getRhs());
    numerator = stripExtensions(sub.getLhs());
  }
  auto iv = dyn_cast<BlockArgument>(numerator);
  auto loop = iv ? dyn_cast<scf::ForOp>(iv.getOwner()->getParentOp()) : scf::ForOp();
  if (!loop || iv != loop.getInductionVar())
    return std::nullopt;
  auto same = [](Value a, Value b) {
    std::optional<int64_t> ca = constantInt(a), cb = constantInt(b);
    return stripExtensions(a) == stripExtensions(b) || (ca && cb && *ca == *cb);
  };
  bool fromLowerBound = lowerBound ? same(lowerBound, loop.getLowerBound())
                                   : constantInt(loop.getLowerBound()) == 0;
  std::optional<int64_t> step = constantInt(loop.getStep());
  if (!fromLowerBound || !same(divide.getRhs(), loop.getStep()) || (step && *step <= 0))
    return std::nullopt;
  Affine affine;
  affine.terms[ivs.variableOf(iv, /*iterationNumber=*/true)] = Coefficient{};
  return affine;
}

std::optional<Affine> analyze(InductionVariables &ivs, Value value) {
  if (std::optional<Variable> key = ivs.keyVariable(value)) {
    Affine affine;
    affine.terms[*key] = Coefficient{};
    return affine;
  }
  if (std::optional<Value> uniform = uniformScalar(value)) {
    Affine affine;
    std::optional<int64_t> c = constantInt(*uniform);
    affine.hasUniform = !c || *c != 0;
    return affine;
  }
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
    if (loop && arg == loop.getInductionVar() && isProgramLoop(loop)) {
      // A coarsened program's virtual program ids: distinct across all
      // iterations of all programs, like the program id they replace.
      Affine affine;
      affine.terms[0] = Coefficient{};
      return affine;
    }
    if (loop && arg == loop.getInductionVar() &&
        (!constantInt(loop.getStep()) || *constantInt(loop.getStep()) > 0)) {
      Affine affine;
      affine.terms[ivs.variableOf(arg)] = Coefficient{};
      return affine;
    }
    return std::nullopt;
  }
  Operation *def = value.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (auto pid = dyn_cast<tt::GetProgramIdOp>(def)) {
    Affine affine;
    affine.terms[static_cast<int>(pid.getAxis())] = Coefficient{};
    return affine;
  }
  if (auto range = dyn_cast<tt::MakeRangeOp>(def)) {
    Affine affine;
    affine.terms[kFirstLane] = Coefficient{};
    affine.hasUniform = range.getStartAttr().getInt() != 0;
    return affine;
  }
  if (auto splat = dyn_cast<tt::SplatOp>(def))
    return analyze(ivs, splat.getSrc());
  if (auto broadcast = dyn_cast<tt::BroadcastOp>(def))
    return analyze(ivs, broadcast.getSrc());
  if (auto expand = dyn_cast<tt::ExpandDimsOp>(def)) {
    std::optional<Affine> inner = analyze(ivs, expand.getSrc());
    if (!inner)
      return std::nullopt;
    Affine result;
    result.hasUniform = inner->hasUniform;
    for (auto &[var, coefficient] : inner->terms) {
      Variable shifted = var;
      if (var >= kFirstLane && var < kFirstIv &&
          var - kFirstLane >= static_cast<int>(expand.getAxis()))
        shifted = var + 1;
      result.terms[shifted] = coefficient;
    }
    return result;
  }
  if (isa<arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp>(def))
    return analyze(ivs, def->getOperand(0));
  if (isa<arith::AddIOp, arith::SubIOp>(def)) {
    std::optional<Affine> lhs = analyze(ivs, def->getOperand(0));
    std::optional<Affine> rhs = analyze(ivs, def->getOperand(1));
    if (!lhs || !rhs)
      return std::nullopt;
    return combine(*lhs, *rhs, isa<arith::AddIOp>(def) ? 1 : -1);
  }
  if (auto divide = dyn_cast<arith::DivSIOp>(def))
    return iterationNumber(ivs, divide);
  if (isa<arith::MulIOp>(def)) {
    for (int i = 0; i < 2; ++i) {
      std::optional<Value> factor = uniformScalar(def->getOperand(1 - i));
      if (!factor)
        continue;
      std::optional<Affine> other = analyze(ivs, def->getOperand(i));
      if (!other)
        return std::nullopt;
      Value scalarFactor = *factor;
      if (isa<RankedTensorType>(scalarFactor.getType())) {
        std::optional<int64_t> c = constantInt(scalarFactor);
        if (!c)
          return std::nullopt;
        Affine scaled = *other;
        for (auto &[var, coefficient] : scaled.terms)
          coefficient.constant *= *c;
        if (*c == 0)
          scaled.terms.clear();
        return scaled;
      }
      return scale(*other, scalarFactor);
    }
  }
  return std::nullopt;
}

// Masks `E < bound` where E is a sum of lanes and induction variables with
// non-negative constant coefficients and no other part (so E >= 0 when the
// loops start at >= 0): every accessed E lies in [0, bound).
struct RangeBound {
  Affine expression;
  Value bound;
};

bool isNonNegativeSum(InductionVariables &ivs, const Affine &affine) {
  if (affine.hasUniform || affine.terms.empty())
    return false;
  for (auto &[var, c] : affine.terms) {
    if (var < kFirstLane || !c.isConstant() || c.constant < 0)
      return false;
    if (var >= kFirstIv) {
      scf::ForOp loop = ivs.loopOf(var);
      std::optional<int64_t> lower = constantInt(loop.getLowerBound());
      if (!lower || *lower < 0)
        return false;
    }
  }
  return true;
}

void collectRangeBounds(InductionVariables &ivs, Value mask, int shift,
                        SmallVectorImpl<RangeBound> &bounds) {
  if (!mask)
    return;
  Operation *def = mask.getDefiningOp();
  if (!def)
    return;
  if (auto andOp = dyn_cast<arith::AndIOp>(def)) {
    collectRangeBounds(ivs, andOp.getLhs(), shift, bounds);
    collectRangeBounds(ivs, andOp.getRhs(), shift, bounds);
    return;
  }
  if (auto broadcast = dyn_cast<tt::BroadcastOp>(def))
    return collectRangeBounds(ivs, broadcast.getSrc(), shift, bounds);
  auto cmp = dyn_cast<arith::CmpIOp>(def);
  if (!cmp || (cmp.getPredicate() != arith::CmpIPredicate::slt &&
               cmp.getPredicate() != arith::CmpIPredicate::ult))
    return;
  std::optional<Affine> lhs = analyze(ivs, cmp.getLhs());
  std::optional<Value> bound = uniformScalar(cmp.getRhs());
  if (lhs && bound && isNonNegativeSum(ivs, *lhs))
    bounds.push_back({*lhs, *bound});
}

// Upper bounds on lane indices implied by the mask: `lane_d < bound` with a
// uniform scalar bound, through andi/expand_dims/broadcast.
void collectLaneBounds(InductionVariables &ivs, Value mask, std::map<int, Value> &bounds) {
  if (!mask)
    return;
  Operation *def = mask.getDefiningOp();
  if (!def)
    return;
  if (auto andOp = dyn_cast<arith::AndIOp>(def)) {
    collectLaneBounds(ivs, andOp.getLhs(), bounds);
    collectLaneBounds(ivs, andOp.getRhs(), bounds);
    return;
  }
  if (auto broadcast = dyn_cast<tt::BroadcastOp>(def))
    return collectLaneBounds(ivs, broadcast.getSrc(), bounds);
  if (auto expand = dyn_cast<tt::ExpandDimsOp>(def)) {
    std::map<int, Value> inner;
    collectLaneBounds(ivs, expand.getSrc(), inner);
    for (auto &[dim, bound] : inner)
      bounds[dim >= static_cast<int>(expand.getAxis()) ? dim + 1 : dim] = bound;
    return;
  }
  auto cmp = dyn_cast<arith::CmpIOp>(def);
  if (!cmp || (cmp.getPredicate() != arith::CmpIPredicate::slt &&
               cmp.getPredicate() != arith::CmpIPredicate::ult))
    return;
  std::optional<Affine> lane = analyze(ivs, cmp.getLhs());
  std::optional<Value> bound = uniformScalar(cmp.getRhs());
  if (!lane || !bound || lane->hasUniform || lane->terms.size() != 1)
    return;
  auto [var, coefficient] = *lane->terms.begin();
  if (var < kFirstLane || !coefficient.isConstant() || coefficient.constant != 1)
    return;
  bounds[var - kFirstLane] = *bound;
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

// Strips a pointer chain down to its offsets: base + sum(offsets).
std::optional<Affine> pointerOffsets(InductionVariables &ivs, Value ptr) {
  std::optional<Affine> offsets = Affine{};
  Value cursor = ptr;
  while (offsets) {
    Operation *def = cursor.getDefiningOp();
    if (!def)
      break; // the base pointer argument
    if (auto addptr = dyn_cast<tt::AddPtrOp>(def)) {
      std::optional<Affine> term = analyze(ivs, addptr.getOffset());
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

} // namespace

ExclusiveAccess analyzeExclusiveAccess(Value ptr, Value mask, ArrayRef<bool> usedAxes) {
  ExclusiveAccess result;
  InductionVariables ivs;
  std::optional<Affine> offsets = pointerOffsets(ivs, ptr);
  if (!offsets) {
    result.known = false;
    result.explanation = "addresses not analyzable";
    return result;
  }

  auto type = dyn_cast<RankedTensorType>(ptr.getType());
  ArrayRef<int64_t> shape = type ? type.getShape() : ArrayRef<int64_t>{};
  std::map<int, Value> bounds;
  collectLaneBounds(ivs, mask, bounds);

  using Op = UniformExpr::Op;
  // Digits of a mixed-radix number: (coefficient, extent). The address is
  // collision-free if, in order, each coefficient >= the span of the previous
  // digits: sum(coefficient_j * (extent_j - 1)) + 1.
  struct Digit {
    Coefficient coefficient;
    UniformExpr extent;
    std::optional<int64_t> constantExtent;
    int order;
    bool sequential = false;            // an induction variable: only widens the span
    std::optional<UniformExpr> clampTo; // after the sequential digits: span <= this bound
  };
  SmallVector<Digit> digits;
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
    if (auto bound = bounds.find(dim); bound != bounds.end()) {
      digit.extent = binaryExpr(Op::Min, digit.extent, scalarExpr(bound->second));
      digit.constantExtent = std::nullopt;
    }
    // Constant coefficients first (ascending), then runtime strides from the
    // innermost dim outwards.
    digit.order = it->second.isConstant() ? 0 : 1000 - static_cast<int>(dim);
    digits.push_back(digit);
  }
  // Induction variables: iterations of a program run in sequence, so they may
  // revisit addresses; they widen what the program touches by
  // coefficient * (ub - lb).
  Affine inProgram; // the lane and induction-variable part of the offsets
  for (auto &[var, coefficient] : offsets->terms) {
    if (var >= kFirstLane)
      inProgram.terms[var] = coefficient;
    if (var < kFirstIv)
      continue;
    scf::ForOp loop = ivs.loopOf(var);
    if (!coefficient.isConstant() || coefficient.constant < 0) {
      result.known = false;
      result.explanation = "a loop moves the addresses by a runtime or negative stride";
      return result;
    }
    UniformExpr trip =
        binaryExpr(Op::Sub, scalarExpr(loop.getUpperBound()), scalarExpr(loop.getLowerBound()));
    Digit digit{coefficient, binaryExpr(Op::Add, trip, constantExpr(1)), std::nullopt, 1500};
    digit.sequential = true;
    digits.push_back(digit);
  }
  // A mask `E < bound` whose E is exactly the in-program offset, E >= 0,
  // keeps what a program touches within [0, bound).
  SmallVector<RangeBound> rangeBounds;
  collectRangeBounds(ivs, mask, 0, rangeBounds);
  for (const RangeBound &range : rangeBounds) {
    bool same = range.expression.terms.size() == inProgram.terms.size();
    for (auto &[var, c] : range.expression.terms) {
      auto it = inProgram.terms.find(var);
      same &= it != inProgram.terms.end() && it->second.isConstant() &&
              it->second.constant == c.constant;
    }
    if (same) {
      Digit clamp{Coefficient{}, constantExpr(0), std::nullopt, 1600};
      clamp.clampTo = scalarExpr(range.bound);
      digits.push_back(clamp);
      break;
    }
  }
  std::stable_sort(digits.begin(), digits.end(), [](const Digit &a, const Digit &b) {
    if (a.order != b.order)
      return a.order < b.order;
    return a.coefficient.constant < b.coefficient.constant;
  });
  for (int axis = 0; axis < 3; ++axis) {
    if (!usedAxes[axis])
      continue;
    UniformExpr programs;
    programs.op = Op::NumPrograms;
    programs.value = axis;
    auto it = offsets->terms.find(axis);
    if (it == offsets->terms.end()) {
      // Programs along an axis the address ignores all touch the same memory
      // unless there is only one of them.
      digits.push_back(Digit{Coefficient{0, {}}, programs, std::nullopt, 2000 + axis});
      continue;
    }
    digits.push_back(Digit{it->second, programs, std::nullopt, 2000 + axis});
  }

  UniformExpr ok;
  ok.op = Op::True;
  UniformExpr span = constantExpr(1);
  std::optional<int64_t> constantSpan = 1; // span of the digits so far, if static
  bool allStatic = true;
  for (const Digit &digit : digits) {
    if (digit.clampTo) {
      span = binaryExpr(Op::Min, span, *digit.clampTo);
      constantSpan = std::nullopt;
      continue;
    }
    UniformExpr extentMinusOne = binaryExpr(Op::Sub, digit.extent, constantExpr(1));
    if (digit.sequential) {
      UniformExpr grown =
          binaryExpr(Op::Mul, coefficientExpr(digit.coefficient), extentMinusOne);
      span = binaryExpr(Op::Add, span, grown);
      constantSpan = std::nullopt;
      allStatic = false;
      continue;
    }
    if (digit.coefficient.isConstant() && digit.coefficient.constant == 0) {
      // A used program axis the address ignores: needs exactly one program.
      ok = binaryExpr(Op::And, ok, binaryExpr(Op::LessEqual, digit.extent, constantExpr(1)));
      allStatic = false;
      constantSpan = std::nullopt;
      continue;
    }
    if (digit.coefficient.isConstant() && constantSpan) {
      if (digit.coefficient.constant < *constantSpan) {
        result.known = false;
        result.explanation = "lanes or programs overlap (stride " +
                             std::to_string(digit.coefficient.constant) + " < span " +
                             std::to_string(*constantSpan) + ")";
        return result;
      }
    } else {
      ok = binaryExpr(Op::And, ok,
                      binaryExpr(Op::GreaterEqual, coefficientExpr(digit.coefficient), span));
      allStatic = false;
    }
    span = binaryExpr(Op::Add, span,
                      binaryExpr(Op::Mul, coefficientExpr(digit.coefficient), extentMinusOne));
    if (constantSpan && digit.coefficient.isConstant() && digit.constantExtent)
      constantSpan = *constantSpan + digit.coefficient.constant * (*digit.constantExtent - 1);
    else
      constantSpan = std::nullopt;
  }
  result.condition = ok;
  if (allStatic) {
    result.known = true;
    result.explanation = "proven: offsets from program_id with strides >= the tile extent";
  } else {
    result.explanation = "checked at run time: strides, masks and grid keep tiles disjoint";
  }
  return result;
}

} // namespace tritonad

namespace tritonad {

bool iterationsTouchDisjointAddresses(Value ptr, scf::ForOp loop) {
  InductionVariables ivs;
  std::optional<Affine> offsets = pointerOffsets(ivs, ptr);
  std::optional<int64_t> step = constantInt(loop.getStep());
  if (!offsets || !step || *step <= 0)
    return false;
  auto type = dyn_cast<RankedTensorType>(ptr.getType());
  std::optional<Coefficient> move; // address change per iteration
  bool constantLanes = true;
  int64_t span = 1; // what one iteration touches: 1 + sum |c_d| * (size_d - 1)
  for (auto &[var, coefficient] : offsets->terms) {
    if (var < kFirstLane)
      continue; // program ids: fixed within a program
    if (var >= kFirstIv) {
      auto [iv, isIterationNumber] = ivs.all[var - kFirstIv];
      if (iv != loop.getInductionVar() || move)
        return false; // another loop moves the addresses as well
      move = coefficient;
      if (!isIterationNumber)
        move->constant *= *step;
      continue;
    }
    if (!type)
      return false;
    constantLanes &= coefficient.isConstant();
    span += std::abs(coefficient.constant) * (type.getShape()[var - kFirstLane] - 1);
  }
  if (!move)
    return false;
  if (constantLanes && move->isConstant() && std::abs(move->constant) >= span)
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
  for (auto &[var, coefficient] : offsets->terms) {
    if (var < kFirstLane || var >= kFirstIv || coefficient.constant == 0 ||
        factors(coefficient) != factors(*move) || move->constant % coefficient.constant != 0)
      continue;
    if (std::abs(move->constant / coefficient.constant) >= type.getShape()[var - kFirstLane])
      return true;
  }
  return false;
}

} // namespace tritonad

namespace tritonad {
namespace {

SymbolicInt symbolic(SymbolicInt::Op op, std::vector<SymbolicInt> operands) {
  SymbolicInt result;
  result.op = op;
  result.operands = std::move(operands);
  return result;
}

SymbolicInt symbolicConstant(int64_t value) {
  SymbolicInt result;
  result.value = value;
  return result;
}

std::optional<SymbolicInt> symbolicCoefficient(const Coefficient &coefficient) {
  SymbolicInt result = symbolicConstant(coefficient.constant);
  for (Value factor : coefficient.factors) {
    std::optional<SymbolicInt> symbol = symbolize(factor);
    if (!symbol)
      return std::nullopt;
    result = symbolic(SymbolicInt::Op::Mul, {result, *symbol});
  }
  return result;
}

// Conjuncts `affine < uniform` of a mask, lanes renumbered through
// expand_dims; false if any conjunct is something else.
bool collectClamps(InductionVariables &ivs, Value mask,
                   SmallVectorImpl<std::pair<Affine, Value>> &clamps) {
  Operation *def = mask.getDefiningOp();
  if (!def)
    return false;
  if (auto splat = dyn_cast<tt::SplatOp>(def))
    if (std::optional<Variable> key = ivs.keyVariable(splat.getSrc())) {
      ivs.conditionKeys.push_back(-1 - *key);
      return true;
    }
  if (auto andOp = dyn_cast<arith::AndIOp>(def))
    return collectClamps(ivs, andOp.getLhs(), clamps) && collectClamps(ivs, andOp.getRhs(), clamps);
  if (auto broadcast = dyn_cast<tt::BroadcastOp>(def))
    return collectClamps(ivs, broadcast.getSrc(), clamps);
  if (auto expand = dyn_cast<tt::ExpandDimsOp>(def)) {
    size_t first = clamps.size();
    if (!collectClamps(ivs, expand.getSrc(), clamps))
      return false;
    for (auto &clamp : llvm::drop_begin(clamps, first)) {
      Affine shifted;
      shifted.hasUniform = clamp.first.hasUniform;
      for (auto &[var, coefficient] : clamp.first.terms) {
        bool lane = var >= kFirstLane && var < kFirstIv;
        shifted.terms[lane && var - kFirstLane >= static_cast<int>(expand.getAxis()) ? var + 1
                                                                                      : var] =
            coefficient;
      }
      clamp.first = shifted;
    }
    return true;
  }
  auto cmp = dyn_cast<arith::CmpIOp>(def);
  if (!cmp)
    return false;
  Value lhs = cmp.getLhs(), rhs = cmp.getRhs();
  if (cmp.getPredicate() == arith::CmpIPredicate::sgt)
    std::swap(lhs, rhs);
  else if (cmp.getPredicate() != arith::CmpIPredicate::slt)
    return false;
  std::optional<Affine> affine = analyze(ivs, lhs);
  std::optional<Value> bound = uniformScalar(rhs);
  if (affine && !bound) {
    // lhs < u - x, as a loop's tail mask `offs < K - k * BLOCK`: lhs + x < u.
    Value difference = rhs;
    while (isa_and_nonnull<tt::SplatOp, tt::BroadcastOp>(difference.getDefiningOp()))
      difference = difference.getDefiningOp()->getOperand(0);
    if (auto sub = difference.getDefiningOp<arith::SubIOp>()) {
      std::optional<Affine> moved = analyze(ivs, sub.getRhs());
      bound = uniformScalar(sub.getLhs());
      affine = moved && bound ? combine(*affine, *moved, 1) : std::nullopt;
    }
  }
  if (!affine || !bound || affine->hasUniform)
    return false;
  clamps.push_back({*affine, *bound});
  return true;
}

} // namespace

std::string argumentName(BlockArgument arg) {
  if (auto name = dyn_cast<NameLoc>(arg.getLoc()))
    return name.getName().str();
  return "";
}

BlockArgument baseArgument(Value ptr) {
  while (Operation *def = ptr.getDefiningOp()) {
    if (!isa<tt::SplatOp, tt::AddPtrOp, tt::BroadcastOp, tt::ExpandDimsOp, tt::ReshapeOp,
             tt::TransOp>(def))
      return {};
    ptr = def->getOperand(0);
  }
  return dyn_cast<BlockArgument>(ptr);
}

std::optional<SymbolicInt> symbolize(Value scalar, bool programIds) {
  using Op = SymbolicInt::Op;
  if (auto splat = scalar.getDefiningOp<tt::SplatOp>())
    scalar = splat.getSrc();
  if (std::optional<int64_t> c = constantInt(scalar))
    return symbolicConstant(getElementTypeOrSelf(scalar.getType()).isInteger(1) ? *c != 0 : *c);
  if (isa<RankedTensorType>(scalar.getType()))
    return std::nullopt;
  if (auto arg = dyn_cast<BlockArgument>(scalar)) {
    auto name = dyn_cast<NameLoc>(arg.getLoc());
    if (!isa<tt::FuncOp>(arg.getOwner()->getParentOp()) || !name)
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
    return symbolize(def->getOperand(0), programIds);
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
    std::optional<SymbolicInt> symbol = symbolize(operand, programIds);
    if (!symbol)
      return std::nullopt;
    operands.push_back(std::move(*symbol));
  }
  return symbolic(*op, std::move(operands));
}

std::optional<ShadowCoverage> analyzeCoverage(Operation *access, Value ptr, Value mask,
                                              ArrayRef<Value> keys, KeyedDigits *keyed) {
  using Op = SymbolicInt::Op;
  scf::ForOp programLoop;
  for (Operation *parent = access->getParentOp(); !isa<tt::FuncOp>(parent);
       parent = parent->getParentOp()) {
    auto loop = dyn_cast<scf::ForOp>(parent);
    if (!loop)
      return std::nullopt; // a branch or a while loop: not every program writes
    if (isProgramLoop(loop))
      programLoop = loop;
  }
  InductionVariables ivs;
  ivs.keys = keys;
  std::optional<Affine> offsets = pointerOffsets(ivs, ptr);
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
    ShadowCoverage::Digit digit{*factor, symbolicConstant(1)};
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
      digit.extent = symbolicConstant(type.getShape()[var - kFirstLane]);
    } else {
      auto [iv, isIterationNumber] = ivs.all[var - kFirstIv];
      scf::ForOp loop = ivs.loopOf(var);
      std::optional<int64_t> step = constantInt(loop.getStep());
      std::optional<SymbolicInt> lower = symbolize(loop.getLowerBound());
      std::optional<SymbolicInt> upper = symbolize(loop.getUpperBound());
      if (!step || *step <= 0 || !lower || !upper)
        return std::nullopt;
      if (!isIterationNumber) {
        // iv = lb + k * step: only lb = 0 adds nothing uniform.
        if (constantInt(loop.getLowerBound()) != 0)
          return std::nullopt;
        digit.coefficient = symbolic(Op::Mul, {digit.coefficient, symbolicConstant(*step)});
      }
      // k in [0, cdiv(ub - lb, step))
      digit.extent = symbolic(
          Op::DivS, {symbolic(Op::Add, {symbolic(Op::Sub, {*upper, *lower}),
                                        symbolicConstant(*step - 1)}),
                     symbolicConstant(*step)});
    }
    digitOf[var] = coverage.digits.size();
    coverage.digits.push_back(std::move(digit));
  }

  SmallVector<std::pair<Affine, Value>> clamps;
  if (mask && !collectClamps(ivs, mask, clamps))
    return std::nullopt;
  for (auto &[affine, bound] : clamps) {
    ShadowCoverage::Clamp clamp;
    std::optional<SymbolicInt> symbol = symbolize(bound);
    if (!symbol)
      return std::nullopt;
    clamp.bound = *symbol;
    for (auto &[var, coefficient] : affine.terms) {
      auto it = digitOf.find(var);
      if (it == digitOf.end() || !coefficient.isConstant() || coefficient.constant < 0)
        return std::nullopt;
      int64_t k = coefficient.constant;
      // The clamp counts iterations of `iv` itself: k * iv = k * step * index.
      if (var >= kFirstIv && !ivs.all[var - kFirstIv].second)
        k *= *constantInt(ivs.loopOf(var).getStep());
      clamp.terms.push_back({it->second, k});
    }
    coverage.clamps.push_back(std::move(clamp));
  }
  if (keyed)
    keyed->conditionKeys.assign(ivs.conditionKeys.begin(), ivs.conditionKeys.end());
  return coverage;
}

} // namespace tritonad
