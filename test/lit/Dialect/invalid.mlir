// One case per verifier / type constraint / parse rule of our `tt` dialect
// (cpp/include/tritonad/Dialect/Triton/*.td, cpp/lib/Dialect/Triton/TritonOps.cpp).
// Each case sits in its own split; the message is the diagnostic MLIR emits at the
// marked line. Ops whose pretty form infers operand types (tt.load, tt.store,
// tt.dot, tt.addptr, ...) are written in generic form to reach the verifier.

// RUN: tritonad-opt %s --split-input-file --verify-diagnostics
// Without --verify-diagnostics the tool must fail and report file:line:col.
// RUN: not tritonad-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=ERR
// ERR: {{.*}}invalid.mlir:{{[0-9]+}}:8: error: 'tt.expand_dims' op axis 2 out of range for rank 1
// ERR: {{.*}}invalid.mlir:{{[0-9]+}}:8: error: 'tt.make_range' op result size must be end - start > 0
// ERR: {{.*}}invalid.mlir:{{[0-9]+}}:3: error: 'tt.return' op type of return operand 0 ('f32') does not match function result type ('i32')

tt.func @expand_dims_axis(%x: tensor<16xf32>) {
  // expected-error @+1 {{'tt.expand_dims' op axis 2 out of range for rank 1}}
  %0 = tt.expand_dims %x {axis = 2 : i32} : tensor<16xf32> -> tensor<16x1xf32>
  tt.return
}

// -----

tt.func @expand_dims_negative_axis(%x: tensor<16xf32>) {
  // expected-error @+1 {{out of range for rank 1}}
  %0 = tt.expand_dims %x {axis = -1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
  tt.return
}

// -----

tt.func @expand_dims_shape(%x: tensor<16xf32>) {
  // expected-error @+1 {{'tt.expand_dims' op result shape must be [1, 16]}}
  %0 = tt.expand_dims %x {axis = 0 : i32} : tensor<16xf32> -> tensor<16x1xf32>
  tt.return
}

// -----

tt.func @expand_dims_element(%x: tensor<16xf32>) {
  // expected-error @+1 {{'tt.expand_dims' op requires the same element type for all operands and results}}
  %0 = tt.expand_dims %x {axis = 0 : i32} : tensor<16xf32> -> tensor<1x16xf16>
  tt.return
}

// -----

tt.func @broadcast_non_one(%x: tensor<16x2xf32>) {
  // expected-error @+1 {{'tt.broadcast' op can only broadcast dimensions of size 1, got [16, 2] -> [16, 16]}}
  %0 = tt.broadcast %x : tensor<16x2xf32> -> tensor<16x16xf32>
  tt.return
}

// -----

tt.func @broadcast_rank(%x: tensor<16xf32>) {
  // expected-error @+1 {{'tt.broadcast' op source and result must have the same rank}}
  %0 = tt.broadcast %x : tensor<16xf32> -> tensor<16x16xf32>
  tt.return
}

// -----

tt.func @trans_not_permutation(%x: tensor<16x32xf32>) {
  // expected-error @+1 {{'tt.trans' op order must be a permutation of the dimensions}}
  %0 = tt.trans %x {order = array<i32: 0, 0>} : tensor<16x32xf32> -> tensor<16x16xf32>
  tt.return
}

// -----

tt.func @trans_out_of_range(%x: tensor<16x32xf32>) {
  // expected-error @+1 {{'tt.trans' op order must be a permutation of the dimensions}}
  %0 = tt.trans %x {order = array<i32: 1, 2>} : tensor<16x32xf32> -> tensor<32x16xf32>
  tt.return
}

// -----

tt.func @trans_order_length(%x: tensor<16x32xf32>) {
  // expected-error @+1 {{'tt.trans' op order must have one entry per dimension}}
  %0 = tt.trans %x {order = array<i32: 1, 0, 2>} : tensor<16x32xf32> -> tensor<32x16xf32>
  tt.return
}

// -----

tt.func @trans_result_shape(%x: tensor<16x32xf32>) {
  // expected-error @+1 {{'tt.trans' op result shape must be [32, 16]}}
  %0 = tt.trans %x {order = array<i32: 1, 0>} : tensor<16x32xf32> -> tensor<16x32xf32>
  tt.return
}

// -----

tt.func @dot_inner(%a: tensor<16x32xf32>, %b: tensor<16x16xf32>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tt.dot' op inner dimensions differ: [16, 32] x [16, 16]}}
  %0 = tt.dot %a, %b, %c : tensor<16x32xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
  tt.return
}

// -----

tt.func @dot_acc(%a: tensor<16x32xf32>, %b: tensor<32x8xf32>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tt.dot' op accumulator shape [16, 16] does not match}}
  %0 = tt.dot %a, %b, %c : tensor<16x32xf32> * tensor<32x8xf32> -> tensor<16x16xf32>
  tt.return
}

// -----

tt.func @dot_rank(%a: tensor<16xf32>, %b: tensor<16xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{'tt.dot' op operands must all be rank 2 (or 3, batched)}}
  %0 = tt.dot %a, %b, %c : tensor<16xf32> * tensor<16xf32> -> tensor<16xf32>
  tt.return
}

