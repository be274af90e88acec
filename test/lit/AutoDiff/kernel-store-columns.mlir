// Store classes of flash-linear-attention's chunk_gla_fwd_A_kernel_intra_sub_intra
// (test/test_column_stores.py runs them against torch):
// - one column per iteration of a loop whose trip count a constant bounds,
//   `for j in range(0, min(16, n))`, the lanes 16 apart: the iterations
//   interleave inside the rows (AccessAnalysis.cpp, iterationDisjointness), so
//   the store is differentiated; a bound of 32 runs into the next row: the
//   launch checks the rows apart (only n <= 1 passes);
// - a later store of a constant over part of an output: the constant carries
//   no gradient, but its adjoint zeroes the upstream gradient where it
//   overwrites, before the earlier store reads it.

// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// Columns j < min(16, n) of 16 rows 16 apart: derived, the loop reversed as
// an accumulation of the rows' upstream columns, nothing left to the launch.
// REMARK: remark: loop scf.for at {{.*}}: reversed in forward order
// REMARK-NOT: checked at each launch
// CHECK-LABEL: tt.func public @bwd
// CHECK: scf.for
// CHECK:   tt.load %{{.+}}, %{{.+}} : tensor<16x!tt.ptr<f32>>
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %rows = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %ns = tt.splat %n : i32 -> tensor<16xi32>
    %m = arith.cmpi slt, %rows, %ns : tensor<16xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %rows : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %v = tt.load %xp, %m : tensor<16x!tt.ptr<f32>>
    %c16s = tt.splat %c16 : i32 -> tensor<16xi32>
    %row_start = arith.muli %rows, %c16s : tensor<16xi32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %yrow = tt.addptr %ys, %row_start : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %ub = arith.minsi %c16, %n : i32
    scf.for %j = %c0 to %ub step %c1 : i32 {
      %js = tt.splat %j : i32 -> tensor<16xi32>
      %yp = tt.addptr %yrow, %js : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      %jf = arith.sitofp %j : i32 to f32
      %jfs = tt.splat %jf : f32 -> tensor<16xf32>
      %w = arith.mulf %v, %jfs : tensor<16xf32>
      tt.store %yp, %w, %m : tensor<16x!tt.ptr<f32>>
    }
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// Columns j < min(32, n): column 16 + j of row r is column j of row r + 1.
// CHECK-LABEL: tt.func public @bwd
// REMARK: remark: accumulation of x
// REMARK: remark: checked at each launch: iterations of the loop at {{.*}} store to disjoint addresses where |1| >= (1 + (max(16, (0 - 16)) * (min(n, 16) - 1)))
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %c32 = arith.constant 32 : i32
    %rows = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %ns = tt.splat %n : i32 -> tensor<16xi32>
    %m = arith.cmpi slt, %rows, %ns : tensor<16xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %rows : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %v = tt.load %xp, %m : tensor<16x!tt.ptr<f32>>
    %c16s = tt.splat %c16 : i32 -> tensor<16xi32>
    %row_start = arith.muli %rows, %c16s : tensor<16xi32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %yrow = tt.addptr %ys, %row_start : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %ub = arith.minsi %c32, %n : i32
    scf.for %j = %c0 to %ub step %c1 : i32 {
      %js = tt.splat %j : i32 -> tensor<16xi32>
      %yp = tt.addptr %yrow, %js : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      tt.store %yp, %v, %m : tensor<16x!tt.ptr<f32>>
    }
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// y = x * x, then 0.5 where %keep is false: the constant's adjoint zeroes dy
// there (between barriers) before the first store's adjoint reads dy.
// CHECK-LABEL: tt.func public @bwd
// CHECK-DAG: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<16xf32>
// CHECK: gpu.barrier
// CHECK-NEXT: tt.store %[[DYP:.+]], %[[ZERO]], %{{.+}} : tensor<16x!tt.ptr<f32>>
// CHECK-NEXT: gpu.barrier
// CHECK: tt.load %[[DYP]]
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %offs = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %ns = tt.splat %n : i32 -> tensor<16xi32>
    %m = arith.cmpi slt, %offs, %ns : tensor<16xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %v = tt.load %xp, %m : tensor<16x!tt.ptr<f32>>
    %sq = arith.mulf %v, %v : tensor<16xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %yp, %sq, %m : tensor<16x!tt.ptr<f32>>
    %c8 = arith.constant dense<8> : tensor<16xi32>
    %low = arith.cmpi slt, %offs, %c8 : tensor<16xi32>
    %over = arith.andi %m, %low : tensor<16xi1>
    %half = arith.constant dense<5.000000e-01> : tensor<16xf32>
    tt.store %yp, %half, %over : tensor<16x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}
