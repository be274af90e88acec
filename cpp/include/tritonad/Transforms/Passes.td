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
    Option<"mode", "mode", "::tritonad::AccumulationMode",
           /*default=*/"::tritonad::AccumulationMode::Auto",
           "how gradients shared between programs are accumulated",
           [{::llvm::cl::values(
             clEnumValN(::tritonad::AccumulationMode::Auto, "auto",
                        "plain where proven exclusive, partial buffers or atomics elsewhere"),
             clEnumValN(::tritonad::AccumulationMode::Atomic, "atomic", "atomics everywhere"),
             clEnumValN(::tritonad::AccumulationMode::Deterministic, "deterministic",
                        "never atomics: an error where they would be needed"))}]>,
    Option<"overwrite", "overwrite", "bool", /*default=*/"false",
           "input shadows arrive zeroed: store instead of read-add-write where "
           "each element has one writer">,
  ];
  let dependentDialects = ["mlir::triton::TritonDialect", "mlir::arith::ArithDialect",
                           "mlir::scf::SCFDialect", "mlir::gpu::GPUDialect"];
}

def AugmentForward : Pass<"tritonad-augment-forward", "mlir::ModuleOp"> {
  let summary = "Replace a kernel's body with the forward that also saves its residuals";
  let description = [{
    `@<into>` is a kernel whose body calls the forward kernel `@<forward>` and
    that has an i8 pointer argument `tritonad_residuals`. Its body becomes the
    forward that also stores, per program, the values the backward (with the
    shadows `shadows=dx_ptr:x_ptr,...`) reads instead of recomputing: results
    of top-level reductions and loops (AutoDiff/Residuals.h). A backward
    derived by `tritonad-kernel-backward` into a kernel with a
    `tritonad_residuals` argument reads them. One remark per saved value.
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", /*default=*/"", "the forward kernel">,
    Option<"intoName", "into", "std::string", /*default=*/"", "the kernel to fill">,
    ListOption<"shadowBindings", "shadows", "std::string",
               "shadow:pointer pairs of argument names">,
    Option<"mode", "mode", "::tritonad::AccumulationMode",
           /*default=*/"::tritonad::AccumulationMode::Auto",
           "the backward's accumulation mode",
           [{::llvm::cl::values(
             clEnumValN(::tritonad::AccumulationMode::Auto, "auto", "automatic"),
             clEnumValN(::tritonad::AccumulationMode::Atomic, "atomic", "atomics everywhere"),
             clEnumValN(::tritonad::AccumulationMode::Deterministic, "deterministic",
                        "never atomics"))}]>,
  ];
  let dependentDialects = ["mlir::triton::TritonDialect", "mlir::arith::ArithDialect",
                           "mlir::scf::SCFDialect", "mlir::gpu::GPUDialect"];
}

def Regrid : Pass<"tritonad-regrid", "mlir::triton::FuncOp"> {
  let summary = "Give a backward's atomic dot-product accumulations programs of their own";
  let description = [{
    Runs on a derived backward kernel with a `tritonad_regrid` argument
    (`!tt.ptr<i32>`). Each `tt.atomic_rmw fadd` into one of `shadows` in a
    top-level scf.for whose added value is computed with a tt.dot moves into
    programs of its own: one per (group of forward programs whose addresses
    agree, loop iteration), summing the group's contributions in registers and
    adding the sum once. The forward's schedule keeps the rest. Remarks say,
    per shadow, what was done or why not, and the key each part groups by.
  }];
  let options = [
    ListOption<"shadows", "shadows", "std::string", "names of the shadow arguments">,
    Option<"overwrite", "overwrite", "bool", /*default=*/"false",
           "shadows arrive to be overwritten: a part that alone writes its shadow stores "
           "where the launch finds each element reached once">,
    Option<"deterministic", "deterministic", "bool", /*default=*/"false",
           "atomics are refused (mode=deterministic): parts are taken wherever they are "
           "correct, then scatter slots (without parts), and an atomic marked "
           "tritonad.unless_regridded that remains is an error">,
    Option<"programs", "programs", "tritonad::RegridPrograms",
           /*default=*/"tritonad::RegridPrograms::All",
           "the programs the kernel runs: both, chosen by the program id, or only the "
           "forward's or only the parts (each in a launch of its own)",
           [{::llvm::cl::values(
             clEnumValN(tritonad::RegridPrograms::All, "all", "both (by the program id)"),
             clEnumValN(tritonad::RegridPrograms::Main, "main", "the forward's programs"),
             clEnumValN(tritonad::RegridPrograms::Parts, "parts", "the parts"))}]>,
  ];
  let dependentDialects = ["mlir::triton::TritonDialect", "mlir::arith::ArithDialect",
                           "mlir::scf::SCFDialect"];
}

def FullMasks : Pass<"tritonad-full-masks", "mlir::triton::FuncOp"> {
  let summary = "Drop the masks a launch condition makes true everywhere";
  let description = [{
    Marks each comparison feeding the mask of a load, store or atomic that is
    true in every lane, program and iteration under a condition on the
    launch's arguments and grid (Analysis/MaskBounds.h), with a remark giving
    the condition; with `full`, replaces those comparisons by true and drops
    the masks left true: the variant the launch path picks where the
    condition holds (tritonad_full_masks = 1).
  }];
  let options = [
    Option<"full", "full", "bool", /*default=*/"false",
           "emit the variant without the masks (else only report the conditions)">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def OrderPrograms : Pass<"tritonad-order-programs", "mlir::triton::FuncOp"> {
  let summary = "Read the program ids from a launch order, longest programs first";
  let description = [{
    Where the trip counts of a backward's outermost loops vary by program and
    are expressions of the program ids and the arguments, replaces each
    tt.get_program_id by the id that `tritonad_regrid` (word i: the program,
    numbered x fastest, that launch index i runs) gives, and reports the work
    per program the launch path orders by (trips times the ops of an
    iteration, summed over the loops) as a remark.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def ScatterSums : Pass<"tritonad-scatter-sums", "mlir::triton::FuncOp"> {
  let summary = "Deterministic mode: atomic adds that remain become per-lane scatter slots";
  let description = [{
    Each `tt.atomic_rmw fadd` marked `tritonad.unless_regridded` (or the
    refused twin `tritonad.refused_unless_exclusive`) whose pointer is
    computed from a kernel argument no other load reads, outside loops or in
    scf.for loops of constant bounds, becomes two stores into the program's
    row of slots: 1 + the element's offset into `tritonad_scatter_index`
    (0 for a lane the mask leaves out) and the value into
    `tritonad_scatter_values`. A remark gives the slots per program and each
    shadow's columns; an atomic that stays gains why in its mark.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
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

def UpliftCountedLoops : Pass<"tritonad-uplift-counted-loops", "mlir::triton::FuncOp"> {
  let summary = "scf.while loops that count (`while i < n: ...; i += c`) as scf.for";
  let description = [{
    A while loop whose condition is `i < n` of a carried counter i that each
    iteration adds a positive constant to (n defined outside the loop, the
    final i unread after it) becomes the scf.for it spells (MLIR's uplift):
    the access analysis, the schedules and the loop reversal then know its
    addresses and trip count. Other while loops stay as they are.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect"];
}

def LiftControlFlow : Pass<"tritonad-lift-control-flow", "mlir::triton::FuncOp"> {
  let summary = "Lift cf.br / cf.cond_br (an early return) into scf.if / scf.while";
  let description = [{
    Triton emits unstructured control flow for a `return` inside an `if`
    (Liger's `if y == ignore_index: ...; return`). The reverse sweep needs
    structured control flow: this runs MLIR's CFG-to-SCF lifting with tt.return
    for the exits, and fails with a located error where the graph needs more
    than scf.if and scf.while.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::ub::UBDialect", "mlir::cf::ControlFlowDialect"];
}

def RewriteFlips : Pass<"tritonad-rewrite-flips", "mlir::triton::FuncOp"> {
  let summary = "Rewrite tl.flip's integer xor-swaps as the same permutation on the floats";
  let description = [{
    Triton's tl.flip bitcasts the float to an integer and swaps elements with
    xor reductions over size-2 dims; the gradient cannot follow the bits.
    Exactly that pattern becomes tt.reshape, per size-2 dim tt.trans (where
    the dim is not last), tt.split, tt.join of the swapped halves, tt.trans
    back, and tt.reshape, on the floats. Calls must be inlined first.
  }];
  let dependentDialects = ["mlir::triton::TritonDialect", "mlir::arith::ArithDialect"];
}

def LowerBlockPointers : Pass<"tritonad-lower-block-pointers", "mlir::triton::FuncOp"> {
  let summary = "Rewrite loads and stores through block pointers as tensors of pointers";
  let description = [{
    A load or store through `tt.make_tensor_ptr` (+ `tt.advance`) becomes one
    through `base + sum_d (offset_d + arange(B_d)) * stride_d`, with the
    boundary checks as a mask (`0 <= index < shape`) and the padding option as
    `other`. Block pointers carried by scf.for must first be rewritten over
    the induction variable (tritonad-pointer-induction). Shadows and the access
    analysis then see ordinary addresses.
  }];
  let dependentDialects = ["mlir::triton::TritonDialect", "mlir::arith::ArithDialect"];
}

def TestAffineAccess : Pass<"tritonad-test-affine-access", "mlir::triton::FuncOp"> {
  let summary = "Print the access analysis's lattice: each integer value's affine form";
  let description = [{
    For tests of the access analysis (Analysis/AccessAnalysis.cpp), as
    Triton's test-print-alignment is for AxisInfo: one remark per integer
    result, e.g. `8*pid0 + 1*lane0 + u` (a uniform part), `unknown`, or
    `uniform` for a value that is the same in every program and lane.
  }];
}

#endif
