// The launch contract: what crosses between the core and the Python launch path,
// declared once. The hidden parameters a derived kernel takes after its own
// (their names, Triton types and who fills them), and the record a derivation
// returns (its fields and the compiled kernel's metadata key each is kept
// under), and the tables a derived kernel reads (their words, in order). The
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
  const char *meaning;
};

/// In the order the placeholders declare them (after the kernel's own
/// parameters, each defaulting to None).
inline constexpr HiddenParameter kHiddenParameters[] = {
    {kWorkspace, "*fp32", Passing::Pointer, "_partial",
     "partial buffers: one slot per launched program and gradient, summed after the kernel"},
    {kSlot, "i32", Passing::Value, "_partial", "elements per slot of the workspace"},
    {kPrograms, "i32", Passing::Value, "_partial",
     "the forward's programs that the launched programs stride over"},
    {kTape, "*i8", Passing::Pointer, "_partial",
     "scratch: loop tapes per program, or values the forward's programs stage for parts"},
    {kTapeEvery, "i32", Passing::Value, "_partial", "a tape keeps every k-th iteration's state"},
    {kRegrid, "*i64", Passing::Pointer, "_regrid",
     "the table of re-parallelized parts, or the launch order of the programs"},
    {kMainOnly, "i32", Passing::Selector, "_partial", "1: compile the forward's programs only"},
    {kPartsOnly, "i32", Passing::Selector, "_partial", "1: compile the parts only"},
    {kFullMasks, "i32", Passing::Selector, "_masks",
     "1: the variant without the masks the launch makes true"},
    {kKeepMasks, "i32", Passing::Selector, "_masks", "1: the variant that keeps every mask"},
    {kResiduals, "*i8", Passing::Pointer, "_residuals",
     "values the augmented forward saved per program, read by the backward"},
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
    {"coverage", "tritonad_coverage", "per shadow stored once per element: what it covers"},
    {"tapes", "tritonad_tapes", "per loop with a tape: bytes per iteration and trips"},
    {"regrid", "tritonad_regrid", "the re-parallelized parts and their grouping keys"},
    {"residuals", "tritonad_residuals", "what the backward reads from the residual buffer"},
    {"requirements", "tritonad_requirements", "conditions a launch must satisfy"},
    {"full_masks", "tritonad_full_masks", "when the variant without masks is correct"},
    {"program_order", "tritonad_program_order", "the work per program, to order the launch"},
};

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

constexpr bool sameName(const char *a, const char *b) {
  while (*a && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

/// The position of word `name` in `table`, -1 where it has none (constant
/// indices of the emitted loads: a word a table does not declare fails to
/// compile through the static_asserts of its readers).
template <int N>
constexpr int wordOf(const TableWord (&table)[N], const char *name) {
  for (int i = 0; i < N; ++i)
    if (sameName(table[i].name, name))
      return i;
  return -1;
}

template <int N>
constexpr int wordsIn(const TableWord (&)[N]) {
  return N;
}

} // namespace tritonad::contract

#endif // TRITONAD_LAUNCHCONTRACT_H