// -----

tt.func @dot_result_acc(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tt.dot' op failed to verify that result's type matches accumulator's type}}
  %0 = "tt.dot"(%a, %b, %c) <{inputPrecision = 0 : i32, maxNumImpreciseAcc = 0 : i32}> : (tensor<16x16xf16>, tensor<16x16xf16>, tensor<16x16xf32>) -> tensor<16x16xf16>
  tt.return
}

// -----

tt.func @dot_precision(%a: tensor<16x16xf32>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{custom op 'tt.dot' expected string or keyword containing one of the following enum values for attribute}}
  %0 = tt.dot %a, %a, %c, inputPrecision = fp64 : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
  tt.return
}

// -----

tt.func @reduce_result_type(%x: tensor<16x32xf32>) {
  // expected-error @+1 {{'tt.reduce' op result type must be 'tensor<16xf32>', got 'tensor<32xf32>'}}
  %0 = "tt.reduce"(%x) <{axis = 1 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tt.reduce.return %s : f32
  }) : (tensor<16x32xf32>) -> tensor<32xf32>
  tt.return
}

// -----

tt.func @reduce_region_arg_types(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tt.reduce' op combine region argument 0 must be 'f32'}}
  %0 = "tt.reduce"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: i32, %b: i32):
    %s = arith.addi %a, %b : i32
    tt.reduce.return %s : i32
  }) : (tensor<32xf32>) -> f32
  tt.return
}

// -----

tt.func @reduce_region_arg_count(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tt.reduce' op combine region must take 2 arguments}}
  %0 = "tt.reduce"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: f32):
    tt.reduce.return %a : f32
  }) : (tensor<32xf32>) -> f32
  tt.return
}

// -----

tt.func @reduce_region_return_count(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tt.reduce' op combine region must return 1 values}}
  %0 = "tt.reduce"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    tt.reduce.return %a, %b : f32, f32
  }) : (tensor<32xf32>) -> f32
  tt.return
}

// -----

tt.func @reduce_region_return_type(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tt.reduce' op combine region result 0 has the wrong type}}
  %0 = "tt.reduce"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %c = arith.constant 0 : i32
    tt.reduce.return %c : i32
  }) : (tensor<32xf32>) -> f32
  tt.return
}

// -----

tt.func @reduce_axis(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tt.reduce' op axis 1 out of range for rank 1}}
  %0 = "tt.reduce"(%x) <{axis = 1 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tt.reduce.return %s : f32
  }) : (tensor<32xf32>) -> f32
  tt.return
}

// -----

tt.func @reduce_operand_shapes(%x: tensor<32xf32>, %i: tensor<16xi32>) {
  // expected-error @+1 {{'tt.reduce' op operands must have the same shape}}
  %0:2 = "tt.reduce"(%x, %i) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: i32, %c: f32, %d: i32):
    tt.reduce.return %a, %b : f32, i32
  }) : (tensor<32xf32>, tensor<16xi32>) -> (f32, i32)
  tt.return
}

