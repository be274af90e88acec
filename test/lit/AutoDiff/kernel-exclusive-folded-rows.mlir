// A folded grid: program p takes head p // NB and row block p % NB of a
// sequence of L rows (NB = cdiv(L, 16)), rows masked to `blk * 16 + lane < L`.
// The remainder digit and the lanes are one digit of extent min(NB * 16, L):
// the masked rows of a head's last block do not reach the next head, so the
// launch condition compares the head's stride with min(NB * 16, L) and the
// deterministic backward writes dx plainly (no refusal at lengths that are not
// a multiple of 16).

// RUN: tritonad-opt %s --tritonad-kernel-backward="forward=fwd into=bwd shadows=dx:x,dy:y mode=deterministic" --canonicalize --cse 2>&1 | FileCheck %s

// CHECK: remark: checked at each launch:{{.*}}min((((L + 15) / 16) * 16), L)
// CHECK-LABEL: tt.func public @bwd(%arg0
// CHECK-NOT: tt.atomic_rmw
// CHECK: tt.store
// CHECK-NOT: tt.atomic_rmw
// CHECK: tt.return
module {
  tt.func public @fwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %L: i32 loc("L")) {
    %c15 = arith.constant 15 : i32
    %c16 = arith.constant 16 : i32
    %pid = tt.get_program_id x : i32
    %Lp = arith.addi %L, %c15 : i32
    %nb = arith.divsi %Lp, %c16 : i32
    %head = arith.divsi %pid, %nb : i32
    %blk = arith.remsi %pid, %nb : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %first = arith.muli %blk, %c16 : i32
    %firsts = tt.splat %first : i32 -> tensor<16xi32>
    %rows = arith.addi %firsts, %r : tensor<16xi32>
    %Ls = tt.splat %L : i32 -> tensor<16xi32>
    %mask = arith.cmpi slt, %rows, %Ls : tensor<16xi32>
    %base = arith.muli %head, %L : i32
    %bases = tt.splat %base : i32 -> tensor<16xi32>
    %offs = arith.addi %bases, %rows : tensor<16xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %v = tt.load %xp, %mask : tensor<16x!tt.ptr<f32>>
    %e = math.exp %v : tensor<16xf32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %yp, %e, %mask : tensor<16x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @bwd(%x: !tt.ptr<f32> loc("x"), %y: !tt.ptr<f32> loc("y"), %L: i32 loc("L"), %dx: !tt.ptr<f32> loc("dx"), %dy: !tt.ptr<f32> loc("dy")) {
    tt.call @fwd(%x, %y, %L) : (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> ()
    tt.return
  }
}
