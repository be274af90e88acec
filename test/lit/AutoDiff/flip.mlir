// tl.flip (Triton 3.6: bitcast to int, xor-swaps over the flipped dim reshaped into
// size-2 dims, bitcast back) becomes the same permutation on the floats
// (cpp/lib/AutoDiff/Prepare/Flip.cpp), which the reverse sweep differentiates.

// RUN: tritonad-opt %s --split-input-file --tritonad-rewrite-flips | FileCheck %s
// RUN: tritonad-opt %s --tritonad-differentiate="function=flip_last" | FileCheck %s --check-prefix=GRAD

// The last dim (8 = 2^3) of a 4x8 tile: three swaps, each along a last dim after
// a transpose that puts it there (the innermost needs none).
// CHECK-LABEL: tt.func public @flip_last
// CHECK-NOT: tt.bitcast
// CHECK-NOT: arith.xori
// CHECK: %[[R:.*]] = tt.reshape %arg0 : tensor<4x8xf32> -> tensor<4x2x2x2xf32>
// CHECK: %[[T1:.*]] = tt.trans %[[R]] {order = array<i32: 0, 2, 3, 1>} : tensor<4x2x2x2xf32> -> tensor<4x2x2x2xf32>
// CHECK: %[[A1:.*]], %[[B1:.*]] = tt.split %[[T1]] : tensor<4x2x2x2xf32> -> tensor<4x2x2xf32>
// CHECK: %[[J1:.*]] = tt.join %[[B1]], %[[A1]] : tensor<4x2x2xf32> -> tensor<4x2x2x2xf32>
// CHECK: %[[U1:.*]] = tt.trans %[[J1]] {order = array<i32: 0, 3, 1, 2>}
// CHECK: tt.trans %[[U1]] {order = array<i32: 0, 1, 3, 2>}
// CHECK: tt.split
// CHECK: tt.join
// CHECK: %[[U2:.*]] = tt.trans %{{.*}} {order = array<i32: 0, 1, 3, 2>}
// CHECK-NOT: tt.trans
// CHECK: %[[A3:.*]], %[[B3:.*]] = tt.split %[[U2]]
// CHECK: %[[J3:.*]] = tt.join %[[B3]], %[[A3]]
// CHECK: %[[F:.*]] = tt.reshape %[[J3]] : tensor<4x2x2x2xf32> -> tensor<4x8xf32>
// CHECK: arith.mulf %[[F]], %arg0
// GRAD-LABEL: tt.func private @flip_last_vjp
// GRAD-NOT: tt.bitcast
// GRAD: tt.split
// GRAD: tt.join
tt.func public @flip_last(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tt.bitcast %x : tensor<4x8xf32> -> tensor<4x8xi32>
  %1 = tt.reshape %0 : tensor<4x8xi32> -> tensor<4x2x2x2xi32>
  %2 = "tt.reduce"(%1) <{axis = 1 : i32}> ({
  ^bb0(%a: i32, %b: i32):
    %x0 = arith.xori %a, %b : i32
    tt.reduce.return %x0 : i32
  }) : (tensor<4x2x2x2xi32>) -> tensor<4x2x2xi32>
  %3 = tt.expand_dims %2 {axis = 1 : i32} : tensor<4x2x2xi32> -> tensor<4x1x2x2xi32>
  %4 = tt.broadcast %3 : tensor<4x1x2x2xi32> -> tensor<4x2x2x2xi32>
  %5 = arith.xori %1, %4 : tensor<4x2x2x2xi32>
  %6 = "tt.reduce"(%5) <{axis = 2 : i32}> ({
  ^bb0(%a: i32, %b: i32):
    %x0 = arith.xori %a, %b : i32
    tt.reduce.return %x0 : i32
  }) : (tensor<4x2x2x2xi32>) -> tensor<4x2x2xi32>
  %7 = tt.expand_dims %6 {axis = 2 : i32} : tensor<4x2x2xi32> -> tensor<4x2x1x2xi32>
  %8 = tt.broadcast %7 : tensor<4x2x1x2xi32> -> tensor<4x2x2x2xi32>
  %9 = arith.xori %5, %8 : tensor<4x2x2x2xi32>
  %10 = "tt.reduce"(%9) <{axis = 3 : i32}> ({
  ^bb0(%a: i32, %b: i32):
    %x0 = arith.xori %a, %b : i32
    tt.reduce.return %x0 : i32
  }) : (tensor<4x2x2x2xi32>) -> tensor<4x2x2xi32>
  %11 = tt.expand_dims %10 {axis = 3 : i32} : tensor<4x2x2xi32> -> tensor<4x2x2x1xi32>
  %12 = tt.broadcast %11 : tensor<4x2x2x1xi32> -> tensor<4x2x2x2xi32>
  %13 = arith.xori %9, %12 : tensor<4x2x2x2xi32>
  %14 = tt.reshape %13 : tensor<4x2x2x2xi32> -> tensor<4x8xi32>
  %15 = tt.bitcast %14 : tensor<4x8xi32> -> tensor<4x8xf32>
  %16 = arith.mulf %15, %x : tensor<4x8xf32>
  tt.return %16 : tensor<4x8xf32>
}

// -----