// -----

tt.func @reduce_result_count(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tt.reduce' op must have one result per operand}}
  %0:2 = "tt.reduce"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    tt.reduce.return %a : f32
  }) : (tensor<32xf32>) -> (f32, f32)
  tt.return
}

// -----

tt.func @reduce_no_terminator(%x: tensor<32xf32>) {
  %0 = "tt.reduce"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    // expected-error @+1 {{block with no terminator}}
    %s = arith.addf %a, %b : f32
  }) : (tensor<32xf32>) -> f32
  tt.return
}

// -----

tt.func @reduce_empty_region(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tt.reduce' op region #0 ('combineOp') failed to verify constraint: region with 1 blocks}}
  %0 = "tt.reduce"(%x) <{axis = 0 : i32}> ({
  }) : (tensor<32xf32>) -> f32
  tt.return
}

// -----

tt.func @reduce_return_outside(%x: f32) {
  // expected-error @+1 {{'tt.reduce.return' op expects parent op 'tt.reduce'}}
  tt.reduce.return %x : f32
}

// -----

tt.func @scan_result(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tt.scan' op result types must match operand types}}
  %0 = "tt.scan"(%x) <{axis = 0 : i32, reverse = false}> ({
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tt.scan.return %s : f32
  }) : (tensor<32xf32>) -> tensor<32xf16>
  tt.return
}

// -----

tt.func @scan_shape(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tt.scan' op requires the same shape for all operands and results}}
  %0 = "tt.scan"(%x) <{axis = 0 : i32, reverse = false}> ({
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tt.scan.return %s : f32
  }) : (tensor<32xf32>) -> tensor<16xf32>
  tt.return
}

// -----

tt.func @scan_missing_reverse(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tt.scan' op requires attribute 'reverse'}}
  %0 = "tt.scan"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tt.scan.return %s : f32
  }) : (tensor<32xf32>) -> tensor<32xf32>
  tt.return
}

// -----

tt.func @scan_region_arg_types(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tt.scan' op combine region argument 0 must be 'f32'}}
  %0 = "tt.scan"(%x) <{axis = 0 : i32, reverse = true}> ({
  ^bb0(%a: f16, %b: f16):
    tt.scan.return %a : f16
  }) : (tensor<32xf32>) -> tensor<32xf32>
  tt.return
}

// -----

tt.func @make_range_size() {
  // expected-error @+1 {{'tt.make_range' op result size must be end - start > 0}}
  %0 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<32xi32>
  tt.return
}

// -----

tt.func @make_range_empty() {
  // expected-error @+1 {{'tt.make_range' op result size must be end - start > 0}}
  %0 = tt.make_range {end = 0 : i32, start = 0 : i32} : tensor<0xi32>
  tt.return
}

// -----

tt.func @make_range_i64() {
  // expected-error @+1 {{'tt.make_range' op result must be a 1-d tensor of i32}}
  %0 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi64>
  tt.return
}

// -----

tt.func @make_range_float() {
  // expected-error @+1 {{'tt.make_range' op result #0 must be statically shaped tensor of integer values, but got 'tensor<32xf32>'}}
  %0 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xf32>
  tt.return
}

// -----

tt.func @make_range_missing_end() {
  // expected-error @+1 {{'tt.make_range' op requires attribute 'end'}}
  %0 = tt.make_range {start = 0 : i32} : tensor<32xi32>
  tt.return
}

// -----

tt.func @load_mask_type(%p: tensor<64x!tt.ptr<f32>>, %m: tensor<32xi1>) {
  // expected-error @+1 {{'tt.load' op failed to verify that mask type matches ptr type}}
  %0 = "tt.load"(%p, %m) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<64x!tt.ptr<f32>>, tensor<32xi1>) -> tensor<64xf32>
  tt.return
}

// -----

