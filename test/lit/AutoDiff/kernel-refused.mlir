// Kernels whose gradient was once silently wrong and that tritonad now
// refuses, at the op, saying why.

// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y,dz:z" --verify-diagnostics


// Addresses shifted by one element per iteration overlap: refused.
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %v = tt.load %xp : tensor<64x!tt.ptr<f32>>
    scf.for %k = %c0 to %n step %c1 : i32 {
      %ks = tt.splat %k : i32 -> tensor<64xi32>
      %offs = arith.addi %ks, %r : tensor<64xi32>
      %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %yp = tt.addptr %ys, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      // expected-error @+1 {{cannot differentiate a store inside a loop whose addresses may repeat across iterations}}
      tt.store %yp, %v : tensor<64x!tt.ptr<f32>>
    }
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// A pointer chosen by a select between two differentiated inputs: refused.
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %z: !tt.ptr<f32> loc("z"), %y: !tt.ptr<f32> loc("y"), %c: i1 loc("c")) {
    %p = arith.select %c, %x, %z : !tt.ptr<f32>
    // expected-error @+1 {{tritonad cannot tell which pointer parameter its address comes from}}
    %v = tt.load %p : !tt.ptr<f32>
    tt.store %y, %v : !tt.ptr<f32>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %z: !tt.ptr<f32> loc("z"), %y: !tt.ptr<f32> loc("y"), %c: i1 loc("c"), %dx: !tt.ptr<f32> loc("dx"), %dz: !tt.ptr<f32> loc("dz"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %z, %y, %c) : (!tt.ptr<f32>, !tt.ptr<f32>, !tt.ptr<f32>, i1) -> ()
    tt.return
  }
}

// -----

// A pointer parameter the caller did not name (`w`, loaded only inside an
// inlined helper that Python's reading of the source missed): refused, not
// treated as a constant.
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %w: !tt.ptr<f32> loc("w"), %y: !tt.ptr<f32> loc("y")) {
    %a = tt.load %x : !tt.ptr<f32>
    // expected-error @+1 {{goes through pointer parameter 'w', which tritonad was not told about}}
    %b = tt.load %w : !tt.ptr<f32>
    %p = arith.mulf %a, %b : f32
    tt.store %y, %p : !tt.ptr<f32>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %w: !tt.ptr<f32> loc("w"), %y: !tt.ptr<f32> loc("y"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %w, %y) : (!tt.ptr<f32>, !tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}

// -----

// The old value of an atomic feeds the result: replaying it would update
// memory twice. Refused.
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %c: !tt.ptr<i32> loc("c"), %y: !tt.ptr<f32> loc("y")) {
    %one = arith.constant 1 : i32
    %true = arith.constant true
    // expected-error @+1 {{uses the result of 'tt.atomic_rmw'}}
    %t = tt.atomic_rmw add, acq_rel, gpu, %c, %one, %true : (!tt.ptr<i32>, i32, i1) -> i32
    %v = tt.load %x : !tt.ptr<f32>
    %f = arith.sitofp %t : i32 to f32
    %p = arith.mulf %v, %f : f32
    tt.store %y, %p : !tt.ptr<f32>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %c: !tt.ptr<i32> loc("c"), %y: !tt.ptr<f32> loc("y"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %c, %y) : (!tt.ptr<f32>, !tt.ptr<i32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}

// -----

// An atomic max into a differentiated output keeps one program's value:
// refused (an atomic add is differentiated: kernel-atomic-add.mlir).
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y")) {
    %true = arith.constant true
    %v = tt.load %x : !tt.ptr<f32>
    // expected-error @+1 {{cannot differentiate an atomic max of floats into a differentiated pointer}}
    %t = tt.atomic_rmw max, acq_rel, gpu, %y, %v, %true : (!tt.ptr<f32>, f32, i1) -> f32
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y) : (!tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}

// -----

// Stored to and atomically added to: what survives depends on the order of
// the programs. Refused.
module {
  // expected-error @+1 {{pointer argument 'y' is both stored to and atomically added to}}
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y")) {
    %true = arith.constant true
    %v = tt.load %x : !tt.ptr<f32>
    tt.store %y, %v : !tt.ptr<f32>
    %t = tt.atomic_rmw fadd, acq_rel, gpu, %y, %v, %true : (!tt.ptr<f32>, f32, i1) -> f32
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y) : (!tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}

// -----

// A float atomic add through a pointer tritonad was not told about would lose
// its gradient: refused, as a store through it is.
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %w: !tt.ptr<f32> loc("w")) {
    %true = arith.constant true
    %v = tt.load %x : !tt.ptr<f32>
    // expected-error @+1 {{this atomic add goes through pointer parameter 'w', which tritonad was not told about}}
    %t = tt.atomic_rmw fadd, acq_rel, gpu, %w, %v, %true : (!tt.ptr<f32>, f32, i1) -> f32
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %w: !tt.ptr<f32> loc("w"), %dx: !tt.ptr<f32> loc("dx")) {
    tt.call @fwd(%x, %w) : (!tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}

// -----

// Float bits through integers (as tl.sort swaps values): refused at the bitcast
// that rebuilds the float, not cut silently at the integer.
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y")) {
    %v = tt.load %x : !tt.ptr<f32>
    %i = tt.bitcast %v : f32 -> i32
    %k = arith.constant 0 : i32
    %j = arith.xori %i, %k : i32
    // expected-error @+1 {{a differentiated float passes through integer bits here}}
    %f = tt.bitcast %j : i32 -> f32
    tt.store %y, %f : !tt.ptr<f32>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y) : (!tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}

