// Staggered iterations: a reversed loop whose iterations are independent (its
// carried gradients are sums, its forward writes no memory) and whose
// iterations add atomically into shadows at addresses that move with the
// induction variable runs its iterations in a different order in each
// program. In forward order every program adds into the same addresses at
// the same time (a causal attention's programs all start at key block 0), and
// atomics to one address serialize; the sums are the same in any order.
#ifndef TRITONAD_AUTODIFF_STAGGERITERATIONS_H
#define TRITONAD_AUTODIFF_STAGGERITERATIONS_H

#include "tritonad/Dialect/Triton/Dialect.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

namespace tritonad {

/// The mark the reverse sweep puts on a reversed scf.for whose iterations may
/// run in any order (the rules know why; the rewrite below only checks what
/// its loop carries): the grid axes the forward reads, as an i32 array.
constexpr llvm::StringLiteral kIndependentIterations = "tritonad.independent_iterations";

/// Rewrites each marked loop of `kernel` that adds atomically into addresses
/// shared along some grid axis so that, with r the sum of the program ids
/// along those axes and n the trip count, its t-th iteration runs the forward's
/// iteration (n - 1 - t + r) mod n: last to first from a start rotated by r.
/// Programs that share the addresses then reach different ones at each step
/// (a causal loop's trip count grows with program_id(0), and so does its
/// start). `staggered` (optional) sees each rewritten loop with a note for
/// its schedule entry. Removes every mark; returns how many loops it rewrote
/// (none when `enable` is false).
unsigned staggerIterations(
    mlir::triton::FuncOp kernel, bool enable,
    llvm::function_ref<void(mlir::Operation *loop, llvm::StringRef note)> staggered = nullptr);

} // namespace tritonad

#endif
