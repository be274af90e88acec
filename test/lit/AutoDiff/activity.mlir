// Activity analysis (cpp/lib/Analysis/Activity.cpp): only values that depend on a
// differentiated argument AND reach a returned float get adjoint code. Integer,
// pointer, mask and index arithmetic, loads through pointer arguments, values
// that do not depend on `wrt`, and values that only feed conditions or nothing
// are recomputed (or not at all) but never differentiated.

// RUN: tritonad-opt %s --tritonad-differentiate="function=masked" | FileCheck %s --check-prefix=MASKED
// RUN: tritonad-opt %s --tritonad-differentiate="function=masked" --canonicalize --cse | FileCheck %s --check-prefix=MASKED-CSE
// RUN: tritonad-opt %s --tritonad-differentiate="function=subset wrt=0,2" | FileCheck %s --check-prefix=SUBSET
// RUN: tritonad-opt %s --tritonad-differentiate="function=subset wrt=1" | FileCheck %s --check-prefix=ONLY-Y
// RUN: tritonad-opt %s --tritonad-differentiate="function=subset wrt=0" --canonicalize --cse | FileCheck %s --check-prefix=ONLY-X
// RUN: tritonad-opt %s --tritonad-differentiate="function=condition_only" | FileCheck %s --check-prefix=COND
// RUN: tritonad-opt %s --tritonad-differentiate="function=through_int" | FileCheck %s --check-prefix=INT
// RUN: tritonad-opt %s --tritonad-differentiate="function=constant_out wrt=0" | FileCheck %s --check-prefix=CONST

// Pointer, mask and index arithmetic around a load; the default wrt is the only
// float argument (%x), so the pointer and i32 arguments get no gradient.
// z = (x * load(p + idx, mask) + float(idx)) * 2  =>  dx = (g * 2) * w.
// MASKED-LABEL: tt.func private @masked_vjp
// MASKED-SAME: (%[[X:[^:]+]]: tensor<32xf32>, %{{[^:]+}}: !tt.ptr<f32>, %{{[^:]+}}: i32, %[[G:[^:]+]]: tensor<32xf32>) -> tensor<32xf32>
// MASKED: %[[TWO:.+]] = arith.constant dense<2.000000e+00>
// MASKED: %[[W:.+]] = tt.load
// MASKED: arith.sitofp
// MASKED: arith.mulf %[[X]], %[[W]]
// MASKED: arith.addf
// MASKED: arith.mulf %{{.+}}, %[[TWO]]
// The adjoint: exactly two products, nothing for the integer/pointer values.
// MASKED-NEXT: %[[GT:.+]] = arith.mulf %[[G]], %[[TWO]] : tensor<32xf32>
// MASKED-NEXT: %[[DX:.+]] = arith.mulf %[[GT]], %[[W]] : tensor<32xf32>
// MASKED-NEXT: tt.return %[[DX]] : tensor<32xf32>
// After cleanup the unused recomputation (sitofp, the forward products) is gone;
// the index and mask arithmetic stays only to feed the load.
// MASKED-CSE-LABEL: tt.func private @masked_vjp
// MASKED-CSE-NOT: arith.sitofp
// MASKED-CSE-NOT: arith.addf
// MASKED-CSE: %[[W:.+]] = tt.load
// MASKED-CSE-NEXT: %[[GT:.+]] = arith.mulf %{{.+}}, %{{.+}} : tensor<32xf32>
// MASKED-CSE-NEXT: %[[DX:.+]] = arith.mulf %[[GT]], %[[W]] : tensor<32xf32>
// MASKED-CSE-NEXT: tt.return %[[DX]]
tt.func public @masked(%x: tensor<32xf32>, %p: !tt.ptr<f32>, %n: i32) -> tensor<32xf32> {
  %cst = arith.constant dense<2.000000e+00> : tensor<32xf32>
  %other = arith.constant dense<0.000000e+00> : tensor<32xf32>
  %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %ns = tt.splat %n : i32 -> tensor<32xi32>
  %idx = arith.addi %r, %ns : tensor<32xi32>
  %lim = arith.muli %ns, %ns : tensor<32xi32>
  %mask = arith.cmpi slt, %idx, %lim : tensor<32xi32>
  %ps = tt.splat %p : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
  %ptrs = tt.addptr %ps, %idx : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
  %w = tt.load %ptrs, %mask, %other : tensor<32x!tt.ptr<f32>>
  %xi = arith.sitofp %idx : tensor<32xi32> to tensor<32xf32>
  %xw = arith.mulf %x, %w : tensor<32xf32>
  %y = arith.addf %xw, %xi : tensor<32xf32>
  %z = arith.mulf %y, %cst : tensor<32xf32>
  tt.return %z : tensor<32xf32>
}

