// Reverse-mode rules of tt.reduce (cpp/lib/AutoDiff/TritonRules.cpp): the combine
// region picks the rule.
//  - sum (arith.addf): broadcast the cotangent back along the axis;
//  - max/min (maxnumf, maximumf, minnumf, minimumf): like torch.amax, the cotangent
//    is shared evenly among the elements equal to the extremum
//    (arith.cmpf oeq, count them with a sum reduce, divide);
//  - argmax-style lane selection (tl.max(x, axis, return_indices=True)): the
//    cotangent goes to the lane whose tl.arange index was returned (arith.cmpi eq).

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

// tl.max(x, axis=1): hits = (x == broadcast(max)); count = sum(hits ? 1 : 0);
// dx = hits ? broadcast(g / count) : 0.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16xf32>) -> tensor<16x32xf32>
// CHECK: %[[M:.+]] = "tt.reduce"(%[[X]]) <{axis = 1 : i32}>
// CHECK: arith.maxnumf
// CHECK: %[[ME:.+]] = tt.expand_dims %[[M]] {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
// CHECK: %[[MB:.+]] = tt.broadcast %[[ME]] : tensor<16x1xf32> -> tensor<16x32xf32>
// CHECK: %[[HIT:.+]] = arith.cmpf oeq, %[[X]], %[[MB]] : tensor<16x32xf32>
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<16x32xf32>
// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CHECK: %[[HITS:.+]] = arith.select %[[HIT]], %[[ONE]], %[[ZERO]]
// CHECK: %[[COUNT:.+]] = "tt.reduce"(%[[HITS]]) <{axis = 1 : i32}> ({
// CHECK: arith.addf
// CHECK: }) : (tensor<16x32xf32>) -> tensor<16xf32>
// CHECK: %[[SHARE:.+]] = arith.divf %[[G]], %[[COUNT]] : tensor<16xf32>
// CHECK: %[[SE:.+]] = tt.expand_dims %[[SHARE]] {axis = 1 : i32}
// CHECK: %[[SB:.+]] = tt.broadcast %[[SE]] : tensor<16x1xf32> -> tensor<16x32xf32>
// CHECK: %[[DX:.+]] = arith.select %[[HIT]], %[[SB]], %[[ZERO]]
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

// tl.min(x, axis=0) with propagate_nan (minimumf): the same rule on axis 0.
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<32xf32>) -> tensor<16x32xf32>
// CHECK: %[[M:.+]] = "tt.reduce"(%[[X]]) <{axis = 0 : i32}>
// CHECK: arith.minimumf
// CHECK: %[[ME:.+]] = tt.expand_dims %[[M]] {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
// CHECK: %[[MB:.+]] = tt.broadcast %[[ME]] : tensor<1x32xf32> -> tensor<16x32xf32>
// CHECK: %[[HIT:.+]] = arith.cmpf oeq, %[[X]], %[[MB]]
// CHECK: %[[COUNT:.+]] = "tt.reduce"(%{{.+}}) <{axis = 0 : i32}>
// CHECK: %[[SHARE:.+]] = arith.divf %[[G]], %[[COUNT]] : tensor<32xf32>
// CHECK: arith.select %[[HIT]]
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
