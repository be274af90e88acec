// The launch contract: what crosses between the core and the Python launch path,
// declared once. The hidden parameters a derived kernel takes after its own
// (their names, Triton types and who fills them), the record a derivation
// returns (its fields and the compiled kernel's metadata key each is kept
// under) and the records inside it (their fields), and the tables a derived
// kernel reads (their words, in order). The
// pybind module exports them (`_C.launch_contract()`); Python
// derives its placeholders, restore lists and accessors from that export.
#ifndef TRITONAD_LAUNCHCONTRACT_H
#define TRITONAD_LAUNCHCONTRACT_H

namespace tritonad::contract {

inline constexpr const char *kWorkspace = "tritonad_workspace";
inline constexpr const char *kSlot = "tritonad_slot";
inline constexpr const char *kPrograms = "tritonad_programs";
inline constexpr const char *kTape = "tritonad_tape";
inline constexpr const char *kTapeEvery = "tritonad_tape_every";
inline constexpr const char *kRegrid = "tritonad_regrid";
inline constexpr const char *kScatterIndex = "tritonad_scatter_index";
inline constexpr const char *kScatterValues = "tritonad_scatter_values";
inline constexpr const char *kMainOnly = "tritonad_main_only";
inline constexpr const char *kPartsOnly = "tritonad_parts_only";
inline constexpr const char *kFullMasks = "tritonad_full_masks";
inline constexpr const char *kKeepMasks = "tritonad_keep_masks";
inline constexpr const char *kResiduals = "tritonad_residuals";

/// How the launch path passes a hidden integer: as its value (one compile for
/// every value), or as 0 / 1 where Triton's specialization of 1 selects a
/// variant of the kernel (the argument is then absent from the signature the
/// core sees).
enum class Passing { Pointer, Value, Selector };

struct HiddenParameter {
  const char *name;
  const char *type;      // Triton's signature type
  Passing passing;
  const char *filledBy;  // the Python module that fills it
  const char *travelsWith; // the pointer whose memory it describes ("": none)
  // What it holds, as a phrase that follows "it reads <name>, " (the
  // rendered source says why a kernel reading it does not launch on its own)
  const char *meaning;
};

/// In the order the placeholders declare them (after the kernel's own
/// parameters, each defaulting to None).
inline constexpr HiddenParameter kHiddenParameters[] = {
    {kWorkspace, "*fp32", Passing::Pointer, "_partial", "",
     "the slots of partial buffers, which tritonad's launch path allocates, launching fewer "
     "programs than the forward's grid (each strides over the forward's programs), and sums "
     "into the gradients after the kernel"},
    {kSlot, "i32", Passing::Value, "_partial", kWorkspace, "the elements per slot of the workspace"},
    {kPrograms, "i32", Passing::Value, "_partial", kWorkspace,
     "the forward's programs that the launched programs stride over"},
    {kTape, "*i8", Passing::Pointer, "_partial", "",
     "the scratch memory of a loop tape, which tritonad's launch path sizes from the launch's "
     "arguments (or of the values the forward's programs stage for re-parallelized parts)"},
    {kTapeEvery, "i32", Passing::Value, "_partial", kTape,
     "the iterations apart of the states a tape keeps (every k-th)"},
    {kScatterIndex, "*i64", Passing::Pointer, "_scatter", "",
     "the keys of deterministic mode's scatter slots (lanes + the offset of a run's first "
     "element, 0: none), which "
     "tritonad's launch path allocates per program and adds into the gradients after the "
     "kernel"},
    {kScatterValues, "*fp32", Passing::Pointer, "_scatter", kScatterIndex,
     "the contributions of deterministic mode's scatter slots"},
    {kRegrid, "*i64", Passing::Pointer, "_regrid", "",
     "a table of the forward's programs that tritonad's launch path computes from the launch's "
     "arguments and grid (the groups of re-parallelized gradients, or the programs' order, "
     "longest first)"},
    {kMainOnly, "i32", Passing::Selector, "_partial", "",
     "a variant selector, 1: the forward's programs only"},
    {kPartsOnly, "i32", Passing::Selector, "_partial", "",
     "a variant selector, 1: the re-parallelized parts only"},
    {kFullMasks, "i32", Passing::Selector, "_masks", "",
     "a variant selector, 1: without the masks the launch makes true"},
    {kKeepMasks, "i32", Passing::Selector, "_masks", "",
     "a variant selector, 1: every mask kept"},
    {kResiduals, "*i8", Passing::Pointer, "_residuals", "",
     "the values the augmented forward saved (tritonad.autograd launches it)"},
};

struct RecordField {
  const char *name;
  const char *metadataKey;  // where the compiled kernel keeps it (empty: not kept)
  const char *meaning;
};

/// The record `differentiate_kernel` returns, field by field.
inline constexpr RecordField kBackwardRecord[] = {
    {"ir", "", "the module with the backward's body"},
    {"schedule", "tritonad_schedule", "how each gradient is written, and why"},
    {"written", "tritonad_written", "the shadows the backward stores into"},
    {"partial", "tritonad_partial", "the shadows whose gradient lands in workspace slots"},
    {"partial_slots", "tritonad_partial_slots",
     "per partial shadow: the program axes its slots span (the workspace's slots per group: "
     "the product of the launch grid over every partial shadow's axes)"},
    {"coverage", "tritonad_coverage", "per shadow stored once per element: what it covers"},
    {"tapes", "tritonad_tapes", "per loop with a tape: bytes per iteration and trips"},
    {"regrid", "tritonad_regrid", "the re-parallelized parts and their grouping keys"},
    {"residuals", "tritonad_residuals", "what the backward reads from the residual buffer"},
    {"requirements", "tritonad_requirements", "conditions a launch must satisfy"},
    {"full_masks", "tritonad_full_masks", "when the variant without masks is correct"},
    {"program_order", "tritonad_program_order", "the work per program, to order the launch"},
    {"scatter", "tritonad_scatter",
     "deterministic mode's scatter slots (a scatter record), or None where it has none"},
};

/// A field of a record the core hands Python as a dict, inside the backward
/// record (module.cpp builds each dict through TRITONAD_FIELD; Python reads
/// each field through `_contract.fields`, which refuses an undeclared one).
struct RecordKey {
  const char *name;
  const char *meaning;
  bool optional = false; // left out where it would be empty
};

/// A shadow's coverage (Coverage.h, ShadowCoverage): the element offsets its
/// stores reach, each an expression of the launch's arguments and grid.
inline constexpr RecordKey kCoverageRecord[] = {
    {"digits", "(coefficient, extent) pairs: the stores reach sum_i coefficient_i * index_i"},
    {"clamps", "([(digit, k)], bound): only index tuples with sum_j k_j * index_j < bound"},
    {"condition", "where false, the kernel adds with atomics instead (needs zeros)"},
    {"wraps", "as clamps, offsets wrapped by a remainder: covered where none reaches the bound",
     true},
};

/// The re-parallelized parts of a backward (Coverage.h, Regrid).
inline constexpr RecordKey kRegridRecord[] = {
    {"main", "whether the launch runs the forward's programs too"},
    {"deterministic", "deterministic mode: groups that start their loop apart are checked"},
    {"staged", "bytes per forward program the parts read from scratch"},
    {"parts", "the parts (records of their own)"},
};

/// One re-parallelized accumulation (Coverage.h, RegridPart).
inline constexpr RecordKey kRegridPartRecord[] = {
    {"shadow", "the shadow it adds into"},
    {"key", "the expressions whose values group the forward's programs"},
    {"lower", "the loop's lower bound"},
    {"upper", "the loop's upper bound"},
    {"step", "the loop's step"},
    {"frontier", "the values the contribution takes from its program"},
    {"affine", "whether the part computes the frontier values where they are affine"},
    {"coarsening", "iterations each of its programs handles"},
    {"coverage", "the elements its adds reach (a coverage record), or None"},
    {"key_digits", "per key, its digit of the coverage, or -1"},
    {"condition_keys", "the keys that are whole conjuncts of the mask"},
    {"store_only", "whether its adds are the shadow's only writes"},
    {"trips_vary", "whether the upper bound depends on the program"},
    {"lower_varies", "whether the lower bound depends on the program (through the key)"},
    {"phase", "the launch, after the forward's programs, that runs it"},
    {"address_keys", "the first keys, those the addresses depend on"},
    {"leader", "the part whose programs also sum this one, or -1"},
    {"reduction", "whether it is a reduction member of its leader"},
};

/// Deterministic mode's scatter slots (AutoDiff/ScatterSums.h, ScatterSlots).
inline constexpr RecordKey kScatterRecord[] = {
    {"per_program", "values per program of the launch (programs numbered x fastest)"},
    {"index_per_program", "keys per program of the launch"},
    {"columns", "per shadow, its slots in each program's row (scatter columns records)"},
    {"unused", "a condition of the launch under which no program writes a slot (every slot "
               "is a launch-checked plain write's twin), or None"},
};

/// The slots of one shadow in each program's row (ScatterColumns).
inline constexpr RecordKey kScatterColumnsRecord[] = {
    {"shadow", "the shadow the slots add into"},
    {"begin", "its first value in a program's row of values"},
    {"end", "one past its last value"},
    {"index_begin", "its first key in a program's row of keys"},
    {"index_end", "one past its last key"},
    {"lanes", "values per key, which add to consecutive elements from the key's"},
};

/// A condition a launch must satisfy (Coverage.h, LaunchRequirement).
inline constexpr RecordKey kRequirementRecord[] = {
    {"shadow", "the shadow written"},
    {"condition", "the condition on the arguments and grid"},
    {"why", "what the condition states, for the error"},
    {"refusal", "where not empty, the whole refusal, completed with the arguments' values"},
};

/// The residuals a forward saves or a backward reads.
inline constexpr RecordKey kResidualsRecord[] = {
    {"bytes", "bytes per program of the residual buffer"},
    {"fingerprint", "equal in a forward and the backward that reads its buffer"},
};

/// A schedule entry (Schedule.h, ScheduleEntry).
inline constexpr RecordKey kScheduleEntryRecord[] = {
    {"kind", "shadow, loop, programs, stabilizer or residual"},
    {"subject", "the shadow, op, stabilizer or value it is about"},
    {"location", "where, in the user's source"},
    {"strategy", "the strategy's name"},
    {"how", "what and why, for people"},
    {"notes", "what later decisions added"},
};

constexpr bool sameName(const char *a, const char *b) {
  while (*a && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

/// The position of the entry named `name` in `entries` (a table's words, a
/// record's fields), -1 where it has none.
template <typename Entry, int N>
constexpr int indexOf(const Entry (&entries)[N], const char *name) {
  for (int i = 0; i < N; ++i)
    if (sameName(entries[i].name, name))
      return i;
  return -1;
}


/// The name of a declared record field: `Index` must be a field's position
/// (use TRITONAD_FIELD, which finds it at compile time).
template <int Index, typename Entry, int N>
constexpr const char *fieldAt(const Entry (&record)[N]) {
  static_assert(Index >= 0 && Index < N,
                "a record field the launch contract does not declare (LaunchContract.h)");
  return record[Index].name;
}

/// `name`, a field of `record`; a name the record does not declare fails to
/// compile.
#define TRITONAD_FIELD(record, name)                                                          \
  ::tritonad::contract::fieldAt<::tritonad::contract::indexOf(record, name)>(record)

/// One word of a table a derived kernel reads from a hidden pointer.
struct TableWord {
  const char *name;
  const char *meaning;
};

/// `tritonad_regrid` as the table of re-parallelized parts (cpp/include/tritonad/
/// Coverage.h, Regrid: the arrays the "_at" words point to), filled by _regrid:
/// the header, then a part header per part; words of the pointer's element type.
inline constexpr TableWord kRegridHeader[] = {
    {"main_programs", "the launch's first programs, which run the forward's schedule"},
    {"grid_x", "the forward's grid along axis 0"},
    {"grid_y", "the forward's grid along axis 1"},
    {"grid_z", "the forward's grid along axis 2"},
    {"parts", "the number of part headers that follow"},
    {"slots_at", "the programs' scratch slots (one per forward program)"},
};
inline constexpr TableWord kRegridPart[] = {
    {"programs", "the part's programs in the launch (0: it follows its leader's)"},
    {"groups", "the groups of forward programs that add into one tile"},
    {"trips", "the iterations of the part's loop (its longest member's)"},
    {"members_at", "the members: forward program ids, grouped"},
    {"starts_at", "each group's first member (groups + 1)"},
    {"keys_at", "each group's key values"},
    {"affine", "1: each member's frontier values are base + index * delta"},
    {"bases_at", "each group's frontier values of its first member"},
    {"deltas_at", "the delta of each frontier value"},
    {"plain", "1: each element is reached once (plain writes, no atomics)"},
    {"counts_at", "where trips vary by member: per group and tile, the members reaching it"},
};

/// `tritonad_regrid` as the launch order (ProgramOrder), filled by _order: a word
/// per launched program.
inline constexpr TableWord kProgramOrder[] = {
    {"program", "the forward program the launch's program runs, longest first"},
};

/// The position of word `name` in `table`, -1 where it has none (constant
/// indices of the emitted loads: a word a table does not declare fails to
/// compile through the static_asserts of its readers).
template <int N>
constexpr int wordOf(const TableWord (&table)[N], const char *name) {
  return indexOf(table, name);
}

template <int N>
constexpr int wordsIn(const TableWord (&)[N]) {
  return N;
}

} // namespace tritonad::contract

#endif // TRITONAD_LAUNCHCONTRACT_H
