// One input loaded at several places whose addresses differ by constants
// (x[i] and x[i + 1], a stencil or a shifted read): the union of the loads'
// addresses is the lowest load's shifted by up to the spread, and where each
// load's mask bounds its own shifted index (`cols + 1 < n`), no further than
// the bound. Within a row per program that keeps the programs apart (checked
// at launch: the row stride against the bound), so each load's gradient is a
// plain read-add-write after a barrier; across programs' tiles of one row the
// shifted lanes reach the next program's tile, and the gradient needs atomics
// (deterministic mode marks them for re-parallelization, which refuses them).

// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y mode=deterministic" --canonicalize --cse | FileCheck %s --check-prefix=DET
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y mode=deterministic" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DETREMARK

// A row per program at a runtime stride, x[row, cols] and x[row, cols + 1],
// each masked to the row's n elements: plain where the stride clears n
// (checked at launch), a barrier before each accumulation.
// CHECK-LABEL: tt.func public @bwd
// CHECK: gpu.barrier
// CHECK-NEXT: %[[OLD1:.+]] = tt.load %[[DX1:[^ ,]+]], %{{[^ ,]+}}, %{{.+}} : tensor<128x!tt.ptr<f32>>
// CHECK-NEXT: arith.addf %[[OLD1]]
// CHECK-NEXT: tt.store %[[DX1]]
// CHECK: tt.atomic_rmw fadd, relaxed, gpu, %[[DX1]]
// CHECK: gpu.barrier
// CHECK-NEXT: %[[OLD2:.+]] = tt.load %[[DX2:[^ ,]+]], %{{[^ ,]+}}, %{{.+}} : tensor<128x!tt.ptr<f32>>
// CHECK-NEXT: arith.addf %[[OLD2]]
// CHECK-NEXT: tt.store %[[DX2]]
// CHECK: tt.atomic_rmw fadd, relaxed, gpu, %[[DX2]]
// CHECK: tt.return
// REMARK: remark: accumulation of x: plain when strides, masks and grid keep tiles disjoint, else atomic (predicated on a condition uniform over the program); loaded at 2 places, each accumulation after a barrier, in program order
// DET-LABEL: tt.func public @bwd
// DET-NOT: tt.atomic_rmw
// DET: gpu.barrier
// DET-NEXT: tt.load
// DET-NEXT: arith.addf
// DET-NEXT: tt.store
// DET: gpu.barrier
// DET-NEXT: tt.load
// DET-NEXT: arith.addf
// DET-NEXT: tt.store
// DET-NEXT: tt.return
// DETREMARK: remark: accumulation of x: plain (deterministic mode: each address written by one program where strides, masks and grid keep tiles disjoint, which the launch checks; loaded at 2 places, each accumulation after a barrier, in program order)
// DETREMARK: remark: checked at each launch: its loads read addresses up to 1 elements apart; checked at run time: strides, masks and grid keep tiles disjoint ((1 & ((1 * stride) >= min(((1 + (1 * (128 - 1))) + 1), (n - 0)))))
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %stride: i32 loc("stride")) {
    %pid = tt.get_program_id x : i32
    %c1 = arith.constant dense<1> : tensor<128xi32>
    %row = arith.muli %pid, %stride : i32
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %ns = tt.splat %n : i32 -> tensor<128xi32>
    %m = arith.cmpi slt, %r, %ns : tensor<128xi32>
    %r1 = arith.addi %r, %c1 : tensor<128xi32>
    %m1 = arith.cmpi slt, %r1, %ns : tensor<128xi32>
    %rows = tt.splat %row : i32 -> tensor<128xi32>
    %offs = arith.addi %rows, %r : tensor<128xi32>
    %offs1 = arith.addi %rows, %r1 : tensor<128xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %xp1 = tt.addptr %xs, %offs1 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %a = tt.load %xp, %m : tensor<128x!tt.ptr<f32>>
    %b = tt.load %xp1, %m1 : tensor<128x!tt.ptr<f32>>
    %d = arith.subf %b, %a : tensor<128xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    tt.store %yp, %d, %m : tensor<128x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %stride: i32 loc("stride"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n, %stride) : (!tt.ptr<f32>, !tt.ptr<f32>, i32, i32) -> ()
    tt.return
  }
}

// -----

