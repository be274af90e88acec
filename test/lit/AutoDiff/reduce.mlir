// Reverse-mode rules of tt.reduce (cpp/lib/AutoDiff/Rules/TritonRules.cpp): the combine
// region picks the rule.
//  - sum (arith.addf): broadcast the cotangent back along the axis;
//  - max/min (maxnumf, maximumf, minnumf, minimumf): like torch.max(x, dim), the
//    cotangent goes to the first element attaining the extremum, found by one
//    maxsi/minsi reduce of i64 keys (ordered value bits << 32 | index) and placed
//    by index equality (arith.cmpi eq): a float comparison with the recomputed
//    values could match nothing where Triton computes them twice, in two
//    layouts, and a two-operand (value, index) reduce is paired wrongly by
//    Triton 3.6 on H100 after a reshape;
//  - argmax-style lane selection (tl.max(x, axis, return_indices=True)): the
//    cotangent goes to the lane whose tl.arange index was returned (arith.cmpi eq);
//  - product (arith.mulf): the cotangent times the product of the other elements,
//    the exclusive products from both ends (two tt.scan), no division.

// RUN: tritonad-opt %s --split-input-file --tritonad-differentiate="function=f" | FileCheck %s

// tl.sum(x, axis=0) on 16x32: expand_dims + broadcast of the 32-element cotangent.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<32xf32>) -> tensor<16x32xf32>
// CHECK: %[[E:.+]] = tt.expand_dims %[[G]] {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
// CHECK: %[[DX:.+]] = tt.broadcast %[[E]] : tensor<1x32xf32> -> tensor<16x32xf32>
// CHECK: tt.return %[[DX]] : tensor<16x32xf32>
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<32xf32> {
  %0 = "tt.reduce"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tt.reduce.return %s : f32
  }) : (tensor<16x32xf32>) -> tensor<32xf32>
  tt.return %0 : tensor<32xf32>
}

// -----

// tl.sum(x, axis=1), with the combine operands swapped (b + a) -- still a sum.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16xf32>) -> tensor<16x32xf32>
// CHECK: %[[E:.+]] = tt.expand_dims %[[G]] {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
// CHECK: %[[DX:.+]] = tt.broadcast %[[E]] : tensor<16x1xf32> -> tensor<16x32xf32>
// CHECK: tt.return %[[DX]] : tensor<16x32xf32>
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16xf32> {
  %0 = "tt.reduce"(%x) <{axis = 1 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %b, %a : f32
    tt.reduce.return %s : f32
  }) : (tensor<16x32xf32>) -> tensor<16xf32>
  tt.return %0 : tensor<16xf32>
}

// -----

// A 1-d sum to a scalar: the scalar cotangent is splat.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<32xf32>, %[[G:[^:]+]]: f32) -> tensor<32xf32>
// CHECK: %[[DX:.+]] = tt.splat %[[G]] : f32 -> tensor<32xf32>
// CHECK: tt.return %[[DX]] : tensor<32xf32>
tt.func public @f(%x: tensor<32xf32>) -> f32 {
  %0 = "tt.reduce"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tt.reduce.return %s : f32
  }) : (tensor<32xf32>) -> f32
  tt.return %0 : f32
}

// -----

