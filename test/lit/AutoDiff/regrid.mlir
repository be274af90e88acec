// Re-parallelization: in program (m, n) of a matmul backward, iteration i adds
// dot(dC[m, n], B[i, n]^T) to dA[m, i]: every program of row m adds to the
// same tile, with atomics. tritonad-regrid moves that accumulation into
// programs of its own: one per (group of programs sharing the tile's
// addresses, iteration), reading the grouping from `tritonad_regrid`, summing
// the group's dot products in the dot's accumulator and adding once. The
// grouping key is the pid-dependent scalar the addresses are built from.
// Accumulations that do not qualify keep their atomics and say why.

// RUN: tritonad-opt %s --split-input-file --tritonad-regrid="shadows=da,dk,dv" --canonicalize | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-regrid="shadows=da,dk,dv" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: tritonad-opt %s --split-input-file --tritonad-regrid="shadows=da,dk,dv overwrite=true" --canonicalize | FileCheck %s --check-prefix=STORE
// RUN: tritonad-opt %s --split-input-file --tritonad-regrid="shadows=da,dk,dv deterministic=true" --canonicalize -o /dev/null 2>&1 | FileCheck %s --check-prefix=DET
// RUN: tritonad-opt %s --split-input-file --tritonad-regrid="shadows=da,dk,dv deterministic=true" --canonicalize 2>/dev/null | FileCheck %s --check-prefix=FUSED

// REMARK: remark: da: re-parallelized (programs of its own, one per tile of the gradient and 4 iterations of the loop
// REMARK: remark: part da: grouped by 1 key value(s)
// REMARK: remark: nothing remains in the forward's schedule

