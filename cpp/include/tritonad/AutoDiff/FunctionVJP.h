// Reverse-mode differentiation of tt.func bodies.
#ifndef TRITONAD_AUTODIFF_FUNCTIONVJP_H
#define TRITONAD_AUTODIFF_FUNCTIONVJP_H

#include "tritonad/Dialect/Triton/Dialect.h"

namespace tritonad {

/// The type of the vector-Jacobian product of `primal` with respect to the
/// arguments `wrt`: (primal inputs..., one cotangent per result) -> (one
/// gradient per `wrt` argument).
mlir::FunctionType getVJPType(mlir::triton::FuncOp primal, llvm::ArrayRef<unsigned> wrt);

/// Fills the empty body of `vjp` (of getVJPType) with the vector-Jacobian
/// product of the pure function `primal`. The forward values the adjoints need
/// are recomputed. Emits a diagnostic at the offending op and fails on input
/// it cannot differentiate.
/// Integer `wrt` arguments get a zero gradient when `zeroNonFloat`, an error
/// otherwise.
llvm::LogicalResult buildFunctionVJP(mlir::triton::FuncOp primal, llvm::ArrayRef<unsigned> wrt,
                                     mlir::triton::FuncOp vjp, bool zeroNonFloat = false);

/// Differentiates `@primal` of `module` into `@into` (a placeholder of the VJP
/// type whose body is replaced) or, when `into` is empty, into a new private
/// `@<primal>_vjp`. Calls inside `@primal` are inlined into a scratch copy
/// first, so the rest of the module is left as it was. An empty `wrt` means
/// every floating-point argument.
llvm::LogicalResult differentiateInto(mlir::ModuleOp module, llvm::StringRef primal,
                                      llvm::StringRef into, llvm::ArrayRef<unsigned> wrt,
                                      bool zeroNonFloat);

} // namespace tritonad

#endif
