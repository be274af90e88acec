// What tritonad refuses to differentiate, and how it says so: every error names
// the op (at its own location) and why.

// Rule errors, one per split (each split has its own @f):
// RUN: tritonad-opt %s --split-input-file --tritonad-differentiate="function=f" --verify-diagnostics

// Bad `wrt` options and function names (the pass fails, tritonad-opt exits non-zero).
// wrt=1 is out of range for the one-argument splits and names an i32 / pointer
// argument in the last two; the first split has two float arguments (the cat error).
// RUN: not tritonad-opt %s --split-input-file --tritonad-differentiate="function=f wrt=1" 2>&1 | FileCheck %s --check-prefix=WRT1
// RUN: not tritonad-opt %s --split-input-file --tritonad-differentiate="function=nope" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not tritonad-opt %s --split-input-file --tritonad-differentiate 2>&1 | FileCheck %s --check-prefix=NONAME
// (wrt indices far out of range are not tested here: they currently crash
// tritonad-opt in getVJPType, which indexes the argument types before validating.)

// MISSING: error: no tt.func named @nope to differentiate
// NONAME: error: tritonad-differentiate needs function=<name of a tt.func>

tt.func public @f(%x: tensor<32xf32>, %y: tensor<32xf32>) -> tensor<64xf32> {
  // WRT1: errors.mlir:[[@LINE+2]]:8: error: cannot differentiate tt.cat
  // expected-error @+1 {{cannot differentiate tt.cat: Triton may reorder the elements of its result}}
  %0 = tt.cat %x, %y : tensor<32xf32> -> tensor<64xf32>
  tt.return %0 : tensor<64xf32>
}

// -----

// A reduce whose combine region subtracts is not associative: no gradient.
// WRT1: errors.mlir:[[@LINE+1]]:1: error: wrt index 1 out of range: @f has 1 arguments
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{cannot differentiate tt.reduce: its combine region returns 'arith.subf' of its two operands, which is not associative}}
  %0 = "tt.reduce"(%x) <{axis = 1 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %p = arith.subf %a, %b : f32
    tt.reduce.return %p : f32
  }) : (tensor<16x32xf32>) -> tensor<16xf32>
  tt.return %0 : tensor<16xf32>
}

// -----

// A running max (scan with a maxnumf combine) has no rule.
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  // expected-error @+1 {{cannot differentiate tt.scan: its combine region is not a sum, a product or a first-order linear recurrence}}
  %0 = "tt.scan"(%x) <{axis = 1 : i32, reverse = false}> ({
  ^bb0(%a: f32, %b: f32):
    // expected-note @+1 {{combine region op: arith.maxnumf}}
    %m = arith.maxnumf %a, %b : f32
    tt.scan.return %m : f32
  }) : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// A combiner that is not an affine composition (b1 * b2 + a2 in the second
// result): refused, not differentiated as a recurrence.
tt.func public @f(%a: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{cannot differentiate tt.scan: its combine region is not a sum, a product or a first-order linear recurrence}}
  %0:2 = "tt.scan"(%a, %b) <{axis = 0 : i32, reverse = false}> ({
  ^bb0(%a1: f32, %b1: f32, %a2: f32, %b2: f32):
    // expected-note @+1 {{combine region op: arith.mulf}}
    %p = arith.mulf %a1, %a2 : f32
    // expected-note @+1 {{combine region op: arith.mulf}}
    %q = arith.mulf %b1, %b2 : f32
    // expected-note @+1 {{combine region op: arith.addf}}
    %r = arith.addf %q, %a2 : f32
    tt.scan.return %p, %r : f32, f32
  }) : (tensor<16xf32>, tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>)
  tt.return %0#1 : tensor<16xf32>
}

// -----

// A libdevice function without a rule (Bessel j0).
tt.func public @f(%x: tensor<32xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{no derivative rule for device-library function '__nv_j0f'}}
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_j0f"} : (tensor<32xf32>) -> tensor<32xf32>
  tt.return %0 : tensor<32xf32>
}

// -----

// A float op with no rule at all.
tt.func public @f(%x: tensor<32xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{no derivative rule for 'math.atan'}}
  %0 = math.atan %x : tensor<32xf32>
  tt.return %0 : tensor<32xf32>
}

// -----

// An op with regions and no reverse-mode rule: refused, not skipped.
tt.func public @f(%x: f32, %k: index) -> f32 {
  // expected-error @+1 {{cannot differentiate 'scf.index_switch': no reverse-mode rule for this op with regions}}
  %0 = scf.index_switch %k -> f32
  case 0 {
    %1 = arith.mulf %x, %x : f32
    scf.yield %1 : f32
  }
  default {
    scf.yield %x : f32
  }
  tt.return %0 : f32
}

