// Deterministic mode's scatter slots: an atomic add marked
// tritonad.unless_regridded (or a refused twin) becomes two stores into the
// program's row of slots, 1 + the element's offset and the value, under the
// add's mask (a slot it leaves out keeps the caller's 0); loops around it select blocks of slots by their
// iteration, their trip counts computed at the kernel's entry. What cannot
// take slots keeps its atomic, its mark saying why.

// RUN: tritonad-opt %s --split-input-file --tritonad-scatter-sums 2>/dev/null | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-scatter-sums -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A row-table gather outside any loop: its lanes step by one element, so a
// program writes one key (64 + the run's first element, 1 + the offset less
// the lane, where some lane is active) and 64 values (0 where the mask leaves
// a lane out).
// REMARK: remark: 64 scatter slots per program, 1 keys; dx: [0, 64), keys [0, 1), 64 per key
// CHECK-LABEL: tt.func public @row_table
// CHECK: tt.get_program_id x
// CHECK-NOT: tt.atomic_rmw
// CHECK: tt.ptr_to_int %arg0 : !tt.ptr<f32> -> i64
// CHECK: %[[FIRST:.*]] = "tt.reduce"(%{{.*}}) <{axis = 0 : i32}>
// CHECK: arith.maxsi
// CHECK: %[[KEY:.*]] = arith.addi %[[FIRST]], %c63_i64 : i64
// CHECK: %[[ACTIVE:.*]] = arith.cmpi ne
// CHECK: tt.store %{{.*}}, %[[KEY]], %[[ACTIVE]] : !tt.ptr<i64>
// CHECK: %[[VALUE:.*]] = arith.select %{{.*}}, %arg2, %{{.*}} : tensor<64xi1>, tensor<64xf32>
// CHECK: %[[LIVE:.*]] = tt.splat %[[ACTIVE]] : i1 -> tensor<64xi1>
// CHECK: tt.store %{{.*}}, %[[VALUE]], %[[LIVE]] : tensor<64x!tt.ptr<f32>>
module {
  tt.func public @row_table(%dx: !tt.ptr<f32> loc("dx"), %rows: !tt.ptr<i32> loc("rows"), %g: tensor<64xf32> loc("g"), %n: i32 loc("n"), %si: !tt.ptr<i64> loc("tritonad_scatter_index"), %sv: !tt.ptr<f32> loc("tritonad_scatter_values")) {
    %pid = tt.get_program_id x : i32
    %rp = tt.addptr %rows, %pid : !tt.ptr<i32>, i32
    %row = tt.load %rp : !tt.ptr<i32>
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ns = tt.splat %n : i32 -> tensor<64xi32>
    %m = arith.cmpi slt, %r, %ns : tensor<64xi32>
    %rs = tt.splat %row : i32 -> tensor<64xi32>
    %off = arith.addi %rs, %r : tensor<64xi32>
    %base = tt.splat %dx : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %p = tt.addptr %base, %off : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %old = tt.atomic_rmw fadd, relaxed, gpu, %p, %g, %m {tritonad.unless_regridded = "deterministic mode: rows from a table"} : (tensor<64x!tt.ptr<f32>>, tensor<64xf32>, tensor<64xi1>) -> tensor<64xf32>
    tt.return
  }
}

// -----

