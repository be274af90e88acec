"""Hand-written TTIR for the renderer: unsigned integer ops (their signedness must
survive the rendering) and every float predicate, with numpy references.
"""

import torch


INTEGER_TTIR = """
module {
  tt.func private @mix(%x: tensor<64xi32>, %y: tensor<64xi32>) -> tensor<64xi32> {
    %0 = arith.xori %x, %y : tensor<64xi32>
    %1 = arith.shli %0, %y : tensor<64xi32>
    tt.return %1 : tensor<64xi32>
  }
  tt.func public @integers(%a_ptr: !tt.ptr<i32>, %b_ptr: !tt.ptr<i32>, %o_ptr: !tt.ptr<i32>,
                           %f_ptr: !tt.ptr<f32>, %w_ptr: !tt.ptr<i64>) {
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %c3 = arith.constant dense<3> : tensor<64xi32>
    %c7 = arith.constant dense<7> : tensor<64xi32>
    %c64 = arith.constant dense<64> : tensor<64xi32>
    %ap = tt.splat %a_ptr : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
    %ap1 = tt.addptr %ap, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    %a = tt.load %ap1 : tensor<64x!tt.ptr<i32>>
    %bp = tt.splat %b_ptr : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
    %bp1 = tt.addptr %bp, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    %b = tt.load %bp1 : tensor<64x!tt.ptr<i32>>
    %v0 = arith.divui %a, %b : tensor<64xi32>
    %v1 = arith.remui %a, %b : tensor<64xi32>
    %v2 = arith.shrui %a, %c3 : tensor<64xi32>
    %p3 = arith.cmpi ult, %a, %b : tensor<64xi32>
    %v3 = arith.extui %p3 : tensor<64xi1> to tensor<64xi32>
    %v4 = arith.maxui %a, %b : tensor<64xi32>
    %v5 = arith.minui %a, %b : tensor<64xi32>
    %v6 = arith.divsi %a, %b : tensor<64xi32>
    %v7 = arith.remsi %a, %b : tensor<64xi32>
    %v8 = arith.shrsi %a, %c3 : tensor<64xi32>
    %v9 = tt.mulhiui %a, %b : tensor<64xi32>
    %p10 = arith.cmpi uge, %a, %b : tensor<64xi32>
    %v10 = arith.select %p10, %a, %b : tensor<64xi1>, tensor<64xi32>
    %t11 = arith.trunci %a : tensor<64xi32> to tensor<64xi1>
    %v11 = arith.extsi %t11 : tensor<64xi1> to tensor<64xi32>
    %v12 = tt.call @mix(%a, %c7) : (tensor<64xi32>, tensor<64xi32>) -> tensor<64xi32>
    %results = tt.splat %o_ptr : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
    %o0 = tt.addptr %results, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o0, %v0 : tensor<64x!tt.ptr<i32>>
    %o1 = tt.addptr %o0, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o1, %v1 : tensor<64x!tt.ptr<i32>>
    %o2 = tt.addptr %o1, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o2, %v2 : tensor<64x!tt.ptr<i32>>
    %o3 = tt.addptr %o2, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o3, %v3 : tensor<64x!tt.ptr<i32>>
    %o4 = tt.addptr %o3, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o4, %v4 : tensor<64x!tt.ptr<i32>>
    %o5 = tt.addptr %o4, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o5, %v5 : tensor<64x!tt.ptr<i32>>
    %o6 = tt.addptr %o5, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o6, %v6 : tensor<64x!tt.ptr<i32>>
    %o7 = tt.addptr %o6, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o7, %v7 : tensor<64x!tt.ptr<i32>>
    %o8 = tt.addptr %o7, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o8, %v8 : tensor<64x!tt.ptr<i32>>
    %o9 = tt.addptr %o8, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o9, %v9 : tensor<64x!tt.ptr<i32>>
    %o10 = tt.addptr %o9, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o10, %v10 : tensor<64x!tt.ptr<i32>>
    %o11 = tt.addptr %o10, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o11, %v11 : tensor<64x!tt.ptr<i32>>
    %o12 = tt.addptr %o11, %c64 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %o12, %v12 : tensor<64x!tt.ptr<i32>>
    %f = arith.uitofp %a : tensor<64xi32> to tensor<64xf32>
    %fp = tt.splat %f_ptr : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %fp1 = tt.addptr %fp, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %fp1, %f : tensor<64x!tt.ptr<f32>>
    %w = arith.extui %a : tensor<64xi32> to tensor<64xi64>
    %wp = tt.splat %w_ptr : !tt.ptr<i64> -> tensor<64x!tt.ptr<i64>>
    %wp1 = tt.addptr %wp, %r : tensor<64x!tt.ptr<i64>>, tensor<64xi32>
    tt.store %wp1, %w : tensor<64x!tt.ptr<i64>>
    tt.return
  }
}
"""


