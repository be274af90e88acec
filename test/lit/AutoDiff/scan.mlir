// Reverse-mode rules of tt.scan (cpp/lib/AutoDiff/Rules/TritonRules.cpp):
//  - cumsum (arith.addf):  dx = cumsum of g in the opposite direction
//    (a tt.scan with `reverse` flipped);
//  - cumprod (arith.mulf): dx_k = E_k * R_k, E_k = prod_{i<k} x_i (a scan over
//    (all-but-last, product) pairs), R_k = sum_{j>=k} g_j prod_{k<i<=j} x_i (a scan
//    in the opposite order over (R, all-but-first, first) triples): no division,
//    so zeros in x get torch's finite gradient.

// RUN: tritonad-opt %s --split-input-file --tritonad-differentiate="function=f" | FileCheck %s

// tl.cumsum(x, axis=0): the adjoint is a reverse = true sum scan of g on axis 0.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: "tt.scan"(%[[X]]) <{axis = 0 : i32, reverse = false}>
// CHECK: %[[DX:.+]] = "tt.scan"(%[[G]]) <{axis = 0 : i32, reverse = true}> ({
// CHECK-NEXT: ^bb0(%[[A:[^:]+]]: f32, %[[B:[^:]+]]: f32):
// CHECK-NEXT: %[[S:.+]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT: tt.scan.return %[[S]] : f32
// CHECK-NEXT: }) : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: tt.return %[[DX]] : tensor<16x32xf32>
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = "tt.scan"(%x) <{axis = 0 : i32, reverse = false}> ({
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tt.scan.return %s : f32
  }) : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// tl.cumsum(x, axis=1, reverse=True): the adjoint is a forward sum scan.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: "tt.scan"(%[[X]]) <{axis = 1 : i32, reverse = true}>
// CHECK: %[[DX:.+]] = "tt.scan"(%[[G]]) <{axis = 1 : i32, reverse = false}> ({
// CHECK: arith.addf
// CHECK: tt.return %[[DX]] : tensor<16x32xf32>
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = "tt.scan"(%x) <{axis = 1 : i32, reverse = true}> ({
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %b, %a : f32
    tt.scan.return %s : f32
  }) : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// tl.cumprod(x, axis=1, reverse=True): E scans in the primal's direction, R in
// the opposite one; dx = E * R.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: "tt.scan"(%[[X]]) <{axis = 1 : i32, reverse = true}>
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00>
// CHECK: %[[E:.+]]:2 = "tt.scan"(%[[ONE]], %[[X]]) <{axis = 1 : i32, reverse = true}> ({
// CHECK-NEXT: ^bb0(%[[A1:[^:]+]]: f32, %[[T1:[^:]+]]: f32, %[[A2:[^:]+]]: f32, %[[T2:[^:]+]]: f32):
// CHECK-NEXT: %[[EA:.+]] = arith.mulf %[[T1]], %[[A2]] : f32
// CHECK-NEXT: %[[ET:.+]] = arith.mulf %[[T1]], %[[T2]] : f32
// CHECK-NEXT: tt.scan.return %[[EA]], %[[ET]]
// CHECK: %[[R:.+]]:3 = "tt.scan"(%[[G]], %{{.+}}, %[[X]]) <{axis = 1 : i32, reverse = false}> ({
// CHECK-NEXT: ^bb0(%[[RB:[^:]+]]: f32, %[[HB:[^:]+]]: f32, %[[FB:[^:]+]]: f32, %[[RA:[^:]+]]: f32, %[[HA:[^:]+]]: f32, %[[FA:[^:]+]]: f32):
// CHECK-NEXT: %[[BR:.+]] = arith.mulf %[[HA]], %[[FB]] : f32
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[BR]], %[[RB]] : f32
// CHECK-NEXT: %[[RR:.+]] = arith.addf %[[RA]], %[[P]] : f32
// CHECK-NEXT: %[[HH:.+]] = arith.mulf %[[BR]], %[[HB]] : f32
// CHECK-NEXT: tt.scan.return %[[RR]], %[[HH]], %[[FA]]
// CHECK: %[[DX:.+]] = arith.mulf %[[E]]#0, %[[R]]#0 : tensor<16x32xf32>
// CHECK-NOT: arith.divf
// CHECK: tt.return %[[DX]] : tensor<16x32xf32>
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = "tt.scan"(%x) <{axis = 1 : i32, reverse = true}> ({
  ^bb0(%a: f32, %b: f32):
    %s = arith.mulf %a, %b : f32
    tt.scan.return %s : f32
  }) : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// A 1-d cumprod, forward: E scans forward, R in reverse.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<32xf32>, %[[G:[^:]+]]: tensor<32xf32>) -> tensor<32xf32>
