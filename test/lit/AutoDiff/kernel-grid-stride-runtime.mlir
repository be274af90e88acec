// A persistent row loop whose row stride is a RUNTIME argument (the Triton tutorial's
// fused softmax: `row_idx * output_row_stride`). Nothing proves before the launch that
// the rows are apart, so the store is differentiated under a condition each launch
// checks: |output_row_stride| (the step tl.num_programs counted for one program) at
// least the min(n, 32) elements a row writes. A launch that breaks it is refused
// naming the parameter (test/test_persistent_rows.py); pointer induction runs first,
// as the API runs it (the third case advances pointers). A row stride that is a
// constant: kernel-grid-stride.mlir.

// RUN: tritonad-opt %s --split-input-file --tritonad-pointer-induction --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: tritonad-opt %s --split-input-file --tritonad-pointer-induction --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" --canonicalize --cse | FileCheck %s

// The load's gradient: a grid-stride loop's rows are one digit over its programs and
// iterations, so dx is written plainly where in_stride covers the row, atomically
// otherwise (overlapping input rows are fine to read).
// REMARK-NOT: error
// REMARK: remark: accumulation of x: plain when strides, masks and grid keep tiles disjoint, else atomic
// REMARK: remark: accumulation of y: output
// REMARK: remark: checked at each launch: iterations of the loop at {{.+}} store to disjoint addresses where |out_stride| >= min(n, 32) ((max(out_stride, (0 - out_stride)) >= min(n, 32)))
// CHECK-LABEL: tt.func public @bwd
// CHECK: tt.get_num_programs x
// CHECK: scf.for
// CHECK: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<32x!tt.ptr<f32>>
// CHECK: tt.store
// CHECK: tt.atomic_rmw fadd
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %rows: i32 loc("rows"), %in_stride: i32 loc("in_stride"), %out_stride: i32 loc("out_stride"), %n: i32 loc("n")) {
    %pid = tt.get_program_id x : i32
    %programs = tt.get_num_programs x : i32
    %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %ns = tt.splat %n : i32 -> tensor<32xi32>
    %m = arith.cmpi slt, %r, %ns : tensor<32xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    scf.for %row = %pid to %rows step %programs : i32 {
      %xbase = arith.muli %row, %in_stride : i32
      %xb = tt.splat %xbase : i32 -> tensor<32xi32>
      %xoffs = arith.addi %xb, %r : tensor<32xi32>
      %xp = tt.addptr %xs, %xoffs : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
      %v = tt.load %xp, %m : tensor<32x!tt.ptr<f32>>
      %sq = arith.mulf %v, %v : tensor<32xf32>
      %ybase = arith.muli %row, %out_stride : i32
      %yb = tt.splat %ybase : i32 -> tensor<32xi32>
      %yoffs = arith.addi %yb, %r : tensor<32xi32>
      %yp = tt.addptr %ys, %yoffs : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
      tt.store %yp, %sq, %m : tensor<32x!tt.ptr<f32>>
    }
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %rows: i32 loc("rows"), %in_stride: i32 loc("in_stride"), %out_stride: i32 loc("out_stride"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %rows, %in_stride, %out_stride, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32, i32, i32, i32) -> ()
    tt.return
  }
}

// -----

// Liger's spelling: BLOCK_ROW = 4 rows per iteration, the step 4 * tl.num_programs
// (counted as 4), the row stride an argument: |4 * stride| must cover the 3 rows
// below the tile's last one plus the 29 columns.
// REMARK: remark: accumulation of x: plain when strides, masks and grid keep tiles disjoint, else atomic
// REMARK: remark: checked at each launch: iterations of the loop at {{.+}} store to disjoint addresses where |(stride * 4)| >= ((1 + (max(stride, (0 - stride)) * (4 - 1))) + (min(n, 32) - 1))
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %rows: i32 loc("rows"), %stride: i32 loc("stride"), %n: i32 loc("n")) {
    %c4 = arith.constant 4 : i32
    %pid = tt.get_program_id x : i32
    %programs = tt.get_num_programs x : i32
    %start = arith.muli %pid, %c4 : i32
    %step = arith.muli %programs, %c4 : i32
    %rr = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
    %cc = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %ce = tt.expand_dims %cc {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %cb = tt.broadcast %ce : tensor<1x32xi32> -> tensor<4x32xi32>
    %ns = tt.splat %n : i32 -> tensor<1x32xi32>
    %m1 = arith.cmpi slt, %ce, %ns : tensor<1x32xi32>
    %m = tt.broadcast %m1 : tensor<1x32xi1> -> tensor<4x32xi1>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<4x32x!tt.ptr<f32>>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<4x32x!tt.ptr<f32>>
    %strides = tt.splat %stride : i32 -> tensor<4xi32>
    scf.for %s = %start to %rows step %step : i32 {
      %sv = tt.splat %s : i32 -> tensor<4xi32>
      %rowsv = arith.addi %sv, %rr : tensor<4xi32>
      %rowoff = arith.muli %rowsv, %strides : tensor<4xi32>
      %re = tt.expand_dims %rowoff {axis = 1 : i32} : tensor<4xi32> -> tensor<4x1xi32>
      %rb = tt.broadcast %re : tensor<4x1xi32> -> tensor<4x32xi32>
      %offs = arith.addi %rb, %cb : tensor<4x32xi32>
      %xp = tt.addptr %xs, %offs : tensor<4x32x!tt.ptr<f32>>, tensor<4x32xi32>
      %v = tt.load %xp, %m : tensor<4x32x!tt.ptr<f32>>
      %sq = arith.mulf %v, %v : tensor<4x32xf32>
      %yp = tt.addptr %ys, %offs : tensor<4x32x!tt.ptr<f32>>, tensor<4x32xi32>
      tt.store %yp, %sq, %m : tensor<4x32x!tt.ptr<f32>>
    }
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %rows: i32 loc("rows"), %stride: i32 loc("stride"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %rows, %stride, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32, i32, i32) -> ()
    tt.return
  }
}

