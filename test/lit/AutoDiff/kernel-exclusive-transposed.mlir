// A program per row of a transposed view: program pid reads x[pid * sp + c * sc]
// for its 16 lanes c, both strides runtime arguments. Addresses are distinct
// when the lanes are innermost (sp >= 1 + sc * 15) or when the programs are
// (sc >= 1 + sp * (programs - 1), x = y.T with y contiguous: sp = 1, sc = the
// row length); the launch checks either order, so the plain write is
// predicated on their disjunction.

// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y mode=deterministic" --canonicalize --cse | FileCheck %s --check-prefix=DET

// CHECK-LABEL: tt.func public @bwd
// CHECK-DAG: %[[PROGRAMS:.+]] = tt.get_num_programs x
// CHECK-DAG: %[[P64:.+]] = arith.extsi %[[PROGRAMS]] : i32 to i64
// CHECK-DAG: %[[PM1:.+]] = arith.subi %[[P64]], %c1_i64
// CHECK-DAG: %[[SP:.+]] = arith.extsi %arg3 : i32 to i64
// CHECK-DAG: %[[SC:.+]] = arith.extsi %arg4 : i32 to i64
// Programs innermost: sp >= 1 and sc >= 1 + sp * (programs - 1).
// CHECK-DAG: %[[PSPAN:.+]] = arith.muli %[[SP]], %[[PM1]]
// CHECK-DAG: %[[PSPAN1:.+]] = arith.addi %[[PSPAN]], %c1_i64
// CHECK-DAG: %[[PFITS:.+]] = arith.cmpi sge, %[[SC]], %[[PSPAN1]]
// CHECK-DAG: %[[SP1:.+]] = arith.cmpi sge, %[[SP]], %c1_i64
// CHECK-DAG: %[[PINNER:.+]] = arith.andi %[[SP1]], %[[PFITS]]
// Lanes innermost: sc >= 1 and sp >= 1 + sc * 15.
// CHECK-DAG: %[[LSPAN:.+]] = arith.muli %[[SC]], %c15_i64
// CHECK-DAG: %[[LSPAN1:.+]] = arith.addi %[[LSPAN]], %c1_i64
// CHECK-DAG: %[[LFITS:.+]] = arith.cmpi sge, %[[SP]], %[[LSPAN1]]
// CHECK-DAG: %[[SC1:.+]] = arith.cmpi sge, %[[SC]], %c1_i64
// CHECK-DAG: %[[LINNER:.+]] = arith.andi %[[SC1]], %[[LFITS]]
// CHECK: %[[EITHER:.+]] = arith.ori %[[LINNER]], %[[PINNER]] : i1
// CHECK: %[[NEITHER:.+]] = arith.xori %[[EITHER]], %true
// CHECK: %[[PLAIN:.+]] = tt.splat %[[EITHER]]
// CHECK: tt.store
// CHECK: tt.splat %[[NEITHER]]
// CHECK: tt.atomic_rmw fadd

// Deterministic mode: the plain write alone (the launch checks the condition).
// DET-LABEL: tt.func public @bwd
// DET: arith.ori
// DET: tt.store
// DET-NOT: tt.atomic_rmw
// DET: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %sp: i32 loc("sp"), %sc: i32 loc("sc")) {
    %pid = tt.get_program_id x : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %scs = tt.splat %sc : i32 -> tensor<16xi32>
    %co = arith.muli %r, %scs : tensor<16xi32>
    %p0 = arith.muli %pid, %sp : i32
    %xb = tt.addptr %x, %p0 : !tt.ptr<f32>, i32
    %xs = tt.splat %xb : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %co : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %v = tt.load %xp : tensor<16x!tt.ptr<f32>>
    %w = arith.mulf %v, %v : tensor<16xf32>
    %row = arith.muli %pid, %n : i32
    %yb = tt.addptr %y, %row : !tt.ptr<f32>, i32
    %ys = tt.splat %yb : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %yp, %w : tensor<16x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %sp: i32 loc("sp"), %sc: i32 loc("sc"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n, %sp, %sc) : (!tt.ptr<f32>, !tt.ptr<f32>, i32, i32, i32) -> ()
    tt.return
  }
}
