// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" --canonicalize --cse | FileCheck %s
// RUN: tritonad-opt %s --split-input-file --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// Elementwise: offsets pid * 128 + arange(128) are proven disjoint: a plain
// read-add-write, no atomics; the forward's store is not replayed.
// REMARK: remark: accumulation of x: plain (proven
// REMARK: remark: accumulation of y: output
// CHECK-LABEL: tt.func public @bwd
// CHECK-NOT: tt.atomic_rmw
// CHECK: %[[DY:.+]] = tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<128x!tt.ptr<f32>>
// CHECK: %[[OLD:.+]] = tt.load
// CHECK: %[[NEW:.+]] = arith.addf %[[OLD]]
// CHECK: tt.store %{{.+}}, %[[NEW]], %{{.+}} : tensor<128x!tt.ptr<f32>>
// CHECK-NOT: tt.store
// CHECK: tt.return
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

// Every program loads the same 128 weights: plain only if there is a single
// program (checked at run time), atomics otherwise.
// REMARK: remark: accumulation of x: plain when
// CHECK-LABEL: tt.func public @bwd
// (predicated, not branched: Triton's Hopper pipeliner fails on branches
// inside pipelined loops)
// CHECK: tt.get_num_programs x
// CHECK: %[[ONE:.+]] = arith.cmpi sle
// CHECK: %[[MANY:.+]] = arith.cmpi sgt
// CHECK: %[[ONE_T:.+]] = tt.splat %[[ONE]] : i1 -> tensor<128xi1>
// CHECK: %[[PLAIN:.+]] = arith.andi %{{.+}}, %[[ONE_T]]
// CHECK: tt.store %{{.+}}, %{{.+}}, %[[PLAIN]]
// CHECK: %[[MANY_T:.+]] = tt.splat %[[MANY]] : i1 -> tensor<128xi1>
// CHECK: %[[ATOMIC:.+]] = arith.andi %{{.+}}, %[[MANY_T]]
// CHECK: tt.atomic_rmw fadd, relaxed, gpu, %{{.+}}, %{{.+}}, %[[ATOMIC]]
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y")) {
    %c128 = arith.constant 128 : i32
    %pid = tt.get_program_id x : i32
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %w = tt.load %xp : tensor<128x!tt.ptr<f32>>
    %base = arith.muli %pid, %c128 : i32
    %b = tt.splat %base : i32 -> tensor<128xi32>
    %offs = arith.addi %b, %r : tensor<128xi32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %w2 = arith.mulf %w, %w : tensor<128xf32>
    tt.store %yp, %w2 : tensor<128x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y) : (!tt.ptr<f32>, !tt.ptr<f32>) -> ()
    tt.return
  }
}

// -----

// Row-wise with a runtime stride: plain under a run-time check (stride >=
// min(128, n)), atomic otherwise, predicated on that program-uniform condition.
// REMARK: remark: accumulation of x: plain when
// CHECK-LABEL: tt.func public @bwd
// CHECK: %[[FITS:.+]] = arith.cmpi sge
// CHECK: %[[OVERLAPS:.+]] = arith.cmpi slt
// CHECK: %[[FITS_T:.+]] = tt.splat %[[FITS]]
// CHECK: %[[PLAIN:.+]] = arith.andi %{{.+}}, %[[FITS_T]]
// CHECK: tt.store %{{.+}}, %{{.+}}, %[[PLAIN]]
// CHECK: %[[OVERLAPS_T:.+]] = tt.splat %[[OVERLAPS]]
// CHECK: %[[ATOMIC:.+]] = arith.andi %{{.+}}, %[[OVERLAPS_T]]
// CHECK: tt.atomic_rmw fadd, relaxed, gpu, %{{.+}}, %{{.+}}, %[[ATOMIC]]
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %stride: i32 loc("stride"), %n: i32 loc("n")) {
    %row = tt.get_program_id x : i32
    %start = arith.muli %row, %stride : i32
    %xrow = tt.addptr %x, %start : !tt.ptr<f32>, i32
    %cols = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %ns = tt.splat %n : i32 -> tensor<128xi32>
    %m = arith.cmpi slt, %cols, %ns : tensor<128xi32>
    %xs = tt.splat %xrow : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %cols : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %v = tt.load %xp, %m : tensor<128x!tt.ptr<f32>>
    %s = "tt.reduce"(%v) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tt.reduce.return %t : f32
    }) : (tensor<128xf32>) -> f32
    %yp = tt.addptr %y, %row : !tt.ptr<f32>, i32
    tt.store %yp, %s : !tt.ptr<f32>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %stride: i32 loc("stride"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %stride, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32, i32) -> ()
    tt.return
  }
}