// CHECK-LABEL: tt.func public @bwd
// CHECK-SAME: %{{[^:]+}}: !tt.ptr<i64>)
// CHECK: %[[LIN:.+]] = tt.get_program_id x
// CHECK: %[[MAIN64:.+]] = tt.load {{.*}} : !tt.ptr<i64>
// CHECK: %[[MAIN:.+]] = arith.trunci %[[MAIN64]]
// CHECK: %[[IN:.+]] = arith.cmpi slt, %[[LIN]], %[[MAIN]]
// CHECK: scf.if %[[IN]] {
// The forward's schedule, its ids decoded from the linear id, without the atomic.
// CHECK-NOT: tt.atomic_rmw
// CHECK: } else {
// CHECK: %[[Q:.+]] = arith.subi %[[LIN]], %[[MAIN]]
// CHECK: scf.if
// A 16x16 gradient tile: each program takes 4 iterations (coarsening), so
// each member's dC tile, which no iteration changes, is loaded once for 4 dots.
// CHECK: %[[TILES:.+]] = arith.divsi %{{.+}}, %c4_i32
// CHECK: %[[TILE:.+]] = arith.remsi %[[Q]], %[[TILES]]
// CHECK: %[[GROUP:.+]] = arith.divsi %[[Q]], %[[TILES]]
// When the launch finds every member's values affine in its index j (the
// table's affine word), the loop computes them: no table read inside it, and
// the loads' pointers start at member 0's addresses and advance by a constant
// step, as a hand-written loop's do.
// Each path writes its own sums: an scf.if whose results carried the loops'
// accumulators would make ptxas serialize their wgmma (C7515).
// CHECK: scf.if %{{.+}} {
// (what the replaced pid * 16 guaranteed, for Triton's vectorization)
// CHECK: arith.trunci %{{.+}} {tt.divisibility = dense<16> : tensor<1xi32>} : i64 to i32
// CHECK: %[[SUMS:.+]]:9 = scf.for {{.+}} -> (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16x!tt.ptr<f32>>, tensor<16x16x!tt.ptr<f32>>, tensor<16x16x!tt.ptr<f32>>, tensor<16x16x!tt.ptr<f32>>, tensor<16x16x!tt.ptr<f32>>)
// CHECK-NOT: !tt.ptr<i64>
// CHECK:   %[[G:.+]] = tt.load %arg
// CHECK-COUNT-4: tt.dot %[[G]], %{{.+}}, %arg
// CHECK-COUNT-5: tt.addptr %arg
// CHECK:   scf.yield
// The tiles' addresses from the group's key; an iteration past the trip
// count adds nothing. Where the launch found each element of dA reached once
// (the table's plain word), a read-add-write; else an atomic add.
// CHECK: %[[PLAIN:.+]] = arith.cmpi ne, %[[WORD:.+]], %c0_i32
// CHECK: %[[ATOMIC:.+]] = arith.cmpi eq, %[[WORD]], %c0_i32
// CHECK: %[[OLD:.+]] = tt.load %[[T0:[^,]+]], %{{.+}}, %cst
// CHECK: %[[NEW:.+]] = arith.addf %[[OLD]], %[[SUMS]]#0
// CHECK: tt.store %[[T0]], %[[NEW]]
// CHECK: tt.atomic_rmw fadd, relaxed, gpu, %[[T0]], %[[SUMS]]#0, %{{.+}}
// CHECK-COUNT-3: tt.atomic_rmw fadd, relaxed, gpu, %{{.+}}, %[[SUMS]]#{{[1-3]}}, %{{.+}}
// Otherwise each member's program id is read and decoded.
// CHECK: } else {
// CHECK: %[[MEMBER_SUMS:.+]]:4 = scf.for {{.+}} -> (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>)
// CHECK:   tt.load {{.*}} : !tt.ptr<i64>
// CHECK-NOT: tt.atomic_rmw
// CHECK-COUNT-4: tt.dot
// CHECK: arith.addf %{{.+}}, %[[MEMBER_SUMS]]#0
// CHECK: tt.atomic_rmw fadd, relaxed, gpu, %{{.+}}, %[[MEMBER_SUMS]]#0, %{{.+}}
// CHECK-COUNT-3: tt.atomic_rmw fadd, relaxed, gpu, %{{.+}}, %[[MEMBER_SUMS]]#{{[1-3]}}, %{{.+}}
// CHECK-NOT: tt.atomic_rmw
// The part is dA's only writer and dA is to be overwritten: plain writes are
// stores, and the launch need not zero-fill dA.
// STORE-LABEL: tt.func public @bwd
// STORE: %[[SUMS:.+]]:9 = scf.for
// STORE-NOT: arith.addf {{.*}}%[[SUMS]]#0
// STORE: tt.store %[[T0:[^,]+]], %[[SUMS]]#0, %{{.+}}
// STORE: tt.atomic_rmw fadd, relaxed, gpu, %[[T0]], %[[SUMS]]#0
// CHECK: tt.return
module {
  tt.func public @bwd(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %dc: !tt.ptr<f32> loc("dc"), %n: i32 loc("n"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %ntiles = arith.divsi %n, %c16 : i32
    %pm = arith.divsi %pid, %ntiles : i32
    %pn = arith.remsi %pid, %ntiles : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %m0 = arith.muli %pm, %c16 : i32
    %m0s = tt.splat %m0 : i32 -> tensor<16xi32>
    %rows = arith.addi %m0s, %r : tensor<16xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %n0 = arith.muli %pn, %c16 : i32
    %n0s = tt.splat %n0 : i32 -> tensor<16xi32>
    %cols = arith.addi %n0s, %r : tensor<16xi32>
    %cols2 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %cols16 = tt.broadcast %cols2 : tensor<1x16xi32> -> tensor<16x16xi32>
    %ns = tt.splat %n : i32 -> tensor<16x1xi32>
    %rown = arith.muli %rows2, %ns : tensor<16x1xi32>
    %rown16 = tt.broadcast %rown : tensor<16x1xi32> -> tensor<16x16xi32>
    %coff = arith.addi %rown16, %cols16 : tensor<16x16xi32>
    %dcs = tt.splat %dc : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dcp = tt.addptr %dcs, %coff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %g = tt.load %dcp : tensor<16x16x!tt.ptr<f32>>
    %ks = tt.splat %k : i32 -> tensor<16x1xi32>
    %rowk = arith.muli %rows2, %ks : tensor<16x1xi32>
    %rowk16 = tt.broadcast %rowk : tensor<16x1xi32> -> tensor<16x16xi32>
    %kt = arith.divsi %k, %c16 : i32
    %bs = tt.splat %b : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %kt step %c1 : i32 {
      %k0 = arith.muli %i, %c16 : i32
      %k0s = tt.splat %k0 : i32 -> tensor<16xi32>
      %kr = arith.addi %k0s, %r : tensor<16xi32>
      %kr2 = tt.expand_dims %kr {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %krn = arith.muli %kr2, %ns : tensor<16x1xi32>
      %krn16 = tt.broadcast %krn : tensor<16x1xi32> -> tensor<16x16xi32>
      %boff = arith.addi %krn16, %cols16 : tensor<16x16xi32>
      %bp = tt.addptr %bs, %boff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %bv = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %bt = tt.trans %bv {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
      %d = tt.dot %g, %bt, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %kc = tt.expand_dims %kr {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %kc16 = tt.broadcast %kc : tensor<1x16xi32> -> tensor<16x16xi32>
      %aoff = arith.addi %rowk16, %kc16 : tensor<16x16xi32>
      %ap = tt.addptr %das, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
    }
    tt.return
  }
}

// -----

// The addresses come from loaded indices (a gather): no key to group by.
// REMARK: remark: da: not re-parallelized: its addresses depend on data the program loads
// CHECK-LABEL: tt.func public @gather
// CHECK-NOT: scf.if
// CHECK: tt.atomic_rmw
module {
  tt.func public @gather(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %idx: !tt.ptr<i32> loc("idx"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %ps = tt.splat %pid : i32 -> tensor<256xi32>
    %ri = arith.addi %ps, %r : tensor<256xi32>
    %is = tt.splat %idx : !tt.ptr<i32> -> tensor<256x!tt.ptr<i32>>
    %ip = tt.addptr %is, %ri : tensor<256x!tt.ptr<i32>>, tensor<256xi32>
    %rows = tt.load %ip : tensor<256x!tt.ptr<i32>>
    %rows2 = tt.reshape %rows : tensor<256xi32> -> tensor<16x16xi32>
    %bs = tt.splat %b : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %bp = tt.addptr %bs, %rows2 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %k step %c1 : i32 {
      %bv = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %d = tt.dot %bv, %bv, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %is2 = tt.splat %i : i32 -> tensor<16x16xi32>
      %aoff = arith.addi %rows2, %is2 : tensor<16x16xi32>
      %ap = tt.addptr %das, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
    }
    tt.return
  }
}

// -----

// The trip count depends on the program (a causal loop: program p takes p
// iterations). The launch orders each group's members by decreasing trip
// count and counts, per tile, the members reaching it (the table's counts
// word): a tile's member loop ends after them. One iteration per program.
// REMARK: remark: da: re-parallelized (programs of its own, one per tile of the gradient and iteration of the loop at {{.*}} (whose trip count varies by program)
// CHECK-LABEL: tt.func public @causal
// (word 16: the part's counts-at word, after the 6 words of the header)
// CHECK: %[[COUNTSP:.+]] = tt.addptr %{{.+}}, %c16_i32
// CHECK-NEXT: %[[COUNTSW:.+]] = tt.load %[[COUNTSP]] : !tt.ptr<i64>
// CHECK-NEXT: %[[COUNTSAT:.+]] = arith.trunci %[[COUNTSW]]
// CHECK: scf.if
// CHECK: } else {
// CHECK: %[[TILE:.+]] = arith.remsi %[[Q:.+]], %[[TILES:.+]] : i32
// CHECK: %[[GROUP:.+]] = arith.divsi %[[Q]], %[[TILES]] : i32
// CHECK: %[[FIRST:.+]] = arith.trunci
// CHECK: %[[ROW:.+]] = arith.muli %[[GROUP]], %[[TILES]] : i32
// CHECK: %[[AT:.+]] = arith.addi %[[ROW]], %[[TILE]] : i32
// CHECK: %[[CAT:.+]] = arith.addi %[[COUNTSAT]], %[[AT]] : i32
// CHECK: %[[CP:.+]] = tt.addptr %{{.+}}, %[[CAT]]
// CHECK: %[[C64:.+]] = tt.load %[[CP]]
// CHECK: %[[COUNT:.+]] = arith.trunci %[[C64]]
// CHECK: %[[LAST:.+]] = arith.addi %[[FIRST]], %[[COUNT]] : i32
// CHECK: scf.for %{{.+}} = %[[FIRST]] to %[[LAST]]
// CHECK: tt.atomic_rmw
module {
  tt.func public @causal(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %r2 = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %r16 = tt.broadcast %r2 : tensor<16x1xi32> -> tensor<16x16xi32>
    %bs = tt.splat %b : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %bp = tt.addptr %bs, %r16 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %pid step %c1 : i32 {
      %bv = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %d = tt.dot %bv, %bv, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %is2 = tt.splat %i : i32 -> tensor<16x16xi32>
      %aoff = arith.addi %r16, %is2 : tensor<16x16xi32>
      %ap = tt.addptr %das, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
    }
    tt.return
  }
}

// -----

// The contribution reads a buffer the backward also writes: the parts would
// race with the forward's schedule.
// REMARK: remark: da: not re-parallelized: its contribution reads 'db', which the backward writes
// CHECK-LABEL: tt.func public @hazard
// CHECK-NOT: scf.if
// CHECK: tt.atomic_rmw
module {
  tt.func public @hazard(%db: !tt.ptr<f32> loc("db"), %da: !tt.ptr<f32> loc("da"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %r2 = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %r16 = tt.broadcast %r2 : tensor<16x1xi32> -> tensor<16x16xi32>
    %bs = tt.splat %db : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %bp = tt.addptr %bs, %r16 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %k step %c1 : i32 {
      %bv = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %d = tt.dot %bv, %bv, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %is2 = tt.splat %i : i32 -> tensor<16x16xi32>
      %aoff = arith.addi %r16, %is2 : tensor<16x16xi32>
      %ap = tt.addptr %das, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
      tt.store %bp, %d : tensor<16x16x!tt.ptr<f32>>
    }
    tt.return
  }
}

// -----

// Two accumulations into one shadow (a matrix loaded twice): one part sums
// both from the same members, and neither writes plainly (each is not the
// shadow's only writer).
// REMARK: remark: da: re-parallelized ({{.*}}one atomic add per element, uncontended)
// REMARK: remark: da: re-parallelized ({{.*}}one atomic add per element, uncontended)
// CHECK-LABEL: tt.func public @twice
// CHECK-NOT: tt.store
// CHECK: tt.return
module {
  tt.func public @twice(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %r2 = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %r16 = tt.broadcast %r2 : tensor<16x1xi32> -> tensor<16x16xi32>
    %bs = tt.splat %b : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %bp = tt.addptr %bs, %r16 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %k step %c1 : i32 {
      %bv = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %d = tt.dot %bv, %bv, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %i16 = arith.muli %i, %c16 : i32
      %is2 = tt.splat %i16 : i32 -> tensor<16x16xi32>
      %aoff = arith.addi %r16, %is2 : tensor<16x16xi32>
      %ap = tt.addptr %das, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
      %old2 = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
    }
    tt.return
  }
}

// -----

// An epilogue's gradient scaled by a value the forward saved (a residual, read
// through a bitcast of the i8 buffer at the program's region): a per-program
// input like any other, so the parts read it for each member.
// REMARK: remark: da: re-parallelized (programs of its own
// CHECK-LABEL: tt.func public @epilogue
// CHECK: scf.for
// CHECK: tt.bitcast
// CHECK: tt.dot
// CHECK: tt.return
module {
  tt.func public @epilogue(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %dc: !tt.ptr<f32> loc("dc"), %n: i32 loc("n"), %k: i32 loc("k"), %res: !tt.ptr<i8> loc("tritonad_residuals"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %ntiles = arith.divsi %n, %c16 : i32
    %pm = arith.divsi %pid, %ntiles : i32
    %pn = arith.remsi %pid, %ntiles : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %m0 = arith.muli %pm, %c16 : i32
    %m0s = tt.splat %m0 : i32 -> tensor<16xi32>
    %rows = arith.addi %m0s, %r : tensor<16xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %n0 = arith.muli %pn, %c16 : i32
    %n0s = tt.splat %n0 : i32 -> tensor<16xi32>
    %cols = arith.addi %n0s, %r : tensor<16xi32>
    %cols2 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %cols16 = tt.broadcast %cols2 : tensor<1x16xi32> -> tensor<16x16xi32>
    %ns = tt.splat %n : i32 -> tensor<16x1xi32>
    %rown = arith.muli %rows2, %ns : tensor<16x1xi32>
    %rown16 = tt.broadcast %rown : tensor<16x1xi32> -> tensor<16x16xi32>
    %coff = arith.addi %rown16, %cols16 : tensor<16x16xi32>
    %dcs = tt.splat %dc : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dcp = tt.addptr %dcs, %coff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %g0 = tt.load %dcp : tensor<16x16x!tt.ptr<f32>>
    %c1024 = arith.constant 1024 : i32
    %region = arith.muli %pid, %c1024 : i32
    %rp = tt.addptr %res, %region : !tt.ptr<i8>, i32
    %rf = tt.bitcast %rp : !tt.ptr<i8> -> !tt.ptr<f32>
    %rfs = tt.splat %rf : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %r256 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %r2d = tt.reshape %r256 : tensor<256xi32> -> tensor<16x16xi32>
    %rfp = tt.addptr %rfs, %r2d : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %saved = tt.load %rfp : tensor<16x16x!tt.ptr<f32>>
    %g = arith.mulf %g0, %saved : tensor<16x16xf32>
    %ks = tt.splat %k : i32 -> tensor<16x1xi32>
    %rowk = arith.muli %rows2, %ks : tensor<16x1xi32>
    %rowk16 = tt.broadcast %rowk : tensor<16x1xi32> -> tensor<16x16xi32>
    %kt = arith.divsi %k, %c16 : i32
    %bs = tt.splat %b : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %kt step %c1 : i32 {
      %k0 = arith.muli %i, %c16 : i32
      %k0s = tt.splat %k0 : i32 -> tensor<16xi32>
      %kr = arith.addi %k0s, %r : tensor<16xi32>
      %kr2 = tt.expand_dims %kr {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %krn = arith.muli %kr2, %ns : tensor<16x1xi32>
      %krn16 = tt.broadcast %krn : tensor<16x1xi32> -> tensor<16x16xi32>
      %boff = arith.addi %krn16, %cols16 : tensor<16x16xi32>
      %bp = tt.addptr %bs, %boff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %bv = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %bt = tt.trans %bv {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
      %d = tt.dot %g, %bt, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %kc = tt.expand_dims %kr {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %kc16 = tt.broadcast %kc : tensor<1x16xi32> -> tensor<16x16xi32>
      %aoff = arith.addi %rowk16, %kc16 : tensor<16x16xi32>
      %ap = tt.addptr %das, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
    }
    tt.return
  }
}


// -----

// The same epilogue through an activation's derivative (an exp of the saved
// value): every part a member feeds would evaluate it again on the member's
// tile, so the accumulation keeps its atomics and says why.
// REMARK: remark: da: not re-parallelized: its contribution evaluates 1 function (exp, erf, ...) per element
// CHECK-LABEL: tt.func public @activation
// CHECK: tt.atomic_rmw fadd
module {
  tt.func public @activation(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %dc: !tt.ptr<f32> loc("dc"), %n: i32 loc("n"), %k: i32 loc("k"), %res: !tt.ptr<i8> loc("tritonad_residuals"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %ntiles = arith.divsi %n, %c16 : i32
    %pm = arith.divsi %pid, %ntiles : i32
    %pn = arith.remsi %pid, %ntiles : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %m0 = arith.muli %pm, %c16 : i32
    %m0s = tt.splat %m0 : i32 -> tensor<16xi32>
    %rows = arith.addi %m0s, %r : tensor<16xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %n0 = arith.muli %pn, %c16 : i32
    %n0s = tt.splat %n0 : i32 -> tensor<16xi32>
    %cols = arith.addi %n0s, %r : tensor<16xi32>
    %cols2 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %cols16 = tt.broadcast %cols2 : tensor<1x16xi32> -> tensor<16x16xi32>
    %ns = tt.splat %n : i32 -> tensor<16x1xi32>
    %rown = arith.muli %rows2, %ns : tensor<16x1xi32>
    %rown16 = tt.broadcast %rown : tensor<16x1xi32> -> tensor<16x16xi32>
    %coff = arith.addi %rown16, %cols16 : tensor<16x16xi32>
    %dcs = tt.splat %dc : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dcp = tt.addptr %dcs, %coff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %g0 = tt.load %dcp : tensor<16x16x!tt.ptr<f32>>
    %c1024 = arith.constant 1024 : i32
    %region = arith.muli %pid, %c1024 : i32
    %rp = tt.addptr %res, %region : !tt.ptr<i8>, i32
    %rf = tt.bitcast %rp : !tt.ptr<i8> -> !tt.ptr<f32>
    %rfs = tt.splat %rf : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %r256 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %r2d = tt.reshape %r256 : tensor<256xi32> -> tensor<16x16xi32>
    %rfp = tt.addptr %rfs, %r2d : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %saved = tt.load %rfp : tensor<16x16x!tt.ptr<f32>>
    %slope = math.exp %saved : tensor<16x16xf32>
    %g = arith.mulf %g0, %slope : tensor<16x16xf32>
    %ks = tt.splat %k : i32 -> tensor<16x1xi32>
    %rowk = arith.muli %rows2, %ks : tensor<16x1xi32>
    %rowk16 = tt.broadcast %rowk : tensor<16x1xi32> -> tensor<16x16xi32>
    %kt = arith.divsi %k, %c16 : i32
    %bs = tt.splat %b : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %kt step %c1 : i32 {
      %k0 = arith.muli %i, %c16 : i32
      %k0s = tt.splat %k0 : i32 -> tensor<16xi32>
      %kr = arith.addi %k0s, %r : tensor<16xi32>
      %kr2 = tt.expand_dims %kr {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %krn = arith.muli %kr2, %ns : tensor<16x1xi32>
      %krn16 = tt.broadcast %krn : tensor<16x1xi32> -> tensor<16x16xi32>
      %boff = arith.addi %krn16, %cols16 : tensor<16x16xi32>
      %bp = tt.addptr %bs, %boff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %bv = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %bt = tt.trans %bv {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
      %d = tt.dot %g, %bt, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %kc = tt.expand_dims %kr {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %kc16 = tt.broadcast %kc : tensor<1x16xi32> -> tensor<16x16xi32>
      %aoff = arith.addi %rowk16, %kc16 : tensor<16x16xi32>
      %ap = tt.addptr %das, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
    }
    tt.return
  }
}



// -----

// With scratch (`tritonad_tape`, which a re-parallelized backward does not
// otherwise use), the forward's programs compute that tile once and store it
// (in a launch of their own, before the parts'), and the parts load it: the
// exp is evaluated once per element, not once per tile a member feeds.
// REMARK: remark: da: re-parallelized ({{.*}}reading the tiles each member computes before the loop from scratch (1024 bytes per forward program
// CHECK-LABEL: tt.func public @staged
// CHECK: scf.if
// (where: the program's slot, read once from the table at word 5's offset +
// the program id, the launch's choice of order)
// CHECK: %[[SLOTSP:.+]] = tt.addptr %[[TABLE:.+]], %c5_i32 : !tt.ptr<i64>, i32
// CHECK: %[[SLOTP:.+]] = tt.addptr %[[TABLE]], %{{.+}} : !tt.ptr<i64>, i32
// CHECK-NEXT: %[[SLOT:.+]] = tt.load %[[SLOTP]] : !tt.ptr<i64>
// CHECK: %[[SLOPE:.+]] = math.exp
// CHECK: %[[G:.+]] = arith.mulf %{{.+}}, %[[SLOPE]]
// CHECK: arith.muli %[[SLOT]], %c1024_i64
// CHECK: %[[AT:.+]] = tt.bitcast %{{.+}} : !tt.ptr<i8> -> !tt.ptr<f32>
// CHECK: tt.store %{{.+}}, %[[G]] : tensor<16x16x!tt.ptr<f32>>
// CHECK-NOT: tt.load %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// CHECK: } else {
// CHECK-NOT: math.exp
// CHECK: scf.for
// CHECK: tt.bitcast %{{.+}} : !tt.ptr<i8> -> !tt.ptr<f32>
// CHECK: %[[STAGED:.+]] = tt.load %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// CHECK-NOT: math.exp
// CHECK: tt.dot %[[STAGED]]
// CHECK-NOT: math.exp
// CHECK: tt.return
module {
  tt.func public @staged(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %dc: !tt.ptr<f32> loc("dc"), %n: i32 loc("n"), %k: i32 loc("k"), %res: !tt.ptr<i8> loc("tritonad_residuals"), %tape: !tt.ptr<i8> loc("tritonad_tape"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %ntiles = arith.divsi %n, %c16 : i32
    %pm = arith.divsi %pid, %ntiles : i32
    %pn = arith.remsi %pid, %ntiles : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %m0 = arith.muli %pm, %c16 : i32
    %m0s = tt.splat %m0 : i32 -> tensor<16xi32>
    %rows = arith.addi %m0s, %r : tensor<16xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %n0 = arith.muli %pn, %c16 : i32
    %n0s = tt.splat %n0 : i32 -> tensor<16xi32>
    %cols = arith.addi %n0s, %r : tensor<16xi32>
    %cols2 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %cols16 = tt.broadcast %cols2 : tensor<1x16xi32> -> tensor<16x16xi32>
    %ns = tt.splat %n : i32 -> tensor<16x1xi32>
    %rown = arith.muli %rows2, %ns : tensor<16x1xi32>
    %rown16 = tt.broadcast %rown : tensor<16x1xi32> -> tensor<16x16xi32>
    %coff = arith.addi %rown16, %cols16 : tensor<16x16xi32>
    %dcs = tt.splat %dc : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dcp = tt.addptr %dcs, %coff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %g0 = tt.load %dcp : tensor<16x16x!tt.ptr<f32>>
    %c1024 = arith.constant 1024 : i32
    %region = arith.muli %pid, %c1024 : i32
    %rp = tt.addptr %res, %region : !tt.ptr<i8>, i32
    %rf = tt.bitcast %rp : !tt.ptr<i8> -> !tt.ptr<f32>
    %rfs = tt.splat %rf : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %r256 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %r2d = tt.reshape %r256 : tensor<256xi32> -> tensor<16x16xi32>
    %rfp = tt.addptr %rfs, %r2d : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %saved = tt.load %rfp : tensor<16x16x!tt.ptr<f32>>
    %slope = math.exp %saved : tensor<16x16xf32>
    %g = arith.mulf %g0, %slope : tensor<16x16xf32>
    %ks = tt.splat %k : i32 -> tensor<16x1xi32>
    %rowk = arith.muli %rows2, %ks : tensor<16x1xi32>
    %rowk16 = tt.broadcast %rowk : tensor<16x1xi32> -> tensor<16x16xi32>
    %kt = arith.divsi %k, %c16 : i32
    %bs = tt.splat %b : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %kt step %c1 : i32 {
      %k0 = arith.muli %i, %c16 : i32
      %k0s = tt.splat %k0 : i32 -> tensor<16xi32>
      %kr = arith.addi %k0s, %r : tensor<16xi32>
      %kr2 = tt.expand_dims %kr {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %krn = arith.muli %kr2, %ns : tensor<16x1xi32>
      %krn16 = tt.broadcast %krn : tensor<16x1xi32> -> tensor<16x16xi32>
      %boff = arith.addi %krn16, %cols16 : tensor<16x16xi32>
      %bp = tt.addptr %bs, %boff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %bv = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %bt = tt.trans %bv {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
      %d = tt.dot %g, %bt, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %kc = tt.expand_dims %kr {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %kc16 = tt.broadcast %kc : tensor<1x16xi32> -> tensor<16x16xi32>
      %aoff = arith.addi %rowk16, %kc16 : tensor<16x16xi32>
      %ap = tt.addptr %das, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
    }
    tt.return
  }
}


// -----

// Where contributions that share a product of tiles (one part's, as
// attention's dK and dV share the scores) mix products of fewer than 64 rows
// with products of 64 or more (Triton lowers them to two kinds of MMA on
// Hopper, and a tile loaded for both was miscompiled), only rows of values
// are staged: here dw's product of 64 rows takes da's of 16, the tile is not
// staged, and without it programs of their own would evaluate exp per
// iteration.
// REMARK: remark: da: not re-parallelized: its contribution evaluates 1 function (exp, erf, ...) per element
// CHECK-LABEL: tt.func public @staged_mixed
// CHECK-NOT: tt.store
// CHECK: math.exp
// CHECK: scf.for
// CHECK: tt.atomic_rmw fadd, relaxed, gpu, %{{.+}}, %{{.+}} : (tensor<16x16x!tt.ptr<f32>>
// CHECK: tt.return
module {
  tt.func public @staged_mixed(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %dc: !tt.ptr<f32> loc("dc"), %n: i32 loc("n"), %k: i32 loc("k"), %res: !tt.ptr<i8> loc("tritonad_residuals"), %tape: !tt.ptr<i8> loc("tritonad_tape"), %table: !tt.ptr<i64> loc("tritonad_regrid"), %w: !tt.ptr<f32> loc("w"), %dw: !tt.ptr<f32> loc("dw")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %ntiles = arith.divsi %n, %c16 : i32
    %pm = arith.divsi %pid, %ntiles : i32
    %pn = arith.remsi %pid, %ntiles : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %m0 = arith.muli %pm, %c16 : i32
    %m0s = tt.splat %m0 : i32 -> tensor<16xi32>
    %rows = arith.addi %m0s, %r : tensor<16xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %n0 = arith.muli %pn, %c16 : i32
    %n0s = tt.splat %n0 : i32 -> tensor<16xi32>
    %cols = arith.addi %n0s, %r : tensor<16xi32>
    %cols2 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %cols16 = tt.broadcast %cols2 : tensor<1x16xi32> -> tensor<16x16xi32>
    %ns = tt.splat %n : i32 -> tensor<16x1xi32>
    %rown = arith.muli %rows2, %ns : tensor<16x1xi32>
    %rown16 = tt.broadcast %rown : tensor<16x1xi32> -> tensor<16x16xi32>
    %coff = arith.addi %rown16, %cols16 : tensor<16x16xi32>
    %dcs = tt.splat %dc : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dcp = tt.addptr %dcs, %coff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %g0 = tt.load %dcp : tensor<16x16x!tt.ptr<f32>>
    %c1024 = arith.constant 1024 : i32
    %region = arith.muli %pid, %c1024 : i32
    %rp = tt.addptr %res, %region : !tt.ptr<i8>, i32
    %rf = tt.bitcast %rp : !tt.ptr<i8> -> !tt.ptr<f32>
    %rfs = tt.splat %rf : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %r256 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %r2d = tt.reshape %r256 : tensor<256xi32> -> tensor<16x16xi32>
    %rfp = tt.addptr %rfs, %r2d : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %saved = tt.load %rfp : tensor<16x16x!tt.ptr<f32>>
    %slope = math.exp %saved : tensor<16x16xf32>
    %g = arith.mulf %g0, %slope : tensor<16x16xf32>
    %ks = tt.splat %k : i32 -> tensor<16x1xi32>
    %rowk = arith.muli %rows2, %ks : tensor<16x1xi32>
    %rowk16 = tt.broadcast %rowk : tensor<16x1xi32> -> tensor<16x16xi32>
    %kt = arith.divsi %k, %c16 : i32
    %bs = tt.splat %b : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %kt step %c1 : i32 {
      %k0 = arith.muli %i, %c16 : i32
      %k0s = tt.splat %k0 : i32 -> tensor<16xi32>
      %kr = arith.addi %k0s, %r : tensor<16xi32>
      %kr2 = tt.expand_dims %kr {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %krn = arith.muli %kr2, %ns : tensor<16x1xi32>
      %krn16 = tt.broadcast %krn : tensor<16x1xi32> -> tensor<16x16xi32>
      %boff = arith.addi %krn16, %cols16 : tensor<16x16xi32>
      %bp = tt.addptr %bs, %boff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %bv = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %bt = tt.trans %bv {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
      %d = tt.dot %g, %bt, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %kc = tt.expand_dims %kr {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %kc16 = tt.broadcast %kc : tensor<1x16xi32> -> tensor<16x16xi32>
      %aoff = arith.addi %rowk16, %kc16 : tensor<16x16xi32>
      %ap = tt.addptr %das, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
      %r1024 = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>
      %woff = tt.reshape %r1024 : tensor<1024xi32> -> tensor<64x16xi32>
      %ws = tt.splat %w : !tt.ptr<f32> -> tensor<64x16x!tt.ptr<f32>>
      %wp = tt.addptr %ws, %woff : tensor<64x16x!tt.ptr<f32>>, tensor<64x16xi32>
      %wv = tt.load %wp : tensor<64x16x!tt.ptr<f32>>
      %zero64 = arith.constant dense<0.000000e+00> : tensor<64x16xf32>
      %wide = tt.dot %wv, %d, %zero64 : tensor<64x16xf32> * tensor<16x16xf32> -> tensor<64x16xf32>
      %dws = tt.splat %dw : !tt.ptr<f32> -> tensor<64x16x!tt.ptr<f32>>
      %dwp = tt.addptr %dws, %woff : tensor<64x16x!tt.ptr<f32>>, tensor<64x16xi32>
      %oldw = tt.atomic_rmw fadd, relaxed, gpu, %dwp, %wide : (tensor<64x16x!tt.ptr<f32>>, tensor<64x16xf32>) -> tensor<64x16xf32>
    }
    tt.return
  }
}




// -----

// A contribution of four products of tiles (three of them also what the
// forward's program carries): atomics where they are allowed; programs of its
// own in deterministic mode. Beside it, dk's contribution of one product
// (through the same key) gets programs of its own in either mode.
// REMARK: remark: da: not re-parallelized: its contribution takes 4 products of tiles per forward program
// REMARK: remark: dk: re-parallelized
// DET: remark: da: re-parallelized ({{.*}}which also sum 'dk'
// DET: remark: dk: re-parallelized ({{.*}}which also sum 'da'
// CHECK-LABEL: tt.func public @twoproducts
// CHECK: scf.if
// The forward's schedule keeps da's atomic; the part adds dk's sum.
// CHECK: tt.atomic_rmw fadd, relaxed, gpu, %{{.+}}, %{{.+}} :
// CHECK: } else {
// CHECK: tt.atomic_rmw fadd, relaxed, gpu, %{{.+}}, %{{.+}}, %{{.+}} :
// CHECK: tt.return
module {
  tt.func public @twoproducts(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %dk: !tt.ptr<f32> loc("dk"), %dc: !tt.ptr<f32> loc("dc"), %out: !tt.ptr<f32> loc("out"), %n: i32 loc("n"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %ntiles = arith.divsi %n, %c16 : i32
    %pm = arith.divsi %pid, %ntiles : i32
    %pn = arith.remsi %pid, %ntiles : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %m0 = arith.muli %pm, %c16 : i32
    %m0s = tt.splat %m0 : i32 -> tensor<16xi32>
    %rows = arith.addi %m0s, %r : tensor<16xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %n0 = arith.muli %pn, %c16 : i32
    %n0s = tt.splat %n0 : i32 -> tensor<16xi32>
    %cols = arith.addi %n0s, %r : tensor<16xi32>
    %cols2 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %cols16 = tt.broadcast %cols2 : tensor<1x16xi32> -> tensor<16x16xi32>
    %ns = tt.splat %n : i32 -> tensor<16x1xi32>
    %rown = arith.muli %rows2, %ns : tensor<16x1xi32>
    %rown16 = tt.broadcast %rown : tensor<16x1xi32> -> tensor<16x16xi32>
    %coff = arith.addi %rown16, %cols16 : tensor<16x16xi32>
    %dcs = tt.splat %dc : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dcp = tt.addptr %dcs, %coff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %g = tt.load %dcp : tensor<16x16x!tt.ptr<f32>>
    %ks = tt.splat %k : i32 -> tensor<16x1xi32>
    %rowk = arith.muli %rows2, %ks : tensor<16x1xi32>
    %rowk16 = tt.broadcast %rowk : tensor<16x1xi32> -> tensor<16x16xi32>
    %kt = arith.divsi %k, %c16 : i32
    %bs = tt.splat %b : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dks = tt.splat %dk : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %carried = scf.for %i = %c0 to %kt step %c1 iter_args(%acc = %zero) -> (tensor<16x16xf32>) : i32 {
      %k0 = arith.muli %i, %c16 : i32
      %k0s = tt.splat %k0 : i32 -> tensor<16xi32>
      %kr = arith.addi %k0s, %r : tensor<16xi32>
      %kr2 = tt.expand_dims %kr {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %krn = arith.muli %kr2, %ns : tensor<16x1xi32>
      %krn16 = tt.broadcast %krn : tensor<16x1xi32> -> tensor<16x16xi32>
      %boff = arith.addi %krn16, %cols16 : tensor<16x16xi32>
      %bp = tt.addptr %bs, %boff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %bv = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %bt = tt.trans %bv {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
      %s = tt.dot %g, %bt, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %e = math.exp %s : tensor<16x16xf32>
      %s2 = tt.dot %e, %bt, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %s3 = tt.dot %s2, %bt, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %d = tt.dot %s3, %bt, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %kc = tt.expand_dims %kr {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %kc16 = tt.broadcast %kc : tensor<1x16xi32> -> tensor<16x16xi32>
      %aoff = arith.addi %rowk16, %kc16 : tensor<16x16xi32>
      %ap = tt.addptr %das, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
      %dkp = tt.addptr %dks, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %oldk = tt.atomic_rmw fadd, relaxed, gpu, %dkp, %s : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
      %next = tt.dot %s3, %bv, %acc : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      scf.yield %next : tensor<16x16xf32>
    }
    %outs = tt.splat %out : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %outp = tt.addptr %outs, %coff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    tt.store %outp, %carried : tensor<16x16x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// A run-time exclusivity check (KernelBackward): a plain store taken when each
// address belongs to one program, its twin atomic otherwise (a loop stepping
// by the tile, as `for k in range(0, K, BLOCK_K)` spells it: dA[m, k] is one
// program's when the grid has one column of tiles). The parts take the
// accumulation whole, whatever the condition: the store and the condition go
// (left, the forward's programs would compute every product again for a
// store the condition masks off), the parts are the shadow's only writer
// (plain writes where the launch proves each element reached once), and the
// marks are dropped.
// REMARK: remark: da: re-parallelized (programs of its own{{.*}}plain read-add-writes where the launch finds each element reached once, else atomic adds)
// REMARK: remark: nothing remains in the forward's schedule
// CHECK-LABEL: tt.func public @twins
// CHECK-NOT: tritonad.when_exclusive
// CHECK: scf.if
// CHECK-NOT: tt.store
// CHECK-NOT: tt.get_num_programs
// CHECK: } else {
// CHECK: tt.dot
// CHECK: tt.store
// CHECK: tt.atomic_rmw
// CHECK-NOT: tritonad.unless_exclusive
// CHECK: tt.return
module {
  tt.func public @twins(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %dc: !tt.ptr<f32> loc("dc"), %n: i32 loc("n"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %ntiles = arith.divsi %n, %c16 : i32
    %pm = arith.divsi %pid, %ntiles : i32
    %pn = arith.remsi %pid, %ntiles : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %m0 = arith.muli %pm, %c16 : i32
    %m0s = tt.splat %m0 : i32 -> tensor<16xi32>
    %rows = arith.addi %m0s, %r : tensor<16xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %n0 = arith.muli %pn, %c16 : i32
    %n0s = tt.splat %n0 : i32 -> tensor<16xi32>
    %cols = arith.addi %n0s, %r : tensor<16xi32>
    %cols2 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %cols16 = tt.broadcast %cols2 : tensor<1x16xi32> -> tensor<16x16xi32>
    %ns = tt.splat %n : i32 -> tensor<16x1xi32>
    %rown = arith.muli %rows2, %ns : tensor<16x1xi32>
    %rown16 = tt.broadcast %rown : tensor<16x1xi32> -> tensor<16x16xi32>
    %coff = arith.addi %rown16, %cols16 : tensor<16x16xi32>
    %dcs = tt.splat %dc : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dcp = tt.addptr %dcs, %coff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %g = tt.load %dcp : tensor<16x16x!tt.ptr<f32>>
    %ks = tt.splat %k : i32 -> tensor<16x1xi32>
    %rowk = arith.muli %rows2, %ks : tensor<16x1xi32>
    %rowk16 = tt.broadcast %rowk : tensor<16x1xi32> -> tensor<16x16xi32>
    %kt = arith.divsi %k, %c16 : i32
    %bs = tt.splat %b : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %kt step %c1 : i32 {
      %k0 = arith.muli %i, %c16 : i32
      %k0s = tt.splat %k0 : i32 -> tensor<16xi32>
      %kr = arith.addi %k0s, %r : tensor<16xi32>
      %kr2 = tt.expand_dims %kr {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %krn = arith.muli %kr2, %ns : tensor<16x1xi32>
      %krn16 = tt.broadcast %krn : tensor<16x1xi32> -> tensor<16x16xi32>
      %boff = arith.addi %krn16, %cols16 : tensor<16x16xi32>
      %bp = tt.addptr %bs, %boff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %bv = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %bt = tt.trans %bv {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
      %d = tt.dot %g, %bt, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %kc = tt.expand_dims %kr {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %kc16 = tt.broadcast %kc : tensor<1x16xi32> -> tensor<16x16xi32>
      %aoff = arith.addi %rowk16, %kc16 : tensor<16x16xi32>
      %ap = tt.addptr %das, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %one = arith.constant 1 : i32
      %gy = tt.get_num_programs y : i32
      %excl = arith.cmpi eq, %gy, %one : i32
      %yes = arith.constant true
      %other = arith.xori %excl, %yes : i1
      %em = tt.splat %excl : i1 -> tensor<16x16xi1>
      %om = tt.splat %other : i1 -> tensor<16x16xi1>
      tt.store %ap, %d, %em {tritonad.when_exclusive} : tensor<16x16x!tt.ptr<f32>>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d, %om {tritonad.unless_exclusive} : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>, tensor<16x16xi1>) -> tensor<16x16xf32>
    }
    tt.return
  }
}

// -----

// The same twins as cleanup leaves them for an fp16 gradient read-added under
// a bounds mask: the twin reads the shadow, adds and stores; the condition of
// the atomic is the inverse comparison, not an xor; the mask holds the bounds
// and the condition in either order. The part takes the whole accumulation
// under the bounds alone, and the rounding the twins shared (now used once)
// fuses into the part's fp32 sum: each member's product adds into the
// accumulator, no product is rounded before it is summed.
// REMARK: remark: da: re-parallelized (programs of its own{{.*}}plain read-add-writes where the launch finds each element reached once, else atomic adds)
// REMARK: remark: nothing remains in the forward's schedule
// CHECK-LABEL: tt.func public @twins_masked_f16
// CHECK: scf.if
// CHECK-NOT: tt.store
// CHECK: } else {
// CHECK: scf.for
// CHECK-NOT: arith.truncf
// CHECK: tt.dot %{{.+}}, %{{.+}}, %arg{{[0-9]+}} : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
// CHECK: scf.yield
// CHECK: arith.truncf
// CHECK: tt.store
// CHECK: tt.return
module {
  tt.func public @twins_masked_f16(%b: !tt.ptr<f16> loc("b"), %da: !tt.ptr<f16> loc("da"), %dc: !tt.ptr<f16> loc("dc"), %m: i32 loc("m"), %n: i32 loc("n"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %zh = arith.constant dense<0.000000e+00> : tensor<16x16xf16>
    %pid = tt.get_program_id x : i32
    %ntiles = arith.divsi %n, %c16 : i32
    %pm = arith.divsi %pid, %ntiles : i32
    %pn = arith.remsi %pid, %ntiles : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %m0 = arith.muli %pm, %c16 : i32
    %m0s = tt.splat %m0 : i32 -> tensor<16xi32>
    %rows = arith.addi %m0s, %r : tensor<16xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %msp = tt.splat %m : i32 -> tensor<16x1xi32>
    %inm = arith.cmpi slt, %rows2, %msp : tensor<16x1xi32>
    %inm16 = tt.broadcast %inm : tensor<16x1xi1> -> tensor<16x16xi1>
    %n0 = arith.muli %pn, %c16 : i32
    %n0s = tt.splat %n0 : i32 -> tensor<16xi32>
    %cols = arith.addi %n0s, %r : tensor<16xi32>
    %cols2 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %cols16 = tt.broadcast %cols2 : tensor<1x16xi32> -> tensor<16x16xi32>
    %ns = tt.splat %n : i32 -> tensor<16x1xi32>
    %rown = arith.muli %rows2, %ns : tensor<16x1xi32>
    %rown16 = tt.broadcast %rown : tensor<16x1xi32> -> tensor<16x16xi32>
    %coff = arith.addi %rown16, %cols16 : tensor<16x16xi32>
    %dcs = tt.splat %dc : !tt.ptr<f16> -> tensor<16x16x!tt.ptr<f16>>
    %dcp = tt.addptr %dcs, %coff : tensor<16x16x!tt.ptr<f16>>, tensor<16x16xi32>
    %g = tt.load %dcp, %inm16, %zh : tensor<16x16x!tt.ptr<f16>>
    %ks = tt.splat %k : i32 -> tensor<16x1xi32>
    %rowk = arith.muli %rows2, %ks : tensor<16x1xi32>
    %rowk16 = tt.broadcast %rowk : tensor<16x1xi32> -> tensor<16x16xi32>
    %kt = arith.divsi %k, %c16 : i32
    %bs = tt.splat %b : !tt.ptr<f16> -> tensor<16x16x!tt.ptr<f16>>
    %das = tt.splat %da : !tt.ptr<f16> -> tensor<16x16x!tt.ptr<f16>>
    %gx = tt.get_num_programs x : i32
    %excl = arith.cmpi sle, %ntiles, %c1 : i32
    %other = arith.cmpi sgt, %ntiles, %c1 : i32
    %em = tt.splat %excl : i1 -> tensor<16x16xi1>
    %om = tt.splat %other : i1 -> tensor<16x16xi1>
    %emask = arith.andi %inm16, %em : tensor<16x16xi1>
    %omask = arith.andi %om, %inm16 : tensor<16x16xi1>
    scf.for %i = %c0 to %kt step %c1 : i32 {
      %k0 = arith.muli %i, %c16 : i32
      %k0s = tt.splat %k0 : i32 -> tensor<16xi32>
      %kr = arith.addi %k0s, %r : tensor<16xi32>
      %kr2 = tt.expand_dims %kr {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %krn = arith.muli %kr2, %ns : tensor<16x1xi32>
      %krn16 = tt.broadcast %krn : tensor<16x1xi32> -> tensor<16x16xi32>
      %boff = arith.addi %krn16, %cols16 : tensor<16x16xi32>
      %bp = tt.addptr %bs, %boff : tensor<16x16x!tt.ptr<f16>>, tensor<16x16xi32>
      %bv = tt.load %bp : tensor<16x16x!tt.ptr<f16>>
      %bt = tt.trans %bv {order = array<i32: 1, 0>} : tensor<16x16xf16> -> tensor<16x16xf16>
      %d = tt.dot %g, %bt, %zero : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
      %dh = arith.truncf %d : tensor<16x16xf32> to tensor<16x16xf16>
      %kc = tt.expand_dims %kr {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %kc16 = tt.broadcast %kc : tensor<1x16xi32> -> tensor<16x16xi32>
      %aoff = arith.addi %rowk16, %kc16 : tensor<16x16xi32>
      %ap = tt.addptr %das, %aoff : tensor<16x16x!tt.ptr<f16>>, tensor<16x16xi32>
      %was = tt.load %ap, %emask, %zh : tensor<16x16x!tt.ptr<f16>>
      %now = arith.addf %was, %dh : tensor<16x16xf16>
      tt.store %ap, %now, %emask {tritonad.when_exclusive} : tensor<16x16x!tt.ptr<f16>>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %dh, %omask {tritonad.unless_exclusive} : (tensor<16x16x!tt.ptr<f16>>, tensor<16x16xf16>, tensor<16x16xi1>) -> tensor<16x16xf16>
    }
    tt.return
  }
}

// -----

// Rows wrapped at the tensor's extent, as the matmul tutorial spells its
// offsets: `(pid_m * BLOCK_M + arange) % M`. The coverage takes the
// remainder as its dividend and records the bound as a wrap, which the launch
// checks no row reaches (M a multiple of the tile: the remainder changes
// nothing, each element has one writer); otherwise the part adds atomically.
// REMARK: remark: da: re-parallelized (programs of its own{{.*}}plain read-add-writes where the launch finds each element reached once, else atomic adds)
// REMARK: remark: part da: grouped by 1 key value(s), launch 1 of the parts, written once where no offset wraps or the mask leaves out the lanes that do (1 remainder(s))
// CHECK-LABEL: tt.func public @wrapped_rows
// CHECK: } else {
// CHECK: arith.remsi %{{.+}}, %{{.+}} : tensor<16xi32>
// CHECK: tt.store
// CHECK: tt.atomic_rmw
module {
  tt.func public @wrapped_rows(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %dc: !tt.ptr<f32> loc("dc"), %m: i32 loc("m"), %n: i32 loc("n"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %ntiles = arith.divsi %n, %c16 : i32
    %pm = arith.divsi %pid, %ntiles : i32
    %pn = arith.remsi %pid, %ntiles : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %m0 = arith.muli %pm, %c16 : i32
    %m0s = tt.splat %m0 : i32 -> tensor<16xi32>
    %unwrapped = arith.addi %m0s, %r : tensor<16xi32>
    %ms = tt.splat %m : i32 -> tensor<16xi32>
    %rows = arith.remsi %unwrapped, %ms : tensor<16xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %n0 = arith.muli %pn, %c16 : i32
    %n0s = tt.splat %n0 : i32 -> tensor<16xi32>
    %cols = arith.addi %n0s, %r : tensor<16xi32>
    %cols2 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %cols16 = tt.broadcast %cols2 : tensor<1x16xi32> -> tensor<16x16xi32>
    %ns = tt.splat %n : i32 -> tensor<16x1xi32>
    %rown = arith.muli %rows2, %ns : tensor<16x1xi32>
    %rown16 = tt.broadcast %rown : tensor<16x1xi32> -> tensor<16x16xi32>
    %coff = arith.addi %rown16, %cols16 : tensor<16x16xi32>
    %dcs = tt.splat %dc : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dcp = tt.addptr %dcs, %coff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %g = tt.load %dcp : tensor<16x16x!tt.ptr<f32>>
    %ks = tt.splat %k : i32 -> tensor<16x1xi32>
    %rowk = arith.muli %rows2, %ks : tensor<16x1xi32>
    %rowk16 = tt.broadcast %rowk : tensor<16x1xi32> -> tensor<16x16xi32>
    %kt = arith.divsi %k, %c16 : i32
    %bs = tt.splat %b : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %kt step %c1 : i32 {
      %k0 = arith.muli %i, %c16 : i32
      %k0s = tt.splat %k0 : i32 -> tensor<16xi32>
      %kr = arith.addi %k0s, %r : tensor<16xi32>
      %kr2 = tt.expand_dims %kr {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %krn = arith.muli %kr2, %ns : tensor<16x1xi32>
      %krn16 = tt.broadcast %krn : tensor<16x1xi32> -> tensor<16x16xi32>
      %boff = arith.addi %krn16, %cols16 : tensor<16x16xi32>
      %bp = tt.addptr %bs, %boff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %bv = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %bt = tt.trans %bv {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
      %d = tt.dot %g, %bt, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %kc = tt.expand_dims %kr {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %kc16 = tt.broadcast %kc : tensor<1x16xi32> -> tensor<16x16xi32>
      %aoff = arith.addi %rowk16, %kc16 : tensor<16x16xi32>
      %ap = tt.addptr %das, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
    }
    tt.return
  }
}

// -----

// The tutorial's wrapped rows with the upstream gradient loaded as its
// store masks it (`unwrapped < M`, 0 elsewhere): the rows past M contribute
// zeros, so the part's writes leave them out (the mask gains the row
// conjunct, a clamp of the same offsets by the same bound as the wrap), and
// the launch finds each element written once at any M.
// REMARK: remark: part da: grouped by 1 key value(s), launch 1 of the parts, written once where no offset wraps or the mask leaves out the lanes that do (1 remainder(s))
// CHECK-LABEL: tt.func public @wrapped_rows_zero_past_m
// CHECK: } else {
// (the members' loop, then the writes)
// CHECK: scf.yield %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} :
// CHECK-NEXT: }
// CHECK: %[[UNWRAPPED:.+]] = arith.addi
// CHECK: arith.remsi %[[UNWRAPPED]]
// CHECK: %[[ROWS:.+]] = tt.expand_dims %[[UNWRAPPED]] {axis = 1 : i32}
// CHECK: %[[INSIDE:.+]] = arith.cmpi slt, %[[ROWS]]
// CHECK: %[[WIDE:.+]] = tt.broadcast %[[INSIDE]] : tensor<16x1xi1> -> tensor<16x16xi1>
// CHECK: arith.andi %[[WIDE]],
// CHECK: tt.store
// CHECK: tt.atomic_rmw
module {
  tt.func public @wrapped_rows_zero_past_m(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %dc: !tt.ptr<f32> loc("dc"), %m: i32 loc("m"), %n: i32 loc("n"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %ntiles = arith.divsi %n, %c16 : i32
    %pm = arith.divsi %pid, %ntiles : i32
    %pn = arith.remsi %pid, %ntiles : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %m0 = arith.muli %pm, %c16 : i32
    %m0s = tt.splat %m0 : i32 -> tensor<16xi32>
    %unwrapped = arith.addi %m0s, %r : tensor<16xi32>
    %ms = tt.splat %m : i32 -> tensor<16xi32>
    %rows = arith.remsi %unwrapped, %ms : tensor<16xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %n0 = arith.muli %pn, %c16 : i32
    %n0s = tt.splat %n0 : i32 -> tensor<16xi32>
    %cols = arith.addi %n0s, %r : tensor<16xi32>
    %cols2 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %cols16 = tt.broadcast %cols2 : tensor<1x16xi32> -> tensor<16x16xi32>
    %ns = tt.splat %n : i32 -> tensor<16x1xi32>
    %rown = arith.muli %rows2, %ns : tensor<16x1xi32>
    %rown16 = tt.broadcast %rown : tensor<16x1xi32> -> tensor<16x16xi32>
    %coff = arith.addi %rown16, %cols16 : tensor<16x16xi32>
    %dcs = tt.splat %dc : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dcp = tt.addptr %dcs, %coff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %ms2 = tt.splat %m : i32 -> tensor<16x1xi32>
    %urows = tt.expand_dims %unwrapped {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %inm = arith.cmpi slt, %urows, %ms2 : tensor<16x1xi32>
    %inm16 = tt.broadcast %inm : tensor<16x1xi1> -> tensor<16x16xi1>
    %g = tt.load %dcp, %inm16, %zero : tensor<16x16x!tt.ptr<f32>>
    %ks = tt.splat %k : i32 -> tensor<16x1xi32>
    %rowk = arith.muli %rows2, %ks : tensor<16x1xi32>
    %rowk16 = tt.broadcast %rowk : tensor<16x1xi32> -> tensor<16x16xi32>
    %kt = arith.divsi %k, %c16 : i32
    %bs = tt.splat %b : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %kt step %c1 : i32 {
      %k0 = arith.muli %i, %c16 : i32
      %k0s = tt.splat %k0 : i32 -> tensor<16xi32>
      %kr = arith.addi %k0s, %r : tensor<16xi32>
      %kr2 = tt.expand_dims %kr {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %krn = arith.muli %kr2, %ns : tensor<16x1xi32>
      %krn16 = tt.broadcast %krn : tensor<16x1xi32> -> tensor<16x16xi32>
      %boff = arith.addi %krn16, %cols16 : tensor<16x16xi32>
      %bp = tt.addptr %bs, %boff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %bv = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %bt = tt.trans %bv {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
      %d = tt.dot %g, %bt, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %kc = tt.expand_dims %kr {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %kc16 = tt.broadcast %kc : tensor<1x16xi32> -> tensor<16x16xi32>
      %aoff = arith.addi %rowk16, %kc16 : tensor<16x16xi32>
      %ap = tt.addptr %das, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
    }
    tt.return
  }
}


// -----

// The upstream gradient loaded on every other row (0 elsewhere): the rows it
// leaves out contribute zeros, but the part's coverage cannot read that
// condition as a bound, so the part writes under the atomic's own mask, whose
// coverage it reads: plain where the launch finds each element reached once.
// REMARK: remark: part da: grouped by 1 key value(s), launch 1 of the parts
// CHECK-LABEL: tt.func public @zero_rows_unreadable
// CHECK: } else {
// CHECK: tt.store
// CHECK: tt.atomic_rmw
module {
  tt.func public @zero_rows_unreadable(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %dc: !tt.ptr<f32> loc("dc"), %m: i32 loc("m"), %n: i32 loc("n"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %ntiles = arith.divsi %n, %c16 : i32
    %pm = arith.divsi %pid, %ntiles : i32
    %pn = arith.remsi %pid, %ntiles : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %m0 = arith.muli %pm, %c16 : i32
    %m0s = tt.splat %m0 : i32 -> tensor<16xi32>
    %unwrapped = arith.addi %m0s, %r : tensor<16xi32>
    %ms = tt.splat %m : i32 -> tensor<16xi32>
    %r0 = arith.constant dense<0> : tensor<16xi32>
    %rows = arith.addi %unwrapped, %r0 : tensor<16xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %n0 = arith.muli %pn, %c16 : i32
    %n0s = tt.splat %n0 : i32 -> tensor<16xi32>
    %cols = arith.addi %n0s, %r : tensor<16xi32>
    %cols2 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %cols16 = tt.broadcast %cols2 : tensor<1x16xi32> -> tensor<16x16xi32>
    %ns = tt.splat %n : i32 -> tensor<16x1xi32>
    %rown = arith.muli %rows2, %ns : tensor<16x1xi32>
    %rown16 = tt.broadcast %rown : tensor<16x1xi32> -> tensor<16x16xi32>
    %coff = arith.addi %rown16, %cols16 : tensor<16x16xi32>
    %dcs = tt.splat %dc : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dcp = tt.addptr %dcs, %coff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %ms2 = tt.splat %m : i32 -> tensor<16x1xi32>
    %urows = tt.expand_dims %unwrapped {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %two = arith.constant dense<2> : tensor<16x1xi32>
    %zero1 = arith.constant dense<0> : tensor<16x1xi32>
    %parity = arith.remsi %urows, %two : tensor<16x1xi32>
    %inm = arith.cmpi eq, %parity, %zero1 : tensor<16x1xi32>
    %inm16 = tt.broadcast %inm : tensor<16x1xi1> -> tensor<16x16xi1>
    %g = tt.load %dcp, %inm16, %zero : tensor<16x16x!tt.ptr<f32>>
    %ks = tt.splat %k : i32 -> tensor<16x1xi32>
    %rowk = arith.muli %rows2, %ks : tensor<16x1xi32>
    %rowk16 = tt.broadcast %rowk : tensor<16x1xi32> -> tensor<16x16xi32>
    %kt = arith.divsi %k, %c16 : i32
    %bs = tt.splat %b : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %kt step %c1 : i32 {
      %k0 = arith.muli %i, %c16 : i32
      %k0s = tt.splat %k0 : i32 -> tensor<16xi32>
      %kr = arith.addi %k0s, %r : tensor<16xi32>
      %kr2 = tt.expand_dims %kr {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %krn = arith.muli %kr2, %ns : tensor<16x1xi32>
      %krn16 = tt.broadcast %krn : tensor<16x1xi32> -> tensor<16x16xi32>
      %boff = arith.addi %krn16, %cols16 : tensor<16x16xi32>
      %bp = tt.addptr %bs, %boff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %bv = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %bt = tt.trans %bv {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
      %d = tt.dot %g, %bt, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %kc = tt.expand_dims %kr {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %kc16 = tt.broadcast %kc : tensor<1x16xi32> -> tensor<16x16xi32>
      %aoff = arith.addi %rowk16, %kc16 : tensor<16x16xi32>
      %ap = tt.addptr %das, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
    }
    tt.return
  }
}



// -----

// dB's contribution in the tutorial's spelling (into `dk` here): the A tile's rows are
// wrapped at M (`(pid_m * BLOCK_M + arange) % M`, no row mask), and each is a
// factor of a product whose other factor, dC loaded as the store masks it,
// is 0 past M along the contraction. The rows past M only meet zeros, so the
// tile is loaded at the unwrapped rows under `rows < M`, 0 past M: the same
// products, from contiguous addresses (no remainder left in the function).
// REMARK: remark: 1 load(s) of tiles wrapped at an extent whose lanes past it only meet zeros in products: loaded unwrapped, 0 past the extent
// REMARK: remark: dk: re-parallelized
// CHECK-LABEL: tt.func public @wrapped_tile_meets_zeros
// CHECK-NOT: arith.remsi %{{.+}} : tensor<16xi32>
// CHECK: %[[INSIDE:.+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : tensor<16x1xi32>
// CHECK: %[[WIDE:.+]] = tt.broadcast %[[INSIDE]] : tensor<16x1xi1> -> tensor<16x16xi1>
// CHECK: tt.load %{{.+}}, %[[WIDE]], %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// CHECK-NOT: arith.remsi %{{.+}} : tensor<16xi32>
// CHECK: tt.return
module {
  tt.func public @wrapped_tile_meets_zeros(%a: !tt.ptr<f32> loc("a"), %dk: !tt.ptr<f32> loc("dk"), %dc: !tt.ptr<f32> loc("dc"), %m: i32 loc("m"), %n: i32 loc("n"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %ntiles = arith.divsi %n, %c16 : i32
    %pm = arith.divsi %pid, %ntiles : i32
    %pn = arith.remsi %pid, %ntiles : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %m0 = arith.muli %pm, %c16 : i32
    %m0s = tt.splat %m0 : i32 -> tensor<16xi32>
    %unwrapped = arith.addi %m0s, %r : tensor<16xi32>
    %ms = tt.splat %m : i32 -> tensor<16xi32>
    %rows = arith.remsi %unwrapped, %ms : tensor<16xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %n0 = arith.muli %pn, %c16 : i32
    %n0s = tt.splat %n0 : i32 -> tensor<16xi32>
    %cols = arith.addi %n0s, %r : tensor<16xi32>
    %cols2 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %cols16 = tt.broadcast %cols2 : tensor<1x16xi32> -> tensor<16x16xi32>
    %urows = tt.expand_dims %unwrapped {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %ns = tt.splat %n : i32 -> tensor<16x1xi32>
    %urown = arith.muli %urows, %ns : tensor<16x1xi32>
    %urown16 = tt.broadcast %urown : tensor<16x1xi32> -> tensor<16x16xi32>
    %goff = arith.addi %urown16, %cols16 : tensor<16x16xi32>
    %dcs = tt.splat %dc : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dcp = tt.addptr %dcs, %goff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %ms2 = tt.splat %m : i32 -> tensor<16x1xi32>
    %inm = arith.cmpi slt, %urows, %ms2 : tensor<16x1xi32>
    %inm16 = tt.broadcast %inm : tensor<16x1xi1> -> tensor<16x16xi1>
    %g = tt.load %dcp, %inm16, %zero : tensor<16x16x!tt.ptr<f32>>
    %ks = tt.splat %k : i32 -> tensor<16x1xi32>
    %rowk = arith.muli %rows2, %ks : tensor<16x1xi32>
    %rowk16 = tt.broadcast %rowk : tensor<16x1xi32> -> tensor<16x16xi32>
    %kt = arith.divsi %k, %c16 : i32
    %as = tt.splat %a : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dbs = tt.splat %dk : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %kt step %c1 : i32 {
      %k0 = arith.muli %i, %c16 : i32
      %k0s = tt.splat %k0 : i32 -> tensor<16xi32>
      %kr = arith.addi %k0s, %r : tensor<16xi32>
      %kc = tt.expand_dims %kr {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %kc16 = tt.broadcast %kc : tensor<1x16xi32> -> tensor<16x16xi32>
      %aoff = arith.addi %rowk16, %kc16 : tensor<16x16xi32>
      %ap = tt.addptr %as, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %av = tt.load %ap : tensor<16x16x!tt.ptr<f32>>
      %at = tt.trans %av {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
      %d = tt.dot %at, %g, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %kr2 = tt.expand_dims %kr {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %krn = arith.muli %kr2, %ns : tensor<16x1xi32>
      %krn16 = tt.broadcast %krn : tensor<16x1xi32> -> tensor<16x16xi32>
      %boff = arith.addi %krn16, %cols16 : tensor<16x16xi32>
      %bp = tt.addptr %dbs, %boff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %bp, %d : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
    }
    tt.return
  }
}

// -----

// The same, but the wrapped rows also reach the A tile's address along its
// other axis: which lanes wrap is not one axis's, so the load is not
// unwrapped (its remainder stays).
// CHECK-LABEL: tt.func public @wrapped_tile_both_axes
// CHECK: arith.remsi %{{.+}}, %{{.+}} : tensor<16xi32>
// CHECK: tt.return
module {
  tt.func public @wrapped_tile_both_axes(%a: !tt.ptr<f32> loc("a"), %dk: !tt.ptr<f32> loc("dk"), %dc: !tt.ptr<f32> loc("dc"), %m: i32 loc("m"), %n: i32 loc("n"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %ntiles = arith.divsi %n, %c16 : i32
    %pm = arith.divsi %pid, %ntiles : i32
    %pn = arith.remsi %pid, %ntiles : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %m0 = arith.muli %pm, %c16 : i32
    %m0s = tt.splat %m0 : i32 -> tensor<16xi32>
    %unwrapped = arith.addi %m0s, %r : tensor<16xi32>
    %ms = tt.splat %m : i32 -> tensor<16xi32>
    %rows = arith.remsi %unwrapped, %ms : tensor<16xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %n0 = arith.muli %pn, %c16 : i32
    %n0s = tt.splat %n0 : i32 -> tensor<16xi32>
    %cols = arith.addi %n0s, %r : tensor<16xi32>
    %cols2 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %cols16 = tt.broadcast %cols2 : tensor<1x16xi32> -> tensor<16x16xi32>
    %urows = tt.expand_dims %unwrapped {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %ns = tt.splat %n : i32 -> tensor<16x1xi32>
    %urown = arith.muli %urows, %ns : tensor<16x1xi32>
    %urown16 = tt.broadcast %urown : tensor<16x1xi32> -> tensor<16x16xi32>
    %goff = arith.addi %urown16, %cols16 : tensor<16x16xi32>
    %dcs = tt.splat %dc : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dcp = tt.addptr %dcs, %goff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %ms2 = tt.splat %m : i32 -> tensor<16x1xi32>
    %inm = arith.cmpi slt, %urows, %ms2 : tensor<16x1xi32>
    %inm16 = tt.broadcast %inm : tensor<16x1xi1> -> tensor<16x16xi1>
    %g = tt.load %dcp, %inm16, %zero : tensor<16x16x!tt.ptr<f32>>
    %ks = tt.splat %k : i32 -> tensor<16x1xi32>
    %rowk = arith.muli %rows2, %ks : tensor<16x1xi32>
    %rowk16 = tt.broadcast %rowk : tensor<16x1xi32> -> tensor<16x16xi32>
    %kt = arith.divsi %k, %c16 : i32
    %as = tt.splat %a : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dbs = tt.splat %dk : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %kt step %c1 : i32 {
      %k0 = arith.muli %i, %c16 : i32
      %k0s = tt.splat %k0 : i32 -> tensor<16xi32>
      %kr = arith.addi %k0s, %r : tensor<16xi32>
      %kc = tt.expand_dims %kr {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %kc16 = tt.broadcast %kc : tensor<1x16xi32> -> tensor<16x16xi32>
      %rowsc = tt.expand_dims %rows {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %rowsc16 = tt.broadcast %rowsc : tensor<1x16xi32> -> tensor<16x16xi32>
      %aoff0 = arith.addi %rowk16, %kc16 : tensor<16x16xi32>
      %aoff = arith.addi %aoff0, %rowsc16 : tensor<16x16xi32>
      %ap = tt.addptr %as, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %av = tt.load %ap : tensor<16x16x!tt.ptr<f32>>
      %at = tt.trans %av {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
      %d = tt.dot %at, %g, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %kr2 = tt.expand_dims %kr {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %krn = arith.muli %kr2, %ns : tensor<16x1xi32>
      %krn16 = tt.broadcast %krn : tensor<16x1xi32> -> tensor<16x16xi32>
      %boff = arith.addi %krn16, %cols16 : tensor<16x16xi32>
      %bp = tt.addptr %dbs, %boff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %bp, %d : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
    }
    tt.return
  }
}


// -----

// A store marked as the twin whose condition is not the atomic's complement
// is not taken for one: it stays in the forward's schedule, and the part adds
// under the atomic's own mask (one atomic add per element: not the only writer).
// REMARK: remark: da: re-parallelized (programs of its own{{.*}}where the launch does not prove each address one program's (the forward's programs keep the plain write taken where it does: its exclusive twin write, under the complementary condition, was not found){{.*}}one atomic add per element, uncontended)
// REMARK: remark: the forward's schedule remains
// CHECK-LABEL: tt.func public @twins_not_complementary
// CHECK: scf.if
// CHECK: tt.store
// CHECK: } else {
// CHECK: tt.atomic_rmw
module {
  tt.func public @twins_not_complementary(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %dc: !tt.ptr<f32> loc("dc"), %n: i32 loc("n"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pid = tt.get_program_id x : i32
    %ntiles = arith.divsi %n, %c16 : i32
    %pm = arith.divsi %pid, %ntiles : i32
    %pn = arith.remsi %pid, %ntiles : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %m0 = arith.muli %pm, %c16 : i32
    %m0s = tt.splat %m0 : i32 -> tensor<16xi32>
    %rows = arith.addi %m0s, %r : tensor<16xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %n0 = arith.muli %pn, %c16 : i32
    %n0s = tt.splat %n0 : i32 -> tensor<16xi32>
    %cols = arith.addi %n0s, %r : tensor<16xi32>
    %cols2 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %cols16 = tt.broadcast %cols2 : tensor<1x16xi32> -> tensor<16x16xi32>
    %ns = tt.splat %n : i32 -> tensor<16x1xi32>
    %rown = arith.muli %rows2, %ns : tensor<16x1xi32>
    %rown16 = tt.broadcast %rown : tensor<16x1xi32> -> tensor<16x16xi32>
    %coff = arith.addi %rown16, %cols16 : tensor<16x16xi32>
    %dcs = tt.splat %dc : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dcp = tt.addptr %dcs, %coff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %g = tt.load %dcp : tensor<16x16x!tt.ptr<f32>>
    %ks = tt.splat %k : i32 -> tensor<16x1xi32>
    %rowk = arith.muli %rows2, %ks : tensor<16x1xi32>
    %rowk16 = tt.broadcast %rowk : tensor<16x1xi32> -> tensor<16x16xi32>
    %kt = arith.divsi %k, %c16 : i32
    %bs = tt.splat %b : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %kt step %c1 : i32 {
      %k0 = arith.muli %i, %c16 : i32
      %k0s = tt.splat %k0 : i32 -> tensor<16xi32>
      %kr = arith.addi %k0s, %r : tensor<16xi32>
      %kr2 = tt.expand_dims %kr {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %krn = arith.muli %kr2, %ns : tensor<16x1xi32>
      %krn16 = tt.broadcast %krn : tensor<16x1xi32> -> tensor<16x16xi32>
      %boff = arith.addi %krn16, %cols16 : tensor<16x16xi32>
      %bp = tt.addptr %bs, %boff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %bv = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
      %bt = tt.trans %bv {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
      %d = tt.dot %g, %bt, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %kc = tt.expand_dims %kr {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %kc16 = tt.broadcast %kc : tensor<1x16xi32> -> tensor<16x16xi32>
      %aoff = arith.addi %rowk16, %kc16 : tensor<16x16xi32>
      %ap = tt.addptr %das, %aoff : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %gy = tt.get_num_programs y : i32
      %excl = arith.cmpi eq, %gy, %c1 : i32
      %gz = tt.get_num_programs z : i32
      %other = arith.cmpi ne, %gz, %c1 : i32
      %em = tt.splat %excl : i1 -> tensor<16x16xi1>
      %om = tt.splat %other : i1 -> tensor<16x16xi1>
      tt.store %ap, %d, %em {tritonad.when_exclusive} : tensor<16x16x!tt.ptr<f32>>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d, %om {tritonad.unless_exclusive} : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>, tensor<16x16xi1>) -> tensor<16x16xf32>
    }
    tt.return
  }
}


// -----

// A contraction deeper than 128 bytes (the member's 128 columns of fp16) is
// summed in passes over 64-deep sub-tiles, as a hand-written kernel steps its
// contraction: one loop takes members and passes (t: member t / 2, pass
// t % 2), each operand is loaded at the sub-tile's size (the range of columns
// shifted by pass * 64, through a reshape that adds a unit dimension), so a
// pipeline stage holds half the bytes. The carried pointers step by the
// pass's 64 columns, or at a member's last pass by the member's step less 64.
// REMARK: remark: da: re-parallelized (programs of its own, one per tile of the gradient and 4 iterations of the loop at {{.+}}, contracting each member's tiles in 2 passes of 64
// CHECK-LABEL: tt.func public @deep
// CHECK: %[[AFFINE:.+]] = arith.cmpi ne, %{{.+}}, %c0_i32 : i32
// CHECK: scf.if %[[AFFINE]] {
// CHECK:   tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
// CHECK:   %[[ACROSS:.+]] = arith.subi %{{.+}}, %c64_i32 : i32
// CHECK:   scf.for %[[T:[^ ]+]] = %c0_i32 to %{{.+}} step %c1_i32 iter_args({{.+}}) -> (tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x64x!tt.ptr<f16>>
// CHECK:     %[[PASS:.+]] = arith.remsi %[[T]], %c2_i32 : i32
// CHECK:     %[[G:.+]] = tt.load %{{.+}} : tensor<32x64x!tt.ptr<f16>>
// CHECK:     tt.load %{{.+}} : tensor<32x64x!tt.ptr<f16>>
// CHECK:     tt.trans %{{.+}} : tensor<32x64xf16> -> tensor<64x32xf16>
// CHECK:     tt.dot %[[G]], %{{.+}}, %arg{{.+}} : tensor<32x64xf16> * tensor<64x32xf16> -> tensor<32x32xf32>
// CHECK:     %[[LAST:.+]] = arith.cmpi eq, %[[PASS]], %c1_i32 : i32
// CHECK:     arith.select %[[LAST]], %{{.+}}, %c64_i32 : i32
// CHECK-NOT: scf.for
// The table's path (members read from it) is split alike.
// CHECK: } else {
// CHECK: scf.for %[[T2:[^ ]+]] = %c0_i32 to %{{.+}} step %c1_i32
// CHECK:   arith.divsi %[[T2]], %c2_i32 : i32
// CHECK:   arith.remsi %[[T2]], %c2_i32 : i32
// CHECK:   tt.load {{.*}} : !tt.ptr<i64>
// CHECK-COUNT-4: tt.dot {{.+}} : tensor<32x64xf16> * tensor<64x32xf16> -> tensor<32x32xf32>
// CHECK: tt.return
module {
  tt.func public @deep(%b: !tt.ptr<f16> loc("b"), %da: !tt.ptr<f32> loc("da"), %dc: !tt.ptr<f16> loc("dc"), %n: i32 loc("n"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c32 = arith.constant 32 : i32
    %c128 = arith.constant 128 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<32x32xf32>
    %pid = tt.get_program_id x : i32
    %ntiles = arith.divsi %n, %c128 : i32
    %pm = arith.divsi %pid, %ntiles : i32
    %pn = arith.remsi %pid, %ntiles : i32
    %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %rn = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %m0 = arith.muli %pm, %c32 : i32
    %m0s = tt.splat %m0 : i32 -> tensor<32xi32>
    %rows = arith.addi %m0s, %r : tensor<32xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %n0 = arith.muli %pn, %c128 : i32
    %n0s = tt.splat %n0 : i32 -> tensor<128xi32>
    %cols = arith.addi %n0s, %rn : tensor<128xi32>
    %cols2 = tt.reshape %cols : tensor<128xi32> -> tensor<1x128xi32>
    %cols128 = tt.broadcast %cols2 : tensor<1x128xi32> -> tensor<32x128xi32>
    %ns = tt.splat %n : i32 -> tensor<32x1xi32>
    %rown = arith.muli %rows2, %ns : tensor<32x1xi32>
    %rown128 = tt.broadcast %rown : tensor<32x1xi32> -> tensor<32x128xi32>
    %coff = arith.addi %rown128, %cols128 : tensor<32x128xi32>
    %dcs = tt.splat %dc : !tt.ptr<f16> -> tensor<32x128x!tt.ptr<f16>>
    %dcp = tt.addptr %dcs, %coff : tensor<32x128x!tt.ptr<f16>>, tensor<32x128xi32>
    %g = tt.load %dcp : tensor<32x128x!tt.ptr<f16>>
    %ks = tt.splat %k : i32 -> tensor<32x1xi32>
    %rowk = arith.muli %rows2, %ks : tensor<32x1xi32>
    %rowk32 = tt.broadcast %rowk : tensor<32x1xi32> -> tensor<32x32xi32>
    %kt = arith.divsi %k, %c32 : i32
    %bs = tt.splat %b : !tt.ptr<f16> -> tensor<32x128x!tt.ptr<f16>>
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
    scf.for %i = %c0 to %kt step %c1 : i32 {
      %k0 = arith.muli %i, %c32 : i32
      %k0s = tt.splat %k0 : i32 -> tensor<32xi32>
      %kr = arith.addi %k0s, %r : tensor<32xi32>
      %kr2 = tt.expand_dims %kr {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %krn = arith.muli %kr2, %ns : tensor<32x1xi32>
      %krn128 = tt.broadcast %krn : tensor<32x1xi32> -> tensor<32x128xi32>
      %boff = arith.addi %krn128, %cols128 : tensor<32x128xi32>
      %bp = tt.addptr %bs, %boff : tensor<32x128x!tt.ptr<f16>>, tensor<32x128xi32>
      %bv = tt.load %bp : tensor<32x128x!tt.ptr<f16>>
      %bt = tt.trans %bv {order = array<i32: 1, 0>} : tensor<32x128xf16> -> tensor<128x32xf16>
      %d = tt.dot %g, %bt, %zero : tensor<32x128xf16> * tensor<128x32xf16> -> tensor<32x32xf32>
      %kc = tt.expand_dims %kr {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %kc32 = tt.broadcast %kc : tensor<1x32xi32> -> tensor<32x32xi32>
      %aoff = arith.addi %rowk32, %kc32 : tensor<32x32xi32>
      %ap = tt.addptr %das, %aoff : tensor<32x32x!tt.ptr<f32>>, tensor<32x32xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %ap, %d : (tensor<32x32x!tt.ptr<f32>>, tensor<32x32xf32>) -> tensor<32x32xf32>
    }
    tt.return
  }
}

// -----

// Attention's shape: query block m (program x) of head h (program y) at key
// block i adds p^T dO to dV[i] and p^T q to dK[i], p = exp(q k_i^T), and
// carries its own dQ. dK's and dV's addresses depend on the program through
// the same key (the head's offset): one part sums both, computing each
// member's p once; dQ stays in the forward's schedule. Measured slower than
// atomics for attention, so taken in deterministic mode only.
// REMARK: remark: dv: not re-parallelized: its contribution takes 2 products of tiles per forward program
// REMARK: remark: dk: not re-parallelized: its contribution takes 2 products of tiles per forward program
// DET: remark: dv: re-parallelized (programs of its own, one per tile of the gradient and 4 iterations of the loop at {{.*}}, which also sum 'dk' from the same members
// DET: remark: dk: re-parallelized (programs of its own, one per tile of the gradient and 4 iterations of the loop at {{.*}}, which also sum 'dv' from the same members
// FUSED-LABEL: tt.func public @fused
// FUSED: scf.if
// FUSED-NOT: tt.atomic_rmw
// FUSED: } else {
// The affine path: one loop over the members, eight sums (2 gradients x 4
// iterations), p computed once per iteration for both.
// FUSED: scf.for {{.+}} -> (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
// FUSED-COUNT-4: math.exp
// FUSED-NOT: math.exp
// FUSED: scf.yield
// FUSED: } else {
// FUSED-COUNT-4: math.exp
// FUSED-NOT: math.exp
// FUSED: tt.return
module {
  tt.func public @fused(%q: !tt.ptr<f32> loc("q"), %kk: !tt.ptr<f32> loc("kk"), %do: !tt.ptr<f32> loc("do"), %dk: !tt.ptr<f32> loc("dk"), %dv: !tt.ptr<f32> loc("dv"), %dq: !tt.ptr<f32> loc("dq"), %n: i32 loc("n"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %c256 = arith.constant 256 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %pm = tt.get_program_id x : i32
    %bh = tt.get_program_id y : i32
    %len = arith.muli %n, %c256 : i32
    %base = arith.muli %bh, %len : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rr = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %rc = tt.expand_dims %r {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %c16s = tt.splat %c16 : i32 -> tensor<16x1xi32>
    %rr16 = arith.muli %rr, %c16s : tensor<16x1xi32>
    %rowoff = tt.broadcast %rr16 : tensor<16x1xi32> -> tensor<16x16xi32>
    %coloff = tt.broadcast %rc : tensor<1x16xi32> -> tensor<16x16xi32>
    %tile = arith.addi %rowoff, %coloff : tensor<16x16xi32>
    %m0 = arith.muli %pm, %c256 : i32
    %qoff = arith.addi %base, %m0 : i32
    %qoffs = tt.splat %qoff : i32 -> tensor<16x16xi32>
    %qidx = arith.addi %tile, %qoffs : tensor<16x16xi32>
    %qs = tt.splat %q : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %qp = tt.addptr %qs, %qidx : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %qv = tt.load %qp : tensor<16x16x!tt.ptr<f32>>
    %dos = tt.splat %do : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dop = tt.addptr %dos, %qidx : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %g = tt.load %dop : tensor<16x16x!tt.ptr<f32>>
    %bases = tt.splat %base : i32 -> tensor<16x16xi32>
    %kidx0 = arith.addi %tile, %bases : tensor<16x16xi32>
    %ks = tt.splat %kk : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dks = tt.splat %dk : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dvs = tt.splat %dv : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dqacc = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<16x16xf32>) : i32 {
      %i0 = arith.muli %i, %c256 : i32
      %i0s = tt.splat %i0 : i32 -> tensor<16x16xi32>
      %kidx = arith.addi %kidx0, %i0s : tensor<16x16xi32>
      %kp = tt.addptr %ks, %kidx : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %kv = tt.load %kp : tensor<16x16x!tt.ptr<f32>>
      %kt = tt.trans %kv {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
      %s = tt.dot %qv, %kt, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %p = math.exp %s : tensor<16x16xf32>
      %pt = tt.trans %p {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
      %dvc = tt.dot %pt, %g, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %dkc = tt.dot %pt, %qv, %zero : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %dvp = tt.addptr %dvs, %kidx : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %dkp = tt.addptr %dks, %kidx : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %o1 = tt.atomic_rmw fadd, relaxed, gpu, %dvp, %dvc : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
      %o2 = tt.atomic_rmw fadd, relaxed, gpu, %dkp, %dkc : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
      %next = tt.dot %p, %kv, %acc : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      scf.yield %next : tensor<16x16xf32>
    }
    %dqs = tt.splat %dq : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %dqp = tt.addptr %dqs, %qidx : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    tt.store %dqp, %dqacc : tensor<16x16x!tt.ptr<f32>>
    tt.return
  }
}
