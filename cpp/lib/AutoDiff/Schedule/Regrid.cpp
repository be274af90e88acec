#include "tritonad/AutoDiff/Regrid.h"

#include "../TensorBuilders.h"
#include "tritonad/Analysis/AccessAnalysis.h"
#include "tritonad/AutoDiff/GradientUtils.h"
#include "tritonad/AutoDiff/KernelBackward.h"
#include "tritonad/AutoDiff/ZeroLanes.h"
#include "tritonad/LaunchContract.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

// The table's words (LaunchContract.h: kRegridHeader, kRegridPart), which
// python/tritonad/_regrid.py fills by name.
constexpr int kHeader = contract::wordsIn(contract::kRegridHeader);
constexpr int kMainProgramsWord = contract::wordOf(contract::kRegridHeader, "main_programs");
constexpr int kGridXWord = contract::wordOf(contract::kRegridHeader, "grid_x");
constexpr int kGridYWord = contract::wordOf(contract::kRegridHeader, "grid_y");
constexpr int kGridZWord = contract::wordOf(contract::kRegridHeader, "grid_z");
constexpr int kSlotsAtWord = contract::wordOf(contract::kRegridHeader, "slots_at");
constexpr int kPartHeader = contract::wordsIn(contract::kRegridPart);
using PartWord = int;
constexpr PartWord kPrograms = contract::wordOf(contract::kRegridPart, "programs");
constexpr PartWord kTrips = contract::wordOf(contract::kRegridPart, "trips");
constexpr PartWord kMembersAt = contract::wordOf(contract::kRegridPart, "members_at");
constexpr PartWord kStartsAt = contract::wordOf(contract::kRegridPart, "starts_at");
constexpr PartWord kKeysAt = contract::wordOf(contract::kRegridPart, "keys_at");
constexpr PartWord kAffine = contract::wordOf(contract::kRegridPart, "affine");
constexpr PartWord kBasesAt = contract::wordOf(contract::kRegridPart, "bases_at");
constexpr PartWord kDeltasAt = contract::wordOf(contract::kRegridPart, "deltas_at");
constexpr PartWord kPlain = contract::wordOf(contract::kRegridPart, "plain");
constexpr PartWord kCountsAt = contract::wordOf(contract::kRegridPart, "counts_at");
static_assert(kMainProgramsWord >= 0 && kGridXWord >= 0 && kGridYWord >= 0 &&
                  kGridZWord >= 0 && kSlotsAtWord >= 0,
              "a header word Regrid.cpp reads is not declared in LaunchContract.h");
static_assert(kPrograms >= 0 && kTrips >= 0 && kMembersAt >= 0 && kStartsAt >= 0 &&
                  kKeysAt >= 0 && kAffine >= 0 && kBasesAt >= 0 && kDeltasAt >= 0 && kPlain >= 0 &&
                  kCountsAt >= 0,
              "a part word Regrid.cpp reads is not declared in LaunchContract.h");

// Marks the branch between the forward's programs and the parts (for
// keepRegridPrograms; dropped with the exclusivity marks).
constexpr const char *kProgramsBranch = "tritonad.programs_branch";

std::string where(Operation *op) {
  return op->getName().getStringRef().str() + " at " + locationText(op->getLoc());
}

// The plain write KernelBackward pairs with an atomic accumulation whose
// exclusivity only the launch can decide (kWhenExclusive / kUnlessExclusive):
// the plain write where each address belongs to one program, the atomic where
// not, both under the mask they share and-ed with the condition or its
// negation.
struct ExclusiveTwin {
  tt::StoreOp store;              // the plain write
  arith::AddFOp sum;              // its read-add-write's sum (old + g), or null
  tt::LoadOp read;                // its read of the shadow, or null
  Value mask;                     // the mask the twins share, the condition left out
};

// A part sums every member whatever the condition, and writes each element
// once (plain where the launch proves it, else uncontended atomics): it takes
// the whole accumulation, so the twin and the condition go. Left in place,
// the forward's programs would compute the product again for the plain write
// (masked off where the condition is false: all of the work, none of the
// result), the part would not be the shadow's only writer (atomics), and the
// product's rounding, used twice, would not fuse into the part's sum.
// Planning: the twin of `atomic`, or why there is none to take.
FailureOr<ExclusiveTwin> planExclusiveTwin(tt::AtomicRMWOp atomic, std::string &why) {
  // predicate(): mask & splat(cond), or splat(cond) alone where there was no
  // mask (cleanup may have put the splat first)
  auto split = [](Value predicated) -> std::pair<Value, Value> {
    auto condOf = [](Value value) -> Value {
      auto splat = value.getDefiningOp<tt::SplatOp>();
      return splat && splat.getSrc().getType().isInteger(1) ? splat.getSrc() : Value();
    };
    if (Value cond = condOf(predicated))
      return {Value(), cond};
    if (auto both = predicated.getDefiningOp<arith::AndIOp>()) {
      if (Value cond = condOf(both.getRhs()))
        return {both.getLhs(), cond};
      if (Value cond = condOf(both.getLhs()))
        return {both.getRhs(), cond};
    }
    return {Value(), Value()};
  };
  // (cleanup may have turned xor(cmp, true) into the inverse comparison)
  auto complementary = [](Value a, Value b) {
    auto negates = [](Value x, Value y) {
      auto xor_ = x.getDefiningOp<arith::XOrIOp>();
      return xor_ && ((xor_.getLhs() == y && matchPattern(xor_.getRhs(), m_One())) ||
                      (xor_.getRhs() == y && matchPattern(xor_.getLhs(), m_One())));
    };
    if (negates(a, b) || negates(b, a))
      return true;
    auto ca = a.getDefiningOp<arith::CmpIOp>(), cb = b.getDefiningOp<arith::CmpIOp>();
    return ca && cb && ca.getLhs() == cb.getLhs() && ca.getRhs() == cb.getRhs() &&
           arith::invertPredicate(ca.getPredicate()) == cb.getPredicate();
  };
  if (!atomic.getMask()) {
    why = "the atomic has no mask holding the exclusivity condition";
    return failure();
  }
  auto [mask, otherwise] = split(atomic.getMask());
  if (!otherwise) {
    why = "the atomic's mask is not predicated on a condition uniform over the program";
    return failure();
  }
  for (Operation &op : *atomic->getBlock()) {
    auto store = dyn_cast<tt::StoreOp>(&op);
    if (!store || !store->hasAttr(kWhenExclusive) || store.getPtr() != atomic.getPtr() ||
        !store.getMask())
      continue;
    auto [storeMask, exclusive] = split(store.getMask());
    if (!exclusive || storeMask != mask || !complementary(exclusive, otherwise))
      continue;
    ExclusiveTwin twin{store, {}, {}, mask};
    // (read-add-write: store(ptr, old + g) with old = load(ptr, the same mask))
    if (auto sum = store.getValue().getDefiningOp<arith::AddFOp>())
      for (Value operand : sum->getOperands())
        if (auto read = operand.getDefiningOp<tt::LoadOp>();
            read && read.getPtr() == store.getPtr() && read.getMask() == store.getMask()) {
          twin.sum = sum;
          twin.read = read;
        }
    return twin;
  }
  why = "its exclusive twin write, under the complementary condition, was not found";
  return failure();
}

// An atomic add of a product of tiles into a shadow, summed by a part instead.
struct Accumulation {
  tt::AtomicRMWOp atomic;
  std::string shadow;
  Value mask; // what the part writes under: the atomic's, or its twin's shared one
  Value unnarrowedMask; // that mask before dropZeroLanes narrowed it
  std::optional<ExclusiveTwin> twin; // erased once the part is final
  std::string twinKept; // why a twin stays in the forward's programs, or ""
  SmallVector<Operation *> valueOps;   // its contribution, in program order
  SmallVector<Operation *> addressOps; // addresses and mask from the key
  RegridPart data; // its own record (coverage, store-only), the part's grouping
  Type element;    // the gradient's element type
  Value plain;     // its plain word of the table (set where emitted)
  bool mixesRows = false; // its products mix fewer than 64 rows with 64 or more
  // A reduction member (joinReductions): an accumulation outside the loop, a
  // sum along an axis of a value each member computes, whose addresses depend
  // on the program only through the part's key; one more program per group
  // sums it over the group's members.
  bool reduction = false;
  int reducedAxis = 0; // (of a reduction member: for the schedule's note)
  bool sumsStaged = false; // (of a reduction member: each program's sums in scratch)
};

// `sum`'s mask, and the exclusive twin it takes where its atomic has one (with
// no twin to take, the part adds under the atomic's mask, and says why);
// returns the roots of its addresses: the pointer and that mask.
SmallVector<Value> planMask(Accumulation &sum) {
  sum.mask = sum.atomic.getMask();
  if (sum.atomic->hasAttr(kUnlessExclusive))
    if (FailureOr<ExclusiveTwin> twin = planExclusiveTwin(sum.atomic, sum.twinKept);
        succeeded(twin)) {
      sum.mask = twin->mask;
      sum.twin = *twin;
      sum.twinKept.clear();
    }
  sum.unnarrowedMask = sum.mask;
  SmallVector<Value> roots{sum.atomic.getPtr()};
  if (sum.mask)
    roots.push_back(sum.mask);
  return roots;
}

// Accumulations of one loop whose addresses depend on the program through
// the same key: they share members, so one program per tile sums them all,
// computing each member's values once (attention's dK and dV share the
// scores, probabilities and their gradients).
struct Part {
  scf::ForOp loop;
  std::vector<Accumulation> sums;
  SmallVector<Operation *> valueOps; // every contribution, in program order
  SmallVector<Operation *> boundOps; // the loop's bounds
  SmallVector<Value> key;            // the group's words of the table
  // The contributions from the frontier (a member's values, base + j * delta
  // when the launch finds them affine in the member's index j); empty
  // `frontierOps` and `data.affine` false where some frontier value cannot be
  // evaluated on the host.
  SmallVector<Value> frontier;
  SmallVector<Operation *> frontierOps;
  RegridPart data; // the grouping (key, bounds, frontier, coarsening)
  // The part's header words of the table, read at the kernel's start.
  SmallVector<Value> words;
  // Passes over sub-tiles of each member's contraction (set where emitted).
  int contractionPasses = 1;
  int64_t contractionDepth = 0;
};

// The ops that compute `roots` from the kernel's arguments, program ids and
// the induction variable of `loop`: ops of the entry block and of the loop's
// body, side-effect free or loads, no results of loops or branches.
// With `regionResults`, a result of a loop or branch of the entry block is
// collected there instead (a leaf, for the Stager), not refused.
LogicalResult collectSlice(ArrayRef<Value> roots, Block &entry, scf::ForOp loop,
                           llvm::SetVector<Operation *> &ops, std::string &why,
                           ArrayRef<Value> leaves = {},
                           llvm::SetVector<Value> *regionResults = nullptr) {
  SmallVector<Value> work(roots.begin(), roots.end());
  DenseSet<Value> seen(leaves.begin(), leaves.end());
  while (!work.empty()) {
    Value value = work.pop_back_val();
    if (!value || !seen.insert(value).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      if (arg.getOwner() == &entry || arg == loop.getInductionVar())
        continue;
      why = "its contribution depends on a value the loop carries";
      return failure();
    }
    Operation *def = value.getDefiningOp();
    if (def->getBlock() != &entry && def->getBlock() != loop.getBody()) {
      why = "its contribution is computed inside a nested region (" + where(def) + ")";
      return failure();
    }
    if (def->getNumRegions() && !isa<tt::ReduceOp, tt::ScanOp>(def)) {
      if (regionResults && def->getBlock() == &entry) {
        regionResults->insert(value);
        continue;
      }
      why = "its contribution depends on the result of " + where(def);
      return failure();
    }
    if (!isa<tt::LoadOp>(def) && !isMemoryEffectFree(def)) {
      why = "its contribution depends on " + where(def) + ", which has side effects";
      return failure();
    }
    ops.insert(def);
    def->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        if (inner == def || !def->isAncestor(operand.getParentRegion()->getParentOp()))
          work.push_back(operand);
    });
  }
  return success();
}

SmallVector<Operation *> inProgramOrder(const llvm::SetVector<Operation *> &ops, Block &entry) {
  SmallVector<Operation *> sorted(ops.begin(), ops.end());
  llvm::sort(sorted, [&](Operation *a, Operation *b) {
    bool aEntry = a->getBlock() == &entry, bEntry = b->getBlock() == &entry;
    if (aEntry != bEntry)
      return aEntry; // (the entry block's ops in a slice all precede the loop)
    return a->isBeforeInBlock(b);
  });
  return sorted;
}

// The integer scalars through which `roots` depend on the program: walking
// back from them, the first pid-dependent integer scalars met that do not
// change with `loop`'s iteration (a scalar of the body that mixes the program
// with the iteration, as a block pointer's offset lo + ((i - lo) / step) *
// step with lo = start_m * BLOCK_M does, is walked through to lo). A load whose
// addresses depend on the program is walked through (`throughLoads`: the copy
// recomputes its addresses) or refused (a key must not depend on data).
LogicalResult collectFrontier(ArrayRef<Value> roots, ArrayRef<Operation *> sliceInOrder,
                              scf::ForOp loop, bool throughLoads,
                              llvm::SetVector<Value> &frontier, std::string &why) {
  DenseSet<Operation *> onProgram, onIteration;
  for (Operation *op : sliceInOrder) {
    bool depends = isa<tt::GetProgramIdOp>(op), varies = false;
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands()) {
        if (Operation *def = operand.getDefiningOp()) {
          depends |= onProgram.contains(def);
          varies |= onIteration.contains(def);
        }
        if (auto arg = dyn_cast<BlockArgument>(operand))
          varies |= arg.getOwner() == loop.getBody(); // (the induction variable, carried values)
      }
    });
    if (depends)
      onProgram.insert(op);
    if (varies)
      onIteration.insert(op);
  }
  SmallVector<Value> work(roots.begin(), roots.end());
  DenseSet<Value> seen;
  while (!work.empty()) {
    Value value = work.pop_back_val();
    if (!value || !seen.insert(value).second)
      continue;
    Operation *def = value.getDefiningOp();
    if (!def || !onProgram.contains(def))
      continue;
    if (isa<IntegerType>(value.getType()) && !onIteration.contains(def)) {
      frontier.insert(value);
      continue;
    }
    if (isa<tt::LoadOp>(def) && !throughLoads) {
      why = "its addresses depend on data the program loads (" + where(def) + ")";
      return failure();
    }
    def->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        work.push_back(operand);
    });
  }
  return success();
}

