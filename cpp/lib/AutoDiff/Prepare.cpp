#include "tritonad/AutoDiff/Prepare.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {

void simplifyForDifferentiation(tt::FuncOp function) {
  SmallVector<Operation *> casts;
  function.walk([&](Operation *op) {
    if (isa<arith::BitcastOp, tt::BitcastOp>(op) &&
        op->getOperand(0).getType() == op->getResult(0).getType())
      casts.push_back(op);
    auto flatten = dyn_cast<tt::ReshapeOp>(op);
    if (flatten && flatten.getAllowReorder() && flatten.getType().getRank() == 1 &&
        llvm::all_of(flatten->getUsers(), [](Operation *user) {
          auto reduce = dyn_cast<tt::ReduceOp>(user);
          return reduce && reduce.getSrcs().size() == 1;
        }))
      flatten.setAllowReorder(false);
  });
  for (Operation *cast : casts) {
    cast->getResult(0).replaceAllUsesWith(cast->getOperand(0));
    cast->erase();
  }
}

} // namespace tritonad
