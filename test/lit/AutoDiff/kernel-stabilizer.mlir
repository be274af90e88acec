// Stabilizers (cpp/lib/Analysis/ShiftInvariance.cpp): a running max that only
// stabilizes exponentials leaves the results unchanged for any value, so it
// carries no gradient, and the loop carrying it is reversed once, in forward
// order, with the max at its final value: exp(m - m_new) folds to 1 and the
// running sum becomes a pure accumulation. Where the max is also stored, it is
// a result: the loop is replayed per iteration as before.

// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dout:out" --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dout:out" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// Online logsumexp over n scalars.
// REMARK: remark: stabilizer at {{.*}}kernel-stabilizer.mlir:{{[0-9]+}}:{{[0-9]+}}: a loop's running max that only stabilizes exponentials carries no gradient
// REMARK: remark: loop scf.for at {{.*}}: reversed in forward order: carried value #0 only stabilizes exponentials
// CHECK-LABEL: tt.func public @bwd
// The forward loop, recomputed: the final max M and sum S.
// CHECK: %[[FWD:.+]]:2 = scf.for
// CHECK: %[[UP:.+]] = tt.load %arg4
// CHECK: %[[G:.+]] = arith.divf %[[UP]], %[[FWD]]#1
// The reverse: one loop, nothing nested, each x[i] gets exp(x[i] - M) * dout / S.
// CHECK: scf.for
// CHECK-NOT: scf.for
// CHECK:   %[[X:.+]] = tt.load
// CHECK:   %[[SHIFTED:.+]] = arith.subf %[[X]], %[[FWD]]#0
// CHECK:   %[[E:.+]] = math.exp %[[SHIFTED]]
// CHECK:   arith.mulf %[[G]], %[[E]]
// CHECK:   tt.store
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
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %out: !tt.ptr<f32> loc("out"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dout: !tt.ptr<f32> loc("dout")) {
    tt.call @fwd(%x, %out, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// The same loop, its max also stored: a result, not a stabilizer.
// REMARK-NOT: stabilizer at
// REMARK: remark: loop scf.for at {{.*}}: reversed last iteration first; the carried state of iteration i is recomputed by replaying iterations [0, i)
// CHECK-LABEL: tt.func public @bwd
// CHECK: scf.for
// CHECK: scf.for
// CHECK:   scf.for
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
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %out: !tt.ptr<f32> loc("out"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dout: !tt.ptr<f32> loc("dout")) {
    tt.call @fwd(%x, %out, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// Two loops, the second continuing the first's running max and sum (flash
// attention's off-diagonal then diagonal blocks), the sum starting at 1 (as in
// Triton's tutorial: the first iteration rescales it by exp(-inf) = 0). The
// two maxima are one family: both loops are reversed in one pass each, with
// the family's final max (the second loop's).
// REMARK-COUNT-2: remark: loop scf.for at {{.*}}: reversed in forward order: carried value #0 only stabilizes exponentials
// CHECK-LABEL: tt.func public @bwd
// CHECK: %[[FIRST:.+]]:2 = scf.for
// CHECK: %[[SECOND:.+]]:2 = scf.for {{.*}} iter_args({{.*}} = %[[FIRST]]#0, {{.*}} = %[[FIRST]]#1)
// CHECK: scf.for
// CHECK:   arith.subf %{{.+}}, %[[SECOND]]#0
// CHECK: scf.for
// CHECK:   arith.subf %{{.+}}, %[[SECOND]]#0
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %out: !tt.ptr<f32> loc("out"), %n: i32 loc("n")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %ninf = arith.constant 0xFF800000 : f32
    %one = arith.constant 1.0 : f32
    %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%m = %ninf, %s = %one) -> (f32, f32) : i32 {
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
    %n2 = arith.addi %n, %n : i32
    %t:2 = scf.for %i = %n to %n2 step %c1 iter_args(%m = %r#0, %s = %r#1) -> (f32, f32) : i32 {
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
    %log = math.log %t#1 : f32
    %lse = arith.addf %t#0, %log : f32
    tt.store %out, %lse : !tt.ptr<f32>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %out: !tt.ptr<f32> loc("out"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dout: !tt.ptr<f32> loc("dout")) {
    tt.call @fwd(%x, %out, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}