def integer_reference(a, b):
    """What INTEGER_TTIR stores, computed with numpy's fixed-width integers."""
    import numpy as np

    a, b = a.numpy(), b.numpy()
    ua, ub = a.view(np.uint32), b.view(np.uint32)
    c_div = (np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))) * np.sign(a) * np.sign(b)
    c_rem = a.astype(np.int64) - c_div * b.astype(np.int64)
    rows = [ua // ub, ua % ub, ua >> 3, (ua < ub).astype(np.uint32), np.maximum(ua, ub),
            np.minimum(ua, ub), c_div, c_rem, a >> 3,
            ((ua.astype(np.uint64) * ub.astype(np.uint64)) >> 32),
            np.where(ua >= ub, a, b), -(a & 1), (a ^ 7) << 7]
    out = np.stack([np.asarray(r).astype(np.int64).astype(np.uint32).view(np.int32)
                    for r in rows])
    return torch.from_numpy(out), torch.from_numpy(ua.astype(np.float32)), \
        torch.from_numpy(ua.astype(np.int64))


FLOAT_PREDICATES = ["oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge",
                    "ult", "ule", "une", "uno"]


def float_ttir() -> str:
    """Every float predicate (those Triton has no operator for are composed),
    negf (the sign of zero), a half-precision division and remainder."""
    lines = ["module {",
             "  tt.func public @floats(%a_ptr: !tt.ptr<f32>, %b_ptr: !tt.ptr<f32>, "
             "%o_ptr: !tt.ptr<i8>, %n_ptr: !tt.ptr<f32>, %h_ptr: !tt.ptr<f16>) {",
             "    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>",
             "    %c64 = arith.constant dense<64> : tensor<64xi32>"]
    for name, ty in (("a", "f32"), ("b", "f32")):
        lines += [f"    %{name}p = tt.splat %{name}_ptr : !tt.ptr<{ty}> -> tensor<64x!tt.ptr<{ty}>>",
                  f"    %{name}q = tt.addptr %{name}p, %r : tensor<64x!tt.ptr<{ty}>>, tensor<64xi32>",
                  f"    %{name} = tt.load %{name}q : tensor<64x!tt.ptr<{ty}>>"]
    lines += ["    %op = tt.splat %o_ptr : !tt.ptr<i8> -> tensor<64x!tt.ptr<i8>>",
              "    %o0 = tt.addptr %op, %r : tensor<64x!tt.ptr<i8>>, tensor<64xi32>"]
    for i, predicate in enumerate(FLOAT_PREDICATES):
        lines += [f"    %p{i} = arith.cmpf {predicate}, %a, %b : tensor<64xf32>",
                  f"    %e{i} = arith.extui %p{i} : tensor<64xi1> to tensor<64xi8>",
                  f"    tt.store %o{i}, %e{i} : tensor<64x!tt.ptr<i8>>",
                  f"    %o{i + 1} = tt.addptr %o{i}, %c64 : tensor<64x!tt.ptr<i8>>, tensor<64xi32>"]
    lines += ["    %neg = arith.negf %a : tensor<64xf32>",
              "    %np = tt.splat %n_ptr : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>",
              "    %nq = tt.addptr %np, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>",
              "    tt.store %nq, %neg : tensor<64x!tt.ptr<f32>>",
              "    %ha = arith.truncf %a : tensor<64xf32> to tensor<64xf16>",
              "    %hb = arith.truncf %b : tensor<64xf32> to tensor<64xf16>",
              "    %hd = arith.divf %ha, %hb : tensor<64xf16>",
              "    %hr = arith.remf %ha, %hb : tensor<64xf16>",
              "    %hp = tt.splat %h_ptr : !tt.ptr<f16> -> tensor<64x!tt.ptr<f16>>",
              "    %hq = tt.addptr %hp, %r : tensor<64x!tt.ptr<f16>>, tensor<64xi32>",
              "    tt.store %hq, %hd : tensor<64x!tt.ptr<f16>>",
              "    %hq2 = tt.addptr %hq, %c64 : tensor<64x!tt.ptr<f16>>, tensor<64xi32>",
              "    tt.store %hq2, %hr : tensor<64x!tt.ptr<f16>>",
              "    tt.return", "  }", "}"]
    return "\n".join(lines) + "\n"
