// Rewrites of the forward before differentiation (cpp/lib/AutoDiff/Prepare/LiftControlFlow.cpp,
// BlockPointers.cpp, PointerInductionRewrite.cpp), each a pass of its own.

// RUN: tritonad-opt %s --split-input-file --tritonad-lift-control-flow | FileCheck %s --check-prefix=LIFT
// RUN: tritonad-opt %s --split-input-file --tritonad-pointer-induction --tritonad-lower-block-pointers --canonicalize | FileCheck %s --check-prefix=BLOCK
// RUN: tritonad-opt %s --split-input-file --tritonad-uplift-counted-loops | FileCheck %s --check-prefix=UPLIFT

// An early return (`if t == 0: store 0; return`) becomes one scf.if whose else
// branch holds the rest of the kernel; one tt.return remains.
// LIFT-LABEL: tt.func public @early_return
// LIFT-NOT: cf.
// LIFT: scf.if
// LIFT: tt.store
// LIFT: } else {
// LIFT: tt.load
// LIFT: math.exp
// LIFT: tt.store
// LIFT: }
// LIFT-NEXT: tt.return
// LIFT-NEXT: }
// LIFT-NEXT: }
tt.func public @early_return(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>, %t: i32) {
  %c0 = arith.constant 0 : i32
  %cond = arith.cmpi eq, %t, %c0 : i32
  cf.cond_br %cond, ^bb1, ^bb2
^bb1:
  %z = arith.constant 0.0 : f32
  tt.store %y, %z : !tt.ptr<f32>
  tt.return
^bb2:
  %v = tt.load %x : !tt.ptr<f32>
  %w = math.exp %v : f32
  tt.store %y, %w : !tt.ptr<f32>
  tt.return
}

// -----

// A block pointer advanced once: the load reads base + (0 + i) * s + (32 + j) * 1
// under the mask index < shape for the checked dims, padding 0. The offsets
// (0 and 32) are never negative: no lower bound.
// BLOCK-LABEL: tt.func public @block
// BLOCK-NOT: tt.make_tensor_ptr
// BLOCK-NOT: tt.advance
// BLOCK-NOT: arith.cmpi sge
// BLOCK: tt.make_range {end = 16 : i32, start = 0 : i32}
// BLOCK-NOT: arith.cmpi sge
// BLOCK: tt.make_range {end = 32 : i32, start = 0 : i32}
// BLOCK-NOT: arith.cmpi sge
// BLOCK: arith.cmpi slt
// BLOCK-NOT: arith.cmpi sge
// BLOCK: %[[V:.+]] = tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x32x!tt.ptr<f32>>
// BLOCK: tt.store %{{.+}}, %[[V]], %{{.+}} : tensor<16x32x!tt.ptr<f32>>
tt.func public @block(%x: !tt.ptr<f32>, %M: i64, %N: i64, %s: i64) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %c1 = arith.constant 1 : i64
  %p = tt.make_tensor_ptr %x, [%M, %N], [%s, %c1], [%c0, %c0] {order = array<i32: 1, 0>} : <tensor<16x32xf32>>
  %q = tt.advance %p, [%c0, %c32] : <tensor<16x32xf32>>
  %v = tt.load %q {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<16x32xf32>>
  tt.store %q, %v {boundaryCheck = array<i32: 1>} : !tt.ptr<tensor<16x32xf32>>
  tt.return
}

// -----