// In a loop of a runtime trip count (an argument): the trips at the entry,
// 16 x 16 slots per iteration, the iteration selecting its block.
// REMARK: remark: (256 * max((((k - 0) + (1 - 1)) / 1), 0)) scatter slots per program, (256 * max((((k - 0) + (1 - 1)) / 1), 0)) keys; da: [0, (256 * max((((k - 0) + (1 - 1)) / 1), 0))), keys [0, (256 * max((((k - 0) + (1 - 1)) / 1), 0))), 1 per key
// CHECK-LABEL: tt.func public @in_a_loop
// CHECK: arith.extsi %arg3 : i32 to i64
// CHECK: %[[TRIPS:.*]] = arith.maxsi %{{.*}}, %{{.*}} : i64
// CHECK: %[[REPEATS:.*]] = arith.muli %{{.*}}, %[[TRIPS]]
// CHECK: arith.muli %[[REPEATS]], %c256_i64
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %arg3 step
// CHECK: %[[IV:.*]] = arith.extsi %[[I]] : i32 to i64
// CHECK: %[[D:.*]] = arith.subi %[[IV]]
// CHECK: %[[IT:.*]] = arith.divsi %[[D]], %{{.*}} : i64
// CHECK: arith.muli %[[IT]], %c256
// CHECK-NOT: tt.atomic_rmw
// CHECK: tt.store %{{.*}} : tensor<16x16x!tt.ptr<i64>>
// CHECK: tt.store %{{.*}} : tensor<16x16x!tt.ptr<f32>>
module {
  tt.func public @in_a_loop(%da: !tt.ptr<f32> loc("da"), %idx: tensor<16x16xi32> loc("idx"), %v: tensor<16x16xf32> loc("v"), %k: i32 loc("k"), %si: !tt.ptr<i64> loc("tritonad_scatter_index"), %sv: !tt.ptr<f32> loc("tritonad_scatter_values")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %das = tt.splat %da : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    scf.for %i = %c0 to %k step %c1 : i32 {
      %is = tt.splat %i : i32 -> tensor<16x16xi32>
      %off = arith.addi %idx, %is : tensor<16x16xi32>
      %p = tt.addptr %das, %off : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %p, %v {tritonad.unless_regridded = "deterministic mode: not analyzable"} : (tensor<16x16x!tt.ptr<f32>>, tensor<16x16xf32>) -> tensor<16x16xf32>
    }
    tt.return
  }
}

// -----

// A coarsened backward (partial buffers): the grid-stride loop's induction
// variable is the forward's program, which picks the row; it is no
// iteration of the slots.
// REMARK: remark: 32 scatter slots per program, 32 keys; dx: [0, 32), keys [0, 32), 1 per key
// CHECK-LABEL: tt.func public @coarsened
// CHECK: scf.for %[[V:.*]] = %{{.*}} to %arg3 step %{{.*}}
// CHECK: %[[VI:.*]] = arith.extsi %[[V]] : i32 to i64
// CHECK: arith.addi %[[VI]], %{{.*}} : i64
// CHECK: arith.muli %{{.*}}, %{{.*}} : i64
// CHECK-NOT: tt.atomic_rmw
module {
  tt.func public @coarsened(%dx: !tt.ptr<f32> loc("dx"), %idx: tensor<32xi32> loc("idx"), %v: tensor<32xf32> loc("v"), %tritonad_programs: i32 loc("tritonad_programs"), %si: !tt.ptr<i64> loc("tritonad_scatter_index"), %sv: !tt.ptr<f32> loc("tritonad_scatter_values")) {
    %pid = tt.get_program_id x : i32
    %np = tt.get_num_programs x : i32
    %dxs = tt.splat %dx : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    scf.for %vp = %pid to %tritonad_programs step %np : i32 {
      %p = tt.addptr %dxs, %idx : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
      %old = tt.atomic_rmw fadd, relaxed, gpu, %p, %v {tritonad.unless_regridded = "deterministic mode: shared"} : (tensor<32x!tt.ptr<f32>>, tensor<32xf32>) -> tensor<32xf32>
    }
    tt.return
  }
}

// -----

