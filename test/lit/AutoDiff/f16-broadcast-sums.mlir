// The adjoint of a broadcast (a bf16 weight shared by a block of rows) sums the
// rows' contributions in f32 and rounds once (TensorBuilders.cpp, sumAlongAxis):
// a bf16 tt.reduce would round at every step of the sum.

// RUN: tritonad-opt %s --tritonad-differentiate="function=f wrt=1" --canonicalize --cse | FileCheck %s

// CHECK-LABEL: tt.func private @f_vjp
// CHECK: %[[PRODUCT:.+]] = arith.mulf %{{.+}}, %{{.+}} : tensor<16x32xbf16>
// CHECK: %[[WIDE:.+]] = arith.extf %[[PRODUCT]] : tensor<16x32xbf16> to tensor<16x32xf32>
// CHECK: %[[SUM:.+]] = "tt.reduce"(%[[WIDE]])
// CHECK: arith.addf %{{.+}}, %{{.+}} : f32
// CHECK: (tensor<16x32xf32>) -> tensor<32xf32>
// CHECK: arith.truncf %[[SUM]] : tensor<32xf32> to tensor<32xbf16>
tt.func public @f(%x: tensor<16x32xbf16>, %w: tensor<1x32xbf16>) -> tensor<16x32xbf16> {
  %b = tt.broadcast %w : tensor<1x32xbf16> -> tensor<16x32xbf16>
  %y = arith.mulf %x, %b : tensor<16x32xbf16>
  tt.return %y : tensor<16x32xbf16>
}