// Narrows `sum.mask` (whose addresses `roots` are, with it) to the lanes
// whose contribution may be nonzero (zeroOutside), where that leaves the key
// as it is and reads no memory: a lane the forward's store masks off adds
// zeros, and the parts need not write them. (The matmul tutorial's rows
// wrapped past M, `(pid_m * BLOCK_M + arange) % M`, are such lanes: with them
// left out, each element is written once and the writes can be plain.)
// Returns the roots of the addresses, with the narrowed mask where taken.
SmallVector<Value> dropZeroLanes(Accumulation &sum, ArrayRef<Value> roots, Block &entry,
                                 scf::ForOp loop, const llvm::SetVector<Value> &key) {
  SmallVector<Value> zero, held;
  zeroOutside(sum.atomic.getVal(), zero);
  if (sum.mask)
    maskConjuncts(sum.mask, held);
  auto type = cast<RankedTensorType>(sum.atomic.getVal().getType());
  OpBuilder b(sum.atomic);
  Location loc = sum.atomic.getLoc();
  Value narrowed = sum.mask;
  SmallVector<Operation *> made;
  for (Value conjunct : zero) {
    if (llvm::is_contained(held, conjunct))
      continue;
    held.push_back(conjunct);
    Value full = conjunct;
    auto conjunctType = cast<RankedTensorType>(conjunct.getType());
    if (conjunctType.getShape() != type.getShape()) {
      full = tt::BroadcastOp::create(b, loc, type.clone(conjunctType.getElementType()), conjunct);
      made.push_back(full.getDefiningOp());
    }
    if (narrowed) {
      narrowed = arith::AndIOp::create(b, loc, narrowed, full);
      made.push_back(narrowed.getDefiningOp());
    } else {
      narrowed = full;
    }
  }
  if (narrowed == sum.mask)
    return SmallVector<Value>(roots.begin(), roots.end());
  SmallVector<Value> narrowedRoots{sum.atomic.getPtr(), narrowed};
  llvm::SetVector<Operation *> slice;
  llvm::SetVector<Value> narrowedKey;
  std::string why;
  bool keeps = succeeded(collectSlice(narrowedRoots, entry, loop, slice, why)) &&
               llvm::none_of(slice, [](Operation *op) { return isa<tt::LoadOp>(op); }) &&
               succeeded(collectFrontier(narrowedRoots, inProgramOrder(slice, entry), loop,
                                         /*throughLoads=*/false, narrowedKey, why)) &&
               narrowedKey.size() == key.size() &&
               llvm::all_of(narrowedKey, [&](Value v) { return key.contains(v); });
  if (!keeps) {
    for (Operation *op : llvm::reverse(made))
      op->erase();
    return SmallVector<Value>(roots.begin(), roots.end());
  }
  sum.mask = narrowed;
  return narrowedRoots;
}

Value i32(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(value));
}

// Word `index` (i32) of the int64 table.
Value readWord(OpBuilder &b, Location loc, Value table, Value index) {
  Value at = tt::AddPtrOp::create(b, loc, table.getType(), table, index);
  return createLoad(b, loc, at, Value(), Value());
}

// A word as a value of integer type `type` (i1: nonzero).
Value wordAs(OpBuilder &b, Location loc, Value word, Type type) {
  if (type.isInteger(1))
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, word,
                                 arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0)));
  if (type.getIntOrFloatBitWidth() < 64)
    return arith::TruncIOp::create(b, loc, type, word);
  return word;
}

// The largest power of two (at most 2^16) that divides every value `value`
// can take, from its arithmetic (Triton's AxisInfo reasons the same way): a
// value read from the table keeps what the expression it replaces guaranteed,
// so the loads it addresses stay vectorizable (and pipelineable).
int64_t divisibilityOf(Value value, int depth = 0) {
  constexpr int64_t kMost = 1 << 16;
  if (depth > 32)
    return 1;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto function = dyn_cast<tt::FuncOp>(arg.getOwner()->getParentOp());
    if (!function)
      return 1;
    auto hint = function.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), "tt.divisibility");
    return hint ? std::min<int64_t>(hint.getInt(), kMost) : 1;
  }
  APInt constant;
  if (matchPattern(value, m_ConstantInt(&constant))) {
    int64_t c = constant.getSExtValue();
    return c == 0 ? kMost : std::min<int64_t>(c & -c, kMost);
  }
  Operation *def = value.getDefiningOp();
  if (!def)
    return 1;
  auto of = [&](int i) { return divisibilityOf(def->getOperand(i), depth + 1); };
  if (isa<arith::MulIOp>(def))
    return std::min<int64_t>(of(0) * of(1), kMost);
  if (isa<arith::AddIOp, arith::SubIOp>(def))
    return std::min(of(0), of(1));
  if (isa<arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp>(def))
    return of(0);
  if (isa<arith::SelectOp>(def))
    return std::min(of(1), of(2));
  return 1;
}

// `word` (mapped for `original`) with `original`'s divisibility as Triton's hint.
Value withDivisibility(OpBuilder &b, Value word, Value original) {
  int64_t divisibility = divisibilityOf(original);
  Operation *def = word.getDefiningOp();
  if (divisibility > 1 && def && !original.getType().isInteger(1))
    def->setDiscardableAttr("tt.divisibility",
                            DenseElementsAttr::get(RankedTensorType::get({1}, b.getI32Type()),
                                                   {static_cast<int32_t>(divisibility)}));
  return word;
}

// A header word (counts and offsets: i32).
Value readI32(OpBuilder &b, Location loc, Value table, Value index) {
  return wordAs(b, loc, readWord(b, loc, table, index), b.getI32Type());
}

Value readI32(OpBuilder &b, Location loc, Value table, int64_t index) {
  return readI32(b, loc, table, i32(b, loc, index));
}

struct Grid {
  Value x, y, z;
};

// Program ids (x, y, z) of the forward's linear program `linear`, x fastest.
std::array<Value, 3> programIdsOf(OpBuilder &b, Location loc, Value linear, const Grid &grid) {
  Value x = arith::RemSIOp::create(b, loc, linear, grid.x);
  Value rest = arith::DivSIOp::create(b, loc, linear, grid.x);
  Value y = arith::RemSIOp::create(b, loc, rest, grid.y);
  Value z = arith::DivSIOp::create(b, loc, rest, grid.y);
  return {x, y, z};
}

// Clones `ops` (program order) with program ids and grid sizes replaced.
void cloneWithPrograms(OpBuilder &b, ArrayRef<Operation *> ops, IRMapping &mapping,
                       const std::array<Value, 3> &ids, const Grid &grid,
                       ArrayRef<Operation *> skip = {}) {
  Value sizes[3] = {grid.x, grid.y, grid.z};
  for (Operation *op : ops) {
    if (llvm::is_contained(skip, op))
      continue;
    if (auto pid = dyn_cast<tt::GetProgramIdOp>(op)) {
      mapping.map(pid.getResult(), ids[static_cast<int>(pid.getAxis())]);
      continue;
    }
    if (auto count = dyn_cast<tt::GetNumProgramsOp>(op)) {
      mapping.map(count.getResult(), sizes[static_cast<int>(count.getAxis())]);
      continue;
    }
    b.clone(*op, mapping);
  }
}

// Float type the part sums in: fp32 for narrower gradients, else the gradient's.
Type accumulatorElement(Type gradient, OpBuilder &b) {
  return gradient.getIntOrFloatBitWidth() < 32 ? b.getF32Type() : gradient;
}

// The contribution of one member, added to `accumulator`: `contribution`'s
// ops cloned with `mapping`; a dot of zeros plus a rounding
// (`truncf(dot(a, b, 0))`) becomes `dot(a, b, accumulator)`.
struct Summand {
  Value contribution; // the value to sum (the rounding stripped)
  tt::DotOp fused;    // or null
  SmallVector<Operation *, 2> skip;
  Type element; // what the sum is kept in
};

Summand summandOf(OpBuilder &b, tt::AtomicRMWOp atomic) {
  Summand summand;
  summand.contribution = atomic.getVal();
  Type gradient = getElementTypeOrSelf(summand.contribution.getType());
  summand.element = accumulatorElement(gradient, b);
  if (auto trunc = summand.contribution.getDefiningOp<arith::TruncFOp>();
      trunc && getElementTypeOrSelf(trunc.getIn().getType()) == summand.element &&
      summand.contribution.hasOneUse()) {
    summand.skip.push_back(trunc);
    summand.contribution = trunc.getIn();
  }
  auto dot = summand.contribution.getDefiningOp<tt::DotOp>();
  if (dot && matchPattern(dot.getC(), m_AnyZeroFloat()) && summand.contribution.hasOneUse() &&
      getElementTypeOrSelf(dot.getType()) == summand.element) {
    summand.fused = dot;
    summand.skip.push_back(dot);
  }
  return summand;
}

Value addSummand(OpBuilder &b, Location loc, const Summand &summand, IRMapping &mapping,
                 Value accumulator) {
  if (summand.fused) {
    Operation *dot = b.clone(*summand.fused, mapping);
    dot->setOperand(2, accumulator);
    return dot->getResult(0);
  }
  Value value = castFloat(b, loc, mapping.lookupOrDefault(summand.contribution), summand.element);
  return arith::AddFOp::create(b, loc, accumulator, value);
}

// A value of a loop as base + j * steps[0] + h * steps[1]: j the member,
// h the pass over the contraction (`splitContraction`), base and steps defined
// before the loop; a null step is zero.
struct Linear {
  Value base;
  std::array<Value, 2> steps;
  bool varies() const { return steps[0] || steps[1]; }
};

// The linear form of `op`'s result from its operands' (`linear`; a value
// defined before the loop is its own base), built before the loop; nullopt
// where `op` is not one the form goes through or the result is not linear.
std::optional<Linear> linearResult(OpBuilder &before, Operation *op, scf::ForOp loop,
                                   const DenseMap<Value, Linear> &linear) {
  SmallVector<Linear> operands;
  bool varies = false;
  for (Value operand : op->getOperands()) {
    if (auto known = linear.find(operand); known != linear.end()) {
      operands.push_back(known->second);
      varies |= known->second.varies();
    } else if (!loop->isAncestor(operand.getParentRegion()->getParentOp())) {
      operands.push_back({operand, {}});
    } else {
      return std::nullopt;
    }
  }
  if (!varies || op->getNumResults() != 1 || op->getNumRegions())
    return std::nullopt;
  Location loc = op->getLoc();
  Type type = op->getResult(0).getType();
  // Applies `op` to the bases (nullopt), or to the steps of variable `v`
  // (null steps stay null). (the step of a pointer is an offset: the op
  // applied to it yields offsets)
  auto apply = [&](std::optional<int> v) -> Value {
    Value operand = v ? operands[0].steps[*v] : operands[0].base;
    if (!operand)
      return Value();
    Type resultType = type;
    if (v && isa<tt::PointerType>(getElementTypeOrSelf(type))) {
      Type offset = getElementTypeOrSelf(operand.getType());
      auto tensor = dyn_cast<RankedTensorType>(type);
      resultType = tensor ? Type(tensor.clone(offset)) : offset;
    }
    OperationState state(loc, op->getName());
    state.addOperands(operand);
    state.addAttributes(op->getAttrs());
    state.addTypes(resultType);
    return before.create(state)->getResult(0);
  };
  auto reshape = dyn_cast<tt::ReshapeOp>(op);
  if (isa<tt::SplatOp, tt::ExpandDimsOp, tt::BroadcastOp, arith::ExtSIOp, arith::TruncIOp>(op) ||
      (reshape && !reshape.getAllowReorder()))
    return Linear{apply(std::nullopt), {apply(0), apply(1)}};
  if (isa<arith::AddIOp, arith::SubIOp>(op)) {
    bool add = isa<arith::AddIOp>(op);
    auto combine = [&](Value lhs, Value rhs) -> Value {
      return add ? arith::AddIOp::create(before, loc, lhs, rhs).getResult()
                 : arith::SubIOp::create(before, loc, lhs, rhs).getResult();
    };
    Linear result{combine(operands[0].base, operands[1].base), {}};
    for (int v = 0; v < 2; ++v) {
      Value lhs = operands[0].steps[v], rhs = operands[1].steps[v];
      result.steps[v] =
          lhs && rhs ? combine(lhs, rhs)
          : lhs      ? lhs
          : !rhs     ? Value()
          : add      ? rhs
                     : combine(arith::ConstantOp::create(before, loc, before.getZeroAttr(type)), rhs);
    }
    return result;
  }
  if (isa<arith::MulIOp>(op)) {
    int varying = operands[0].varies() ? 0 : 1;
    if (operands[1 - varying].varies())
      return std::nullopt; // (j * j)
    Value factor = operands[1 - varying].base;
    Linear result{arith::MulIOp::create(before, loc, operands[varying].base, factor), {}};
    for (int v = 0; v < 2; ++v)
      if (Value step = operands[varying].steps[v])
        result.steps[v] = arith::MulIOp::create(before, loc, step, factor);
    return result;
  }
  if (isa<tt::AddPtrOp>(op)) {
    Linear result{tt::AddPtrOp::create(before, loc, type, operands[0].base, operands[1].base), {}};
    for (int v = 0; v < 2; ++v) {
      Value step = operands[1].steps[v], pointerStep = operands[0].steps[v];
      if (pointerStep && step) {
        // (offsets of two widths: the narrower one sign-extended, as addptr does)
        auto widthOf = [](Value x) { return getElementTypeOrSelf(x.getType()).getIntOrFloatBitWidth(); };
        if (widthOf(pointerStep) < widthOf(step))
          std::swap(pointerStep, step);
        if (widthOf(step) < widthOf(pointerStep))
          step = arith::ExtSIOp::create(before, loc, pointerStep.getType(), step);
        step = arith::AddIOp::create(before, loc, pointerStep, step);
      } else if (!step) {
        step = pointerStep;
      }
      result.steps[v] = step;
    }
    return result;
  }
  return std::nullopt;
}

// `value` (a tensor the same in every element: a splat, or built from splats
// by shape ops and elementwise arithmetic) as a scalar built before `at`, or
// null.
Value uniformScalar(OpBuilder &b, Value value, int depth = 0) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return value;
  if (depth > 16)
    return Value();
  Operation *def = value.getDefiningOp();
  if (!def)
    return Value();
  if (auto splat = dyn_cast<tt::SplatOp>(def))
    return splat.getSrc();
  SplatElementsAttr constant;
  if (matchPattern(value, m_Constant(&constant)))
    return arith::ConstantOp::create(b, def->getLoc(), constant.getSplatValue<TypedAttr>());
  if (isa<tt::BroadcastOp, tt::ExpandDimsOp, tt::ReshapeOp>(def))
    return uniformScalar(b, def->getOperand(0), depth + 1);
  if (!isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::ExtSIOp, arith::TruncIOp>(def))
    return Value();
  IRMapping scalars;
  for (Value operand : def->getOperands()) {
    Value scalar = uniformScalar(b, operand, depth + 1);
    if (!scalar)
      return Value();
    scalars.map(operand, scalar);
  }
  Operation *clone = b.clone(*def, scalars);
  clone->getResult(0).setType(type.getElementType());
  return clone->getResult(0);
}

