// Reverse-mode rule of tt.dot (cpp/lib/AutoDiff/Rules/TritonRules.cpp):
// d = a x b + c  =>  da = g x b^T,  db = a^T x g,  dc = g. The products keep the
// forward dot's inputPrecision, take the operands' dtype (the f32 cotangent is
// cast with arith.truncf for f16 operands), accumulate in d's dtype and are
// cast back to the operand dtype.

// RUN: tritonad-opt %s --split-input-file --tritonad-differentiate="function=f" | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-differentiate="function=f wrt=0" --canonicalize --cse | FileCheck %s --check-prefix=WRT0

// fp32 with tf32 (tl.dot's default for fp32): both products stay tf32.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[A:[^:]+]]: tensor<16x32xf32>, %[[B:[^:]+]]: tensor<32x64xf32>, %[[G:[^:]+]]: tensor<16x64xf32>) -> (tensor<16x32xf32>, tensor<32x64xf32>)
// CHECK: %[[BT:.+]] = tt.trans %[[B]] {order = array<i32: 1, 0>} : tensor<32x64xf32> -> tensor<64x32xf32>
// CHECK: %[[Z0:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CHECK: %[[DA:.+]] = tt.dot %[[G]], %[[BT]], %[[Z0]], inputPrecision = tf32 : tensor<16x64xf32> * tensor<64x32xf32> -> tensor<16x32xf32>
// CHECK: %[[AT:.+]] = tt.trans %[[A]] {order = array<i32: 1, 0>} : tensor<16x32xf32> -> tensor<32x16xf32>
// CHECK: %[[Z1:.+]] = arith.constant dense<0.000000e+00> : tensor<32x64xf32>
// CHECK: %[[DB:.+]] = tt.dot %[[AT]], %[[G]], %[[Z1]], inputPrecision = tf32 : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
// CHECK-NOT: arith.truncf
// CHECK: tt.return %[[DA]], %[[DB]] : tensor<16x32xf32>, tensor<32x64xf32>
// Only a: no product for b.
// WRT0-LABEL: tt.func private @f_vjp
// WRT0-SAME: (%{{[^:]+}}: tensor<16x32xf32>, %[[B:[^:]+]]: tensor<32x64xf32>, %[[G:[^:]+]]: tensor<16x64xf32>) -> tensor<16x32xf32>
// WRT0-NEXT: %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// WRT0-NEXT: %[[BT:.+]] = tt.trans %[[B]] {order = array<i32: 1, 0>}
// WRT0-NEXT: %[[DA:.+]] = tt.dot %[[G]], %[[BT]], %[[Z]], inputPrecision = tf32
// WRT0-NEXT: tt.return %[[DA]] : tensor<16x32xf32>
tt.func public @f(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>) -> tensor<16x64xf32> {
  %cst = arith.constant dense<0.000000e+00> : tensor<16x64xf32>
  %0 = tt.dot %a, %b, %cst, inputPrecision = tf32 : tensor<16x32xf32> * tensor<32x64xf32> -> tensor<16x64xf32>
  tt.return %0 : tensor<16x64xf32>
}

// -----

// ieee (input_precision="ieee", printed without the attribute) stays ieee; an
// active accumulator gets the cotangent itself.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[A:[^:]+]]: tensor<16x32xf32>, %[[B:[^:]+]]: tensor<32x64xf32>, %[[C:[^:]+]]: tensor<16x64xf32>, %[[G:[^:]+]]: tensor<16x64xf32>) -> (tensor<16x32xf32>, tensor<32x64xf32>, tensor<16x64xf32>)
// CHECK: %[[DA:.+]] = tt.dot %[[G]], %{{[^,]+}}, %{{[^,]+}} : tensor<16x64xf32> * tensor<64x32xf32> -> tensor<16x32xf32>
// CHECK: %[[DB:.+]] = tt.dot %{{[^,]+}}, %[[G]], %{{[^,]+}} : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
// CHECK: tt.return %[[DA]], %[[DB]], %[[G]]
// WRT0-LABEL: tt.func private @f_vjp
// WRT0-SAME: -> tensor<16x32xf32>
// WRT0-COUNT-1: tt.dot
// WRT0-NEXT: tt.return
tt.func public @f(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>, %c: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %0 = tt.dot %a, %b, %c : tensor<16x32xf32> * tensor<32x64xf32> -> tensor<16x64xf32>
  tt.return %0 : tensor<16x64xf32>
}

// -----

