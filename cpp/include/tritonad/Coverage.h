// Which elements of a gradient buffer the derived backward writes, as data the
// launch path evaluates with the actual arguments and grid. Plain std types:
// the pybind11 module includes this header.
#ifndef TRITONAD_COVERAGE_H
#define TRITONAD_COVERAGE_H

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tritonad {

/// An integer (or i1) expression over the kernel's scalar arguments, its grid
/// and constants, with the semantics of the arith ops it was read from.
struct SymbolicInt {
  enum class Op {
    Constant,    // value
    Argument,    // name: a scalar parameter of the kernel
    NumPrograms, // value: the grid along that axis
    ProgramId,   // value: the axis; only in expressions evaluated per program
    Add, Sub, Mul, DivS, RemS, Min, Max,
    Lt, Le, Gt, Ge, Eq, Ne, // signed comparisons: 1 or 0
    And, Or, Xor,
    Select, // operands: condition, if true, if false
    ProgramSlot, // the program's slot in a re-parallelized backward's scratch
                 // (chosen by the launch); only in expressions evaluated per program
  };
  Op op = Op::Constant;
  int64_t value = 0;
  std::string name;
  std::vector<SymbolicInt> operands;

  static SymbolicInt constant(int64_t value) {
    SymbolicInt result;
    result.value = value;
    return result;
  }
  static SymbolicInt of(Op op, std::vector<SymbolicInt> operands) {
    SymbolicInt result;
    result.op = op;
    result.operands = std::move(operands);
    return result;
  }
};

/// The elements the backward stores the gradient of `shadow` to: offsets
/// sum_i coefficient_i * index_i, each index_i in [0, extent_i), keeping only
/// index tuples with sum_j k_j * index_j < bound for every clamp. Each element
/// is stored (not added to) once, when `condition` holds; with it and an
/// offset set equal to the tensor's elements, the caller may pass the buffer
/// uninitialized.
struct ShadowCoverage {
  struct Digit {
    SymbolicInt coefficient;
    SymbolicInt extent;
  };
  struct Clamp {
    std::vector<std::pair<int, int64_t>> terms; // (digit index, constant k_j >= 0)
    SymbolicInt bound;
  };
  std::string shadow;
  std::vector<Digit> digits;
  std::vector<Clamp> clamps;
  /// Bounds that no index tuple may reach (a re-parallelized part's offsets
  /// wrapped by a remainder, taken as its dividend): where one is reached the
  /// coverage does not hold. Only in a part's record (RegridPart::coverage).
  std::vector<Clamp> wraps;
  SymbolicInt condition;
};

/// A condition on the launch's arguments and grid that the backward needs to
/// be correct: deterministic mode's plain writes where each address belongs
/// to one program only under it (strides, masks and grid keeping tiles
/// disjoint); a store inside a loop whose iterations write addresses of their
/// own only under it (a persistent row loop whose row stride is an argument).
/// The caller evaluates it before launching and refuses a launch where it is 0.
struct LaunchRequirement {
  std::string shadow; // the shadow written
  SymbolicInt condition;
  std::string why;    // what the condition states, for the error
  /// Where set, the whole refusal (what breaks and what to change), which the
  /// caller completes with the values of the arguments the condition reads;
  /// else the refusal is deterministic mode's, about `shadow`.
  std::string refusal;
};

/// Deterministic mode's scatter slots (AutoDiff/ScatterSums.h).
/// The slots of one shadow: columns [begin, end) of each program's row,
/// expressions of the launch's arguments.
struct ScatterColumns {
  std::string shadow;
  SymbolicInt begin; // in each program's row of values
  SymbolicInt end;
  SymbolicInt indexBegin; // in each program's row of keys
  SymbolicInt indexEnd;
  // Lanes per key: the contributions of `lanes` consecutive values go to
  // consecutive elements from the key's (1: a key per value).
  int64_t lanes = 1;
};

/// The slots a backward writes: per program of the launch (programs numbered
/// x fastest), a row of `indexPerProgram` keys in `tritonad_scatter_index`
/// (int64: `lanes` + the offset from the shadow's pointer of the first element
/// of a run of `lanes` consecutive ones, which a masked-off first lane may put
/// below the shadow; 0 where the mask leaves every lane of the run out or the
/// program does not reach the slot) and a row of `perProgram`
/// values in `tritonad_scatter_values` (the contributions, `lanes` per key,
/// 0 for a lane the mask leaves out).
struct ScatterSlots {
  SymbolicInt perProgram;
  SymbolicInt indexPerProgram;
  std::vector<ScatterColumns> columns; // per shadow and lanes per key
  /// Where every slot belongs to the atomic twin of a plain write the launch
  /// would check: the condition under which no program writes one (the
  /// caller then allocates none).
  std::optional<SymbolicInt> unused;
  bool empty() const { return columns.empty(); }
};

/// A loop whose carried state the backward keeps on a tape: the caller passes
/// `tritonad_tape` (bytes) holding `bytesPerIteration * trips` bytes for each
/// program of the launch, `trips` evaluated with the arguments.
struct LoopTape {
  std::string loop; // where, for people
  int64_t bytesPerIteration = 0;
  SymbolicInt trips;
};

/// A gradient the backward accumulates in programs of its own (a second
/// schedule in the same launch) instead of atomically from the forward's:
/// where a forward program at iteration i of a loop adds a tile to this
/// shadow, the tile's addresses depend on the program only through `key`, so
/// the programs sharing a key value add to the same tile. The launch path
/// evaluates `key` for every forward program, groups the programs by it, and
/// launches one extra program per (group, iteration) that sums the group's
/// contributions in registers and adds the sum once.
struct RegridPart {
  std::string shadow;
  std::vector<SymbolicInt> key;   // per program: ProgramId leaves
  SymbolicInt lower, upper, step; // the loop's bounds; step the same for every program
  /// `upper` depends on the program (a causal attention's keys up to the
  /// diagonal): the launch orders each group's members by decreasing trip
  /// count and counts, per (group, iteration), the members that reach it.
  bool tripsVary = false;
  /// `lower` depends on the program, only through the key (the same for a
  /// group's members: a loop over the program's own diagonal block); the
  /// trips then vary too.
  bool lowerVaries = false;
  /// Where `lowerVaries`: the key's first `addressKeys` values are those the
  /// addresses depend on the program through, the others the start's. In
  /// deterministic mode the launch checks that groups with the same address
  /// keys start far enough apart that their iterations (tiles) do not meet.
  int addressKeys = 0;
  /// The launch, after the forward's programs, that runs the part: a part
  /// adding into a shadow that an earlier part (another loop) adds into runs
  /// in a later launch, so each launch has one writer per shadow and the
  /// sums land in a fixed order.
  int phase = 0;
  /// Index of the part whose programs also sum this one (its accumulations
  /// share their members, and each member's values once), or -1: this part
  /// has programs of its own (its record then holds the grouping).
  int leader = -1;
  /// Where `affine`: the values the contribution takes from the program; when,
  /// in every group, the j-th member's are base + j * delta (one delta per
  /// value), the part computes them instead of reading each member's id.
  bool affine = false;
  std::vector<SymbolicInt> frontier;
  /// A reduction member of its leader's part (a sum along an axis of a value
  /// each forward program computes, once per program, outside the loop: a
  /// bias gradient beside dW's part): one more program per group of the
  /// leader (the group's last: groups x (ceil(trips / coarsening) + 1)
  /// programs) sums it over the group's members and writes it once.
  bool reduction = false;
  /// Iterations each program of the part handles (its programs: groups x
  /// ceil(trips / coarsening)).
  int coarsening = 1;
  /// The elements the part's adds reach, for the launch to prove that each is
  /// reached once (then the part writes without atomics): digits of the
  /// lanes, the iteration and the keys. `keyDigits`: per key, its digit (its
  /// coefficient per unit of the key's value; the extent is the launch's to
  /// find from the groups' values) or -1; keys in `conditionKeys` (i1) are
  /// whole conjuncts of the mask.
  bool hasCoverage = false;
  ShadowCoverage coverage;
  std::vector<int> keyDigits, conditionKeys;
  /// The part's adds are the only writes into the shadow, which the caller
  /// passes to be overwritten: where each element is reached once, they are
  /// stores (and the shadow needs no zero fill); else read-add-writes.
  bool storeOnly = false;
};

/// The load of a program's scratch slot from `tritonad_regrid` carries this
/// attribute (SymbolicInt::Op::ProgramSlot).
constexpr const char *kProgramSlotAttr = "tritonad.program_slot";

/// The layout of `tritonad_regrid` (int64 words), which the launch path fills:
/// a header, then a part header per part (their words, in order, are declared
/// in LaunchContract.h: kRegridHeader, kRegridPart), then the arrays: members (program ids, grouped; within a group increasing, or where
/// trips vary by decreasing trip count), group starts (groups + 1), keys
/// (groups x key values), bases (groups x frontier values of the first
/// member), deltas (one per frontier value), counts (where trips vary: groups
/// x tiles, the members reaching each tile's first iteration), slots (one per
/// forward program, a permutation of them: where the program's staged values
/// lie in scratch, chosen so that each group's members' slots are affine in
/// their index where some order of the scratch allows it). A part that
/// follows a leader has 0 programs; only its plain word is read. Programs [0, mainPrograms) of the launch run the
/// forward's schedule (mainPrograms = the forward's grid when `mainPart`,
/// else 0), the next ones the parts in order.
/// `stagedBytes` > 0: the forward's programs stage values the parts read (a
/// member's work before the loop, done once): they write `stagedBytes` per
/// program into `tritonad_tape` (each value's region holds every program's,
/// in the order of their slots).
/// The launch path runs the forward's programs and the parts as two launches
/// (the forward's first), each with a kernel compiled for its programs only
/// (RegridPrograms); the parts' table says mainPrograms 0. `deterministic`:
/// derived in deterministic mode (the launch then refuses groupings whose
/// parts would add into one element from several programs).
struct Regrid {
  bool mainPart = true;
  bool deterministic = false;
  std::vector<RegridPart> parts;
  int64_t stagedBytes = 0;
};

/// Which programs of a re-parallelized backward a compiled kernel runs: the
/// forward's (Main), the parts (Parts), or both, chosen by the program id
/// (All, which serves any launch). One kernel for both would size the
/// parts' registers and shared memory for the forward's code as well.
enum class RegridPrograms { All, Main, Parts };

} // namespace tritonad

#endif
