// A store inside a loop whose addresses start at an offset the access
// analysis has no affine form for (here a digit of a program id's digit,
// (pid // 4) % 3, as kernels decode batch and head from one grid axis):
// whatever that offset is, it is fixed through the loop's iterations, so the
// iterations' tiles are compared by what moves (the induction variable) and
// what spreads (the lanes). Apart: derived, the adjoint reads each iteration's
// upstream gradient in the reversed loop. Overlapping: still refused.

// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" --verify-diagnostics | FileCheck %s

// The adjoint loop reads dy at the iteration's tile and adds 2 x dy into dx
// (by atomics: the programs' offsets are not analyzable across programs).
// CHECK-LABEL: tt.func public @bwd
// CHECK-SAME: (%{{.+}}: !tt.ptr<f32>, %{{.+}}: !tt.ptr<f32>, %[[DX:[^:]+]]: !tt.ptr<f32>, %[[DY:[^:]+]]: !tt.ptr<f32>)
// CHECK: arith.remsi
// CHECK: scf.for
// CHECK: scf.for
// CHECK:   %[[DYS:.+]] = tt.splat %[[DY]]
// CHECK:   %[[DYP:.+]] = tt.addptr %[[DYS]]
// CHECK:   tt.load %[[DYP]]
// CHECK:   tt.splat %[[DX]]
// CHECK:   tt.atomic_rmw fadd
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c3 = arith.constant 3 : i32
    %c4 = arith.constant 4 : i32
    %c16 = arith.constant 16 : i32
    %c64 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %outer = arith.divsi %pid, %c4 : i32
    %digit = arith.remsi %outer, %c3 : i32
    %base = arith.muli %digit, %c64 : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    scf.for %i = %c0 to %c4 step %c1 : i32 {
      %step = arith.muli %i, %c16 : i32
      %start = arith.addi %base, %step : i32
      %starts = tt.splat %start : i32 -> tensor<16xi32>
      %offs = arith.addi %starts, %r : tensor<16xi32>
      %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %xp = tt.addptr %xs, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      %v = tt.load %xp : tensor<16x!tt.ptr<f32>>
      %sq = arith.mulf %v, %v : tensor<16xf32>
      %ys = tt.splat %y : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %yp = tt.addptr %ys, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      tt.store %yp, %sq : tensor<16x!tt.ptr<f32>>
    }
    tt.return
  }
  // expected-remark @+3 {{accumulation of x: atomic (addresses not analyzable)}}
  // expected-remark @+2 {{accumulation of y: output: its shadow is read}}
  // expected-remark @+1 {{reversed in forward order}}
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y) : (!tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}

// -----

// The same offset, but each iteration moves by 8 while its tile spans 16.
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c3 = arith.constant 3 : i32
    %c4 = arith.constant 4 : i32
    %c8 = arith.constant 8 : i32
    %c64 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %outer = arith.divsi %pid, %c4 : i32
    %digit = arith.remsi %outer, %c3 : i32
    %base = arith.muli %digit, %c64 : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %v = tt.load %xp : tensor<16x!tt.ptr<f32>>
    scf.for %i = %c0 to %c4 step %c1 : i32 {
      %step = arith.muli %i, %c8 : i32
      %start = arith.addi %base, %step : i32
      %starts = tt.splat %start : i32 -> tensor<16xi32>
      %offs = arith.addi %starts, %r : tensor<16xi32>
      %ys = tt.splat %y : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %yp = tt.addptr %ys, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      // expected-error @+1 {{cannot differentiate a store inside a loop whose addresses may repeat across iterations}}
      tt.store %yp, %v : tensor<16x!tt.ptr<f32>>
    }
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y) : (!tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}
