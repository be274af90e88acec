// Reverse-mode rules of the shape ops of tt (cpp/lib/AutoDiff/Rules/TritonRules.cpp):
// splat and broadcast sum the cotangent back (tt.reduce with arith.addf),
// expand_dims/reshape reshape it back, trans applies the inverse permutation,
// join <-> split, fp_to_fp converts back (rounding when narrowing).

// RUN: tritonad-opt %s --split-input-file --tritonad-differentiate="function=f" | FileCheck %s

// splat of a scalar: the scalar's gradient is the sum of all 16x32 cotangents
// (flattened, then one tt.reduce).
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: f32, %[[G:[^:]+]]: tensor<16x32xf32>) -> f32
// CHECK: %[[FLAT:.+]] = tt.reshape %[[G]] : tensor<16x32xf32> -> tensor<512xf32>
// CHECK: %[[SUM:.+]] = "tt.reduce"(%[[FLAT]]) <{axis = 0 : i32}> ({
// CHECK-NEXT: ^bb0(%[[A:[^:]+]]: f32, %[[B:[^:]+]]: f32):
// CHECK-NEXT: %[[S:.+]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT: tt.reduce.return %[[S]] : f32
// CHECK-NEXT: }) : (tensor<512xf32>) -> f32
// CHECK-NEXT: tt.return %[[SUM]] : f32
tt.func public @f(%s: f32) -> tensor<16x32xf32> {
  %0 = tt.splat %s : f32 -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// broadcast 16x1 -> 16x32 sums axis 1, 1x32 -> 16x32 sums axis 0; the sums are
// reshaped back to the kept-dim shapes.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<16x1xf32>, %{{[^:]+}}: tensor<1x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> (tensor<16x1xf32>, tensor<1x32xf32>)
// CHECK: %[[R0:.+]] = "tt.reduce"(%[[G]]) <{axis = 0 : i32}> ({
// CHECK: arith.addf
// CHECK: }) : (tensor<16x32xf32>) -> tensor<32xf32>
// CHECK: %[[DY:.+]] = tt.reshape %[[R0]] : tensor<32xf32> -> tensor<1x32xf32>
// CHECK: %[[R1:.+]] = "tt.reduce"(%[[G]]) <{axis = 1 : i32}> ({
// CHECK: arith.addf
// CHECK: }) : (tensor<16x32xf32>) -> tensor<16xf32>
// CHECK: %[[DX:.+]] = tt.reshape %[[R1]] : tensor<16xf32> -> tensor<16x1xf32>
// CHECK: tt.return %[[DX]], %[[DY]] : tensor<16x1xf32>, tensor<1x32xf32>
tt.func public @f(%x: tensor<16x1xf32>, %y: tensor<1x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.broadcast %x : tensor<16x1xf32> -> tensor<16x32xf32>
  %1 = tt.broadcast %y : tensor<1x32xf32> -> tensor<16x32xf32>
  %2 = arith.addf %0, %1 : tensor<16x32xf32>
  tt.return %2 : tensor<16x32xf32>
}

// -----

// x[:, None] * y[None, :] (an outer product): expand_dims reshapes the summed
// cotangent back to the rank-1 operand.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<16xf32>, %{{[^:]+}}: tensor<32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> (tensor<16xf32>, tensor<32xf32>)
// CHECK: %[[XB:.+]] = tt.broadcast %{{.+}} : tensor<16x1xf32> -> tensor<16x32xf32>
// CHECK: %[[YB:.+]] = tt.broadcast %{{.+}} : tensor<1x32xf32> -> tensor<16x32xf32>
// CHECK-DAG: %[[GX:.+]] = arith.mulf %[[G]], %[[YB]]
// CHECK-DAG: %[[GY:.+]] = arith.mulf %[[G]], %[[XB]]
// CHECK: %[[SY:.+]] = "tt.reduce"(%[[GY]]) <{axis = 0 : i32}>
// CHECK: %[[SY1:.+]] = tt.reshape %[[SY]] : tensor<32xf32> -> tensor<1x32xf32>
// CHECK: %[[SX:.+]] = "tt.reduce"(%[[GX]]) <{axis = 1 : i32}>
// CHECK: %[[SX1:.+]] = tt.reshape %[[SX]] : tensor<16xf32> -> tensor<16x1xf32>
// CHECK: %[[DY:.+]] = tt.reshape %[[SY1]] : tensor<1x32xf32> -> tensor<32xf32>
// CHECK: %[[DX:.+]] = tt.reshape %[[SX1]] : tensor<16x1xf32> -> tensor<16xf32>
// CHECK: tt.return %[[DX]], %[[DY]] : tensor<16xf32>, tensor<32xf32>
tt.func public @f(%x: tensor<16xf32>, %y: tensor<32xf32>) -> tensor<16x32xf32> {
  %0 = tt.expand_dims %x {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
  %1 = tt.expand_dims %y {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
  %2 = tt.broadcast %0 : tensor<16x1xf32> -> tensor<16x32xf32>
  %3 = tt.broadcast %1 : tensor<1x32xf32> -> tensor<16x32xf32>
  %4 = arith.mulf %2, %3 : tensor<16x32xf32>
  tt.return %4 : tensor<16x32xf32>
}

// -----

// reshape (no allow_reorder): reshape the cotangent back.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<8x64xf32>) -> tensor<16x32xf32>
// CHECK: %[[DX:.+]] = tt.reshape %[[G]] : tensor<8x64xf32> -> tensor<16x32xf32>
// CHECK-NOT: allow_reorder
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<8x64xf32> {
  %0 = tt.reshape %x : tensor<16x32xf32> -> tensor<8x64xf32>
  tt.return %0 : tensor<8x64xf32>
}

// -----

// tl.trans of a 16x32 tile: transpose the cotangent back.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<32x16xf32>) -> tensor<16x32xf32>
// CHECK: %[[DX:.+]] = tt.trans %[[G]] {order = array<i32: 1, 0>} : tensor<32x16xf32> -> tensor<16x32xf32>
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<32x16xf32> {
  %0 = tt.trans %x {order = array<i32: 1, 0>} : tensor<16x32xf32> -> tensor<32x16xf32>
  tt.return %0 : tensor<32x16xf32>
}

// -----

// tl.permute(x, (1, 2, 0)) on 2x4x8: the inverse permutation is (2, 0, 1).
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<2x4x8xf32>, %[[G:[^:]+]]: tensor<4x8x2xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[DX:.+]] = tt.trans %[[G]] {order = array<i32: 2, 0, 1>} : tensor<4x8x2xf32> -> tensor<2x4x8xf32>
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<2x4x8xf32>) -> tensor<4x8x2xf32> {
  %0 = tt.trans %x {order = array<i32: 1, 2, 0>} : tensor<2x4x8xf32> -> tensor<4x8x2xf32>
  tt.return %0 : tensor<4x8x2xf32>
}

// -----

// join: split the cotangent.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<16x32xf32>, %{{[^:]+}}: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32x2xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>)
// CHECK: %[[L:[^,]+]], %[[R:[^ ]+]] = tt.split %[[G]] : tensor<16x32x2xf32> -> tensor<16x32xf32>
// CHECK: tt.return %[[L]], %[[R]]
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32x2xf32> {
  %0 = tt.join %x, %y : tensor<16x32xf32> -> tensor<16x32x2xf32>
  tt.return %0 : tensor<16x32x2xf32>
}

// -----

// split with only the right half used: join a zero left half.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<16x32x2xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32x2xf32>
// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CHECK: %[[DX:.+]] = tt.join %[[ZERO]], %[[G]] : tensor<16x32xf32> -> tensor<16x32x2xf32>
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32x2xf32>) -> tensor<16x32xf32> {
  %a, %b = tt.split %x : tensor<16x32x2xf32> -> tensor<16x32xf32>
  tt.return %b : tensor<16x32xf32>
}

