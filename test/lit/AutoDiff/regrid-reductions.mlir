// Reduction members: an accumulation outside the loop whose contribution is
// a sum along an axis of a value each forward program computes (a linear
// layer's bias gradient, db[n] = sum_m G[m, n]), at addresses that depend on
// the program only through values of a product part's key, joins that part:
// one more program per group (its last) loops over the group's members,
// sums their contributions in registers and writes the sum once; the
// forward's programs no longer add into it. Here the row sums of dC (axis 1),
// keyed by the row of tiles as dA's part is; its plain write, taken where the
// launch proves each row one program's, goes with the atomic. Column sums
// keyed by the column of tiles match no part: they keep their atomic. Row
// sums that every batch adds into, beside a dA grouped by the row of tiles and
// the batch, get a part of their own grouped by the row of tiles alone.

// RUN: tritonad-opt %s --split-input-file --tritonad-regrid="shadows=da,drow,dcol overwrite=true" --canonicalize | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-regrid="shadows=da,drow,dcol overwrite=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// REMARK: remark: da: re-parallelized (programs of its own
// REMARK: remark: drow: re-parallelized (with the programs summing 'da' for the loop at {{.+}}: one more program per group of theirs sums its contribution, a sum along axis 1 of a value each forward program computes, over the group's forward programs in registers (fp32) and writes the sum once: stores where the launch finds each element reached once, else atomic adds)
// REMARK: remark: nothing remains in the forward's schedule
// REMARK: remark: dcol: not re-parallelized: its addresses depend on the program through values that no re-parallelized product's part (a loop with the same trip count for every program) groups its programs by
// REMARK: remark: the forward's schedule remains
// REMARK: remark: da: re-parallelized (programs of its own
// REMARK: remark: drow: re-parallelized (programs of its own, one per group of the forward programs adding to the same elements (fewer values group them than group a product's part): each sums its group's contributions, a sum along axis 1
// REMARK: remark: part da: grouped by 2 key value(s)
// REMARK: remark: part drow: grouped by 1 key value(s)

// CHECK-LABEL: tt.func public @row_sums
// The forward's programs write nothing (neither twin remains).
// CHECK: scf.if %{{.+}} {
// CHECK-NEXT: } else {
// dA's part has one more program per group, its last: the row sums'.
// CHECK: %[[PRODUCT_TILES:.+]] = arith.divsi %{{.+}}, %c4_i32 : i32
// CHECK: %[[TILES:.+]] = arith.addi %[[PRODUCT_TILES]], %c1_i32 : i32
// CHECK: %[[TILE:.+]] = arith.remsi %{{.+}}, %[[TILES]]
// CHECK: %[[SUMS_ROWS:.+]] = arith.cmpi eq, %[[TILE]], %[[PRODUCT_TILES]]
// CHECK: scf.if %[[SUMS_ROWS]] {
// The members' program ids from the table, each member's row sums added
// in a fixed order, no product.
// CHECK: %[[SUM:.+]] = scf.for {{.+}} -> (tensor<16xf32>)
// CHECK-NOT: tt.dot
// CHECK: tt.load {{.*}} : !tt.ptr<i64>
// CHECK: "tt.reduce"({{.+}}) <{axis = 1 : i32}>
// CHECK: arith.addf %arg{{[0-9]+}}, %{{.+}} : tensor<16xf32>
// CHECK: scf.yield
// Written once: a store where the launch finds each row reached once (the
// table's plain word), else an atomic add.
// CHECK: tt.store %[[ROWS:[^,]+]], %[[SUM]], %{{.+}} : tensor<16x!tt.ptr<f32>>
// CHECK: tt.atomic_rmw fadd, relaxed, gpu, %[[ROWS]], %[[SUM]], %{{.+}} : (tensor<16x!tt.ptr<f32>>
// The other programs of the group sum dA's products.
// CHECK: } else {
// CHECK: tt.dot
// CHECK-NOT: "tt.reduce"
// CHECK: tt.return

