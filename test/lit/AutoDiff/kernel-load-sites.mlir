// One input loaded at several places: each load's gradient is a plain
// read-add-write into the one shadow, after a barrier (threads of a program
// are not ordered between two accesses; bar.sync orders them), where the
// union of the loads' addresses is exclusive per program. In both modes.

// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y mode=deterministic" --canonicalize --cse | FileCheck %s --check-prefix=DET
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y mode=deterministic" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DETREMARK

// A row per program, x loaded twice at the same offsets and mask (a statistic,
// then the scaled value): a read-add-write per load, a barrier before each;
// the rows are apart where the mask's bound keeps them so (checked at
// launch): the default falls back to atomics elsewhere, deterministic mode
// has the launch refuse.
// CHECK-LABEL: tt.func public @bwd
// CHECK: gpu.barrier
// CHECK-NEXT: %[[OLD1:.+]] = tt.load %[[DX:[^ ,]+]], %[[M:[^ ,]+]], %{{.+}} : tensor<128x!tt.ptr<f32>>
// CHECK-NEXT: %[[NEW1:.+]] = arith.addf %[[OLD1]], %{{.+}}
// CHECK-NEXT: tt.store %[[DX]], %[[NEW1]], %[[M]]
// CHECK: tt.atomic_rmw fadd, relaxed, gpu, %[[DX]], %{{.+}}, %[[ELSE:[^ ,]+]]
// CHECK: gpu.barrier
// CHECK-NEXT: %[[OLD2:.+]] = tt.load %[[DX]], %[[M]], %{{.+}} : tensor<128x!tt.ptr<f32>>
// CHECK-NEXT: %[[NEW2:.+]] = arith.addf %[[OLD2]], %{{.+}}
// CHECK-NEXT: tt.store %[[DX]], %[[NEW2]], %[[M]]
// CHECK: tt.atomic_rmw fadd, relaxed, gpu, %[[DX]], %{{.+}}, %[[ELSE]]
// CHECK-NEXT: tt.return
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
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %pid = tt.get_program_id x : i32
    %c128 = arith.constant 128 : i32
    %row = arith.muli %pid, %c128 : i32
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %ns = tt.splat %n : i32 -> tensor<128xi32>
    %m = arith.cmpi slt, %r, %ns : tensor<128xi32>
    %rows = tt.splat %row : i32 -> tensor<128xi32>
    %offs = arith.addi %rows, %r : tensor<128xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %a = tt.load %xp, %m : tensor<128x!tt.ptr<f32>>
    %e = math.exp %a : tensor<128xf32>
    %s = "tt.reduce"(%e) <{axis = 0 : i32}> ({
    ^bb0(%l: f32, %rr: f32):
      %t = arith.addf %l, %rr : f32
      tt.reduce.return %t : f32
    }) : (tensor<128xf32>) -> f32
    %zeros = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %b = tt.load %xp, %m, %zeros : tensor<128x!tt.ptr<f32>>
    %ss = tt.splat %s : f32 -> tensor<128xf32>
    %o = arith.mulf %b, %ss : tensor<128xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    tt.store %yp, %o, %m : tensor<128x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// A layer norm's two passes over a row: x loaded in a statistics loop and
