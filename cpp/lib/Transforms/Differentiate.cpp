#include "tritonad/Analysis/MaskBounds.h"
#include "tritonad/AutoDiff/FunctionVJP.h"
#include "tritonad/AutoDiff/KernelBackward.h"
#include "tritonad/AutoDiff/Regrid.h"
#include "tritonad/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
#define GEN_PASS_DEF_DIFFERENTIATE
#define GEN_PASS_DEF_KERNELBACKWARD
#include "tritonad/Transforms/Passes.h.inc"

namespace {

struct DifferentiatePass : public impl::DifferentiateBase<DifferentiatePass> {
  using DifferentiateBase::DifferentiateBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (functionName.empty()) {
      module.emitError("tritonad-differentiate needs function=<name of a tt.func>");
      return signalPassFailure();
    }
    SmallVector<unsigned> indices(wrt.begin(), wrt.end());
    if (failed(differentiateInto(module, functionName, vjpName, indices, /*zeroNonFloat=*/false)))
      signalPassFailure();
  }
};

struct KernelBackwardPass : public impl::KernelBackwardBase<KernelBackwardPass> {
  using KernelBackwardBase::KernelBackwardBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<SmallVector<ShadowBinding>> bindings = parseShadowBindings(module, shadowBindings);
    if (failed(bindings))
      return signalPassFailure();
    KernelBackwardReport report;
    if (failed(differentiateKernelInto(module, forwardName, intoName, *bindings,
                                       {mode, overwrite}, report)))
      return signalPassFailure();
    // (the marks are for the API's Regrid, which runs on the same module)
    if (auto into = module.lookupSymbol<tt::FuncOp>(intoName)) {
      dropRefusedTwins(into);
      dropExclusivityMarks(into);
    }
    // The schedule, for tests and people: one remark per shadow.
    Location loc = module.lookupSymbol(intoName)->getLoc();
    for (const ScheduleEntry &entry : report.schedule.entries)
      mlir::emitRemark(loc) << (entry.kind == ScheduleEntry::Kind::Shadow ? "accumulation of " : "")
                            << entry.render();
    for (const LaunchRequirement &requirement : report.requirements)
      mlir::emitRemark(loc) << "checked at each launch: " << requirement.why << " ("
                            << symbolicText(requirement.condition) << ")";
  }
};

} // namespace

FailureOr<SmallVector<ShadowBinding>> parseShadowBindings(ModuleOp module,
                                                          ArrayRef<std::string> pairs) {
  SmallVector<ShadowBinding> bindings;
  for (const std::string &pair : pairs) {
    auto [shadow, primal] = StringRef(pair).split(':');
    if (primal.empty())
      return module.emitError("shadows= takes shadow:pointer pairs, got '") << pair << "'";
    bindings.push_back({shadow.str(), primal.str()});
  }
  return bindings;
}

} // namespace tritonad