// CHECK-LABEL: tt.func public @column_sums
// CHECK: scf.if %{{.+}} {
// CHECK: "tt.reduce"({{.+}}) <{axis = 0 : i32}>
// CHECK: tt.atomic_rmw fadd, relaxed, gpu, %{{.+}} : (tensor<16x!tt.ptr<f32>>
// CHECK: } else {
// CHECK-NOT: "tt.reduce"
// CHECK: tt.return
// CHECK-LABEL: tt.func public @batched_row_sums
// dA's part, then the row sums' own: one program per group, no product.
// CHECK: tt.dot
// CHECK: %[[OWN_SUM:.+]] = scf.for {{.+}} -> (tensor<16xf32>)
// CHECK-NOT: tt.dot
// CHECK: "tt.reduce"({{.+}}) <{axis = 1 : i32}>
// CHECK: tt.store %[[OWN_ROWS:[^,]+]], %[[OWN_SUM]], %{{.+}} : tensor<16x!tt.ptr<f32>>
// CHECK: tt.atomic_rmw fadd, relaxed, gpu, %[[OWN_ROWS]], %[[OWN_SUM]], %{{.+}} : (tensor<16x!tt.ptr<f32>>
// CHECK-NOT: tt.dot
// CHECK: tt.return

module {
  tt.func public @row_sums(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %drow: !tt.ptr<f32> loc("drow"), %dc: !tt.ptr<f32> loc("dc"), %n: i32 loc("n"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %true = arith.constant true
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
    %row_sum = "tt.reduce"(%g) <{axis = 1 : i32}> ({
    ^bb0(%x: f32, %y: f32):
      %s = arith.addf %x, %y : f32
      tt.reduce.return %s : f32
    }) : (tensor<16x16xf32>) -> tensor<16xf32>
    %row_base = tt.splat %drow : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %row_ptrs = tt.addptr %row_base, %rows : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %alone = arith.cmpi sle, %ntiles, %c1 : i32
    %shared = arith.xori %alone, %true : i1
    %alone16 = tt.splat %alone : i1 -> tensor<16xi1>
    %shared16 = tt.splat %shared : i1 -> tensor<16xi1>
    tt.store %row_ptrs, %row_sum, %alone16 {tritonad.when_exclusive} : tensor<16x!tt.ptr<f32>>
    %row_old = tt.atomic_rmw fadd, relaxed, gpu, %row_ptrs, %row_sum, %shared16 {tritonad.unless_exclusive} : (tensor<16x!tt.ptr<f32>>, tensor<16xf32>, tensor<16xi1>) -> tensor<16xf32>
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

module {
  tt.func public @column_sums(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %dcol: !tt.ptr<f32> loc("dcol"), %dc: !tt.ptr<f32> loc("dc"), %n: i32 loc("n"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %true = arith.constant true
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
    %col_sum = "tt.reduce"(%g) <{axis = 0 : i32}> ({
    ^bb0(%x: f32, %y: f32):
      %s = arith.addf %x, %y : f32
      tt.reduce.return %s : f32
    }) : (tensor<16x16xf32>) -> tensor<16xf32>
    %col_base = tt.splat %dcol : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %col_ptrs = tt.addptr %col_base, %cols : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %col_old = tt.atomic_rmw fadd, relaxed, gpu, %col_ptrs, %col_sum : (tensor<16x!tt.ptr<f32>>, tensor<16xf32>) -> tensor<16xf32>
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

module {
  tt.func public @batched_row_sums(%b: !tt.ptr<f32> loc("b"), %da: !tt.ptr<f32> loc("da"), %drow: !tt.ptr<f32> loc("drow"), %dc: !tt.ptr<f32> loc("dc"), %n: i32 loc("n"), %k: i32 loc("k"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %true = arith.constant true
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
    %batch = tt.get_program_id y : i32
    %batch_offset = arith.muli %batch, %k : i32
    %da_batch = tt.addptr %da, %batch_offset : !tt.ptr<f32>, i32
    %das = tt.splat %da_batch : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %row_sum = "tt.reduce"(%g) <{axis = 1 : i32}> ({
    ^bb0(%x: f32, %y: f32):
      %s = arith.addf %x, %y : f32
      tt.reduce.return %s : f32
    }) : (tensor<16x16xf32>) -> tensor<16xf32>
    %row_base = tt.splat %drow : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %row_ptrs = tt.addptr %row_base, %rows : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %row_old = tt.atomic_rmw fadd, relaxed, gpu, %row_ptrs, %row_sum : (tensor<16x!tt.ptr<f32>>, tensor<16xf32>) -> tensor<16xf32>
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
