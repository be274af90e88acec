// A dot operand whose masked lanes hold non-finite padding (a K tile loaded with
// other=-float("inf") or padding_option="nan"): the adjoint's products
// da = g x b^T and db = a^T x g meet the zeros that the masked lanes' adjoint
// holds, and 0 * inf = NaN would reach every lane of da / db. The padded
// operand's entries are zeroed along each contraction index whose line of g is
// all zero (an any-reduction of g != 0), so those terms are 0 as in torch, which
// never sees the padding. Dots of operands without such padding: dot.mlir (no
// reduction). Numbers: test/test_padding.py (padded_scores*).

// RUN: tritonad-opt %s --split-input-file --tritonad-differentiate="function=f" --canonicalize --cse | FileCheck %s

// b padded with -inf along its columns (the product's n): da = g x b'^T, with
// b' = select(any_m(g != 0)[None, :], b, 0).
// CHECK-LABEL: tt.func private @f_vjp
// CHECK: %[[NZ:.+]] = arith.cmpf une, %{{.+}}, %{{.+}} : tensor<16x32xf32>
// CHECK: %[[NZI:.+]] = arith.extui %[[NZ]] : tensor<16x32xi1> to tensor<16x32xi32>
// CHECK: %[[ANY:.+]] = "tt.reduce"(%[[NZI]]) <{axis = 0 : i32}>
// CHECK: arith.maxsi
// CHECK: %[[LIVE:.+]] = arith.cmpi ne, %[[ANY]], %{{.+}} : tensor<32xi32>
// CHECK: %[[ROW:.+]] = tt.expand_dims %[[LIVE]] {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
// CHECK: %[[SPREAD:.+]] = tt.broadcast %[[ROW]] : tensor<1x32xi1> -> tensor<16x32xi1>
// CHECK: %[[BLIVE:.+]] = arith.select %[[SPREAD]], %{{.+}}, %{{.+}} : tensor<16x32xi1>, tensor<16x32xf32>
// CHECK: %[[BT:.+]] = tt.trans %[[BLIVE]]
// CHECK: tt.dot %{{.+}}, %[[BT]]
tt.func public @f(%a: tensor<16x16xf32>, %b: tensor<16x32xf32>, %m: tensor<16x32xi1>) -> tensor<16x32xf32> {
  %ninf = arith.constant dense<0xFF800000> : tensor<16x32xf32>
  %zero = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
  %padded = arith.select %m, %b, %ninf : tensor<16x32xi1>, tensor<16x32xf32>
  %c = tt.dot %a, %padded, %zero, inputPrecision = ieee : tensor<16x16xf32> * tensor<16x32xf32> -> tensor<16x32xf32>
  %kept = arith.select %m, %c, %zero : tensor<16x32xi1>, tensor<16x32xf32>
  tt.return %kept : tensor<16x32xf32>
}

// -----

// a padded with NaN along its rows (the product's m): db = a'^T x g, with
// a' = select(any_n(g != 0)[:, None], a, 0).
// CHECK-LABEL: tt.func private @f_vjp
// CHECK: %[[NZ:.+]] = arith.cmpf une, %{{.+}}, %{{.+}} : tensor<32x16xf32>
// CHECK: %[[NZI:.+]] = arith.extui %[[NZ]]
// CHECK: %[[ANY:.+]] = "tt.reduce"(%[[NZI]]) <{axis = 1 : i32}>
// CHECK: %[[LIVE:.+]] = arith.cmpi ne, %[[ANY]], %{{.+}} : tensor<32xi32>
// CHECK: %[[COL:.+]] = tt.expand_dims %[[LIVE]] {axis = 1 : i32} : tensor<32xi1> -> tensor<32x1xi1>
// CHECK: %[[SPREAD:.+]] = tt.broadcast %[[COL]] : tensor<32x1xi1> -> tensor<32x16xi1>
// CHECK: %[[ALIVE:.+]] = arith.select %[[SPREAD]], %{{.+}}, %{{.+}} : tensor<32x16xi1>, tensor<32x16xf32>
// CHECK: %[[AT:.+]] = tt.trans %[[ALIVE]]
// CHECK: tt.dot %[[AT]], %{{.+}}
tt.func public @f(%a: tensor<32x16xf32>, %b: tensor<16x16xf32>, %m: tensor<32x16xi1>, %mc: tensor<32x16xi1>) -> tensor<32x16xf32> {
  %nan = arith.constant dense<0x7FC00000> : tensor<32x16xf32>
  %zero = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
  %padded = arith.select %m, %a, %nan : tensor<32x16xi1>, tensor<32x16xf32>
  %c = tt.dot %padded, %b, %zero, inputPrecision = ieee : tensor<32x16xf32> * tensor<16x16xf32> -> tensor<32x16xf32>
  %kept = arith.select %mc, %c, %zero : tensor<32x16xi1>, tensor<32x16xf32>
  tt.return %kept : tensor<32x16xf32>
}
