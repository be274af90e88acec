// A masked load padded with a differentiated `other` (tl.load(x + offs,
// mask=m, other=w)): the lanes the mask turns off read w, so their adjoint is
// w's (TritonRules.cpp, LoadModel); the lanes it keeps go to x's shadow.
// test/test_load_other.py runs it against torch.

// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dw:w,dy:y" --canonicalize --cse | FileCheck %s

// CHECK-LABEL: tt.func public @bwd
// CHECK-DAG: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<16xf32>
// CHECK: %[[M:.+]] = arith.cmpi slt
// CHECK: %[[G:.+]] = arith.addf %{{.+}}, %{{.+}} : tensor<16xf32>
// The padding lanes' adjoint, w's: where the mask is off.
// CHECK: %[[OFF:.+]] = arith.select %[[M]], %[[ZERO]], %[[G]] : tensor<16xi1>, tensor<16xf32>
// The kept lanes' adjoint into x's shadow, under the mask.
// CHECK: %[[KEPT:.+]] = arith.andi %[[M]], %{{.+}} : tensor<16xi1>
// CHECK: tt.store %{{.+}}, %{{.+}}, %[[KEPT]] : tensor<16x!tt.ptr<f32>>
// w's: the padding lanes summed, added into its shadow.
// CHECK: %[[SUM:.+]] = "tt.reduce"(%[[OFF]])
// CHECK: %[[DW:.+]] = arith.addf %{{.+}}, %[[SUM]] : f32
// CHECK: tt.store %{{.+}}, %[[DW]]
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %w: !tt.ptr<f32> loc("w"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %offs = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %ns = tt.splat %n : i32 -> tensor<16xi32>
    %m = arith.cmpi slt, %offs, %ns : tensor<16xi32>
    %wv = tt.load %w : !tt.ptr<f32>
    %ws = tt.splat %wv : f32 -> tensor<16xf32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %v = tt.load %xp, %m, %ws : tensor<16x!tt.ptr<f32>>
    %sq = arith.mulf %v, %v : tensor<16xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %yp, %sq : tensor<16x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %w: !tt.ptr<f32> loc("w"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dw: !tt.ptr<f32> loc("dw"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %w, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}
