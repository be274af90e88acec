// tt.reduce with an associative combiner no specialized rule knows
// (cpp/lib/AutoDiff/Rules/CombinerRules.cpp): two scans of the combiner f (from
// the start, and reversed from the end) carry each segment's value without its
// last element (flag, those values, the full values), so P_{i-1} and S_{i+1} come
// out without shifting lanes; then r = f(f(P, x), S) on whole tensors (the ends
// selected by the flags) is differentiated by the ordinary rules.

// RUN: tritonad-opt %s --split-input-file --tritonad-differentiate="function=f" | FileCheck %s

// Welford (mean, m2, count) along axis 1 of a 4x16 tile, only the mean and m2
// differentiated (the counts are a constant).
// CHECK-LABEL: tt.func private @f_vjp
// CHECK: %[[P:.*]]:7 = "tt.scan"(%{{.*}}, %[[X:[^,]*]], %{{.*}}, %{{.*}}, %[[X]], %{{.*}}, %{{.*}}) <{axis = 1 : i32, reverse = false}>
// CHECK: ^bb0(%{{.*}}: i32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %[[LATERFLAG:[^:]*]]: i32,
// CHECK: arith.cmpi ne, %[[LATERFLAG]]
// CHECK: tt.scan.return
// CHECK: (tensor<4x16xi32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> (tensor<4x16xi32>,
// CHECK: %[[PVALID:.*]] = arith.cmpi eq, %[[P]]#0,
// CHECK: %[[S:.*]]:7 = "tt.scan"({{.*}}) <{axis = 1 : i32, reverse = true}>
// CHECK: %[[SVALID:.*]] = arith.cmpi eq, %[[S]]#0,
// The combiner on tensors: f(P, x) where P exists, else x.
// CHECK: %[[N1:.*]] = arith.addf %[[P]]#3, %{{.*}} : tensor<4x16xf32>
// CHECK: arith.cmpf oeq, %[[N1]], %{{.*}} : tensor<4x16xf32>
// CHECK: arith.select %[[PVALID]], %{{.*}}, %[[X]] : tensor<4x16xi1>, tensor<4x16xf32>
// then f(., S) where S exists
// CHECK: arith.select %[[SVALID]]
// The seeds: the results' adjoints along the reduced axis.
// CHECK: tt.expand_dims %arg1 {axis = 1 : i32} : tensor<4xf32> -> tensor<4x1xf32>
// CHECK: tt.expand_dims %arg2 {axis = 1 : i32} : tensor<4xf32> -> tensor<4x1xf32>
// CHECK-NOT: "tt.reduce"
// CHECK: tt.return %{{.*}} : tensor<4x16xf32>
tt.func public @f(%x: tensor<4x16xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant dense<0.0> : tensor<4x16xf32>
  %one = arith.constant dense<1.0> : tensor<4x16xf32>
  %r:3 = "tt.reduce"(%x, %zero, %one) <{axis = 1 : i32}> ({
  ^bb0(%ma: f32, %qa: f32, %na: f32, %mb: f32, %qb: f32, %nb: f32):
    %c0 = arith.constant 0.0 : f32
    %c1 = arith.constant 1.0 : f32
    %n = arith.addf %na, %nb : f32
    %d = arith.subf %mb, %ma : f32
    %empty = arith.cmpf oeq, %n, %c0 : f32
    %safe = arith.select %empty, %c1, %n : f32
    %ratio = arith.divf %nb, %safe : f32
    %w = arith.select %empty, %c0, %ratio : f32
    %dw = arith.mulf %d, %w : f32
    %m = arith.addf %ma, %dw : f32
    %dd = arith.mulf %d, %dw : f32
    %ddn = arith.mulf %dd, %na : f32
    %q0 = arith.addf %qa, %qb : f32
    %q = arith.addf %q0, %ddn : f32
    tt.reduce.return %m, %q, %n : f32, f32, f32
  }) : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  tt.return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A sum and a max of two operands reduced together (no specialized rule for the
// pair): the general rule, one scan pair over both.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK: "tt.scan"({{.*}}) <{axis = 0 : i32, reverse = false}>
// CHECK: "tt.scan"({{.*}}) <{axis = 0 : i32, reverse = true}>
// CHECK: arith.maxnumf %{{.*}} : tensor<32xf32>
// CHECK: tt.return %{{.*}}, %{{.*}} : tensor<32xf32>, tensor<32xf32>
tt.func public @f(%x: tensor<32xf32>, %y: tensor<32xf32>) -> f32 {
  %r:2 = "tt.reduce"(%x, %y) <{axis = 0 : i32}> ({
  ^bb0(%sa: f32, %ma: f32, %sb: f32, %mb: f32):
    %s = arith.addf %sa, %sb : f32
    %m = arith.maxnumf %ma, %mb : f32
    tt.reduce.return %s, %m : f32, f32
  }) : (tensor<32xf32>, tensor<32xf32>) -> (f32, f32)
  %p = arith.mulf %r#0, %r#1 : f32
  tt.return %p : f32
}

// -----

// A constant of the combiner defined outside its region (where canonicalization
// hoists it) is copied into the scans' regions and splat for the tensor form.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK: "tt.scan"
// CHECK: arith.constant 5.000000e-01 : f32
// CHECK: tt.scan.return
// CHECK: arith.constant dense<5.000000e-01> : tensor<32xf32>
// CHECK: tt.return %{{.*}} : tensor<32xf32>
tt.func public @f(%x: tensor<32xf32>) -> f32 {
  %half = arith.constant 0.5 : f32
  %r = "tt.reduce"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    %p = arith.mulf %a, %b : f32
    %h = arith.mulf %p, %half : f32
    %t = arith.addf %s, %h : f32
    tt.reduce.return %t : f32
  }) : (tensor<32xf32>) -> f32
  tt.return %r : f32
}
