#include "tritonad/AutoDiff/Prepare.h"

#include "Inlining.h"
#include "../ReverseSweep.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {

namespace {

bool writesMemoryWithin(Operation *op) {
  return op->walk([](Operation *inner) {
           return writesMemory(inner) ? WalkResult::interrupt() : WalkResult::advance();
         }).wasInterrupted();
}

// A load of the same addresses, mask and padding as an earlier one in the same
// block, with no write to memory in between, reads the same values: it becomes
// the earlier load. The gradients of both then meet in registers and reach the
// shadow as one accumulation (one rounding, and no atomics merely because a
// pointer is read twice).
void mergeRepeatedLoads(tt::FuncOp function) {
  SmallVector<Block *> blocks;
  function.walk([&](Block *block) { blocks.push_back(block); });
  for (Block *block : blocks) {
    SmallVector<tt::LoadOp> seen;
    for (Operation &op : llvm::make_early_inc_range(*block)) {
      if (auto load = dyn_cast<tt::LoadOp>(op); load && !load.getIsVolatile()) {
        auto same = llvm::find_if(seen, [&](tt::LoadOp earlier) {
          return earlier->getOperands() == load->getOperands() &&
                 earlier->getAttrDictionary() == load->getAttrDictionary() &&
                 earlier.getType() == load.getType();
        });
        if (same != seen.end()) {
          load.replaceAllUsesWith(same->getResult());
          load.erase();
        } else {
          seen.push_back(load);
        }
        continue;
      }
      if (writesMemoryWithin(&op))
        seen.clear();
    }
  }
}

} // namespace

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
  mergeRepeatedLoads(function);
}

LogicalResult prepareForDifferentiation(tt::FuncOp function) {
  if (failed(inlineAllCalls(function)) || failed(liftControlFlow(function)))
    return failure();
  upliftCountedWhileLoops(function);
  simplifyForDifferentiation(function);
  rewriteFlips(function);
  return success();
}

} // namespace tritonad
