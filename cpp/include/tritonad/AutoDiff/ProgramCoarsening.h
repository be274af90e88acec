// Program coarsening: a schedule of the backward in which each program does
// the work of several programs of the forward (a grid-stride loop over
// "virtual" program ids), so that a gradient every program adds to (a weight
// shared by all rows) is summed in registers and written once per program,
// into that program's own slot of a partial buffer: no atomics, and a fixed
// summation order (deterministic).
#ifndef TRITONAD_AUTODIFF_PROGRAMCOARSENING_H
#define TRITONAD_AUTODIFF_PROGRAMCOARSENING_H

#include "tritonad/Analysis/Dependence.h"
#include "tritonad/Dialect/Triton/Dialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace tritonad {

/// Rewrites the body of `function` (a kernel whose only program axis is 0) as
/// `for v in range(program_id(0), programs, num_programs(0)): body[pid := v]`
/// and hoists the loop-invariant pure ops and loads out of it (their
/// gradients are then summed over the loop in registers). `programs` (i32) is
/// the forward's number of programs along axis 0.
mlir::scf::ForOp coarsenPrograms(mlir::triton::FuncOp function, mlir::Value programs);

} // namespace tritonad

#endif
