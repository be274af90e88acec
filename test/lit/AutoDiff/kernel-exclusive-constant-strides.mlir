// A program per column of a row-major [m, 37] x whose row stride is a constant:
// program pid reads x[pid + r * 37] for its 64 lanes r (r < m). With the lanes
// stacked first their span (1 + 37 * 63) covers the programs' stride 1, an
// overlap proven statically; with every stride a constant the digits also
// stack by stride, programs first: distinct where 37 >= the programs' span
// (programs <= 37), which the launch checks.

// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y mode=deterministic" --canonicalize --cse | FileCheck %s --check-prefix=DET

// REMARK: remark: accumulation of x: plain when strides, masks and grid keep tiles disjoint, else atomic
// CHECK-LABEL: tt.func public @bwd
// CHECK-DAG: %[[PROGRAMS:.+]] = tt.get_num_programs x
// CHECK-DAG: %[[P64:.+]] = arith.extsi %[[PROGRAMS]] : i32 to i64
// CHECK-DAG: %[[FITS:.+]] = arith.cmpi sle, %[[P64]], %c37_i64 : i64
// CHECK: tt.store
// CHECK: tt.atomic_rmw fadd
// DET-LABEL: tt.func public @bwd
// DET-NOT: tt.atomic_rmw
// DET: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %m: i32 loc("m")) {
    %pid = tt.get_program_id x : i32
    %c37 = arith.constant dense<37> : tensor<64xi32>
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ms = tt.splat %m : i32 -> tensor<64xi32>
    %mask = arith.cmpi slt, %r, %ms : tensor<64xi32>
    %rows = arith.muli %r, %c37 : tensor<64xi32>
    %col = tt.splat %pid : i32 -> tensor<64xi32>
    %offs = arith.addi %col, %rows : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %a = tt.load %xp, %mask : tensor<64x!tt.ptr<f32>>
    %e = math.exp %a : tensor<64xf32>
    %mpid = arith.muli %pid, %m : i32
    %ybase = tt.splat %mpid : i32 -> tensor<64xi32>
    %yoffs = arith.addi %ybase, %r : tensor<64xi32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %yoffs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %yp, %e, %mask : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %m: i32 loc("m"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %m) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}
