// A store whose lanes write one address (an address that ignores its lanes,
// under no mask): the forward keeps one lane's value, and each lane would
// receive the whole upstream gradient. Refused at the store. A store of
// lanes masked by a lane condition is not checked (the mask may pick one).

// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" --verify-diagnostics

module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y")) {
    %pid = tt.get_program_id x : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %c16 = arith.constant 16 : i32
    %start = arith.muli %pid, %c16 : i32
    %starts = tt.splat %start : i32 -> tensor<16xi32>
    %offs = arith.addi %starts, %r : tensor<16xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %v = tt.load %xp : tensor<16x!tt.ptr<f32>>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %pids = tt.splat %pid : i32 -> tensor<16xi32>
    %yp = tt.addptr %ys, %pids : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    // expected-error @+1 {{cannot differentiate a store whose lanes or programs write the same addresses (lanes along dim 0 share addresses)}}
    tt.store %yp, %v : tensor<16x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y) : (!tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}

// -----

// The same address under a mask that keeps lane 0 only: derived.
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y")) {
    %pid = tt.get_program_id x : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %c0 = arith.constant dense<0> : tensor<16xi32>
    %c16 = arith.constant 16 : i32
    %start = arith.muli %pid, %c16 : i32
    %starts = tt.splat %start : i32 -> tensor<16xi32>
    %offs = arith.addi %starts, %r : tensor<16xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %v = tt.load %xp : tensor<16x!tt.ptr<f32>>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %pids = tt.splat %pid : i32 -> tensor<16xi32>
    %yp = tt.addptr %ys, %pids : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %first = arith.cmpi eq, %r, %c0 : tensor<16xi32>
    tt.store %yp, %v, %first : tensor<16x!tt.ptr<f32>>
    tt.return
  }
  // expected-remark @+2 {{accumulation of x}}
  // expected-remark @+1 {{accumulation of y}}
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y) : (!tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}
