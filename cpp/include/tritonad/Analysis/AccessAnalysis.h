// Which programs and lanes touch which addresses: decides whether a gradient
// accumulation `shadow[ptr] += g` may be a plain read-add-write (every address
// touched by one lane of one program) or needs an atomic add.
#ifndef TRITONAD_ANALYSIS_ACCESSANALYSIS_H
#define TRITONAD_ANALYSIS_ACCESSANALYSIS_H

#include "tritonad/Coverage.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Value.h"

#include <optional>
#include <string>
#include <vector>

namespace tritonad {

/// A condition the launch decides, as data: i64 arithmetic on the primal's
/// uniform scalars (arguments, constants, arithmetic on them) and the grid's
/// sizes, compared and conjoined. The transform that wants it in the IR
/// materializes it (the analysis writes no IR).
struct UniformExpr {
  enum class Op { True, Constant, Scalar, NumPrograms, Add, Sub, Mul, Min, Max, LessEqual,
                  GreaterEqual, And, Or };
  Op op = Op::True;
  int64_t value = 0;   // Constant: the value; NumPrograms: the axis
  mlir::Value scalar;  // Scalar: a primal value, uniform over programs and lanes
  std::vector<UniformExpr> operands;
};

struct ExclusiveAccess {
  /// True when no two (program, lane) pairs of the access can share an
  /// address. Meaningless when `known` says false.
  UniformExpr condition;
  /// Whether `condition` is known at compile time.
  std::optional<bool> known;
  /// Human-readable proof obligation, e.g. "stride >= N".
  std::string explanation;
};

/// What a run-time condition of exclusivity checks, for the schedule.
inline constexpr const char *kRuntimeCondition = "strides, masks and grid keep tiles disjoint";

/// Analyzes the primal pointer `ptr` (a tensor of pointers from one base
/// pointer, offsets built from tt.get_program_id, tt.make_range and uniform
/// scalars) under the primal `mask`: when exclusive, statically or under a
/// run-time condition. Only the program axes in `usedAxes` (those the kernel
/// reads with tt.get_program_id) count: programs along other axes are
/// duplicates, and the caller lets only the first of them accumulate.
ExclusiveAccess analyzeExclusiveAccess(mlir::Value ptr, mlir::Value mask,
                                       llvm::ArrayRef<bool> usedAxes);

/// The same for the union of several accesses (pointer, mask) through one
/// pointer argument (the loads of one input at several places, whose
/// gradients one shadow sums): where their addresses are the same expression
/// (up to induction variables of loops with the same bounds), the union is
/// the first access's, analyzed under its mask where all masks are the same
/// and without a mask otherwise. Where they differ by constants only (x[i]
/// and x[i + 1]), the union is the lowest access's widened by the spread
/// before the programs' digits, no further than the bound where every
/// access's mask bounds its own shifted index by one bound. Other unions are
/// not analyzed (known false).
ExclusiveAccess analyzeExclusiveUnion(llvm::ArrayRef<std::pair<mlir::Value, mlir::Value>> accesses,
                                      llvm::ArrayRef<bool> usedAxes);

/// Whether the addresses `ptr` (a primal pointer inside `loop`) touches in
/// one iteration of `loop` are disjoint from those of every other iteration
/// of the same program: an affine address whose induction-variable stride
/// (coefficient times the constant step) is at least the tile's span, or,
/// with runtime strides, moves the index along one tile dimension by at
/// least the tile's extent there (distinct index tuples being distinct
/// addresses, as for the lanes of any store). A step that is a runtime value
/// counts as its least, 1; lanes that `mask` bounds by a constant (`cols < N`)
/// span only up to that bound.
bool iterationsTouchDisjointAddresses(mlir::Value ptr, mlir::Value mask, mlir::scf::ForOp loop);

/// The same question where the launch may answer it: `proven` as
/// iterationsTouchDisjointAddresses; otherwise, where the address's move per
/// iteration and its span in one iteration are expressions of the kernel's
/// arguments and the grid (a row stride that is an argument, a step of
/// tl.num_programs, a mask `cols < n_cols`), `condition` is |move| >= span,
/// which makes the iterations' addresses disjoint, and `move` / `span` are
/// those expressions as text for people. A grid-stride step counts for one
/// program: rows apart at that granularity keep the programs apart too. Where
/// the tile has one dim of several lanes, the iterations may instead
/// interleave inside it (its stride at least what the iterations span).
struct IterationDisjointness {
  bool proven = false;
  std::optional<SymbolicInt> condition;
  /// The same condition over the primal's values, for a transform to
  /// materialize (where every argument it reads is the function's).
  std::optional<UniformExpr> uniform;
  std::string move, span;
  bool stepOnOneProgram = false; // (a grid-stride step counted for one program)
  /// Where set, the condition also holds where the iterations interleave in
  /// the one dim of several lanes (this text: its stride covers them).
  std::string interleaved;
};
IterationDisjointness iterationDisjointness(mlir::Value ptr, mlir::Value mask,
                                            mlir::scf::ForOp loop);

/// For each of `values` (integers of `function`), whether it is >= 0 in every
/// program, lane and iteration: affine in program ids, lanes and induction
/// variables of loops starting at >= 0, with non-negative constant
/// coefficients and no other part. One solve of the analysis for all.
llvm::SmallVector<bool> provablyNonNegative(mlir::Operation *function,
                                            llvm::ArrayRef<mlir::Value> values);

/// The name an argument has in the source (its NameLoc), or "".
std::string argumentName(mlir::BlockArgument arg);

/// The block argument a pointer (or tensor of pointers) is computed from by
/// address arithmetic and reshapes; null where it comes from anything else.
mlir::BlockArgument baseArgument(mlir::Value ptr);
/// The same, also through pointer bitcasts (`tt.bitcast`), which reinterpret
/// the memory: for asking where a load reads, not what the loaded value is.
mlir::BlockArgument baseArgumentThroughBitcasts(mlir::Value ptr);
/// baseArgument, following pointers carried through scf.for iter_args back to
/// their initial values (a pointer advanced in a loop: the argument it starts
/// from).
mlir::BlockArgument baseArgumentThroughLoops(mlir::Value ptr);

/// A uniform scalar (constants, the kernel's scalar arguments by name,
/// tt.get_num_programs, integer arith on those) as an expression the launch
/// path can evaluate; nullopt for anything else (a loaded value, a program id
/// unless `programIds`: then tt.get_program_id is a ProgramId leaf; a block
/// argument of a region unless `regionArgument` gives its expression).
std::optional<SymbolicInt>
symbolize(mlir::Value scalar, bool programIds = false,
          llvm::function_ref<std::optional<SymbolicInt>(mlir::BlockArgument)> regionArgument =
              nullptr);

/// An scf.for's trip count, max(0, (upper - lower + step - 1) / step), over
/// the bounds and step as `symbolize` reads them; nullopt where one is not
/// symbolic.
std::optional<SymbolicInt> symbolicTripCount(
    mlir::scf::ForOp loop, bool programIds = false,
    llvm::function_ref<std::optional<SymbolicInt>(mlir::BlockArgument)> regionArgument = nullptr);

/// The elements the primal access `ptr` under `mask` touches, over all
/// programs, lanes and iterations (`condition` left for the caller); nullopt
/// unless the offsets are affine in program ids, lanes and scf.for induction
/// variables with symbolic coefficients, no constant part, and every conjunct
/// of the mask a bound `affine < uniform` on them.
///
/// With `keys` (a re-parallelized accumulation's key values), each key is a
/// digit too, whose extent the caller fills in (`keyed->digitOfKey`: its digit
/// per key, -1 where the offsets do not use it), and a mask conjunct that is
/// a key itself (i1) is a condition (`keyed->conditionKeys`).
///
/// With `keyed->allowWraps`, a remainder of a tile by a launch-uniform scalar
/// in the offsets (`(key + lanes) % M`) is taken as its dividend, and
/// `dividend < divisor` is a wrap of the coverage (`ShadowCoverage::wraps`):
/// the coverage holds only where no lane reaches it, which the caller checks.
struct KeyedDigits {
  std::vector<int> digitOfKey;
  std::vector<int> conditionKeys;
  bool allowWraps = false;
};
std::optional<ShadowCoverage> analyzeCoverage(mlir::Operation *access, mlir::Value ptr,
                                              mlir::Value mask, llvm::ArrayRef<mlir::Value> keys = {},
                                              KeyedDigits *keyed = nullptr);

/// A remainder of a tile by a launch-uniform scalar (`(key + lanes) % M`) on
/// the way to a pointer, found by `tileRemainders`: `expandAxes`, the axes of
/// the expand_dims between them, innermost first (its lanes in the pointer's
/// axes: a column tile `offs_n % N` reaches `[None, :]` as axis 1);
/// `lanesKnown`, no op on the way moves lanes (trans, reshape, join, split);
/// `plainPath`, every op on the way is address arithmetic (addptr, splat,
/// broadcast, expand_dims, add, sub, mul, sign extension, constants). Where a
/// remainder is reached by several ways, one entry per way.
struct TileRemainder {
  mlir::Operation *op;
  llvm::SmallVector<unsigned> expandAxes;
  bool lanesKnown = true;
  bool plainPath = true;
};
llvm::SmallVector<TileRemainder> tileRemainders(mlir::Value ptr);

/// Each integer value of `function` (results and region arguments) with its
/// lattice in the access analysis, printed ("4*pid0 + 1*lane0 + u",
/// "unknown"), for tests.
void forEachAffineForm(mlir::Operation *function,
                       llvm::function_ref<void(mlir::Value, llvm::StringRef)> visit);

} // namespace tritonad

#endif
