// RUN: tritonad-opt %s --split-input-file --pass-pipeline="builtin.module(tt.func(tritonad-pointer-induction))" | FileCheck %s

// `ptrs += BLOCK` in a loop from 0 by 1: inside the body the pointer is
// init + k * step (in i64), and the carried pointer only feeds its own
// advance and the loop result.
// CHECK-LABEL: tt.func @unit_step
// CHECK: %[[INIT:.+]] = tt.addptr %{{.+}}, %{{.+}} : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
// CHECK: scf.for %[[K:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %{{.+}}, %[[P:.+]] = %[[INIT]])
// CHECK-NEXT: %[[K64:.+]] = arith.extsi %[[K]] : i32 to i64
// CHECK-NEXT: %[[STEP64:.+]] = arith.extsi %[[STEPSCALAR:.+]] : i32 to i64
// CHECK-NEXT: %[[OFF:.+]] = arith.muli %[[K64]], %[[STEP64]] : i64
// CHECK-NEXT: %[[OFFS:.+]] = tt.splat %[[OFF]] : i64 -> tensor<64xi64>
// CHECK-NEXT: %[[CUR:.+]] = tt.addptr %[[INIT]], %[[OFFS]] : tensor<64x!tt.ptr<f32>>, tensor<64xi64>
// CHECK-NEXT: tt.load %[[CUR]]
// CHECK: tt.addptr %[[P]], %{{.+}} : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
module {
  tt.func @unit_step(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>, %n: i32, %stride: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant dense<0.0> : tensor<64xf32>
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %p0 = tt.addptr %xs, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %s = tt.splat %stride : i32 -> tensor<64xi32>
    %acc, %pn = scf.for %k = %c0 to %n step %c1 iter_args(%a = %zero, %p = %p0) -> (tensor<64xf32>, tensor<64x!tt.ptr<f32>>) : i32 {
      %v = tt.load %p : tensor<64x!tt.ptr<f32>>
      %a2 = arith.addf %a, %v : tensor<64xf32>
      %p2 = tt.addptr %p, %s : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      scf.yield %a2, %p2 : tensor<64xf32>, tensor<64x!tt.ptr<f32>>
    }
    %os = tt.splat %out : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %op = tt.addptr %os, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %op, %acc : tensor<64x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// A scalar pointer, a loop with a non-zero start and a step: the iteration
// number is (k - lb) / step.
// CHECK-LABEL: tt.func @strided_loop
// CHECK: scf.for %[[K:.+]] = %[[LB:.+]] to %{{.+}} step %[[STEP:.+]] iter_args
// CHECK-NEXT: %[[K64:.+]] = arith.extsi %[[K]] : i32 to i64
// CHECK-NEXT: %[[LB64:.+]] = arith.extsi %[[LB]] : i32 to i64
// CHECK-NEXT: %[[REL:.+]] = arith.subi %[[K64]], %[[LB64]] : i64
// CHECK-NEXT: %[[ST64:.+]] = arith.extsi %[[STEP]] : i32 to i64
// CHECK-NEXT: %[[IT:.+]] = arith.divsi %[[REL]], %[[ST64]] : i64
// CHECK-NEXT: %[[INC:.+]] = arith.extsi %{{.+}} : i32 to i64
// CHECK-NEXT: %[[OFF:.+]] = arith.muli %[[IT]], %[[INC]] : i64
// CHECK-NEXT: %[[CUR:.+]] = tt.addptr %{{.+}}, %[[OFF]] : !tt.ptr<f32>, i64
// CHECK-NEXT: tt.load %[[CUR]] : !tt.ptr<f32>
module {
  tt.func @strided_loop(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>, %n: i32) {
    %c2 = arith.constant 2 : i32
    %c3 = arith.constant 3 : i32
    %c7 = arith.constant 7 : i32
    %zero = arith.constant 0.0 : f32
    %acc, %pn = scf.for %k = %c2 to %n step %c3 iter_args(%a = %zero, %p = %x) -> (f32, !tt.ptr<f32>) : i32 {
      %v = tt.load %p : !tt.ptr<f32>
      %a2 = arith.addf %a, %v : f32
      %p2 = tt.addptr %p, %c7 : !tt.ptr<f32>, i32
      scf.yield %a2, %p2 : f32, !tt.ptr<f32>
    }
    tt.store %out, %acc : !tt.ptr<f32>
    tt.return
  }
}

// -----

// Not an induction: the step is computed inside the loop (it depends on k),
// so the carried pointer stays as it is.
// CHECK-LABEL: tt.func @variant_step
// CHECK: scf.for %{{.+}} iter_args(%{{.+}} = %{{.+}}, %[[P:.+]] = %{{.+}})
// CHECK-NEXT: tt.load %[[P]]
module {
  tt.func @variant_step(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>, %n: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant 0.0 : f32
    %acc, %pn = scf.for %k = %c0 to %n step %c1 iter_args(%a = %zero, %p = %x) -> (f32, !tt.ptr<f32>) : i32 {
      %v = tt.load %p : !tt.ptr<f32>
      %a2 = arith.addf %a, %v : f32
      %p2 = tt.addptr %p, %k : !tt.ptr<f32>, i32
      scf.yield %a2, %p2 : f32, !tt.ptr<f32>
    }
    tt.store %out, %acc : !tt.ptr<f32>
    tt.return
  }
}

// -----

// The step is computed inside the body (as `ptrs += BLOCK_K * stride` is):
// it is loop-invariant, so it is hoisted and the pointer rewritten.
// CHECK-LABEL: tt.func @step_computed_in_body
// CHECK: %[[INC:.+]] = arith.muli %{{.+}}, %{{.+}} : i32
// CHECK: scf.for %[[K:.+]] = %{{.+}} iter_args
// CHECK-NEXT: %[[K64:.+]] = arith.extsi %[[K]] : i32 to i64
// CHECK-NEXT: %[[INC64:.+]] = arith.extsi %[[INC]] : i32 to i64
// CHECK-NEXT: %[[OFF:.+]] = arith.muli %[[K64]], %[[INC64]] : i64
// CHECK-NEXT: %[[CUR:.+]] = tt.addptr %{{.+}}, %[[OFF]] : !tt.ptr<f32>, i64
// CHECK-NEXT: tt.load %[[CUR]] : !tt.ptr<f32>
module {
  tt.func @step_computed_in_body(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>, %n: i32, %stride: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c32 = arith.constant 32 : i32
    %zero = arith.constant 0.0 : f32
    %acc, %pn = scf.for %k = %c0 to %n step %c1 iter_args(%a = %zero, %p = %x) -> (f32, !tt.ptr<f32>) : i32 {
      %v = tt.load %p : !tt.ptr<f32>
      %a2 = arith.addf %a, %v : f32
      %inc = arith.muli %c32, %stride : i32
      %p2 = tt.addptr %p, %inc : !tt.ptr<f32>, i32
      scf.yield %a2, %p2 : f32, !tt.ptr<f32>
    }
    tt.store %out, %acc : !tt.ptr<f32>
    tt.return
  }
}

// -----

// `while k < n: ... p += 32; k += 32`: inside the after region the pointer is
// init + ((k - k0) / 32) * 32 (the steps, computed in the body, hoisted first),
// as for a for loop; the carried pointer only feeds its own advance.
// CHECK-LABEL: tt.func @while_advance
// CHECK: %[[P0:.+]] = tt.addptr %{{.+}}, %{{.+}} : !tt.ptr<f32>, i32
// CHECK: scf.while
// CHECK: } do {
// CHECK-NEXT: ^bb0(%[[P:[^:]+]]: !tt.ptr<f32>, %{{[^:]+}}: f32, %[[K:[^:]+]]: i32):
// CHECK: %[[KK:.+]] = arith.extsi %[[K]] : i32 to i64
// CHECK: %[[TRAVEL:.+]] = arith.subi %[[KK]], %{{.+}} : i64
// CHECK: %[[ITER:.+]] = arith.divsi %[[TRAVEL]], %{{.+}} : i64
// CHECK: %[[OFF:.+]] = arith.muli %[[ITER]], %{{.+}} : i64
// CHECK: %[[CUR:.+]] = tt.addptr %[[P0]], %[[OFF]] : !tt.ptr<f32>, i64
// CHECK: tt.load %[[CUR]]
// CHECK: tt.addptr %[[P]], %{{.+}} : !tt.ptr<f32>, i32
module {
  tt.func @while_advance(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>, %n: i32, %row: i32) {
    %c0 = arith.constant 0 : i32
    %zero = arith.constant 0.0 : f32
    %p0 = tt.addptr %x, %row : !tt.ptr<f32>, i32
    %r:3 = scf.while (%p = %p0, %a = %zero, %k = %c0) : (!tt.ptr<f32>, f32, i32) -> (!tt.ptr<f32>, f32, i32) {
      %c = arith.cmpi slt, %k, %n : i32
      scf.condition(%c) %p, %a, %k : !tt.ptr<f32>, f32, i32
    } do {
    ^bb0(%p1: !tt.ptr<f32>, %a1: f32, %k1: i32):
      %v = tt.load %p1 : !tt.ptr<f32>
      %a2 = arith.addf %a1, %v : f32
      %step = arith.constant 32 : i32
      %p2 = tt.addptr %p1, %step : !tt.ptr<f32>, i32
      %k2 = arith.addi %k1, %step : i32
      scf.yield %p2, %a2, %k2 : !tt.ptr<f32>, f32, i32
    }
    tt.store %out, %r#1 : !tt.ptr<f32>
    tt.return
  }
}
