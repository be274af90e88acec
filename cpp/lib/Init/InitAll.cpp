#include "tritonad/InitAll.h"

#include "tritonad/AutoDiff/ReverseModeInterface.h"
#include "tritonad/Dialect/Triton/Dialect.h"
#include "tritonad/Transforms/Passes.h"

#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/Passes.h"

void tritonad::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::triton::TritonDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect, mlir::scf::SCFDialect,
                  mlir::cf::ControlFlowDialect, mlir::ub::UBDialect,
                  mlir::func::FuncDialect>();
  mlir::func::registerInlinerExtension(registry);
  registerReverseModeRules(registry);
}

void tritonad::registerAllPasses() {
  static bool registered = [] {
    mlir::registerTransformsPasses();
    tritonad::registerTritonadPasses();
    return true;
  }();
  (void)registered;
}
