// The access analysis's lattice (Analysis/AccessAnalysis.cpp): each integer
// value's affine form in program ids (pid), lanes, induction variables (iv)
// and iteration numbers, with uniform factors (s) and a uniform part (u).
// RUN: tritonad-opt %s --tritonad-test-affine-access -o /dev/null 2>&1 | FileCheck %s

// CHECK: 28:11: remark: uniform
// CHECK: 30:12: remark: 1*pid0 + 0
// A runtime stride is a factor of the program id's coefficient.
// CHECK: 31:12: remark: 1*s*pid0 + 0
// CHECK: 32:10: remark: 1*lane0 + 0
// CHECK: 33:14: remark: uniform
// CHECK: 34:13: remark: unknown
// CHECK: 36:14: remark: 1*s*pid0 + 1*lane0 + 0
// (iv - 0) / step is the loop's iteration number.
// CHECK: 38:13: remark: 1*iteration0 + 0
// CHECK: 39:13: remark: 1*iv0 + 0
// Values that flow in through control flow are not trusted, not even a
// carried value yielded unchanged: a form keeps only whether a uniform part
// exists, and that part may differ between iterations or branches.
// CHECK: 40:15: remark: unknown
// CHECK: 37:12: remark: 1*iv0 + 0
// CHECK: 37:12: remark: unknown
// CHECK: 37:12: remark: unknown
// Kernel arguments are uniform.
// CHECK: 27:3: remark: uniform
module {
  tt.func public @k(%x: !tt.ptr<f32>, %n: i32, %stride: i32) {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %row = arith.muli %pid, %stride : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %limit = tt.splat %n : i32 -> tensor<64xi32>
    %keep = arith.cmpi sgt, %limit, %r : tensor<64xi32>
    %base = tt.splat %row : i32 -> tensor<64xi32>
    %offs0 = arith.addi %base, %r : tensor<64xi32>
    %out = scf.for %k = %c0 to %n step %c64 iter_args(%offs = %offs0) -> (tensor<64xi32>) : i32 {
      %it = arith.divsi %k, %c64 : i32
      %ks = tt.splat %k : i32 -> tensor<64xi32>
      %cols = arith.addi %offs, %ks : tensor<64xi32>
      scf.yield %offs : tensor<64xi32>
    }
    tt.return
  }
}
