// Reverse-mode rules of the math dialect (cpp/lib/AutoDiff/Rules/MathRules.cpp) and of the
// elementwise tt ops tt.precise_sqrt, tt.precise_divf and tt.clampf (TritonRules.cpp).
// Each split holds one primal @f; X is the argument, G the cotangent.

// RUN: tritonad-opt %s --split-input-file --tritonad-differentiate="function=f" | FileCheck %s

// exp: g * y (the recomputed result), exactly 0 where g is 0: where exp
// overflows to inf, the adjoint reaching it from 1 / (1 + exp(-x)) underflows
// to 0, and 0 * inf would be NaN
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = math.exp %[[X]]
// CHECK: %[[ZERO_G:.+]] = arith.cmpf oeq, %[[G]]
// CHECK: %[[GY:.+]] = arith.mulf %[[G]], %[[Y]]
// CHECK: %[[DX:.+]] = arith.select %[[ZERO_G]], %{{.+}}, %[[GY]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.exp %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// exp(x - max(x)) is at most 1: no guard (softmax, online softmax)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = math.exp
// CHECK-NEXT: %[[GY:.+]] = arith.mulf %[[G]], %[[Y]]
// CHECK-NOT: arith.cmpf oeq, %[[G]]
// CHECK: tt.return
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %m = "tt.reduce"(%x) <{axis = 1 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %mx = arith.maxnumf %a, %b : f32
    tt.reduce.return %mx : f32
  }) : (tensor<16x32xf32>) -> tensor<16xf32>
  %e = tt.expand_dims %m {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
  %b = tt.broadcast %e : tensor<16x1xf32> -> tensor<16x32xf32>
  %d = arith.subf %x, %b : tensor<16x32xf32>
  %0 = math.exp %d : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// exp2: g * y * ln 2, exactly 0 where g is 0 (as exp)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = math.exp2 %[[X]]
// CHECK: %[[ZERO_G:.+]] = arith.cmpf oeq, %[[G]]
// CHECK: %[[GY:.+]] = arith.mulf %[[G]], %[[Y]]
// CHECK: %[[LN2:.+]] = arith.constant dense<0.693147182> : tensor<16x32xf32>
// CHECK: %[[GYLN2:.+]] = arith.mulf %[[GY]], %[[LN2]]
// CHECK: %[[DX:.+]] = arith.select %[[ZERO_G]], %{{.+}}, %[[GYLN2]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.exp2 %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// expm1: g * (y + 1), exactly 0 where g is 0 (as exp)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = math.expm1 %[[X]]
// CHECK: %[[ZERO_G:.+]] = arith.cmpf oeq, %[[G]]
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00>
// CHECK: %[[Y1:.+]] = arith.addf %[[Y]], %[[ONE]]
// CHECK: %[[GY1:.+]] = arith.mulf %[[G]], %[[Y1]]
// CHECK: %[[DX:.+]] = arith.select %[[ZERO_G]], %{{.+}}, %[[GY1]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.expm1 %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// log: g / x, exactly 0 where g is 0 (a masked-out lane may hold x = 0 and gets
// g = 0; 0 * inf must not become NaN). The guarded rules below share this form:
// select(g == 0, 0, partial).
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = math.log %[[X]]
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[Q:.+]] = arith.divf %[[G]], %[[X]] : tensor<16x32xf32>
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[Q]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.log %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// log2: g / (x * ln 2), 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = math.log2 %[[X]]
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[LN2:.+]] = arith.constant dense<0.693147182>
// CHECK: %[[D:.+]] = arith.mulf %[[X]], %[[LN2]]
// CHECK: %[[Q:.+]] = arith.divf %[[G]], %[[D]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[Q]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.log2 %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// log1p: g / (x + 1), 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = math.log1p %[[X]]
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00>
// CHECK: %[[D:.+]] = arith.addf %[[X]], %[[ONE]]
// CHECK: %[[Q:.+]] = arith.divf %[[G]], %[[D]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[Q]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.log1p %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// sqrt: g * 0.5 / y, 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = math.sqrt %[[X]]
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[HALF:.+]] = arith.constant dense<5.000000e-01>
// CHECK: %[[GH:.+]] = arith.mulf %[[G]], %[[HALF]]
// CHECK: %[[Q:.+]] = arith.divf %[[GH]], %[[Y]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[Q]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.sqrt %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// rsqrt: g * -0.5 * y^3, 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = math.rsqrt %[[X]]
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[C:.+]] = arith.constant dense<-5.000000e-01>
// CHECK: %[[A:.+]] = arith.mulf %[[G]], %[[C]]
// CHECK: %[[B:.+]] = arith.mulf %[[A]], %[[Y]]
// CHECK: %[[D:.+]] = arith.mulf %[[B]], %[[Y]]
// CHECK: %[[P:.+]] = arith.mulf %[[D]], %[[Y]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[P]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.rsqrt %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// sin: g * cos(x)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[C:.+]] = math.cos %[[X]] : tensor<16x32xf32>
// CHECK: %[[DX:.+]] = arith.mulf %[[G]], %[[C]] : tensor<16x32xf32>
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.sin %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// cos: -g * sin(x)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[NG:.+]] = arith.subf %{{[^,]+}}, %[[G]]
// CHECK: %[[S:.+]] = math.sin %[[X]]
// CHECK: %[[DX:.+]] = arith.mulf %[[NG]], %[[S]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.cos %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// tan: g * (y^2 + 1)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = math.tan %[[X]]
// CHECK: %[[YY:.+]] = arith.mulf %[[Y]], %[[Y]]
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00>
// CHECK: %[[S:.+]] = arith.addf %[[YY]], %[[ONE]]
// CHECK: %[[DX:.+]] = arith.mulf %[[G]], %[[S]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.tan %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// tanh: g * (1 - y^2)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = math.tanh %[[X]]
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00>
// CHECK: %[[YY:.+]] = arith.mulf %[[Y]], %[[Y]]
// CHECK: %[[S:.+]] = arith.subf %[[ONE]], %[[YY]]
// CHECK: %[[DX:.+]] = arith.mulf %[[G]], %[[S]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.tanh %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// erf: g * 2/sqrt(pi) * exp(-x^2)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[C:.+]] = arith.constant dense<1.12837923>
// CHECK: %[[GC:.+]] = arith.mulf %[[G]], %[[C]]
// CHECK: %[[XX:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK: %[[N:.+]] = arith.subf %{{[^,]+}}, %[[XX]]
// CHECK: %[[E:.+]] = math.exp %[[N]]
// CHECK: %[[DX:.+]] = arith.mulf %[[GC]], %[[E]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.erf %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// absf: g * sign(x), 0 at 0 (as torch)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Z0:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[POS:.+]] = arith.cmpf ogt, %[[X]], %[[Z0]]
// CHECK: %[[NEG:.+]] = arith.cmpf olt, %[[X]], %{{.+}}
// CHECK: %[[NG:.+]] = arith.subf %{{[^,]+}}, %[[G]]
// CHECK: %[[A:.+]] = arith.select %[[NEG]], %[[NG]], %{{.+}}
// CHECK: %[[DX:.+]] = arith.select %[[POS]], %[[G]], %[[A]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.absf %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// floor, ceil, trunc, round, roundeven: zero gradient
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: math.floor
// CHECK-NEXT: %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CHECK-NEXT: tt.return %[[Z]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.floor %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: math.ceil
// CHECK-NEXT: %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CHECK-NEXT: tt.return %[[Z]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.ceil %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: math.trunc
// CHECK-NEXT: %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CHECK-NEXT: tt.return %[[Z]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.trunc %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: math.round
// CHECK-NEXT: %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CHECK-NEXT: tt.return %[[Z]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.round %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: math.roundeven
// CHECK-NEXT: %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CHECK-NEXT: tt.return %[[Z]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.roundeven %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// z = x^y:  dx = g * y * powf(x, y - 1) (the op itself again, not exp(log(x) * (y - 1)),
// which is NaN for x < 0; no log on this path),  dy = g * z * log(x);
// each 0 where g is 0, and dy also 0 where x is 0 (log(0) = -inf).
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>)
// CHECK: %[[P:.+]] = math.powf %[[X]], %[[Y]]
// CHECK-NEXT: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GY:.+]] = arith.mulf %[[G]], %[[Y]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant dense<1.000000e+00>
// CHECK-NEXT: %[[YM1:.+]] = arith.subf %[[Y]], %[[ONE]]
// CHECK-NEXT: %[[PM1:.+]] = math.powf %[[X]], %[[YM1]]
// CHECK-NEXT: %[[T:.+]] = arith.mulf %[[GY]], %[[PM1]]
// CHECK-NEXT: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[T]]
// CHECK: %[[XC0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[XZ:.+]] = arith.cmpf oeq, %[[X]], %[[XC0]]
// CHECK-NEXT: %[[XZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[C02:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ2:.+]] = arith.cmpf oeq, %[[G]], %[[C02]]
// CHECK-NEXT: %[[ZERO2:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[GP:.+]] = arith.mulf %[[G]], %[[P]]
// CHECK: %[[L:.+]] = math.log %[[X]]
// CHECK: %[[S:.+]] = arith.mulf %[[GP]], %[[L]]
// CHECK: %[[SAFE:.+]] = arith.select %[[GZ2]], %[[ZERO2]], %[[S]]
// CHECK: %[[DY:.+]] = arith.select %[[XZ]], %[[XZERO]], %[[SAFE]]
// CHECK: tt.return %[[DX]], %[[DY]]
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.powf %x, %y : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// copysign(x, y): dx = g * (x == result ? 1 : -1), dy = 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>)
// CHECK: %[[R:.+]] = math.copysign %[[X]], %[[Y]]
// CHECK: %[[SAME:.+]] = arith.cmpf oeq, %[[X]], %[[R]]
// CHECK: %[[S:.+]] = arith.select %[[SAME]], %{{.+}}, %{{.+}}
// CHECK: %[[DX:.+]] = arith.mulf %[[G]], %[[S]]
// CHECK: %[[DY:.+]] = arith.constant dense<0.000000e+00>
// CHECK: tt.return %[[DX]], %[[DY]]
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.copysign %x, %y : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// fma(x, y, z) = x*y + z:  (g*y, g*x, g)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[Z:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>)
// CHECK-DAG: %[[DX:.+]] = arith.mulf %[[G]], %[[Y]]
// CHECK-DAG: %[[DY:.+]] = arith.mulf %[[G]], %[[X]]
// CHECK: tt.return %[[DX]], %[[DY]], %[[G]]
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>, %z: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = math.fma %x, %y, %z : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// tt.precise_sqrt (tl.sqrt_rn): g * 0.5 / y, 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.precise_sqrt %[[X]]
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[HALF:.+]] = arith.constant dense<5.000000e-01>
// CHECK: %[[GH:.+]] = arith.mulf %[[G]], %[[HALF]]
// CHECK: %[[Q:.+]] = arith.divf %[[GH]], %[[Y]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[Q]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.precise_sqrt %x : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// tt.precise_divf (tl.div_rn): the rule of divf, dx = g / y and dy = -g * q / y,
// each 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>)
// CHECK: %[[Q:.+]] = tt.precise_divf %[[X]], %[[Y]]
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[A:.+]] = arith.divf %[[G]], %[[Y]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[A]]
// CHECK: %[[C02:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ2:.+]] = arith.cmpf oeq, %[[G]], %[[C02]]
// CHECK-NEXT: %[[ZERO2:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[NG:.+]] = arith.subf %{{[^,]+}}, %[[G]]
// CHECK: %[[T:.+]] = arith.mulf %[[NG]], %[[Q]]
// CHECK: %[[B:.+]] = arith.divf %[[T]], %[[Y]]
// CHECK: %[[DY:.+]] = arith.select %[[GZ2]], %[[ZERO2]], %[[B]]
// CHECK: tt.return %[[DX]], %[[DY]]
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.precise_divf %x, %y : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// tt.clampf (tl.clamp): x gets g inside [lo, hi], lo gets it below, hi above (torch.clamp)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[Z:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>)
// CHECK: %[[BELOW:.+]] = arith.cmpf olt, %[[X]], %[[Y]]
// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[ABOVE:.+]] = arith.cmpf ogt, %[[X]], %[[Z]]
// CHECK: %[[IN:.+]] = arith.select %[[ABOVE]], %{{.+}}, %[[G]]
// CHECK: %[[DX:.+]] = arith.select %[[BELOW]], %[[ZERO]], %[[IN]]
// CHECK: %[[BELOW2:.+]] = arith.cmpf olt, %[[X]], %[[Y]]
// CHECK: %[[DLO:.+]] = arith.select %[[BELOW2]], %[[G]], %{{.+}}
// CHECK: %[[ABOVE2:.+]] = arith.cmpf ogt, %[[X]], %[[Z]]
// CHECK: %[[DHI:.+]] = arith.select %[[ABOVE2]], %[[G]], %{{.+}}
// CHECK: tt.return %[[DX]], %[[DLO]], %[[DHI]]
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>, %z: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.clampf %x, %y, %z, propagateNan = none : tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// f16 stays f16: constants and products take the operand's type
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf16>, %[[G:[^:]+]]: tensor<16x32xf16>) -> tensor<16x32xf16>
// CHECK: %[[Y:.+]] = math.exp %[[X]] : tensor<16x32xf16>
// CHECK: %[[GY:.+]] = arith.mulf %[[G]], %[[Y]] : tensor<16x32xf16>
// CHECK: %[[DX:.+]] = arith.select %{{.+}}, %{{.+}}, %[[GY]] : tensor<16x32xi1>, tensor<16x32xf16>
// CHECK: tt.return %[[DX]] : tensor<16x32xf16>
tt.func public @f(%x: tensor<16x32xf16>) -> tensor<16x32xf16> {
  %0 = math.exp %x : tensor<16x32xf16>
  tt.return %0 : tensor<16x32xf16>
}
