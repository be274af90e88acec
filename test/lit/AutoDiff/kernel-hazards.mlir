// Kernels whose gradient was once silently wrong and is now derived correctly
// (the refused ones are in kernel-refused.mlir).

// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y,dz:z" --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y,dz:z" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A store inside a loop that rewrites the same addresses every iteration:
// only the last iteration's value survives, so only the last iteration
// (iv + step >= ub) reads the upstream gradient.
// CHECK-LABEL: tt.func public @bwd
// CHECK: scf.for %[[IV:[^ ]+]] =
// CHECK: %[[NEXT:.+]] = arith.addi %[[IV]], %{{.+}} : i32
// CHECK: %[[LAST:.+]] = arith.cmpi sge, %[[NEXT]], %{{.+}} : i32
// CHECK: %[[SPLAT:.+]] = tt.splat %[[LAST]] : i1 -> tensor<128xi1>
// CHECK: %[[MASK:.+]] = arith.andi %{{.+}}, %[[SPLAT]] : tensor<128xi1>
// CHECK: tt.load %{{.+}}, %[[MASK]], %{{.+}} : tensor<128x!tt.ptr<f32>>
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %iters: i32 loc("iters")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %ns = tt.splat %n : i32 -> tensor<128xi32>
    %m = arith.cmpi slt, %r, %ns : tensor<128xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %v = tt.load %xp, %m : tensor<128x!tt.ptr<f32>>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %r : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    scf.for %i = %c0 to %iters step %c1 : i32 {
      %f = arith.sitofp %i : i32 to f32
      %fs = tt.splat %f : f32 -> tensor<128xf32>
      %t = arith.mulf %v, %fs : tensor<128xf32>
      tt.store %yp, %t, %m : tensor<128x!tt.ptr<f32>>
    }
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %iters: i32 loc("iters"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n, %iters) : (!tt.ptr<f32>, !tt.ptr<f32>, i32, i32) -> ()
    tt.return
  }
}

// -----

// Each iteration stores its own block (offsets k + arange(64) for k in
// range(0, n, 64)): every iteration reads its upstream, no last-iteration mask.
// CHECK-LABEL: tt.func public @bwd
// CHECK: scf.for
// CHECK: %[[E:.+]] = math.exp
// CHECK-NOT: i1 -> tensor<64xi1>
// CHECK: %[[UP:.+]] = tt.load %{{.+}} : tensor<64x!tt.ptr<f32>>
// CHECK-NEXT: arith.cmpf oeq, %[[UP]]
// CHECK-NEXT: arith.mulf %[[UP]], %[[E]]
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    scf.for %k = %c0 to %n step %c64 : i32 {
      %ks = tt.splat %k : i32 -> tensor<64xi32>
      %offs = arith.addi %ks, %r : tensor<64xi32>
      %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %v = tt.load %xp : tensor<64x!tt.ptr<f32>>
      %e = math.exp %v : tensor<64xf32>
      %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %yp = tt.addptr %ys, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      tt.store %yp, %e : tensor<64x!tt.ptr<f32>>
    }
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// tt.print in the forward is not replayed by the backward.
// CHECK-LABEL: tt.func public @bwd
// CHECK-NOT: tt.print
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y")) {
    %v = tt.load %x : !tt.ptr<f32>
    tt.print " x: " {hex = false, isSigned = array<i32: 0>} : %v : f32
    %p = arith.mulf %v, %v : f32
    tt.store %y, %p : !tt.ptr<f32>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y) : (!tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}

// -----

// A running value also used inside the loop (stored every iteration, as a
// blockwise prefix sum does) is not a pure accumulation: the loop is reversed
// last iteration first with the carried state recomputed.
// REMARK: loop scf.for at {{.+}}: reversed last iteration first
// The carried adjoint runs backwards (iteration trips - 1 - i); the replay of
// [0, i) is cleaned away because the adjoint of an addition needs no state.
// CHECK-LABEL: tt.func public @bwd
// CHECK: scf.for %[[I:[^ ]+]] = {{.+}} iter_args
// CHECK: arith.subi %{{.+}}, %[[I]] : i32
// CHECK: tt.load
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant 0.0 : f32
    %s = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) : i32 {
      %xp = tt.addptr %x, %k : !tt.ptr<f32>, i32
      %v = tt.load %xp : !tt.ptr<f32>
      %next = arith.addf %acc, %v : f32
      %yp = tt.addptr %y, %k : !tt.ptr<f32>, i32
      tt.store %yp, %next : !tt.ptr<f32>
      scf.yield %next : f32
    }
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// The same addresses loaded twice with no write in between read the same
// values: one load site, whose gradients meet in registers and reach the shadow
// as one plain accumulation (not two atomics, each rounding).
// REMARK: remark: accumulation of x: plain (proven
// CHECK-LABEL: tt.func public @bwd
// CHECK-NOT: tt.atomic_rmw
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y")) {
    %c64 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %base = arith.muli %pid, %c64 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %b = tt.splat %base : i32 -> tensor<64xi32>
    %offs = arith.addi %b, %r : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %a = tt.load %xp : tensor<64x!tt.ptr<f32>>
    %e = math.exp %a : tensor<64xf32>
    %a2 = tt.load %xp : tensor<64x!tt.ptr<f32>>
    %p = arith.mulf %e, %a2 : tensor<64xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %yp, %p : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y) : (!tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}

