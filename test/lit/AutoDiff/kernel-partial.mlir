// Partial buffers: a weight every program loads at the same addresses (one
// row per program, like layer norm's W) gets its gradient summed in registers
// over a grid-stride loop and stored once per program into its own slot of
// the workspace; no atomics. Without the workspace arguments, or in atomic
// mode, the gradient is accumulated with atomics as before.

// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dw:w,dy:y overwrite=true" --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dw:w,dy:y overwrite=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dw:w,dy:y mode=atomic" --canonicalize --cse | FileCheck %s --check-prefix=ATOMIC

// REMARK: remark: accumulation of w: partial buffer
// REMARK: programs: each program of the backward handles programs p, p + G
// CHECK-LABEL: tt.func public @bwd
// CHECK-SAME: %[[WS:[^:]+]]: !tt.ptr<f32>, %[[SLOT:[^:]+]]: i32, %[[P:[^:]+]]: i32)
// CHECK: %[[PID:.+]] = tt.get_program_id x
// CHECK: %[[PID64:.+]] = arith.extsi %[[PID]] : i32 to i64
// CHECK: %[[SLOT64:.+]] = arith.extsi %[[SLOT]] : i32 to i64
// CHECK: %[[OFF:.+]] = arith.muli %[[PID64]], %[[SLOT64]]
// CHECK: %[[MINE:.+]] = tt.addptr %[[WS]], %[[OFF]]
// CHECK: %[[G:.+]] = tt.get_num_programs x
// CHECK: %[[W:.+]] = tt.load {{.*}} : tensor<64x!tt.ptr<f32>>
// CHECK: %[[SUM:.+]] = scf.for %[[V:.+]] = %[[PID]] to %[[P]] step %[[G]] iter_args(%[[ACC:.+]] = {{.+}})
// CHECK-NOT: tt.atomic_rmw
// CHECK:   %[[NEXT:.+]] = arith.addf %[[ACC]]
// CHECK:   scf.yield %[[NEXT]]
// CHECK: %[[SLOTS:.+]] = tt.splat %[[MINE]]
// CHECK: %[[SLOTP:.+]] = tt.addptr %[[SLOTS]]
// CHECK-NOT: tt.load %[[SLOTP]]
// CHECK: tt.store %[[SLOTP]], %[[SUM]]
// CHECK-NOT: tt.atomic_rmw
// ATOMIC-LABEL: tt.func public @bwd
// ATOMIC-NOT: scf.for
// ATOMIC: tt.atomic_rmw fadd
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %w: !tt.ptr<f32> loc("w"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %c64 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %row = arith.muli %pid, %c64 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %rows = tt.splat %row : i32 -> tensor<64xi32>
    %offs = arith.addi %rows, %r : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %xv = tt.load %xp : tensor<64x!tt.ptr<f32>>
    %ws = tt.splat %w : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %wp = tt.addptr %ws, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %wv = tt.load %wp : tensor<64x!tt.ptr<f32>>
    %prod = arith.mulf %xv, %wv : tensor<64xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %yp, %prod : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %w: !tt.ptr<f32> loc("w"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dw: !tt.ptr<f32> loc("dw"), %dy: !tt.ptr<f32> loc("dy"), %ws: !tt.ptr<f32> loc("tritonad_workspace"), %slot: i32 loc("tritonad_slot"), %programs: i32 loc("tritonad_programs")) {
    tt.call @fwd(%x, %w, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// bf16 weight: fp32 slots; the gradient is summed in fp32 and rounded only
// by the caller, once.
// REMARK: remark: accumulation of w: partial buffer
// CHECK-LABEL: tt.func public @bwd
// CHECK: %[[SUM:.+]] = scf.for {{.*}} -> (tensor<64xf32>)
// CHECK: tt.store %{{.+}}, %[[SUM]], %{{.+}} : tensor<64x!tt.ptr<f32>>
// CHECK-NOT: tt.atomic_rmw
module {
  tt.func public @fwd(%x: !tt.ptr<bf16> loc("x"), %w: !tt.ptr<bf16> loc("w"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %c64 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %row = arith.muli %pid, %c64 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %rows = tt.splat %row : i32 -> tensor<64xi32>
    %offs = arith.addi %rows, %r : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<bf16> -> tensor<64x!tt.ptr<bf16>>
    %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<bf16>>, tensor<64xi32>
    %xv = tt.load %xp : tensor<64x!tt.ptr<bf16>>
    %ws = tt.splat %w : !tt.ptr<bf16> -> tensor<64x!tt.ptr<bf16>>
    %wp = tt.addptr %ws, %r : tensor<64x!tt.ptr<bf16>>, tensor<64xi32>
    %wv = tt.load %wp : tensor<64x!tt.ptr<bf16>>
    %x32 = arith.extf %xv : tensor<64xbf16> to tensor<64xf32>
    %w32 = arith.extf %wv : tensor<64xbf16> to tensor<64xf32>
    %prod = arith.mulf %x32, %w32 : tensor<64xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %yp, %prod : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<bf16> loc("x"), %w: !tt.ptr<bf16> loc("w"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<bf16> loc("dx"), %dw: !tt.ptr<bf16> loc("dw"), %dy: !tt.ptr<f32> loc("dy"), %ws: !tt.ptr<f32> loc("tritonad_workspace"), %slot: i32 loc("tritonad_slot"), %programs: i32 loc("tritonad_programs")) {
    tt.call @fwd(%x, %w, %y, %n) : (!tt.ptr<bf16>, !tt.ptr<bf16>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// The weight is loaded inside a loop over column blocks: the load stays in
// the program loop, and each visit reads, adds to and writes the program's
// slot (a store alone would keep only the last row's gradient).
// REMARK: remark: accumulation of w: partial buffer {{.*}} accumulates their sum
// CHECK-LABEL: tt.func public @bwd
// CHECK: scf.for
// CHECK: scf.for
// CHECK: %[[FIRST_T:.+]] = tt.splat %{{.+}} : i1 -> tensor<64xi1>
// CHECK-NEXT: %[[GUARD:.+]] = arith.andi %{{.+}}, %[[FIRST_T]]
// CHECK-NEXT: %[[OLD:.+]] = tt.load %[[SLOT:[^ ,]+]], %[[GUARD]], %{{.+}} : tensor<64x!tt.ptr<f32>>
// CHECK-NEXT: %[[NEW:.+]] = arith.addf %[[OLD]]
// CHECK-NEXT: tt.store %[[SLOT]], %[[NEW]], %[[GUARD]]
// (x's gradient keeps its run-time check: atomics only if rows overlap)
// CHECK-NOT: tt.atomic_rmw fadd, relaxed, gpu, %[[SLOT]],
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %w: !tt.ptr<f32> loc("w"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %row = arith.muli %pid, %n : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ns = tt.splat %n : i32 -> tensor<64xi32>
    scf.for %off = %c0 to %n step %c64 : i32 {
      %offs = tt.splat %off : i32 -> tensor<64xi32>
      %cols = arith.addi %offs, %r : tensor<64xi32>
      %m = arith.cmpi slt, %cols, %ns : tensor<64xi32>
      %rows = tt.splat %row : i32 -> tensor<64xi32>
      %at = arith.addi %rows, %cols : tensor<64xi32>
      %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %xp = tt.addptr %xs, %at : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %xv = tt.load %xp, %m : tensor<64x!tt.ptr<f32>>
      %ws = tt.splat %w : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %wp = tt.addptr %ws, %cols : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %wv = tt.load %wp, %m : tensor<64x!tt.ptr<f32>>
      %prod = arith.mulf %xv, %wv : tensor<64xf32>
      %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %yp = tt.addptr %ys, %at : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      tt.store %yp, %prod, %m : tensor<64x!tt.ptr<f32>>
    }
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %w: !tt.ptr<f32> loc("w"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dw: !tt.ptr<f32> loc("dw"), %dy: !tt.ptr<f32> loc("dy"), %ws: !tt.ptr<f32> loc("tritonad_workspace"), %slot: i32 loc("tritonad_slot"), %programs: i32 loc("tritonad_programs")) {
    tt.call @fwd(%x, %w, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// A reduction over the weight is the same in every program: coarsening hoists
// it out of the program loop, away from the residual loads (which address the
// program's region, so they stay in the loop). The backward recomputes it
// there rather than read a value the loop has not loaded yet.
// CHECK-LABEL: tt.func public @bwd
// CHECK: "tt.reduce"
// CHECK: scf.for
// CHECK-NOT: tt.atomic_rmw
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %w: !tt.ptr<f32> loc("w"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %c64 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %row = arith.muli %pid, %c64 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %rows = tt.splat %row : i32 -> tensor<64xi32>
    %offs = arith.addi %rows, %r : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %xv = tt.load %xp : tensor<64x!tt.ptr<f32>>
    %ws = tt.splat %w : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %wp = tt.addptr %ws, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %wv = tt.load %wp : tensor<64x!tt.ptr<f32>>
    %total = "tt.reduce"(%wv) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      tt.reduce.return %s : f32
    }) : (tensor<64xf32>) -> f32
    %inv = math.log %total : f32
    %invs = tt.splat %inv : f32 -> tensor<64xf32>
    %prod = arith.mulf %xv, %invs : tensor<64xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %yp, %prod : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %w: !tt.ptr<f32> loc("w"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dw: !tt.ptr<f32> loc("dw"), %dy: !tt.ptr<f32> loc("dy"), %ws: !tt.ptr<f32> loc("tritonad_workspace"), %slot: i32 loc("tritonad_slot"), %programs: i32 loc("tritonad_programs"), %res: !tt.ptr<i8> loc("tritonad_residuals")) {
    tt.call @fwd(%x, %w, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}
