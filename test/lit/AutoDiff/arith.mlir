// Reverse-mode rules of the arith dialect (cpp/lib/AutoDiff/Rules/ArithRules.cpp).
// Each split holds one primal @f; the pass appends @f_vjp(primal args...,
// cotangent) -> (one gradient per float argument).

// RUN: tritonad-opt %s --split-input-file --tritonad-differentiate="function=f" | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-differentiate="function=f" --canonicalize --cse | FileCheck %s --check-prefix=CSE

// d(x + y) = (g, g): the cotangent is returned as is.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<16x32xf32>, %{{[^:]+}}: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>)
// CHECK-NEXT: arith.addf
// CHECK-NEXT: tt.return %[[G]], %[[G]] : tensor<16x32xf32>, tensor<16x32xf32>
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = arith.addf %x, %y : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// d(x - y) = (g, -g); negation is emitted as 0 - g (Triton's TTIR-to-TTGIR
// conversion has no arith.negf).
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<16x32xf32>, %{{[^:]+}}: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>)
// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CHECK: %[[NEG:.+]] = arith.subf %[[ZERO]], %[[G]] : tensor<16x32xf32>
// CHECK-NOT: arith.negf
// CHECK: tt.return %[[G]], %[[NEG]]
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = arith.subf %x, %y : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// d(x * y) = (g * y, g * x)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>)
// CHECK-DAG: %[[DX:.+]] = arith.mulf %[[G]], %[[Y]] : tensor<16x32xf32>
// CHECK-DAG: %[[DY:.+]] = arith.mulf %[[G]], %[[X]] : tensor<16x32xf32>
// CHECK: tt.return %[[DX]], %[[DY]]
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = arith.mulf %x, %y : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// z = x / y:  dx = g / y,  dy = -g * z / y (reusing the recomputed quotient),
// each exactly 0 where g is 0 (a masked-out lane dividing by 0 must not turn
// 0 * inf into NaN).
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>)
// CHECK: %[[Z:.+]] = arith.divf %[[X]], %[[Y]]
// CHECK: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %{{.+}}
// CHECK: %[[Q:.+]] = arith.divf %[[G]], %[[Y]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %{{.+}}, %[[Q]]
// CHECK: %[[GZ2:.+]] = arith.cmpf oeq, %[[G]], %{{.+}}
// CHECK: %[[NEG:.+]] = arith.subf %{{[^,]+}}, %[[G]]
// CHECK: %[[T:.+]] = arith.mulf %[[NEG]], %[[Z]]
// CHECK: %[[Q2:.+]] = arith.divf %[[T]], %[[Y]]
// CHECK: %[[DY:.+]] = arith.select %[[GZ2]], %{{.+}}, %[[Q2]]
// CHECK: tt.return %[[DX]], %[[DY]]
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = arith.divf %x, %y : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[DX:.+]] = arith.subf %{{[^,]+}}, %[[G]]
// CHECK: tt.return %[[DX]] : tensor<16x32xf32>
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = arith.negf %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// r = fmod(x, y) = x - trunc(x / y) * y:  dx = g,  dy = -g * trunc(x / y) = -g * (x - r) / y
// (Triton cannot lower math.trunc, so the quotient is recovered from r), 0 where g is 0.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>)
// CHECK: %[[R:.+]] = arith.remf %[[X]], %[[Y]]
// CHECK: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %{{.+}}
// CHECK-DAG: %[[NEG:.+]] = arith.subf %{{[^,]+}}, %[[G]]
// CHECK-DAG: %[[XR:.+]] = arith.subf %[[X]], %[[R]]
// CHECK: %[[P:.+]] = arith.mulf %[[NEG]], %[[XR]]
// CHECK: %[[Q:.+]] = arith.divf %[[P]], %[[Y]]
// CHECK: %[[DY:.+]] = arith.select %[[GZ]], %{{.+}}, %[[Q]]
// CHECK-NOT: math.trunc
// CHECK: tt.return %[[G]], %[[DY]]
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = arith.remf %x, %y : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// maxnumf: the larger side gets g, ties share it (g * 0.5 each), as torch.maximum;
// a NaN operand is ignored by maxnumf, so the other side gets all of g.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>)
// CHECK: %[[YNAN:.+]] = arith.cmpf uno, %[[Y]], %[[Y]]
// CHECK: %[[XNAN:.+]] = arith.cmpf uno, %[[X]], %[[X]]
// CHECK: %[[GT:.+]] = arith.cmpf ogt, %[[X]], %[[Y]]
// CHECK: %[[EQ:.+]] = arith.cmpf oeq, %[[X]], %[[Y]]
// CHECK: %[[HALF:.+]] = arith.constant dense<5.000000e-01> : tensor<16x32xf32>
// CHECK: %[[GH:.+]] = arith.mulf %[[G]], %[[HALF]]
// CHECK: %[[TIE:.+]] = arith.select %[[EQ]], %[[GH]], %{{.+}}
// CHECK: %[[RULE:.+]] = arith.select %[[GT]], %[[G]], %[[TIE]]
// CHECK: %[[MINE:.+]] = arith.select %[[XNAN]], %{{.+}}, %[[RULE]]
// CHECK: %[[DX:.+]] = arith.select %[[YNAN]], %[[G]], %[[MINE]]
// CHECK: %[[LT:.+]] = arith.cmpf ogt, %[[Y]], %[[X]]
// CHECK: arith.select %[[LT]], %[[G]], %{{.+}}
// CHECK: %[[DY:.+]] = arith.select %{{.+}}, %[[G]], %{{.+}}
// CHECK: tt.return %[[DX]], %[[DY]]
// After --canonicalize --cse the tie test, the NaN tests and g * 0.5 are shared
// by both sides, and the recomputed (unused) forward maxnumf is gone.
// CSE: arith.maxnumf
// CSE: tt.func private @f_vjp
// CSE-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>)
// CSE-NOT: arith.maxnumf
// CSE-COUNT-2: arith.cmpf uno
// CSE-NOT: arith.cmpf uno
// CSE: tt.return
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = arith.maxnumf %x, %y : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// maximumf (tl.maximum(..., propagate_nan=ALL)) has the rule of maxnumf, except
// that a NaN operand, which it propagates, gets g.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>)
// CHECK: %[[XNAN:.+]] = arith.cmpf uno, %[[X]], %[[X]]
// CHECK: arith.cmpf uno, %[[Y]], %[[Y]]
// CHECK: arith.cmpf ogt, %[[X]], %[[Y]]
// CHECK: arith.cmpf oeq, %[[X]], %[[Y]]
// CHECK: %[[DX:.+]] = arith.select %[[XNAN]], %[[G]], %{{.+}}
// CHECK: arith.cmpf ogt, %[[Y]], %[[X]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = arith.maximumf %x, %y : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// minnumf / minimumf: the smaller side gets g (NaN operands as for maxnumf).
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>)
// CHECK: %[[YNAN:.+]] = arith.cmpf uno, %[[Y]], %[[Y]]
// CHECK: %[[LT:.+]] = arith.cmpf olt, %[[X]], %[[Y]]
// CHECK: arith.cmpf oeq, %[[X]], %[[Y]]
// CHECK: arith.select %[[LT]], %[[G]], %{{.+}}
// CHECK: %[[DX:.+]] = arith.select %[[YNAN]], %[[G]], %{{.+}}
// CHECK: %[[GT:.+]] = arith.cmpf olt, %[[Y]], %[[X]]
// CHECK: arith.select %[[GT]], %[[G]], %{{.+}}
// CHECK: %[[DY:.+]] = arith.select %{{.+}}, %[[G]], %{{.+}}
// CHECK: tt.return %[[DX]], %[[DY]]
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = arith.minnumf %x, %y : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>)
// CHECK: arith.cmpf olt, %[[X]], %[[Y]]
// CHECK: arith.cmpf olt, %[[Y]], %[[X]]
// CHECK: tt.return
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = arith.minimumf %x, %y : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// select (tl.where): g flows to the chosen side, under the recomputed condition.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>)
// CHECK: %[[C:.+]] = arith.cmpf ogt, %[[X]], %[[Y]] : tensor<16x32xf32>
// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CHECK: %[[DX:.+]] = arith.select %[[C]], %[[G]], %[[ZERO]] : tensor<16x32xi1>, tensor<16x32xf32>
// CHECK: %[[DY:.+]] = arith.select %[[C]], %[[ZERO]], %[[G]] : tensor<16x32xi1>, tensor<16x32xf32>
// CHECK: tt.return %[[DX]], %[[DY]]
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = arith.cmpf ogt, %x, %y : tensor<16x32xf32>
  %1 = arith.select %0, %x, %y : tensor<16x32xi1>, tensor<16x32xf32>
  tt.return %1 : tensor<16x32xf32>
}