// tl.max(x, axis=1) of an argument (every copy of x bitwise the same): the
// first index where x equals the forward's max (a minsi reduce of the
// indices), dx = (index == chosen) ? broadcast(g) : 0.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16xf32>) -> tensor<16x32xf32>
// CHECK: %[[M:.+]] = "tt.reduce"(%[[X]]) <{axis = 1 : i32}>
// CHECK: arith.maxnumf
// CHECK: %[[IDX:.+]] = tt.broadcast %{{.+}} : tensor<1x32xi32> -> tensor<16x32xi32>
// CHECK: %[[ME:.+]] = tt.expand_dims %[[M]] {axis = 1 : i32}
// CHECK: %[[MB:.+]] = tt.broadcast %[[ME]] : tensor<16x1xf32> -> tensor<16x32xf32>
// CHECK: %[[EQ:.+]] = arith.cmpf oeq, %[[X]], %[[MB]] : tensor<16x32xf32>
// CHECK: %[[NONE:.+]] = arith.constant dense<2147483647> : tensor<16x32xi32>
// CHECK: %[[CAND:.+]] = arith.select %[[EQ]], %[[IDX]], %[[NONE]]
// CHECK: %[[FIRST:.+]] = "tt.reduce"(%[[CAND]]) <{axis = 1 : i32}> ({
// CHECK: arith.minsi
// CHECK: %[[FE:.+]] = tt.expand_dims %[[FIRST]] {axis = 1 : i32}
// CHECK: %[[FB:.+]] = tt.broadcast %[[FE]] : tensor<16x1xi32> -> tensor<16x32xi32>
// CHECK: %[[HIT:.+]] = arith.cmpi eq, %[[IDX]], %[[FB]] : tensor<16x32xi32>
// CHECK: %[[GE:.+]] = tt.expand_dims %[[G]] {axis = 1 : i32}
// CHECK: %[[GB:.+]] = tt.broadcast %[[GE]] : tensor<16x1xf32> -> tensor<16x32xf32>
// CHECK: %[[DX:.+]] = arith.select %[[HIT]], %[[GB]], %{{.+}} : tensor<16x32xi1>, tensor<16x32xf32>
// CHECK: tt.return %[[DX]] : tensor<16x32xf32>
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16xf32> {
  %0 = "tt.reduce"(%x) <{axis = 1 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %m = arith.maxnumf %a, %b : f32
    tt.reduce.return %m : f32
  }) : (tensor<16x32xf32>) -> tensor<16xf32>
  tt.return %0 : tensor<16xf32>
}

// -----

// tl.max(cumsum(x), axis=1): Triton may compute the scan twice, in two
// layouts, with different bits: keys (NaN as -inf: maxnumf lets it lose; sign-flipped
// bits << 32 | 31 - index), one maxsi reduce, index = 31 - low 32 bits;
// dx = (index == chosen) ? broadcast(g) : 0.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16xf32>) -> tensor<16x32xf32>
// CHECK: %[[X:.+]] = "tt.scan"
// CHECK: %[[R:.+]] = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
// CHECK: %[[RR:.+]] = tt.expand_dims %[[R]] {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
// CHECK: %[[IDX:.+]] = tt.broadcast %[[RR]] : tensor<1x32xi32> -> tensor<16x32xi32>
// CHECK: %[[NINF:.+]] = arith.constant dense<0xFF800000> : tensor<16x32xf32>
// CHECK: %[[NAN:.+]] = arith.cmpf uno, %[[X]], %[[X]]
// CHECK: %[[XN:.+]] = arith.select %[[NAN]], %[[NINF]], %[[X]]
// CHECK: %[[BITS:.+]] = tt.bitcast %[[XN]] : tensor<16x32xf32> -> tensor<16x32xi32>
// CHECK: %[[SIGN:.+]] = arith.shrsi %[[BITS]], %{{.+}} : tensor<16x32xi32>
// CHECK: %[[MAG:.+]] = arith.andi %[[SIGN]], %{{.+}} : tensor<16x32xi32>
// CHECK: %[[ORD:.+]] = arith.xori %[[BITS]], %[[MAG]] : tensor<16x32xi32>
// CHECK: %[[WIDE:.+]] = arith.extsi %[[ORD]] : tensor<16x32xi32> to tensor<16x32xi64>
// CHECK: %[[HIGH:.+]] = arith.shli %[[WIDE]], %{{.+}} : tensor<16x32xi64>
// CHECK: %[[I64:.+]] = arith.extui %[[IDX]] : tensor<16x32xi32> to tensor<16x32xi64>
// CHECK: %[[LOW:.+]] = arith.subi %{{.+}}, %[[I64]] : tensor<16x32xi64>
// CHECK: %[[KEY:.+]] = arith.ori %[[HIGH]], %[[LOW]] : tensor<16x32xi64>
// CHECK: %[[BEST:.+]] = "tt.reduce"(%[[KEY]]) <{axis = 1 : i32}> ({
// CHECK: arith.maxsi
// CHECK: }) : (tensor<16x32xi64>) -> tensor<16xi64>
// CHECK: %[[BITS32:.+]] = arith.andi %[[BEST]], %{{.+}} : tensor<16xi64>
// CHECK: %[[FIRST:.+]] = arith.subi %{{.+}}, %[[BITS32]] : tensor<16xi64>
// CHECK: %[[CHOSEN:.+]] = arith.trunci %[[FIRST]] : tensor<16xi64> to tensor<16xi32>
// CHECK: %[[IE:.+]] = tt.expand_dims %[[CHOSEN]] {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
// CHECK: %[[IB:.+]] = tt.broadcast %[[IE]] : tensor<16x1xi32> -> tensor<16x32xi32>
// CHECK: %[[HIT:.+]] = arith.cmpi eq, %[[IDX]], %[[IB]] : tensor<16x32xi32>
// CHECK: %[[GE:.+]] = tt.expand_dims %[[G]] {axis = 1 : i32}
// CHECK: %[[GB:.+]] = tt.broadcast %[[GE]] : tensor<16x1xf32> -> tensor<16x32xf32>
// CHECK: arith.select %[[HIT]], %[[GB]], %{{.+}} : tensor<16x32xi1>, tensor<16x32xf32>
// CHECK: tt.return
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16xf32> {
  %c = "tt.scan"(%x) <{axis = 1 : i32, reverse = false}> ({
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tt.scan.return %s : f32
  }) : (tensor<16x32xf32>) -> tensor<16x32xf32>
  %0 = "tt.reduce"(%c) <{axis = 1 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %m = arith.maxnumf %a, %b : f32
    tt.reduce.return %m : f32
  }) : (tensor<16x32xf32>) -> tensor<16xf32>
  tt.return %0 : tensor<16xf32>
}

