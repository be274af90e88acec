// Staggered iterations (cpp/lib/AutoDiff/Schedule/StaggerIterations.cpp): a
// reversed loop whose carried gradients are sums and whose forward writes no
// memory is marked; where its atomic adds reach addresses that no program id
// of some axis selects (every program along axis 0 adds into k's rows 0, 16,
// 32, ... in forward order), each program runs the iterations last to first
// from a start rotated by those program ids.

// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dq:q,dk:k,dout:out" | FileCheck %s --check-prefix=MARK
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dq:q,dk:k,dout:out" --tritonad-stagger-iterations --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dq:q,dk:k,dout:out" --tritonad-stagger-iterations -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dq:q,dk:k,dout:out" --tritonad-stagger-iterations="enable=false" | FileCheck %s --check-prefix=OFF

// A causal loop: program (i, h) reads k[h, 0 : 16 (i + 1)] in blocks of 16.
// MARK-LABEL: tt.func public @bwd
// MARK: scf.for
// MARK: tt.atomic_rmw fadd
// MARK: } {tritonad.independent_iterations = array<i32: 0, 1>}
// REMARK: remark: staggered: each program runs the iterations last to first from a start rotated by program_id(0), so that programs adding atomically into the same addresses reach different ones at each step
// OFF-LABEL: tt.func public @bwd
// OFF-NOT: tritonad.independent_iterations
// OFF-NOT: arith.remsi
// OFF: tt.return
// CHECK-LABEL: tt.func public @bwd
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : i32
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : i32
// CHECK-DAG: %[[C15:.+]] = arith.constant 15 : i32
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-DAG: %[[PID:.+]] = tt.get_program_id x : i32
// CHECK: %[[NEXT:.+]] = arith.addi %[[PID]], %[[C1]] : i32
// CHECK: %[[UB:.+]] = arith.muli %[[NEXT]], %[[C16]] : i32
// CHECK: scf.for %[[IV:.+]] = %[[C0]] to %[[UB]] step %[[C16]]
// The trip count n, the iteration t, the start r mod n, then (n - 1 - t + r) mod n.
// CHECK:   %[[SPAN:.+]] = arith.addi %[[UB]], %[[C15]] : i32
// CHECK:   %[[N:.+]] = arith.divsi %[[SPAN]], %[[C16]] : i32
// CHECK:   %[[T:.+]] = arith.divsi %[[IV]], %[[C16]] : i32
// CHECK:   %[[START:.+]] = arith.remsi %[[PID]], %[[N]] : i32
// CHECK:   %[[LAST:.+]] = arith.subi %[[N]], %[[C1]] : i32
// CHECK:   %[[DOWN:.+]] = arith.subi %[[LAST]], %[[T]] : i32
// CHECK:   %[[SUM:.+]] = arith.addi %[[DOWN]], %[[START]] : i32
// CHECK:   %[[ROT:.+]] = arith.remsi %[[SUM]], %[[N]] : i32
// CHECK:   %[[J:.+]] = arith.muli %[[ROT]], %[[C16]] : i32
// CHECK:   %[[KB:.+]] = arith.addi %{{.+}}, %[[J]] : i32
// CHECK:   tt.splat %[[KB]] : i32 -> tensor<16xi32>
// CHECK:   tt.atomic_rmw fadd
// CHECK-NOT: tritonad.independent_iterations
// CHECK: tt.return
module {
  tt.func public @fwd(%q: !tt.ptr<f32> loc("q"), %k: !tt.ptr<f32> loc("k"), %out: !tt.ptr<f32> loc("out")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %c1024 = arith.constant 1024 : i32
    %zero = arith.constant dense<0.0> : tensor<16xf32>
    %i = tt.get_program_id x : i32
    %h = tt.get_program_id y : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %row = arith.muli %i, %c16 : i32
    %head = arith.muli %h, %c1024 : i32
    %qbase = arith.addi %head, %row : i32
    %qb = tt.splat %qbase : i32 -> tensor<16xi32>
    %qoffs = arith.addi %qb, %r : tensor<16xi32>
    %qs = tt.splat %q : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %qp = tt.addptr %qs, %qoffs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %qv = tt.load %qp : tensor<16x!tt.ptr<f32>>
    %next = arith.addi %i, %c1 : i32
    %ub = arith.muli %next, %c16 : i32
    %acc = scf.for %j = %c0 to %ub step %c16 iter_args(%a = %zero) -> (tensor<16xf32>) : i32 {
      %kbase = arith.addi %head, %j : i32
      %kb = tt.splat %kbase : i32 -> tensor<16xi32>
      %koffs = arith.addi %kb, %r : tensor<16xi32>
      %ks = tt.splat %k : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %kp = tt.addptr %ks, %koffs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      %kv = tt.load %kp : tensor<16x!tt.ptr<f32>>
      %p = arith.mulf %qv, %kv : tensor<16xf32>
      %a2 = arith.addf %a, %p : tensor<16xf32>
      scf.yield %a2 : tensor<16xf32>
    }
    %os = tt.splat %out : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %op = tt.addptr %os, %qoffs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %op, %acc : tensor<16x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%q: !tt.ptr<f32> loc("q"), %k: !tt.ptr<f32> loc("k"), %out: !tt.ptr<f32> loc("out"), %dq: !tt.ptr<f32> loc("dq"), %dk: !tt.ptr<f32> loc("dk"), %dout: !tt.ptr<f32> loc("dout")) {
    tt.call @fwd(%q, %k, %out) : (!tt.ptr<f32>, !tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}

// -----

// Each program reads its own rows of k (its address is computed from the
// only program id the forward reads): no other program adds there, nothing
// to stagger, and the mark is removed.
// MARK-LABEL: tt.func public @bwd
// MARK: } {tritonad.independent_iterations = array<i32: 0>}
// CHECK-LABEL: tt.func public @bwd
// CHECK: scf.for
// CHECK-NOT: arith.remsi
// CHECK-NOT: tritonad.independent_iterations
// CHECK: tt.return
module {
  tt.func public @fwd(%q: !tt.ptr<f32> loc("q"), %k: !tt.ptr<f32> loc("k"), %out: !tt.ptr<f32> loc("out")) {
    %c0 = arith.constant 0 : i32
    %c16 = arith.constant 16 : i32
    %c256 = arith.constant 256 : i32
    %zero = arith.constant dense<0.0> : tensor<16xf32>
    %i = tt.get_program_id x : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %row = arith.muli %i, %c16 : i32
    %qb = tt.splat %row : i32 -> tensor<16xi32>
    %qoffs = arith.addi %qb, %r : tensor<16xi32>
    %qs = tt.splat %q : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %qp = tt.addptr %qs, %qoffs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %qv = tt.load %qp : tensor<16x!tt.ptr<f32>>
    %own = arith.muli %i, %c256 : i32
    %acc = scf.for %j = %c0 to %c256 step %c16 iter_args(%a = %zero) -> (tensor<16xf32>) : i32 {
      %kbase = arith.addi %own, %j : i32
      %kb = tt.splat %kbase : i32 -> tensor<16xi32>
      %koffs = arith.addi %kb, %r : tensor<16xi32>
      %ks = tt.splat %k : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %kp = tt.addptr %ks, %koffs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      %kv = tt.load %kp : tensor<16x!tt.ptr<f32>>
      %p = arith.mulf %qv, %kv : tensor<16xf32>
      %a2 = arith.addf %a, %p : tensor<16xf32>
      scf.yield %a2 : tensor<16xf32>
    }
    %os = tt.splat %out : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %op = tt.addptr %os, %qoffs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %op, %acc : tensor<16x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%q: !tt.ptr<f32> loc("q"), %k: !tt.ptr<f32> loc("k"), %out: !tt.ptr<f32> loc("out"), %dq: !tt.ptr<f32> loc("dq"), %dk: !tt.ptr<f32> loc("dk"), %dout: !tt.ptr<f32> loc("dout")) {
    tt.call @fwd(%q, %k, %out) : (!tt.ptr<f32>, !tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}
