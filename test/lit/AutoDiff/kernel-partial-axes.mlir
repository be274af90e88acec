// Deterministic partial buffers along the axes that share an input: on a 2-D
// grid, a row scale `r` indexed by pid x alone is read by every program along
// axis y. Its gradient goes to a slot per program along axis y (the programs
// along axis x write disjoint addresses of one slot), summed by the launch
// path after the kernel; no atomics. The default mode keeps its schedule
// (plain where the launch proves the tiles disjoint, else atomic).

// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dr:r,dy:y mode=deterministic" --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dr:r,dy:y mode=deterministic" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dr:r,dy:y" -o /dev/null 2>&1 | FileCheck %s --check-prefix=AUTO

// REMARK: remark: accumulation of r: partial buffer across axes 1 (the programs of axis 1 read the same addresses: each stores their sum in its own slot; the slots are summed after the kernel: no atomics, deterministic; programs along the other axes write disjoint addresses of a slot, so a slot is as wide as what they reach together)
// AUTO: remark: accumulation of r: plain when
// CHECK-LABEL: tt.func public @bwd
// CHECK-SAME: %[[WS:[^:]+]]: !tt.ptr<f32>, %[[SLOT:[^:]+]]: i32, %[[P:[^:]+]]: i32)
// (the slot: this program's index along axis y, times the slot's elements)
// CHECK: %[[PIDY:.+]] = tt.get_program_id y
// CHECK: %[[PIDY64:.+]] = arith.extsi %[[PIDY]] : i32 to i64
// CHECK: %[[SLOT64:.+]] = arith.extsi %[[SLOT]] : i32 to i64
// CHECK: %[[OFF:.+]] = arith.muli %[[PIDY64]], %[[SLOT64]]
// CHECK: %[[MINE:.+]] = tt.addptr %[[WS]], %[[OFF]]
// (the grid-stride loop over the forward's programs along axis x)
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[P]] step
// CHECK-NOT: tt.atomic_rmw
// CHECK: %[[SLOTS:.+]] = tt.splat %[[MINE]]
// CHECK: %[[SLOTP:.+]] = tt.addptr %[[SLOTS]]
// CHECK: tt.store %[[SLOTP]]
// CHECK-NOT: tt.atomic_rmw
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %r: !tt.ptr<f32> loc("r"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %c64 = arith.constant 64 : i32
    %pidx = tt.get_program_id x : i32
    %pidy = tt.get_program_id y : i32
    %rowstart = arith.muli %pidx, %c64 : i32
    %r64 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %rowsplat = tt.splat %rowstart : i32 -> tensor<64xi32>
    %rowoffs = arith.addi %rowsplat, %r64 : tensor<64xi32>
    %colstart = arith.muli %pidy, %n : i32
    %colsplat = tt.splat %colstart : i32 -> tensor<64xi32>
    %offs = arith.addi %colsplat, %rowoffs : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %xv = tt.load %xp : tensor<64x!tt.ptr<f32>>
    %rs = tt.splat %r : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %rp = tt.addptr %rs, %rowoffs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %rv = tt.load %rp : tensor<64x!tt.ptr<f32>>
    %prod = arith.mulf %xv, %rv : tensor<64xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %yp, %prod : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %r: !tt.ptr<f32> loc("r"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dr: !tt.ptr<f32> loc("dr"), %dy: !tt.ptr<f32> loc("dy"), %ws: !tt.ptr<f32> loc("tritonad_workspace"), %slot: i32 loc("tritonad_slot"), %programs: i32 loc("tritonad_programs")) {
    tt.call @fwd(%x, %r, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}
