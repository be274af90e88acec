// RUN: tritonad-opt %s --split-input-file --tritonad-differentiate="function=f" --canonicalize --cse | FileCheck %s

// scf.for with a dynamic trip count and a pure accumulation: the reverse is one
// loop over the same range, nothing unrolled, nothing cached; the carried sum's
// adjoint (the cotangent) is the same in every iteration.
// CHECK-LABEL: tt.func private @f_vjp(%arg0: tensor<16xf32>, %arg1: i32, %arg2: tensor<16xf32>)
// CHECK: %[[G:.+]] = scf.for %[[K:.+]] = %c0_i32 to %arg1 step %c1_i32 iter_args(%[[ACC:.+]] = %cst) -> (tensor<16xf32>)
// CHECK-NEXT: %[[KF:.+]] = arith.sitofp %[[K]]
// CHECK-NEXT: %[[KS:.+]] = tt.splat %[[KF]]
// CHECK-NEXT: %[[XK:.+]] = arith.mulf %arg0, %[[KS]]
// CHECK-NEXT: %[[E:.+]] = math.exp %[[XK]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.cmpf oeq, %arg2
// CHECK-NEXT: %[[GE:.+]] = arith.mulf %arg2, %[[E]]
// CHECK-NEXT: %[[D:.+]] = arith.select %[[ZERO]], %{{.+}}, %[[GE]]
// CHECK-NEXT: %[[DX:.+]] = arith.mulf %[[D]], %[[KS]]
// CHECK-NEXT: %[[SUM:.+]] = arith.addf %[[ACC]], %[[DX]]
// CHECK-NEXT: scf.yield %[[SUM]]
// CHECK: tt.return %[[G]]
// CHECK-NOT: scf.for
module {
  tt.func @f(%x: tensor<16xf32>, %n: i32) -> tensor<16xf32> {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant dense<0.0> : tensor<16xf32>
    %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<16xf32>) : i32 {
      %kf = arith.sitofp %k : i32 to f32
      %ks = tt.splat %kf : f32 -> tensor<16xf32>
      %xk = arith.mulf %x, %ks : tensor<16xf32>
      %e = math.exp %xk : tensor<16xf32>
      %next = arith.addf %acc, %e : tensor<16xf32>
      scf.yield %next : tensor<16xf32>
    }
    tt.return %r : tensor<16xf32>
  }
}

// -----

// scf.while: replayed once in forward order. The condition is recomputed from
// the inactive counter (the same trip count as the forward); the active sum is
// dropped from the carried values and the gradient of %x accumulates instead.
// (A loop counting down: one counting up by a constant is an scf.for, below.)
// CHECK-LABEL: tt.func private @f_vjp(%arg0: tensor<16xf32>, %arg1: i32, %arg2: tensor<16xf32>)
// CHECK: %[[W:.+]]:2 = scf.while (%[[K:.+]] = %arg1, %[[ACC:.+]] = %cst) : (i32, tensor<16xf32>) -> (i32, tensor<16xf32>)
// CHECK-NEXT: %[[GO:.+]] = arith.cmpi sgt, %[[K]], %c0_i32
// CHECK-NEXT: scf.condition(%[[GO]]) %[[K]], %[[ACC]]
// CHECK: ^bb0(%[[K2:.+]]: i32, %[[ACC2:.+]]: tensor<16xf32>):
// CHECK-NEXT: %[[NEXT:.+]] = arith.subi %[[K2]], %c1_i32
// CHECK-NEXT: %[[COS:.+]] = math.cos %arg0
// CHECK-NEXT: %[[D:.+]] = arith.mulf %arg2, %[[COS]]
// CHECK-NEXT: %[[SUM:.+]] = arith.addf %[[ACC2]], %[[D]]
// CHECK-NEXT: scf.yield %[[NEXT]], %[[SUM]]
// CHECK: tt.return %[[W]]#1
module {
  tt.func @f(%x: tensor<16xf32>, %n: i32) -> tensor<16xf32> {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant dense<0.0> : tensor<16xf32>
    %r:2 = scf.while (%acc = %zero, %k = %n) : (tensor<16xf32>, i32) -> (tensor<16xf32>, i32) {
      %go = arith.cmpi sgt, %k, %c0 : i32
      scf.condition(%go) %acc, %k : tensor<16xf32>, i32
    } do {
    ^bb0(%a: tensor<16xf32>, %i: i32):
      %s = math.sin %x : tensor<16xf32>
      %next = arith.addf %a, %s : tensor<16xf32>
      %i2 = arith.subi %i, %c1 : i32
      scf.yield %next, %i2 : tensor<16xf32>, i32
    }
    tt.return %r#0 : tensor<16xf32>
  }
}

// -----

