// Longest programs first: where the trip count of a backward's outermost
// loop varies by program (a causal loop up to the program's own block), the
// kernel reads its program ids from the launch's order (`tritonad_regrid`,
// word i: the program that launch index i runs) and the launch path orders
// the programs by the work the remark gives: trips times the ops of an
// iteration, summed over the loops.
// RUN: tritonad-opt %s --tritonad-order-programs --canonicalize 2>&1 | FileCheck %s

// CHECK: remark: programs launched longest first by work {{.*}}pid0{{.*}}
// CHECK-LABEL: tt.func public @causal
// The launch index (x fastest), its word of the table, and the ids it gives.
// CHECK-DAG: %[[X:.+]] = tt.get_program_id x
// CHECK-DAG: %[[Y:.+]] = tt.get_program_id y
// CHECK-DAG: %[[NX:.+]] = tt.get_num_programs x
// CHECK: %[[WORD:.+]] = tt.addptr %{{.+}}, %{{.+}} : !tt.ptr<i64>, i64
// CHECK: %[[PROGRAM:.+]] = tt.load %[[WORD]] : !tt.ptr<i64>
// CHECK-DAG: arith.remsi %[[PROGRAM]], %{{.+}} : i64
// CHECK-DAG: arith.divsi %[[PROGRAM]], %{{.+}} : i64
// Nothing reads the launched ids but the launch index.
// CHECK-NOT: tt.get_program_id
// CHECK: scf.for
// CHECK: tt.return

// Every program loops the same number of times: the grid's order stays.
// CHECK-LABEL: tt.func public @uniform
// CHECK-NOT: tt.load {{.*}}!tt.ptr<i64>
// CHECK: tt.get_program_id x
// CHECK-NOT: tt.load {{.*}}!tt.ptr<i64>
// CHECK: tt.return

// A loop whose bound is loaded: its programs' work is unknown, no order.
// CHECK-LABEL: tt.func public @loaded_bound
// CHECK-NOT: tt.load {{.*}}!tt.ptr<i64>
// CHECK: tt.get_program_id x
// CHECK: tt.return

// A while loop beside a causal loop: its trips are unknown, no order.
// CHECK-LABEL: tt.func public @with_while
// CHECK-NOT: tt.load {{.*}}!tt.ptr<i64>
// CHECK: tt.get_program_id x
// CHECK: tt.return

module {
  tt.func public @causal(%x: !tt.ptr<f32> loc("x"), %dx: !tt.ptr<f32> loc("dx"), %n: i32 loc("n"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c64 = arith.constant 64 : i32
    %zero = arith.constant 0.0 : f32
    %block = tt.get_program_id x : i32
    %head = tt.get_program_id y : i32
    %row = arith.muli %head, %n : i32
    %end = arith.addi %block, %c1 : i32
    %hi = arith.muli %end, %c64 : i32
    %sum = scf.for %i = %c0 to %hi step %c64 iter_args(%acc = %zero) -> (f32) : i32 {
      %at = arith.addi %row, %i : i32
      %p = tt.addptr %x, %at : !tt.ptr<f32>, i32
      %v = tt.load %p : !tt.ptr<f32>
      %next = arith.addf %acc, %v : f32
      scf.yield %next : f32
    }
    %out = arith.addi %row, %block : i32
    %q = tt.addptr %dx, %out : !tt.ptr<f32>, i32
    tt.store %q, %sum : !tt.ptr<f32>
    tt.return
  }

  tt.func public @uniform(%x: !tt.ptr<f32> loc("x"), %dx: !tt.ptr<f32> loc("dx"), %n: i32 loc("n"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant 0.0 : f32
    %pid = tt.get_program_id x : i32
    %row = arith.muli %pid, %n : i32
    %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) : i32 {
      %at = arith.addi %row, %i : i32
      %p = tt.addptr %x, %at : !tt.ptr<f32>, i32
      %v = tt.load %p : !tt.ptr<f32>
      %next = arith.addf %acc, %v : f32
      scf.yield %next : f32
    }
    %q = tt.addptr %dx, %pid : !tt.ptr<f32>, i32
    tt.store %q, %sum : !tt.ptr<f32>
    tt.return
  }

  tt.func public @loaded_bound(%x: !tt.ptr<f32> loc("x"), %dx: !tt.ptr<f32> loc("dx"), %ends: !tt.ptr<i32> loc("ends"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant 0.0 : f32
    %pid = tt.get_program_id x : i32
    %e = tt.addptr %ends, %pid : !tt.ptr<i32>, i32
    %hi = tt.load %e : !tt.ptr<i32>
    %sum = scf.for %i = %c0 to %hi step %c1 iter_args(%acc = %zero) -> (f32) : i32 {
      %p = tt.addptr %x, %i : !tt.ptr<f32>, i32
      %v = tt.load %p : !tt.ptr<f32>
      %next = arith.addf %acc, %v : f32
      scf.yield %next : f32
    }
    %q = tt.addptr %dx, %pid : !tt.ptr<f32>, i32
    tt.store %q, %sum : !tt.ptr<f32>
    tt.return
  }
  tt.func public @with_while(%x: !tt.ptr<f32> loc("x"), %dx: !tt.ptr<f32> loc("dx"), %n: i32 loc("n"), %table: !tt.ptr<i64> loc("tritonad_regrid")) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant 0.0 : f32
    %pid = tt.get_program_id x : i32
    %hi = arith.addi %pid, %c1 : i32
    %sum = scf.for %i = %c0 to %hi step %c1 iter_args(%acc = %zero) -> (f32) : i32 {
      %p = tt.addptr %x, %i : !tt.ptr<f32>, i32
      %v = tt.load %p : !tt.ptr<f32>
      %next = arith.addf %acc, %v : f32
      scf.yield %next : f32
    }
    %halved = scf.while (%k = %n) : (i32) -> i32 {
      %more = arith.cmpi sgt, %k, %c1 : i32
      scf.condition(%more) %k : i32
    } do {
    ^bb0(%k: i32):
      %half = arith.divsi %k, %c1 : i32
      %less = arith.subi %half, %c1 : i32
      scf.yield %less : i32
    }
    %q = tt.addptr %dx, %halved : !tt.ptr<f32>, i32
    tt.store %q, %sum : !tt.ptr<f32>
    tt.return
  }
}
