#include "tritonad/AutoDiff/ProgramOrder.h"

#include "tritonad/Analysis/AccessAnalysis.h"
#include "tritonad/AutoDiff/KernelBackward.h"
#include "tritonad/AutoDiff/Regrid.h"

#include "../TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

using Op = SymbolicInt::Op;

bool readsProgramId(const SymbolicInt &expression) {
  if (expression.op == Op::ProgramId)
    return true;
  for (const SymbolicInt &operand : expression.operands)
    if (readsProgramId(operand))
      return true;
  return false;
}

// The ops one iteration runs, nested regions included: a proxy for its cost
// that weighs a loop of five products above a loop of one.
int64_t opsPerIteration(scf::ForOp loop) {
  int64_t count = 0;
  loop.getBody()->walk([&](Operation *) { ++count; });
  return count;
}

// Replaces every program id the kernel reads by the one the launch's table
// gives this launch index.
void readProgramIdsFrom(tt::FuncOp kernel, Value table) {
  SmallVector<tt::GetProgramIdOp> reads;
  kernel.walk([&](tt::GetProgramIdOp read) { reads.push_back(read); });
  OpBuilder b = OpBuilder::atBlockBegin(&kernel.getBody().front());
  Location loc = kernel.getLoc();
  static_assert(contract::wordsIn(contract::kProgramOrder) == 1 &&
                    contract::wordOf(contract::kProgramOrder, "program") == 0,
                "the launch order is one word per launched program (LaunchContract.h)");
  Value launchIndex = linearProgramId(b, loc, {true, true, true});
  Value entry = tt::AddPtrOp::create(b, loc, table.getType(), table, launchIndex);
  Value program = createLoad(b, loc, entry, Value(), Value());
  Value countX = programCount(b, loc, 0), countY = programCount(b, loc, 1);
  Value restX = arith::DivSIOp::create(b, loc, program, countX);
  Value ids[3] = {arith::RemSIOp::create(b, loc, program, countX),
                  arith::RemSIOp::create(b, loc, restX, countY),
                  arith::DivSIOp::create(b, loc, restX, countY)};
  for (Value &id : ids)
    id = arith::TruncIOp::create(b, loc, b.getI32Type(), id);
  for (tt::GetProgramIdOp read : reads) {
    read.getResult().replaceAllUsesWith(ids[static_cast<int>(read.getAxis())]);
    read.erase();
  }
}

} // namespace

std::optional<ProgramOrder> orderProgramsByWork(tt::FuncOp kernel) {
  BlockArgument table = hiddenArgument(kernel, kRegridArgument, 64);
  if (!table || !llvm::hasSingleElement(kernel.getBody()))
    return std::nullopt;
  // (a while loop's trips are unknown: its programs' work cannot be compared)
  SmallVector<scf::ForOp> outermost;
  WalkResult walked = kernel.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<scf::WhileOp>(op))
      return WalkResult::interrupt();
    // (a nested loop counts in its outer loop's ops per iteration)
    if (auto loop = dyn_cast<scf::ForOp>(op); loop && !loop->getParentOfType<scf::ForOp>())
      outermost.push_back(loop);
    return WalkResult::advance();
  });
  if (walked.wasInterrupted() || outermost.empty())
    return std::nullopt;
  ProgramOrder order;
  std::optional<SymbolicInt> work;
  for (scf::ForOp loop : outermost) {
    std::optional<SymbolicInt> trips = symbolicTripCount(loop, /*programIds=*/true);
    if (!trips)
      return std::nullopt;
    if (readsProgramId(*trips))
      order.loops.push_back(locationText(loop.getLoc()));
    SymbolicInt weighted = SymbolicInt::of(
        Op::Mul, {*trips, SymbolicInt::constant(opsPerIteration(loop))});
    work = work ? SymbolicInt::of(Op::Add, {*work, weighted}) : weighted;
  }
  if (order.loops.empty())
    return std::nullopt;
  order.work = *work;
  readProgramIdsFrom(kernel, table);
  return order;
}

} // namespace tritonad
