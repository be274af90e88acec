#ifndef TRITONAD_AUTODIFF_REVERSEMODEINTERFACE
#define TRITONAD_AUTODIFF_REVERSEMODEINTERFACE

include "mlir/IR/OpBase.td"

// The reverse-mode rule of an op: every op the sweep meets, region ops
// (Rules/ScfRules.cpp) and memory ops (tt.load, tt.store) included, implements
// it as an external model per dialect, the way Enzyme-MLIR does. The sweep
// knows no op by name.
def ReverseModeOpInterface : OpInterface<"ReverseModeOpInterface"> {
  let cppNamespace = "::tritonad";
  let description = [{
    Emits the adjoint of one op during the reverse sweep: it reads the
    adjoints of the op's results from the GradientUtils and accumulates the
    adjoints of its active operands there. Forward values the rule needs are
    taken from the recomputed forward (GradientUtils::forward); shadow memory,
    tapes and the schedule are the driver's (GradientUtils::driver).
  }];
  let methods = [
    InterfaceMethod<
      "Emits the adjoint of this op at the builder's insertion point.",
      "::llvm::LogicalResult", "emitAdjoint",
      (ins "::mlir::OpBuilder &":$builder, "::tritonad::GradientUtils &":$gutils)>,
    InterfaceMethod<
      "Whether the sweep must emit this op's adjoint (by default: when one of "
      "its results has an adjoint).",
      "bool", "needsAdjoint", (ins "const ::tritonad::GradientUtils &":$gutils), [{}],
      [{
        return ::llvm::any_of($_op->getResults(),
                              [&](::mlir::Value v) { return bool(gutils.adjoint(v)); });
      }]>,
    InterfaceMethod<
      "Whether this op passes a gradient though none of its results is "
      "active (a store of an active value): a loop or branch around it must "
      "be reversed.",
      "bool", "passesGradientWithoutResults",
      (ins "const ::tritonad::GradientUtils &":$gutils), [{}], [{ return false; }]>,
    InterfaceMethod<
      "Checks, before anything is emitted, that this op (which carries a "
      "gradient) can be differentiated; a located error otherwise. Region ops "
      "check their bodies.",
      "::llvm::LogicalResult", "verifyDifferentiable",
      (ins "const ::tritonad::GradientUtils &":$gutils), [{}],
      [{ return ::mlir::success(); }]>,
  ];
}

#endif