// -----

// tl.reshape(..., can_reorder=True): the element order is unspecified.
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<512xf32> {
  // expected-error @+1 {{cannot differentiate tt.reshape with allow_reorder: the element order is unspecified}}
  %0 = tt.reshape %x allow_reorder : tensor<16x32xf32> -> tensor<512xf32>
  tt.return %0 : tensor<512xf32>
}

// -----

// A selecting (argmax-style) reduce whose indices are not a tl.arange along the
// axis: the selected element cannot be identified.
tt.func public @f(%x: tensor<32xf32>, %i: tensor<32xi32>) -> f32 {
  // expected-error @+1 {{cannot differentiate this selecting tt.reduce: none of its operands is a tl.arange index along the reduced axis}}
  %0:2 = "tt.reduce"(%x, %i) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %ai: i32, %b: f32, %bi: i32):
    %gt = arith.cmpf ogt, %a, %b : f32
    %v = arith.select %gt, %a, %b : f32
    %j = arith.select %gt, %ai, %bi : i32
    tt.reduce.return %v, %j : f32, i32
  }) : (tensor<32xf32>, tensor<32xi32>) -> (f32, i32)
  tt.return %0#0 : f32
}

// -----

// A call to a noinline helper cannot be seen through.
tt.func private @helper(%x: tensor<32xf32>) -> tensor<32xf32> attributes {noinline = true} {
  %0 = math.sin %x : tensor<32xf32>
  tt.return %0 : tensor<32xf32>
}
tt.func public @f(%x: tensor<32xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{cannot differentiate through @helper, which is marked noinline}}
  %0 = tt.call @helper(%x) : (tensor<32xf32>) -> tensor<32xf32>
  tt.return %0 : tensor<32xf32>
}

// -----

// Integer and pointer arguments: fine by default (not differentiated), an error
// when named in wrt (see the WRT1 run).
// WRT1: errors.mlir:[[@LINE+1]]:1: error: argument 1 of @f has type 'i32'; only floating-point scalars and tensors can be differentiated
tt.func public @f(%x: tensor<32xf32>, %n: i32) -> tensor<32xf32> {
  %0 = math.sin %x : tensor<32xf32>
  tt.return %0 : tensor<32xf32>
}

// -----

// WRT1: errors.mlir:[[@LINE+1]]:1: error: argument 1 of @f has type '!tt.ptr<f32>'; only floating-point scalars and tensors can be differentiated
tt.func public @f(%x: tensor<32xf32>, %p: !tt.ptr<f32>) -> tensor<32xf32> {
  %0 = math.sin %x : tensor<32xf32>
  tt.return %0 : tensor<32xf32>
}

// -----

// The condition reads the differentiated carried value: its trip count would
// depend on the value tritonad does not recompute.
tt.func @f(%x: tensor<32xf32>) -> tensor<32xf32> {
  %limit = arith.constant 100.0 : f32
  // expected-error @+1 {{cannot differentiate this scf.while: its condition depends on the differentiated carried value #0}}
  %0 = scf.while (%acc = %x) : (tensor<32xf32>) -> tensor<32xf32> {
    %s = "tt.reduce"(%acc) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %m = arith.addf %a, %b : f32
      tt.reduce.return %m : f32
    }) : (tensor<32xf32>) -> f32
    %go = arith.cmpf olt, %s, %limit : f32
    scf.condition(%go) %acc : tensor<32xf32>
  } do {
  ^bb0(%a: tensor<32xf32>):
    %e = math.exp %x : tensor<32xf32>
    %next = arith.addf %a, %e : tensor<32xf32>
    scf.yield %next : tensor<32xf32>
  }
  tt.return %0 : tensor<32xf32>
}

// -----

// A while loop carrying a value that is not a pure accumulation (one that
// counts up by a constant would be an scf.for, which keeps such values).
tt.func @f(%x: tensor<32xf32>, %n: i32) -> tensor<32xf32> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  // expected-error @+1 {{cannot differentiate this scf.while: loop-carried value #0 is not a pure accumulation}}
  %0:2 = scf.while (%y = %x, %k = %n) : (tensor<32xf32>, i32) -> (tensor<32xf32>, i32) {
    %go = arith.cmpi sgt, %k, %c0 : i32
    scf.condition(%go) %y, %k : tensor<32xf32>, i32
  } do {
  ^bb0(%a: tensor<32xf32>, %i: i32):
    %next = math.sin %a : tensor<32xf32>
    %i2 = arith.subi %i, %c1 : i32
    scf.yield %next, %i2 : tensor<32xf32>, i32
  }
  tt.return %0#0 : tensor<32xf32>
}