// expected-note @+1 {{prior use here}}
tt.func @load_mask_pretty(%p: tensor<64x!tt.ptr<f32>>, %m: tensor<32xi1>) {
  // expected-error @+1 {{use of value '%m' expects different type than prior uses: 'tensor<64xi1>' vs 'tensor<32xi1>'}}
  %0 = tt.load %p, %m : tensor<64x!tt.ptr<f32>>
  tt.return
}

// -----

tt.func @load_other_type(%p: tensor<64x!tt.ptr<f32>>, %m: tensor<64xi1>, %o: tensor<64xf16>) {
  // expected-error @+1 {{'tt.load' op failed to verify that other matches ptr type}}
  %0 = "tt.load"(%p, %m, %o) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<64x!tt.ptr<f32>>, tensor<64xi1>, tensor<64xf16>) -> tensor<64xf32>
  tt.return
}

// -----

tt.func @load_result_type(%p: !tt.ptr<f32>) {
  // expected-error @+1 {{'tt.load' op failed to verify that result matches ptr type}}
  %0 = "tt.load"(%p) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<f32>) -> f16
  tt.return
}

// -----

tt.func @load_cache_modifier(%p: !tt.ptr<f32>) {
  // expected-error @+1 {{custom op 'tt.load' expected string or keyword containing one of the following enum values for attribute 'cache' [none,}}
  %0 = tt.load %p cacheModifier = xyz : !tt.ptr<f32>
  tt.return
}

// -----

tt.func @load_not_pointer(%p: tensor<64xf32>) {
  // expected-error @+1 {{custom op 'tt.load' 'ptr' must be scalar pointer or statically shaped tensor of scalar pointer values or pointer to a tensor}}
  %0 = tt.load %p : tensor<64xf32>
  tt.return
}

// -----

tt.func @store_value_type(%p: tensor<64x!tt.ptr<f32>>, %v: tensor<64xf16>) {
  // expected-error @+1 {{'tt.store' op failed to verify that value type matches ptr type}}
  "tt.store"(%p, %v) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (tensor<64x!tt.ptr<f32>>, tensor<64xf16>) -> ()
  tt.return
}

// -----

tt.func @store_mask_type(%p: !tt.ptr<f32>, %v: f32, %m: tensor<2xi1>) {
  // expected-error @+1 {{'tt.store' op failed to verify that mask type matches ptr type}}
  "tt.store"(%p, %v, %m) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<f32>, f32, tensor<2xi1>) -> ()
  tt.return
}

// -----

tt.func @split_last_dim(%x: tensor<16x4xf32>) {
  // expected-error @+1 {{'tt.split' op the last dimension of the source must be 2}}
  %0, %1 = tt.split %x : tensor<16x4xf32> -> tensor<16xf32>
  tt.return
}

// -----

tt.func @split_result_shape(%x: tensor<16x2xf32>) {
  // expected-error @+1 {{'tt.split' op result shape must be [16]}}
  %0, %1 = tt.split %x : tensor<16x2xf32> -> tensor<8xf32>
  tt.return
}

// -----

tt.func @join_result_shape(%x: tensor<16xf32>) {
  // expected-error @+1 {{'tt.join' op result shape must be [16, 2]}}
  %0 = tt.join %x, %x : tensor<16xf32> -> tensor<32xf32>
  tt.return
}

// -----

tt.func @join_operand_types(%x: tensor<16xf32>, %y: tensor<16xf16>) {
  // expected-error @+1 {{'tt.join' op requires all operands to have the same type}}
  %0 = "tt.join"(%x, %y) : (tensor<16xf32>, tensor<16xf16>) -> tensor<16x2xf32>
  tt.return
}

// -----

tt.func @cat_operand_types(%x: tensor<16xf32>, %y: tensor<32xf32>) {
  // expected-error @+1 {{'tt.cat' op requires all operands to have the same type}}
  %0 = "tt.cat"(%x, %y) : (tensor<16xf32>, tensor<32xf32>) -> tensor<48xf32>
  tt.return
}

// -----

tt.func @return_type(%x: f32) -> i32 {
  // expected-error @+1 {{'tt.return' op type of return operand 0 ('f32') does not match function result type ('i32')}}
  tt.return %x : f32
}