// again in a loop with the same bounds (the same addresses, through
// different induction variables): a read-add-write after a barrier in each
// reversed loop.
// CHECK-LABEL: tt.func public @bwd
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK-NEXT: tt.load
// CHECK-NEXT: arith.addf
// CHECK-NEXT: tt.store
// CHECK: tt.atomic_rmw
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK-NEXT: tt.load
// CHECK-NEXT: arith.addf
// CHECK-NEXT: tt.store
// CHECK: tt.atomic_rmw
// CHECK: tt.return
// REMARK: remark: accumulation of x: plain when {{.*}}; loaded at 2 places, each accumulation after a barrier, in program order
// DET-LABEL: tt.func public @bwd
// DET-NOT: tt.atomic_rmw
// DET: tt.return
// DETREMARK: remark: accumulation of x: plain (deterministic mode: {{.*}}; loaded at 2 places, each accumulation after a barrier, in program order)
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %pid = tt.get_program_id x : i32
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %c4096 = arith.constant 4096 : i32
    %zero = arith.constant 0.000000e+00 : f32
    %row = arith.muli %pid, %c4096 : i32
    %rows = tt.splat %row : i32 -> tensor<64xi32>
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ns = tt.splat %n : i32 -> tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %sum = scf.for %k = %c0 to %c4096 step %c64 iter_args(%acc = %zero) -> (f32) : i32 {
      %ks = tt.splat %k : i32 -> tensor<64xi32>
      %cols = arith.addi %ks, %r : tensor<64xi32>
      %m = arith.cmpi slt, %cols, %ns : tensor<64xi32>
      %offs = arith.addi %rows, %cols : tensor<64xi32>
      %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %a = tt.load %xp, %m : tensor<64x!tt.ptr<f32>>
      %sq = arith.mulf %a, %a : tensor<64xf32>
      %s = "tt.reduce"(%sq) <{axis = 0 : i32}> ({
      ^bb0(%l: f32, %rr: f32):
        %t = arith.addf %l, %rr : f32
        tt.reduce.return %t : f32
      }) : (tensor<64xf32>) -> f32
      %next = arith.addf %acc, %s : f32
      scf.yield %next : f32
    }
    scf.for %j = %c0 to %c4096 step %c64 : i32 {
      %js = tt.splat %j : i32 -> tensor<64xi32>
      %cols = arith.addi %js, %r : tensor<64xi32>
      %m = arith.cmpi slt, %cols, %ns : tensor<64xi32>
      %offs = arith.addi %rows, %cols : tensor<64xi32>
      %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %b = tt.load %xp, %m : tensor<64x!tt.ptr<f32>>
      %ss = tt.splat %sum : f32 -> tensor<64xf32>
      %o = arith.mulf %b, %ss : tensor<64xf32>
      %yp = tt.addptr %ys, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      tt.store %yp, %o, %m : tensor<64x!tt.ptr<f32>>
    }
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// The second pass loops with another step: its iterations take other
// values, so the addresses are not known to be the same ones: atomics (the
// default), a located error (deterministic mode).
// CHECK-LABEL: tt.func public @bwd
// CHECK: tt.atomic_rmw fadd
// CHECK: tt.atomic_rmw fadd
// REMARK: remark: accumulation of x: atomic (loaded at 2 places: its loads read different addresses)
// DET-LABEL: tt.func public @bwd
// DET: tt.atomic_rmw fadd
// DETREMARK: remark: accumulation of x: atomic unless re-parallelized (deterministic mode: cannot prove that each address of 'x' is touched by one program only (loaded at 2 places: its loads read different addresses); accumulating its gradient needs atomics)
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %pid = tt.get_program_id x : i32
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %c128 = arith.constant 128 : i32
    %c4096 = arith.constant 4096 : i32
    %zero = arith.constant 0.000000e+00 : f32
    %row = arith.muli %pid, %c4096 : i32
    %rows = tt.splat %row : i32 -> tensor<64xi32>
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ns = tt.splat %n : i32 -> tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %sum = scf.for %k = %c0 to %c4096 step %c64 iter_args(%acc = %zero) -> (f32) : i32 {
      %ks = tt.splat %k : i32 -> tensor<64xi32>
      %cols = arith.addi %ks, %r : tensor<64xi32>
      %m = arith.cmpi slt, %cols, %ns : tensor<64xi32>
      %offs = arith.addi %rows, %cols : tensor<64xi32>
      %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %a = tt.load %xp, %m : tensor<64x!tt.ptr<f32>>
      %sq = arith.mulf %a, %a : tensor<64xf32>
      %s = "tt.reduce"(%sq) <{axis = 0 : i32}> ({
      ^bb0(%l: f32, %rr: f32):
        %t = arith.addf %l, %rr : f32
        tt.reduce.return %t : f32
      }) : (tensor<64xf32>) -> f32
      %next = arith.addf %acc, %s : f32
      scf.yield %next : f32
    }
    scf.for %j = %c0 to %c4096 step %c128 : i32 {
      %js = tt.splat %j : i32 -> tensor<64xi32>
      %cols = arith.addi %js, %r : tensor<64xi32>
      %m = arith.cmpi slt, %cols, %ns : tensor<64xi32>
      %offs = arith.addi %rows, %cols : tensor<64xi32>
      %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %b = tt.load %xp, %m : tensor<64x!tt.ptr<f32>>
      %ss = tt.splat %sum : f32 -> tensor<64xf32>
      %o = arith.mulf %b, %ss : tensor<64xf32>
      %yp = tt.addptr %ys, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      tt.store %yp, %o, %m : tensor<64x!tt.ptr<f32>>
    }
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// x loaded before a loop and again at the same (loop-invariant) addresses
// inside it: the same pointer, one site in the loop and one outside: plain,
// a barrier before the accumulation in the reversed loop and before the one
// after it.
// CHECK-LABEL: tt.func public @bwd
// CHECK-NOT: tt.atomic_rmw
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK-NEXT: tt.load
// CHECK-NEXT: arith.addf
// CHECK-NEXT: tt.store
// CHECK: }
// CHECK: gpu.barrier
// CHECK-NEXT: tt.load
// CHECK-NEXT: arith.addf
// CHECK-NEXT: tt.store
// CHECK-NOT: tt.atomic_rmw
// CHECK: tt.return
// REMARK: remark: accumulation of x: plain (its loads read the same addresses; proven: offsets from program_id with strides >= the tile extent; loaded at 2 places, each accumulation after a barrier, in program order)
// DET-LABEL: tt.func public @bwd
// DET-NOT: tt.atomic_rmw
// DET: tt.return
// DETREMARK: remark: accumulation of x: plain (its loads read the same addresses; proven
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %iters: i32 loc("iters")) {
    %pid = tt.get_program_id x : i32
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c128 = arith.constant 128 : i32
    %row = arith.muli %pid, %c128 : i32
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %rows = tt.splat %row : i32 -> tensor<128xi32>
    %offs = arith.addi %rows, %r : tensor<128xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %a = tt.load %xp : tensor<128x!tt.ptr<f32>>
    %h = scf.for %i = %c0 to %iters step %c1 iter_args(%acc = %a) -> (tensor<128xf32>) : i32 {
      %b = tt.load %xp : tensor<128x!tt.ptr<f32>>
      %p = arith.mulf %acc, %b : tensor<128xf32>
      scf.yield %p : tensor<128xf32>
    }
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    tt.store %yp, %h : tensor<128x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %iters: i32 loc("iters"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n, %iters) : (!tt.ptr<f32>, !tt.ptr<f32>, i32, i32) -> ()
    tt.return
  }
}