// Offsets the analysis cannot bound below (a signed argument, a program id
// moved back by one tile) keep the check 0 <= index; program ids times tile
// sizes do not need it.
// BLOCK-LABEL: tt.func public @block_offsets
// BLOCK-COUNT-2: arith.cmpi sge
// BLOCK-NOT: arith.cmpi sge
// BLOCK: tt.return
tt.func public @block_offsets(%x: !tt.ptr<f32>, %M: i64, %N: i64, %s: i64, %o: i32) {
  %c1 = arith.constant 1 : i64
  %c16 = arith.constant 16 : i32
  %cm16 = arith.constant -16 : i32
  %pid = tt.get_program_id x : i32
  %row = arith.muli %pid, %c16 : i32
  %back = arith.addi %row, %cm16 : i32
  %p = tt.make_tensor_ptr %x, [%M, %N], [%s, %c1], [%row, %o] {order = array<i32: 1, 0>} : <tensor<16x32xf32>>
  %v = tt.load %p {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<16x32xf32>>
  %q = tt.make_tensor_ptr %x, [%M, %N], [%s, %c1], [%back, %row] {order = array<i32: 1, 0>} : <tensor<16x32xf32>>
  tt.store %q, %v {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<16x32xf32>>
  tt.return
}

// -----

// A block pointer carried by a loop and advanced by 32 columns per iteration
// is rebuilt inside the body from its initial value and the iteration number.
// BLOCK-LABEL: tt.func public @carried
// BLOCK: scf.for %[[IV:.+]] = %{{.+}} to %{{.+}} step %{{.+}}
// BLOCK: arith.divsi
// BLOCK: arith.trunci
// BLOCK: arith.muli
// Each dim's stride scales its lanes before they are broadcast over the tile.
// BLOCK: arith.muli %{{.+}}, %{{.+}} : tensor<16xi64>
// BLOCK-NOT: arith.muli %{{.+}}, %{{.+}} : tensor<16x32xi64>
// BLOCK: tt.broadcast %{{.+}} : tensor<16x1xi64> -> tensor<16x32xi64>
// BLOCK-NOT: arith.muli %{{.+}}, %{{.+}} : tensor<16x32xi64>
// BLOCK: arith.muli %{{.+}}, %{{.+}} : tensor<32xi64>
// BLOCK-NOT: arith.muli %{{.+}}, %{{.+}} : tensor<16x32xi64>
// BLOCK: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x32x!tt.ptr<f32>>
// BLOCK-NOT: tt.load %{{.+}} : !tt.ptr<tensor
tt.func public @carried(%x: !tt.ptr<f32>, %M: i64, %N: i64, %s: i64, %n: i32) -> f32 {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %c1 = arith.constant 1 : i64
  %zero = arith.constant 0.0 : f32
  %p = tt.make_tensor_ptr %x, [%M, %N], [%s, %c1], [%c0, %c0] {order = array<i32: 1, 0>} : <tensor<16x32xf32>>
  %r:2 = scf.for %k = %c0 to %n step %c32 iter_args(%acc = %zero, %ptr = %p) -> (f32, !tt.ptr<tensor<16x32xf32>>) : i32 {
    %v = tt.load %ptr {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<16x32xf32>>
    %s0 = "tt.reduce"(%v) <{axis = 1 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tt.reduce.return %t : f32
    }) : (tensor<16x32xf32>) -> tensor<16xf32>
    %s1 = "tt.reduce"(%s0) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tt.reduce.return %t : f32
    }) : (tensor<16xf32>) -> f32
    %next = arith.addf %acc, %s1 : f32
    %np = tt.advance %ptr, [%c0, %c32] : <tensor<16x32xf32>>
    scf.yield %next, %np : f32, !tt.ptr<tensor<16x32xf32>>
  }
  tt.return %r#0 : f32
}

// -----

// `while k < n: ...; k += 32` (CountedLoops.cpp) is the scf.for it spells; the
// counter's increment goes with the while.
// UPLIFT-LABEL: tt.func public @counted
// UPLIFT-NOT: scf.while
// UPLIFT: scf.for %[[K:.+]] = %c0_i32 to %arg2 step %c32_i32 iter_args(%{{.+}} = %cst) -> (f32)
// UPLIFT: tt.addptr %arg0, %[[K]]
// UPLIFT-NOT: arith.addi
// UPLIFT: scf.yield
tt.func public @counted(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant 0.0 : f32
  %r:2 = scf.while (%k = %c0, %acc = %zero) : (i32, f32) -> (i32, f32) {
    %go = arith.cmpi slt, %k, %n : i32
    scf.condition(%go) %k, %acc : i32, f32
  } do {
  ^bb0(%k2: i32, %acc2: f32):
    %p = tt.addptr %x, %k2 : !tt.ptr<f32>, i32
    %v = tt.load %p : !tt.ptr<f32>
    %s = arith.addf %acc2, %v : f32
    %k3 = arith.addi %k2, %c32 : i32
    scf.yield %k3, %s : i32, f32
  }
  tt.store %y, %r#1 : !tt.ptr<f32>
  tt.return
}

// -----

// Stays a while loop: the counter's final value is read after it (MLIR's
// uplift would give the last iteration's value), or the step is a runtime
// value (its sign unknown).
// UPLIFT-LABEL: tt.func public @not_counted
// UPLIFT: scf.while
// UPLIFT: scf.while
// UPLIFT-NOT: scf.for
tt.func public @not_counted(%x: !tt.ptr<f32>, %y: !tt.ptr<i32>, %n: i32, %step: i32) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %r = scf.while (%k = %c0) : (i32) -> (i32) {
    %go = arith.cmpi slt, %k, %n : i32
    scf.condition(%go) %k : i32
  } do {
  ^bb0(%k2: i32):
    %k3 = arith.addi %k2, %c32 : i32
    scf.yield %k3 : i32
  }
  tt.store %y, %r : !tt.ptr<i32>
  %s = scf.while (%k = %c0) : (i32) -> (i32) {
    %go = arith.cmpi slt, %k, %n : i32
    scf.condition(%go) %k : i32
  } do {
  ^bb0(%k2: i32):
    %p = tt.addptr %x, %k2 : !tt.ptr<f32>, i32
    %z = arith.constant 0.0 : f32
    tt.store %p, %z : !tt.ptr<f32>
    %k3 = arith.addi %k2, %step : i32
    scf.yield %k3 : i32
  }
  tt.return
}
