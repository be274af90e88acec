// Comparisons feeding masks that a launch condition makes true everywhere:
// each gets a remark with its condition (per program; loop ends substituted),
// and with full=true they become true and the masks they leave true go.
// RUN: tritonad-opt %s --tritonad-full-masks -o /dev/null 2>&1 | FileCheck %s --check-prefix=COND
// RUN: tritonad-opt %s --tritonad-full-masks="full=true" 2>/dev/null | FileCheck %s --check-prefix=FULL

// A block of a row: pid * 128 + lane < n, at the last lane (n, an argument,
// needs no range check of its own).
// COND: full-masks.mlir:{{[0-9]+}}:14: remark: true everywhere when (((((127 + (pid0 * 128)) - n) <= -1) & ((pid0 * 128) >= -2147483648)) & ((127 + (pid0 * 128)) <= 2147483647))
// The K tail, at the loop's first and last iterations (k in [0, cdiv(K, 64))).
// COND: full-masks.mlir:{{[0-9]+}}:15: remark: true everywhere when {{.*}}((63 - K) <= -1){{.*}}((63 - (K - ((((K + 63) / 64) - 1) * 64))) <= -1)
// A causal comparison holds at no launch (false at the diagonal): not marked;
// nor an unsigned one, nor one of a value a loop carries, nor one of indices.
// COND-NOT: :{{6[0-9]|7[0-9]|8[0-9]}}:{{[0-9]+}}: remark
// COND: remark: launch condition:

// FULL-LABEL: tt.func public @k
// FULL: tt.load %{{[0-9a-z_]+}} : tensor<128x!tt.ptr<f32>>
// FULL: scf.for
// FULL: tt.load %{{[0-9a-z_]+}} : tensor<64x!tt.ptr<f32>>
// The causal mask stays, and so do the unsigned and the carried ones.
// FULL: tt.load %{{[0-9a-z_]+}}, %{{[0-9a-z_]+}} : tensor<64x64x!tt.ptr<f32>>
// FULL: arith.cmpi ult
// FULL: tt.load %{{[0-9a-z_]+}}, %{{[0-9a-z_]+}} : tensor<64x!tt.ptr<f32>>
// FULL: arith.cmpi slt
// FULL: tt.store %{{[0-9a-z_]+}}, %{{[0-9a-z_]+}}, %{{[0-9a-z_]+}} : tensor<64x!tt.ptr<f32>>
// FULL: arith.cmpi slt, %{{[0-9a-z_]+}}, %{{[0-9a-z_]+}} : index




module {
  tt.func public @k(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %K: i32 loc("K")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c64 = arith.constant 64 : i32
    %c128 = arith.constant 128 : i32
    %pid = tt.get_program_id x : i32
    %start = arith.muli %pid, %c128 : i32
    %r128 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %s128 = tt.splat %start : i32 -> tensor<128xi32>
    %offs = arith.addi %s128, %r128 : tensor<128xi32>
    %n128 = tt.splat %n : i32 -> tensor<128xi32>
    %inrow = arith.cmpi slt, %offs, %n128 : tensor<128xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %row = tt.load %xp, %inrow : tensor<128x!tt.ptr<f32>>
    %r64 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %c63 = arith.constant 63 : i32
    %kup = arith.addi %K, %c63 : i32
    %trips = arith.divsi %kup, %c64 : i32
    %x64 = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    scf.for %k = %c0 to %trips step %c1 : i32 {
      %kk = arith.muli %k, %c64 : i32
      %left = arith.subi %K, %kk : i32
      %lefts = tt.splat %left : i32 -> tensor<64xi32>
      %tail = arith.cmpi slt, %r64, %lefts : tensor<64xi32>
      %xk = tt.addptr %x64, %r64 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %v = tt.load %xk, %tail : tensor<64x!tt.ptr<f32>>
    }
    %rows = tt.expand_dims %r64 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %cols = tt.expand_dims %r64 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %rb = tt.broadcast %rows : tensor<64x1xi32> -> tensor<64x64xi32>
    %cb = tt.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
    %causal = arith.cmpi sge, %rb, %cb : tensor<64x64xi32>
    %x2 = tt.splat %x : !tt.ptr<f32> -> tensor<64x64x!tt.ptr<f32>>
    %x2p = tt.addptr %x2, %rb : tensor<64x64x!tt.ptr<f32>>, tensor<64x64xi32>
    %tri = tt.load %x2p, %causal : tensor<64x64x!tt.ptr<f32>>
    %n64 = tt.splat %n : i32 -> tensor<64xi32>
    %unsigned = arith.cmpi ult, %r64, %n64 : tensor<64xi32>
    %xk0 = tt.addptr %x64, %r64 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %u = tt.load %xk0, %unsigned : tensor<64x!tt.ptr<f32>>
    %last = scf.for %i = %c0 to %n step %c1 iter_args(%o = %r64) -> (tensor<64xi32>) : i32 {
      %carried = arith.cmpi slt, %o, %n64 : tensor<64xi32>
      %y64 = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %yp = tt.addptr %y64, %o : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %zero = arith.constant dense<0.0> : tensor<64xf32>
      tt.store %yp, %zero, %carried : tensor<64x!tt.ptr<f32>>
      %next = arith.addi %o, %r64 : tensor<64xi32>
      scf.yield %next : tensor<64xi32>
    }
    %i0 = arith.index_cast %n : i32 to index
    %i1 = arith.index_cast %K : i32 to index
    %indexed = arith.cmpi slt, %i0, %i1 : index
    %im = tt.splat %indexed : i1 -> tensor<64xi1>
    %zeros = arith.constant dense<0.0> : tensor<64xf32>
    tt.store %xk0, %zeros, %im : tensor<64x!tt.ptr<f32>>
    tt.return
  }
}