// -----

tt.func @return_count(%x: f32) -> (f32, f32) {
  // expected-error @+1 {{'tt.return' op has 1 operands, but enclosing function @return_count returns 2}}
  tt.return %x : f32
}

// -----

func.func @return_outside(%x: f32) {
  // expected-error @+1 {{'tt.return' op expects parent op 'tt.func'}}
  tt.return
}

// -----

tt.func @call_missing(%x: f32) {
  // expected-error @+1 {{'tt.call' op 'nowhere' does not reference a valid tt.func}}
  %0 = tt.call @nowhere(%x) : (f32) -> f32
  tt.return
}

// -----

tt.func private @callee(f32) -> f32
tt.func @call_operand_type(%x: f16) {
  // expected-error @+1 {{'tt.call' op operand type mismatch: expected 'f32', got 'f16'}}
  %0 = tt.call @callee(%x) : (f16) -> f32
  tt.return
}

// -----

tt.func private @callee(f32) -> f32
tt.func @call_count(%x: f32) {
  // expected-error @+1 {{'tt.call' op operand or result count does not match the callee's type}}
  %0:2 = tt.call @callee(%x) : (f32) -> (f32, f32)
  tt.return
}

// -----

func.func private @func_callee(f32) -> f32
tt.func @call_func_func(%x: f32) {
  // expected-error @+1 {{'tt.call' op 'func_callee' does not reference a valid tt.func}}
  %0 = tt.call @func_callee(%x) : (f32) -> f32
  tt.return
}

// -----

tt.func @bitcast_width(%x: tensor<16xi32>) {
  // expected-error @+1 {{'tt.bitcast' op source and result element types differ in bit width}}
  %0 = tt.bitcast %x : tensor<16xi32> -> tensor<16xf16>
  tt.return
}

// -----

tt.func @bitcast_shape(%x: tensor<16xi32>) {
  // expected-error @+1 {{'tt.bitcast' op all non-scalar operands/results must have the same shape and base type}}
  %0 = "tt.bitcast"(%x) : (tensor<16xi32>) -> tensor<8xf32>
  tt.return
}

// -----

tt.func @splat_tensor(%x: tensor<16xf32>) {
  // expected-error @+1 {{'tt.splat' op source must be a scalar, got 'tensor<16xf32>'}}
  %0 = tt.splat %x : tensor<16xf32> -> tensor<16xf32>
  tt.return
}

// -----

tt.func @splat_element(%x: f32) {
  // expected-error @+1 {{'tt.splat' op requires the same element type for all operands and results}}
  %0 = tt.splat %x : f32 -> tensor<16xf16>
  tt.return
}

// -----

tt.func @splat_to_scalar(%x: f32) {
  // expected-error @+1 {{custom op 'tt.splat' invalid kind of type specified: expected builtin.tensor, but found 'f32'}}
  %0 = tt.splat %x : f32 -> f32
  tt.return
}

// -----

tt.func @reshape_count(%x: tensor<16xf32>) {
  // expected-error @+1 {{'tt.reshape' op source and result must have the same number of elements}}
  %0 = tt.reshape %x : tensor<16xf32> -> tensor<4x8xf32>
  tt.return
}

// -----

tt.func @unsplat_scalar(%x: f32) {
  // expected-error @+1 {{'tt.unsplat' op operand #0 must be statically shaped tensor of floating-point or integer or scalar pointer values, but got 'f32'}}
  %0 = "tt.unsplat"(%x) : (f32) -> f32
  tt.return
}

// -----

tt.func @addptr_offset_float(%p: !tt.ptr<f32>, %o: f32) {
  // expected-error @+1 {{'tt.addptr' op operand #1 must be integer or statically shaped tensor of integer values, but got 'f32'}}
  %0 = tt.addptr %p, %o : !tt.ptr<f32>, f32
  tt.return
}

// -----

tt.func @addptr_result(%p: !tt.ptr<f32>, %o: i32) {
  // expected-error @+1 {{'tt.addptr' op failed to verify that result type matches ptr type}}
  %0 = "tt.addptr"(%p, %o) : (!tt.ptr<f32>, i32) -> !tt.ptr<f16>
  tt.return
}

