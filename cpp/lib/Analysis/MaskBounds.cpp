// Bounds on a comparison's sides over a launch: the lanes contribute their
// extremes, the scalars are evaluated by the launch path per program, at the
// first and the last iteration of each loop they vary in (they are affine in
// the induction variables, so those are where the extremes are).
#include "tritonad/Analysis/MaskBounds.h"

#include "tritonad/Analysis/AccessAnalysis.h"
#include "tritonad/Dialect/Triton/Dialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

using Op = SymbolicInt::Op;

SymbolicInt binary(Op op, SymbolicInt lhs, SymbolicInt rhs) {
  return SymbolicInt::of(op, {std::move(lhs), std::move(rhs)});
}

// constant + sum factor * scalar + sum_d lanes[d] * index_d, index_d in
// [0, shape[d]): a value of the comparison's operand, per lane.
struct LaneAffine {
  int64_t constant = 0;
  SmallVector<std::pair<int64_t, Value>> scalars;
  SmallVector<int64_t> lanes;

  void addScaled(const LaneAffine &other, int64_t factor) {
    constant += factor * other.constant;
    for (auto [f, scalar] : other.scalars)
      scalars.push_back({factor * f, scalar});
    for (auto [index, lane] : llvm::enumerate(other.lanes))
      lanes[index] += factor * lane;
  }
  bool isConstant() const {
    return scalars.empty() && llvm::all_of(lanes, [](int64_t c) { return c == 0; });
  }
};

constexpr int kMaxDepth = 32;
constexpr int64_t kMaxFactor = int64_t(1) << 32; // (keeps the sums far from int64's limits)
constexpr size_t kMaxLoops = 2;                  // (2^loops evaluations per side)

std::optional<int64_t> constantOf(Value value) {
  APInt constant;
  if (!matchPattern(value, m_ConstantInt(&constant)) || constant.getBitWidth() > 64)
    return std::nullopt;
  return constant.getSExtValue();
}

std::optional<LaneAffine> decompose(Value value, int depth = 0) {
  if (depth > kMaxDepth)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(value.getType());
  LaneAffine result;
  result.lanes.assign(type ? type.getRank() : 0, 0);
  if (std::optional<int64_t> constant = constantOf(value)) {
    if (std::abs(*constant) > kMaxFactor)
      return std::nullopt;
    result.constant = *constant;
    return result;
  }
  if (!type) {
    result.scalars.push_back({1, value}); // (symbolized by the caller)
    return result;
  }
  Operation *def = value.getDefiningOp();
  if (!def)
    return std::nullopt; // (a tensor carried by a loop)
  if (auto splat = dyn_cast<tt::SplatOp>(def)) {
    result.scalars.push_back({1, splat.getSrc()});
    return result;
  }
  if (auto range = dyn_cast<tt::MakeRangeOp>(def)) {
    result.constant = range.getStart();
    result.lanes[0] = 1;
    return result;
  }
  if (auto expand = dyn_cast<tt::ExpandDimsOp>(def)) {
    std::optional<LaneAffine> source = decompose(expand.getSrc(), depth + 1);
    if (!source)
      return std::nullopt;
    source->lanes.insert(source->lanes.begin() + expand.getAxis(), 0);
    return source;
  }
  if (auto broadcast = dyn_cast<tt::BroadcastOp>(def)) {
    std::optional<LaneAffine> source = decompose(broadcast.getSrc(), depth + 1);
    if (!source)
      return std::nullopt;
    // (a dimension of extent 1 has lane index 0 only: along a broadcast one
    // the value does not vary)
    auto sourceShape = cast<RankedTensorType>(broadcast.getSrc().getType()).getShape();
    for (auto [index, extent] : llvm::enumerate(sourceShape))
      if (extent == 1)
        source->lanes[index] = 0;
    return source;
  }
  if (isa<arith::AddIOp, arith::SubIOp>(def)) {
    std::optional<LaneAffine> lhs = decompose(def->getOperand(0), depth + 1);
    std::optional<LaneAffine> rhs = decompose(def->getOperand(1), depth + 1);
    if (!lhs || !rhs)
      return std::nullopt;
    lhs->addScaled(*rhs, isa<arith::AddIOp>(def) ? 1 : -1);
    return lhs;
  }
  if (isa<arith::MulIOp>(def)) {
    std::optional<LaneAffine> lhs = decompose(def->getOperand(0), depth + 1);
    std::optional<LaneAffine> rhs = decompose(def->getOperand(1), depth + 1);
    if (!lhs || !rhs)
      return std::nullopt;
    if (lhs->isConstant())
      std::swap(lhs, rhs);
    if (!rhs->isConstant() || std::abs(rhs->constant) > kMaxFactor)
      return std::nullopt; // (a product of two varying values is not affine)
    result.addScaled(*lhs, rhs->constant);
    return result;
  }
  return std::nullopt;
}

