// Builders of the tt ops the reverse rules emit (sums along axes, reshapes).
#ifndef TRITONAD_LIB_AUTODIFF_TENSORBUILDERS_H
#define TRITONAD_LIB_AUTODIFF_TENSORBUILDERS_H

#include "tritonad/Dialect/Triton/Dialect.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <array>
#include <optional>

namespace tritonad {

/// tt.reduce of `src` along `axis` with an addf combine region.
mlir::Value sumAlongAxis(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value src,
                         int axis);
/// Sum of all elements of a tensor, as a scalar.
mlir::Value sumAll(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value src);
/// Sums `src` down to `shape` (each dim of `shape` is 1 or equal to src's).
mlir::Value sumToShape(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value src,
                       llvm::ArrayRef<int64_t> shape);
/// Re-inserts the reduced `axis` (size 1) and broadcasts to `type`'s shape;
/// a scalar is splatted.
mlir::Value broadcastAlongAxis(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value reduced,
                               int axis, mlir::RankedTensorType type);
/// i32 tensor of `type`'s shape holding each element's index along `axis`.
mlir::Value indexAlongAxis(mlir::OpBuilder &builder, mlir::Location loc,
                           mlir::RankedTensorType type, int axis);
/// The index (from `indices`) of the first element of `values` holding the
/// maximum (minimum) along `axis`, NaN winning or losing as tl.max does.
mlir::Value firstExtremumIndex(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value values,
                               mlir::Value indices, int axis, bool isMax, bool nanWins);
/// The lowest of `indices` where `hits` holds along `axis` (INT32_MAX where
/// none does).
mlir::Value firstIndexWhere(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value hits,
                            mlir::Value indices, int axis);
mlir::Value reshape(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value src,
                    mlir::RankedTensorType type);
/// maxsi (`isMax`) or minsi of an integer tensor along `axis` (the axis
/// removed).
mlir::Value integerExtremum(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value src,
                            int axis, bool isMax);
/// Whether some element of the i1 tensor `hits` holds along `axis` (i1, the
/// axis removed).
mlir::Value anyAlongAxis(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value hits,
                         int axis);
/// tt.scan of `srcs` along `axis` whose combine region `combine(lhs..., rhs...)`
/// builds the results from the block's arguments (lhs: the segment earlier in
/// scan order, as Triton's reverse scans see it after flipping).
llvm::SmallVector<mlir::Value> scanWith(
    mlir::OpBuilder &builder, mlir::Location loc, mlir::ValueRange srcs, int axis, bool reverse,
    llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::OpBuilder &, mlir::ValueRange,
                                                      mlir::ValueRange)>
        combine);
/// tt.scan with an addf (cumulative sum) combine region.
mlir::Value cumulativeSum(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value src,
                          int axis, bool reverse);
/// extf/truncf of a float scalar or tensor to `element`, or `value` unchanged.
mlir::Value castFloat(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value value,
                      mlir::Type element);

/// tt.load of `ptr` (a tensor of pointers or a pointer) under an optional
/// mask, masked lanes reading `other` (may be null).
mlir::Value createLoad(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value ptr,
                       mlir::Value mask, mlir::Value other);
void createStore(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value ptr, mlir::Value value,
                 mlir::Value mask);
/// Relaxed, GPU-scope atomic fadd of `value` at `ptr` under the mask.
// mask & cond, with the scalar i1 cond splat to the shape of `like` (cond
// alone when there is no mask).
mlir::Value predicate(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value mask,
                      mlir::Value cond, mlir::Type like);
mlir::Operation *createAtomicAdd(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value ptr,
                                 mlir::Value value, mlir::Value mask);

/// How a value is kept in scratch memory (a loop tape, the forward's
/// residuals): its element type there (i1 as i8) and its size in bytes.
struct TapeSlot {
  mlir::Type element;
  int64_t bytes = 0;
  int64_t offset = 0;
};
/// None for pointers and non-ranked shaped types.
std::optional<TapeSlot> tapeSlotFor(mlir::Type type);
/// The address of a kept value of `type`: a pointer, or a tensor of pointers
/// to consecutive elements (row-major), `offset` bytes after the byte pointer
/// `base`.
mlir::Value tapeAddress(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value base,
                        mlir::Value offset, mlir::Type type, const TapeSlot &slot);
/// `value` (an integer) as i64, sign-extended.
mlir::Value i64Of(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value value);
/// The grid's size along `axis` (0, 1, 2: x, y, z), in i64.
mlir::Value programCount(mlir::OpBuilder &builder, mlir::Location loc, unsigned axis);
/// This program's index over the grid axes `used` (x, y, z), x + nx * (y +
/// ny * z) in i64; null where no axis is used. `programs`, where given, is
/// set to the number of such indices, nx * ny * nz.
mlir::Value linearProgramId(mlir::OpBuilder &builder, mlir::Location loc,
                            const std::array<bool, 3> &used, mlir::Value *programs = nullptr);

} // namespace tritonad

#endif