// How the flattened loop of `splitContraction` walks its two variables:
// iteration t is member j = lower + t / passes, pass h = t % passes.
struct Passes {
  int count = 1;
  Value pass; // h, in the loop's body (null: one pass, j the induction variable)
};

// The steps from one iteration of a flattened loop to the next (built before
// the loop): `within` a member's passes, the pass's; `across` from a
// member's last pass to the next member's first, member - (passes - 1) * pass.
// Either step may be null (zero); the narrower is sign-extended.
struct PassSteps {
  Value within, across;
};

PassSteps passSteps(OpBuilder &before, Location loc, Value member, Value pass, int passes) {
  auto width = [](Value v) { return getElementTypeOrSelf(v.getType()).getIntOrFloatBitWidth(); };
  if (member && pass && width(member) != width(pass)) {
    Value &narrow = width(member) < width(pass) ? member : pass;
    Type wide = (width(member) < width(pass) ? pass : member).getType();
    narrow = arith::ExtSIOp::create(before, loc, wide, narrow);
  }
  Type type = (member ? member : pass).getType();
  auto constant = [&](int64_t c) -> Value {
    Value scalar = arith::ConstantOp::create(
        before, loc, before.getIntegerAttr(getElementTypeOrSelf(type), c));
    if (auto tensor = dyn_cast<RankedTensorType>(type))
      return tt::SplatOp::create(before, loc, tensor, scalar);
    return scalar;
  };
  PassSteps steps{pass ? pass : constant(0), member ? member : constant(0)};
  if (pass)
    steps.across = arith::SubIOp::create(
        before, loc, steps.across, arith::MulIOp::create(before, loc, pass, constant(passes - 1)));
  return steps;
}

// Loads in `loop` whose operands it does not change, and the side-effect
// free ops then computed from them alone, moved before it: a part's loads of
// its own tile (attention's key and value block, and its transpose), the
// same for every member. (A part reads only memory nothing in the kernel
// writes: the loads commute with everything.) One pass in program order: an
// op moved makes its later users candidates.
void hoistInvariantLoads(scf::ForOp loop) {
  for (Operation &op : llvm::make_early_inc_range(loop.getBody()->without_terminator()))
    if ((isa<tt::LoadOp>(op) || isMemoryEffectFree(&op)) && !op.getNumRegions() &&
        llvm::all_of(op.getOperands(), [&](Value operand) {
          return !loop->isAncestor(operand.getParentRegion()->getParentOp());
        }))
      op.moveBefore(loop);
}

// Loads of `loop` whose addresses are linear in its variables get a pointer
// the loop carries, advanced by the step, as a hand-written loop's
// `ptrs += BLOCK * stride`: the per-iteration address arithmetic of a tile
// (thousands of lanes) becomes one add per lane. Over passes, the step is
// the pass's, or at a member's last pass the member's less the passes taken.
// `linear`: values of the body known linear (a member's frontier values, j, h).
void carryLinearPointers(scf::ForOp &loop, DenseMap<Value, Linear> linear, Passes passes = {}) {
  moveLoopInvariantCode(cast<LoopLikeOpInterface>(loop.getOperation()));
  hoistInvariantLoads(loop);
  OpBuilder before(loop);
  SmallVector<tt::LoadOp> loads;
  for (Operation &op : loop.getBody()->without_terminator()) {
    // (a seed keeps its form: the frontier's carry Triton's divisibility hints)
    if (op.getNumResults() == 1 && !linear.contains(op.getResult(0)))
      if (auto form = linearResult(before, &op, loop, linear))
        linear[op.getResult(0)] = *form;
    if (auto load = dyn_cast<tt::LoadOp>(op))
      if (auto it = linear.find(load.getPtr()); it != linear.end() && it->second.varies())
        loads.push_back(load);
  }
  if (loads.empty())
    return;
  Location loc = loop.getLoc();
  // The steps per iteration, as scalars where they are uniform (Triton then
  // sees a splat, and the pointers keep their contiguity). Built before the
  // loop is grown: its replacement goes where the loop is now.
  SmallVector<Value> initial;
  SmallVector<std::pair<PassSteps, RankedTensorType>> steps;
  for (tt::LoadOp load : loads) {
    const Linear &form = linear[load.getPtr()];
    initial.push_back(form.base);
    Value member = form.steps[0], pass = form.steps[1];
    if (passes.count == 1) {
      steps.push_back({{member, member}, nullptr});
      continue;
    }
    Value scalarMember = member ? uniformScalar(before, member) : Value();
    Value scalarPass = pass ? uniformScalar(before, pass) : Value();
    auto tensor = dyn_cast<RankedTensorType>((member ? member : pass).getType());
    if (tensor && (!member || scalarMember) && (!pass || scalarPass))
      steps.push_back({passSteps(before, loc, scalarMember, scalarPass, passes.count), tensor});
    else
      steps.push_back({passSteps(before, loc, member, pass, passes.count), nullptr});
  }
  IRRewriter rewriter(loop.getContext());
  auto grown = loop.replaceWithAdditionalYields(
      rewriter, initial, /*replaceInitOperandUsesInLoop=*/false,
      [&](OpBuilder &b, Location loc, ArrayRef<BlockArgument> carried) {
        Value lastPass;
        if (passes.count > 1)
          lastPass = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, passes.pass,
                                           i32(b, loc, passes.count - 1));
        SmallVector<Value> next;
        for (auto [load, pointer, step] : llvm::zip(loads, carried, steps)) {
          auto [pair, splatTo] = step;
          Value offset = pair.within;
          if (lastPass)
            offset = arith::SelectOp::create(b, loc, lastPass, pair.across, pair.within);
          if (splatTo)
            offset = tt::SplatOp::create(b, loc, splatTo.clone(offset.getType()), offset);
          load.getPtrMutable().assign(pointer);
          next.push_back(tt::AddPtrOp::create(b, loc, pointer.getType(), pointer, offset));
        }
        return next;
      });
  if (succeeded(grown))
    loop = cast<scf::ForOp>(grown->getOperation());
}

// Clones `ops` once per iteration of `ivs`: the first copy whole, the others
// only the ops that depend on the induction variable (loads of the member's
// own tiles are shared between the iterations).
SmallVector<IRMapping> cloneForIterations(OpBuilder &b, ArrayRef<Operation *> ops, Value iv,
                                          ArrayRef<Value> ivs, IRMapping shared,
                                          const std::array<Value, 3> &ids, const Grid &grid,
                                          ArrayRef<Operation *> skip) {
  DenseSet<Operation *> onIv;
  for (Operation *op : ops) {
    bool depends = false;
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        depends |= operand == iv || (operand.getDefiningOp() && onIv.contains(operand.getDefiningOp()));
    });
    if (depends)
      onIv.insert(op);
  }
  SmallVector<IRMapping> mappings;
  for (auto [c, value] : llvm::enumerate(ivs)) {
    IRMapping mapping = c == 0 ? shared : mappings.front();
    mapping.map(iv, value);
    SmallVector<Operation *> todo;
    for (Operation *op : ops)
      if (c == 0 || onIv.contains(op))
        todo.push_back(op);
    cloneWithPrograms(b, todo, mapping, ids, grid, skip);
    mappings.push_back(std::move(mapping));
  }
  return mappings;
}

// The dimension of `reshape`'s source that its result's dimension `dim`
// (not of size 1) is, where the reshape only adds or drops dimensions of size
// 1; nullopt otherwise.
std::optional<int> unitReshapeSource(tt::ReshapeOp reshape, int dim) {
  if (reshape.getAllowReorder())
    return std::nullopt;
  auto nonUnit = [](RankedTensorType type) {
    SmallVector<std::pair<int64_t, int>> dims;
    for (auto [i, size] : llvm::enumerate(type.getShape()))
      if (size != 1)
        dims.push_back({size, static_cast<int>(i)});
    return dims;
  };
  auto source = nonUnit(reshape.getSrc().getType());
  auto result = nonUnit(reshape.getType());
  if (source.size() != result.size())
    return std::nullopt;
  std::optional<int> found;
  for (auto [from, to] : llvm::zip(source, result)) {
    if (from.first != to.first)
      return std::nullopt;
    if (to.second == dim)
      found = from.second;
  }
  return found;
}

// A hand-written matmul steps its contraction 128 bytes deep (64 fp16
// elements): the pipeline then holds small stages and two programs fit an SM.
// A part contracts over the member's tile, the forward's (often 128 deep),
// whose stages would take all of shared memory. `splitContraction` rebuilds
// the loop summing the members as one loop over members and passes over
// sub-tiles of each member's contraction,
//   for t < members * passes: j, h = t / passes, t % passes:
//     acc = dot(A_j[:, K_h], B_j[K_h, :], acc),
// each operand rebuilt from its loads at a sub-tile's size (the slice of an
// elementwise op is the op of the slices; of a range, a shorter range). One
// loop, not passes around the member loop: the pipeline fills once (measured
// on an H100, 2048^3 fp16 dB: 35.5 us as nested loops, 32.1 flattened).
class ContractionSplitter {
public:
  ContractionSplitter(OpBuilder &b, scf::ForOp old, scf::ForOp flat, Value member, Value pass,
                      int64_t contraction, int64_t depth)
      : b(b), old(old), pass(pass), contraction(contraction), depth(depth) {
    mapping.map(old.getInductionVar(), member);
    for (auto [from, to] : llvm::zip(old.getRegionIterArgs(), flat.getRegionIterArgs()))
      mapping.map(from, to);
  }

  // `value` as the old body computes it, in the new one.
  FailureOr<Value> full(Value value) {
    if (Value known = mapping.lookupOrNull(value))
      return known;
    Operation *def = value.getDefiningOp();
    if (!def || def->getBlock() != old.getBody())
      return value; // (defined before the loop)
    if (def->getNumRegions())
      return failure();
    for (Value operand : def->getOperands())
      if (failed(full(operand)))
        return failure();
    b.clone(*def, mapping);
    return mapping.lookup(value);
  }

  // Sub-tile `pass` of `value` along dimension `dim`: elements
  // [pass * depth, (pass + 1) * depth) of it.
  FailureOr<Value> split(Value value, int dim) {
    auto key = std::make_pair(value, dim);
    if (auto known = splits.find(key); known != splits.end())
      return known->second;
    auto type = dyn_cast<RankedTensorType>(value.getType());
    Operation *def = value.getDefiningOp();
    if (!type || !def || def->getBlock() != old.getBody() || def->getNumRegions() ||
        def->getNumResults() != 1 || type.getDimSize(dim) != contraction)
      return failure();
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] = depth;
    auto subType = type.clone(shape);
    Location loc = def->getLoc();
    Value result;
    if (auto range = dyn_cast<tt::MakeRangeOp>(def)) {
      int64_t start = range.getStart();
      Value shorter = tt::MakeRangeOp::create(b, loc, subType, start, start + depth);
      Value offset = arith::MulIOp::create(
          b, loc, pass, arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(depth)));
      result = arith::AddIOp::create(b, loc, shorter, tt::SplatOp::create(b, loc, subType, offset));
    } else if (auto constant = dyn_cast<arith::ConstantOp>(def)) {
      auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
      if (!splat)
        return failure();
      result = arith::ConstantOp::create(
          b, loc, subType, DenseElementsAttr::get(subType, splat.getSplatValue<Attribute>()));
    } else {
      if (!isa<tt::SplatOp, tt::BroadcastOp, tt::ExpandDimsOp, tt::ReshapeOp, tt::TransOp,
               tt::LoadOp>(def) &&
          !def->hasTrait<OpTrait::Elementwise>())
        return failure();
      // The operands' slices (or whole values where the op takes them whole).
      IRMapping operands;
      for (OpOperand &use : def->getOpOperands()) {
        Value operand = use.get();
        auto operandType = dyn_cast<RankedTensorType>(operand.getType());
        FailureOr<Value> mapped = failure();
        if (isa<tt::SplatOp>(def)) {
          mapped = full(operand);
        } else if (isa<tt::BroadcastOp>(def)) {
          mapped = operandType.getDimSize(dim) == 1 ? full(operand) : split(operand, dim);
        } else if (auto expand = dyn_cast<tt::ExpandDimsOp>(def)) {
          int axis = expand.getAxis();
          if (dim == axis)
            return failure();
          mapped = split(operand, dim > axis ? dim - 1 : dim);
        } else if (auto reshape = dyn_cast<tt::ReshapeOp>(def)) {
          // (one that only adds or drops unit dimensions, as x[None, :] may be spelled)
          std::optional<int> from = unitReshapeSource(reshape, dim);
          if (!from)
            return failure();
          mapped = split(operand, *from);
        } else if (auto trans = dyn_cast<tt::TransOp>(def)) {
          mapped = split(operand, trans.getOrder()[dim]);
        } else if (isa<tt::LoadOp>(def) || def->hasTrait<OpTrait::Elementwise>()) {
          // (scalars whole; a load's operands are all tiles of its shape, but
          // through a block pointer, whose shape the splitter cannot slice)
          if (operandType && operandType.getShape() == type.getShape())
            mapped = split(operand, dim);
          else if (!operandType && !isa<tt::LoadOp>(def))
            mapped = full(operand);
        }
        if (failed(mapped))
          return failure();
        operands.map(operand, *mapped);
      }
      Operation *clone = b.clone(*def, operands);
      clone->getResult(0).setType(subType);
      result = clone->getResult(0);
    }
    splits[key] = result;
    return result;
  }

  IRMapping mapping; // old body -> new body (whole values)

private:
  OpBuilder &b;
  scf::ForOp old;
  Value pass;
  int64_t contraction, depth;
  DenseMap<std::pair<Value, int>, Value> splits;
};

struct SplitLoops {
  scf::ForOp loop; // over members and passes
  IRMapping mapping;
  Value member, pass; // j and h, in the loop's body
  int passes = 1;
  int64_t depth = 0;
};

