// accumulate=False (overwrite=true): the input shadows arrive zeroed; where each
// element has one writer the backward stores the gradient without reading the
// shadow first, elsewhere it still accumulates.

// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y overwrite=true" --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y overwrite=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// One program per block of 128, one load: stored, never read.
// REMARK: remark: accumulation of x: overwrite (proven{{.*}}); no zero fill where these stores reach every element of the tensor (checked at launch)
// CHECK-LABEL: tt.func public @bwd
// CHECK-SAME: i32, %[[DX:[^:]+]]: !tt.ptr<f32>, %[[DY:[^:]+]]: !tt.ptr<f32>)
// CHECK: %[[DXS:.+]] = tt.splat %[[DX]]
// CHECK-NEXT: %[[DXP:.+]] = tt.addptr %[[DXS]]
// CHECK-NOT: tt.load
// CHECK: tt.store %[[DXP]], %{{.+}}, %{{.+}} : tensor<128x!tt.ptr<f32>>
// CHECK-NOT: tt.atomic_rmw
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %c128 = arith.constant 128 : i32
    %pid = tt.get_program_id x : i32
    %base = arith.muli %pid, %c128 : i32
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %b = tt.splat %base : i32 -> tensor<128xi32>
    %offs = arith.addi %b, %r : tensor<128xi32>
    %ns = tt.splat %n : i32 -> tensor<128xi32>
    %m = arith.cmpi slt, %offs, %ns : tensor<128xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %v = tt.load %xp, %m : tensor<128x!tt.ptr<f32>>
    %e = math.exp %v : tensor<128xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    tt.store %yp, %e, %m : tensor<128x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// The same 64 addresses loaded in every iteration of a loop: a program writes
// each element once per iteration, so it must still read and add.
// REMARK: remark: accumulation of x: plain (proven{{[^;]*}}{{$}}
// CHECK-LABEL: tt.func public @bwd
// CHECK: scf.for
// CHECK: %[[OLD:.+]] = tt.load %[[P:[^ ,]+]], %[[FIRST:[^ ,]+]], {{.+}} :
// CHECK-NEXT: %[[NEW:.+]] = arith.addf %[[OLD]]
// CHECK-NEXT: tt.store %[[P]], %[[NEW]], %[[FIRST]]
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant dense<0.0> : tensor<64xf32>
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %acc = scf.for %k = %c0 to %n step %c1 iter_args(%a = %zero) -> (tensor<64xf32>) : i32 {
      %v = tt.load %xp : tensor<64x!tt.ptr<f32>>
      %e = math.exp %v : tensor<64xf32>
      %next = arith.addf %a, %e : tensor<64xf32>
      scf.yield %next : tensor<64xf32>
    }
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %yp, %acc : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}
