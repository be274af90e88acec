// Reverse-mode rules of tt.scan (cpp/lib/AutoDiff/TritonRules.cpp):
//  - cumsum (arith.addf):  dx = cumsum of g in the opposite direction
//    (a tt.scan with `reverse` flipped);
//  - cumprod (arith.mulf): dx_k = (sum_{j>=k} g_j * y_j) / x_k, for x != 0.

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

// tl.cumprod(x, axis=1, reverse=True): y = scan; dx = scan_fwd(g * y) / x.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = "tt.scan"(%[[X]]) <{axis = 1 : i32, reverse = true}>
// CHECK: arith.mulf
// CHECK: %[[GY:.+]] = arith.mulf %[[G]], %[[Y]] : tensor<16x32xf32>
// CHECK: %[[T:.+]] = "tt.scan"(%[[GY]]) <{axis = 1 : i32, reverse = false}> ({
// CHECK: arith.addf
// CHECK: }) : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[DX:.+]] = arith.divf %[[T]], %[[X]] : tensor<16x32xf32>
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

// A 1-d cumprod, forward: the adjoint's sum scan runs in reverse.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<32xf32>, %[[G:[^:]+]]: tensor<32xf32>) -> tensor<32xf32>
// CHECK: %[[Y:.+]] = "tt.scan"(%[[X]]) <{axis = 0 : i32, reverse = false}>
// CHECK: %[[GY:.+]] = arith.mulf %[[G]], %[[Y]] : tensor<32xf32>
// CHECK: %[[T:.+]] = "tt.scan"(%[[GY]]) <{axis = 0 : i32, reverse = true}>
// CHECK: %[[DX:.+]] = arith.divf %[[T]], %[[X]] : tensor<32xf32>
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<32xf32>) -> tensor<32xf32> {
  %0 = "tt.scan"(%x) <{axis = 0 : i32, reverse = false}> ({
  ^bb0(%a: f32, %b: f32):
    %s = arith.mulf %a, %b : f32
    tt.scan.return %s : f32
  }) : (tensor<32xf32>) -> tensor<32xf32>
  tt.return %0 : tensor<32xf32>
}
