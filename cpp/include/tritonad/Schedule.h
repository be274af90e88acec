// The schedule of a derived backward as data: one entry per shadow (how its
// gradient is accumulated), per reversed loop, per stabilizer, and for the
// program loop of partial buffers. Passes produce it, later passes amend it,
// and Python renders it (`bwd.schedule()`); the pass pipeline renders the
// same lines as remarks for lit tests.
#ifndef TRITONAD_SCHEDULE_H
#define TRITONAD_SCHEDULE_H

#include <string>
#include <vector>

namespace tritonad {

enum class Strategy {
  // shadows
  Plain,               // read-add-write, proven exclusive
  Overwrite,           // store, proven exclusive (the caller passes zeros)
  PlainWhenDisjoint,   // plain where a run-time condition holds, else atomic
  OverwriteWhenDisjoint,
  Atomic,
  PartialBuffer,       // one slot per program, summed after the kernel
  Reparallelized,      // programs of its own (the regrid schedule)
  ScatterSlots,        // deterministic mode: per-lane slots, added after the kernel in order
  Output,              // an output's shadow: read as the upstream gradient
  NoGradient,
  // loops
  ForwardOrder,        // carried gradients are pure accumulations
  FinalStabilizers,    // stabilizers held at their final value, then forward order
  Taped,               // last to first, carried state from a tape
  Replayed,            // last to first, carried state replayed from the start
  GridStride,          // the program loop of partial buffers
  LongestFirst,        // programs launched by decreasing work
  // values
  Stabilizer,          // carries no gradient (shift invariance)
  Saved,               // a residual: saved by the forward, read instead of recomputed
};

/// The name Python sees (`ScheduleEntry.strategy`).
inline const char *strategyName(Strategy strategy) {
  switch (strategy) {
  case Strategy::Plain: return "plain";
  case Strategy::Overwrite: return "overwrite";
  case Strategy::PlainWhenDisjoint: return "plain-when-disjoint";
  case Strategy::OverwriteWhenDisjoint: return "overwrite-when-disjoint";
  case Strategy::Atomic: return "atomic";
  case Strategy::PartialBuffer: return "partial-buffer";
  case Strategy::Reparallelized: return "re-parallelized";
  case Strategy::ScatterSlots: return "scatter-slots";
  case Strategy::Output: return "output";
  case Strategy::NoGradient: return "no-gradient";
  case Strategy::ForwardOrder: return "forward-order";
  case Strategy::FinalStabilizers: return "final-stabilizers";
  case Strategy::Taped: return "taped";
  case Strategy::Replayed: return "replayed";
  case Strategy::GridStride: return "grid-stride";
  case Strategy::LongestFirst: return "longest-first";
  case Strategy::Stabilizer: return "stabilizer";
  case Strategy::Saved: return "saved";
  }
  return "unknown";
}


struct ScheduleEntry {
  enum class Kind { Shadow, Loop, Programs, Stabilizer, Residual };
  Kind kind = Kind::Shadow;
  /// Shadow: the forward's pointer argument; loop: the op name (scf.for);
  /// stabilizer: "max" or "min"; programs: empty; residual: the value's name.
  std::string subject;
  std::string location; // file:line:col of a loop or stabilizer; empty for shadows
  Strategy strategy = Strategy::NoGradient;
  std::string how; // what and why, for people
  /// Added by later decisions: coverage (no zero fill), re-parallelization.
  std::vector<std::string> notes;

  /// The name Python sees (`ScheduleEntry.kind`).
  const char *kindName() const {
    switch (kind) {
    case Kind::Shadow: return "shadow";
    case Kind::Loop: return "loop";
    case Kind::Programs: return "programs";
    case Kind::Stabilizer: return "stabilizer";
    case Kind::Residual: return "residual";
    }
    return "unknown";
  }

  /// The line people read: "x_ptr: plain (...)", "loop scf.for at f.py:3:4: ...".
  std::string render() const {
    std::string line;
    switch (kind) {
    case Kind::Shadow: line = subject + ": "; break;
    case Kind::Loop: line = "loop " + subject + " at " + location + ": "; break;
    case Kind::Programs: line = "programs: "; break;
    case Kind::Stabilizer: line = "stabilizer at " + location + ": "; break;
    case Kind::Residual: line = "residual " + subject + " at " + location + ": "; break;
    }
    line += how;
    for (const std::string &note : notes)
      line += "; " + note;
    return line;
  }
};

struct Schedule {
  std::vector<ScheduleEntry> entries;

  ScheduleEntry *shadow(const std::string &name) {
    for (ScheduleEntry &entry : entries)
      if (entry.kind == ScheduleEntry::Kind::Shadow && entry.subject == name)
        return &entry;
    return nullptr;
  }
  /// One line per entry.
  std::string render() const {
    std::string text;
    for (const ScheduleEntry &entry : entries)
      text += entry.render() + "\n";
    return text;
  }
};

} // namespace tritonad

#endif
