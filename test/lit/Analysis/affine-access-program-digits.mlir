// A program id divided by a uniform value, and its remainder (batch and head
// from one grid axis, as attention kernels decode them): digits of the
// program id, fixed within a program. Anything else divided stays unknown.
// RUN: tritonad-opt %s --tritonad-test-affine-access -o /dev/null 2>&1 | FileCheck %s

// CHECK: 23:13: remark: 1*pid1 + 0
// CHECK: 24:10: remark: 1*pid1/d0 + 0
// CHECK: 25:10: remark: 1*pid1%d0 + 0
// CHECK: 30:12: remark: 1*s*pid1/d0 + 1*s*pid1%d0 + 0
// The dividend must be exactly a program id: not 2 * pid0, not pid0 % h, not
// a tensor's lanes.
// CHECK: 33:13: remark: unknown
// CHECK: 34:12: remark: 1*pid0%d0 + 0
// CHECK: 35:13: remark: unknown
// CHECK: 37:13: remark: unknown



module {
  tt.func public @k(%h: i32, %sz: i64, %sh: i64) {
    %c2 = arith.constant 2 : i32
    %c4 = arith.constant dense<4> : tensor<64xi32>
    %pid1 = tt.get_program_id y : i32
    %z = arith.divsi %pid1, %h : i32
    %i = arith.remsi %pid1, %h : i32
    %zw = arith.extsi %z : i32 to i64
    %za = arith.muli %zw, %sz : i64
    %iw = arith.extsi %i : i32 to i64
    %ia = arith.muli %iw, %sh : i64
    %off = arith.addi %za, %ia : i64
    %p0 = tt.get_program_id x : i32
    %p2 = arith.muli %p0, %c2 : i32
    %bad0 = arith.divsi %p2, %h : i32
    %ok1 = arith.remsi %p0, %h : i32
    %bad1 = arith.remsi %ok1, %h : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %bad2 = arith.divsi %r, %c4 : tensor<64xi32>
    tt.return
  }
}