// -----


// tl.min(x, axis=0) with propagate_nan (minimumf): the same on axis 0.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<32xf32>) -> tensor<16x32xf32>
// CHECK: "tt.reduce"(%[[X]]) <{axis = 0 : i32}>
// CHECK: arith.minimumf
// CHECK: %[[IDX:.+]] = tt.broadcast %{{.+}} : tensor<16x1xi32> -> tensor<16x32xi32>
// CHECK: %[[EQ:.+]] = arith.cmpf oeq, %[[X]], %{{.+}} : tensor<16x32xf32>
// CHECK: "tt.reduce"(%{{.+}}) <{axis = 0 : i32}>
// CHECK: arith.minsi
// CHECK: %[[HIT:.+]] = arith.cmpi eq, %[[IDX]], %{{.+}} : tensor<16x32xi32>
// CHECK: arith.select %[[HIT]]
// CHECK-NOT: arith.divf
// CHECK: tt.return
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<32xf32> {
  %0 = "tt.reduce"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %m = arith.minimumf %a, %b : f32
    tt.reduce.return %m : f32
  }) : (tensor<16x32xf32>) -> tensor<32xf32>
  tt.return %0 : tensor<32xf32>
}

// -----

// tl.max(x, 1, return_indices=True)[0] (the combine region Triton emits): the
// cotangent goes to the lane whose index the reduce returned.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16xf32>) -> tensor<16x32xf32>
// CHECK: %[[IDX:.+]] = tt.broadcast %{{.+}} : tensor<1x32xi32> -> tensor<16x32xi32>
// CHECK: %[[R:.+]]:2 = "tt.reduce"(%[[X]], %[[IDX]]) <{axis = 1 : i32}>
// CHECK: }) : (tensor<16x32xf32>, tensor<16x32xi32>) -> (tensor<16xf32>, tensor<16xi32>)
// CHECK: %[[IE:.+]] = tt.expand_dims %[[R]]#1 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
// CHECK: %[[IB:.+]] = tt.broadcast %[[IE]] : tensor<16x1xi32> -> tensor<16x32xi32>
// CHECK: %[[HIT:.+]] = arith.cmpi eq, %[[IDX]], %[[IB]] : tensor<16x32xi32>
// CHECK: %[[GE:.+]] = tt.expand_dims %[[G]] {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
// CHECK: %[[GB:.+]] = tt.broadcast %[[GE]] : tensor<16x1xf32> -> tensor<16x32xf32>
// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CHECK: %[[DX:.+]] = arith.select %[[HIT]], %[[GB]], %[[ZERO]] : tensor<16x32xi1>, tensor<16x32xf32>
// CHECK-NOT: arith.cmpf oeq
// CHECK: tt.return %[[DX]] : tensor<16x32xf32>
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16xf32> {
  %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %r1 = tt.expand_dims %r {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %idx = tt.broadcast %r1 : tensor<1x32xi32> -> tensor<16x32xi32>
  %0:2 = "tt.reduce"(%x, %idx) <{axis = 1 : i32}> ({
  ^bb0(%a: f32, %ai: i32, %b: f32, %bi: i32):
    %tie = arith.cmpf oeq, %a, %b : f32
    %lt = arith.cmpi slt, %ai, %bi : i32
    %tl = arith.andi %tie, %lt : i1
    %gt = arith.cmpf ogt, %a, %b : f32
    %pick = arith.ori %gt, %tl : i1
    %v = arith.select %pick, %a, %b : f32
    %i = arith.select %pick, %ai, %bi : i32
    tt.reduce.return %v, %i : f32, i32
  }) : (tensor<16x32xf32>, tensor<16x32xi32>) -> (tensor<16xf32>, tensor<16xi32>)
  tt.return %0#0 : tensor<16xf32>
}

// -----

// argmin-style on a 1-d tile whose indices are a tl.arange offset by a splat
// (still a provable enumeration of the axis); the reduce returns a scalar.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<32xf32>, %{{[^:]+}}: i32, %[[G:[^:]+]]: f32) -> tensor<32xf32>
// CHECK: %[[IDX:.+]] = arith.addi
// CHECK: %[[R:.+]]:2 = "tt.reduce"(%[[X]], %[[IDX]]) <{axis = 0 : i32}>
// CHECK: }) : (tensor<32xf32>, tensor<32xi32>) -> (f32, i32)
// CHECK: %[[IB:.+]] = tt.splat %[[R]]#1 : i32 -> tensor<32xi32>
// CHECK: %[[HIT:.+]] = arith.cmpi eq, %[[IDX]], %[[IB]] : tensor<32xi32>
// CHECK: %[[GB:.+]] = tt.splat %[[G]] : f32 -> tensor<32xf32>
// CHECK: %[[DX:.+]] = arith.select %[[HIT]], %[[GB]], %{{.+}}
// CHECK: tt.return %[[DX]] : tensor<32xf32>
tt.func public @f(%x: tensor<32xf32>, %off: i32) -> f32 {
  %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %o = tt.splat %off : i32 -> tensor<32xi32>
  %idx = arith.addi %r, %o : tensor<32xi32>
  %0:2 = "tt.reduce"(%x, %idx) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %ai: i32, %b: f32, %bi: i32):
    %lt = arith.cmpf olt, %a, %b : f32
    %v = arith.select %lt, %a, %b : f32
    %i = arith.select %lt, %ai, %bi : i32
    tt.reduce.return %v, %i : f32, i32
  }) : (tensor<32xf32>, tensor<32xi32>) -> (f32, i32)
  tt.return %0#0 : f32
}

