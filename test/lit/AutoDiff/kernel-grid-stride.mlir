// A persistent (grid-stride) row loop: rows pid, pid + P, ... with the runtime step
// P = tt.get_num_programs. Each iteration stores its own row (the step is at least 1,
// and the mask `lanes < 29` bounds the row's span to the row stride 29, though the tile
// has 32 lanes), so the store is differentiated; before, it was refused as "a store
// inside a loop whose addresses may repeat". Numbers: test/test_grid_stride.py.

// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" --canonicalize --cse | FileCheck %s

// REMARK-NOT: error
// REMARK: remark: accumulation of y: output
// CHECK-LABEL: tt.func public @bwd
// CHECK: tt.get_num_programs x
// CHECK: scf.for
// CHECK: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<32x!tt.ptr<f32>>
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %rows: i32 loc("rows")) {
    %c29 = arith.constant 29 : i32
    %width = arith.constant dense<29> : tensor<32xi32>
    %pid = tt.get_program_id x : i32
    %programs = tt.get_num_programs x : i32
    %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %m = arith.cmpi slt, %r, %width : tensor<32xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    scf.for %row = %pid to %rows step %programs : i32 {
      %base = arith.muli %row, %c29 : i32
      %b = tt.splat %base : i32 -> tensor<32xi32>
      %offs = arith.addi %b, %r : tensor<32xi32>
      %xp = tt.addptr %xs, %offs : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
      %v = tt.load %xp, %m : tensor<32x!tt.ptr<f32>>
      %sq = arith.mulf %v, %v : tensor<32xf32>
      %yp = tt.addptr %ys, %offs : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
      tt.store %yp, %sq, %m : tensor<32x!tt.ptr<f32>>
    }
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %rows: i32 loc("rows"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %rows) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}