// `loop` (summing members into its results by dots, `dot(a, b, acc)`, step
// 1) as one loop over members and passes over sub-tiles of the contraction;
// nullopt, `loop` unchanged, where the contraction is no deeper than 128
// bytes or an operand is not built from ops whose slices the splitter knows.
std::optional<SplitLoops> splitContraction(OpBuilder &b, scf::ForOp loop) {
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  SmallVector<tt::DotOp> dots;
  int64_t contraction = 0, depth = 0;
  for (auto [i, value] : llvm::enumerate(yield.getOperands())) {
    auto dot = value.getDefiningOp<tt::DotOp>();
    if (!dot || dot.getC() != loop.getRegionIterArgs()[i])
      return std::nullopt;
    auto a = cast<RankedTensorType>(dot.getA().getType());
    int64_t k = a.getDimSize(1);
    int64_t d = std::max<int64_t>(16, 1024 / a.getElementTypeBitWidth());
    if ((contraction && k != contraction) || (depth && d != depth))
      return std::nullopt;
    contraction = k;
    depth = d;
    dots.push_back(dot);
  }
  if (dots.empty() || contraction <= depth || contraction % depth ||
      !matchPattern(loop.getStep(), m_One()) || !loop.getInductionVar().getType().isInteger(32))
    return std::nullopt;
  int passes = static_cast<int>(contraction / depth);
  Location loc = loop.getLoc();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop);
  Value members = arith::SubIOp::create(b, loc, loop.getUpperBound(), loop.getLowerBound());
  // (an empty or reversed range stays empty)
  Value trips = arith::MulIOp::create(b, loc, arith::MaxSIOp::create(b, loc, members, i32(b, loc, 0)),
                                      i32(b, loc, passes));
  auto flat = scf::ForOp::create(b, loc, i32(b, loc, 0), trips, i32(b, loc, 1), loop.getInitArgs());
  b.setInsertionPointToStart(flat.getBody());
  Value t = flat.getInductionVar();
  Value member = arith::AddIOp::create(
      b, loc, loop.getLowerBound(), arith::DivSIOp::create(b, loc, t, i32(b, loc, passes)));
  Value pass = arith::RemSIOp::create(b, loc, t, i32(b, loc, passes));
  ContractionSplitter splitter(b, loop, flat, member, pass, contraction, depth);
  SmallVector<Value> sums;
  for (tt::DotOp dot : dots) {
    FailureOr<Value> a = splitter.split(dot.getA(), 1), bOperand = splitter.split(dot.getB(), 0);
    FailureOr<Value> c = splitter.full(dot.getC());
    if (failed(a) || failed(bOperand) || failed(c)) {
      flat.erase();
      return std::nullopt;
    }
    IRMapping operands;
    operands.map(dot.getA(), *a);
    operands.map(dot.getB(), *bOperand);
    operands.map(dot.getC(), *c);
    sums.push_back(b.clone(*dot, operands)->getResult(0));
  }
  scf::YieldOp::create(b, loc, sums);
  loop.replaceAllUsesWith(flat.getResults());
  SplitLoops result{flat, std::move(splitter.mapping), member, pass, passes, depth};
  loop.erase();
  return result;
}

// Writes `total`, a part's sum for `sum`, once at the addresses `mapping`
// gives (under `extra` as well, where set): plain where the launch proved each
// element reached once (the table's plain word), else an atomic add
// (predicated, not branched: see KernelBackward's emitPlain).
void writeOnce(OpBuilder &b, Location loc, Accumulation &sum, Value total,
               const IRMapping &mapping, Value extra) {
  auto gradientType = cast<RankedTensorType>(sum.atomic.getVal().getType());
  total = castFloat(b, loc, total, gradientType.getElementType());
  Value mask = sum.mask ? mapping.lookupOrDefault(sum.mask) : Value();
  if (extra)
    mask = predicate(b, loc, mask, extra, gradientType);
  Value ptr = mapping.lookupOrDefault(sum.atomic.getPtr());
  if (!sum.data.hasCoverage) {
    createAtomicAdd(b, loc, ptr, total, mask);
    return;
  }
  Value plain = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, sum.plain, i32(b, loc, 0));
  Value atomic = arith::XOrIOp::create(b, loc, plain,
                                       arith::ConstantOp::create(b, loc, b.getBoolAttr(true)));
  Value plainMask = predicate(b, loc, mask, plain, gradientType);
  if (sum.data.storeOnly) {
    createStore(b, loc, ptr, total, plainMask);
  } else {
    Value old = createLoad(b, loc, ptr, plainMask, createZero(b, loc, gradientType));
    createStore(b, loc, ptr, arith::AddFOp::create(b, loc, old, total), plainMask);
  }
  createAtomicAdd(b, loc, ptr, total, predicate(b, loc, mask, atomic, gradientType));
}

// The program of a group that sums the part's reduction members: a loop over
// the group's members (their ids from the table, in increasing order: a fixed
// summation order), each computing its contributions as its forward program
// did, summed in registers (fp32 for narrower gradients) and written once.
// `keyed`: the part's key values, the group's.
void emitReductions(OpBuilder &b, Location loc, Part &part, ArrayRef<Accumulation *> reductions,
                    Value group, Value table, const Grid &grid, const IRMapping &keyed) {
  auto add = [&](Value x, Value y) { return arith::AddIOp::create(b, loc, x, y).getResult(); };
  Value groupAt = add(part.words[kStartsAt], group);
  Value first = readI32(b, loc, table, groupAt);
  Value last = readI32(b, loc, table, add(groupAt, i32(b, loc, 1)));
  SmallVector<Summand> summands;
  SmallVector<Operation *> skip;
  SmallVector<Value> initial;
  llvm::SetVector<Operation *> ops;
  for (Accumulation *sum : reductions) {
    summands.push_back(summandOf(b, sum->atomic));
    skip.append(summands.back().skip.begin(), summands.back().skip.end());
    auto gradientType = cast<RankedTensorType>(sum->atomic.getVal().getType());
    initial.push_back(createZero(b, loc, gradientType.clone(summands.back().element)));
    ops.insert(sum->valueOps.begin(), sum->valueOps.end());
  }
  Block &entry = *part.loop->getBlock();
  auto loop = scf::ForOp::create(b, loc, first, last, i32(b, loc, 1), initial);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value member = readI32(b, loc, table, add(part.words[kMembersAt], loop.getInductionVar()));
    IRMapping mapping;
    cloneWithPrograms(b, inProgramOrder(ops, entry), mapping, programIdsOf(b, loc, member, grid),
                      grid, skip);
    SmallVector<Value> next;
    for (auto [summand, accumulator] : llvm::zip(summands, loop.getRegionIterArgs()))
      next.push_back(addSummand(b, loc, summand, mapping, accumulator));
    scf::YieldOp::create(b, loc, next);
  }
  Value zero = i32(b, loc, 0);
  for (auto [sum, total] : llvm::zip(reductions, loop.getResults())) {
    IRMapping addresses = keyed;
    cloneWithPrograms(b, sum->addressOps, addresses, {zero, zero, zero}, grid);
    writeOnce(b, loc, *sum, total, addresses, Value());
  }
}

// Emits part `index`: program `q` of it owns (group q / tiles, iterations
// C * (q % tiles) + c for c < C: `part.coarsening`), loops over the group's
// forward programs summing their contributions to each of its iterations,
// and adds each sum once.
void emitPart(OpBuilder &b, Location loc, Part &part, Value q, Value table,
              const Grid &grid) {
  int coarsening = part.data.coarsening;
  auto word = [&](PartWord w) { return part.words[w]; };
  auto add = [&](Value x, Value y) { return arith::AddIOp::create(b, loc, x, y).getResult(); };
  auto mul = [&](Value x, Value y) { return arith::MulIOp::create(b, loc, x, y).getResult(); };
  Value trips = word(kTrips);
  SmallVector<Accumulation *> products, reductions;
  for (Accumulation &sum : part.sums)
    (sum.reduction ? reductions : products).push_back(&sum);
  // (trips >= 0; divsi and not ceildivsi, which Triton's Python has no spelling for)
  Value tiles = arith::DivSIOp::create(b, loc, add(trips, i32(b, loc, coarsening - 1)),
                                       i32(b, loc, coarsening));
  // (the program summing the reduction members is each group's last: it
  // runs even where the loop has no iteration; a part of reductions alone
  // has that program only)
  if (products.empty())
    tiles = i32(b, loc, 1);
  else if (!reductions.empty())
    tiles = add(tiles, i32(b, loc, 1));
  Value tile = arith::RemSIOp::create(b, loc, q, tiles);
  Value group = arith::DivSIOp::create(b, loc, q, tiles);

  // The group's key: the addresses and masks of the writes, and the values
  // of the frontier that are keys (the same for every member: what they
  // address is loaded once, before the member loop).
  IRMapping keyed;
  Value keysAt = add(word(kKeysAt), mul(group, i32(b, loc, part.key.size())));
  for (auto [i, value] : llvm::enumerate(part.key))
    keyed.map(value, withDivisibility(
                         b,
                         wordAs(b, loc, readWord(b, loc, table, add(keysAt, i32(b, loc, i))),
                                value.getType()),
                         value));
  if (products.empty()) {
    emitReductions(b, loc, part, reductions, group, table, grid, keyed);
    return;
  }
  if (!reductions.empty()) {
    Value lastTile = arith::SubIOp::create(b, loc, tiles, i32(b, loc, 1));
    auto branch = scf::IfOp::create(
        b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tile, lastTile),
        /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(branch.thenBlock()->getTerminator());
      emitReductions(b, loc, part, reductions, group, table, grid, keyed);
    }
    b.setInsertionPoint(branch.elseBlock()->getTerminator());
  }
  // The loop's bounds are the same for every member (checked: the program
  // reaches them only through the key): clone them with the group's key.
  IRMapping bounds = keyed;
  Value zero = i32(b, loc, 0);
  cloneWithPrograms(b, part.boundOps, bounds, {zero, zero, zero}, grid);
  Value lower = bounds.lookupOrDefault(part.loop.getLowerBound());
  Value step = bounds.lookupOrDefault(part.loop.getStep());
  Type ivType = part.loop.getInductionVar().getType();
  // Iterations past the trip count (the last tile's) compute the last one
  // again and add nothing.
  SmallVector<Value> ivs, inRange;
  Value lastIteration = arith::SubIOp::create(b, loc, trips, i32(b, loc, 1));
  for (int c = 0; c < coarsening; ++c) {
    Value k = add(mul(tile, i32(b, loc, coarsening)), i32(b, loc, c));
    inRange.push_back(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, k, trips));
    k = arith::MinSIOp::create(b, loc, k, lastIteration);
    if (ivType != k.getType())
      k = arith::ExtSIOp::create(b, loc, ivType, k);
    ivs.push_back(arith::AddIOp::create(b, loc, lower, arith::MulIOp::create(b, loc, k, step)));
  }

  Value groupAt = add(word(kStartsAt), group);
  Value first = readI32(b, loc, table, groupAt);
  // (where trips vary, the group's members are ordered by decreasing trip
  // count: those reaching the tile's iteration come first; coarsening is 1)
  Value last = part.data.tripsVary
                   ? add(first, readI32(b, loc, table,
                                        add(word(kCountsAt), add(mul(group, tiles), tile))))
                   : readI32(b, loc, table, add(groupAt, i32(b, loc, 1)));

  // Sums (per iteration c, per accumulation s: index c * count + s).
  int count = products.size();
  SmallVector<Summand> summands;
  SmallVector<Operation *> skip;
  SmallVector<RankedTensorType> gradientTypes;
  SmallVector<Value> initial;
  for (Accumulation *sum : products) {
    summands.push_back(summandOf(b, sum->atomic));
    skip.append(summands.back().skip.begin(), summands.back().skip.end());
    gradientTypes.push_back(cast<RankedTensorType>(sum->atomic.getVal().getType()));
  }
  for (int c = 0; c < coarsening; ++c)
    for (int i = 0; i < count; ++i)
      initial.push_back(createZero(b, loc, gradientTypes[i].clone(summands[i].element)));
  int results = coarsening * count;
  Value iv = part.loop.getInductionVar();
  auto accumulate = [&](scf::ForOp loop, ArrayRef<IRMapping> mappings) {
    SmallVector<Value> next;
    for (auto [c, mapping] : llvm::enumerate(mappings))
      for (int i = 0; i < count; ++i) {
        IRMapping copy = mapping;
        next.push_back(addSummand(b, loc, summands[i], copy,
                                  loop.getRegionIterArgs()[c * count + i]));
      }
    scf::YieldOp::create(b, loc, next);
  };

  // (the passes are recorded for the schedule's note)
  auto splitInPasses = [&](scf::ForOp loop) {
    std::optional<SplitLoops> split = splitContraction(b, loop);
    if (split) {
      part.contractionPasses = split->passes;
      part.contractionDepth = split->depth;
    }
    return split;
  };

  // Member j's frontier values are base + j * delta: the addresses of its
  // loads are affine in j, as in a hand-written loop.
  auto sumAffine = [&]() -> SmallVector<Value> {
    int count = part.frontier.size();
    Value basesAt = add(word(kBasesAt), mul(group, i32(b, loc, count)));
    Value deltasAt = word(kDeltasAt);
    SmallVector<Value> bases, deltas;
    for (int i = 0; i < count; ++i) {
      bases.push_back(readWord(b, loc, table, add(basesAt, i32(b, loc, i))));
      deltas.push_back(readWord(b, loc, table, add(deltasAt, i32(b, loc, i))));
    }
    auto loop = scf::ForOp::create(b, loc, i32(b, loc, 0), arith::SubIOp::create(b, loc, last, first),
                                   i32(b, loc, 1), initial);
    DenseMap<Value, Linear> linear; // (the frontier values: base + j * delta)
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value j = arith::ExtSIOp::create(b, loc, b.getI64Type(), loop.getInductionVar());
      IRMapping mapping;
      for (auto [value, base, delta] : llvm::zip(part.frontier, bases, deltas)) {
        if (Value key = keyed.lookupOrNull(value)) {
          mapping.map(value, key);
          continue;
        }
        Value word = arith::AddIOp::create(b, loc, base, arith::MulIOp::create(b, loc, j, delta));
        Value mapped = withDivisibility(b, wordAs(b, loc, word, value.getType()), value);
        mapping.map(value, mapped);
        if (!value.getType().isInteger(1)) {
          OpBuilder::InsertionGuard outside(b);
          b.setInsertionPoint(loop);
          linear[mapped] = {withDivisibility(b, wordAs(b, loc, base, value.getType()), value),
                            {withDivisibility(b, wordAs(b, loc, delta, value.getType()), value),
                             Value()}};
        }
      }
      accumulate(loop, cloneForIterations(b, part.frontierOps, iv, ivs, mapping,
                                          {zero, zero, zero}, grid, skip));
    }
    if (std::optional<SplitLoops> split = splitInPasses(loop)) {
      DenseMap<Value, Linear> passLinear;
      for (auto &[value, form] : linear)
        if (Value moved = split->mapping.lookupOrNull(value))
          passLinear[moved] = form;
      {
        OpBuilder::InsertionGuard outside(b);
        b.setInsertionPoint(split->loop);
        Value one = i32(b, loc, 1);
        Value first = split->member.getDefiningOp<arith::AddIOp>().getLhs();
        passLinear[split->member] = {first, {one, Value()}};
        passLinear[split->pass] = {i32(b, loc, 0), {Value(), one}};
      }
      carryLinearPointers(split->loop, std::move(passLinear), {split->passes, split->pass});
      return SmallVector<Value>(split->loop.getResults().take_front(results));
    }
    carryLinearPointers(loop, std::move(linear));
    return SmallVector<Value>(loop.getResults().take_front(results));
  };
  // Any grouping: each member's program id from the table, and the kernel's
  // own arithmetic from it.
  auto sumMembers = [&]() -> SmallVector<Value> {
    Value membersAt = word(kMembersAt);
    auto loop = scf::ForOp::create(b, loc, first, last, i32(b, loc, 1), initial);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value member = readI32(b, loc, table, add(membersAt, loop.getInductionVar()));
      accumulate(loop, cloneForIterations(b, part.valueOps, iv, ivs, IRMapping(),
                                          programIdsOf(b, loc, member, grid), grid, skip));
    }
    if (std::optional<SplitLoops> split = splitInPasses(loop))
      return SmallVector<Value>(split->loop.getResults());
    return SmallVector<Value>(loop.getResults());
  };
  // Each path writes its own sums: an scf.if whose results carry member loops'
  // accumulators makes ptxas serialize their wgmma (C7515).
  auto writeSums = [&](ArrayRef<Value> sums) {
    for (auto [i, sum] : llvm::enumerate(products)) {
      SmallVector<IRMapping> mappings =
          cloneForIterations(b, sum->addressOps, iv, ivs, keyed, {zero, zero, zero}, grid, {});
      for (auto [c, mapping] : llvm::enumerate(mappings))
        writeOnce(b, loc, *sum, sums[c * count + i], mapping,
                  coarsening > 1 ? inRange[c] : Value());
    }
  };
  if (!part.data.affine) {
    writeSums(sumMembers());
    return;
  }
  Value affine = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, word(kAffine), zero);
  auto branch = scf::IfOp::create(b, loc, affine, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(branch.thenBlock()->getTerminator());
  writeSums(sumAffine());
  b.setInsertionPoint(branch.elseBlock()->getTerminator());
  writeSums(sumMembers());
}