// -----

// A product along axis 1: dx = g * (exclusive product from the end) * (from the
// start), each a tt.scan of (1, x) pairs.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16xf32>) -> tensor<16x32xf32>
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<16x32xf32>
// CHECK: %[[FROMSTART:.+]]:2 = "tt.scan"(%[[ONE]], %[[X]]) <{axis = 1 : i32, reverse = false}>
// CHECK: %[[FROMEND:.+]]:2 = "tt.scan"(%{{.+}}, %[[X]]) <{axis = 1 : i32, reverse = true}>
// CHECK: %[[OTHERS:.+]] = arith.mulf %[[FROMSTART]]#0, %[[FROMEND]]#0 : tensor<16x32xf32>
// CHECK: %[[E:.+]] = tt.expand_dims %[[G]] {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
// CHECK: %[[GS:.+]] = tt.broadcast %[[E]] : tensor<16x1xf32> -> tensor<16x32xf32>
// CHECK: %[[DX:.+]] = arith.mulf %[[GS]], %[[OTHERS]] : tensor<16x32xf32>
// CHECK: tt.return %[[DX]] : tensor<16x32xf32>
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16xf32> {
  %0 = "tt.reduce"(%x) <{axis = 1 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %p = arith.mulf %a, %b : f32
    tt.reduce.return %p : f32
  }) : (tensor<16x32xf32>) -> tensor<16xf32>
  tt.return %0 : tensor<16xf32>
}