// -----

// A sliding window: a loop that moves the addresses by half the tile, so an
// iteration revisits through other lanes what the one before wrote; the
// row's span (the iterations' too) is within the program's block: a
// read-add-write after a barrier in each iteration.
// CHECK-LABEL: tt.func public @bwd
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK-NEXT: tt.load
// CHECK-NEXT: arith.addf
// CHECK-NEXT: tt.store
// CHECK: tt.return
// REMARK: remark: accumulation of x: plain when {{.*}}; the loop at {{.*}} moves its addresses by less than the tile: iterations revisit addresses through other lanes, each accumulation after a barrier, in program order
// DET-LABEL: tt.func public @bwd
// DET-NOT: tt.atomic_rmw
// DET: tt.return
// DETREMARK: remark: accumulation of x: plain (deterministic mode: {{.*}}; the loop at {{.*}} moves its addresses by less than the tile
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y")) {
    %pid = tt.get_program_id x : i32
    %c0 = arith.constant 0 : i32
    %c32 = arith.constant 32 : i32
    %c1024 = arith.constant 1024 : i32
    %c2048 = arith.constant 2048 : i32
    %row = arith.muli %pid, %c2048 : i32
    %rows = tt.splat %row : i32 -> tensor<64xi32>
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    scf.for %k = %c0 to %c1024 step %c32 : i32 {
      %ks = tt.splat %k : i32 -> tensor<64xi32>
      %cols = arith.addi %ks, %r : tensor<64xi32>
      %offs = arith.addi %rows, %cols : tensor<64xi32>
      %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %a = tt.load %xp : tensor<64x!tt.ptr<f32>>
      %e = math.exp %a : tensor<64xf32>
      %s = "tt.reduce"(%e) <{axis = 0 : i32}> ({
      ^bb0(%l: f32, %rr: f32):
        %t = arith.addf %l, %rr : f32
        tt.reduce.return %t : f32
      }) : (tensor<64xf32>) -> f32
      %kk = arith.divsi %k, %c32 : i32
      %yoff = arith.addi %row, %kk : i32
      %yp = tt.addptr %y, %yoff : !tt.ptr<f32>, i32
      tt.store %yp, %s : !tt.ptr<f32>
    }
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y) : (!tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}