// Tiles of one row split over programs, x[offs] and x[offs + 1]: a program's
// shifted lanes reach the next program's first element, statically.
// CHECK-LABEL: tt.func public @bwd
// CHECK-NOT: gpu.barrier
// CHECK: tt.atomic_rmw fadd
// CHECK: tt.atomic_rmw fadd
// CHECK: tt.return
// REMARK: remark: accumulation of x: atomic (loaded at 2 places: its loads read addresses up to 1 elements apart; lanes or programs overlap (stride 128 < span 129))
// DET-LABEL: tt.func public @bwd
// DETREMARK: remark: accumulation of x: atomic unless re-parallelized (deterministic mode: cannot prove that each address of 'x' is touched by one program only (loaded at 2 places: its loads read addresses up to 1 elements apart; lanes or programs overlap (stride 128 < span 129)); accumulating its gradient needs atomics)
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %pid = tt.get_program_id x : i32
    %c128 = arith.constant 128 : i32
    %c1 = arith.constant dense<1> : tensor<128xi32>
    %start = arith.muli %pid, %c128 : i32
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %starts = tt.splat %start : i32 -> tensor<128xi32>
    %offs = arith.addi %starts, %r : tensor<128xi32>
    %offs1 = arith.addi %offs, %c1 : tensor<128xi32>
    %ns = tt.splat %n : i32 -> tensor<128xi32>
    %m = arith.cmpi slt, %offs, %ns : tensor<128xi32>
    %m1 = arith.cmpi slt, %offs1, %ns : tensor<128xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %xp1 = tt.addptr %xs, %offs1 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %a = tt.load %xp, %m : tensor<128x!tt.ptr<f32>>
    %b = tt.load %xp1, %m1 : tensor<128x!tt.ptr<f32>>
    %d = arith.subf %b, %a : tensor<128xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    tt.store %yp, %d, %m : tensor<128x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// Loads under different branches (fla's token shift: x[b, t] before the branch,
// x[b, t - 1] under `t != 0`, whose batch offset b * T * D is computed again in
// the branch, T widened to i64 there): the launch condition that keeps programs
// apart would read the branch's scalars at the first load, which cannot see
// them: atomic (an invalid module before: the MLIR verifier's "operand does not
// dominate this use", an abort inside Python).
// REMARK: remark: accumulation of x: atomic (loaded at 2 places: the condition that keeps programs apart (its loads read addresses up to 100 elements apart; {{.*}}) reads scalars of one branch's address arithmetic, which the loads under other branches cannot evaluate)
// DETREMARK: remark: accumulation of x: atomic unless re-parallelized (deterministic mode: cannot prove that each address of 'x' is touched by one program only (loaded at 2 places: the condition that keeps programs apart
// CHECK-LABEL: tt.func public @bwd
// CHECK: tt.atomic_rmw fadd
// CHECK: tt.atomic_rmw fadd
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %T: i32 loc("T")) {
    %b32 = tt.get_program_id x : i32
    %b = arith.extsi %b32 : i32 to i64
    %t32 = tt.get_program_id y : i32
    %t = arith.extsi %t32 : i32 to i64
    %c0 = arith.constant 0 : i32
    %c100 = arith.constant 100 : i64
    %c100s = arith.constant dense<100> : tensor<128xi64>
    %r32 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %r = arith.extsi %r32 : tensor<128xi32> to tensor<128xi64>
    %m = arith.cmpi slt, %r, %c100s : tensor<128xi64>
    %T64 = arith.extsi %T : i32 to i64
    %bT = arith.muli %b, %T64 : i64
    %batch = arith.muli %bT, %c100 : i64
    %step = arith.muli %t, %c100 : i64
    %row = arith.addi %batch, %step : i64
    %rows = tt.splat %row : i64 -> tensor<128xi64>
    %offs = arith.addi %rows, %r : tensor<128xi64>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi64>
    %a = tt.load %xp, %m : tensor<128x!tt.ptr<f32>>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi64>
    %first = arith.cmpi eq, %t32, %c0 : i32
    scf.if %first {
      tt.store %yp, %a, %m : tensor<128x!tt.ptr<f32>>
    } else {
      %T64b = arith.extsi %T : i32 to i64
      %bT2 = arith.muli %b, %T64b : i64
      %batch2 = arith.muli %bT2, %c100 : i64
      %step2 = arith.muli %t, %c100 : i64
      %back = arith.subi %step2, %c100 : i64
      %prow = arith.addi %batch2, %back : i64
      %prows = tt.splat %prow : i64 -> tensor<128xi64>
      %poffs = arith.addi %prows, %r : tensor<128xi64>
      %pp = tt.addptr %xs, %poffs : tensor<128x!tt.ptr<f32>>, tensor<128xi64>
      %p = tt.load %pp, %m : tensor<128x!tt.ptr<f32>>
      %d = arith.subf %p, %a : tensor<128xf32>
      tt.store %yp, %d, %m : tensor<128x!tt.ptr<f32>>
    }
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %T: i32 loc("T"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %T) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}
