// The gradient tile a part's program owns (`width`): a member's 128 x 64
// tile of dA is summed by a program that takes 2 iterations of the loop
// (narrow: 128 x 128 elements, as a hand-written kernel's output tile), or 4
// (wide: 128 x 256, which the launch path picks for grids of many programs).
// A member's dC tile, the same for every iteration, is loaded once for all
// of them; each iteration adds its own product and writes its own tile.

// RUN: tritonad-opt %s --tritonad-regrid="shadows=da" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NARROW
// RUN: tritonad-opt %s --tritonad-regrid="shadows=da width=narrow" --canonicalize | FileCheck %s --check-prefix=NARROW-IR
// RUN: tritonad-opt %s --tritonad-regrid="shadows=da width=wide" -o /dev/null 2>&1 | FileCheck %s --check-prefix=WIDE
// RUN: tritonad-opt %s --tritonad-regrid="shadows=da width=wide" --canonicalize | FileCheck %s --check-prefix=WIDE-IR

// NARROW: remark: da: re-parallelized (programs of its own, one per tile of the gradient and 2 iterations of the loop
// NARROW: remark: part da: grouped by 1 key value(s), launch 1 of the parts, 2 iteration(s) per program
// WIDE: remark: da: re-parallelized (programs of its own, one per tile of the gradient and 4 iterations of the loop
// WIDE: remark: part da: grouped by 1 key value(s), launch 1 of the parts, 4 iteration(s) per program

// The parts' branch: the member loop loads dC once per member and adds one
// product per iteration the program owns; after it, one add per iteration.
// NARROW-IR-LABEL: tt.func public @wide
// NARROW-IR: } else {
// NARROW-IR: scf.for {{.+}} -> (tensor<128x64xf32>, tensor<128x64xf32>,
// NARROW-IR-COUNT-1: tt.load {{.*}} : tensor<128x64x!tt.ptr<f16>>
// NARROW-IR-COUNT-2: tt.dot {{.+}} -> tensor<128x64xf32>
// NARROW-IR: scf.yield
// NARROW-IR-COUNT-2: tt.atomic_rmw fadd
// NARROW-IR-NOT: tt.atomic_rmw
// WIDE-IR-LABEL: tt.func public @wide
// WIDE-IR: } else {
// WIDE-IR: scf.for {{.+}} -> (tensor<128x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>,
// WIDE-IR-COUNT-1: tt.load {{.*}} : tensor<128x64x!tt.ptr<f16>>
// WIDE-IR-COUNT-4: tt.dot {{.+}} -> tensor<128x64xf32>
// WIDE-IR: scf.yield
// WIDE-IR-COUNT-4: tt.atomic_rmw fadd
// WIDE-IR-NOT: tt.atomic_rmw
module {
  tt.func public @wide(%b: !tt.ptr<f16> loc("b"), %da: !tt.ptr<f32> loc("da"), %dc: !tt.ptr<f16> loc("dc"), %n: i32 loc("n"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c64 = arith.constant 64 : i32
    %c128 = arith.constant 128 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<128x64xf32>
    %pid = tt.get_program_id x : i32
    %ntiles = arith.divsi %n, %c64 : i32
    %pm = arith.divsi %pid, %ntiles : i32
    %pn = arith.remsi %pid, %ntiles : i32
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %r64 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %m0 = arith.muli %pm, %c128 : i32
    %m0s = tt.splat %m0 : i32 -> tensor<128xi32>
    %rows = arith.addi %m0s, %r : tensor<128xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %n0 = arith.muli %pn, %c64 : i32
    %n0s = tt.splat %n0 : i32 -> tensor<64xi32>
    %cols = arith.addi %n0s, %r64 : tensor<64xi32>
    %cols2 = tt.expand_dims %cols {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %colsm = tt.broadcast %cols2 : tensor<1x64xi32> -> tensor<128x64xi32>
    %colsk = tt.broadcast %cols2 : tensor<1x64xi32> -> tensor<64x64xi32>
    %ns = tt.splat %n : i32 -> tensor<128x1xi32>
    %rown = arith.muli %rows2, %ns : tensor<128x1xi32>
    %rownb = tt.broadcast %rown : tensor<128x1xi32> -> tensor<128x64xi32>
    %coff = arith.addi %rownb, %colsm : tensor<128x64xi32>
    %dcs = tt.splat %dc : !tt.ptr<f16> -> tensor<128x64x!tt.ptr<f16>>
    %dcp = tt.addptr %dcs, %coff : tensor<128x64x!tt.ptr<f16>>, tensor<128x64xi32>
    %g = tt.load %dcp : tensor<128x64x!tt.ptr<f16>>
    %ks = tt.splat %k : i32 -> tensor<128x1xi32>
    %rowk = arith.muli %rows2, %ks : tensor<128x1xi32>
    %rowkb = tt.broadcast %rowk : tensor<128x1xi32> -> tensor<128x64xi32>
    %nk = tt.splat %n : i32 -> tensor<64x1xi32>
    %kt = arith.divsi %k, %c64 : i32
    %bs = tt.splat %b : !tt.ptr<f16> -> tensor<64x64x!tt.ptr<f16>>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<128x64x!tt.ptr<f32>>
    scf.for %i = %c0 to %kt step %c1 : i32 {
      %k0 = arith.muli %i, %c64 : i32
      %k0s = tt.splat %k0 : i32 -> tensor<64xi32>
      %kr = arith.addi %k0s, %r64 : tensor<64xi32>
      %kr2 = tt.expand_dims %kr {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %krn = arith.muli %kr2, %nk : tensor<64x1xi32>
      %krnb = tt.broadcast %krn : tensor<64x1xi32> -> tensor<64x64xi32>
      %boff = arith.addi %krnb, %colsk : tensor<64x64xi32>
      %bp = tt.addptr %bs, %boff : tensor<64x64x!tt.ptr<f16>>, tensor<64x64xi32>
      %bv = tt.load %bp : tensor<64x64x!tt.ptr<f16>>
      %bt = tt.trans %bv {order = array<i32: 1, 0>} : tensor<64x64xf16> -> tensor<64x64xf16>
      %d = tt.dot %g, %bt, %zero : tensor<128x64xf16> * tensor<64x64xf16> -> tensor<128x64xf32>
      %kc = tt.expand_dims %kr {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %kcb = tt.broadcast %kc : tensor<1x64xi32> -> tensor<128x64xi32>
      %aoff = arith.addi %rowkb, %kcb : tensor<128x64xi32>
      %ap = tt.addptr %das, %aoff : tensor<128x64x!tt.ptr<f32>>, tensor<128x64xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d : (tensor<128x64x!tt.ptr<f32>>, tensor<128x64xf32>) -> tensor<128x64xf32>
    }
    tt.return
  }
}
