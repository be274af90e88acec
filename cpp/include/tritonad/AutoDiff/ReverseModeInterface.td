#ifndef TRITONAD_AUTODIFF_REVERSEMODEINTERFACE
#define TRITONAD_AUTODIFF_REVERSEMODEINTERFACE

include "mlir/IR/OpBase.td"

// The reverse-mode rule of an op. Implemented per dialect as external models
// (ArithRules.cpp, MathRules.cpp, TritonRules.cpp), the way Enzyme-MLIR does.
def ReverseModeOpInterface : OpInterface<"ReverseModeOpInterface"> {
  let cppNamespace = "::tritonad";
  let description = [{
    Emits the adjoint of one op during the reverse sweep: it reads the
    adjoints of the op's results from the AdjointState and accumulates the
    adjoints of its active operands there. Forward values the rule needs are
    taken from the recomputed forward (AdjointState::forward).
  }];
  let methods = [
    InterfaceMethod<
      "Emits the adjoint of this op at the builder's insertion point.",
      "::llvm::LogicalResult", "emitAdjoint",
      (ins "::mlir::OpBuilder &":$builder, "::tritonad::AdjointState &":$state)>,
  ];
}

#endif