// -----

tt.func @addptr_shape(%p: tensor<16x!tt.ptr<f32>>, %o: tensor<8xi32>) {
  // expected-error @+1 {{'tt.addptr' op all non-scalar operands/results must have the same shape and base type}}
  %0 = tt.addptr %p, %o : tensor<16x!tt.ptr<f32>>, tensor<8xi32>
  tt.return
}

// -----

tt.func @atomic_rmw_val(%p: !tt.ptr<f32>, %v: f16) {
  // expected-error @+1 {{'tt.atomic_rmw' op failed to verify that ptr type matches value type}}
  %0 = tt.atomic_rmw fadd, acq_rel, gpu, %p, %v : (!tt.ptr<f32>, f16) -> f16
  tt.return
}

// -----

tt.func @atomic_rmw_kind(%p: !tt.ptr<f32>, %v: f32) {
  // expected-error @+1 {{custom op 'tt.atomic_rmw' expected string or keyword containing one of the following enum values for attribute}}
  %0 = tt.atomic_rmw fmul, acq_rel, gpu, %p, %v : (!tt.ptr<f32>, f32) -> f32
  tt.return
}

// -----

tt.func @atomic_cas_shape(%p: tensor<4x!tt.ptr<i32>>, %v: tensor<8xi32>) {
  // expected-error @+1 {{'tt.atomic_cas' op requires the same shape for all operands and results}}
  %0 = tt.atomic_cas acq_rel, gpu, %p, %v, %v : (tensor<4x!tt.ptr<i32>>, tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  tt.return
}

// -----

tt.func @program_id_axis() {
  // expected-error @+1 {{custom op 'tt.get_program_id' expected string or keyword containing one of the following enum values for attribute 'axis' [x, y, z]}}
  %0 = tt.get_program_id w : i32
  tt.return
}

// -----

tt.func @program_id_type() {
  // expected-error @+1 {{'tt.get_program_id' op result #0 must be 32-bit signless integer, but got 'i64'}}
  %0 = tt.get_program_id x : i64
  tt.return
}

// -----

tt.func @int_to_ptr_i32(%x: i32) {
  // expected-error @+1 {{'tt.int_to_ptr' op operand #0 must be 64-bit signless integer or statically shaped tensor of 64-bit signless integer values, but got 'i32'}}
  %0 = tt.int_to_ptr %x : i32 -> !tt.ptr<f32>
  tt.return
}

// -----

tt.func @fp_to_fp_int(%x: i32) {
  // expected-error @+1 {{'tt.fp_to_fp' op operand #0 must be floating-point or statically shaped tensor of floating-point values, but got 'i32'}}
  %0 = tt.fp_to_fp %x : i32 -> f16
  tt.return
}

// -----

tt.func @fp_to_fp_rounding(%x: f32) {
  // expected-error @+1 {{custom op 'tt.fp_to_fp' expected string or keyword containing one of the following enum values for attribute 'rounding' [rtz, rtne]}}
  %0 = tt.fp_to_fp %x, rounding = rtp : f32 -> f16
  tt.return
}

// -----

tt.func @clampf_propagate(%x: f32) {
  // expected-error @+1 {{custom op 'tt.clampf' expected string or keyword containing one of the following enum values for attribute 'propagateNan' [none, all]}}
  %0 = tt.clampf %x, %x, %x, propagateNan = some : f32
  tt.return
}

// -----

tt.func @histogram_float(%x: tensor<16xf32>) {
  // expected-error @+1 {{'tt.histogram' op operand #0 must be statically shaped tensor of integer values, but got 'tensor<16xf32>'}}
  %0 = tt.histogram %x : tensor<16xf32> -> tensor<8xi32>
  tt.return
}

// -----

tt.func @gather_float_indices(%x: tensor<16xf32>, %i: tensor<16xf32>) {
  // expected-error @+1 {{'tt.gather' op operand #1 must be statically shaped tensor of integer values, but got 'tensor<16xf32>'}}
  %0 = tt.gather %x[%i] {axis = 0 : i32} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  tt.return
}

// -----

tt.func @assert_float(%x: f32) {
  // expected-error @+1 {{'tt.assert' op operand #0 must be 1-bit signless integer or statically shaped tensor of 1-bit signless integer values, but got 'f32'}}
  tt.assert %x, "no" : f32
  tt.return
}

// -----

tt.func @make_tensor_ptr_base(%p: !tt.ptr<f16>, %s: i64, %o: i32) {
  // expected-error @+1 {{'tt.make_tensor_ptr' op failed to verify that base pointer matches the block's element type}}
  %0 = "tt.make_tensor_ptr"(%p, %s, %s, %o) <{order = array<i32: 0>}> : (!tt.ptr<f16>, i64, i64, i32) -> !tt.ptr<tensor<32xf32>>
  tt.return
}

// -----

tt.func @func_in_func() {
  // expected-error @+1 {{'tt.func' op expects parent op 'builtin.module'}}
  tt.func @inner() {
    tt.return
  }
  tt.return
}

// -----

// expected-error @+1 {{expected non-function type}}
tt.func @ptr_empty(%p: !tt.ptr<>) {
  tt.return
}

// -----

// expected-error @+1 {{expected non-function type}}
tt.func @negative_dim(%x: tensor<-1xf32>) {
  tt.return
}

// -----

tt.func @reduce_tt_return_terminator(%x: tensor<4xf32>) {
  %0 = "tt.reduce"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    // expected-error @+1 {{'tt.return' op expects parent op 'tt.func'}}
    tt.return
  }) : (tensor<4xf32>) -> f32
  tt.return
}

