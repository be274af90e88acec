// A row per program read through a block pointer (base x + row * stride,
// shape (n,), boundary_check=(0,)) as Triton emits it: the offset is an i32
// constant widened to i64 (extsi of 0), which the access analysis reads as the
// constant it is, so the boundary check's `index < n` clamps the row's span:
// rows are disjoint where stride >= min(256, n), not only where stride >= 256
// (the deterministic fuzz's seed 208 was refused at launch for it).

// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y mode=deterministic" --canonicalize --cse | FileCheck %s

// CHECK-LABEL: tt.func public @bwd
// CHECK-SAME: %[[STRIDE:[a-z0-9]+]]: i32, %[[N:[a-z0-9]+]]: i32,
// CHECK: %[[N64:.+]] = arith.extsi %[[N]] : i32 to i64
// CHECK: %[[SPAN:.+]] = arith.minsi %[[N64]], %c256_i64 : i64
// CHECK: %[[CLAMPED:.+]] = arith.minsi %[[SPAN]], %[[N64]] : i64
// CHECK: %[[S64:.+]] = arith.extsi %[[STRIDE]] : i32 to i64
// CHECK: arith.cmpi sge, %[[S64]], %[[CLAMPED]] : i64
// CHECK-NOT: tt.atomic_rmw
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %stride: i32 loc("stride"), %n: i32 loc("n")) {
    %row = tt.get_program_id x : i32
    %start = arith.muli %row, %stride : i32
    %rowptr = tt.addptr %x, %start : !tt.ptr<f32>, i32
    %n64 = arith.extsi %n : i32 to i64
    %one = arith.constant 1 : i64
    %zero = arith.constant 0 : i32
    %bp = tt.make_tensor_ptr %rowptr, [%n64], [%one], [%zero] {order = array<i32: 0>} : <tensor<256xf32>>
    %v = tt.load %bp {boundaryCheck = array<i32: 0>, padding = 1 : i32} : !tt.ptr<tensor<256xf32>>
    %cols = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %ns = tt.splat %n : i32 -> tensor<256xi32>
    %m = arith.cmpi slt, %cols, %ns : tensor<256xi32>
    %ystart = arith.muli %row, %n : i32
    %yrow = tt.addptr %y, %ystart : !tt.ptr<f32>, i32
    %ys = tt.splat %yrow : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %cols : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
    %sq = arith.mulf %v, %v : tensor<256xf32>
    tt.store %yp, %sq, %m : tensor<256x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %stride: i32 loc("stride"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %stride, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32, i32) -> ()
    tt.return
  }
}