// `while k < n: ...; k += 1` is the scf.for it spells (Prepare/CountedLoops.cpp:
// the counter's final value unread), reversed as one: no while in the backward.
// CHECK-LABEL: tt.func private @f_vjp(%arg0: tensor<16xf32>, %arg1: i32, %arg2: tensor<16xf32>)
// CHECK-NOT: scf.while
// CHECK: %[[G:.+]] = scf.for %{{.+}} = %c0_i32 to %arg1 step %c1_i32 iter_args(%[[ACC:.+]] = %cst) -> (tensor<16xf32>)
// CHECK-NEXT: %[[COS:.+]] = math.cos %arg0
// CHECK-NEXT: %[[D:.+]] = arith.mulf %arg2, %[[COS]]
// CHECK-NEXT: %[[SUM:.+]] = arith.addf %[[ACC]], %[[D]]
// CHECK-NEXT: scf.yield %[[SUM]]
// CHECK: tt.return %[[G]]
module {
  tt.func @f(%x: tensor<16xf32>, %n: i32) -> tensor<16xf32> {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant dense<0.0> : tensor<16xf32>
    %r:2 = scf.while (%acc = %zero, %k = %c0) : (tensor<16xf32>, i32) -> (tensor<16xf32>, i32) {
      %go = arith.cmpi slt, %k, %n : i32
      scf.condition(%go) %acc, %k : tensor<16xf32>, i32
    } do {
    ^bb0(%a: tensor<16xf32>, %i: i32):
      %s = math.sin %x : tensor<16xf32>
      %next = arith.addf %a, %s : tensor<16xf32>
      %i2 = arith.addi %i, %c1 : i32
      scf.yield %next, %i2 : tensor<16xf32>, i32
    }
    tt.return %r#0 : tensor<16xf32>
  }
}

// -----

// scf.if on a runtime condition: the reverse is an scf.if on the same
// condition, each branch holding the adjoint of its own body.
// CHECK-LABEL: tt.func private @f_vjp(%arg0: tensor<16xf32>, %arg1: i1, %arg2: tensor<16xf32>)
// CHECK: %[[R:.+]] = scf.if %arg1 -> (tensor<16xf32>) {
// CHECK-NEXT: %[[E:.+]] = math.exp %arg0
// CHECK-NEXT: %[[ZERO:.+]] = arith.cmpf oeq, %arg2
// CHECK-NEXT: %[[GE:.+]] = arith.mulf %arg2, %[[E]]
// CHECK-NEXT: %[[T:.+]] = arith.select %[[ZERO]], %{{.+}}, %[[GE]]
// CHECK-NEXT: scf.yield %[[T]]
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[M:.+]] = arith.mulf %arg2, %arg0
// CHECK-NEXT: %[[TWICE:.+]] = arith.addf %[[M]], %[[M]]
// CHECK-NEXT: scf.yield %[[TWICE]]
// CHECK: tt.return %[[R]]
module {
  tt.func @f(%x: tensor<16xf32>, %c: i1) -> tensor<16xf32> {
    %r = scf.if %c -> (tensor<16xf32>) {
      %e = math.exp %x : tensor<16xf32>
      scf.yield %e : tensor<16xf32>
    } else {
      %m = arith.mulf %x, %x : tensor<16xf32>
      scf.yield %m : tensor<16xf32>
    }
    tt.return %r : tensor<16xf32>
  }
}

// -----

// A carried value that is not a pure accumulation (acc = sin(acc)): the
// reverse loop runs last iteration first, carrying the adjoint, and replays
// iterations [0, i) of the forward to get the state at the start of iteration i.
// CHECK-LABEL: tt.func private @f_vjp(%arg0: tensor<32xf32>, %arg1: i32, %arg2: tensor<32xf32>)
// CHECK: %[[TRIPS:.+]] = arith.maxsi %arg1, %c0_i32
// CHECK: %[[G:.+]] = scf.for %[[R:.+]] = %c0_i32 to %[[TRIPS]] step %c1_i32 iter_args(%[[DACC:.+]] = %arg2)
// CHECK-NEXT: %[[LAST:.+]] = arith.subi %[[TRIPS]], %c1_i32
// CHECK-NEXT: %[[I:.+]] = arith.subi %[[LAST]], %[[R]]
// CHECK-NEXT: %[[STATE:.+]] = scf.for %{{.+}} = %c0_i32 to %[[I]] step %c1_i32 iter_args(%[[S:.+]] = %arg0)
// CHECK-NEXT: %[[SIN:.+]] = math.sin %[[S]]
// CHECK-NEXT: scf.yield %[[SIN]]
// CHECK: %[[COS:.+]] = math.cos %[[STATE]]
// CHECK-NEXT: %[[D:.+]] = arith.mulf %[[DACC]], %[[COS]]
// CHECK-NEXT: scf.yield %[[D]]
// CHECK: tt.return %[[G]]
module {
  tt.func @f(%x: tensor<32xf32>, %n: i32) -> tensor<32xf32> {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %0 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> (tensor<32xf32>)  : i32 {
      %1 = math.sin %acc : tensor<32xf32>
      scf.yield %1 : tensor<32xf32>
    }
    tt.return %0 : tensor<32xf32>
  }
}
