// The combine region of tt.reduce / tt.scan, read by the reverse-mode rules
// and by the analyses alike.
#ifndef TRITONAD_ANALYSIS_COMBINEREGION_H
#define TRITONAD_ANALYSIS_COMBINEREGION_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"

namespace tritonad {

/// The op returned for result `i` of a combine region, if it is `OpT(lhs_i,
/// rhs_i)` in either order.
template <typename... OpTs>
mlir::Operation *matchCombiner(mlir::Block &block, unsigned i, unsigned numOperands) {
  mlir::Operation *terminator = block.getTerminator();
  mlir::Operation *def = terminator->getOperand(i).getDefiningOp();
  if (!def || !mlir::isa<OpTs...>(def) || def->getNumOperands() != 2)
    return nullptr;
  mlir::Value lhs = block.getArgument(i), rhs = block.getArgument(numOperands + i);
  bool direct = def->getOperand(0) == lhs && def->getOperand(1) == rhs;
  bool swapped = def->getOperand(0) == rhs && def->getOperand(1) == lhs;
  return direct || swapped ? def : nullptr;
}

} // namespace tritonad

#endif