SymbolicInt marker(size_t loop) {
  SymbolicInt result;
  result.op = Op::Argument;
  result.name = "\x01loop" + std::to_string(loop); // (no kernel argument has this name)
  return result;
}

bool mentions(const SymbolicInt &expression, const std::string &name) {
  if (expression.op == Op::Argument)
    return expression.name == name;
  return llvm::any_of(expression.operands,
                      [&](const SymbolicInt &operand) { return mentions(operand, name); });
}

bool readsProgramId(const SymbolicInt &expression) {
  return expression.op == Op::ProgramId ||
         llvm::any_of(expression.operands, [](const SymbolicInt &operand) {
           return readsProgramId(operand);
         });
}

// Whether `expression` is affine in the marker `name`: it reaches the marker
// only through sums, differences and products with a factor free of it.
bool affineIn(const SymbolicInt &expression, const std::string &name) {
  if (!mentions(expression, name))
    return true;
  switch (expression.op) {
  case Op::Argument:
    return true;
  case Op::Add:
  case Op::Sub:
    return affineIn(expression.operands[0], name) && affineIn(expression.operands[1], name);
  case Op::Mul:
    return (!mentions(expression.operands[0], name) && affineIn(expression.operands[1], name)) ||
           (!mentions(expression.operands[1], name) && affineIn(expression.operands[0], name));
  default:
    return false;
  }
}

SymbolicInt substitute(const SymbolicInt &expression, const std::string &name,
                       const SymbolicInt &by) {
  if (expression.op == Op::Argument && expression.name == name)
    return by;
  SymbolicInt result = expression;
  for (SymbolicInt &operand : result.operands)
    operand = substitute(operand, name, by);
  return result;
}

// `expression` with its constant subexpressions computed (the lanes' and the
// type's bounds are constants: most range checks fold away).
SymbolicInt folded(SymbolicInt expression) {
  for (SymbolicInt &operand : expression.operands)
    operand = folded(std::move(operand));
  if (expression.operands.size() != 2)
    return expression;
  const SymbolicInt &lhs = expression.operands[0], &rhs = expression.operands[1];
  bool lhsConstant = lhs.op == Op::Constant, rhsConstant = rhs.op == Op::Constant;
  if (expression.op == Op::And && (lhsConstant || rhsConstant)) {
    const SymbolicInt &known = lhsConstant ? lhs : rhs, &other = lhsConstant ? rhs : lhs;
    return known.value == 0 ? SymbolicInt::constant(0) : SymbolicInt(other);
  }
  // (x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1)
  bool identityRight = rhsConstant && ((rhs.value == 0 && (expression.op == Op::Add ||
                                                           expression.op == Op::Sub)) ||
                                       (rhs.value == 1 && (expression.op == Op::Mul ||
                                                           expression.op == Op::DivS)));
  bool identityLeft = lhsConstant && ((lhs.value == 0 && expression.op == Op::Add) ||
                                      (lhs.value == 1 && expression.op == Op::Mul));
  if (identityRight && !lhsConstant)
    return lhs;
  if (identityLeft && !rhsConstant)
    return rhs;
  if (!lhsConstant || !rhsConstant)
    return expression;
  int64_t a = lhs.value, b = rhs.value, value;
  switch (expression.op) {
  case Op::Add:
    if (__builtin_add_overflow(a, b, &value))
      return expression;
    break;
  case Op::Sub:
    if (__builtin_sub_overflow(a, b, &value))
      return expression;
    break;
  case Op::Mul:
    if (__builtin_mul_overflow(a, b, &value))
      return expression;
    break;
  case Op::Le: value = a <= b; break;
  case Op::Ge: value = a >= b; break;
  default: return expression;
  }
  return SymbolicInt::constant(value);
}

// A side of the comparison: its lanes' extremes and its scalars symbolized,
// induction variables as markers.
struct Side {
  int64_t constant = 0;
  SmallVector<std::pair<int64_t, SymbolicInt>> scalars;
  int64_t laneMin = 0, laneMax = 0;

