// Round trip of every op of our `tt` dialect (cpp/include/tritonad/Dialect/Triton/TritonOps.td)
// in the textual form Triton 3.6 prints (forms taken from TTIR printed by Triton 3.6:
// the corpus kernels, plus small kernels for ops the corpus lacks). Pretty form is
// parsed, printed, parsed again; generic form is printed and parsed back to pretty form.

// RUN: tritonad-opt %s | tritonad-opt | FileCheck %s
// RUN: tritonad-opt %s --mlir-print-op-generic | tritonad-opt | FileCheck %s
// RUN: tritonad-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// GENERIC: "tt.func"() <{
// GENERIC: "tt.load"(%{{.*}}, %{{.*}}, %{{.*}}) <{{{.*}}cache = 1 : i32{{.*}}operandSegmentSizes = array<i32: 1, 1, 1>}>
// GENERIC: "tt.load"(%{{.*}}) <{{{.*}}cache = 2 : i32, evict = 3 : i32, isVolatile = true

module {
  // CHECK-LABEL: tt.func public @pointers
  // CHECK-SAME: (%[[X_PTR:.*]]: !tt.ptr<f32>, %[[I_PTR:.*]]: !tt.ptr<i32>, %[[S_PTR:.*]]: !tt.ptr<f16, 3>, %[[N:.*]]: i32) attributes {noinline = false}
  tt.func public @pointers(%x_ptr: !tt.ptr<f32>, %i_ptr: !tt.ptr<i32, 1>, %s_ptr: !tt.ptr<f16, 3>, %n: i32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %true = arith.constant true
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    // CHECK: %[[PID:.*]] = tt.get_program_id x : i32
    // CHECK: tt.get_program_id y : i32
    // CHECK: tt.get_num_programs z : i32
    // CHECK: %[[OFFS:.*]] = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    // CHECK: %[[M:.*]] = tt.splat %[[N]] : i32 -> tensor<64xi32>
    // CHECK: %[[MASK:.*]] = arith.cmpi slt, %[[OFFS]], %[[M]] : tensor<64xi32>
    // CHECK: %[[X:.*]] = tt.splat %[[X_PTR]] : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    // CHECK: %[[X1:.*]] = tt.addptr %[[X]], %[[OFFS]] : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    // CHECK: %[[X2:.*]] = tt.load %[[X1]], %[[MASK]], %{{.*}} : tensor<64x!tt.ptr<f32>>
    // CHECK: %[[X3:.*]] = tt.load %[[X1]], %[[MASK]] : tensor<64x!tt.ptr<f32>>
    // CHECK: %[[X4:.*]] = tt.load %[[X1]] : tensor<64x!tt.ptr<f32>>
    // CHECK: %[[X5:.*]] = tt.load %[[X1]] cacheModifier = ca evictionPolicy = evict_last {isVolatile = true} : tensor<64x!tt.ptr<f32>>
    // CHECK: tt.load %[[X1]] cacheModifier = cg : tensor<64x!tt.ptr<f32>>
    // CHECK: %[[P:.*]] = tt.addptr %[[X_PTR]], %[[PID]] : !tt.ptr<f32>, i32
    // CHECK: %[[S:.*]] = tt.load %[[P]] : !tt.ptr<f32>
    // CHECK: %[[H:.*]] = tt.load %[[S_PTR]] : !tt.ptr<f16, 3>
    // CHECK: tt.store %[[X1]], %[[X2]], %[[MASK]] : tensor<64x!tt.ptr<f32>>
    // CHECK: tt.store %[[X1]], %[[X3]] cacheModifier = wb evictionPolicy = evict_first : tensor<64x!tt.ptr<f32>>
    // CHECK: tt.store %[[P]], %[[S]] : !tt.ptr<f32>
    // CHECK: tt.store %[[S_PTR]], %[[H]] : !tt.ptr<f16, 3>
    %pid = tt.get_program_id x : i32
    %pid_y = tt.get_program_id y : i32
    %num_progs = tt.get_num_programs z : i32
    %offs = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %m = tt.splat %n : i32 -> tensor<64xi32>
    %mask = arith.cmpi slt, %offs, %m : tensor<64xi32>
    %x = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %x_1 = tt.addptr %x, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %x_2 = tt.load %x_1, %mask, %cst : tensor<64x!tt.ptr<f32>>
    %x_3 = tt.load %x_1, %mask : tensor<64x!tt.ptr<f32>>
    %x_4 = tt.load %x_1 : tensor<64x!tt.ptr<f32>>
    %x_5 = tt.load %x_1 cacheModifier = ca evictionPolicy = evict_last {isVolatile = true} : tensor<64x!tt.ptr<f32>>
    %x_6 = tt.load %x_1 cacheModifier = cg : tensor<64x!tt.ptr<f32>>
    %p = tt.addptr %x_ptr, %pid : !tt.ptr<f32>, i32
    %s = tt.load %p : !tt.ptr<f32>
    %h = tt.load %s_ptr : !tt.ptr<f16, 3>
    tt.store %x_1, %x_2, %mask : tensor<64x!tt.ptr<f32>>
    tt.store %x_1, %x_3 cacheModifier = wb evictionPolicy = evict_first : tensor<64x!tt.ptr<f32>>
    tt.store %p, %s : !tt.ptr<f32>
    tt.store %s_ptr, %h : !tt.ptr<f16, 3>
    // CHECK: tt.atomic_rmw fadd, acq_rel, gpu, %[[P]], %[[S]], %{{.*}} : (!tt.ptr<f32>, f32, i1) -> f32
    // CHECK: tt.atomic_rmw add, relaxed, cta, %[[I_PTR]], %{{.*}} : (!tt.ptr<i32>, i32) -> i32
    // CHECK: tt.atomic_rmw fadd, acq_rel, sys, %[[X1]], %[[X4]], %[[MASK]] : (tensor<64x!tt.ptr<f32>>, tensor<64xf32>, tensor<64xi1>) -> tensor<64xf32>
    // CHECK: tt.atomic_rmw exch, release, gpu, %[[I_PTR]], %{{.*}}, %{{.*}} : (!tt.ptr<i32>, i32, i1) -> i32
    // CHECK: tt.atomic_cas acq_rel, gpu, %[[I_PTR]], %{{.*}}, %{{.*}} : (!tt.ptr<i32>, i32, i32) -> i32
    // CHECK: %[[PI:.*]] = tt.ptr_to_int %[[X1]] : tensor<64x!tt.ptr<f32>> -> tensor<64xi64>
    // CHECK: %[[IP:.*]] = tt.int_to_ptr %[[PI]] : tensor<64xi64> -> tensor<64x!tt.ptr<f32>>
    // CHECK: tt.store %[[IP]], %[[X5]] : tensor<64x!tt.ptr<f32>>
    // CHECK: tt.return
    %a0 = tt.atomic_rmw fadd, acq_rel, gpu, %p, %s, %true : (!tt.ptr<f32>, f32, i1) -> f32
    %a1 = tt.atomic_rmw add, relaxed, cta, %i_ptr, %c1_i32 : (!tt.ptr<i32>, i32) -> i32
    %a2 = tt.atomic_rmw fadd, acq_rel, sys, %x_1, %x_4, %mask : (tensor<64x!tt.ptr<f32>>, tensor<64xf32>, tensor<64xi1>) -> tensor<64xf32>
    %a3 = tt.atomic_rmw exch, release, gpu, %i_ptr, %c0_i32, %true : (!tt.ptr<i32>, i32, i1) -> i32
    %a4 = tt.atomic_cas acq_rel, gpu, %i_ptr, %c0_i32, %c1_i32 : (!tt.ptr<i32>, i32, i32) -> i32
    %pi = tt.ptr_to_int %x_1 : tensor<64x!tt.ptr<f32>> -> tensor<64xi64>
    %ip = tt.int_to_ptr %pi : tensor<64xi64> -> tensor<64x!tt.ptr<f32>>
    tt.store %ip, %x_5 : tensor<64x!tt.ptr<f32>>
    tt.return
  }

  // Block pointers, as Triton's make_ir prints them before make_ttir rewrites
  // them away; the result type is written in full here (Triton 3.6 prints the
  // stripped `: <tensor<32x32xf32>>`, see block-ptr-triton-form.mlir).
  // CHECK-LABEL: tt.func public @block_pointers
  // CHECK: %[[BP:.*]] = tt.make_tensor_ptr %{{.*}}, [%{{.*}}, %{{.*}}], [%{{.*}}, %{{.*}}], [%{{.*}}, %{{.*}}] {order = array<i32: 1, 0>} : <tensor<32x32xf32>>
  // CHECK: %[[V:.*]] = tt.load %[[BP]] {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<32x32xf32>>
  // CHECK: %[[BP2:.*]] = tt.advance %[[BP]], [%{{.*}}, %{{.*}}] : <tensor<32x32xf32>>
  // CHECK: %[[W:.*]] = tt.load %[[BP2]] {boundaryCheck = array<i32: 1>, padding = 2 : i32} : !tt.ptr<tensor<32x32xf32>>
  // CHECK: tt.store %[[BP2]], %[[V]] {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<32x32xf32>>
  // CHECK: tt.store %[[BP]], %[[W]] : !tt.ptr<tensor<32x32xf32>>
  tt.func public @block_pointers(%arg0: !tt.ptr<f32>, %M: i64, %N: i64) {
    %c1_i64 = arith.constant 1 : i64
    %c0_i32 = arith.constant 0 : i32
    %c32_i32 = arith.constant 32 : i32
    %3 = tt.make_tensor_ptr %arg0, [%M, %N], [%N, %c1_i64], [%c0_i32, %c0_i32] {order = array<i32: 1, 0>} : <tensor<32x32xf32>>
    %4 = tt.load %3 {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<32x32xf32>>
    %5 = tt.advance %3, [%c32_i32, %c0_i32] : !tt.ptr<tensor<32x32xf32>>
    %6 = tt.load %5 {boundaryCheck = array<i32: 1>, padding = 2 : i32} : !tt.ptr<tensor<32x32xf32>>
    tt.store %5, %4 {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<32x32xf32>>
    tt.store %3, %6 : !tt.ptr<tensor<32x32xf32>>
    tt.return
  }

  // CHECK-LABEL: tt.func public @elementwise
  // CHECK-SAME: (%[[EX:[^:]*]]: tensor<64xf32>, %[[EY:[^:]*]]: tensor<64xf32>, %[[EI:[^:]*]]: tensor<256xi32>, %[[EJ:[^:]*]]: i32, %[[EF:[^:]*]]: f32)
  // CHECK: %[[A:.*]] = tt.fp_to_fp %[[EX]], rounding = rtne : tensor<64xf32> -> tensor<64xf8E5M2>
  // CHECK: %[[B:.*]] = tt.fp_to_fp %[[A]] : tensor<64xf8E5M2> -> tensor<64xf32>
  // CHECK: tt.fp_to_fp %[[EX]], rounding = rtz : tensor<64xf32> -> tensor<64xbf16>
  // CHECK: %[[C:.*]] = tt.clampf %[[B]], %{{.*}}, %{{.*}}, propagateNan = all : tensor<64xf32>
  // CHECK: tt.clampf %[[EF]], %[[EF]], %[[EF]], propagateNan = none : f32
  // CHECK: tt.precise_sqrt %[[C]] : tensor<64xf32>
  // CHECK: tt.precise_divf %[[C]], %[[EY]] : tensor<64xf32>
  // CHECK: tt.mulhiui %[[EI]], %[[EI]] : tensor<256xi32>
  // CHECK: tt.mulhiui %[[EJ]], %[[EJ]] : i32
  // CHECK: tt.bitcast %[[EI]] : tensor<256xi32> -> tensor<256xf32>
  // CHECK: tt.bitcast %[[EF]] : f32 -> i32
  // CHECK: tt.bitcast %[[EI]] : tensor<256xi32> -> tensor<256xi32>
  // CHECK: tt.extern_elementwise %[[EX]] {libname = "", libpath = "", pure = true, symbol = "__nv_tanhf"} : (tensor<64xf32>) -> tensor<64xf32>
  // CHECK: tt.extern_elementwise %[[EX]], %[[EY]] {libname = "", libpath = "", pure = true, symbol = "__nv_powf"} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  // CHECK: tt.elementwise_inline_asm "mov.b32 $0, $1;" {constraints = "=r,r", packed_element = 1 : i32, pure = true} %[[EX]] : tensor<64xf32> -> tensor<64xf32>
  // CHECK: %{{.*}}:2 = tt.elementwise_inline_asm "mov.b32 $0, $2; mov.b32 $1, $3;" {constraints = "=r,=r,r,r", packed_element = 1 : i32, pure = false} %[[EX]], %[[EY]] : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>, tensor<64xf32>
  tt.func public @elementwise(%x: tensor<64xf32>, %y: tensor<64xf32>, %i: tensor<256xi32>, %j: i32, %f: f32) {
    %c = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %c_0 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %a = tt.fp_to_fp %x, rounding = rtne : tensor<64xf32> -> tensor<64xf8E5M2>
    %b = tt.fp_to_fp %a : tensor<64xf8E5M2> -> tensor<64xf32>
    %a16 = tt.fp_to_fp %x, rounding = rtz : tensor<64xf32> -> tensor<64xbf16>
    %c_5 = tt.clampf %b, %c_0, %c, propagateNan = all : tensor<64xf32>
    %c_6 = tt.clampf %f, %f, %f, propagateNan = none : f32
    %d = tt.precise_sqrt %c_5 : tensor<64xf32>
    %d_6 = tt.precise_divf %c_5, %y : tensor<64xf32>
    %hi = tt.mulhiui %i, %i : tensor<256xi32>
    %hi_s = tt.mulhiui %j, %j : i32
    %bc = tt.bitcast %i : tensor<256xi32> -> tensor<256xf32>
    %bc2 = tt.bitcast %f : f32 -> i32
    %x_129 = tt.bitcast %i : tensor<256xi32> -> tensor<256xi32>
    %e1 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_tanhf"} : (tensor<64xf32>) -> tensor<64xf32>
    %e2 = tt.extern_elementwise %x, %y {libname = "", libpath = "", pure = true, symbol = "__nv_powf"} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %g = tt.elementwise_inline_asm "mov.b32 $0, $1;" {constraints = "=r,r", packed_element = 1 : i32, pure = true} %x : tensor<64xf32> -> tensor<64xf32>
    %g2:2 = tt.elementwise_inline_asm "mov.b32 $0, $2; mov.b32 $1, $3;" {constraints = "=r,=r,r,r", packed_element = 1 : i32, pure = false} %x, %y : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>, tensor<64xf32>
    tt.return
  }

  // CHECK-LABEL: tt.func public @shapes
  // CHECK-SAME: (%[[SX:[^:]*]]: tensor<128xf32>, %[[SY:[^:]*]]: tensor<128xf32>, %[[SV:[^:]*]]: tensor<1xf32>, %[[SS:[^:]*]]: f32, %[[T3:[^:]*]]: tensor<4x8x16xf32>, %[[SI:[^:]*]]: tensor<64xi32>, %[[IDX:[^:]*]]: tensor<128xi32>, %[[IDX2:[^:]*]]: tensor<128x128xi32>, %[[PS:[^:]*]]: !tt.ptr<f16, 3>)
  // CHECK: tt.splat %[[SS]] : f32 -> tensor<128xf32>
  // CHECK: tt.splat %[[PS]] : !tt.ptr<f16, 3> -> tensor<16x!tt.ptr<f16, 3>>
  // CHECK: tt.unsplat %[[SV]] : tensor<1xf32>
  // CHECK: %[[E1:.*]] = tt.expand_dims %[[SX]] {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
  // CHECK: tt.expand_dims %[[SX]] {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
  // CHECK: %[[BR:.*]] = tt.broadcast %[[E1]] : tensor<128x1xf32> -> tensor<128x128xf32>
  // CHECK: tt.reshape %[[SX]] : tensor<128xf32> -> tensor<32x4xf32>
  // CHECK: tt.reshape %[[SX]] allow_reorder : tensor<128xf32> -> tensor<4x32xf32>
  // CHECK: tt.reshape %[[SX]] allow_reorder efficient_layout : tensor<128xf32> -> tensor<2x64xf32>
  // CHECK: tt.cat %[[SX]], %[[SY]] : tensor<128xf32> -> tensor<256xf32>
  // CHECK: %[[J:.*]] = tt.join %[[SX]], %[[SY]] : tensor<128xf32> -> tensor<128x2xf32>
  // CHECK: %{{.*}}, %{{.*}} = tt.split %[[J]] : tensor<128x2xf32> -> tensor<128xf32>
  // CHECK: tt.trans %[[BR]] {order = array<i32: 1, 0>} : tensor<128x128xf32> -> tensor<128x128xf32>
  // CHECK: tt.trans %[[T3]] {order = array<i32: 2, 0, 1>} : tensor<4x8x16xf32> -> tensor<16x4x8xf32>
  // CHECK: tt.histogram %[[SI]] : tensor<64xi32> -> tensor<16xi32>
  // CHECK: tt.gather %[[SX]][%[[IDX]]] {axis = 0 : i32} : (tensor<128xf32>, tensor<128xi32>) -> tensor<128xf32>
  // CHECK: tt.gather %[[BR]][%[[IDX2]]] {axis = 1 : i32, efficient_layout} : (tensor<128x128xf32>, tensor<128x128xi32>) -> tensor<128x128xf32>
  tt.func public @shapes(%x: tensor<128xf32>, %y: tensor<128xf32>, %v: tensor<1xf32>, %s: f32, %t3: tensor<4x8x16xf32>, %i: tensor<64xi32>, %idx: tensor<128xi32>, %idx2: tensor<128x128xi32>, %ps: !tt.ptr<f16, 3>) {
    %0 = tt.splat %s : f32 -> tensor<128xf32>
    %ptrs = tt.splat %ps : !tt.ptr<f16, 3> -> tensor<16x!tt.ptr<f16, 3>>
    %1 = tt.unsplat %v : tensor<1xf32>
    %2 = tt.expand_dims %x {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %3 = tt.expand_dims %x {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
    %4 = tt.broadcast %2 : tensor<128x1xf32> -> tensor<128x128xf32>
    %5 = tt.reshape %x : tensor<128xf32> -> tensor<32x4xf32>
    %6 = tt.reshape %x allow_reorder : tensor<128xf32> -> tensor<4x32xf32>
    %7 = tt.reshape %x allow_reorder efficient_layout : tensor<128xf32> -> tensor<2x64xf32>
    %8 = tt.cat %x, %y : tensor<128xf32> -> tensor<256xf32>
    %9 = tt.join %x, %y : tensor<128xf32> -> tensor<128x2xf32>
    %outLHS, %outRHS = tt.split %9 : tensor<128x2xf32> -> tensor<128xf32>
    %10 = tt.trans %4 {order = array<i32: 1, 0>} : tensor<128x128xf32> -> tensor<128x128xf32>
    %11 = tt.trans %t3 {order = array<i32: 2, 0, 1>} : tensor<4x8x16xf32> -> tensor<16x4x8xf32>
    %12 = tt.histogram %i : tensor<64xi32> -> tensor<16xi32>
    %13 = tt.gather %x[%idx] {axis = 0 : i32} : (tensor<128xf32>, tensor<128xi32>) -> tensor<128xf32>
    %14 = tt.gather %4[%idx2] {axis = 1 : i32, efficient_layout} : (tensor<128x128xf32>, tensor<128x128xi32>) -> tensor<128x128xf32>
    tt.return
  }

  // `inputPrecision = ieee` is the default: printed without the keyword, as Triton does.
  // CHECK-LABEL: tt.func public @dots
  // CHECK: tt.dot %{{.*}}, %{{.*}}, %{{.*}}, inputPrecision = tf32 : tensor<32x32xf16> * tensor<32x32xf16> -> tensor<32x32xf32>
  // CHECK: tt.dot %{{.*}}, %{{.*}}, %{{[^,]*}} : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
  // CHECK: tt.dot %{{.*}}, %{{.*}}, %{{[^,]*}} : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
  // CHECK: tt.dot %{{.*}}, %{{.*}}, %{{.*}}, inputPrecision = tf32x3 : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
  // CHECK: tt.dot %{{.*}}, %{{.*}}, %{{.*}}, inputPrecision = bf16x3 {maxNumImpreciseAcc = 32 : i32} : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
  // CHECK: tt.dot %{{.*}}, %{{.*}}, %{{[^,]*}} : tensor<2x16x16xf32> * tensor<2x16x16xf32> -> tensor<2x16x16xf32>
  // CHECK: tt.dot %{{.*}}, %{{.*}}, %{{[^,]*}} : tensor<16x32xi8> * tensor<32x16xi8> -> tensor<16x16xi32>
  tt.func public @dots(%a: tensor<32x32xf16>, %b: tensor<32x32xf16>, %acc: tensor<32x32xf32>, %af: tensor<32x16xf32>, %bf: tensor<16x64xf32>, %cf: tensor<32x64xf32>, %ab: tensor<2x16x16xf32>, %ai: tensor<16x32xi8>, %bi: tensor<32x16xi8>, %ci: tensor<16x16xi32>) {
    %0 = tt.dot %a, %b, %acc, inputPrecision = tf32 : tensor<32x32xf16> * tensor<32x32xf16> -> tensor<32x32xf32>
    %1 = tt.dot %af, %bf, %cf : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
    %ieee = tt.dot %af, %bf, %1, inputPrecision = ieee : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
    %2 = tt.dot %af, %bf, %cf, inputPrecision = tf32x3 : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
    %3 = tt.dot %af, %bf, %cf, inputPrecision = bf16x3 {maxNumImpreciseAcc = 32 : i32} : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
    %4 = tt.dot %ab, %ab, %ab : tensor<2x16x16xf32> * tensor<2x16x16xf32> -> tensor<2x16x16xf32>
    %5 = tt.dot %ai, %bi, %ci : tensor<16x32xi8> * tensor<32x16xi8> -> tensor<16x16xi32>
    tt.return
  }

  // tt.reduce and tt.scan have no custom syntax: Triton prints them generic.
  // CHECK-LABEL: tt.func public @reductions
  // CHECK-SAME: (%[[RX:[^:]*]]: tensor<512xf32>, %[[COLS:[^:]*]]: tensor<512xi32>, %[[RM:[^:]*]]: tensor<16x128xf32>)
  // CHECK: "tt.reduce"(%[[RX]]) <{axis = 0 : i32}> ({
  // CHECK-NEXT: ^bb0(%[[L:.*]]: f32, %[[R:.*]]: f32):
  // CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[L]], %[[R]] : f32
  // CHECK-NEXT: tt.reduce.return %[[SUM]] : f32
  // CHECK-NEXT: }) : (tensor<512xf32>) -> f32
  // CHECK: "tt.reduce"(%[[RM]]) <{axis = 1 : i32}> ({
  // CHECK: arith.maxnumf
  // CHECK: tt.reduce.return %{{.*}} : f32
  // CHECK-NEXT: }) : (tensor<16x128xf32>) -> tensor<16xf32>
  // CHECK: %{{.*}}:2 = "tt.reduce"(%[[RX]], %[[COLS]]) <{axis = 0 : i32}> ({
  // CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: i32, %{{.*}}: f32, %{{.*}}: i32):
  // CHECK: tt.reduce.return %{{.*}}, %{{.*}} : f32, i32
  // CHECK-NEXT: }) : (tensor<512xf32>, tensor<512xi32>) -> (f32, i32)
  // CHECK: "tt.scan"(%[[RX]]) <{axis = 0 : i32, reverse = false}> ({
  // CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
  // CHECK-NEXT: arith.addf
  // CHECK-NEXT: tt.scan.return %{{.*}} : f32
  // CHECK-NEXT: }) : (tensor<512xf32>) -> tensor<512xf32>
  // CHECK: "tt.scan"(%[[RM]]) <{axis = 1 : i32, reverse = true}> ({
  // CHECK: }) : (tensor<16x128xf32>) -> tensor<16x128xf32>
  // CHECK: %{{.*}}:2 = "tt.scan"(%[[RX]], %[[RX]]) <{axis = 0 : i32, reverse = false}> ({
  // CHECK: tt.scan.return %{{.*}}, %{{.*}} : f32, f32
  // CHECK-NEXT: }) : (tensor<512xf32>, tensor<512xf32>) -> (tensor<512xf32>, tensor<512xf32>)
  tt.func public @reductions(%x: tensor<512xf32>, %cols: tensor<512xi32>, %m: tensor<16x128xf32>) {
    %s = "tt.reduce"(%x) <{axis = 0 : i32}> ({
    ^bb0(%s_0: f32, %s_1: f32):
      %s_2 = arith.addf %s_0, %s_1 : f32
      tt.reduce.return %s_2 : f32
    }) : (tensor<512xf32>) -> f32
    %r = "tt.reduce"(%m) <{axis = 1 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %mx = arith.maxnumf %a, %b : f32
      tt.reduce.return %mx : f32
    }) : (tensor<16x128xf32>) -> tensor<16xf32>
    %1:2 = "tt.reduce"(%x, %cols) <{axis = 0 : i32}> ({
    ^bb0(%arg4: f32, %arg5: i32, %arg6: f32, %arg7: i32):
      %gt = arith.cmpf ogt, %arg4, %arg6 : f32
      %v_ret = arith.select %gt, %arg4, %arg6 : f32
      %i_ret = arith.select %gt, %arg5, %arg7 : i32
      tt.reduce.return %v_ret, %i_ret : f32, i32
    }) : (tensor<512xf32>, tensor<512xi32>) -> (f32, i32)
    %c = "tt.scan"(%x) <{axis = 0 : i32, reverse = false}> ({
    ^bb0(%c_0: f32, %c_1: f32):
      %c_2 = arith.addf %c_0, %c_1 : f32
      tt.scan.return %c_2 : f32
    }) : (tensor<512xf32>) -> tensor<512xf32>
    %r2 = "tt.scan"(%m) <{axis = 1 : i32, reverse = true}> ({
    ^bb0(%a: f32, %b: f32):
      %c_2 = arith.mulf %a, %b : f32
      tt.scan.return %c_2 : f32
    }) : (tensor<16x128xf32>) -> tensor<16x128xf32>
    %0:2 = "tt.scan"(%x, %x) <{axis = 0 : i32, reverse = false}> ({
    ^bb0(%arg5: f32, %arg6: f32, %arg7: f32, %arg8: f32):
      %4 = arith.mulf %arg5, %arg7 : f32
      %5 = arith.mulf %arg6, %arg7 : f32
      %6 = arith.addf %5, %arg8 : f32
      tt.scan.return %4, %6 : f32, f32
    }) : (tensor<512xf32>, tensor<512xf32>) -> (tensor<512xf32>, tensor<512xf32>)
    tt.return
  }

  // CHECK-LABEL: tt.func private @helper
  // CHECK-SAME: (%{{.*}}: f32, %{{.*}}: f32) -> f32 attributes {noinline = true}
  // CHECK: tt.return %{{.*}} : f32
  tt.func private @helper(%s: f32, %beta: f32) -> f32 attributes {noinline = true} {
    %0 = arith.mulf %s, %beta : f32
    tt.return %0 : f32
  }
  // CHECK-LABEL: tt.func private @"corpus.kernels._softplus_block__Pfp32_i32__(5,)cconstexpr_256_"
  // CHECK-SAME: -> (f32, i32) attributes {noinline = true}
  // CHECK: tt.return %{{.*}}, %{{.*}} : f32, i32
  tt.func private @"corpus.kernels._softplus_block__Pfp32_i32__(5,)cconstexpr_256_"(%x_ptr: !tt.ptr<f32>, %n: i32) -> (f32, i32) attributes {noinline = true} {
    %0 = tt.load %x_ptr : !tt.ptr<f32>
    tt.return %0, %n : f32, i32
  }
  // CHECK: tt.func private @external(f32) -> f32
  tt.func private @external(f32) -> f32

  // CHECK-LABEL: tt.func public @calls_and_debug
  // CHECK-SAME: (%[[CP:[^:]*]]: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %[[CN:[^:]*]]: i32 {tt.divisibility = 16 : i32}, %[[CX:[^:]*]]: tensor<16xf32>, %[[CF:[^:]*]]: f32) attributes {noinline = false}
  // CHECK: tt.call @helper(%[[CF]], %[[CF]]) : (f32, f32) -> f32
  // CHECK: %{{.*}}:2 = tt.call @"corpus.kernels._softplus_block__Pfp32_i32__(5,)cconstexpr_256_"(%[[CP]], %[[CN]]) : (!tt.ptr<f32>, i32) -> (f32, i32)
  // CHECK: tt.call @external(%[[CF]]) : (f32) -> f32
  // CHECK: tt.print " val: " {hex = true, isSigned = array<i32: 0>} : %[[CX]] : tensor<16xf32>
  // CHECK: tt.print " pid: " {hex = false, isSigned = array<i32: 1, 0>} : %[[CN]], %[[CF]] : i32, f32
  // CHECK: tt.print "done" {hex = false, isSigned = array<i32>}
  // CHECK: tt.assert %{{.*}}, "positive" : tensor<16xi1>
  // CHECK: tt.assert %{{.*}}, "scalar" : i1
  // CHECK: tt.return
  tt.func public @calls_and_debug(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32 {tt.divisibility = 16 : i32}, %x: tensor<16xf32>, %f: f32) attributes {noinline = false} {
    %0 = tt.call @helper(%f, %f) : (f32, f32) -> f32
    %1:2 = tt.call @"corpus.kernels._softplus_block__Pfp32_i32__(5,)cconstexpr_256_"(%x_ptr, %n) : (!tt.ptr<f32>, i32) -> (f32, i32)
    %2 = tt.call @external(%f) : (f32) -> f32
    tt.print " val: " {hex = true, isSigned = array<i32: 0>} : %x : tensor<16xf32>
    tt.print " pid: " {hex = false, isSigned = array<i32: 1, 0>} : %n, %f : i32, f32
    tt.print "done" {hex = false, isSigned = array<i32>}
    %c = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %p = arith.cmpf ogt, %x, %c : tensor<16xf32>
    tt.assert %p, "positive" : tensor<16xi1>
    %true = arith.constant true
    tt.assert %true, "scalar" : i1
    tt.return
  }
}
