// Rows of a 2-D tile (4 rows per program, masked by rows < m) and a loop over
// the columns in tiles of 32 (masked by k + cols < n): the loop reaches n
// columns, so the rows are apart, across programs too, only where the row
// stride covers them all: stride >= min(span of the lanes and iterations, n),
// not one tile's 32 (fuzz seeds 62 and 60007: rows 70 apart over 96 columns
// were written by two programs' plain read-add-writes on an H100). The plain
// write is predicated on that condition, the atomic on its negation.

// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y mode=deterministic" --canonicalize --cse | FileCheck %s --check-prefix=DET

// CHECK-LABEL: tt.func public @bwd
// CHECK-SAME: (%{{[^:]+}}: !tt.ptr<f32>, %{{[^:]+}}: !tt.ptr<f32>, %[[STRIDEARG:[^:]+]]: i32, %{{[^:]+}}: i32, %[[NARG:[^:]+]]: i32
// CHECK: %[[N:.+]] = arith.extsi %[[NARG]] : i32 to i64
// CHECK-NEXT: %[[TRIPS:.+]] = arith.maxsi %[[N]], %c1_i64
// CHECK-NEXT: %[[REACH:.+]] = arith.addi %[[TRIPS]], %c31_i64
// CHECK-NEXT: %[[COLS:.+]] = arith.minsi %[[REACH]], %[[N]]
// CHECK-NEXT: %[[STRIDE:.+]] = arith.extsi %[[STRIDEARG]] : i32 to i64
// CHECK-NEXT: %[[APART:.+]] = arith.cmpi sge, %[[STRIDE]], %[[COLS]]
// CHECK-NEXT: %[[OVERLAP:.+]] = arith.cmpi slt, %[[STRIDE]], %[[COLS]]
// CHECK-NEXT: %[[APARTS:.+]] = tt.splat %[[APART]]
// CHECK-NEXT: %[[PLAIN:.+]] = arith.andi %{{.+}}, %[[APARTS]]
// CHECK: tt.store %{{.+}}, %{{.+}}, %[[PLAIN]]
// CHECK-NEXT: %[[OVERLAPS:.+]] = tt.splat %[[OVERLAP]]
// CHECK-NEXT: %[[ATOMIC:.+]] = arith.andi %{{.+}}, %[[OVERLAPS]]
// CHECK-NEXT: tt.atomic_rmw fadd, relaxed, gpu, %{{.+}}, %{{.+}}, %[[ATOMIC]]

// Deterministic mode: the plain write alone, under the same condition (the
// launch refuses overlapping rows).
// DET-LABEL: tt.func public @bwd
// DET: arith.minsi
// DET: arith.cmpi sge, %{{.+}}, %{{.+}} : i64
// DET: tt.store
// DET-NOT: tt.atomic_rmw
// DET: tt.return
module {
  tt.func public @fwd(%Y: !tt.ptr<f32> loc("y"), %X: !tt.ptr<f32> loc("x"), %stride: i32 loc("stride"), %M: i32 loc("m"), %N: i32 loc("n")) {
    %acc = arith.constant dense<0.000000e+00> : tensor<4xf32>
    %c32_i32 = arith.constant 32 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<0.000000e+00> : tensor<4x32xf32>
    %c4_i32 = arith.constant 4 : i32
    %rm = tt.get_program_id x : i32
    %rm_0 = arith.muli %rm, %c4_i32 : i32
    %rm_1 = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
    %rm_2 = tt.splat %rm_0 : i32 -> tensor<4xi32>
    %rm_3 = arith.addi %rm_2, %rm_1 : tensor<4xi32>
    %acc_4 = scf.for %k = %c0_i32 to %N step %c32_i32 iter_args(%acc_5 = %acc) -> (tensor<4xf32>)  : i32 {
      %cols = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %cols_6 = tt.splat %k : i32 -> tensor<32xi32>
      %cols_7 = arith.addi %cols_6, %cols : tensor<32xi32>
      %mask = tt.expand_dims %rm_3 {axis = 1 : i32} : tensor<4xi32> -> tensor<4x1xi32>
      %mask_8 = tt.splat %M : i32 -> tensor<4x1xi32>
      %mask_9 = arith.cmpi slt, %mask, %mask_8 : tensor<4x1xi32>
      %mask_10 = tt.expand_dims %cols_7 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %mask_11 = tt.splat %N : i32 -> tensor<1x32xi32>
      %mask_12 = arith.cmpi slt, %mask_10, %mask_11 : tensor<1x32xi32>
      %mask_13 = tt.broadcast %mask_9 : tensor<4x1xi1> -> tensor<4x32xi1>
      %mask_14 = tt.broadcast %mask_12 : tensor<1x32xi1> -> tensor<4x32xi1>
      %mask_15 = arith.andi %mask_13, %mask_14 : tensor<4x32xi1>
      %x = tt.splat %stride : i32 -> tensor<4x1xi32>
      %x_16 = arith.muli %mask, %x : tensor<4x1xi32>
      %x_17 = tt.splat %X : !tt.ptr<f32> -> tensor<4x1x!tt.ptr<f32>>
      %x_18 = tt.addptr %x_17, %x_16 : tensor<4x1x!tt.ptr<f32>>, tensor<4x1xi32>
      %x_19 = tt.broadcast %x_18 : tensor<4x1x!tt.ptr<f32>> -> tensor<4x32x!tt.ptr<f32>>
      %x_20 = tt.broadcast %mask_10 : tensor<1x32xi32> -> tensor<4x32xi32>
      %x_21 = tt.addptr %x_19, %x_20 : tensor<4x32x!tt.ptr<f32>>, tensor<4x32xi32>
      %x_22 = tt.load %x_21, %mask_15, %cst : tensor<4x32x!tt.ptr<f32>>
      %acc_23 = arith.mulf %x_22, %x_22 : tensor<4x32xf32>
      %acc_24 = "tt.reduce"(%acc_23) <{axis = 1 : i32}> ({
      ^bb0(%acc_26: f32, %acc_27: f32):
        %acc_28 = arith.addf %acc_26, %acc_27 : f32
        tt.reduce.return %acc_28 : f32
      }) : (tensor<4x32xf32>) -> tensor<4xf32>
      %acc_25 = arith.addf %acc_5, %acc_24 : tensor<4xf32>
      scf.yield %acc_25 : tensor<4xf32>
    }
    %0 = tt.splat %M : i32 -> tensor<4xi32>
    %1 = arith.cmpi slt, %rm_3, %0 : tensor<4xi32>
    %2 = tt.splat %Y : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>>
    %3 = tt.addptr %2, %rm_3 : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
    tt.store %3, %acc_4, %1 : tensor<4x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%X: !tt.ptr<f32> loc("x"), %Y: !tt.ptr<f32> loc("y"), %stride: i32 loc("stride"), %M: i32 loc("m"), %N: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%Y, %X, %stride, %M, %N) : (!tt.ptr<f32>, !tt.ptr<f32>, i32, i32, i32) -> ()
    tt.return
  }
}