  // A kernel argument as it is: its type bounds it already.
  bool isArgument() const {
    return constant == 0 && laneMin == 0 && laneMax == 0 && scalars.size() == 1 &&
           scalars[0].first == 1 && scalars[0].second.op == Op::Argument &&
           scalars[0].second.name[0] != '\x01';
  }
};

} // namespace

std::optional<SymbolicInt> alwaysTrueCondition(arith::CmpIOp cmp) {
  bool strict;
  bool lessThan;
  switch (cmp.getPredicate()) {
  case arith::CmpIPredicate::slt: strict = true; lessThan = true; break;
  case arith::CmpIPredicate::sle: strict = false; lessThan = true; break;
  case arith::CmpIPredicate::sgt: strict = true; lessThan = false; break;
  case arith::CmpIPredicate::sge: strict = false; lessThan = false; break;
  default: return std::nullopt; // (equalities are not bounds; unsigned not modelled)
  }
  auto integer = dyn_cast<IntegerType>(getElementTypeOrSelf(cmp.getLhs().getType()));
  if (!integer || integer.getWidth() < 8 || integer.getWidth() > 64)
    return std::nullopt; // (i1, index: not offsets)
  unsigned width = integer.getWidth();
  auto shape = isa<RankedTensorType>(cmp.getLhs().getType())
                   ? cast<RankedTensorType>(cmp.getLhs().getType()).getShape()
                   : ArrayRef<int64_t>{};

  // The loops whose induction variables the scalars use, in order of meeting.
  SmallVector<scf::ForOp> loops;
  auto inductionMarker = [&](BlockArgument arg) -> std::optional<SymbolicInt> {
    auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
    if (!loop || loop.getInductionVar() != arg)
      return std::nullopt; // (a value carried by a loop: not bounded here)
    auto found = llvm::find(loops, loop);
    if (found == loops.end()) {
      if (loops.size() == kMaxLoops)
        return std::nullopt;
      loops.push_back(loop);
      found = loops.end() - 1;
    }
    return marker(found - loops.begin());
  };
  auto sideOf = [&](Value operand) -> std::optional<Side> {
    std::optional<LaneAffine> affine = decompose(operand);
    if (!affine)
      return std::nullopt;
    Side side;
    side.constant = affine->constant;
    for (auto [factor, scalar] : affine->scalars) {
      std::optional<SymbolicInt> symbol = symbolize(scalar, /*programIds=*/true, inductionMarker);
      if (!symbol)
        return std::nullopt;
      side.scalars.push_back({factor, std::move(*symbol)});
    }
    for (auto [dim, coefficient] : llvm::enumerate(affine->lanes)) {
      int64_t reach = coefficient * (shape[dim] - 1);
      (reach > 0 ? side.laneMax : side.laneMin) += reach;
    }
    return side;
  };
  std::optional<Side> lhs = sideOf(cmp.getLhs());
  std::optional<Side> rhs = sideOf(cmp.getRhs());
  if (!lhs || !rhs)
    return std::nullopt;
  // A comparison of values uniform over the launch (a kernel's run-time
  // check that strides keep tiles apart) is left alone: it costs one scalar
  // test, and where it is false, tying the other masks to it would keep
  // them all.
  auto readsProgram = [](const Side &side) {
    return side.laneMin != 0 || side.laneMax != 0 ||
           llvm::any_of(side.scalars, [](const auto &term) { return readsProgramId(term.second); });
  };
  if (loops.empty() && !readsProgram(*lhs) && !readsProgram(*rhs))
    return std::nullopt;
  for (size_t loop = 0; loop < loops.size(); ++loop)
    for (const Side *side : {&*lhs, &*rhs})
      for (const auto &[factor, symbol] : side->scalars)
        if (!affineIn(symbol, marker(loop).name))
          return std::nullopt;

  // Each loop's first and last induction values (its bounds may depend on
  // the program, not on another loop).
  SmallVector<std::array<SymbolicInt, 2>> ends;
  std::vector<SymbolicInt> conjuncts;
  for (scf::ForOp loop : loops) {
    std::optional<SymbolicInt> lower = symbolize(loop.getLowerBound(), true);
    std::optional<SymbolicInt> upper = symbolize(loop.getUpperBound(), true);
    std::optional<SymbolicInt> step = symbolize(loop.getStep(), true);
    if (!lower || !upper || !step)
      return std::nullopt;
    std::optional<int64_t> constantStep = constantOf(loop.getStep());
    if (!constantStep)
      conjuncts.push_back(binary(Op::Ge, *step, SymbolicInt::constant(1)));
    else if (*constantStep <= 0)
      return std::nullopt;
    // last = lower + (ceil((upper - lower) / step) - 1) * step; where the loop
    // runs no iteration its comparisons are never evaluated, and any value
    // is as good.
    SymbolicInt trips = binary(
        Op::DivS,
        binary(Op::Add, binary(Op::Sub, *upper, *lower),
               binary(Op::Sub, *step, SymbolicInt::constant(1))),
        *step);
    SymbolicInt last = binary(
        Op::Add, *lower,
        binary(Op::Mul, binary(Op::Sub, trips, SymbolicInt::constant(1)), *step));
    ends.push_back({*lower, last});
  }

  auto valueAt = [&](const Side &side, unsigned corner, int64_t lanes) {
    SymbolicInt sum = SymbolicInt::constant(side.constant + lanes);
    for (const auto &[factor, symbol] : side.scalars) {
      SymbolicInt term = symbol;
      for (size_t loop = 0; loop < loops.size(); ++loop)
        term = substitute(term, marker(loop).name, ends[loop][(corner >> loop) & 1]);
      sum = binary(Op::Add, std::move(sum),
                   factor == 1 ? term : binary(Op::Mul, SymbolicInt::constant(factor), term));
    }
    return sum;
  };
  // small - large <= -1 (strict) or <= 0, at its largest: small's largest
  // lanes, large's smallest.
  const Side &small = lessThan ? *lhs : *rhs;
  const Side &large = lessThan ? *rhs : *lhs;
  int64_t typeMin = width == 64 ? INT64_MIN : -(int64_t(1) << (width - 1));
  int64_t typeMax = width == 64 ? INT64_MAX : (int64_t(1) << (width - 1)) - 1;
  for (unsigned corner = 0; corner < (1u << loops.size()); ++corner) {
    // (each side's least and largest value at this corner)
    std::array<SymbolicInt, 2> smallRange = {valueAt(small, corner, small.laneMin),
                                             valueAt(small, corner, small.laneMax)};
    std::array<SymbolicInt, 2> largeRange = {valueAt(large, corner, large.laneMin),
                                             valueAt(large, corner, large.laneMax)};
    conjuncts.push_back(binary(Op::Le, binary(Op::Sub, smallRange[1], largeRange[0]),
                               SymbolicInt::constant(strict ? -1 : 0)));
    if (width == 64)
      continue; // (int64 arithmetic on the host wraps as the device's does)
    for (auto [side, range] : {std::pair{&small, &smallRange}, std::pair{&large, &largeRange}}) {
      if (side->isArgument())
        continue;
      conjuncts.push_back(binary(Op::Ge, (*range)[0], SymbolicInt::constant(typeMin)));
      conjuncts.push_back(binary(Op::Le, (*range)[1], SymbolicInt::constant(typeMax)));
    }
  }
  SymbolicInt condition = std::move(conjuncts.front());
  for (size_t i = 1; i < conjuncts.size(); ++i)
    condition = binary(Op::And, std::move(condition), std::move(conjuncts[i]));
  condition = folded(std::move(condition));
  if (condition.op == Op::Constant && condition.value == 0)
    return std::nullopt; // (false at every launch: a real mask, such as a causal one)
  return condition;
}

std::string symbolicText(const SymbolicInt &expression) {
  switch (expression.op) {
  case Op::Constant: return std::to_string(expression.value);
  case Op::Argument: return expression.name;
  case Op::NumPrograms: return "programs" + std::to_string(expression.value);
  case Op::ProgramId: return "pid" + std::to_string(expression.value);
  case Op::ProgramSlot: return "slot";
  default: break;
  }
  static const char *names[] = {"", "", "", "", "+", "-", "*", "/", "%", "min", "max",
                                "<", "<=", ">", ">=", "==", "!=", "&", "|", "^", "select"};
  const char *name = names[static_cast<int>(expression.op)];
  if (expression.operands.size() == 2 && expression.op != Op::Min && expression.op != Op::Max)
    return "(" + symbolicText(expression.operands[0]) + " " + name + " " +
           symbolicText(expression.operands[1]) + ")";
  std::string text = std::string(name) + "(";
  for (auto [index, operand] : llvm::enumerate(expression.operands))
    text += (index ? ", " : "") + symbolicText(operand);
  return text + ")";
}

} // namespace tritonad