// -----

// A sliding window (addresses move by 1 per iteration, the tile is 64 wide):
// iteration k + 1 reads through lane j what lane j + 1 wrote in iteration k, with
// nothing ordering the two threads but the barrier before each read-add-write.
// REMARK: remark: accumulation of x: plain when {{.*}}; the loop at {{.*}} moves its addresses by less than the tile: iterations revisit addresses through other lanes, each accumulation after a barrier, in program order
// CHECK-LABEL: tt.func public @bwd
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK-NEXT: tt.load
// CHECK-NEXT: arith.addf
// CHECK-NEXT: tt.store
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant dense<0.0> : tensor<64xf32>
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %acc = scf.for %k = %c0 to %n step %c1 iter_args(%a = %zero) -> (tensor<64xf32>) : i32 {
      %ks = tt.splat %k : i32 -> tensor<64xi32>
      %offs = arith.addi %ks, %r : tensor<64xi32>
      %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %v = tt.load %xp : tensor<64x!tt.ptr<f32>>
      %next = arith.addf %a, %v : tensor<64xf32>
      scf.yield %next : tensor<64xf32>
    }
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %yp, %acc : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// y is stored twice: the later store takes the upstream gradient, then zeroes it
// (consumes it) and a barrier orders that before the earlier store reads it from
// whichever thread holds it there.
// REMARK: remark: accumulation of y: output: its shadow is read (the upstream gradient), then zeroed where overwritten
// CHECK-LABEL: tt.func public @bwd
// (a barrier between every thread's read and the zeros: another warp's read could
// otherwise see them)
// CHECK: %[[UP:.+]] = tt.load %[[P:[^,]+]], %{{.+}}, %{{.+}} : tensor<64x!tt.ptr<f32>>
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: tt.store %[[P]], %{{.+}}, %{{.+}} : tensor<64x!tt.ptr<f32>>
// CHECK-NEXT: gpu.barrier
// CHECK: tt.load %[[P]]
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %c64 = arith.constant 64 : i32
    %three = arith.constant dense<3.0> : tensor<64xf32>
    %pid = tt.get_program_id x : i32
    %base = arith.muli %pid, %c64 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %b = tt.splat %base : i32 -> tensor<64xi32>
    %offs = arith.addi %b, %r : tensor<64xi32>
    %ns = tt.splat %n : i32 -> tensor<64xi32>
    %m = arith.cmpi slt, %offs, %ns : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %v = tt.load %xp, %m : tensor<64x!tt.ptr<f32>>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %yp, %v, %m : tensor<64x!tt.ptr<f32>>
    %t = arith.mulf %v, %three : tensor<64xf32>
    tt.store %yp, %t, %m : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// Offsets chosen by a branch on the program id: even programs read
// [64 pid + 3, 64 pid + 67), odd ones [64 pid + 67, 64 pid + 131), so programs
// 1 and 2 overlap. Both branches have the form 64 pid + lanes + (a uniform
// part), but the parts differ: a value from a branch is not trusted, and the
// gradient is accumulated with atomics.
// REMARK: remark: accumulation of x: atomic (addresses not analyzable)
// CHECK-LABEL: tt.func public @bwd
// CHECK: tt.atomic_rmw fadd
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y")) {
    %pid = tt.get_program_id x : i32
    %c0 = arith.constant 0 : i32
    %c2 = arith.constant 2 : i32
    %c3 = arith.constant 3 : i32
    %c64 = arith.constant 64 : i32
    %c67 = arith.constant 67 : i32
    %parity = arith.remsi %pid, %c2 : i32
    %even = arith.cmpi eq, %parity, %c0 : i32
    %base = arith.muli %pid, %c64 : i32
    %start = scf.if %even -> (i32) {
      %a = arith.addi %base, %c3 : i32
      scf.yield %a : i32
    } else {
      %b = arith.addi %base, %c67 : i32
      scf.yield %b : i32
    }
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %starts = tt.splat %start : i32 -> tensor<64xi32>
    %offs = arith.addi %starts, %r : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %v = tt.load %xp : tensor<64x!tt.ptr<f32>>
    %e = math.exp %v : tensor<64xf32>
    %bases = tt.splat %base : i32 -> tensor<64xi32>
    %outs = arith.addi %bases, %r : tensor<64xi32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %outs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %yp, %e : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y) : (!tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}
