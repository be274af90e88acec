#include "tritonad/AutoDiff/Prepare.h"
#include "tritonad/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"

namespace tritonad {
#define GEN_PASS_DEF_LIFTCONTROLFLOW
#define GEN_PASS_DEF_UPLIFTCOUNTEDLOOPS
#define GEN_PASS_DEF_LOWERBLOCKPOINTERS
#define GEN_PASS_DEF_REWRITEFLIPS
#include "tritonad/Transforms/Passes.h.inc"

namespace {

struct LiftControlFlowPass : public impl::LiftControlFlowBase<LiftControlFlowPass> {
  void runOnOperation() override {
    if (mlir::failed(liftControlFlow(getOperation())))
      signalPassFailure();
  }
};

struct UpliftCountedLoopsPass : public impl::UpliftCountedLoopsBase<UpliftCountedLoopsPass> {
  void runOnOperation() override { upliftCountedWhileLoops(getOperation()); }
};

struct LowerBlockPointersPass : public impl::LowerBlockPointersBase<LowerBlockPointersPass> {
  void runOnOperation() override {
    if (mlir::failed(lowerBlockPointers(getOperation())))
      signalPassFailure();
  }
};

struct RewriteFlipsPass : public impl::RewriteFlipsBase<RewriteFlipsPass> {
  void runOnOperation() override { rewriteFlips(getOperation()); }
};

} // namespace
} // namespace tritonad
