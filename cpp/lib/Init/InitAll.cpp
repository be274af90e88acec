#include "tritonad/InitAll.h"

#include "tritonad/AutoDiff/ReverseModeInterface.h"
#include "tritonad/Dialect/Triton/Dialect.h"
#include "tritonad/Transforms/Passes.h"

#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Transforms/InliningUtils.h"
#include "mlir/Transforms/Passes.h"

namespace {
// The llvm dialect is here for the few of its ops Triton's TTIR holds
// (llvm.intr.assume from tl.assume); nothing of it is ever inlined, but the
// dialect promises an inliner interface, which upstream implements in a large
// library of LLVM transforms.
struct NoLLVMInlining : public mlir::DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
};
} // namespace

void tritonad::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::triton::TritonDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect, mlir::scf::SCFDialect,
                  mlir::cf::ControlFlowDialect, mlir::ub::UBDialect,
                  mlir::func::FuncDialect, mlir::LLVM::LLVMDialect, mlir::gpu::GPUDialect>();
  mlir::func::registerInlinerExtension(registry);
  registry.addExtension(+[](mlir::MLIRContext *, mlir::LLVM::LLVMDialect *dialect) {
    dialect->addInterfaces<NoLLVMInlining>();
  });
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
