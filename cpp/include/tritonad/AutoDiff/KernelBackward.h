// Reverse mode of whole kernels: loads and stores become shadow accesses.
#ifndef TRITONAD_AUTODIFF_KERNELBACKWARD_H
#define TRITONAD_AUTODIFF_KERNELBACKWARD_H

#include "tritonad/AutoDiff/Residuals.h"
#include "tritonad/Coverage.h"
#include "tritonad/Schedule.h"
#include "tritonad/Dialect/Triton/Dialect.h"

#include <string>
#include <utility>
#include <vector>

namespace tritonad {

enum class AccumulationMode {
  Auto,          // plain read-add-write where proven exclusive, atomics elsewhere
  Atomic,        // atomics everywhere
  Deterministic, // never atomics: fail where exclusivity is not proven statically
};

struct KernelBackwardConfig {
  AccumulationMode mode = AccumulationMode::Auto;
  /// The caller passes input shadows holding zeros and wants the gradient
  /// itself: where each element provably has one writer (one program, one
  /// lane, one iteration), the backward stores instead of read-add-writes.
  bool overwrite = false;
  /// Planning residuals (Residuals.h): every candidate is offered, and the
  /// report says which ones the backward reads.
  bool offerAllResiduals = false;
};

/// What the pass decided, for people (`report`) and for the torch bridge.
struct KernelBackwardReport {
  Schedule schedule; // one entry per shadow, per loop, per stabilizer
  /// Shadow arguments the backward stores into (an output's shadow listed
  /// here is consumed: the caller must not pass a tensor it still needs).
  std::vector<std::string> writtenShadows;
  /// Shadow arguments whose gradient the backward leaves in slots of the
  /// workspace (group k of `tritonad_workspace` for the k-th name): the
  /// caller sums the slots of each group into the shadow after the kernel.
  std::vector<std::string> partialShadows;
  /// Per partial shadow (in order): the program axes its slots span (axis 0:
  /// the backward's programs along it, after coarsening). Programs that differ
  /// along the other axes share a slot and write disjoint addresses of it.
  std::vector<std::vector<int>> partialSlotAxes;
  /// Shadows whose every element the backward stores once (never adds to)
  /// under a condition: the caller may pass them uninitialized where the
  /// stores reach the whole tensor.
  std::vector<ShadowCoverage> coverage;
  std::vector<LoopTape> tapes; // at most one, for now
  /// What the launch must satisfy (deterministic mode's plain writes that are
  /// exclusive only for some arguments).
  std::vector<LaunchRequirement> requirements;
  /// The forward's values the backward reads instead of recomputing (empty
  /// when the backward has no `tritonad_residuals` argument).
  ResidualLayout residuals;
  /// Deterministic mode: the scatter slots its remaining accumulations write
  /// (ScatterSums.h), set after re-parallelization; empty: none.
  ScatterSlots scatter;
};

/// `file:line:col` of the innermost file location in `loc`, for reports.
std::string locationText(mlir::Location loc);

struct ShadowBinding {
  std::string shadow; // name of the backward kernel's argument (e.g. "dx_ptr")
  std::string primal; // name of the forward kernel's pointer parameter ("x_ptr")
};

/// Replaces the body of kernel `@into`, which calls kernel `@primal` once, with
/// the backward of `@primal`: loads from a bound pointer accumulate the
/// gradient of the loaded values into its shadow (same addresses, same mask);
/// stores through a bound pointer read the upstream gradient from its shadow
/// (masked lanes contribute zero); the forward's stores are not replayed.
/// `report` receives one line per shadow saying how it is accumulated.
llvm::LogicalResult differentiateKernelInto(mlir::ModuleOp module, llvm::StringRef primal,
                                            llvm::StringRef into,
                                            llvm::ArrayRef<ShadowBinding> bindings,
                                            const KernelBackwardConfig &options,
                                            KernelBackwardReport &report);

/// The residuals a backward of `primal` with a shadow for every binding
/// reads (Residuals.h); empty where there are none or the derivation fails.
ResidualLayout planResiduals(mlir::ModuleOp module, llvm::StringRef primal,
                             llvm::ArrayRef<ShadowBinding> bindings,
                             AccumulationMode mode);

/// Replaces the body of kernel `@into`, which calls kernel `@primal` once and
/// has an i8 pointer argument `tritonad_residuals`, with the forward that
/// also saves the residuals the backward reads (planResiduals) into it;
/// `layout` receives them. With none, `@into` is left as it is.
llvm::LogicalResult augmentForwardInto(mlir::ModuleOp module, llvm::StringRef primal,
                                       llvm::StringRef into,
                                       llvm::ArrayRef<ShadowBinding> bindings,
                                       AccumulationMode mode, ResidualLayout &layout);

} // namespace tritonad

#endif