// -----

tt.func @reduce_no_region(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tt.reduce' op requires one region}}
  %0 = "tt.reduce"(%x) <{axis = 0 : i32}> : (tensor<4xf32>) -> f32
  tt.return
}

// -----

tt.func @reduce_two_blocks(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tt.reduce' op expects region #0 to have 0 or 1 blocks}}
  %0 = "tt.reduce"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    tt.reduce.return %a : f32
  ^bb1:
    tt.reduce.return %a : f32
  }) : (tensor<4xf32>) -> f32
  tt.return
}

// -----

// expected-note @+1 {{see existing symbol definition here}}
tt.func @dup() {
  tt.return
}
// expected-error @+1 {{redefinition of symbol named 'dup'}}
tt.func @dup() {
  tt.return
}

// -----

tt.func @func_no_terminator() {
  // expected-error @+1 {{block with no terminator}}
  %0 = arith.constant 0 : i32
}

// -----

tt.func @use_before_def() {
  // expected-error @+1 {{operand #0 does not dominate this use}}
  %0 = arith.addi %1, %1 : i32
  // expected-note @+1 {{operand defined here (op in the same block)}}
  %1 = arith.constant 0 : i32
  tt.return
}

// -----

tt.func @unknown_tt_op() {
  // expected-error @+1 {{custom op 'tt.frobnicate' is unknown}}
  %0 = tt.frobnicate : i32
  tt.return
}

// -----

tt.func @print_missing_is_signed(%x: i32) {
  // expected-error @+1 {{'tt.print' op requires attribute 'isSigned'}}
  tt.print "x" {hex = false} : %x : i32
  tt.return
}

// -----

tt.func @load_block_ptr_other(%p: !tt.ptr<tensor<4xf32>>, %m: tensor<4xi1>, %o: tensor<8xf32>) {
  // expected-error @+1 {{'tt.load' op failed to verify that other matches ptr type}}
  %0 = "tt.load"(%p, %m, %o) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!tt.ptr<tensor<4xf32>>, tensor<4xi1>, tensor<8xf32>) -> tensor<4xf32>
  tt.return
}

// -----

