// A 2-D tile of 16 rows (a program per 16 rows, masked by rows < m) by 16
// columns, both strides runtime arguments: x[r * sm + c * sn]. The programs'
// rows and the lanes' are one digit (the mask merges them). Addresses are
// distinct with the columns innermost (sn >= 1, sm >= 1 + sn * 15) or with the
// rows innermost (sm >= 1, sn >= 1 + sm * (min(16 * programs, m) - 1): a
// transposed view, sm = 1 and sn = the column length); the launch checks
// either, so the plain write is predicated on their disjunction.

// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y mode=deterministic" --canonicalize --cse | FileCheck %s --check-prefix=DET

// CHECK-LABEL: tt.func public @bwd
// CHECK-DAG: %[[SM:.+]] = arith.extsi %arg3 : i32 to i64
// CHECK-DAG: %[[SN:.+]] = arith.extsi %arg4 : i32 to i64
// Columns innermost: sm >= 1 + sn * 15.
// CHECK-DAG: %[[CSPAN:.+]] = arith.muli %[[SN]], %c15_i64
// CHECK-DAG: %[[CSPAN1:.+]] = arith.addi %[[CSPAN]], %c1_i64
// CHECK-DAG: %[[CFITS:.+]] = arith.cmpi sge, %[[SM]], %[[CSPAN1]]
// Rows innermost: sn >= 1 + sm * (rows reached - 1).
// CHECK-DAG: %[[RSPAN:.+]] = arith.muli %[[SM]], %{{.+}} : i64
// CHECK-DAG: %[[RSPAN1:.+]] = arith.addi %[[RSPAN]], %c1_i64
// CHECK-DAG: %[[RFITS:.+]] = arith.cmpi sge, %[[SN]], %[[RSPAN1]]
// CHECK: %[[EITHER:.+]] = arith.ori %{{.+}}, %{{.+}} : i1
// CHECK: %[[NEITHER:.+]] = arith.xori %[[EITHER]], %true
// CHECK: tt.splat %[[EITHER]]
// CHECK: tt.store
// CHECK: tt.splat %[[NEITHER]]
// CHECK: tt.atomic_rmw fadd

// Deterministic mode: the plain write alone (the launch checks the condition).
// DET-LABEL: tt.func public @bwd
// DET: arith.ori
// DET: tt.store
// DET-NOT: tt.atomic_rmw
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %m: i32 loc("m"), %sm: i32 loc("sm"), %sn: i32 loc("sn")) {
    %c16 = arith.constant 16 : i32
    %pid = tt.get_program_id x : i32
    %first = arith.muli %pid, %c16 : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %firsts = tt.splat %first : i32 -> tensor<16xi32>
    %rows = arith.addi %firsts, %r : tensor<16xi32>
    %ms = tt.splat %m : i32 -> tensor<16xi32>
    %inside = arith.cmpi slt, %rows, %ms : tensor<16xi32>
    %inside2 = tt.expand_dims %inside {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
    %mask = tt.broadcast %inside2 : tensor<16x1xi1> -> tensor<16x16xi1>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %sms = tt.splat %sm : i32 -> tensor<16x1xi32>
    %rowoff = arith.muli %rows2, %sms : tensor<16x1xi32>
    %cols2 = tt.expand_dims %r {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %sns = tt.splat %sn : i32 -> tensor<1x16xi32>
    %coloff = arith.muli %cols2, %sns : tensor<1x16xi32>
    %rowoffb = tt.broadcast %rowoff : tensor<16x1xi32> -> tensor<16x16xi32>
    %coloffb = tt.broadcast %coloff : tensor<1x16xi32> -> tensor<16x16xi32>
    %offs = arith.addi %rowoffb, %coloffb : tensor<16x16xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %xv = tt.load %xp, %mask : tensor<16x16x!tt.ptr<f32>>
    %e = math.exp %xv : tensor<16x16xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    tt.store %yp, %e, %mask : tensor<16x16x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %m: i32 loc("m"), %sm: i32 loc("sm"), %sn: i32 loc("sn"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %m, %sm, %sn) : (!tt.ptr<f32>, !tt.ptr<f32>, i32, i32, i32) -> ()
    tt.return
  }
}
