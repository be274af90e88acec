// A loop whose carried state is more than accumulations and stabilizers (here
// the running max is stored, so it is a result): with a `tritonad_tape`
// argument, the recomputed forward stores each iteration's starting state
// (m, s) into this program's region of the tape, and the reverse reads it back
// last to first (bypassing L1, after a barrier): O(n), no replay. Without the
// argument the loop is replayed (kernel-stabilizer.mlir). With a
// `tritonad_tape_every` argument (k, chosen at launch so that the tape fits),
// only every k-th state is stored and the reverse replays from the nearest one.

// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dout:out" --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dout:out" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// REMARK: remark: loop scf.for at {{.*}}kernel-tape.mlir:{{[0-9]+}}:{{[0-9]+}}: reversed last iteration first; the recomputed forward tapes each iteration's carried state (32 bytes per iteration and program
// CHECK-LABEL: tt.func public @bwd
// This program's region: program id * trips * 32 bytes.
// CHECK: %[[REGION:.+]] = tt.addptr %arg5
// The recomputed forward: each iteration first stores its state at (i * 32) and (i * 32 + 16).
// CHECK: scf.for %[[I:.+]] = {{.*}} iter_args(%[[M:.+]] = {{.*}}, %[[S:.+]] = {{.*}})
// CHECK:   tt.bitcast {{.*}} : !tt.ptr<i8> -> !tt.ptr<f32>
// CHECK:   tt.store {{.*}}, %[[M]]
// CHECK:   tt.bitcast {{.*}} : !tt.ptr<i8> -> !tt.ptr<f32>
// CHECK:   tt.store {{.*}}, %[[S]]
// CHECK: gpu.barrier
// The reverse: one loop, the state read back, no replay nested in it.
// CHECK: scf.for
// CHECK-NOT: scf.for
// CHECK:   tt.load {{.*}} cacheModifier = cg
// CHECK:   tt.load {{.*}} cacheModifier = cg
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %out: !tt.ptr<f32> loc("out"), %n: i32 loc("n")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %ninf = arith.constant 0xFF800000 : f32
    %zero = arith.constant 0.0 : f32
    %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%m = %ninf, %s = %zero) -> (f32, f32) : i32 {
      %p = tt.addptr %x, %i : !tt.ptr<f32>, i32
      %v = tt.load %p : !tt.ptr<f32>
      %m_new = arith.maxnumf %m, %v : f32
      %d = arith.subf %m, %m_new : f32
      %alpha = math.exp %d : f32
      %scaled = arith.mulf %s, %alpha : f32
      %dv = arith.subf %v, %m_new : f32
      %e = math.exp %dv : f32
      %s_new = arith.addf %scaled, %e : f32
      scf.yield %m_new, %s_new : f32, f32
    }
    %log = math.log %r#1 : f32
    %lse = arith.addf %r#0, %log : f32
    tt.store %out, %lse : !tt.ptr<f32>
    %c1p = tt.addptr %out, %c1 : !tt.ptr<f32>, i32
    tt.store %c1p, %r#0 : !tt.ptr<f32>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %out: !tt.ptr<f32> loc("out"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dout: !tt.ptr<f32> loc("dout"), %tape: !tt.ptr<i8> loc("tritonad_tape")) {
    tt.call @fwd(%x, %out, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// CHECK-LABEL: tt.func public @bwd
// The recomputed forward stores the state only where i % k == 0, at slot i / k.
// CHECK: scf.for %[[I:.+]] = {{.*}} iter_args(%[[M:.+]] = {{.*}}, %[[S:.+]] = {{.*}})
// CHECK:   %[[R:.+]] = arith.remsi
// CHECK:   %[[KEPT:.+]] = arith.cmpi eq, %[[R]]
// CHECK:   arith.divsi
// CHECK:   tt.store {{.*}}, %[[M]], %[[KEPT]]
// CHECK:   tt.store {{.*}}, %[[S]], %[[KEPT]]
// CHECK: gpu.barrier
// The reverse reads the nearest kept state and replays the iterations after it.
// CHECK: scf.for
// CHECK:   tt.load {{.*}} cacheModifier = cg
// CHECK:   tt.load {{.*}} cacheModifier = cg
// CHECK:   scf.for
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %out: !tt.ptr<f32> loc("out"), %n: i32 loc("n")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %ninf = arith.constant 0xFF800000 : f32
    %zero = arith.constant 0.0 : f32
    %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%m = %ninf, %s = %zero) -> (f32, f32) : i32 {
      %p = tt.addptr %x, %i : !tt.ptr<f32>, i32
      %v = tt.load %p : !tt.ptr<f32>
      %m_new = arith.maxnumf %m, %v : f32
      %d = arith.subf %m, %m_new : f32
      %alpha = math.exp %d : f32
      %scaled = arith.mulf %s, %alpha : f32
      %dv = arith.subf %v, %m_new : f32
      %e = math.exp %dv : f32
      %s_new = arith.addf %scaled, %e : f32
      scf.yield %m_new, %s_new : f32, f32
    }
    %log = math.log %r#1 : f32
    %lse = arith.addf %r#0, %log : f32
    tt.store %out, %lse : !tt.ptr<f32>
    %c1p = tt.addptr %out, %c1 : !tt.ptr<f32>, i32
    tt.store %c1p, %r#0 : !tt.ptr<f32>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %out: !tt.ptr<f32> loc("out"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dout: !tt.ptr<f32> loc("dout"), %tape: !tt.ptr<i8> loc("tritonad_tape"), %every: i32 loc("tritonad_tape_every")) {
    tt.call @fwd(%x, %out, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}