// Kept atomics: the shadow is read back (the slots add only after the
// kernel); a loop whose trip count is a loaded value; a loop whose trips
// grow along axis 0 and shrink along it too (no program is the extreme);
// no scatter arguments.
// CHECK-LABEL: tt.func public @kept
// CHECK: tt.atomic_rmw {{.*}}not summed through scatter slots: the backward also reads 'dx'
// CHECK: tt.atomic_rmw {{.*}}not summed through scatter slots: the loop at {{.*}} runs a number of iterations that depends on loaded values
// CHECK: tt.atomic_rmw {{.*}}not summed through scatter slots: the loop at {{.*}} runs a number of iterations that depends on the program in a way that does not move one way
module {
  tt.func public @kept(%dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy"), %idx: tensor<32xi32> loc("idx"), %v: tensor<32xf32> loc("v"), %lens: !tt.ptr<i32> loc("lens"), %si: !tt.ptr<i64> loc("tritonad_scatter_index"), %sv: !tt.ptr<f32> loc("tritonad_scatter_values")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %pid = tt.get_program_id x : i32
    %dxs = tt.splat %dx : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %p = tt.addptr %dxs, %idx : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %read = tt.load %p : tensor<32x!tt.ptr<f32>>
    %twice = arith.addf %read, %read : tensor<32xf32>
    %old = tt.atomic_rmw fadd, relaxed, gpu, %p, %twice {tritonad.unless_regridded = "deterministic mode: read back"} : (tensor<32x!tt.ptr<f32>>, tensor<32xf32>) -> tensor<32xf32>
    %dys = tt.splat %dy : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %q = tt.addptr %dys, %idx : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %len = tt.load %lens : !tt.ptr<i32>
    scf.for %i = %c0 to %len step %c1 : i32 {
      %old2 = tt.atomic_rmw fadd, relaxed, gpu, %q, %v {tritonad.unless_regridded = "deterministic mode: loaded trips"} : (tensor<32x!tt.ptr<f32>>, tensor<32xf32>) -> tensor<32xf32>
    }
    %sq = arith.muli %pid, %pid : i32
    scf.for %i = %pid to %sq step %c1 : i32 {
      %old3 = tt.atomic_rmw fadd, relaxed, gpu, %q, %v {tritonad.unless_regridded = "deterministic mode: squared"} : (tensor<32x!tt.ptr<f32>>, tensor<32xf32>) -> tensor<32xf32>
    }
    tt.return
  }
}

// -----

// Trips that vary by program: a causal loop (program p runs p + 1 blocks)
// and a persistent loop (rows p, p + n, ... below m: the first program runs
// the most). Every row has room for the extreme program's trips, computed
// at the entry with its ids in place of the program's own.
// REMARK: remark: ((16 * max(((((((programs0 - 1) + 1) * 4) - 0) + (4 - 1)) / 4), 0)) + (16 * max((((m - 0) + (programs0 - 1)) / programs0), 0))) scatter slots per program, {{.*}} keys; dx: [0, (16 * max(((((((programs0 - 1) + 1) * 4) - 0) + (4 - 1)) / 4), 0))), keys {{.*}}; dy: [{{.*}}
// CHECK-LABEL: tt.func public @varying_trips
// CHECK: %[[N:.*]] = tt.get_num_programs x : i32
// CHECK: %[[LAST:.*]] = arith.subi %[[N]], %c1_i32
// CHECK: arith.addi %[[LAST]], %{{.*}} : i32
// CHECK: %[[CAUSAL:.*]] = arith.maxsi
// CHECK: arith.muli %{{.*}}, %[[CAUSAL]] : i64
// CHECK: %[[PERSISTENT:.*]] = arith.maxsi
// CHECK: arith.muli %{{.*}}, %[[PERSISTENT]] : i64
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32
// CHECK-NOT: tt.atomic_rmw
// CHECK: scf.for %[[R:.*]] = %{{.*}} to %arg4 step %{{.*}} : i32
// CHECK: %[[RI:.*]] = arith.extsi %[[R]] : i32 to i64
// CHECK: arith.subi %[[RI]], %{{.*}} : i64
// CHECK-NOT: tt.atomic_rmw
module {
  tt.func public @varying_trips(%dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy"), %idx: tensor<16xi32> loc("idx"), %v: tensor<16xf32> loc("v"), %m: i32 loc("m"), %si: !tt.ptr<i64> loc("tritonad_scatter_index"), %sv: !tt.ptr<f32> loc("tritonad_scatter_values")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c4 = arith.constant 4 : i32
    %pid = tt.get_program_id x : i32
    %np = tt.get_num_programs x : i32
    %next = arith.addi %pid, %c1 : i32
    %end = arith.muli %next, %c4 : i32
    %dxs = tt.splat %dx : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %p = tt.addptr %dxs, %idx : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    scf.for %i = %c0 to %end step %c4 : i32 {
      %old = tt.atomic_rmw fadd, relaxed, gpu, %p, %v {tritonad.unless_regridded = "deterministic mode: causal"} : (tensor<16x!tt.ptr<f32>>, tensor<16xf32>) -> tensor<16xf32>
    }
    %dys = tt.splat %dy : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %q = tt.addptr %dys, %idx : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    scf.for %r = %pid to %m step %np : i32 {
      %old2 = tt.atomic_rmw fadd, relaxed, gpu, %q, %v {tritonad.unless_regridded = "deterministic mode: persistent"} : (tensor<16x!tt.ptr<f32>>, tensor<16xf32>) -> tensor<16xf32>
    }
    tt.return
  }
}

