// A tile of 16 rows per program along axis 0, masked by rows < n, in a
// sequence per program along axis 1 (bstride apart): the rows of all
// programs along axis 0 and the tile's lanes are one index below n, so the
// sequences are disjoint where bstride >= 16 + stride * (min(programs * 16,
// n) - 1), whatever the last tile's masked-off rows would reach. The plain
// write is predicated on that (minsi of the grid's rows and n), the atomic
// on its negation.

// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y mode=deterministic" --canonicalize --cse | FileCheck %s --check-prefix=DET

// CHECK-LABEL: tt.func public @bwd
// CHECK: tt.get_num_programs x
// CHECK: %[[ROWS:.+]] = arith.muli %{{.+}}, %c16_i64
// CHECK: arith.minsi %[[ROWS]], %{{.+}}
// CHECK: tt.store
// CHECK: tt.atomic_rmw fadd

// Deterministic mode: the plain write alone (the launch checks the condition).
// DET-LABEL: tt.func public @bwd
// DET: arith.minsi
// DET: tt.store
// DET-NOT: tt.atomic_rmw
// DET: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %stride: i32 loc("stride"), %bstride: i32 loc("bstride")) {
    %pid = tt.get_program_id x : i32
    %bh = tt.get_program_id y : i32
    %c16 = arith.constant 16 : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %m0 = arith.muli %pid, %c16 : i32
    %m0s = tt.splat %m0 : i32 -> tensor<16xi32>
    %rows = arith.addi %m0s, %r : tensor<16xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %ss = tt.splat %stride : i32 -> tensor<16x1xi32>
    %ro = arith.muli %rows2, %ss : tensor<16x1xi32>
    %ro16 = tt.broadcast %ro : tensor<16x1xi32> -> tensor<16x16xi32>
    %cols = tt.expand_dims %r {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %cols16 = tt.broadcast %cols : tensor<1x16xi32> -> tensor<16x16xi32>
    %off = arith.addi %ro16, %cols16 : tensor<16x16xi32>
    %b0 = arith.muli %bh, %bstride : i32
    %ns = tt.splat %n : i32 -> tensor<16x1xi32>
    %m1 = arith.cmpi slt, %rows2, %ns : tensor<16x1xi32>
    %mask = tt.broadcast %m1 : tensor<16x1xi1> -> tensor<16x16xi1>
    %xb = tt.addptr %x, %b0 : !tt.ptr<f32>, i32
    %xs = tt.splat %xb : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %off : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %v = tt.load %xp, %mask : tensor<16x16x!tt.ptr<f32>>
    %w = arith.mulf %v, %v : tensor<16x16xf32>
    %yb = tt.addptr %y, %b0 : !tt.ptr<f32>, i32
    %ys = tt.splat %yb : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %off : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    tt.store %yp, %w, %mask : tensor<16x16x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %stride: i32 loc("stride"), %bstride: i32 loc("bstride"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n, %stride, %bstride) : (!tt.ptr<f32>, !tt.ptr<f32>, i32, i32, i32) -> ()
    tt.return
  }
}
