"""Liger-Kernel (liger_kernel.ops, 0.8.5): its forward kernels as cases of the
peer oracle (oracle.py). Each case calls the library's own forward function,
which launches the kernel; the fp64 references are plain torch.

Sizes are odd (rows 37, hidden 1000) so every mask matters.
"""

from __future__ import annotations

import math

from oracle import Case

ROWS, HIDDEN = 37, 1000


def _torch():
    import torch
    return torch


def randn(shape, dtype, device, grad=True, scale=1.0, shift=0.0):
    torch = _torch()
    t = (torch.randn(shape, device=device) * scale + shift).to(dtype)
    return t.requires_grad_(grad)


def log_softmax_rows(shape, dtype, device, grad=True):
    """Rows of log-probabilities (the losses take log-space inputs)."""
    torch = _torch()
    t = torch.randn(shape, device=device).log_softmax(-1).to(dtype)
    return t.requires_grad_(grad)


CASES = {}


def case(**fields):
    c = Case(**fields)
    CASES[c.name] = c
    return c


# -- elementwise gates ------------------------------------------------------

case(name="liger.geglu", module="liger_kernel.ops.geglu",
     kernels={"_geglu_tanh_forward_kernel": ("c",)}, launcher="geglu_forward",
     make=lambda dt, dev: dict(a=randn((ROWS, HIDDEN), dt, dev),
                               b=randn((ROWS, HIDDEN), dt, dev)),
     forward=lambda m, t: m.geglu_forward(t["a"], t["b"])[2],
     library=lambda m, t: m.LigerGELUMulFunction.apply(t["a"], t["b"]),
     reference=lambda t: _torch().nn.functional.gelu(t["a"], approximate="tanh") * t["b"])

case(name="liger.swiglu", module="liger_kernel.ops.swiglu",
     kernels={"_swiglu_forward_kernel": ("c_ptr",)}, launcher="swiglu_forward",
     make=lambda dt, dev: dict(a=randn((ROWS, HIDDEN), dt, dev),
                               b=randn((ROWS, HIDDEN), dt, dev)),
     forward=lambda m, t: m.swiglu_forward(t["a"], t["b"], 1.0)[2],
     library=lambda m, t: m.LigerSiLUMulFunction.apply(t["a"], t["b"]),
     reference=lambda t: _torch().nn.functional.silu(t["a"]) * t["b"])

case(name="liger.relu_squared", module="liger_kernel.ops.relu_squared",
     kernels={"_relu_squared_forward_kernel": ("Y_ptr",)}, launcher="relu_squared_forward",
     make=lambda dt, dev: dict(x=randn((ROWS, HIDDEN), dt, dev)),
     forward=lambda m, t: m.relu_squared_forward(t["x"]),
     library=lambda m, t: m.LigerReLUSquaredFunction.apply(t["x"]),
     reference=lambda t: _torch().relu(t["x"]) ** 2,
     interpret=True)

# -- normalizations ---------------------------------------------------------


def _rms_norm_reference(t, eps=1e-6, offset=0.0):
    x = t["x"]
    return x * _torch().rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (offset + t["w"])


case(name="liger.rms_norm", module="liger_kernel.ops.rms_norm",
     kernels={"_rms_norm_forward_kernel": ("Y_ptr", "RSTD_ptr")}, launcher="rms_norm_forward",
     make=lambda dt, dev: dict(x=randn((ROWS, HIDDEN), dt, dev),
                               w=randn((HIDDEN,), dt, dev, scale=0.5, shift=1.0)),
     forward=lambda m, t: m.rms_norm_forward(t["x"], t["w"], 1e-6, 0.0, "llama", None)[0],
     library=lambda m, t: m.LigerRMSNormFunction.apply(t["x"], t["w"], 1e-6, 0.0, "llama",
                                                       False, None),
     reference=_rms_norm_reference)


def _layer_norm_reference(t, eps=1e-6):
    x = t["x"]
    return _torch().nn.functional.layer_norm(x, x.shape[-1:], t["w"], t["b"], eps)


case(name="liger.layer_norm", module="liger_kernel.ops.layer_norm",
     kernels={"_layer_norm_forward_kernel": ("Y_ptr", "Mean_ptr", "RSTD_ptr")},
     launcher="layer_norm_forward",
     make=lambda dt, dev: dict(x=randn((ROWS, HIDDEN), dt, dev, shift=0.5),
                               w=randn((HIDDEN,), dt, dev, scale=0.5, shift=1.0),
                               b=randn((HIDDEN,), dt, dev, scale=0.5)),
     forward=lambda m, t: m.layer_norm_forward(t["x"], t["w"], t["b"], 1e-6)[0],
     library=lambda m, t: m.LigerLayerNormFunction.apply(t["x"], t["w"], t["b"], 1e-6),
     reference=_layer_norm_reference)

# -- softmax and friends ----------------------------------------------------

case(name="liger.softmax", module="liger_kernel.ops.softmax",
     kernels={"_softmax_single_block_forward_kernel": ("Y_ptr",)}, launcher="_softmax_forward",
     make=lambda dt, dev: dict(x=randn((ROWS, HIDDEN), dt, dev, scale=2.0)),
     forward=lambda m, t: m._softmax_forward(t["x"])[0],
     library=lambda m, t: m.LigerSoftmaxFunction.apply(t["x"]),
     reference=lambda t: _torch().softmax(t["x"], -1),
     interpret=True)


def _sparsemax_reference(t):
    torch = _torch()
    x = t["x"]
    z, _ = torch.sort(x, dim=-1, descending=True)
    k = torch.arange(1, x.shape[-1] + 1, device=x.device, dtype=x.dtype)
    cumulative = z.cumsum(-1)
    support = (1 + k * z) > cumulative
    size = support.sum(-1, keepdim=True)
    tau = (cumulative.gather(-1, size - 1) - 1) / size.to(x.dtype)
    return torch.clamp(x - tau, min=0)


case(name="liger.sparsemax", module="liger_kernel.ops.sparsemax",
     kernels={"_sparsemax_forward_kernel": ("o_ptr",)}, launcher="_sparsemax_forward",
     make=lambda dt, dev: dict(x=randn((ROWS, 211), dt, dev, scale=3.0)),
     forward=lambda m, t: m._sparsemax_forward(t["x"], -1)[0],
     library=lambda m, t: m.LigerSparsemaxFunction.apply(t["x"], -1),
     reference=_sparsemax_reference,
     interpret=True)