// scf.if (q < programs of part i) { part i } else { the next parts, q - programs }
void emitParts(OpBuilder &b, Location loc, MutableArrayRef<Part> parts, int index, Value q, Value table,
               const Grid &grid) {
  Value programs = parts[index].words[kPrograms];
  Value inPart = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, q, programs);
  bool last = index + 1 == static_cast<int>(parts.size());
  auto branch = scf::IfOp::create(b, loc, inPart, /*withElseRegion=*/!last);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(branch.thenBlock()->getTerminator());
    emitPart(b, loc, parts[index], q, table, grid);
    if (!last) {
      b.setInsertionPoint(branch.elseBlock()->getTerminator());
      emitParts(b, loc, parts, index + 1, arith::SubIOp::create(b, loc, q, programs), table,
                grid);
    }
  }
}

// What the kernel writes: the argument each store or atomic goes through
// (`plain` for stores and non-add atomics); false where a write cannot be
// traced to an argument.
bool collectWrites(tt::FuncOp kernel, DenseMap<BlockArgument, int> &written,
                   DenseSet<BlockArgument> &plain, DenseSet<BlockArgument> &twinned,
                   std::string &why) {
  bool known = true;
  kernel.walk([&](Operation *op) {
    if (op->getNumRegions() || isMemoryEffectFree(op) ||
        isa<tt::LoadOp, tt::PrintOp, tt::AssertOp, gpu::BarrierOp>(op))
      return;
    BlockArgument base;
    bool adds = false;
    if (auto store = dyn_cast<tt::StoreOp>(op))
      base = baseArgument(store.getPtr());
    else if (auto rmw = dyn_cast<tt::AtomicRMWOp>(op)) {
      base = baseArgument(rmw.getPtr());
      adds = rmw.getAtomicRmwOp() == tt::RMWOp::FADD;
    } else if (auto cas = dyn_cast<tt::AtomicCASOp>(op))
      base = baseArgument(cas.getPtr());
    if (!base || !isa<tt::FuncOp>(base.getOwner()->getParentOp())) {
      if (known)
        why = "the backward writes memory through " + where(op) +
              ", which tritonad cannot trace to an argument";
      known = false;
      return;
    }
    ++written[base];
    if (op->hasAttr(kWhenExclusive))
      twinned.insert(base);
    else if (!adds)
      plain.insert(base);
  });
  return known;
}

} // namespace

void dropExclusivityMarks(tt::FuncOp kernel) {
  kernel.walk([](Operation *op) {
    op->removeAttr(kWhenExclusive);
    op->removeAttr(kUnlessExclusive);
    op->removeAttr(kProgramsBranch);
    op->removeAttr(kProgramSlotAttr);
  });
}

void dropRefusedTwins(tt::FuncOp kernel) {
  SmallVector<tt::AtomicRMWOp> refused;
  kernel.walk([&](tt::AtomicRMWOp atomic) {
    if (atomic->hasAttr(kRefusedUnlessExclusive))
      refused.push_back(atomic);
  });
  for (tt::AtomicRMWOp atomic : refused)
    atomic.erase();
}

void keepRegridPrograms(tt::FuncOp kernel, RegridPrograms programs) {
  if (programs == RegridPrograms::All || kernel.getBody().empty())
    return;
  Block &entry = kernel.getBody().front();
  for (Operation &op : entry) {
    auto branch = dyn_cast<scf::IfOp>(&op);
    if (!branch || !branch->hasAttr(kProgramsBranch))
      continue;
    Block *kept = programs == RegridPrograms::Main ? branch.thenBlock() : branch.elseBlock();
    kept->getTerminator()->erase();
    entry.getOperations().splice(branch->getIterator(), kept->getOperations());
    branch.erase(); // (the other branch's ops with it)
    return;
  }
}

// Elementwise functions that take many instructions per element.
bool costlyPerElement(Operation *op) {
  if (op->getNumResults() != 1)
    return false;
  if (isa<tt::ExternElementwiseOp, tt::PreciseSqrtOp, tt::PreciseDivFOp>(op))
    return true;
  return op->getDialect() && op->getDialect()->getNamespace() == "math" &&
         !isa<math::AbsFOp, math::AbsIOp, math::CopySignOp, math::FmaOp>(op);
}

bool contractsOrReduces(Operation *op) { return isa<tt::DotOp, tt::ReduceOp, tt::ScanOp>(op); }

// Ops whose float tiles take arithmetic to compute (not only moving,
// reshaping or converting loaded data).
bool computesTiles(Operation *op) {
  if (contractsOrReduces(op))
    return true;
  if (isa<tt::LoadOp, tt::SplatOp, tt::BroadcastOp, tt::ExpandDimsOp, tt::ReshapeOp, tt::TransOp,
          tt::BitcastOp, tt::FpToFpOp, tt::AddPtrOp, tt::MakeRangeOp, arith::ConstantOp,
          arith::TruncFOp, arith::ExtFOp>(op))
    return false;
  return llvm::any_of(op->getResultTypes(), [](Type type) {
    return isa<RankedTensorType>(type) && isa<FloatType>(getElementTypeOrSelf(type));
  });
}

// A value the forward's program computes once, before the loop, and a part
// would compute again for every tile a member feeds (an epilogue's
// dC * act'(acc), attention's per-row statistics): the forward's programs
// store it into scratch (`tritonad_tape`, which a re-parallelized backward
// does not otherwise use), in a launch before the parts', and the parts load
// it. Scratch holds each value's region, every program's tile in turn:
// offsets programs * (bytes of the values before) + slot * bytes, the slot
// the program's, which the launch chooses (table word kSlotsAtWord): a grouped
// program order (GROUP_M) need not keep a group's members' program ids
// affine, a slot order can.
class Stager {
public:
  struct Staged {
    Value load;       // what the loop reads instead (until the parts are emitted)
    Operation *store; // the forward program's write
    int64_t bytes;
  };

  Stager(Value scratch, Value table) : scratch(scratch), table(table) {}
  explicit operator bool() const { return static_cast<bool>(scratch); }

  // The values of `slice` computed in `entry` (with arithmetic behind them)
  // that its ops in `loop` use, staged (rows of values only, no tiles, unless
  // `tiles`); a truncation in the loop of such a value first moves before it
  // (the scratch then holds the narrow tile). Returns whether anything was
  // staged.
  bool stage(const llvm::SetVector<Operation *> &slice, Block &entry, scf::ForOp loop,
             bool tiles) {
    SmallVector<Value> boundary;
    bool redirected = false;
    for (Operation *op : slice) {
      if (op->getBlock() != &entry)
        continue;
      for (Value result : op->getResults()) {
        bool usedInLoop = llvm::any_of(result.getUsers(), [&](Operation *user) {
          return slice.contains(user) && loop->isProperAncestor(user);
        });
        // Staged for an earlier loop (both loops of a two-loop attention
        // read the same row statistics): this loop reads the same copy (its
        // part would otherwise recompute it from the tiles behind it).
        if (auto it = staged.find(result); it != staged.end()) {
          if (usedInLoop) {
            result.replaceUsesWithIf(it->second.load, [&](OpOperand &use) {
              return loop->isProperAncestor(use.getOwner());
            });
            redirected = true;
          }
          continue;
        }
        auto type = dyn_cast<RankedTensorType>(result.getType());
        if (!type || !isa<FloatType>(type.getElementType()) || !fitsScratch(type, tiles))
          continue;
        if (usedInLoop && worthStaging(result, slice, entry))
          boundary.push_back(result);
      }
    }
    for (Value value : boundary)
      stageValue(narrowed(value, loop), loop, entry);
    return redirected || !boundary.empty();
  }

  // Results of the entry block's loops and branches that `loop`'s
  // contribution reads (the final statistics of a forward loop the backward
  // recomputes): a part cannot run the loop for every member, so the
  // forward's programs store them. Every use but the store reads the staged
  // copy until the parts are emitted (their slices then start from it).
  // Fails, staging nothing, where a value has no scratch slot, or is a tile
  // and `tiles` is false (see stagesTiles): `why` names the value and which.
  LogicalResult stageRegionResults(ArrayRef<Value> results, Block &entry, bool tiles,
                                   std::string &why) {
    for (Value value : results) {
      if (staged.count(value) || fitsScratch(value.getType(), tiles))
        continue;
      why = "its contribution depends on the result of " + where(value.getDefiningOp()) +
            (tapeSlotFor(value.getType())
                 ? ", a tile its part would read from scratch while its products mix fewer "
                   "than 64 rows with 64 or more (miscompiled by Triton 3.6 on Hopper, see "
                   "stagesTiles)"
                 : ", which has no scratch slot");
      return failure();
    }
    for (Value value : results)
      if (!staged.count(value))
        stageValue(value, nullptr, entry);
    return success();
  }

  // After the parts are emitted: the forward's programs compute their own
  // values again; a store no part reads is dropped. Returns the bytes per
  // program of the scratch (0: nothing staged for a part).
  int64_t finish(ArrayRef<Operation *> partOps) {
    int64_t total = 0;
    bool read = false;
    SmallVector<Value> addresses;
    for (auto &[value, entry] : staged) {
      total += entry.bytes;
      Operation *load = entry.load.getDefiningOp();
      bool used = llvm::is_contained(partOps, load);
      read |= used;
      entry.load.replaceAllUsesWith(value);
      addresses.append(load->getOperands().begin(), load->getOperands().end());
      load->erase();
      if (!used) {
        addresses.append(entry.store->getOperands().begin(), entry.store->getOperands().end());
        entry.store->erase();
      }
    }
    // (where no part reads scratch, neither does the forward's program: its
    // slot's read of the table goes too, whose launch may have no table)
    if (slotOfProgram)
      addresses.push_back(slotOfProgram);
    eraseUnused(addresses);
    return read ? total : 0;
  }

  // A reduction member's contribution (a row of values: a program's column
  // sums), staged where its part reads staged values already (the forward's
  // programs then run anyway): the member's program reads each member's sums
  // instead of computing them again from its tiles. Returns whether it was.
  bool stageSums(Value contribution, Block &entry) {
    if (staged.count(contribution) || !fitsScratch(contribution.getType(), /*tiles=*/false))
      return false;
    stageValue(contribution, nullptr, entry);
    return true;
  }

  // The uses, in the entry block's ops computing `root`, of values staged
  // for a part: redirected to their staged copies (a reduction member then
  // reads what its part's loop reads, until the parts are emitted).
  void redirect(Value root, Block &entry) {
    SmallVector<Operation *> work;
    DenseSet<Operation *> seen;
    if (Operation *def = root.getDefiningOp())
      work.push_back(def);
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!seen.insert(op).second || op->getBlock() != &entry)
        continue;
      for (OpOperand &use : op->getOpOperands()) {
        if (auto it = staged.find(use.get()); it != staged.end() && it->second.store != op) {
          use.set(it->second.load);
          continue;
        }
        if (Operation *def = use.get().getDefiningOp())
          work.push_back(def);
      }
    }
  }

  // The bytes per program of the staged values `ops` load.
  int64_t bytesRead(ArrayRef<Operation *> ops) const {
    int64_t bytes = 0;
    for (auto &[value, entry] : staged)
      if (llvm::is_contained(ops, entry.load.getDefiningOp()))
        bytes += entry.bytes;
    return bytes;
  }