// -----

// Liger's blocked spelling: rows [pid * R, min(pid * R + R, rows)), the pointers
// advanced by the runtime row stride each iteration (`Y += Y_row_stride`). Pointer
// induction writes the address as `Y + row_start * stride + (iv - row_start) * (i64)stride`;
// the two terms of the program id, one through the sign extension, cancel, leaving
// `stride * iv`: checked at each launch (it was refused: the terms did not combine).
// REMARK: remark: accumulation of x: atomic
// REMARK: remark: checked at each launch: iterations of the loop at {{.+}} store to disjoint addresses where |stride| >= min(n, 32)
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %rows: i32 loc("rows"), %stride: i32 loc("stride"), %n: i32 loc("n"), %per: i32 loc("per")) {
    %c1 = arith.constant 1 : i32
    %pid = tt.get_program_id x : i32
    %start = arith.muli %pid, %per : i32
    %next = arith.addi %pid, %c1 : i32
    %end0 = arith.muli %next, %per : i32
    %end = arith.minsi %end0, %rows : i32
    %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %ns = tt.splat %n : i32 -> tensor<32xi32>
    %m = arith.cmpi slt, %r, %ns : tensor<32xi32>
    %off = arith.muli %start, %stride : i32
    %x0 = tt.addptr %x, %off : !tt.ptr<f32>, i32
    %y0 = tt.addptr %y, %off : !tt.ptr<f32>, i32
    %res:2 = scf.for %i = %start to %end step %c1 iter_args(%xp = %x0, %yp = %y0) -> (!tt.ptr<f32>, !tt.ptr<f32>) : i32 {
      %xs = tt.splat %xp : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
      %xa = tt.addptr %xs, %r : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
      %v = tt.load %xa, %m : tensor<32x!tt.ptr<f32>>
      %sq = arith.mulf %v, %v : tensor<32xf32>
      %ys = tt.splat %yp : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
      %ya = tt.addptr %ys, %r : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
      tt.store %ya, %sq, %m : tensor<32x!tt.ptr<f32>>
      %xn = tt.addptr %xp, %stride : !tt.ptr<f32>, i32
      %yn = tt.addptr %yp, %stride : !tt.ptr<f32>, i32
      scf.yield %xn, %yn : !tt.ptr<f32>, !tt.ptr<f32>
    }
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %rows: i32 loc("rows"), %stride: i32 loc("stride"), %n: i32 loc("n"), %per: i32 loc("per"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %rows, %stride, %n, %per) : (!tt.ptr<f32>, !tt.ptr<f32>, i32, i32, i32, i32) -> ()
    tt.return
  }
}

// -----

// Iterations that interleave inside the tile (fuzz seed 238: column k of each of 16
// rows in iteration k, `rows * chunks + k`): the rows' stride must cover the
// iterations, |chunks| >= 1 * (trips - 1) + 1, or the iterations the rows.
// REMARK: remark: checked at each launch: iterations of the loop at {{.+}} store to disjoint addresses where |1| >= (1 + (max(chunks, (0 - chunks)) * (16 - 1)))
// REMARK-SAME: | (max(chunks, (0 - chunks)) >= ((max(1, (0 - 1)) * ((((chunks - 0) + (1 - 1)) / 1) - 1)) + 1))
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %chunks: i32 loc("chunks")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %cs = tt.splat %chunks : i32 -> tensor<16xi32>
    %rows = arith.muli %r, %cs : tensor<16xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    scf.for %k = %c0 to %chunks step %c1 : i32 {
      %ks = tt.splat %k : i32 -> tensor<16xi32>
      %offs = arith.addi %rows, %ks : tensor<16xi32>
      %xp = tt.addptr %xs, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      %v = tt.load %xp : tensor<16x!tt.ptr<f32>>
      %sq = arith.mulf %v, %v : tensor<16xf32>
      %yp = tt.addptr %ys, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      tt.store %yp, %sq : tensor<16x!tt.ptr<f32>>
    }
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %chunks: i32 loc("chunks"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %chunks) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}
