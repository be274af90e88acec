// An f32 shadow of a bf16 pointer (the launch passes one where programs add into a
// gradient with atomics, and rounds it once after the kernel): the adjoint is added in
// f32, and an output's f32 upstream gradient is read wide and taken in bf16.
// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=dw:w,dy:y" --canonicalize --cse | FileCheck %s

// Every program loads the same 128 weights: atomics, in f32.
// CHECK-LABEL: tt.func public @bwd
// CHECK: %[[UP:.+]] = tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<128x!tt.ptr<f32>>
// CHECK: arith.truncf %[[UP]] : tensor<128xf32> to tensor<128xbf16>
// CHECK: %[[WIDE:.+]] = arith.extf %{{.+}} : tensor<128xbf16> to tensor<128xf32>
// CHECK: tt.atomic_rmw fadd, relaxed, gpu, %{{.+}}, %[[WIDE]], %{{.+}} : (tensor<128x!tt.ptr<f32>>, tensor<128xf32>, tensor<128xi1>)
module {
  tt.func public @fwd(%w: !tt.ptr<bf16> loc("w"), %y: !tt.ptr<bf16> loc("y"), %n: i32 loc("n")) {
    %c128 = arith.constant 128 : i32
    %pid = tt.get_program_id x : i32
    %base = arith.muli %pid, %c128 : i32
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %ns = tt.splat %n : i32 -> tensor<128xi32>
    %m = arith.cmpi slt, %r, %ns : tensor<128xi32>
    %ws = tt.splat %w : !tt.ptr<bf16> -> tensor<128x!tt.ptr<bf16>>
    %wp = tt.addptr %ws, %r : tensor<128x!tt.ptr<bf16>>, tensor<128xi32>
    %v = tt.load %wp, %m : tensor<128x!tt.ptr<bf16>>
    %e = arith.mulf %v, %v : tensor<128xbf16>
    %b = tt.splat %base : i32 -> tensor<128xi32>
    %offs = arith.addi %b, %r : tensor<128xi32>
    %ys = tt.splat %y : !tt.ptr<bf16> -> tensor<128x!tt.ptr<bf16>>
    %yp = tt.addptr %ys, %offs : tensor<128x!tt.ptr<bf16>>, tensor<128xi32>
    tt.store %yp, %e, %m : tensor<128x!tt.ptr<bf16>>
    tt.return
  }
  tt.func public @bwd(%w: !tt.ptr<bf16> loc("w"), %y: !tt.ptr<bf16> loc("y"), %n: i32 loc("n"), %dw: !tt.ptr<f32> loc("dw"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%w, %y, %n) : (!tt.ptr<bf16>, !tt.ptr<bf16>, i32) -> ()
    tt.return
  }
}