private:
  // Whether computing `value` once beats computing it in every part that
  // reads it: it takes a product, a reduction or a function of many
  // instructions per element, or arithmetic on several loaded tiles (the
  // part then loads one tile instead: a leaky ReLU's dC and saved fp32 acc).
  // Arithmetic on one tile (dC * 0.5) is cheaper than its round trip.
  static bool worthStaging(Value value, const llvm::SetVector<Operation *> &slice,
                           Block &entry) {
    SmallVector<Operation *> work;
    DenseSet<Operation *> seen;
    bool computes = false, costly = false;
    int tiles = 0;
    if (Operation *def = value.getDefiningOp())
      work.push_back(def);
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!seen.insert(op).second || op->getBlock() != &entry || !slice.contains(op))
        continue;
      computes |= computesTiles(op);
      costly |= contractsOrReduces(op) ||
                (costlyPerElement(op) && isa<RankedTensorType>(op->getResult(0).getType()));
      tiles += isa<tt::LoadOp>(op) && isa<RankedTensorType>(op->getResult(0).getType());
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          work.push_back(def);
    }
    return computes && (costly || tiles > 1);
  }

  // `value`, or its truncation where the loop uses it only truncated (the
  // truncation then happens once, before the loop).
  static Value narrowed(Value value, scf::ForOp loop) {
    SmallVector<arith::TruncFOp> truncations;
    for (OpOperand &use : value.getUses()) {
      if (!loop->isProperAncestor(use.getOwner()))
        continue;
      auto truncation = dyn_cast<arith::TruncFOp>(use.getOwner());
      if (!truncation || (!truncations.empty() &&
                          (truncation.getType() != truncations.front().getType() ||
                           truncation->getAttrs() != truncations.front()->getAttrs())))
        return value;
      truncations.push_back(truncation);
    }
    if (truncations.empty())
      return value;
    OpBuilder b(value.getContext());
    b.setInsertionPointAfterValue(value);
    Operation *once = b.clone(*truncations.front());
    once->setOperand(0, value);
    for (arith::TruncFOp truncation : truncations) {
      truncation.replaceAllUsesWith(once->getResult(0));
      truncation.erase();
    }
    return once->getResult(0);
  }

  // Whether a value of `type` has a scratch slot: tiles (rank 2 and more)
  // only where `tiles` allows them (see stagesTiles).
  static bool fitsScratch(Type type, bool tiles) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tapeSlotFor(type) && (tiles || !tensor || tensor.getRank() <= 1);
  }

  // The ops computing `values` that nothing uses any more (arithmetic and
  // loads), erased from the values back.
  static void eraseUnused(ArrayRef<Value> values) {
    SmallVector<Operation *> work;
    for (Value value : values)
      if (Operation *def = value.getDefiningOp())
        work.push_back(def);
    DenseSet<Operation *> erased;
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (erased.contains(op) || !op->use_empty() || op->getNumRegions() ||
          !(isMemoryEffectFree(op) || isa<tt::LoadOp>(op)))
        continue;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          work.push_back(def);
      erased.insert(op);
      op->erase();
    }
  }

  // This program's slot and the number of programs, read once, at the start
  // of `entry` (where every staged value's store can use them).
  void locate(Block &entry, Location loc) {
    if (slotOfProgram)
      return;
    OpBuilder b(&entry, entry.begin());
    Value program = linearProgramId(b, loc, {true, true, true}, &programs);
    Value slotAt = arith::AddIOp::create(
        b, loc, readI32(b, loc, table, kSlotsAtWord),
        arith::TruncIOp::create(b, loc, b.getI32Type(), program));
    slotOfProgram = readWord(b, loc, table, slotAt);
    slotOfProgram.getDefiningOp()->setAttr(kProgramSlotAttr, b.getUnitAttr());
  }

  void stageValue(Value value, scf::ForOp loop, Block &entry) {
    Location loc = value.getLoc();
    locate(entry, loc);
    OpBuilder b(value.getContext());
    b.setInsertionPointAfterValue(value);
    TapeSlot slot = *tapeSlotFor(value.getType());
    int64_t bytes = (slot.bytes + 15) / 16 * 16; // (aligned for vector accesses)
    auto constant = [&](int64_t v) {
      return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v)).getResult();
    };
    Value offset = arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, slotOfProgram, constant(bytes)),
                                         arith::MulIOp::create(b, loc, programs, constant(offsetBytes)));
    Value ptr = tapeAddress(b, loc, scratch, offset, value.getType(), slot);
    createStore(b, loc, ptr, value, Value());
    Operation *store = &*std::prev(b.getInsertionPoint());
    Value load = createLoad(b, loc, ptr, Value(), Value());
    // (without a loop: every use but the store)
    value.replaceUsesWithIf(load, [&](OpOperand &use) {
      return loop ? loop->isProperAncestor(use.getOwner()) : use.getOwner() != store;
    });
    staged.insert({value, Staged{load, store, bytes}});
    offsetBytes += bytes;
  }

  Value scratch, table;
  Value slotOfProgram, programs; // (once the first value is staged)
  int64_t offsetBytes = 0;
  llvm::MapVector<Value, Staged> staged;
};

// Which of `atomics` (in `loop`) may have tiles, not only rows of values,
// staged for them: not where the products of tiles of the contributions that
// share one (those of one part: attention's dK and dV share the scores) mix
// fewer than 64 rows with 64 or more. On Hopper, Triton 3.6 then gives some
// products the warpgroup MMA and others the warp MMA, and a loaded tile
// feeding both (two copies in shared memory, one per layout) was
// miscompiled: causal attention with BLOCK_N = 32 < BLOCK_M = 64, its part
// reading dO / l from scratch, read shared memory out of bounds in a
// warpgroup MMA (compute-sanitizer) and gave a wrong dK; with its rows of
// values (the statistics) staged alone it matched. A matmul's dA and dB
// parts, 64 and 32 rows, share no product and were right with the tile.
SmallVector<bool> stagesTiles(ArrayRef<tt::AtomicRMWOp> atomics, Block &entry, scf::ForOp loop) {
  // (per atomic: its products, and the family of contributions it is in)
  SmallVector<llvm::SetVector<Operation *>> products(atomics.size());
  SmallVector<int> family(atomics.size());
  for (auto [index, atomic] : llvm::enumerate(atomics)) {
    llvm::SetVector<Operation *> slice;
    llvm::SetVector<Value> regionResults; // (leaves here: the products are what counts)
    std::string why;
    (void)collectSlice({tt::AtomicRMWOp(atomic).getVal()}, entry, loop, slice, why, {},
                       &regionResults);
    for (Operation *op : slice)
      if (isa<tt::DotOp>(op))
        products[index].insert(op);
    family[index] = index;
    // (joins the families of the earlier contributions it shares a product with)
    for (size_t other = 0; other < index; ++other)
      if (family[other] != family[index] &&
          llvm::any_of(products[other], [&](Operation *op) { return products[index].contains(op); })) {
        int from = family[other], to = family[index];
        for (int &f : family)
          f = f == from ? to : f;
      }
  }
  SmallVector<bool> narrow(atomics.size()), wide(atomics.size());
  for (auto [index, dots] : llvm::enumerate(products))
    for (Operation *dot : dots) {
      ArrayRef<int64_t> shape = cast<RankedTensorType>(dot->getResult(0).getType()).getShape();
      (shape[shape.size() - 2] < 64 ? narrow : wide)[family[index]] = true;
    }
  SmallVector<bool> tiles;
  for (int f : family)
    tiles.push_back(!(narrow[f] && wide[f]));
  return tiles;
}

// Why a part cannot compute what `slices` compute for each member: a load
// through a pointer not traced to an argument, or of memory the backward
// writes; "" where neither. (The residuals the forward saved are read
// through a bitcast of the i8 buffer: per forward program, like any other
// input.)
std::string readsWrittenMemory(ArrayRef<const llvm::SetVector<Operation *> *> slices,
                               const DenseMap<BlockArgument, int> &written) {
  std::string why;
  for (const llvm::SetVector<Operation *> *slice : slices)
    for (Operation *op : *slice)
      if (auto load = dyn_cast<tt::LoadOp>(op)) {
        BlockArgument from = baseArgumentThroughBitcasts(load.getPtr());
        if (!from || !isa<tt::FuncOp>(from.getOwner()->getParentOp()))
          why = "it loads through a pointer tritonad cannot trace to an argument (" +
                where(op) + ")";
        else if (written.contains(from))
          why = "its contribution reads '" + argumentName(from) + "', which the backward writes";
      }
  return why;
}

// The sum along an axis that `contribution` is, through a rounding and ops
// that only reshape or convert it: a tt.reduce of one float tile whose
// combiner adds; null for anything else.
tt::ReduceOp sumAlongAxis(Value contribution) {
  Value value = contribution;
  while (Operation *def = value.getDefiningOp()) {
    if (auto reduce = dyn_cast<tt::ReduceOp>(def)) {
      if (reduce.getSrcs().size() != 1 ||
          !isa<FloatType>(getElementTypeOrSelf(reduce.getSrcs()[0].getType())))
        return {};
      Block &combine = reduce.getCombineOp().front();
      auto sum = dyn_cast<arith::AddFOp>(&combine.front());
      bool adds = sum && combine.getNumArguments() == 2 &&
                  combine.getOperations().size() == 2 &&
                  combine.getTerminator()->getNumOperands() == 1 &&
                  combine.getTerminator()->getOperand(0) == sum.getResult() &&
                  llvm::is_contained(sum->getOperands(), combine.getArgument(0)) &&
                  llvm::is_contained(sum->getOperands(), combine.getArgument(1));
      return adds ? reduce : tt::ReduceOp();
    }
    auto reshape = dyn_cast<tt::ReshapeOp>(def);
    if (!(reshape && !reshape.getAllowReorder()) &&
        !isa<tt::ExpandDimsOp, arith::ExtFOp, arith::TruncFOp>(def))
      return {};
    value = def->getOperand(0);
  }
  return {};
}

// Atomic sums at the kernel's top level (once per forward program, outside
// every loop) whose contribution is a sum along an axis of a value the
// program computes, at addresses that depend on the program only through
// values of a part's key: a linear layer's bias gradient, db[n] = sum_m
// G[m, n], beside dW's part keyed by n. Each joins that part as a reduction
// member: one more program per group sums it over the group's members
// (emitReductions), so it is written once, by one program, with the part's
// grouping. Those that cannot keep their atomics, with a note why.
// `unknownWrite`: why the backward's writes are not all known, or "".
void joinReductions(Block &entry, std::vector<Part> &parts, ArrayRef<std::string> shadows,
                    Stager &stager, const DenseMap<BlockArgument, int> &written,
                    const DenseSet<BlockArgument> &plain, const DenseSet<BlockArgument> &twinned,
                    const std::string &unknownWrite, std::vector<RegridNote> &refused) {
  SmallVector<tt::AtomicRMWOp> atomics(entry.getOps<tt::AtomicRMWOp>());
  std::vector<Part> ownParts; // (appended last: `parts` is searched meanwhile)
  for (tt::AtomicRMWOp atomic : atomics) {
    BlockArgument base = baseArgument(atomic.getPtr());
    std::string name = base ? argumentName(base) : "";
    if (!base || !llvm::is_contained(shadows, name) ||
        atomic.getAtomicRmwOp() != tt::RMWOp::FADD || !atomic.getResult().use_empty() ||
        !isa<RankedTensorType>(atomic.getVal().getType()) || !sumAlongAxis(atomic.getVal()))
      continue;
    auto refuse = [&](std::string reason) {
      refused.push_back({name, false, "not re-parallelized: " + reason});
    };
    if (!unknownWrite.empty()) {
      refuse(unknownWrite);
      continue;
    }
    if (plain.contains(base) || (twinned.contains(base) && !atomic->hasAttr(kUnlessExclusive))) {
      refuse("the backward also stores into it directly");
      continue;
    }
    Accumulation sum{atomic, name};
    sum.element = getElementTypeOrSelf(atomic.getVal().getType());
    sum.reduction = true;
    sum.reducedAxis = sumAlongAxis(atomic.getVal()).getAxis();
    SmallVector<Value> addressRoots = planMask(sum);
    // (the slices lie in the entry block: any part's loop serves collectSlice)
    scf::ForOp anyLoop = parts.front().loop;
    std::string why;
    llvm::SetVector<Operation *> addressSlice;
    llvm::SetVector<Value> key;
    if (failed(collectSlice(addressRoots, entry, anyLoop, addressSlice, why)) ||
        failed(collectFrontier(addressRoots, inProgramOrder(addressSlice, entry), anyLoop,
                               /*throughLoads=*/false, key, why))) {
      refuse(why);
      continue;
    }
    // The part whose key holds the fewest values besides these: with none,
    // the sum joins it; with others (a batched product's dB keyed by the
    // column of tiles and the batch, the bias by the column only), the sum
    // gets a part of its own grouped by its key alone, over that loop (its
    // bounds only size the table), so that each group sums every program
    // adding to its addresses.
    Part *joined = nullptr;
    for (Part &part : parts)
      if (!part.data.tripsVary && !part.data.lowerVaries &&
          llvm::all_of(key, [&](Value value) { return llvm::is_contained(part.key, value); }) &&
          (!joined || part.key.size() < joined->key.size()))
        joined = &part;
    if (!joined) {
      refuse("its addresses depend on the program through values that no re-parallelized "
             "product's part (a loop with the same trip count for every program) groups its "
             "programs by");
      continue;
    }
    if (stager && stager.bytesRead(joined->valueOps) > 0) {
      Value contribution = atomic.getVal();
      if (auto rounded = contribution.getDefiningOp<arith::TruncFOp>())
        contribution = rounded.getIn();
      sum.sumsStaged = stager.stageSums(contribution, entry);
    }
    if (stager && !sum.sumsStaged)
      stager.redirect(atomic.getVal(), entry);
    llvm::SetVector<Operation *> valueSlice, fromKey;
    if (failed(collectSlice({atomic.getVal()}, entry, joined->loop, valueSlice, why)) ||
        failed(collectSlice(addressRoots, entry, joined->loop, fromKey, why, joined->key))) {
      refuse(why);
      continue;
    }
    std::string readsWritten = readsWrittenMemory({&valueSlice, &fromKey}, written);
    if (!readsWritten.empty()) {
      refuse(readsWritten);
      continue;
    }
    sum.valueOps = inProgramOrder(valueSlice, entry);
    sum.addressOps = inProgramOrder(fromKey, entry);
    if (joined->key.size() == key.size()) {
      joined->sums.push_back(std::move(sum));
      continue;
    }
    Part own{joined->loop};
    own.key.assign(key.begin(), key.end());
    for (Value component : key) {
      std::optional<SymbolicInt> symbol = symbolize(component, /*programIds=*/true);
      if (!symbol)
        break;
      own.data.key.push_back(std::move(*symbol));
    }
    if (own.data.key.size() != key.size()) {
      refuse("its addresses depend on the program through values the launch cannot evaluate");
      continue;
    }
    own.data.lower = joined->data.lower;
    own.data.upper = joined->data.upper;
    own.data.step = joined->data.step;
    own.data.addressKeys = own.key.size();
    own.sums.push_back(std::move(sum));
    ownParts.push_back(std::move(own));
  }
  for (Part &part : ownParts)
    parts.push_back(std::move(part));
}

