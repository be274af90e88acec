#ifndef TRITONAD_TRANSFORMS_PASSES
#define TRITONAD_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def Differentiate : Pass<"tritonad-differentiate", "mlir::ModuleOp"> {
  let summary = "Emit the vector-Jacobian product of a pure tt.func";
  let description = [{
    Emits `@<vjp-name>(inputs..., cotangents...) -> (gradients...)`: the
    reverse-mode derivative of `@<function>` with respect to the arguments
    `wrt`, with one cotangent per result of `@<function>`. The forward values
    the adjoints need are recomputed. Calls must be inlined first (`inline`).
    If `@<vjp-name>` exists (a placeholder of the VJP type) its body is
    replaced; otherwise a private function is created after `@<function>`.
  }];
  let options = [
    Option<"functionName", "function", "std::string", /*default=*/"",
           "the tt.func to differentiate">,
    ListOption<"wrt", "wrt", "unsigned",
               "indices of the arguments to differentiate (default: every "
               "floating-point argument)">,
    Option<"vjpName", "vjp-name", "std::string", /*default=*/"",
           "name of the emitted function (default: <function>_vjp)">,
  ];
  let dependentDialects = ["mlir::triton::TritonDialect", "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect"];
}

#endif