// fp16 operands, fp32 accumulator: the cotangent is truncated to f16 for each
// product, which accumulates in f32 and is truncated back to f16.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[A:[^:]+]]: tensor<16x32xf16>, %[[B:[^:]+]]: tensor<32x64xf16>, %[[G:[^:]+]]: tensor<16x64xf32>) -> (tensor<16x32xf16>, tensor<32x64xf16>)
// CHECK: %[[G16:.+]] = arith.truncf %[[G]] : tensor<16x64xf32> to tensor<16x64xf16>
// CHECK: %[[BT:.+]] = tt.trans %[[B]] {order = array<i32: 1, 0>} : tensor<32x64xf16> -> tensor<64x32xf16>
// CHECK: %[[Z0:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CHECK: %[[P:.+]] = tt.dot %[[G16]], %[[BT]], %[[Z0]], inputPrecision = tf32 : tensor<16x64xf16> * tensor<64x32xf16> -> tensor<16x32xf32>
// CHECK: %[[DA:.+]] = arith.truncf %[[P]] : tensor<16x32xf32> to tensor<16x32xf16>
// CHECK: %[[G16B:.+]] = arith.truncf %[[G]] : tensor<16x64xf32> to tensor<16x64xf16>
// CHECK: %[[AT:.+]] = tt.trans %[[A]] {order = array<i32: 1, 0>} : tensor<16x32xf16> -> tensor<32x16xf16>
// CHECK: %[[Z1:.+]] = arith.constant dense<0.000000e+00> : tensor<32x64xf32>
// CHECK: %[[Q:.+]] = tt.dot %[[AT]], %[[G16B]], %[[Z1]], inputPrecision = tf32 : tensor<32x16xf16> * tensor<16x64xf16> -> tensor<32x64xf32>
// CHECK: %[[DB:.+]] = arith.truncf %[[Q]] : tensor<32x64xf32> to tensor<32x64xf16>
// CHECK: tt.return %[[DA]], %[[DB]] : tensor<16x32xf16>, tensor<32x64xf16>
// WRT0-LABEL: tt.func private @f_vjp
// WRT0-SAME: -> tensor<16x32xf16>
// WRT0: arith.truncf %{{.+}} : tensor<16x64xf32> to tensor<16x64xf16>
// WRT0: tt.dot
// WRT0: arith.truncf %{{.+}} : tensor<16x32xf32> to tensor<16x32xf16>
// WRT0-NEXT: tt.return
tt.func public @f(%a: tensor<16x32xf16>, %b: tensor<32x64xf16>) -> tensor<16x64xf32> {
  %cst = arith.constant dense<0.000000e+00> : tensor<16x64xf32>
  %0 = tt.dot %a, %b, %cst, inputPrecision = tf32 : tensor<16x32xf16> * tensor<32x64xf16> -> tensor<16x64xf32>
  tt.return %0 : tensor<16x64xf32>
}

// -----

// Batched (3-d) dot: only the last two dims are transposed.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[A:[^:]+]]: tensor<2x16x32xf32>, %[[B:[^:]+]]: tensor<2x32x16xf32>, %[[G:[^:]+]]: tensor<2x16x16xf32>)
// CHECK: %[[BT:.+]] = tt.trans %[[B]] {order = array<i32: 0, 2, 1>} : tensor<2x32x16xf32> -> tensor<2x16x32xf32>
// CHECK: %[[DA:.+]] = tt.dot %[[G]], %[[BT]], %{{[^,]+}}, inputPrecision = tf32 : tensor<2x16x16xf32> * tensor<2x16x32xf32> -> tensor<2x16x32xf32>
// CHECK: %[[AT:.+]] = tt.trans %[[A]] {order = array<i32: 0, 2, 1>} : tensor<2x16x32xf32> -> tensor<2x32x16xf32>
// CHECK: %[[DB:.+]] = tt.dot %[[AT]], %[[G]], %{{[^,]+}}, inputPrecision = tf32 : tensor<2x32x16xf32> * tensor<2x16x16xf32> -> tensor<2x32x16xf32>
// CHECK: tt.return %[[DA]], %[[DB]]
// WRT0-LABEL: tt.func private @f_vjp
// WRT0-SAME: -> tensor<2x16x32xf32>
tt.func public @f(%a: tensor<2x16x32xf32>, %b: tensor<2x32x16xf32>) -> tensor<2x16x16xf32> {
  %cst = arith.constant dense<0.000000e+00> : tensor<2x16x16xf32>
  %0 = tt.dot %a, %b, %cst, inputPrecision = tf32 : tensor<2x16x32xf32> * tensor<2x32x16xf32> -> tensor<2x16x16xf32>
  tt.return %0 : tensor<2x16x16xf32>
}