tt.func @atomic_rmw_mask(%p: tensor<4x!tt.ptr<f32>>, %v: tensor<4xf32>, %m: tensor<8xi1>) {
  // expected-error @+1 {{'tt.atomic_rmw' op failed to verify that mask type matches value type}}
  %0 = "tt.atomic_rmw"(%p, %v, %m) <{atomic_rmw_op = 5 : i32, scope = 1 : i32, sem = 4 : i32}> : (tensor<4x!tt.ptr<f32>>, tensor<4xf32>, tensor<8xi1>) -> tensor<4xf32>
  tt.return
}

// -----

tt.func @scan_axis(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tt.scan' op axis 3 out of range for rank 1}}
  %0 = "tt.scan"(%x) <{axis = 3 : i32, reverse = false}> ({
  ^bb0(%a: f32, %b: f32):
    tt.scan.return %a : f32
  }) : (tensor<32xf32>) -> tensor<32xf32>
  tt.return
}

// -----

tt.func @scan_return_count(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tt.scan' op combine region must return 1 values}}
  %0 = "tt.scan"(%x) <{axis = 0 : i32, reverse = false}> ({
  ^bb0(%a: f32, %b: f32):
    tt.scan.return %a, %b : f32, f32
  }) : (tensor<32xf32>) -> tensor<32xf32>
  tt.return
}

// -----

// expected-note @+1 {{prior use here}}
tt.func @advance_offset_type(%p: !tt.ptr<tensor<32xf32>>, %o: i64) {
  // expected-error @+1 {{use of value '%o' expects different type than prior uses: 'i32' vs 'i64'}}
  %0 = tt.advance %p, [%o] : !tt.ptr<tensor<32xf32>>
  tt.return
}

// -----

tt.func @advance_result(%p: !tt.ptr<tensor<32xf32>>, %o: i32) {
  // expected-error @+1 {{'tt.advance' op failed to verify that result type matches ptr type}}
  %0 = "tt.advance"(%p, %o) : (!tt.ptr<tensor<32xf32>>, i32) -> !tt.ptr<tensor<16xf32>>
  tt.return
}

// -----

tt.func @inline_asm_missing_pure(%x: tensor<64xf32>) {
  // expected-error @+1 {{'tt.elementwise_inline_asm' op requires attribute 'pure'}}
  %0 = tt.elementwise_inline_asm "mov.b32 $0, $1;" {constraints = "=r,r", packed_element = 1 : i32} %x : tensor<64xf32> -> tensor<64xf32>
  tt.return
}

// -----

tt.func @extern_missing_symbol(%x: tensor<64xf32>) {
  // expected-error @+1 {{'tt.extern_elementwise' op requires attribute 'symbol'}}
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true} : (tensor<64xf32>) -> tensor<64xf32>
  tt.return
}

// -----

tt.func @num_programs_type() {
  // expected-error @+1 {{'tt.get_num_programs' op result #0 must be 32-bit signless integer, but got 'i64'}}
  %0 = tt.get_num_programs x : i64
  tt.return
}

// -----

tt.func @mulhiui_float(%x: f32) {
  // expected-error @+1 {{'tt.mulhiui' op operand #0 must be integer or statically shaped tensor of integer values, but got 'f32'}}
  %0 = tt.mulhiui %x, %x : f32
  tt.return
}

// -----

tt.func @precise_divf_types(%x: f32, %y: f16) {
  // expected-error @+1 {{'tt.precise_divf' op requires the same type for all operands and results}}
  %0 = "tt.precise_divf"(%x, %y) : (f32, f16) -> f32
  tt.return
}

// -----

tt.func @precise_sqrt_int(%x: i32) {
  // expected-error @+1 {{'tt.precise_sqrt' op operand #0 must be floating-point or statically shaped tensor of floating-point values, but got 'i32'}}
  %0 = tt.precise_sqrt %x : i32
  tt.return
}

// -----

tt.func @ptr_to_int_i32(%p: !tt.ptr<f32>) {
  // expected-error @+1 {{'tt.ptr_to_int' op result #0 must be 64-bit signless integer or statically shaped tensor of 64-bit signless integer values, but got 'i32'}}
  %0 = tt.ptr_to_int %p : !tt.ptr<f32> -> i32
  tt.return
}