// CHECK: "tt.scan"(%[[X]]) <{axis = 0 : i32, reverse = false}>
// CHECK: %[[E:.+]]:2 = "tt.scan"(%{{.+}}, %[[X]]) <{axis = 0 : i32, reverse = false}>
// CHECK: %[[R:.+]]:3 = "tt.scan"(%[[G]], %{{.+}}, %[[X]]) <{axis = 0 : i32, reverse = true}>
// CHECK: %[[DX:.+]] = arith.mulf %[[E]]#0, %[[R]]#0 : tensor<32xf32>
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<32xf32>) -> tensor<32xf32> {
  %0 = "tt.scan"(%x) <{axis = 0 : i32, reverse = false}> ({
  ^bb0(%a: f32, %b: f32):
    %s = arith.mulf %a, %b : f32
    tt.scan.return %s : f32
  }) : (tensor<32xf32>) -> tensor<32xf32>
  tt.return %0 : tensor<32xf32>
}

// -----

// tl.associative_scan((a, b), axis=0, combine) with the affine-map combiner
// (a1, b1), (a2, b2) -> (a1 * a2, b1 * a2 + b2): h_k = a_k h_{k-1} + b_k, a
// first-order linear recurrence. Only h is used: lambda = the reverse scan of
// (g, 1, a) triples (lambda_k = g_k + a_{k+1} lambda_{k+1}), db = lambda, and
// da = lambda * h_{k-1}, h_{k-1} the second result of a forward scan over
// (map without the last element, whole map) quadruples.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[A:[^:]+]]: tensor<16x32xf32>, %[[B:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>)
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00>
// CHECK: %[[LAMBDA:.+]]:3 = "tt.scan"(%[[G]], %[[ONE]], %[[A]]) <{axis = 0 : i32, reverse = true}>
// CHECK: %[[PREV:.+]]:4 = "tt.scan"(%[[ONE]], %{{.+}}, %[[A]], %[[B]]) <{axis = 0 : i32, reverse = false}> ({
// CHECK-NEXT: ^bb0(%[[EA1:[^:]+]]: f32, %[[EB1:[^:]+]]: f32, %[[A1:[^:]+]]: f32, %[[B1:[^:]+]]: f32, %[[EA2:[^:]+]]: f32, %[[EB2:[^:]+]]: f32, %[[A2:[^:]+]]: f32, %[[B2:[^:]+]]: f32):
// CHECK-NEXT: %[[X:.+]] = arith.mulf %[[A1]], %[[EA2]] : f32
// CHECK-NEXT: %[[Y:.+]] = arith.mulf %[[B1]], %[[EA2]] : f32
// CHECK-NEXT: %[[Z:.+]] = arith.addf %[[Y]], %[[EB2]] : f32
// CHECK: %[[DA:.+]] = arith.mulf %[[LAMBDA]]#0, %[[PREV]]#1
// CHECK: tt.return %[[DA]], %[[LAMBDA]]#0
tt.func public @f(%a: tensor<16x32xf32>, %b: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0:2 = "tt.scan"(%a, %b) <{axis = 0 : i32, reverse = false}> ({
  ^bb0(%a1: f32, %b1: f32, %a2: f32, %b2: f32):
    %p = arith.mulf %a1, %a2 : f32
    %q = arith.mulf %b1, %a2 : f32
    %r = arith.addf %q, %b2 : f32
    tt.scan.return %p, %r : f32, f32
  }) : (tensor<16x32xf32>, tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>)
  tt.return %0#1 : tensor<16x32xf32>
}
