// A running logsumexp (FlashAttention-2's Triton forward carries it where
// others carry the running sum): the max is taken with the running logsumexp,
// not with its own previous value, and still only stabilizes exponentials
// (cpp/lib/Analysis/ShiftInvariance.cpp). Held at its final value F, the
// logsumexp's update is F + log(exp(c - F) + s): the reverse carries it as
// exp(c - F), a pure accumulation, and the loop is reversed once, in forward
// order, each term's adjoint being exp(F - lse) times the logsumexp's.

// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dout:out" --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dout:out" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// lse = logsumexp(x[0:n]), natural base.
// REMARK: remark: stabilizer at {{.*}}kernel-running-logsumexp.mlir:{{[0-9]+}}:{{[0-9]+}}: a loop's running max that only stabilizes exponentials carries no gradient
// REMARK: remark: loop scf.for at {{.*}}: reversed in forward order: carried value #0 only stabilizes exponentials {{.*}}; carried value #1, a running logsumexp, accumulated as exp(value - final max)
// CHECK-LABEL: tt.func public @bwd
// The forward loop, recomputed: the final max F and logsumexp L.
// CHECK: %[[FWD:.+]]:2 = scf.for
// CHECK: %[[UP:.+]] = tt.load %arg4
// CHECK: %[[SHIFT:.+]] = arith.subf %[[FWD]]#0, %[[FWD]]#1
// CHECK: %[[SCALE:.+]] = math.exp %[[SHIFT]]
// CHECK: %[[G:.+]] = arith.mulf %[[UP]], %[[SCALE]]
// The reverse: one loop, nothing nested, each x[i] gets exp(x[i] - F) * g.
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
    %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%m = %ninf, %lse = %ninf) -> (f32, f32) : i32 {
      %p = tt.addptr %x, %i : !tt.ptr<f32>, i32
      %v = tt.load %p : !tt.ptr<f32>
      %m_new = arith.maxnumf %v, %lse : f32
      %dv = arith.subf %v, %m_new : f32
      %e = math.exp %dv : f32
      %dl = arith.subf %lse, %m_new : f32
      %el = math.exp %dl : f32
      %s = arith.addf %el, %e : f32
      %log = math.log %s : f32
      %lse_new = arith.addf %m_new, %log : f32
      scf.yield %m_new, %lse_new : f32, f32
    }
    tt.store %out, %r#1 : !tt.ptr<f32>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %out: !tt.ptr<f32> loc("out"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dout: !tt.ptr<f32> loc("dout")) {
    tt.call @fwd(%x, %out, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// The same in base 2 (exp2 and log2, as kernels scaled by log2(e) write it):
// the adjoint of exp2(c - F) is exp2(F - lse) / ln 2 times the logsumexp's.
// REMARK: remark: loop scf.for at {{.*}}: reversed in forward order: {{.*}}; carried value #1, a running logsumexp, accumulated as exp(value - final max)
// CHECK-LABEL: tt.func public @bwd
// CHECK: %[[FWD:.+]]:2 = scf.for
// CHECK: %[[UP:.+]] = tt.load %arg4
// CHECK: %[[SHIFT:.+]] = arith.subf %[[FWD]]#0, %[[FWD]]#1
// CHECK: %[[SCALE:.+]] = math.exp2 %[[SHIFT]]
// CHECK: %[[PER_LN2:.+]] = arith.mulf %[[SCALE]], %{{.+}}
// CHECK: %[[G:.+]] = arith.mulf %[[UP]], %[[PER_LN2]]
// CHECK: scf.for
// CHECK-NOT: scf.for
// CHECK:   math.exp2
// CHECK:   tt.store
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %out: !tt.ptr<f32> loc("out"), %n: i32 loc("n")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %ninf = arith.constant 0xFF800000 : f32
    %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%m = %ninf, %lse = %ninf) -> (f32, f32) : i32 {
      %p = tt.addptr %x, %i : !tt.ptr<f32>, i32
      %v = tt.load %p : !tt.ptr<f32>
      %m_new = arith.maxnumf %lse, %v : f32
      %dv = arith.subf %v, %m_new : f32
      %e = math.exp2 %dv : f32
      %dl = arith.subf %lse, %m_new : f32
      %el = math.exp2 %dl : f32
      %s = arith.addf %e, %el : f32
      %log = math.log2 %s : f32
      %lse_new = arith.addf %log, %m_new : f32
      scf.yield %m_new, %lse_new : f32, f32
    }
    tt.store %out, %r#1 : !tt.ptr<f32>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %out: !tt.ptr<f32> loc("out"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dout: !tt.ptr<f32> loc("dout")) {
    tt.call @fwd(%x, %out, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// The logsumexp also read as itself (times x[i]): no exp-domain form; the
// loop keeps the general reverse (a tape or a replay).
// REMARK-NOT: running logsumexp
// REMARK: remark: loop scf.for at {{.*}}: reversed last iteration first
// CHECK-LABEL: tt.func public @bwd
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %out: !tt.ptr<f32> loc("out"), %n: i32 loc("n")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %ninf = arith.constant 0xFF800000 : f32
    %zero = arith.constant 0.0 : f32
    %r:3 = scf.for %i = %c0 to %n step %c1 iter_args(%m = %ninf, %lse = %ninf, %acc = %zero) -> (f32, f32, f32) : i32 {
      %p = tt.addptr %x, %i : !tt.ptr<f32>, i32
      %v = tt.load %p : !tt.ptr<f32>
      %m_new = arith.maxnumf %v, %lse : f32
      %dv = arith.subf %v, %m_new : f32
      %e = math.exp %dv : f32
      %dl = arith.subf %lse, %m_new : f32
      %el = math.exp %dl : f32
      %s = arith.addf %el, %e : f32
      %log = math.log %s : f32
      %lse_new = arith.addf %m_new, %log : f32
      %w = arith.mulf %lse_new, %v : f32
      %acc_new = arith.addf %acc, %w : f32
      scf.yield %m_new, %lse_new, %acc_new : f32, f32, f32
    }
    %o = arith.addf %r#1, %r#2 : f32
    tt.store %out, %o : !tt.ptr<f32>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %out: !tt.ptr<f32> loc("out"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dout: !tt.ptr<f32> loc("dout")) {
    tt.call @fwd(%x, %out, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}