// -----

// extf: the f32 cotangent is truncated back to f16.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<16x32xf16>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf16>
// CHECK: %[[DX:.+]] = arith.truncf %[[G]] : tensor<16x32xf32> to tensor<16x32xf16>
// CHECK: tt.return %[[DX]] : tensor<16x32xf16>
tt.func public @f(%x: tensor<16x32xf16>) -> tensor<16x32xf32> {
  %0 = arith.extf %x : tensor<16x32xf16> to tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// truncf: the bf16 cotangent is extended back to f32.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xbf16>) -> tensor<16x32xf32>
// CHECK: %[[DX:.+]] = arith.extf %[[G]] : tensor<16x32xbf16> to tensor<16x32xf32>
// CHECK: tt.return %[[DX]] : tensor<16x32xf32>
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xbf16> {
  %0 = arith.truncf %x : tensor<16x32xf32> to tensor<16x32xbf16>
  tt.return %0 : tensor<16x32xbf16>
}

// -----

// Scalars, and a value used twice: x*x*y gives dx = (g*y)*x + (g*y)*x.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: f32, %[[Y:[^:]+]]: f32, %[[G:[^:]+]]: f32) -> (f32, f32)
// CHECK: %[[XX:.+]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK-DAG: %[[GY:.+]] = arith.mulf %[[G]], %[[Y]] : f32
// CHECK-DAG: %[[DY:.+]] = arith.mulf %[[G]], %[[XX]] : f32
// CHECK: %[[A:.+]] = arith.mulf %[[GY]], %[[X]] : f32
// CHECK: %[[B:.+]] = arith.mulf %[[GY]], %[[X]] : f32
// CHECK: %[[DX:.+]] = arith.addf %[[A]], %[[B]] : f32
// CHECK: tt.return %[[DX]], %[[DY]] : f32, f32
tt.func public @f(%x: f32, %y: f32) -> f32 {
  %0 = arith.mulf %x, %x : f32
  %1 = arith.mulf %0, %y : f32
  tt.return %1 : f32
}

// -----

// Division by a value that is the same in every lane (softmax's row sum, a
// splat): no masked-out lane has a divisor of its own, so no guard.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-NOT: arith.cmpf oeq
// CHECK: tt.return
tt.func public @f(%x: tensor<16x32xf32>, %s: f32) -> tensor<16x32xf32> {
  %t = tt.splat %s : f32 -> tensor<16x32xf32>
  %0 = arith.divf %x, %t : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}
