// A loop whose only differentiated content is a store of a value computed
// before it (here exp(s), stored at 4 addresses): the store's adjoint is in
// the loop, so the loop is reversed and the 4 upstream gradients reach s.
// (It was skipped, and s got no gradient: found by the fuzzer.)

// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=ds:s,dy:y" --canonicalize --cse | FileCheck %s

// CHECK-LABEL: tt.func public @bwd
// CHECK: %[[SUM:.+]] = scf.for {{.*}} iter_args(%[[ACC:.+]] = {{.+}}) -> (f32)
// CHECK:   %[[UP:.+]] = tt.load
// CHECK:   arith.addf %[[ACC]], %[[UP]]
// CHECK: %[[GE:.+]] = arith.mulf %[[SUM]]
// CHECK: %[[G:.+]] = arith.select %{{.+}}, %{{.+}}, %[[GE]]
// CHECK: %[[NEW:.+]] = arith.addf %{{.+}}, %[[G]]
// CHECK-NEXT: tt.store %{{.+}}, %[[NEW]]
module {
  tt.func public @fwd(%s: !tt.ptr<f32> loc("s"), %y: !tt.ptr<f32> loc("y")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c4 = arith.constant 4 : i32
    %v = tt.load %s : !tt.ptr<f32>
    %e = math.exp %v : f32
    scf.for %i = %c0 to %c4 step %c1 : i32 {
      %p = tt.addptr %y, %i : !tt.ptr<f32>, i32
      tt.store %p, %e : !tt.ptr<f32>
    }
    tt.return
  }
  tt.func public @bwd(%s: !tt.ptr<f32> loc("s"), %y: !tt.ptr<f32> loc("y"), %ds: !tt.ptr<f32> loc("ds"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%s, %y) : (!tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}