// r = (x*y + y*z + exp(y)) * sin(y).
// wrt=0,2: dx = dz = (g * sin y) * y; nothing of y's own rules (no math.cos, no
// product with exp(y)).
// SUBSET-LABEL: tt.func private @subset_vjp
// SUBSET-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[Z:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>)
// SUBSET: %[[S:.+]] = math.sin %[[Y]]
// SUBSET: %[[R:.+]] = arith.mulf %{{.+}}, %[[S]]
// SUBSET-NEXT: %[[GS:.+]] = arith.mulf %[[G]], %[[S]]
// SUBSET-NEXT: %[[DZ:.+]] = arith.mulf %[[GS]], %[[Y]]
// SUBSET-NEXT: %[[DX:.+]] = arith.mulf %[[GS]], %[[Y]]
// SUBSET-NEXT: tt.return %[[DX]], %[[DZ]] : tensor<16x32xf32>, tensor<16x32xf32>
// wrt=1: every path through y is differentiated.
// ONLY-Y-LABEL: tt.func private @subset_vjp
// ONLY-Y-SAME: -> tensor<16x32xf32>
// ONLY-Y: math.cos
// ONLY-Y: tt.return
// wrt=0 after cleanup: the whole VJP is two products.
// ONLY-X-LABEL: tt.func private @subset_vjp
// ONLY-X-SAME: (%{{[^:]+}}: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %{{[^:]+}}: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// ONLY-X-NEXT: %[[S:.+]] = math.sin %[[Y]]
// ONLY-X-NEXT: %[[GS:.+]] = arith.mulf %[[G]], %[[S]]
// ONLY-X-NEXT: %[[DX:.+]] = arith.mulf %[[GS]], %[[Y]]
// ONLY-X-NEXT: tt.return %[[DX]]
tt.func public @subset(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>, %z: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = arith.mulf %x, %y : tensor<16x32xf32>
  %1 = arith.mulf %y, %z : tensor<16x32xf32>
  %2 = math.exp %y : tensor<16x32xf32>
  %3 = math.sin %y : tensor<16x32xf32>
  %4 = arith.addf %0, %1 : tensor<16x32xf32>
  %5 = arith.addf %4, %2 : tensor<16x32xf32>
  %6 = arith.mulf %5, %3 : tensor<16x32xf32>
  tt.return %6 : tensor<16x32xf32>
}

// exp(x) only feeds a condition and log(x) nothing: neither is differentiated
// (no product with exp's result, no divide by x; the dead log is not even
// recomputed); sin(x) and x are.
// COND-LABEL: tt.func private @condition_only_vjp
// COND-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// COND: %[[E:.+]] = math.exp %[[X]]
// COND: %[[M:.+]] = arith.cmpf ogt, %[[E]]
// COND: %[[S:.+]] = math.sin %[[X]]
// COND-NEXT: arith.select %[[M]], %[[S]], %[[X]]
// COND-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// COND-NEXT: %[[A:.+]] = arith.select %[[M]], %[[G]], %[[ZERO]]
// COND-NEXT: %[[B:.+]] = arith.select %[[M]], %[[ZERO]], %[[G]]
// COND-NEXT: %[[C:.+]] = math.cos %[[X]]
// COND-NEXT: %[[D:.+]] = arith.mulf %[[A]], %[[C]]
// COND-NEXT: %[[DX:.+]] = arith.addf %[[B]], %[[D]]
// COND-NEXT: tt.return %[[DX]]
// COND-NOT: arith.divf
// COND-NOT: math.log
tt.func public @condition_only(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
  %e = math.exp %x : tensor<16x32xf32>
  %m = arith.cmpf ogt, %e, %zero : tensor<16x32xf32>
  %s = math.sin %x : tensor<16x32xf32>
  %r = arith.select %m, %s, %x : tensor<16x32xi1>, tensor<16x32xf32>
  %unused = math.log %x : tensor<16x32xf32>
  tt.return %r : tensor<16x32xf32>
}

// A path through integers (fptosi/sitofp) is piecewise constant: x gets only
// the direct product's gradient g * float(int(x) + k). The integer result gets a
// cotangent argument that is ignored, the i32 argument no gradient.
// INT-LABEL: tt.func private @through_int_vjp
// INT-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %{{[^:]+}}: tensor<16x32xi32>, %[[G:[^:]+]]: tensor<16x32xf32>, %{{[^:]+}}: tensor<16x32xi32>) -> tensor<16x32xf32>
// INT: %[[F:.+]] = arith.sitofp
// INT: arith.mulf %[[F]], %[[X]]
// INT-NEXT: %[[DX:.+]] = arith.mulf %[[G]], %[[F]]
// INT-NEXT: tt.return %[[DX]] : tensor<16x32xf32>
tt.func public @through_int(%x: tensor<16x32xf32>, %k: tensor<16x32xi32>) -> (tensor<16x32xf32>, tensor<16x32xi32>) {
  %0 = arith.fptosi %x : tensor<16x32xf32> to tensor<16x32xi32>
  %1 = arith.addi %0, %k : tensor<16x32xi32>
  %2 = arith.sitofp %1 : tensor<16x32xi32> to tensor<16x32xf32>
  %3 = arith.mulf %2, %x : tensor<16x32xf32>
  tt.return %3, %1 : tensor<16x32xf32>, tensor<16x32xi32>
}

// wrt=0: an output that does not depend on x at all: the gradient is a zero constant
// and no rule runs.
// CONST-LABEL: tt.func private @constant_out_vjp
// CONST-SAME: (%{{[^:]+}}: tensor<16x32xf32>, %[[Y:[^:]+]]: f32, %{{[^:]+}}: tensor<16x32xf32>) -> tensor<16x32xf32>
// CONST: %[[E:.+]] = math.exp %[[Y]] : f32
// CONST-NEXT: tt.splat %[[E]]
// CONST-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CONST-NEXT: tt.return %[[ZERO]]
tt.func public @constant_out(%x: tensor<16x32xf32>, %y: f32) -> tensor<16x32xf32> {
  %0 = math.exp %y : f32
  %1 = tt.splat %0 : f32 -> tensor<16x32xf32>
  tt.return %1 : tensor<16x32xf32>
}
