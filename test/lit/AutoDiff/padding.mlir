// Masked lanes padded with a non-finite `other` (tl.load(..., other=-float("inf"))):
// a partial that reads such a value (a product's g * v, exp's g * exp(v), pow's,
// a division's by its padded result) is guarded, select(g == 0, 0, partial), since
// those lanes get g = 0 and 0 * inf = NaN would reach every lane through the sum's
// adjoint. The padding analysis (Analysis/Padding.cpp) leaves
// products of zero-padded values unguarded: no cost where no padding can be
// non-finite. Unary ops, pow and division over padding: padding_partials.mlir.
// Numbers: test/test_padding.py.

// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" --canonicalize --cse | FileCheck %s

// z = x * sum(exp(x)), x padded with -inf: d(sum) = sum(dz * x) multiplies by x.
// CHECK-LABEL: tt.func public @bwd
// CHECK: %[[PAD:.+]] = arith.constant dense<0xFF800000> : tensor<64xf32>
// CHECK: %[[X:.+]] = tt.load %{{.+}}, %{{.+}}, %[[PAD]]
// CHECK: %[[DZ:.+]] = tt.load
// CHECK: %[[ZERO:.+]] = arith.cmpf oeq, %[[DZ]], %{{.+}} : tensor<64xf32>
// CHECK: %[[PRODUCT:.+]] = arith.mulf %[[DZ]], %[[X]] : tensor<64xf32>
// CHECK: arith.select %[[ZERO]], %{{.+}}, %[[PRODUCT]]
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %pad = arith.constant dense<0xFF800000> : tensor<64xf32>
    %c64 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %base = arith.muli %pid, %c64 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %b = tt.splat %base : i32 -> tensor<64xi32>
    %offs = arith.addi %b, %r : tensor<64xi32>
    %ns = tt.splat %n : i32 -> tensor<64xi32>
    %m = arith.cmpi slt, %r, %ns : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %v = tt.load %xp, %m, %pad : tensor<64x!tt.ptr<f32>>
    %e = math.exp %v : tensor<64xf32>
    %s = "tt.reduce"(%e) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %c: f32):
      %t = arith.addf %a, %c : f32
      tt.reduce.return %t : f32
    }) : (tensor<64xf32>) -> f32
    %ss = tt.splat %s : f32 -> tensor<64xf32>
    %z = arith.mulf %v, %ss : tensor<64xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %yp, %z, %m : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// The same with zero padding: no padding guard (the one select is exp's own
// against overflow, math.mlir).
// CHECK-LABEL: tt.func public @bwd
// CHECK: math.exp
// CHECK: arith.select
// CHECK-NOT: arith.select
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %pad = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c64 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %base = arith.muli %pid, %c64 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %b = tt.splat %base : i32 -> tensor<64xi32>
    %offs = arith.addi %b, %r : tensor<64xi32>
    %ns = tt.splat %n : i32 -> tensor<64xi32>
    %m = arith.cmpi slt, %r, %ns : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %v = tt.load %xp, %m, %pad : tensor<64x!tt.ptr<f32>>
    %e = math.exp %v : tensor<64xf32>
    %s = "tt.reduce"(%e) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %c: f32):
      %t = arith.addf %a, %c : f32
      tt.reduce.return %t : f32
    }) : (tensor<64xf32>) -> f32
    %ss = tt.splat %s : f32 -> tensor<64xf32>
    %z = arith.mulf %v, %ss : tensor<64xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %yp, %z, %m : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}
