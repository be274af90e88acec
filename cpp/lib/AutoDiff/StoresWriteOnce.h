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

/// Checks each differentiated store that every program and lane of the
/// forward reaches (no enclosing branch; a mask, if any, the same for all of
/// them): lanes or programs proven to share an address are a located error;
/// where the launch decides (a grid axis the address ignores, a row stride
/// that is an argument), a LaunchRequirement whose refusal names the store.
/// Addresses the access analysis cannot read are taken as written once.
mlir::LogicalResult
checkStoresWriteOnce(mlir::triton::FuncOp primal, llvm::ArrayRef<bool> usedAxes,
                     llvm::function_ref<bool(mlir::triton::StoreOp)> differentiated,
                     llvm::function_ref<std::string(mlir::triton::StoreOp)> shadowOf,
                     std::vector<LaunchRequirement> &requirements);

} // namespace tritonad

#endif
