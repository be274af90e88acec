// A shadow that two loops add into (attention written as Triton's tutorial
// writes it: the key blocks left of the diagonal in one loop, the diagonal
// block in a second that starts at the program's own block). Each loop's
// accumulation gets a part; the second part runs in a launch after the
// first's (its phase), so each launch has one writer of `da`.
//  - loop 1 runs from 0 to pid * 16: its addresses do not depend on the
//    program, its key is empty, its trip count varies;
//  - loop 2 starts at lo = pid * 16, which its addresses use only through
//    the induction variable: lo joins its key, and its part computes the
//    start from the group's key word;
//  - both contributions read %final, the result of a loop the backward
//    recomputes before them: the forward's programs stage it in scratch
//    (tritonad_tape) and the parts load it.

// RUN: tritonad-opt %s --tritonad-regrid="shadows=da deterministic=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: tritonad-opt %s --tritonad-regrid="shadows=da deterministic=true" | FileCheck %s

// REMARK: remark: da: re-parallelized (programs of its own, one per tile of the gradient and iteration of the loop at {{.*}} (whose trip count varies by program), reading the tiles each member computes before the loop from scratch (1024 bytes per forward program
// REMARK-SAME: one atomic add per element, uncontended)
// REMARK: remark: da: re-parallelized (programs of its own, one per tile of the gradient and iteration of the loop at {{.*}} (whose trip count varies by program), launched after the parts of an earlier loop that add into the same shadow (launch 2 of the parts), reading the tiles
// REMARK: remark: part da: grouped by 0 key value(s), launch 1 of the parts
// REMARK: remark: part da: grouped by 1 key value(s), starting where its key says, launch 2 of the parts

// CHECK-LABEL: tt.func public @two_loops
// The forward's programs: the recomputed loop's result stored into scratch.
// CHECK: %[[FINAL:.+]] = scf.for
// CHECK: tt.store %{{.+}}, %[[FINAL]]
// CHECK: } else {
// The parts: the recomputed loop is not in them; each member loads the staged
// tile and each part adds its sum once.
// CHECK-NOT: math.exp
// CHECK: tt.atomic_rmw fadd
// CHECK-NOT: math.exp
// CHECK: tt.atomic_rmw fadd
// CHECK-NOT: math.exp
// CHECK: tt.return
module {
  tt.func public @two_loops(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %tape: !tt.ptr<i8> loc("tritonad_tape"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c4 = arith.constant 4 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %cst = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %r2 = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %r16 = tt.broadcast %r2 : tensor<16x1xi32> -> tensor<16x16xi32>
    %bs = tt.splat %b : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %bp = tt.addptr %bs, %r16 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %bv = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
    %final = scf.for %j = %c0 to %c4 step %c1 iter_args(%s = %cst) -> (tensor<16x16xf32>) : i32 {
      %e = math.exp %s : tensor<16x16xf32>
      %n = arith.addf %e, %bv : tensor<16x16xf32>
      scf.yield %n : tensor<16x16xf32>
    }
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %lo = arith.muli %pid, %c16 : i32
    %hi = arith.addi %lo, %c16 : i32
    scf.for %i = %c0 to %lo step %c16 : i32 {
      %bi = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %d = tt.dot %bi, %final, %cst : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %is = tt.splat %i : i32 -> tensor<16x16xi32>
      %off = arith.addi %r16, %is : tensor<16x16xi32>
      %ap = tt.addptr %das, %off : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d {tritonad.unless_regridded = "deterministic mode: 'a' is loaded at 2 places"} : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
    }
    scf.for %i = %lo to %hi step %c16 : i32 {
      %bi = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %d = tt.dot %final, %bi, %cst : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %is = tt.splat %i : i32 -> tensor<16x16xi32>
      %off = arith.addi %r16, %is : tensor<16x16xi32>
      %ap = tt.addptr %das, %off : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d {tritonad.unless_regridded = "deterministic mode: 'a' is loaded at 2 places"} : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
    }
    tt.return
  }
}
