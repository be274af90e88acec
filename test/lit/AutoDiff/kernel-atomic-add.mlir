// Forward kernels that atomically add into a differentiated output
// (`tl.atomic_add(y_ptr, v)`: split-K products, sums over programs, scatter-
// adds): y_final = y_init + the sum of every add, whatever their order, so
// each add's value reads the upstream gradient at its addresses, the output's
// shadow is left as it is, and the add is not replayed.

// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A program's sum of squares added into one scalar: dx = 2 x dy[0].
// The programs along axes 1 and 2 would add again, so x's gradient is plain
// only where the grid has one program along them.
// REMARK: remark: accumulation of x: plain when
// REMARK: remark: accumulation of y: output, atomically added to
// CHECK-LABEL: tt.func public @bwd
// CHECK-SAME: %[[DX:[a-z0-9]+]]: !tt.ptr<f32>, %[[DY:[a-z0-9]+]]: !tt.ptr<f32>)
// CHECK: %[[UP:.+]] = tt.load %[[DY]], %{{.+}}, %{{.+}} : !tt.ptr<f32>
// CHECK: %[[UPS:.+]] = tt.splat %[[UP]] : f32 -> tensor<128xf32>
// CHECK: arith.mulf %[[UPS]], %{{.+}}
// CHECK-NOT: tt.store %[[DY]]
// CHECK: tt.get_num_programs y
// CHECK: tt.store
// CHECK: tt.atomic_rmw fadd, relaxed, gpu, %{{.+}}, %{{.+}}, %{{.+}} : (tensor<128x!tt.ptr<f32>>
// CHECK-NOT: tt.store %[[DY]]
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n")) {
    %c128 = arith.constant 128 : i32
    %zero = arith.constant dense<0.0> : tensor<128xf32>
    %pid = tt.get_program_id x : i32
    %base = arith.muli %pid, %c128 : i32
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %b = tt.splat %base : i32 -> tensor<128xi32>
    %offs = arith.addi %b, %r : tensor<128xi32>
    %ns = tt.splat %n : i32 -> tensor<128xi32>
    %m = arith.cmpi slt, %offs, %ns : tensor<128xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %v = tt.load %xp, %m, %zero : tensor<128x!tt.ptr<f32>>
    %sq = arith.mulf %v, %v : tensor<128xf32>
    %s = "tt.reduce"(%sq) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %c: f32):
      %t = arith.addf %a, %c : f32
      tt.reduce.return %t : f32
    }) : (tensor<128xf32>) -> f32
    %true = arith.constant true
    %old = tt.atomic_rmw fadd, acq_rel, gpu, %y, %s, %true : (!tt.ptr<f32>, f32, i1) -> f32
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}

// -----

// A 2-D grid whose axis 1 the kernel never reads: each of those programs adds
// its value again (y = k * sum(x)), so they are not duplicates of the first,
// and x's gradient is not left to program (0, 0) alone: the programs along
// axis 1 share x's addresses, so the accumulation is atomic unless that axis
// has one program.
// REMARK: remark: accumulation of x: plain when
// CHECK-LABEL: tt.func public @bwd
// CHECK-NOT: tt.get_program_id y
// CHECK: tt.get_num_programs y
// CHECK: tt.atomic_rmw fadd, relaxed, gpu, %{{.+}}, %{{.+}}, %{{.+}} : (tensor<128x!tt.ptr<f32>>
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y")) {
    %c128 = arith.constant 128 : i32
    %pid = tt.get_program_id x : i32
    %base = arith.muli %pid, %c128 : i32
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %b = tt.splat %base : i32 -> tensor<128xi32>
    %offs = arith.addi %b, %r : tensor<128xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %v = tt.load %xp : tensor<128x!tt.ptr<f32>>
    %e = math.exp %v : tensor<128xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %old = tt.atomic_rmw fadd, relaxed, gpu, %yp, %e : (tensor<128x!tt.ptr<f32>>, tensor<128xf32>) -> tensor<128xf32>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y) : (!tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}