// -----

// split with both halves returned: join the two cotangents.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<16x32x2xf32>, %[[GA:[^:]+]]: tensor<16x32xf32>, %[[GB:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32x2xf32>
// CHECK: %[[DX:.+]] = tt.join %[[GA]], %[[GB]] : tensor<16x32xf32> -> tensor<16x32x2xf32>
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32x2xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>) {
  %a, %b = tt.split %x : tensor<16x32x2xf32> -> tensor<16x32xf32>
  tt.return %a, %b : tensor<16x32xf32>, tensor<16x32xf32>
}

// -----

// fp_to_fp narrowing (f32 -> f8): the cotangent is widened back, no rounding.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf8E5M2>) -> tensor<16x32xf32>
// CHECK: %[[DX:.+]] = tt.fp_to_fp %[[G]] : tensor<16x32xf8E5M2> -> tensor<16x32xf32>
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf8E5M2> {
  %0 = tt.fp_to_fp %x, rounding = rtne : tensor<16x32xf32> -> tensor<16x32xf8E5M2>
  tt.return %0 : tensor<16x32xf8E5M2>
}

// -----

// fp_to_fp widening (f8 -> f32): the cotangent is narrowed with rounding = rtne.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<16x32xf8E4M3FN>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf8E4M3FN>
// CHECK: %[[DX:.+]] = tt.fp_to_fp %[[G]], rounding = rtne : tensor<16x32xf32> -> tensor<16x32xf8E4M3FN>
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf8E4M3FN>) -> tensor<16x32xf32> {
  %0 = tt.fp_to_fp %x : tensor<16x32xf8E4M3FN> -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}
