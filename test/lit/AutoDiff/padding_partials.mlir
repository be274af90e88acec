// Partials other than products over masked lanes padded with a non-finite value
// (see padding.mlir): a partial that reads a value that may hold such padding
// (exp's g * exp(v), pow's, a division's by its padded result) is
// select(g == 0, 0, partial), so that f'(inf or NaN) * 0 = NaN in a masked lane
// cannot reach real lanes through a sum. One that reads only values the analysis
// clears (a uniform divisor; any op of a zero-padded kernel) has no guard.
// Numbers: test/test_padding.py.

// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dc:c,dy:y" --canonicalize --cse 2>/dev/null | FileCheck %s

// exp(x * 0 + c), x padded with +inf: 0 * inf = NaN in the masked lanes, and
// exp's partial dy * exp(NaN) = NaN there reached dc through the sum (fuzz seed
// 160's class): guarded where dy is 0.
// CHECK-LABEL: tt.func public @bwd
// CHECK: %[[E:.+]] = math.exp
// CHECK: %[[DY:.+]] = tt.load
// CHECK: %[[ZERO:.+]] = arith.cmpf oeq, %[[DY]], %{{.+}} : tensor<64xf32>
// CHECK: %[[PARTIAL:.+]] = arith.mulf %[[DY]], %[[E]] : tensor<64xf32>
// CHECK: %[[GUARDED:.+]] = arith.select %[[ZERO]], %{{.+}}, %[[PARTIAL]]
// CHECK: "tt.reduce"(%[[GUARDED]])
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %c: !tt.ptr<f32> loc("c"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %pad = arith.constant dense<0x7F800000> : tensor<64xf32>
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ns = tt.splat %n : i32 -> tensor<64xi32>
    %m = arith.cmpi slt, %r, %ns : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %v = tt.load %xp, %m, %pad : tensor<64x!tt.ptr<f32>>
    %cv = tt.load %c : !tt.ptr<f32>
    %cs = tt.splat %cv : f32 -> tensor<64xf32>
    %zero = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %p = arith.mulf %v, %zero : tensor<64xf32>
    %a = arith.addf %p, %cs : tensor<64xf32>
    %z = math.exp %a : tensor<64xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %yp, %z, %m : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %c: !tt.ptr<f32> loc("c"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dc: !tt.ptr<f32> loc("dc"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %c, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// sigmoid(x * 0 + c) as Triton spells it, 1 / (1 + exp(0 - a)), x padded with
// -inf: the exp's partial multiplies by exp(NaN) and is guarded too.
// CHECK-LABEL: tt.func public @bwd
// CHECK: %[[E:.+]] = math.exp
// CHECK: %[[DE:.+]] = arith.select
// CHECK: %[[ZERO:.+]] = arith.cmpf oeq, %[[DE]], %{{.+}} : tensor<64xf32>
// CHECK: %[[PARTIAL:.+]] = arith.mulf %[[DE]], %[[E]] : tensor<64xf32>
// CHECK: arith.select %[[ZERO]], %{{.+}}, %[[PARTIAL]]
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %c: !tt.ptr<f32> loc("c"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %pad = arith.constant dense<0xFF800000> : tensor<64xf32>
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ns = tt.splat %n : i32 -> tensor<64xi32>
    %m = arith.cmpi slt, %r, %ns : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %v = tt.load %xp, %m, %pad : tensor<64x!tt.ptr<f32>>
    %cv = tt.load %c : !tt.ptr<f32>
    %cs = tt.splat %cv : f32 -> tensor<64xf32>
    %zero = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %one = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %p = arith.mulf %v, %zero : tensor<64xf32>
    %a = arith.addf %p, %cs : tensor<64xf32>
    %neg = arith.subf %zero, %a : tensor<64xf32>
    %e = math.exp %neg : tensor<64xf32>
    %d = arith.addf %e, %one : tensor<64xf32>
    %z = arith.divf %one, %d : tensor<64xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %yp, %z, %m : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %c: !tt.ptr<f32> loc("c"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dc: !tt.ptr<f32> loc("dc"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %c, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// pow(c, x), x padded with +inf: the base c is uniform (no padding of its own),
// but both partials read x or the result: both guarded.
// CHECK-LABEL: tt.func public @bwd
// CHECK: %[[X:.+]] = tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<64x!tt.ptr<f32>>
// CHECK: %[[Y:.+]] = math.powf %{{.+}}, %[[X]]
// CHECK: %[[DY:.+]] = tt.load
// CHECK: %[[ZERO:.+]] = arith.cmpf oeq, %[[DY]], %{{.+}} : tensor<64xf32>
// CHECK: arith.mulf %[[DY]], %[[X]]
// CHECK: %[[DBASE:.+]] = arith.mulf
// CHECK: arith.select %[[ZERO]], %{{.+}}, %[[DBASE]]
// CHECK: %[[DYY:.+]] = arith.mulf %[[DY]], %[[Y]]
// CHECK: %[[DEXP:.+]] = arith.mulf %[[DYY]], %{{.+}}
// CHECK: arith.select %[[ZERO]], %{{.+}}, %[[DEXP]]
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %c: !tt.ptr<f32> loc("c"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %pad = arith.constant dense<0x7F800000> : tensor<64xf32>
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ns = tt.splat %n : i32 -> tensor<64xi32>
    %m = arith.cmpi slt, %r, %ns : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %v = tt.load %xp, %m, %pad : tensor<64x!tt.ptr<f32>>
    %cv = tt.load %c : !tt.ptr<f32>
    %cs = tt.splat %cv : f32 -> tensor<64xf32>
    %z = math.powf %cs, %v : tensor<64xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %yp, %z, %m : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %c: !tt.ptr<f32> loc("c"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dc: !tt.ptr<f32> loc("dc"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %c, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// x / c, x padded with +inf: x's partial dy / c reads only the uniform c (no
// guard); c's partial -dy * y / c reads the padded result (guarded).
// CHECK-LABEL: tt.func public @bwd
// CHECK: %[[C:.+]] = tt.splat %{{.+}} : f32 -> tensor<64xf32>
// CHECK: %[[Y:.+]] = arith.divf %{{.+}}, %[[C]]
// CHECK: %[[DY:.+]] = tt.load
// CHECK: %[[DX:.+]] = arith.divf %[[DY]], %[[C]]
// CHECK-NOT: arith.select %{{.+}}, %{{.+}}, %[[DX]]
// CHECK: %[[ZERO:.+]] = arith.cmpf oeq, %[[DY]], %{{.+}} : tensor<64xf32>
// CHECK: %[[NEG:.+]] = arith.subf %{{.+}}, %[[DY]]
// CHECK: %[[DYY:.+]] = arith.mulf %[[NEG]], %[[Y]]
// CHECK: %[[DC:.+]] = arith.divf %[[DYY]], %[[C]]
// CHECK: arith.select %[[ZERO]], %{{.+}}, %[[DC]]
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %c: !tt.ptr<f32> loc("c"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %pad = arith.constant dense<0x7F800000> : tensor<64xf32>
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ns = tt.splat %n : i32 -> tensor<64xi32>
    %m = arith.cmpi slt, %r, %ns : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %v = tt.load %xp, %m, %pad : tensor<64x!tt.ptr<f32>>
    %cv = tt.load %c : !tt.ptr<f32>
    %cs = tt.splat %cv : f32 -> tensor<64xf32>
    %z = arith.divf %v, %cs : tensor<64xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %yp, %z, %m : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %c: !tt.ptr<f32> loc("c"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dc: !tt.ptr<f32> loc("dc"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %c, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// An ordinary kernel (zero padding) of the same ops, exp, sin, products: no
// padding guard (the one select is exp's own against overflow, math.mlir).
// CHECK-LABEL: tt.func public @bwd
// CHECK: math.exp
// CHECK: arith.select
// CHECK-NOT: arith.select
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %c: !tt.ptr<f32> loc("c"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %pad = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ns = tt.splat %n : i32 -> tensor<64xi32>
    %m = arith.cmpi slt, %r, %ns : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %v = tt.load %xp, %m, %pad : tensor<64x!tt.ptr<f32>>
    %cv = tt.load %c : !tt.ptr<f32>
    %cs = tt.splat %cv : f32 -> tensor<64xf32>
    %a = arith.addf %v, %cs : tensor<64xf32>
    %e = math.exp %a : tensor<64xf32>
    %s = math.sin %e : tensor<64xf32>
    %z = arith.mulf %s, %a : tensor<64xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %yp, %z, %m : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %c: !tt.ptr<f32> loc("c"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dc: !tt.ptr<f32> loc("dc"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %c, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}