// The first dim (4 = 2^2) of a 4x8 bf16 tile: two swaps; the integer chain is gone.
// CHECK-LABEL: tt.func public @flip_first
// CHECK-NOT: arith.xori
// CHECK: tt.reshape %arg0 : tensor<4x8xbf16> -> tensor<2x2x8xbf16>
// CHECK: tt.trans %{{.*}} {order = array<i32: 1, 2, 0>}
// CHECK: tt.trans %{{.*}} {order = array<i32: 0, 2, 1>}
// CHECK: tt.reshape %{{.*}} : tensor<2x2x8xbf16> -> tensor<4x8xbf16>
// CHECK-NOT: tt.bitcast
// CHECK: tt.return
tt.func public @flip_first(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %0 = tt.bitcast %x : tensor<4x8xbf16> -> tensor<4x8xi16>
  %1 = tt.reshape %0 : tensor<4x8xi16> -> tensor<2x2x8xi16>
  %2 = "tt.reduce"(%1) <{axis = 0 : i32}> ({
  ^bb0(%a: i16, %b: i16):
    %x0 = arith.xori %a, %b : i16
    tt.reduce.return %x0 : i16
  }) : (tensor<2x2x8xi16>) -> tensor<2x8xi16>
  %3 = tt.expand_dims %2 {axis = 0 : i32} : tensor<2x8xi16> -> tensor<1x2x8xi16>
  %4 = tt.broadcast %3 : tensor<1x2x8xi16> -> tensor<2x2x8xi16>
  %5 = arith.xori %1, %4 : tensor<2x2x8xi16>
  %6 = "tt.reduce"(%5) <{axis = 1 : i32}> ({
  ^bb0(%a: i16, %b: i16):
    %x0 = arith.xori %a, %b : i16
    tt.reduce.return %x0 : i16
  }) : (tensor<2x2x8xi16>) -> tensor<2x8xi16>
  %7 = tt.expand_dims %6 {axis = 1 : i32} : tensor<2x8xi16> -> tensor<2x1x8xi16>
  %8 = tt.broadcast %7 : tensor<2x1x8xi16> -> tensor<2x2x8xi16>
  %9 = arith.xori %5, %8 : tensor<2x2x8xi16>
  %10 = tt.reshape %9 : tensor<2x2x8xi16> -> tensor<4x8xi16>
  %11 = tt.bitcast %10 : tensor<4x8xi16> -> tensor<4x8xbf16>
  tt.return %11 : tensor<4x8xbf16>
}

// -----

// Not the pattern (a level missing: the xors cover 2 of the 3 size-2 dims, which
// is no flip): left alone, so the bitcast stays a located error.
// CHECK-LABEL: tt.func public @not_a_flip
// CHECK: tt.bitcast %arg0
// CHECK: arith.xori
// CHECK: tt.bitcast
tt.func public @not_a_flip(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = tt.bitcast %x : tensor<8xf32> -> tensor<8xi32>
  %1 = tt.reshape %0 : tensor<8xi32> -> tensor<2x2x2xi32>
  %2 = "tt.reduce"(%1) <{axis = 0 : i32}> ({
  ^bb0(%a: i32, %b: i32):
    %x0 = arith.xori %a, %b : i32
    tt.reduce.return %x0 : i32
  }) : (tensor<2x2x2xi32>) -> tensor<2x2xi32>
  %3 = tt.expand_dims %2 {axis = 0 : i32} : tensor<2x2xi32> -> tensor<1x2x2xi32>
  %4 = tt.broadcast %3 : tensor<1x2x2xi32> -> tensor<2x2x2xi32>
  %5 = arith.xori %1, %4 : tensor<2x2x2xi32>
  %6 = "tt.reduce"(%5) <{axis = 1 : i32}> ({
  ^bb0(%a: i32, %b: i32):
    %x0 = arith.xori %a, %b : i32
    tt.reduce.return %x0 : i32
  }) : (tensor<2x2x2xi32>) -> tensor<2x2xi32>
  %7 = tt.expand_dims %6 {axis = 1 : i32} : tensor<2x2xi32> -> tensor<2x1x2xi32>
  %8 = tt.broadcast %7 : tensor<2x1x2xi32> -> tensor<2x2x2xi32>
  %9 = arith.xori %5, %8 : tensor<2x2x2xi32>
  %10 = tt.reshape %9 : tensor<2x2x2xi32> -> tensor<8xi32>
  %11 = tt.bitcast %10 : tensor<8xi32> -> tensor<8xf32>
  tt.return %11 : tensor<8xf32>
}

// -----

// Along a dim of size 1 (no xor level): the identity, as reshapes on the floats.
// CHECK-LABEL: tt.func public @flip_unit
// CHECK-NOT: tt.bitcast
// CHECK: %[[R:.*]] = tt.reshape %arg0 : tensor<1x8xf32> -> tensor<8xf32>
// CHECK: %[[B:.*]] = tt.reshape %[[R]] : tensor<8xf32> -> tensor<1x8xf32>
// CHECK: tt.return %[[B]]
tt.func public @flip_unit(%x: tensor<1x8xf32>) -> tensor<1x8xf32> {
  %0 = tt.bitcast %x : tensor<1x8xf32> -> tensor<1x8xi32>
  %1 = tt.reshape %0 : tensor<1x8xi32> -> tensor<8xi32>
  %2 = tt.reshape %1 : tensor<8xi32> -> tensor<1x8xi32>
  %3 = tt.bitcast %2 : tensor<1x8xi32> -> tensor<1x8xf32>
  tt.return %3 : tensor<1x8xf32>
}