// -----

// The same row kernel with its mask written `n > cols` (sgt): the lanes are
// bounded by n too, so the run-time check compares the stride with min(128, n).
// REMARK: remark: accumulation of x: plain when
// CHECK-LABEL: tt.func public @bwd
// CHECK: %[[N:.+]] = arith.extsi %{{.+}} : i32 to i64
// CHECK: %[[EXTENT:.+]] = arith.minsi %[[N]], %{{.+}} : i64
// CHECK: arith.cmpi sge, %{{.+}}, %{{.+}} : i64
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %stride: i32 loc("stride"), %n: i32 loc("n")) {
    %row = tt.get_program_id x : i32
    %start = arith.muli %row, %stride : i32
    %xrow = tt.addptr %x, %start : !tt.ptr<f32>, i32
    %cols = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %ns = tt.splat %n : i32 -> tensor<128xi32>
    %m = arith.cmpi sgt, %ns, %cols : tensor<128xi32>
    %xs = tt.splat %xrow : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %cols : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %v = tt.load %xp, %m : tensor<128x!tt.ptr<f32>>
    %s = "tt.reduce"(%v) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tt.reduce.return %t : f32
    }) : (tensor<128xf32>) -> f32
    %yp = tt.addptr %y, %row : !tt.ptr<f32>, i32
    tt.store %yp, %s : !tt.ptr<f32>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %stride: i32 loc("stride"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %stride, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32, i32) -> ()
    tt.return
  }
}

// -----

// A loop over column blocks accumulating a row sum stays a loop (no
// unrolling, dynamic trip count): acc += x is a pure accumulation, so the
// reverse loop needs no cache; it recomputes each block's addresses and
// accumulates the (constant) adjoint of acc into dx.
// What a program touches is clamped by the mask cols < n: plain when the row
// stride is >= n.
// REMARK: remark: accumulation of x: plain when
// CHECK-LABEL: tt.func public @bwd
// CHECK: %[[DY:.+]] = tt.load %{{.+}} : !tt.ptr<f32>
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[N:.+]] step %{{.+}} : i32 {
// CHECK: tt.load
// CHECK: %[[EXT:.+]] = arith.extsi %[[N]]
// CHECK: %[[SPAN:.+]] = arith.minsi %{{.+}}, %[[EXT]]
// CHECK: arith.cmpi sge, %{{.+}}, %[[SPAN]]
// CHECK: tt.store
// CHECK: tt.atomic_rmw fadd
// CHECK-NOT: scf.for
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %stride: i32 loc("stride"), %n: i32 loc("n")) {
    %c0 = arith.constant 0 : i32
    %c128 = arith.constant 128 : i32
    %zero = arith.constant dense<0.0> : tensor<128xf32>
    %row = tt.get_program_id x : i32
    %start = arith.muli %row, %stride : i32
    %xrow = tt.addptr %x, %start : !tt.ptr<f32>, i32
    %cols0 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %ns = tt.splat %n : i32 -> tensor<128xi32>
    %acc = scf.for %off = %c0 to %n step %c128 iter_args(%a = %zero) -> (tensor<128xf32>) : i32 {
      %o = tt.splat %off : i32 -> tensor<128xi32>
      %cols = arith.addi %o, %cols0 : tensor<128xi32>
      %m = arith.cmpi slt, %cols, %ns : tensor<128xi32>
      %xs = tt.splat %xrow : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
      %xp = tt.addptr %xs, %cols : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
      %v = tt.load %xp, %m, %zero : tensor<128x!tt.ptr<f32>>
      %sq = arith.mulf %v, %v : tensor<128xf32>
      %next = arith.addf %a, %sq : tensor<128xf32>
      scf.yield %next : tensor<128xf32>
    }
    %s = "tt.reduce"(%acc) <{axis = 0 : i32}> ({
    ^bb0(%p: f32, %q: f32):
      %t = arith.addf %p, %q : f32
      tt.reduce.return %t : f32
    }) : (tensor<128xf32>) -> f32
    %yp = tt.addptr %y, %row : !tt.ptr<f32>, i32
    tt.store %yp, %s : !tt.ptr<f32>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %stride: i32 loc("stride"), %n: i32 loc("n"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %stride, %n) : (!tt.ptr<f32>, !tt.ptr<f32>, i32, i32) -> ()
    tt.return
  }
}
