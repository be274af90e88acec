// The C++ entry points the Python module calls. Plain std types only: the
// pybind11 translation unit (built with RTTI and exceptions) must not include
// MLIR headers (built without).
#ifndef TRITONAD_API_H
#define TRITONAD_API_H

#include "tritonad/Coverage.h"
#include "tritonad/Schedule.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tritonad::api {

struct Result {
  bool ok = false;
  std::string output;      // printed module when ok
  std::string diagnostics; // MLIR's diagnostics, "<file>:line:col: error: ..." each
  Schedule schedule;       // kernel backward: what it chose, per shadow, loop and stabilizer
  std::vector<std::string> writtenShadows; // kernel backward: shadow arguments it stores into
  std::vector<std::string> partialShadows; // kernel backward: shadows left in workspace slots
  std::vector<std::vector<int>> partialSlotAxes; // kernel backward: per partial shadow, its slots' axes
  std::vector<ShadowCoverage> coverage;     // kernel backward: shadows stored once per element
  std::vector<LaunchRequirement> requirements; // kernel backward: checked before each launch
  std::vector<LoopTape> tapes;              // kernel backward: scratch the launcher allocates
  Regrid regrid; // kernel backward: programs of its own for some shadows (parts empty: none)
  /// Kernel backward and augmented forward: the residuals (values the forward
  /// saves for the backward) per program; 0 bytes: none.
  long long residualBytesPerProgram = 0;
  std::string residualFingerprint; // equal in a forward and the backward that reads it
  /// Kernel backward: the launch condition (per program) under which the
  /// variant without masks is correct (FullMasks.h); none: no mask it drops.
  std::optional<SymbolicInt> fullMasks;
  /// Kernel backward: the work per program (ProgramOrder.h) by which the
  /// launch orders the programs, longest first, passing the order as
  /// tritonad_regrid; none: the kernel reads its program ids as launched.
  std::optional<SymbolicInt> programOrder;
  /// Kernel backward, deterministic mode: the slots its atomic-free sums
  /// through scatter slots write (ScatterSums.h); empty: none.
  ScatterSlots scatter;
};

struct PrintOptions {
  bool generic = false;   // --mlir-print-op-generic
  bool debugInfo = true;  // keep locations (Triton puts them into PTX line info)
};

/// "<bufferName>:line:col: error: ..." where parsing `ir` would kill the
/// process instead of failing: nesting deeper than MLIR's recursive parser and
/// printer can take (brackets, regions, and alias chains such as
/// `!t1 = !tt.ptr<!t0>`), or a shaped type whose element count overflows
/// (an MLIR assertion); else "".
std::string checkBeforeParsing(const std::string &ir, const std::string &bufferName);

/// Parses `ir` (named `bufferName` in diagnostics), verifies it, runs the
/// textual pass pipeline (mlir-opt syntax, e.g. "builtin.module(cse)"; empty
/// runs nothing) and prints the result.
Result runPipeline(const std::string &ir, const std::string &pipeline,
                   const PrintOptions &print, const std::string &bufferName);

/// Replaces the body of the tt.func `into` (whose type must be the VJP type)
/// with the vector-Jacobian product of the tt.func `primal` with respect to the
/// arguments `wrt` (calls inside `primal` are inlined first). Arguments in
/// `wrt` that are not floating point get a zero gradient when
/// `zeroNonFloat`, an error otherwise.
Result differentiateFunction(const std::string &ir, const std::string &primal,
                             const std::string &into, const std::vector<unsigned> &wrt,
                             bool zeroNonFloat, const PrintOptions &print,
                             const std::string &bufferName);

/// Replaces the body of the kernel `into` (which calls the kernel `primal`)
/// with the backward of `primal` (empty: the kernel `into` calls). `bindings`
/// pairs each shadow argument name of `into` with the pointer parameter name
/// of `primal` it is the gradient of. `overwrite`: input shadows arrive
/// zeroed, and elements with one writer are stored instead of accumulated.
/// `fullMasks`: the variant for launches where `Result::fullMasks` holds,
/// without the masks it makes always true.
enum class Accumulation { Auto, Atomic, Deterministic };
Result differentiateKernel(const std::string &ir, const std::string &primal,
                           const std::string &into,
                           const std::vector<std::pair<std::string, std::string>> &bindings,
                           Accumulation mode, bool overwrite, const PrintOptions &print,
                           const std::string &bufferName,
                           RegridPrograms programs = RegridPrograms::All,
                           bool fullMasks = false);

/// Replaces the body of the kernel `into` (which calls the kernel `primal`,
/// empty: its only call, and has an i8 pointer argument `tritonad_residuals`)
/// with the forward that also saves the residuals the backward of `primal`
/// (with `bindings`, `mode`) reads; leaves it calling `primal` where there are
/// none (residualBytesPerProgram 0).
Result augmentForward(const std::string &ir, const std::string &primal, const std::string &into,
                      const std::vector<std::pair<std::string, std::string>> &bindings,
                      Accumulation mode, const PrintOptions &print,
                      const std::string &bufferName);

/// The functions of `ir` as JSON data (output): ops, values, structured
/// types and attributes, locations; the format is documented in
/// lib/API/Describe.h. For consumers that must not read printed IR.
Result describeModule(const std::string &ir, const std::string &bufferName);

} // namespace tritonad::api

#endif
