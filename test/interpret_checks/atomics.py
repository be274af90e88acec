"""Atomic adds into a differentiated output (test_atomic_outputs.py has them on the
GPU): each add's value reads the upstream at its addresses.
"""

import torch
import triton

from corpus import kernels as K
from interpret_checks import check
from interpreter_util import GEN, kernel_gradients, randn
from corpus.atomics import scatter_add_kernel, split_k_matmul_kernel


@check("atomic_add_outputs")
def _():
    # a sum of squares over programs into one scalar (the corpus's atomic_sum)
    n = 301
    x = randn(n)
    bwd = kernel_gradients(K.atomic_sum_kernel, (triton.cdiv(n, 64),), {"x_ptr": x},
                           {"out_ptr": torch.zeros(1)}, {"n": n}, {"BLOCK": 64},
                           lambda x_ptr: {"out_ptr": (x_ptr * x_ptr).sum().reshape(1)})
    schedule = bwd.schedule()
    assert "out_ptr: output, atomically added to" in schedule, schedule
    # programs along an axis the kernel never reads each add again
    kernel_gradients(K.atomic_sum_kernel, (triton.cdiv(n, 64), 3), {"x_ptr": x},
                     {"out_ptr": torch.zeros(1)}, {"n": n}, {"BLOCK": 64},
                     lambda x_ptr: {"out_ptr": 3 * (x_ptr * x_ptr).sum().reshape(1)})
    # a scatter-add with repeated indices and a masked tail
    n, D, rows = 45, 8, 6
    idx = torch.randint(0, rows, (n,), generator=GEN, dtype=torch.int32)

    def scatter(x_ptr, w_ptr):
        out = torch.zeros(rows, D, dtype=x_ptr.dtype)
        return {"out_ptr": out.index_add(0, idx.long(), x_ptr * torch.sigmoid(w_ptr)[:, None])}

    kernel_gradients(scatter_add_kernel, (triton.cdiv(n, 16),),
                     {"x_ptr": randn(n, D), "w_ptr": randn(n)}, {"out_ptr": torch.zeros(rows, D)},
                     {"idx_ptr": idx, "n": n}, {"D": D, "BLOCK": 16}, scatter)
    # split-K: programs along axis 2 add partial products into each tile
    M, N, Kd, per_split = 37, 29, 53, 16
    kernel_gradients(split_k_matmul_kernel,
                     (triton.cdiv(M, 16), triton.cdiv(N, 16), triton.cdiv(Kd, per_split)),
                     {"a_ptr": randn(M, Kd), "b_ptr": randn(Kd, N)},
                     {"c_ptr": torch.zeros(M, N)},
                     {"M": M, "N": N, "K": Kd, "K_PER_SPLIT": per_split},
                     {"BM": 16, "BN": 16, "BK": 16}, lambda a_ptr, b_ptr: {"c_ptr": a_ptr @ b_ptr},
                     rtol=1e-4, atol=1e-4)
