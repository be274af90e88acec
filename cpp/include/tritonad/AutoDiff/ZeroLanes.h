// Lanes of a derived backward's values that are zero wherever the values they
// are computed from are finite (an upstream gradient loaded as the forward's
// store masks it: 0 past the tensor's extent), and what a schedule may skip
// there: a part's write of a zero contribution (Regrid.cpp's dropZeroLanes),
// the wrap of a tile that only meets zeros in a product (unwrapLoadsMeetingZeros).
#ifndef TRITONAD_AUTODIFF_ZEROLANES_H
#define TRITONAD_AUTODIFF_ZEROLANES_H

#include "tritonad/Dialect/Triton/Dialect.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

namespace tritonad {

/// The conjuncts of a mask: its `and`s split, broadcasts stripped (each an i1
/// tensor whose dimensions are the mask's or 1); a splat (uniform over the
/// program) is left out.
void maskConjuncts(mlir::Value mask, llvm::SmallVectorImpl<mlir::Value> &conjuncts);

/// Conjuncts outside which `value` is zero, wherever the values it is computed
/// from are finite: a load's mask where it loads 0 elsewhere, through products
/// and float casts, and a product of tiles' rows (its first factor's conjuncts
/// that do not vary along the contraction) and columns (its second factor's).
/// A lane they leave out contributes nothing.
void zeroOutside(mlir::Value value, llvm::SmallVectorImpl<mlir::Value> &conjuncts,
                 int depth = 0);

/// Loads whose addresses wrap a tile at a tensor's extent, as the matmul
/// tutorial spells `(pid_m * BLOCK_M + arange) % M`, where every use is a
/// factor of a product of tiles whose other factor is zero on the lanes past
/// the extent (`pid_m * BLOCK_M + arange < M` among its zeroOutside
/// conjuncts, along the contraction): they load the unwrapped offsets under
/// that condition instead, 0 past the extent. The products are the same, and
/// the addresses are contiguous again (Triton vectorizes the load). Returns
/// how many loads it rewrote.
int unwrapLoadsMeetingZeros(mlir::triton::FuncOp kernel);

} // namespace tritonad

#endif // TRITONAD_AUTODIFF_ZEROLANES_H
