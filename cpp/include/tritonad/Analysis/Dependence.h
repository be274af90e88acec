// Small queries on the IR that analyses, the sweep and the schedules share:
// what a value is computed from, and which ops write memory.
#ifndef TRITONAD_ANALYSIS_DEPENDENCE_H
#define TRITONAD_ANALYSIS_DEPENDENCE_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace tritonad {

/// Whether values of `type` can carry gradients (floats and tensors of floats).
bool isDifferentiableType(mlir::Type type);

/// Whether `op` writes memory (stores, atomics, prints, asserts). Unknown
/// effects count as writes; an op with regions answers for its body only when
/// it declares recursive memory effects.
bool writesMemory(mlir::Operation *op);

/// Whether `value` is computed from a block argument that `wanted` accepts,
/// following operands (nested regions' included) through the ops inside
/// `scope` (anywhere when null). Loop-carried values are not followed around
/// the back edge: the question is about one iteration's dataflow.
bool computedFrom(mlir::Value value, mlir::Operation *scope,
                  llvm::function_ref<bool(mlir::BlockArgument)> wanted);

/// Whether `value` is computed from a value that `isSource` accepts through
/// any op, loop bounds and carried values included (around the back edge; a
/// while loop's state and other region arguments count as sources).
bool dependsOn(mlir::Value value, llvm::function_ref<bool(mlir::Value)> isSource);

/// Whether `value` depends on the program id along `axis`.
bool dependsOnProgramId(mlir::Value value, int axis);

/// Whether `loop` is the grid-stride loop that program coarsening made: its
/// induction variable is a program id along axis 0 (distinct in every
/// iteration of every program), which the access analysis treats as such.
bool isProgramLoop(mlir::scf::ForOp loop);

/// Whether `value` depends on the program id that the program loop `loop`
/// iterates over (its induction variable).
bool dependsOnProgramLoop(mlir::Value value, mlir::scf::ForOp loop);

/// Marks `loop` as a program loop (for program coarsening).
void markProgramLoop(mlir::scf::ForOp loop);

} // namespace tritonad

#endif