LogicalResult checkDeterministic(tt::FuncOp kernel, const std::vector<RegridNote> &notes) {
  dropRefusedTwins(kernel);
  LogicalResult result = success();
  kernel.walk([&](tt::AtomicRMWOp atomic) {
    auto why = atomic->getAttrOfType<StringAttr>(kUnlessRegridded);
    if (!why)
      return;
    BlockArgument base = baseArgument(atomic.getPtr());
    std::string left;
    for (const RegridNote &note : notes)
      if (base && note.shadow == argumentName(base) && !note.reparallelized)
        left += "; " + note.how;
    atomic.emitError(why.getValue().str() + left +
                     "; mode='deterministic' has no atomic-free schedule for it: use "
                     "mode='auto' (atomics where the programs' addresses meet), or index the "
                     "input so that each program loads addresses of its own (a shifted load "
                     "such as x[i + 1] reads the next program's first element)");
    result = failure();
  });
  kernel.walk([](tt::AtomicRMWOp atomic) { atomic->removeAttr(kUnlessRegridded); });
  return result;
}

BlockArgument hiddenArgument(tt::FuncOp kernel, StringRef name, unsigned width) {
  for (BlockArgument arg : kernel.getBody().front().getArguments())
    if (auto type = dyn_cast<tt::PointerType>(arg.getType());
        type && type.getPointeeType().isInteger(width) && argumentName(arg) == name)
      return arg;
  return BlockArgument();
}

namespace {

// Whether and how the atomic accumulations of a derived backward are
// re-parallelized, decided before any part's IR is built (planRegrid); the
// emission (emitRegrid) follows it and decides nothing.
struct RegridPlan {
  // The parts, final: their members (reduction members joined), keys, loop
  // bounds, frontier and coarsening; each accumulation's phase and how it
  // writes (its coverage, store or read-add-write), and the exclusive twin
  // it takes with it.
  std::vector<Part> parts;
  // The accumulations left as they are, each with why (the report's notes).
  std::vector<RegridNote> refused;
};

// Each accumulation's launch (its phase) and how it writes: see below.
// `written`: the writes into each argument, the twins the parts take counted.
void planWrites(std::vector<Part> &parts, const DenseMap<BlockArgument, int> &written,
                bool overwrite) {
  // (the twins go with their parts: they no longer write)
  DenseMap<BlockArgument, int> writers = written;
  for (Part &part : parts)
    for (Accumulation &sum : part.sums)
      if (sum.twin)
        --writers[baseArgument(sum.atomic.getPtr())];

  // Phases: a part adding into a shadow that an earlier part (another loop:
  // the tutorial's off-band and diagonal key blocks) adds into runs in a later
  // launch. Plain writes need the part to be its shadow's only writer in its
  // launch: every write into the shadow is a part's, and no other
  // accumulation of its own part adds into it; stores, the first writer too.
  DenseMap<BlockArgument, int> regridded, lastPhase;
  for (Part &part : parts)
    for (Accumulation &sum : part.sums)
      ++regridded[baseArgument(sum.atomic.getPtr())];
  for (Part &part : parts) {
    int phase = 0;
    for (Accumulation &sum : part.sums)
      if (auto it = lastPhase.find(baseArgument(sum.atomic.getPtr())); it != lastPhase.end())
        phase = std::max(phase, it->second + 1);
    part.data.phase = phase;
    for (Accumulation &sum : part.sums) {
      RegridPart &data = sum.data;
      data = part.data;
      data.shadow = sum.shadow;
      BlockArgument base = baseArgument(sum.atomic.getPtr());
      int inPart = llvm::count_if(part.sums, [&](Accumulation &other) {
        return baseArgument(other.atomic.getPtr()) == base;
      });
      bool soleWriter = writers.lookup(base) == regridded.lookup(base) && inPart == 1;
      bool firstWriter = !lastPhase.contains(base);
      KeyedDigits keyed;
      keyed.allowWraps = true; // (_regrid._reaches_each_once checks them)
      auto coverageUnder = [&](Value mask) -> std::optional<ShadowCoverage> {
        keyed = KeyedDigits();
        keyed.allowWraps = true;
        if (!soleWriter || part.data.tripsVary)
          return std::nullopt;
        return analyzeCoverage(sum.atomic, sum.atomic.getPtr(), mask, part.key, &keyed);
      };
      std::optional<ShadowCoverage> reached = coverageUnder(sum.mask);
      // (a zero lane's condition the coverage cannot read: the mask as it was,
      // whose coverage may be read; its ops are among the narrowed mask's)
      if (!reached && sum.mask != sum.unnarrowedMask) {
        reached = coverageUnder(sum.unnarrowedMask);
        if (reached)
          sum.mask = sum.unnarrowedMask;
      }
      if (reached) {
        data.hasCoverage = true;
        data.coverage = std::move(*reached);
        data.coverage.shadow = sum.shadow;
        data.coverage.condition.value = 1;
        data.keyDigits = keyed.digitOfKey;
        data.conditionKeys = keyed.conditionKeys;
      }
      data.storeOnly = overwrite && soleWriter && firstWriter;
    }
    for (Accumulation &sum : part.sums)
      lastPhase[baseArgument(sum.atomic.getPtr())] = phase;
  }
}

// The re-parallelization of the candidates of `kernel` (atomic adds of a dot
// product into `shadows`, in a top-level loop, and the sums along an axis
// that join their parts), or why each stays atomic. Builds no part's IR; the
// Stager stages values the parts would read from scratch as it goes (a
// part's slice is what remains to compute after staging), which its
// `finish` undoes where no part reads them.
RegridPlan planRegrid(tt::FuncOp kernel, ArrayRef<std::string> shadows, bool overwrite,
                      bool deterministic, Stager &stager) {
  Block &entry = kernel.getBody().front();
  RegridPlan plan;
  std::vector<Part> &parts = plan.parts;
  // Candidates: atomic adds of a dot product into a shadow, in a top-level loop.
  DenseMap<BlockArgument, int> written;
  DenseSet<BlockArgument> plain, twinned;
  std::string unknownWrite;
  bool writesKnown = collectWrites(kernel, written, plain, twinned, unknownWrite);
  for (auto loop : entry.getOps<scf::ForOp>()) {
    std::vector<Part> loopParts;
    // (staging edits the loop: the atomics first)
    SmallVector<tt::AtomicRMWOp> atomics(loop.getBody()->getOps<tt::AtomicRMWOp>());
    SmallVector<bool> tilesStaged = stagesTiles(atomics, entry, loop);
    for (auto [atomic, tiles] : llvm::zip(atomics, tilesStaged)) {
      BlockArgument base = baseArgument(atomic.getPtr());
      std::string name = base ? argumentName(base) : "";
      if (!base || !llvm::is_contained(shadows, name) ||
          atomic.getAtomicRmwOp() != tt::RMWOp::FADD || !atomic.getResult().use_empty() ||
          !isa<RankedTensorType>(atomic.getVal().getType()))
        continue;
      Accumulation sum{atomic, name};
      sum.element = getElementTypeOrSelf(atomic.getVal().getType());
      sum.mixesRows = !tiles;
      llvm::SetVector<Operation *> valueSlice, addressSlice;
      llvm::SetVector<Value> regionResults;
      std::string why;
      bool ok = succeeded(collectSlice({atomic.getVal()}, entry, loop, valueSlice, why, {},
                                       stager ? &regionResults : nullptr));
      if (ok && !regionResults.empty()) {
        if (failed(stager.stageRegionResults(regionResults.getArrayRef(), entry, tiles, why))) {
          ok = false;
        } else {
          valueSlice.clear();
          ok = succeeded(collectSlice({atomic.getVal()}, entry, loop, valueSlice, why));
        }
      }
      if (llvm::none_of(valueSlice, [](Operation *op) { return isa<tt::DotOp>(op); }))
        continue; // not a product of tiles: partial buffers or atomics suit it
      auto refuse = [&](std::string reason) {
        plan.refused.push_back({name, false, "not re-parallelized: " + reason});
      };
      if (!ok) {
        refuse(why);
        continue;
      }
      if (stager && stager.stage(valueSlice, entry, loop, tiles)) {
        valueSlice.clear();
        if (failed(collectSlice({atomic.getVal()}, entry, loop, valueSlice, why))) {
          refuse(why);
          continue;
        }
      }
      // What the forward's program computes once, before the loop, a part
      // would compute for every iteration of every member: products of tiles,
      // or functions of many instructions per element (an activation's
      // derivative: erf and exp take tens of instructions per element on the
      // CUDA cores, about 2.5x a member's product of tiles on the tensor
      // cores; a GELU epilogue, 2048^3 fp16: 1578 us as parts, though with
      // uncoalesced residual loads since fixed, against these atomics' 168).
      // What the loop computes per iteration, a part computes once per
      // member's iteration too (but see the rule on several products below).
      auto hoisted = [&](auto isWork) {
        return llvm::count_if(valueSlice, [&](Operation *op) {
          return op->getBlock() == &entry && isWork(op);
        });
      };
      int products = hoisted([](Operation *op) { return isa<tt::DotOp>(op); });
      int functions = hoisted([](Operation *op) {
        return costlyPerElement(op) && isa<RankedTensorType>(op->getResult(0).getType());
      });
      if (products + functions > 0) {
        auto counted = [](int n, const char *one, const char *many) {
          return std::to_string(n) + " " + (n == 1 ? one : many);
        };
        refuse("its contribution evaluates " +
               (products ? counted(products, "product of tiles", "products of tiles") : "") +
               (products && functions ? " and " : "") +
               (functions ? counted(functions, "function", "functions") +
                                " (exp, erf, ...) per element"
                          : "") +
               " that the forward's program computes once, before the loop at " +
               locationText(loop.getLoc()) +
               ", and programs of its own would evaluate again in every iteration");
        continue;
      }
      if (!writesKnown) {
        refuse(unknownWrite);
        continue;
      }
      // (a plain write taken only when the atomic is not, its exclusive twin,
      // may stay: the parts add under the atomic's mask, which excludes it)
      if (plain.contains(base) ||
          (twinned.contains(base) && !atomic->hasAttr(kUnlessExclusive))) {
        refuse("the backward also stores into it directly");
        continue;
      }
      SmallVector<Value> addressRoots = planMask(sum);
      if (failed(collectSlice(addressRoots, entry, loop, addressSlice, why))) {
        refuse(why);
        continue;
      }
      std::string readsWritten = readsWrittenMemory({&valueSlice, &addressSlice}, written);
      if (!readsWritten.empty()) {
        refuse(readsWritten);
        continue;
      }
      sum.valueOps = inProgramOrder(valueSlice, entry);
      SmallVector<Operation *> addressOps = inProgramOrder(addressSlice, entry);
      llvm::SetVector<Value> key;
      if (failed(collectFrontier(addressRoots, addressOps, loop, /*throughLoads=*/false, key, why))) {
        refuse(why);
        continue;
      }
      std::vector<SymbolicInt> symbols;
      for (Value component : key) {
        std::optional<SymbolicInt> symbol = symbolize(component, /*programIds=*/true);
        if (!symbol) {
          why = "its addresses depend on the program through " +
                where(component.getDefiningOp()) + ", which the launch cannot evaluate";
          break;
        }
        symbols.push_back(std::move(*symbol));
      }
      if (symbols.size() != key.size()) {
        refuse(why);
        continue;
      }
      addressRoots = dropZeroLanes(sum, addressRoots, entry, loop, key);
      llvm::SetVector<Operation *> fromKey;
      if (failed(collectSlice(addressRoots, entry, loop, fromKey, why, key.getArrayRef()))) {
        refuse(why);
        continue;
      }
      sum.addressOps = inProgramOrder(fromKey, entry);
      // One part per key: accumulations whose addresses depend on the
      // program through the same values share their members.
      auto same = llvm::find_if(loopParts, [&](const Part &part) {
        return part.key.size() == key.size() && llvm::all_of(key, [&](Value value) {
                 return llvm::is_contained(part.key, value);
               });
      });
      if (same == loopParts.end()) {
        Part part{loop};
        part.key.assign(key.begin(), key.end());
        part.data.key = std::move(symbols);
        loopParts.push_back(std::move(part));
        same = std::prev(loopParts.end());
      }
      same->sums.push_back(std::move(sum));
    }
    if (loopParts.empty())
      continue;

    // Measured: attention's dK and dV as one part (7 products of tiles per
    // iteration for 5, each member's saved statistics and accumulator read
    // per key block) ran 1.6-1.9x slower than these atomics on an H100
    // (causal, fp16, D=64, L = 1024 ... 8192; benchmarks/loops.md). Where
    // atomics are allowed, a contribution of several products keeps them.
    if (!deterministic) {
      for (Part &part : loopParts)
        llvm::erase_if(part.sums, [&](Accumulation &sum) {
          int products =
              llvm::count_if(sum.valueOps, [](Operation *op) { return isa<tt::DotOp>(op); });
          if (products > 1)
            plan.refused.push_back(
                {sum.shadow, false,
                 "not re-parallelized: its contribution takes " + std::to_string(products) +
                     " products of tiles per forward program (programs of their own measured "
                     "1.6-1.9x slower than these atomics for attention; mode=\"deterministic\" "
                     "takes them)"});
          return products > 1;
        });
      llvm::erase_if(loopParts, [](Part &part) { return part.sums.empty(); });
    }

    for (Part &part : loopParts) {
      llvm::SetVector<Operation *> valueSlice;
      SmallVector<Value> values;
      for (Accumulation &sum : part.sums) {
        valueSlice.insert(sum.valueOps.begin(), sum.valueOps.end());
        values.push_back(sum.atomic.getVal());
      }
      part.valueOps = inProgramOrder(valueSlice, entry);
      std::string why;
      auto refuse = [&](std::string reason) {
        for (Accumulation &sum : part.sums)
          plan.refused.push_back({sum.shadow, false, "not re-parallelized: " + reason});
      };
      // The fast path needs every value the contributions take from the
      // program to be computable on the host.
      llvm::SetVector<Value> frontier;
      llvm::SetVector<Operation *> fromFrontier;
      if (succeeded(collectFrontier(values, part.valueOps, loop, /*throughLoads=*/true, frontier,
                                    why))) {
        bool &affine = part.data.affine;
        affine = true;
        for (Value value : frontier) {
          std::optional<SymbolicInt> symbol = symbolize(value, /*programIds=*/true);
          affine &= symbol.has_value();
          if (symbol)
            part.data.frontier.push_back(std::move(*symbol));
        }
        part.frontier.assign(frontier.begin(), frontier.end());
        affine = affine && succeeded(collectSlice(values, entry, loop, fromFrontier, why,
                                                  part.frontier));
        part.frontierOps = inProgramOrder(fromFrontier, entry);
        if (!affine) {
          part.data.frontier.clear();
          part.frontier.clear();
          part.frontierOps.clear();
        }
      }
      // The step the same for every program; the lower bound too, or the
      // same for a group's members (a function of the key: the part computes
      // it from the group's key; where the addresses do not already make it
      // one, the values it takes from the program join the key, so members
      // share it: a loop over the program's own diagonal block); the upper
      // bound may depend on the program (the launch counts the members
      // reaching each iteration).
      std::optional<SymbolicInt> lower = symbolize(loop.getLowerBound());
      std::optional<SymbolicInt> step = symbolize(loop.getStep());
      std::optional<SymbolicInt> upper = symbolize(loop.getUpperBound());
      part.data.addressKeys = part.key.size();
      if (!lower && step) {
        llvm::SetVector<Operation *> lowerSlice;
        llvm::SetVector<Value> starts;
        std::string ignored;
        if (succeeded(collectSlice({loop.getLowerBound()}, entry, loop, lowerSlice, ignored)) &&
            succeeded(collectFrontier({loop.getLowerBound()}, inProgramOrder(lowerSlice, entry),
                                      loop, /*throughLoads=*/false, starts, ignored)))
          for (Value start : starts) {
            if (llvm::is_contained(part.key, start))
              continue;
            std::optional<SymbolicInt> symbol = symbolize(start, /*programIds=*/true);
            if (!symbol)
              break;
            part.key.push_back(start);
            part.data.key.push_back(std::move(*symbol));
          }
      }
      llvm::SetVector<Operation *> boundSlice;
      bool boundsKnown = succeeded(collectSlice({loop.getLowerBound(), loop.getStep()}, entry,
                                                loop, boundSlice, why, part.key));
      if (!lower && boundsKnown &&
          llvm::none_of(boundSlice, [](Operation *op) {
            return isa<tt::GetProgramIdOp, tt::GetNumProgramsOp>(op);
          })) {
        lower = symbolize(loop.getLowerBound(), /*programIds=*/true);
        part.data.lowerVaries = lower.has_value();
      }
      if (!upper || part.data.lowerVaries) {
        upper = symbolize(loop.getUpperBound(), /*programIds=*/true);
        part.data.tripsVary = upper.has_value();
      }
      if (!lower || !upper || !step || !boundsKnown) {
        refuse("the loop at " + locationText(loop.getLoc()) +
               " starts or steps by values that depend on the program or on loaded data, or "
               "its trip count cannot be evaluated at launch");
        continue;
      }
      part.boundOps = inProgramOrder(boundSlice, entry);
      part.data.lower = std::move(*lower);
      part.data.upper = std::move(*upper);
      part.data.step = std::move(*step);
      // Iterations per program: a gradient tile smaller than a hand-written
      // kernel's output tile (128 x 128) takes several iterations, which
      // share each member's loads of tiles that do not depend on the
      // iteration. Where trips vary, one: members reach a tile's iterations
      // unevenly.
      int64_t elements = 0;
      for (Accumulation &sum : part.sums)
        elements += cast<RankedTensorType>(sum.atomic.getVal().getType()).getNumElements();
      part.data.coarsening =
          part.data.tripsVary
              ? 1
              : static_cast<int>(std::clamp<int64_t>(
                    llvm::PowerOf2Ceil(std::max<int64_t>(1, (128 * 128) / std::max<int64_t>(
                                                                              1, elements))),
                    1, 4));
      parts.push_back(std::move(part));
    }
  }
  // Measured on an H100 (Triton 3.6): attention written as two loops with
  // BLOCK_N = 32 < BLOCK_M = 64 in fp16 or bf16, its dK and dV summed by a part
  // per loop reading the forward's residuals, read an illegal address and gave
  // a wrong dK; with 64 x 64 or 128 x 64 blocks, or fp32, it matched. Until the
  // cause is found, a shadow that parts of several loops would sum, where a
  // loop's products mix fewer than 64 rows with 64 or more (the shape class of
  // the Hopper miscompile `stagesTiles` describes), keeps the forward's
  // schedule.
  {
    DenseMap<BlockArgument, llvm::SmallSetVector<Operation *, 2>> loopsOf;
    DenseSet<BlockArgument> mixing;
    for (Part &part : parts)
      for (Accumulation &sum : part.sums) {
        BlockArgument base = baseArgument(sum.atomic.getPtr());
        loopsOf[base].insert(part.loop);
        if (sum.mixesRows)
          mixing.insert(base);
      }
    for (Part &part : parts)
      llvm::erase_if(part.sums, [&](Accumulation &sum) {
        BlockArgument base = baseArgument(sum.atomic.getPtr());
        bool refused = mixing.contains(base) && loopsOf[base].size() > 1;
        if (refused)
          plan.refused.push_back(
              {sum.shadow, false,
               "not re-parallelized: " + std::to_string(loopsOf[base].size()) +
                   " loops add into it and their products mix fewer than 64 rows with 64 or "
                   "more (BLOCK_N < 64 <= BLOCK_M), whose parts Triton 3.6 miscompiled on "
                   "Hopper (measured: an illegal address)"});
        return refused;
      });
    llvm::erase_if(parts, [](Part &part) { return part.sums.empty(); });
  }
  if (parts.empty())
    return plan;
  joinReductions(entry, parts, shadows, stager, written, plain, twinned,
                 writesKnown ? std::string() : unknownWrite, plan.refused);
  planWrites(parts, written, overwrite);
  return plan;
}

// Builds the parts `plan` decided: the table's words, the branch between the
// forward's programs and the parts', each part's programs; takes each part's
// accumulations (and exclusive twins) out of the forward's programs. Returns
// the bytes per forward program each part reads from scratch.
SmallVector<int64_t> emitRegrid(tt::FuncOp kernel, Value table, RegridPlan &plan, Stager &stager,
                                RegridReport &report) {
  Block &entry = kernel.getBody().front();
  std::vector<Part> &parts = plan.parts;
  for (Part &part : parts)
    for (Accumulation &sum : part.sums)
      if (sum.twin) {
        sum.twin->store.erase();
        for (Operation *op : {sum.twin->sum.getOperation(), sum.twin->read.getOperation()})
          if (op && op->use_empty())
            op->erase();
        sum.twin.reset();
        report.untwinned.push_back(sum.shadow);
      }

  // The launch: programs [0, mainPrograms) run the forward's schedule with
  // their ids decoded from the linear id; the rest run the parts.
  Location loc = kernel.getLoc();
  SmallVector<Operation *> original;
  for (Operation &op : entry.without_terminator())
    original.push_back(&op);
  OpBuilder b(&entry, entry.begin());
  auto xAxis = tt::ProgramIDDimAttr::get(b.getContext(), tt::ProgramIDDim::X);
  Value linear = tt::GetProgramIdOp::create(b, loc, b.getI32Type(), xAxis);
  Value mainPrograms = readI32(b, loc, table, kMainProgramsWord);
  Grid grid{readI32(b, loc, table, kGridXWord), readI32(b, loc, table, kGridYWord),
            readI32(b, loc, table, kGridZWord)};
  // Every header word up front, independent loads: read where they are used,
  // behind the branches that choose a part, they were a chain of dependent
  // loads before each program's first tile.
  // (the table has a record per accumulation, a part's leader first; the
  // others contribute only their plain words)
  int record = 0;
  for (Part &part : parts) {
    for (int w = 0; w < kPartHeader; ++w)
      part.words.push_back(readI32(b, loc, table, kHeader + kPartHeader * record + w));
    for (Accumulation &sum : part.sums)
      sum.plain = readI32(b, loc, table, kHeader + kPartHeader * record++ + kPlain);
  }
  Value inMain = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, linear, mainPrograms);
  auto branch = scf::IfOp::create(b, loc, inMain, /*withElseRegion=*/true);
  branch->setAttr(kProgramsBranch, b.getUnitAttr());
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(branch.elseBlock()->getTerminator());
    emitParts(b, loc, parts, 0, arith::SubIOp::create(b, loc, linear, mainPrograms), table, grid);
  }
  Operation *thenEnd = branch.thenBlock()->getTerminator();
  for (Operation *op : original)
    op->moveBefore(thenEnd);
  for (Part &part : parts)
    for (Accumulation &sum : part.sums)
      sum.atomic.erase();
  SmallVector<int64_t> stagedPerPart;
  SmallVector<Operation *> partOps;
  for (Part &part : parts) {
    stagedPerPart.push_back(stager.bytesRead(part.valueOps));
    partOps.append(part.valueOps.begin(), part.valueOps.end());
    for (Accumulation &sum : part.sums)
      if (sum.reduction)
        partOps.append(sum.valueOps.begin(), sum.valueOps.end());
  }
  report.regrid.stagedBytes = stager.finish(partOps);
  b.setInsertionPointToStart(branch.thenBlock());
  std::array<Value, 3> ids = programIdsOf(b, loc, linear, grid);
  Value sizes[3] = {grid.x, grid.y, grid.z};
  branch.thenBlock()->walk([&](Operation *op) {
    if (auto pid = dyn_cast<tt::GetProgramIdOp>(op)) {
      pid.replaceAllUsesWith(ids[static_cast<int>(pid.getAxis())]);
      pid.erase();
    } else if (auto count = dyn_cast<tt::GetNumProgramsOp>(op)) {
      count.replaceAllUsesWith(sizes[static_cast<int>(count.getAxis())]);
      count.erase();
    }
  });

  // The forward's schedule is still needed where something there writes.
  report.regrid.mainPart = branch.thenBlock()
                               ->walk([&](Operation *op) {
                                 return op->getNumRegions() || isMemoryEffectFree(op) ||
                                                isa<tt::LoadOp>(op)
                                            ? WalkResult::advance()
                                            : WalkResult::interrupt();
                               })
                               .wasInterrupted();
  return stagedPerPart;
}

