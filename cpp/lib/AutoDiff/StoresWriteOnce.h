// Stores whose lanes or programs write one address more than once: the
// forward keeps one of the values written there, and a backward cannot tell
// whose, so each writer would receive the upstream gradient.
#ifndef TRITONAD_AUTODIFF_STORESWRITEONCE_H
#define TRITONAD_AUTODIFF_STORESWRITEONCE_H

#include "tritonad/Coverage.h"
#include "tritonad/Dialect/Triton/Dialect.h"

#include <string>
#include <vector>

namespace tritonad {

/// Checks each differentiated store outside branches (scf.for only) whose
/// address and mask read no memory or loop-carried value: lanes or programs
/// proven to share an address, under a mask that reads neither lanes nor
/// program ids, are a located error; a grid axis the kernel reads but the
/// address and the mask do not is a LaunchRequirement (one program along it)
/// whose refusal names the store. Anything else is taken as written once.
mlir::LogicalResult
checkStoresWriteOnce(mlir::triton::FuncOp primal, llvm::ArrayRef<bool> usedAxes,
                     llvm::function_ref<bool(mlir::triton::StoreOp)> differentiated,
                     llvm::function_ref<std::string(mlir::triton::StoreOp)> shadowOf,
                     std::vector<LaunchRequirement> &requirements);

} // namespace tritonad

#endif
