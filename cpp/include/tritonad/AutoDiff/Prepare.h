// Rewrites of the forward's scratch copy that put it in the shape the reverse
// sweep understands, run after inlining and before differentiation. Each is
// also a pass of its own (Passes.td), testable alone with tritonad-opt.
#ifndef TRITONAD_AUTODIFF_PREPARE_H
#define TRITONAD_AUTODIFF_PREPARE_H

#include "tritonad/Dialect/Triton/Dialect.h"

namespace tritonad {

/// Local simplifications: casts to the same type (Triton's frontend wraps
/// loop bounds in `arith.bitcast : i32 to i32`) are replaced by their operand,
/// so analyses see constants; a reordering flatten (tt.reshape allow_reorder)
/// consumed only by whole reductions (tl.max(x) without an axis) keeps the
/// element order, which the reduction's value does not depend on and its
/// adjoint then can; a load repeating an earlier one (same addresses, mask,
/// padding, no write in between) becomes that load, so their gradients reach
/// the shadow as one accumulation.
void simplifyForDifferentiation(mlir::triton::FuncOp function);

/// Rewrites each tl.flip (Triton's xor-swap of the float's integer bits over
/// the flipped dim reshaped into size-2 dims) into the same permutation on
/// the floats: tt.reshape, per size-2 dim a swap (tt.trans where the dim is
/// not last, tt.split, tt.join of the swapped halves, tt.trans back),
/// tt.reshape. Only that exact pattern is rewritten; other bitcasts stay.
void rewriteFlips(mlir::triton::FuncOp function);

/// What both drivers run on their scratch copy first: calls inlined, control
/// flow lifted, then simplifyForDifferentiation and rewriteFlips.
mlir::LogicalResult prepareForDifferentiation(mlir::triton::FuncOp function);

/// Lifts unstructured control flow (cf.br / cf.cond_br, which Triton emits for
/// an early `return`) into scf.if / scf.while. Fails with a located error when
/// the graph cannot be expressed with those two ops.
mlir::LogicalResult liftControlFlow(mlir::triton::FuncOp function);

/// `while i < n: ...; i += c` (c a positive constant, the final i unread) as
/// the scf.for it spells: the access analysis, the schedules and the loop
/// reversal know a for loop's addresses and trip count.
void upliftCountedWhileLoops(mlir::triton::FuncOp function);

/// Rewrites block pointers (tt.make_tensor_ptr, tt.advance, and the loads and
/// stores through them, boundary checks and padding included) as tensors of
/// pointers with masks, also when they are carried by scf.for loops, so that
/// shadows and the access analysis see ordinary addresses. Fails with a
/// located error on a block pointer used in a way it does not know.
mlir::LogicalResult lowerBlockPointers(mlir::triton::FuncOp function);

} // namespace tritonad

#endif
