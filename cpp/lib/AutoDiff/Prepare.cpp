#include "tritonad/AutoDiff/Prepare.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {

void foldNoOpCasts(tt::FuncOp function) {
  SmallVector<Operation *> casts;
  function.walk([&](Operation *op) {
    if (isa<arith::BitcastOp, tt::BitcastOp>(op) &&
        op->getOperand(0).getType() == op->getResult(0).getType())
      casts.push_back(op);
  });
  for (Operation *cast : casts) {
    cast->getResult(0).replaceAllUsesWith(cast->getOperand(0));
    cast->erase();
  }
}

} // namespace tritonad