// -----

// Rows of a tile gathered through a table (a mixture of experts' tokens): the
// lanes of each row step by one element along the last axis, so each of the
// 4 rows takes a key, and its 16 values follow.
// REMARK: remark: 64 scatter slots per program, 4 keys; da: [0, 64), keys [0, 4), 16 per key
// CHECK-LABEL: tt.func public @row_tiles
// CHECK: "tt.reduce"(%{{.*}}) <{axis = 1 : i32}>
// CHECK: %[[KEYS:.*]] = arith.addi %{{.*}}, %{{.*}} : tensor<4xi64>
// CHECK: tt.store %{{.*}}, %[[KEYS]] : tensor<4x!tt.ptr<i64>>
// CHECK: tt.store %{{.*}} : tensor<4x16x!tt.ptr<f32>>
// CHECK-NOT: tt.atomic_rmw
module {
  tt.func public @row_tiles(%da: !tt.ptr<f32> loc("da"), %rows: !tt.ptr<i32> loc("rows"), %g: tensor<4x16xf32> loc("g"), %stride: i32 loc("stride"), %si: !tt.ptr<i64> loc("tritonad_scatter_index"), %sv: !tt.ptr<f32> loc("tritonad_scatter_values")) {
    %r = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
    %rp = tt.splat %rows : !tt.ptr<i32> -> tensor<4x!tt.ptr<i32>>
    %rq = tt.addptr %rp, %r : tensor<4x!tt.ptr<i32>>, tensor<4xi32>
    %row = tt.load %rq : tensor<4x!tt.ptr<i32>>
    %ss = tt.splat %stride : i32 -> tensor<4xi32>
    %start = arith.muli %row, %ss : tensor<4xi32>
    %s2 = tt.expand_dims %start {axis = 1 : i32} : tensor<4xi32> -> tensor<4x1xi32>
    %sb = tt.broadcast %s2 : tensor<4x1xi32> -> tensor<4x16xi32>
    %c = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %c2 = tt.expand_dims %c {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %cb = tt.broadcast %c2 : tensor<1x16xi32> -> tensor<4x16xi32>
    %off = arith.addi %sb, %cb : tensor<4x16xi32>
    %base = tt.splat %da : !tt.ptr<f32> -> tensor<4x16x!tt.ptr<f32>>
    %p = tt.addptr %base, %off : tensor<4x16x!tt.ptr<f32>>, tensor<4x16xi32>
    %old = tt.atomic_rmw fadd, relaxed, gpu, %p, %g {tritonad.unless_regridded = "deterministic mode: gathered rows"} : (tensor<4x16x!tt.ptr<f32>>, tensor<4x16xf32>) -> tensor<4x16xf32>
    tt.return
  }
}
