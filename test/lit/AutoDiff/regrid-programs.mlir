// A re-parallelized backward runs as two launches, the forward's programs
// first (they stage what the parts read) and then the parts, each with a
// kernel compiled for its own programs (`programs=main|parts`): in one
// kernel, the parts' registers and shared memory would also be sized for the
// forward's code. The record (remarks) is the same for both; `all` keeps the
// branch on the program id (regrid.mlir).

// RUN: tritonad-opt %s --tritonad-regrid="shadows=da programs=main" --canonicalize | FileCheck %s --check-prefix=MAIN
// RUN: tritonad-opt %s --tritonad-regrid="shadows=da programs=parts" --canonicalize | FileCheck %s --check-prefix=PARTS
// RUN: tritonad-opt %s --tritonad-regrid="shadows=da programs=parts" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: tritonad-opt %s --tritonad-regrid="shadows=da programs=main" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// REMARK: remark: da: re-parallelized ({{.*}}from scratch (1024 bytes per forward program
// REMARK: remark: the forward's schedule remains

// The forward's programs: the staging code only, no branch, no parts.
// MAIN-LABEL: tt.func public @staged
// MAIN-NOT: scf.if
// MAIN: math.exp
// MAIN: tt.store %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// MAIN-NOT: tt.dot
// MAIN-NOT: tt.atomic_rmw
// MAIN: tt.return

// The parts: no exp, no staging store; the part's index is the program id
// less the (launched) forward's programs, read from the table.
// PARTS-LABEL: tt.func public @staged
// PARTS-NOT: math.exp
// PARTS: %[[PID:.+]] = tt.get_program_id x
// PARTS: %[[FORWARDS:.+]] = arith.trunci %{{.+}} : i64 to i32
// PARTS-NOT: math.exp
// PARTS-NOT: tt.store
// PARTS: arith.subi %[[PID]], %[[FORWARDS]]
// PARTS-NOT: math.exp
// PARTS-NOT: tt.store
// PARTS: scf.for
// PARTS: %[[STAGED:.+]] = tt.load %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// PARTS: tt.dot %[[STAGED]]
// PARTS-NOT: math.exp
// PARTS: tt.return
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
