// Reverse-mode rules of tt.extern_elementwise (libdevice calls, e.g. from
// `triton.language.extra.libdevice`), keyed by the symbol without `__nv_` (a float
// variant's trailing `f` is also tried). See cpp/lib/AutoDiff/Rules/TritonRules.cpp.
// X is the argument, Y the recomputed call, G the cotangent.

// RUN: tritonad-opt %s --split-input-file --tritonad-differentiate="function=f" | FileCheck %s

// exp: g * y, exactly 0 where g is 0 (an overflow to inf: math.mlir)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_expf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[GY:.+]] = arith.mulf %[[G]], %[[Y]]
// CHECK: %[[DX:.+]] = arith.select %{{.+}}, %{{.+}}, %[[GY]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_expf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// fast_expf: looked up as fast_exp (trailing f dropped)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_fast_expf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[GY:.+]] = arith.mulf %[[G]], %[[Y]]
// CHECK: %[[DX:.+]] = arith.select %{{.+}}, %{{.+}}, %[[GY]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_fast_expf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// exp2: g * y * ln 2
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_exp2f"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[GY:.+]] = arith.mulf %[[G]], %[[Y]]
// CHECK: %[[C:.+]] = arith.constant dense<0.693147182>
// CHECK: %[[GYC:.+]] = arith.mulf %[[GY]], %[[C]]
// CHECK: %[[DX:.+]] = arith.select %{{.+}}, %{{.+}}, %[[GYC]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_exp2f"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// exp10: g * y * ln 10
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_exp10f"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[GY:.+]] = arith.mulf %[[G]], %[[Y]]
// CHECK: %[[C:.+]] = arith.constant dense<2.30258512>
// CHECK: %[[GYC:.+]] = arith.mulf %[[GY]], %[[C]]
// CHECK: %[[DX:.+]] = arith.select %{{.+}}, %{{.+}}, %[[GYC]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_exp10f"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// expm1: g * (y + 1), exactly 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_expm1f"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y1:.+]] = arith.addf %[[Y]], %{{.+}}
// CHECK: %[[GY1:.+]] = arith.mulf %[[G]], %[[Y1]]
// CHECK: %[[DX:.+]] = arith.select %{{.+}}, %{{.+}}, %[[GY1]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_expm1f"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// log: g / x, exactly 0 where g is 0 (a masked-out lane may hold x = 0 and gets
// g = 0; 0 * inf must not become NaN). The guarded rules below share this form:
// select(g == 0, 0, partial).
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_logf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[Q:.+]] = arith.divf %[[G]], %[[X]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[Q]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_logf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// fast_logf: g / x, 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_fast_logf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[Q:.+]] = arith.divf %[[G]], %[[X]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[Q]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_fast_logf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// log2: g / (x * ln 2), 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_log2f"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[C:.+]] = arith.constant dense<0.693147182>
// CHECK: %[[D:.+]] = arith.mulf %[[X]], %[[C]]
// CHECK: %[[Q:.+]] = arith.divf %[[G]], %[[D]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[Q]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_log2f"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// log10: g / (x * ln 10), 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_log10f"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[C:.+]] = arith.constant dense<2.30258512>
// CHECK: %[[D:.+]] = arith.mulf %[[X]], %[[C]]
// CHECK: %[[Q:.+]] = arith.divf %[[G]], %[[D]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[Q]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_log10f"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// log1p: g / (x + 1), 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_log1pf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00>
// CHECK: %[[D:.+]] = arith.addf %[[X]], %[[ONE]]
// CHECK: %[[Q:.+]] = arith.divf %[[G]], %[[D]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[Q]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_log1pf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// sqrt: g * 0.5 / y, 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_sqrtf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[HALF:.+]] = arith.constant dense<5.000000e-01>
// CHECK: %[[GH:.+]] = arith.mulf %[[G]], %[[HALF]]
// CHECK: %[[Q:.+]] = arith.divf %[[GH]], %[[Y]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[Q]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_sqrtf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// rsqrt: g * -0.5 * y^3, 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_rsqrtf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[C:.+]] = arith.constant dense<-5.000000e-01>
// CHECK: %[[A:.+]] = arith.mulf %[[G]], %[[C]]
// CHECK: %[[B:.+]] = arith.mulf %[[A]], %[[Y]]
// CHECK: %[[D:.+]] = arith.mulf %[[B]], %[[Y]]
// CHECK: %[[P:.+]] = arith.mulf %[[D]], %[[Y]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[P]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_rsqrtf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// sin: g * cos(x) (math.cos)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_sinf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[C:.+]] = math.cos %[[X]]
// CHECK: %[[DX:.+]] = arith.mulf %[[G]], %[[C]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_sinf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// cos: -g * sin(x)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_cosf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[NG:.+]] = arith.subf %{{[^,]+}}, %[[G]]
// CHECK: %[[S:.+]] = math.sin %[[X]]
// CHECK: %[[DX:.+]] = arith.mulf %[[NG]], %[[S]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_cosf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// tan: g * (y^2 + 1)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_tanf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[YY:.+]] = arith.mulf %[[Y]], %[[Y]]
// CHECK: %[[S:.+]] = arith.addf %[[YY]], %{{.+}}
// CHECK: %[[DX:.+]] = arith.mulf %[[G]], %[[S]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_tanf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// tanh: g * (1 - y^2)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_tanhf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00>
// CHECK: %[[YY:.+]] = arith.mulf %[[Y]], %[[Y]]
// CHECK: %[[S:.+]] = arith.subf %[[ONE]], %[[YY]]
// CHECK: %[[DX:.+]] = arith.mulf %[[G]], %[[S]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_tanhf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// sinh: g * (e^x + e^-x) / 2
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_sinhf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[EP:.+]] = math.exp %[[X]]
// CHECK: %[[NX:.+]] = arith.subf %{{[^,]+}}, %[[X]]
// CHECK: %[[EN:.+]] = math.exp %[[NX]]
// CHECK: %[[S:.+]] = arith.addf %[[EP]], %[[EN]]
// CHECK: %[[GS:.+]] = arith.mulf %[[G]], %[[S]]
// CHECK: %[[H:.+]] = arith.constant dense<5.000000e-01>
// CHECK: %[[DX:.+]] = arith.mulf %[[GS]], %[[H]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_sinhf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// cosh: g * (e^x - e^-x) / 2
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_coshf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[EP:.+]] = math.exp %[[X]]
// CHECK: %[[NX:.+]] = arith.subf %{{[^,]+}}, %[[X]]
// CHECK: %[[EN:.+]] = math.exp %[[NX]]
// CHECK: %[[S:.+]] = arith.subf %[[EP]], %[[EN]]
// CHECK: %[[GS:.+]] = arith.mulf %[[G]], %[[S]]
// CHECK: %[[DX:.+]] = arith.mulf %[[GS]], %{{.+}}
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_coshf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// asin: g / sqrt(1 - x^2), 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_asinf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00>
// CHECK: %[[XX:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK: %[[D:.+]] = arith.subf %[[ONE]], %[[XX]]
// CHECK: %[[R:.+]] = math.sqrt %[[D]]
// CHECK: %[[Q:.+]] = arith.divf %[[G]], %[[R]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[Q]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_asinf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// acos: -g / sqrt(1 - x^2), 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_acosf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[NG:.+]] = arith.subf %{{[^,]+}}, %[[G]]
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00>
// CHECK: %[[XX:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK: %[[D:.+]] = arith.subf %[[ONE]], %[[XX]]
// CHECK: %[[R:.+]] = math.sqrt %[[D]]
// CHECK: %[[Q:.+]] = arith.divf %[[NG]], %[[R]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[Q]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_acosf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// atan: g / (x^2 + 1)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_atanf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[XX:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK: %[[D:.+]] = arith.addf %[[XX]], %{{.+}}
// CHECK: %[[DX:.+]] = arith.divf %[[G]], %[[D]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_atanf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// asinh: g / sqrt(x^2 + 1)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_asinhf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[XX:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK: %[[D:.+]] = arith.addf %[[XX]], %{{.+}}
// CHECK: %[[R:.+]] = math.sqrt %[[D]]
// CHECK: %[[DX:.+]] = arith.divf %[[G]], %[[R]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_asinhf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// acosh: g / sqrt(x^2 - 1), 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_acoshf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[XX:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00>
// CHECK: %[[D:.+]] = arith.subf %[[XX]], %[[ONE]]
// CHECK: %[[R:.+]] = math.sqrt %[[D]]
// CHECK: %[[Q:.+]] = arith.divf %[[G]], %[[R]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[Q]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_acoshf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// atanh: g / (1 - x^2), 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_atanhf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00>
// CHECK: %[[XX:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK: %[[D:.+]] = arith.subf %[[ONE]], %[[XX]]
// CHECK: %[[Q:.+]] = arith.divf %[[G]], %[[D]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[Q]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_atanhf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// erf: g * 2/sqrt(pi) * exp(-x^2)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_erff"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[C:.+]] = arith.constant dense<1.12837923>
// CHECK: %[[GC:.+]] = arith.mulf %[[G]], %[[C]]
// CHECK: %[[XX:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK: %[[N:.+]] = arith.subf %{{[^,]+}}, %[[XX]]
// CHECK: %[[E:.+]] = math.exp %[[N]]
// CHECK: %[[DX:.+]] = arith.mulf %[[GC]], %[[E]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_erff"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// erfc: -g * 2/sqrt(pi) * exp(-x^2) (erfcf: trailing f dropped)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_erfcf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[NG:.+]] = arith.subf %{{[^,]+}}, %[[G]]
// CHECK: %[[GC:.+]] = arith.mulf %[[NG]], %{{.+}}
// CHECK: math.exp
// CHECK: %[[DX:.+]] = arith.mulf %[[GC]], %{{.+}}
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_erfcf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// fabs: g * sign(x)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_fabsf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[POS:.+]] = arith.cmpf ogt, %[[X]], %{{.+}}
// CHECK: %[[NEG:.+]] = arith.cmpf olt, %[[X]], %{{.+}}
// CHECK: %[[A:.+]] = arith.select %[[NEG]], %{{.+}}, %{{.+}}
// CHECK: %[[DX:.+]] = arith.select %[[POS]], %[[G]], %[[A]]
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_fabsf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// floor, ceil, trunc, round, rint: zero
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_floorf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CHECK-NEXT: tt.return %[[Z]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_floorf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_ceilf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CHECK-NEXT: tt.return %[[Z]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_ceilf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_truncf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CHECK-NEXT: tt.return %[[Z]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_truncf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_roundf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CHECK-NEXT: tt.return %[[Z]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_roundf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_rintf"{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
// CHECK-NEXT: tt.return %[[Z]]
tt.func public @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_rintf"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// pow(x, y) = r:  dx = g * y * pow(x, y - 1) (the same __nv_powf call again, not
// exp(log(x) * (y - 1)), which is NaN for x < 0; no log on this path),  dy = g * r * log(x);
// each 0 where g is 0, and dy also 0 where x is 0 (log(0) = -inf).
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>)
// CHECK: %[[R:.+]] = tt.extern_elementwise %[[X]], %[[Y]] {{.*}}symbol = "__nv_powf"
// CHECK-NEXT: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GY:.+]] = arith.mulf %[[G]], %[[Y]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant dense<1.000000e+00>
// CHECK-NEXT: %[[YM1:.+]] = arith.subf %[[Y]], %[[ONE]]
// CHECK-NEXT: %[[PM1:.+]] = tt.extern_elementwise %[[X]], %[[YM1]] {{.*}}symbol = "__nv_powf"{{.*}} : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: %[[T:.+]] = arith.mulf %[[GY]], %[[PM1]]
// CHECK-NEXT: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[T]]
// CHECK: %[[XC0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[XZ:.+]] = arith.cmpf oeq, %[[X]], %[[XC0]]
// CHECK-NEXT: %[[XZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[C02:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ2:.+]] = arith.cmpf oeq, %[[G]], %[[C02]]
// CHECK-NEXT: %[[ZERO2:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[GR:.+]] = arith.mulf %[[G]], %[[R]]
// CHECK: %[[L:.+]] = math.log %[[X]]
// CHECK: %[[S:.+]] = arith.mulf %[[GR]], %[[L]]
// CHECK: %[[SAFE:.+]] = arith.select %[[GZ2]], %[[ZERO2]], %[[S]]
// CHECK: %[[DY:.+]] = arith.select %[[XZ]], %[[XZERO]], %[[SAFE]]
// CHECK: tt.return %[[DX]], %[[DY]]
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x, %y {libname = "", libpath = "", pure = true, symbol = "__nv_powf"} : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// fdiv_rn (libdevice.div_rn): the rule of divf, dx = g / y and dy = -g * r / y,
// each 0 where g is 0
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>)
// CHECK: %[[R:.+]] = tt.extern_elementwise %[[X]], %[[Y]] {{.*}}symbol = "__nv_fdiv_rn"
// CHECK: %[[C0:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ:.+]] = arith.cmpf oeq, %[[G]], %[[C0]]
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[A:.+]] = arith.divf %[[G]], %[[Y]]
// CHECK: %[[DX:.+]] = arith.select %[[GZ]], %[[ZERO]], %[[A]]
// CHECK: %[[C02:.+]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT: %[[GZ2:.+]] = arith.cmpf oeq, %[[G]], %[[C02]]
// CHECK-NEXT: %[[ZERO2:.+]] = arith.constant dense<0.000000e+00>
// CHECK: %[[NG:.+]] = arith.subf %{{[^,]+}}, %[[G]]
// CHECK: %[[T:.+]] = arith.mulf %[[NG]], %[[R]]
// CHECK: %[[B:.+]] = arith.divf %[[T]], %[[Y]]
// CHECK: %[[DY:.+]] = arith.select %[[GZ2]], %[[ZERO2]], %[[B]]
// CHECK: tt.return %[[DX]], %[[DY]]
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x, %y {libname = "", libpath = "", pure = true, symbol = "__nv_fdiv_rn"} : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// fmaf: (g*y, g*x, g)
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf32>, %[[Y:[^:]+]]: tensor<16x32xf32>, %[[Z:[^:]+]]: tensor<16x32xf32>, %[[G:[^:]+]]: tensor<16x32xf32>)
// CHECK-DAG: %[[DX:.+]] = arith.mulf %[[G]], %[[Y]]
// CHECK-DAG: %[[DY:.+]] = arith.mulf %[[G]], %[[X]]
// CHECK: tt.return %[[DX]], %[[DY]], %[[G]]
tt.func public @f(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>, %z: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = tt.extern_elementwise %x, %y, %z {libname = "", libpath = "", pure = true, symbol = "__nv_fmaf"} : (tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return %0 : tensor<16x32xf32>
}

// -----

// fp64 symbols have no trailing f: __nv_tanh on f64
// CHECK-LABEL: tt.func private @f_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x32xf64>, %[[G:[^:]+]]: tensor<16x32xf64>) -> tensor<16x32xf64>
// CHECK: %[[Y:.+]] = tt.extern_elementwise %[[X]] {{.*}}symbol = "__nv_tanh"{{.*}} : (tensor<16x32xf64>) -> tensor<16x32xf64>
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<16x32xf64>
// CHECK: %[[YY:.+]] = arith.mulf %[[Y]], %[[Y]] : tensor<16x32xf64>
// CHECK: %[[S:.+]] = arith.subf %[[ONE]], %[[YY]]
// CHECK: %[[DX:.+]] = arith.mulf %[[G]], %[[S]] : tensor<16x32xf64>
// CHECK: tt.return %[[DX]]
tt.func public @f(%x: tensor<16x32xf64>) -> tensor<16x32xf64> {
  %0 = tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "__nv_tanh"} : (tensor<16x32xf64>) -> tensor<16x32xf64>
  tt.return %0 : tensor<16x32xf64>
}
