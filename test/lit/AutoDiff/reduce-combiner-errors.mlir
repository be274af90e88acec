// Combiners the general tt.reduce rule (Rules/CombinerRules.cpp) refuses, each a
// located error at the op that makes it: a branch inside the combine function
// (no elementwise form), a value captured from outside the combine region.
// (A non-associative `a - b` combiner: errors.mlir.)

// RUN: tritonad-opt %s --split-input-file --tritonad-differentiate="function=f" --verify-diagnostics

tt.func public @f(%x: tensor<16xf32>) -> f32 {
  %0 = "tt.reduce"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %c = arith.cmpf ogt, %a, %b : f32
    // expected-error @+1 {{cannot differentiate tt.reduce: its combine region uses 'scf.if', which is not an elementwise op}}
    %r = scf.if %c -> f32 {
      %s = arith.mulf %a, %b : f32
      scf.yield %s : f32
    } else {
      %s = arith.addf %a, %b : f32
      scf.yield %s : f32
    }
    tt.reduce.return %r : f32
  }) : (tensor<16xf32>) -> f32
  tt.return %0 : f32
}

// -----

tt.func public @f(%x: tensor<16xf32>, %t: f32) -> f32 {
  %0 = "tt.reduce"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    // expected-error @+1 {{cannot differentiate tt.reduce: its combine region uses a value defined outside it}}
    %s = arith.mulf %a, %t : f32
    %r = arith.addf %s, %b : f32
    tt.reduce.return %r : f32
  }) : (tensor<16xf32>) -> f32
  tt.return %0 : f32
}
