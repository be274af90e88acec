// tt.gather's adjoint (cpp/lib/AutoDiff/Rules/GatherRule.cpp): the output adjoint
// scatter-added into the source's shape by a one-hot compare of every output
// position with every source position along the axis, summed over the outputs
// (in f32 for bf16); the index gets no gradient.

// RUN: tritonad-opt %s --split-input-file --tritonad-differentiate="function=f" --canonicalize --cse | FileCheck %s

// Axis 1 of a 4x16 source gathered at a 4x8 i32 index: the pairs are 4x8x16.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>, %[[I:.*]]: tensor<4x8xi32>, %[[G:.*]]: tensor<4x8xf32>) -> tensor<4x16xf32>
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<4x8x16xf32>
// CHECK: %[[IE:.*]] = tt.expand_dims %[[I]] {axis = 2 : i32} : tensor<4x8xi32> -> tensor<4x8x1xi32>
// CHECK: %[[IB:.*]] = tt.broadcast %[[IE]] : tensor<4x8x1xi32> -> tensor<4x8x16xi32>
// CHECK: %[[J:.*]] = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
// CHECK: %[[JB:.*]] = tt.broadcast %{{.*}} : tensor<1x1x16xi32> -> tensor<4x8x16xi32>
// CHECK: %[[HIT:.*]] = arith.cmpi eq, %[[IB]], %[[JB]] : tensor<4x8x16xi32>
// CHECK: %[[GE:.*]] = tt.expand_dims %[[G]] {axis = 2 : i32} : tensor<4x8xf32> -> tensor<4x8x1xf32>
// CHECK: %[[GB:.*]] = tt.broadcast %[[GE]] : tensor<4x8x1xf32> -> tensor<4x8x16xf32>
// CHECK: %[[PICK:.*]] = arith.select %[[HIT]], %[[GB]], %[[ZERO]]
// CHECK: %[[SUM:.*]] = "tt.reduce"(%[[PICK]]) <{axis = 1 : i32}>
// CHECK: arith.addf
// CHECK: (tensor<4x8x16xf32>) -> tensor<4x16xf32>
// CHECK: tt.return %[[SUM]] : tensor<4x16xf32>
tt.func public @f(%x: tensor<4x16xf32>, %i: tensor<4x8xi32>) -> tensor<4x8xf32> {
  %0 = tt.gather %x[%i] {axis = 1 : i32} : (tensor<4x16xf32>, tensor<4x8xi32>) -> tensor<4x8xf32>
  tt.return %0 : tensor<4x8xf32>
}

// -----

// Axis 0 of a bf16 source with an i64 index (repeats allowed): the source positions
// are widened to i64; the sum over the 32 outputs is in f32, rounded once.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK: tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
// CHECK: arith.extsi %{{.*}} : tensor<32x8x4xi32> to tensor<32x8x4xi64>
// CHECK: arith.cmpi eq, %{{.*}}, %{{.*}} : tensor<32x8x4xi64>
// CHECK: arith.select %{{.*}} : tensor<32x8x4xi1>, tensor<32x8x4xbf16>
// CHECK: arith.extf %{{.*}} : tensor<32x8x4xbf16> to tensor<32x8x4xf32>
// CHECK: "tt.reduce"(%{{.*}}) <{axis = 0 : i32}>
// CHECK: (tensor<32x8x4xf32>) -> tensor<8x4xf32>
// CHECK: arith.truncf %{{.*}} : tensor<8x4xf32> to tensor<8x4xbf16>
tt.func public @f(%x: tensor<8x4xbf16>, %i: tensor<32x4xi64>) -> tensor<32x4xbf16> {
  %0 = tt.gather %x[%i] {axis = 0 : i32} : (tensor<8x4xbf16>, tensor<32x4xi64>) -> tensor<32x4xbf16>
  tt.return %0 : tensor<32x4xbf16>
}
