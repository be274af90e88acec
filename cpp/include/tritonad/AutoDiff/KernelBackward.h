// Reverse mode of whole kernels: loads and stores become shadow accesses.
#ifndef TRITONAD_AUTODIFF_KERNELBACKWARD_H
#define TRITONAD_AUTODIFF_KERNELBACKWARD_H

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
                                            AccumulationMode mode, std::string &report);

} // namespace tritonad

#endif
