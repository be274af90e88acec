// The standard cleanups (canonicalize, CSE, symbol-dce) on tt ops: which ops are
// merged, which are removed when unused, and which must stay. This is what the
// op traits in TritonOps.td promise: Pure ops are CSE'd and dropped when dead;
// tt.load only reads (dead when unused, merged when no write is in between),
// unless volatile; tt.store, tt.atomic_rmw and impure extern calls stay.

// RUN: tritonad-opt %s --canonicalize | FileCheck %s --check-prefixes=CHECK,CANON
// RUN: tritonad-opt %s --cse | FileCheck %s --check-prefixes=CHECK,CSE
// RUN: tritonad-opt %s --canonicalize --cse | FileCheck %s --check-prefixes=CHECK,BOTH
// RUN: tritonad-opt %s --symbol-dce | FileCheck %s --check-prefix=SYMDCE

module {
  // CHECK-LABEL: tt.func public @cleanup
  // CHECK-SAME: (%[[PTR:[^:]*]]: !tt.ptr<f32>, %[[N:[^:]*]]: i32, %[[V:[^:]*]]: tensor<64xf32>)

  // Two identical splats / make_ranges: CSE keeps one; canonicalize alone keeps both.
  // CSE: %[[SPLAT:.*]] = tt.splat %[[N]] : i32 -> tensor<64xi32>
  // CSE-NOT: tt.splat %[[N]]
  // CSE: %[[RANGE:.*]] = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  // CSE-NOT: tt.make_range
  // BOTH: %[[SPLAT:.*]] = tt.splat %[[N]] : i32 -> tensor<64xi32>
  // BOTH-NOT: tt.splat %[[N]]
  // BOTH: %[[RANGE:.*]] = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  // BOTH-NOT: tt.make_range
  // CANON: tt.splat %[[N]] : i32 -> tensor<64xi32>
  // CANON-NEXT: tt.splat %[[N]] : i32 -> tensor<64xi32>
  // CANON-NEXT: tt.make_range
  // CANON-NEXT: tt.make_range
  // CHECK: %[[P:.*]] = tt.splat %[[PTR]] : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  // CHECK: %[[P1:.*]] = tt.addptr %[[P]]

  // An unused plain load is dead (it only reads); an unused volatile load stays.
  // CHECK-NOT: tt.load
  // CHECK: tt.load %[[P1]] {isVolatile = true} : tensor<64x!tt.ptr<f32>>
  // CHECK-NEXT: %[[L1:.*]] = tt.load %[[P1]], %{{.*}} : tensor<64x!tt.ptr<f32>>

  // Two identical loads with no write in between: CSE merges them.
  // Unused pure ops (expand_dims -> broadcast -> trans, join, get_program_id)
  // are removed by canonicalize; CSE's trivially-dead sweep goes in order, so a
  // lone --cse keeps expand_dims/broadcast (their user, trans, was erased later).
  // CANON-NEXT: %[[L2:.*]] = tt.load %[[P1]], %{{.*}} : tensor<64x!tt.ptr<f32>>
  // CANON-NEXT: %[[S:.*]] = arith.addf %[[L1]], %[[L2]]
  // CSE-NEXT: tt.expand_dims %[[V]]
  // CSE-NEXT: tt.broadcast
  // CSE-NEXT: %[[S:.*]] = arith.addf %[[L1]], %[[L1]]
  // BOTH-NEXT: %[[S:.*]] = arith.addf %[[L1]], %[[L1]]

  // The store stays; the load after it is not merged with the loads before it.
  // CHECK: tt.store %[[P1]], %[[S]], %{{.*}} : tensor<64x!tt.ptr<f32>>
  // CHECK-NEXT: %[[L3:.*]] = tt.load %[[P1]], %{{.*}} : tensor<64x!tt.ptr<f32>>
  // Unused atomic and impure extern call stay; the pure extern call and the
  // unused tt.reduce are gone.
  // CHECK-NEXT: tt.atomic_rmw fadd, acq_rel, gpu, %[[P1]], %[[V]]
  // CHECK-NEXT: tt.extern_elementwise %[[V]] {{{.*}}pure = false, symbol = "__nv_foo"}
  // CHECK-NOT: tt.reduce
  // CHECK-NEXT: %[[T:.*]] = arith.addf %[[L3]], %[[V]]
  // CHECK-NEXT: tt.return %[[T]] : tensor<64xf32>
  tt.func public @cleanup(%x_ptr: !tt.ptr<f32>, %n: i32, %v: tensor<64xf32>) -> tensor<64xf32> {
    %a = tt.splat %n : i32 -> tensor<64xi32>
    %b = tt.splat %n : i32 -> tensor<64xi32>
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %r2 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %m = arith.cmpi slt, %r, %a : tensor<64xi32>
    %m2 = arith.cmpi slt, %r2, %b : tensor<64xi32>
    %p = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %p1 = tt.addptr %p, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %unused_load = tt.load %p1, %m : tensor<64x!tt.ptr<f32>>
    %unused_vload = tt.load %p1 {isVolatile = true} : tensor<64x!tt.ptr<f32>>
    %l1 = tt.load %p1, %m : tensor<64x!tt.ptr<f32>>
    %l2 = tt.load %p1, %m2 : tensor<64x!tt.ptr<f32>>
    %e = tt.expand_dims %v {axis = 0 : i32} : tensor<64xf32> -> tensor<1x64xf32>
    %unused_bc = tt.broadcast %e : tensor<1x64xf32> -> tensor<8x64xf32>
    %unused_trans = tt.trans %unused_bc {order = array<i32: 1, 0>} : tensor<8x64xf32> -> tensor<64x8xf32>
    %unused_pid = tt.get_program_id x : i32
    %unused_join = tt.join %v, %v : tensor<64xf32> -> tensor<64x2xf32>
    %s = arith.addf %l1, %l2 : tensor<64xf32>
    tt.store %p1, %s, %m : tensor<64x!tt.ptr<f32>>
    %l3 = tt.load %p1, %m : tensor<64x!tt.ptr<f32>>
    %unused_ar = tt.atomic_rmw fadd, acq_rel, gpu, %p1, %v, %m : (tensor<64x!tt.ptr<f32>>, tensor<64xf32>, tensor<64xi1>) -> tensor<64xf32>
    %unused_ext = tt.extern_elementwise %v {libname = "", libpath = "", pure = true, symbol = "__nv_tanhf"} : (tensor<64xf32>) -> tensor<64xf32>
    %unused_ext_impure = tt.extern_elementwise %v {libname = "", libpath = "", pure = false, symbol = "__nv_foo"} : (tensor<64xf32>) -> tensor<64xf32>
    %unused_red = "tt.reduce"(%v) <{axis = 0 : i32}> ({
    ^bb0(%a0: f32, %b0: f32):
      %s0 = arith.addf %a0, %b0 : f32
      tt.reduce.return %s0 : f32
    }) : (tensor<64xf32>) -> f32
    %t = arith.addf %l3, %v : tensor<64xf32>
    tt.return %t : tensor<64xf32>
  }

  // symbol-dce drops private tt.funcs nobody calls and keeps called ones.
  // SYMDCE-NOT: @unused_helper
  // SYMDCE: tt.func private @used_helper
  // SYMDCE-NOT: @unused_helper
  // SYMDCE: tt.func public @caller
  // SYMDCE: tt.call @used_helper
  // SYMDCE-NOT: @unused_helper
  tt.func private @unused_helper(%x: f32) -> f32 {
    tt.return %x : f32
  }
  tt.func private @used_helper(%x: f32) -> f32 {
    tt.return %x : f32
  }
  tt.func public @caller(%x: f32) -> f32 {
    %0 = tt.call @used_helper(%x) : (f32) -> f32
    tt.return %0 : f32
  }
}
