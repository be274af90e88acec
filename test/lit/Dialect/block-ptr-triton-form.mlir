// Block pointers exactly as Triton 3.6 prints them (make_ir output, before
// make_ttir's rewrite-tensor-pointer): Triton's ODS types the results of
// tt.make_tensor_ptr / tt.advance as `triton::PointerType`, so the printer strips
// the dialect prefix and writes `: <tensor<32x32xf32>>`. Our TT_TensorPtr has
// the same C++ type, so this form parses and prints back identically.

// RUN: tritonad-opt %s | tritonad-opt | FileCheck %s

// CHECK-LABEL: tt.func public @k_block
// CHECK: tt.make_tensor_ptr %{{.*}} {order = array<i32: 1, 0>} : <tensor<32x32xf32>>
// CHECK: tt.advance %{{.*}}, [%{{.*}}, %{{.*}}] : <tensor<32x32xf32>>
module {
  tt.func public @k_block(%arg0: !tt.ptr<f32>, %arg1: !tt.ptr<f32>, %arg2: i32, %arg3: i32) attributes {noinline = false} {
    %c0_i32 = arith.constant 0 : i32
    %c1_i64 = arith.constant 1 : i64
    %c32_i32 = arith.constant 32 : i32
    %0 = arith.extsi %arg2 : i32 to i64
    %1 = arith.extsi %arg3 : i32 to i64
    %3 = tt.make_tensor_ptr %arg0, [%0, %1], [%1, %c1_i64], [%c0_i32, %c0_i32] {order = array<i32: 1, 0>} : <tensor<32x32xf32>>
    %4 = tt.load %3 {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<32x32xf32>>
    %5 = tt.advance %3, [%c32_i32, %c0_i32] : <tensor<32x32xf32>>
    tt.store %5, %4 {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<32x32xf32>>
    tt.return
  }
}