// The report's note of each re-parallelized accumulation, and its record.
void reportParts(RegridPlan &plan, ArrayRef<int64_t> stagedPerPart, OpBuilder &b,
                 RegridReport &report) {
  std::vector<Part> &parts = plan.parts;
  for (auto [index, part] : llvm::enumerate(parts)) {
    int leader = report.regrid.parts.size();
    for (Accumulation &sum : part.sums) {
      if (&sum != &part.sums.front())
        sum.data.leader = leader;
      sum.data.reduction = sum.reduction;
      std::string writes =
          sum.data.hasCoverage
              ? std::string(sum.data.storeOnly ? "stores" : "plain read-add-writes") +
                    " where the launch finds each element reached once, else atomic adds"
              : std::string("one atomic add per element, uncontended");
      std::string precision =
          accumulatorElement(sum.element, b).isF32() ? "fp32" : "the gradient's type";
      if (sum.reduction) {
        bool own = &sum == &part.sums.front();
        report.notes.push_back(
            {sum.shadow, true,
             "re-parallelized (" +
                 (own ? std::string("programs of its own, one per group of the forward "
                                    "programs adding to the same elements (fewer values "
                                    "group them than group a product's part): each sums its "
                                    "group's contributions, a sum along axis ")
                      : "with the programs summing '" + part.sums.front().shadow +
                            "' for the loop at " + locationText(part.loop.getLoc()) +
                            ": one more program per group of theirs sums its contribution, a "
                            "sum along axis ") +
                 std::to_string(sum.reducedAxis) +
                 " of a value each forward program computes" +
                 (sum.sumsStaged ? " (read from scratch, where each stores its sums)" : "") +
                 ", over the group's forward programs in registers (" + precision +
                 ") and writes the sum once: " +
                 writes + ")"});
        report.regrid.parts.push_back(std::move(sum.data));
        continue;
      }
      std::string with;
      for (Accumulation &other : part.sums)
        if (&other != &sum && !other.reduction)
          with += (with.empty() ? "" : ", ") +
                  (other.shadow == sum.shadow ? "its other contribution"
                                              : "'" + other.shadow + "'");
      report.notes.push_back(
          {sum.shadow, true,
           "re-parallelized (programs of its own, one per tile of the gradient and " +
               (part.data.coarsening > 1
                    ? std::to_string(part.data.coarsening) + " iterations"
                    : std::string("iteration")) +
               " of the loop at " + locationText(part.loop.getLoc()) +
               (part.data.tripsVary ? " (whose trip count varies by program)" : "") +
               (with.empty() ? std::string()
                             : ", which also sum " + with + " from the same members") +
               (part.data.phase > 0
                    ? ", launched after the parts of an earlier loop that add into the same "
                      "shadow (launch " + std::to_string(part.data.phase + 1) + " of the parts)"
                    : std::string()) +
               (part.contractionPasses > 1
                    ? ", contracting each member's tiles in " +
                          std::to_string(part.contractionPasses) + " passes of " +
                          std::to_string(part.contractionDepth)
                    : std::string()) +
               (sum.twinKept.empty()
                    ? std::string()
                    : ", where the launch does not prove each address one program's (the "
                      "forward's programs keep the plain write taken where it does: " +
                          sum.twinKept + ")") +
               (stagedPerPart[index] > 0
                    ? ", reading the tiles each member computes before the loop from scratch "
                      "(" + std::to_string(stagedPerPart[index]) +
                          " bytes per forward program, written by the forward's programs in a "
                          "launch before the parts')"
                    : std::string()) +
               ": each sums the contributions of the forward programs sharing the tile in "
               "registers (" + precision + ") and writes the sum once: " + writes + ")"});
      report.regrid.parts.push_back(std::move(sum.data));
    }
  }
}

} // namespace

void regridAccumulations(tt::FuncOp kernel, ArrayRef<std::string> shadows, bool overwrite,
                         bool deterministic, RegridReport &report) {
  Value table = hiddenArgument(kernel, kRegridArgument, 64);
  if (!table || !llvm::hasSingleElement(kernel.getBody()))
    return;
  report.unwrappedLoads = unwrapLoadsMeetingZeros(kernel);
  // (a backward with a loop tape is not re-parallelized: the tape is free)
  BlockArgument tape = hiddenArgument(kernel, "tritonad_tape", 8);
  Stager stager(tape && tape.use_empty() ? tape : Value(), table);
  RegridPlan plan = planRegrid(kernel, shadows, overwrite, deterministic, stager);
  report.notes.insert(report.notes.end(), plan.refused.begin(), plan.refused.end());
  if (plan.parts.empty()) {
    stager.finish({});
    return;
  }
  SmallVector<int64_t> stagedPerPart = emitRegrid(kernel, table, plan, stager, report);
  OpBuilder b(kernel.getContext());
  reportParts(plan, stagedPerPart, b, report);
}

} // namespace tritonad
