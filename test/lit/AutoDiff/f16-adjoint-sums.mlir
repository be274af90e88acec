// A reversed loop carries the running sum of a captured f16 (or bf16) value's
// adjoint in f32 and rounds it once after the loop (ScfRules.cpp, summedType
// in GradientUtils): in f16 every iteration would round it. Each iteration's
// delta keeps its own rounding to f16 (extended, then added). An operand
// rounded to f16 for a product gets the product unrounded: the rounding's rule
// takes an adjoint that is a rounding of an f32 value unrounded (ArithRules.cpp,
// FloatCastModel).

// RUN: tritonad-opt %s --tritonad-differentiate="function=f wrt=0,2" --canonicalize --cse | FileCheck %s

// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[A:[^:]+]]: tensor<16x16xf16>, %[[B:[^:]+]]: tensor<16x16xf16>, %[[X:[^:]+]]: tensor<16x16xf32>, %[[N:[^:]+]]: i32, %[[G:[^:]+]]: tensor<16x16xf32>)
// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
// CHECK: %[[G16:.+]] = arith.truncf %[[G]] : tensor<16x16xf32> to tensor<16x16xf16>
// CHECK: %[[BT:.+]] = tt.trans %[[B]]
// CHECK: %[[GB:.+]] = tt.dot %[[G16]], %[[BT]], %[[ZERO]] : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
// x's adjoint: h = f16(x * x) is rounded for the product alone, so its adjoint
// stays f32 (no round trip through f16): 2 x g b^T.
// CHECK: %[[XG:.+]] = arith.mulf %[[GB]], %[[X]] : tensor<16x16xf32>
// CHECK: %[[DX:.+]] = arith.addf %[[XG]], %[[XG]] : tensor<16x16xf32>
// a's adjoint: n times the rounded g b^T, summed in f32, rounded once.
// CHECK: %[[SUM:.+]] = scf.for %{{.+}} = %{{.+}} to %[[N]] step %{{.+}} iter_args(%[[RSUM:.+]] = %[[ZERO]]) -> (tensor<16x16xf32>)
// CHECK:   %[[GB16:.+]] = arith.truncf %[[GB]] : tensor<16x16xf32> to tensor<16x16xf16>
// CHECK:   %[[DELTA:.+]] = arith.extf %[[GB16]] : tensor<16x16xf16> to tensor<16x16xf32>
// CHECK:   %[[NEXT:.+]] = arith.addf %[[RSUM]], %[[DELTA]] : tensor<16x16xf32>
// CHECK:   scf.yield %[[NEXT]] : tensor<16x16xf32>
// CHECK: %[[DA:.+]] = arith.truncf %[[SUM]] : tensor<16x16xf32> to tensor<16x16xf16>
// CHECK: tt.return %[[DA]], %[[DX]] : tensor<16x16xf16>, tensor<16x16xf32>
module {
  tt.func private @f(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %x: tensor<16x16xf32>, %n: i32) -> tensor<16x16xf32> {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant dense<0.0> : tensor<16x16xf32>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<16x16xf32>) : i32 {
      %d = tt.dot %a, %b, %acc : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
      scf.yield %d : tensor<16x16xf32>
    }
    %sq = arith.mulf %x, %x : tensor<16x16xf32>
    %h = arith.truncf %sq : tensor<16x16xf32> to tensor<16x16xf16>
    %e = tt.dot %h, %b, %r : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
    tt.return %e : tensor<16x16xf32>
  }
}
