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

def KernelBackward : Pass<"tritonad-kernel-backward", "mlir::ModuleOp"> {
  let summary = "Replace a kernel's body with the backward of the kernel it calls";
  let description = [{
    `@<into>` is a kernel whose body calls the forward kernel `@<forward>`
    with (some of) its arguments; its other arguments are shadows, bound to
    the forward's pointer parameters by name (`shadows=dx_ptr:x_ptr,...`,
    names from the arguments' name locations). Loads from a bound pointer
    accumulate the gradient of the loaded values into the shadow; stores
    through one read the upstream gradient from it.
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", /*default=*/"", "the forward kernel">,
    Option<"intoName", "into", "std::string", /*default=*/"", "the kernel to fill">,
    ListOption<"shadowBindings", "shadows", "std::string",
               "shadow:pointer pairs of argument names">,
    Option<"mode", "mode", "std::string", /*default=*/"\"auto\"",
           "auto | atomic | deterministic">,
  ];
  let dependentDialects = ["mlir::triton::TritonDialect", "mlir::arith::ArithDialect",
                           "mlir::scf::SCFDialect"];
}

def PointerInduction : Pass<"tritonad-pointer-induction", "mlir::triton::FuncOp"> {
  let summary = "Express pointers advanced in scf.for iter_args through the induction variable";
  let description = [{
    Inside the loop body, a carried pointer `p` whose next value is
    `tt.addptr(p, step)` with a loop-invariant `step` is replaced by
    `tt.addptr(init, iteration * step)`. tritonad-kernel-backward runs it on
    its copy of the forward, so that kernels written with `ptrs += ...`
    (the tutorials' matmul) can be differentiated.
  }];
  let dependentDialects = ["mlir::triton::TritonDialect", "mlir::arith::ArithDialect"];
}

#endif
