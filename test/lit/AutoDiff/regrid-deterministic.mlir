// Deterministic mode: KernelBackward leaves an atomic it could not avoid
// marked with why (tritonad.unless_regridded); re-parallelization may still
// replace it by programs of their own. One that remains is a located error
// carrying every reason (a kernel with scatter slots sums it there instead:
// scatter-sums.mlir).

// RUN: not tritonad-opt %s --tritonad-regrid="shadows=da deterministic=true" 2>&1 | FileCheck %s

// CHECK: error: deterministic mode: cannot prove that each address of 'da' is touched by one program only; not summed through scatter slots: the launch passed no scatter slots (tritonad_scatter_index, tritonad_scatter_values); not re-parallelized: its addresses depend on data the program loads
module {
  tt.func public @gather(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %idx: !tt.ptr<i32> loc("idx"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %ps = tt.splat %pid : i32 -> tensor<256xi32>
    %ri = arith.addi %ps, %r : tensor<256xi32>
    %is = tt.splat %idx : !tt.ptr<i32> -> tensor<256x!tt.ptr<i32>>
    %ip = tt.addptr %is, %ri : tensor<256x!tt.ptr<i32>>, tensor<256xi32>
    %rows = tt.load %ip : tensor<256x!tt.ptr<i32>>
    %rows2 = tt.reshape %rows : tensor<256xi32> -> tensor<16x16xi32>
    %bs = tt.splat %b : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %bp = tt.addptr %bs, %rows2 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %k step %c1 : i32 {
      %bv = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %d = tt.dot %bv, %bv, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %is2 = tt.splat %i : i32 -> tensor<16x16xi32>
      %aoff = arith.addi %rows2, %is2 : tensor<16x16xi32>
      %ap = tt.addptr %das, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d {tritonad.unless_regridded = "deterministic mode: cannot prove that each address of 'da' is touched by one program only"} : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
    }
    tt.return
  }
}
