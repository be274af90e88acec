"""Liger-Kernel (liger_kernel.ops, 0.8.5): its forward kernels as cases of the
peer oracle (oracle.py). Each case calls the library's own forward function,
which launches the kernel; the fp64 references are plain torch.

Sizes are odd (rows 37, hidden 1000) so every mask matters.
"""

from __future__ import annotations

import math

from oracle import Case, function_forward

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


case(name="liger.block_rms_norm", module="liger_kernel.ops.rms_norm",
     # (the library picks the block kernel for many short rows: > 32768 rows, <= 256 wide)
     kernels={"_block_rms_norm_forward_kernel": ("Y_ptr", "RSTD_ptr")},
     launcher="rms_norm_forward",
     make=lambda dt, dev: dict(x=randn((32771, 200), dt, dev),
                               w=randn((200,), dt, dev, scale=0.5, shift=1.0)),
     forward=lambda m, t: m.rms_norm_forward(t["x"], t["w"], 1e-6, 0.0, "llama", None)[0],
     library=lambda m, t: m.LigerRMSNormFunction.apply(t["x"], t["w"], 1e-6, 0.0, "llama",
                                                       False, None),
     reference=_rms_norm_reference)


def _fused_add_rms_norm_reference(t, eps=1e-6):
    s = t["x"] + t["r"]
    return s * _torch().rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * t["w"], s


case(name="liger.fused_add_rms_norm", module="liger_kernel.ops.fused_add_rms_norm",
     kernels={"_fused_add_rms_norm_forward_kernel": ("Y_ptr", "S_ptr", "RSTD_ptr")},
     launcher="fused_add_rms_norm_forward",
     make=lambda dt, dev: dict(x=randn((ROWS, HIDDEN), dt, dev), r=randn((ROWS, HIDDEN), dt, dev),
                               w=randn((HIDDEN,), dt, dev, scale=0.5, shift=1.0)),
     forward=lambda m, t: m.fused_add_rms_norm_forward(t["x"], t["r"], t["w"], 1e-6, 0.0,
                                                       "llama")[:2],
     library=lambda m, t: m.LigerFusedAddRMSNormFunction.apply(t["x"], t["r"], t["w"], 1e-6,
                                                               0.0, "llama", False),
     reference=_fused_add_rms_norm_reference)


def _modulated_reference(t, eps=1e-6):
    x = t["x"]
    y = x * _torch().rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * t["w"]
    return y * (1 + t["scale"][:, None, :]) + t["shift"][:, None, :]


case(name="liger.modulated_rms_norm", module="liger_kernel.ops.modulated_rms_norm",
     kernels={"_modulated_rms_norm_forward_kernel": ("Y_ptr", "RSTD_ptr")},
     launcher="modulated_rms_norm_forward",
     # (3 modulation rows, each shared by 13 rows of x)
     make=lambda dt, dev: dict(x=randn((3, 13, HIDDEN), dt, dev),
                               w=randn((HIDDEN,), dt, dev, scale=0.5, shift=1.0),
                               scale=randn((3, HIDDEN), dt, dev, scale=0.3),
                               shift=randn((3, HIDDEN), dt, dev, scale=0.3)),
     forward=lambda m, t: m.modulated_rms_norm_forward(t["x"], t["w"], t["scale"], t["shift"],
                                                       1e-6, 0.0, "llama")[0],
     library=lambda m, t: m.LigerModulatedRMSNormFunction.apply(
         t["x"], t["w"], t["scale"], t["shift"], 1e-6, 0.0, "llama", False),
     reference=_modulated_reference)


def _poly_norm_reference(t, eps=1e-6):
    torch = _torch()
    x, w = t["x"], t["w"]

    def norm(u):
        return u * torch.rsqrt(u.pow(2).mean(-1, keepdim=True) + eps)

    return w[0] * norm(x ** 3) + w[1] * norm(x ** 2) + w[2] * norm(x) + t["b"]


case(name="liger.poly_norm", module="liger_kernel.ops.poly_norm",
     kernels={"_poly_norm_forward_kernel": ("Y_ptr", "RSTD_ptr")}, launcher="poly_norm_forward",
     make=lambda dt, dev: dict(x=randn((ROWS, HIDDEN), dt, dev), w=randn((3,), dt, dev),
                               b=randn((1,), dt, dev)),
     forward=lambda m, t: m.poly_norm_forward(t["x"], t["w"], t["b"], 1e-6)[0],
     library=lambda m, t: m.LigerPolyNormFunction.apply(t["x"], t["w"], t["b"], 1e-6, False),
     reference=_poly_norm_reference)


def _group_norm_reference(t, groups=4, eps=1e-6):
    return _torch().nn.functional.group_norm(t["x"], groups, t["w"], t["b"], eps)


case(name="liger.group_norm", module="liger_kernel.ops.group_norm",
     kernels={"_group_norm_forward_kernel": ("Y_ptr", "Mean_ptr", "RSTD_ptr")},
     launcher="group_norm_forward",
     # (batch 5, 12 channels in 4 groups, 83 positions: 249 values per group)
     make=lambda dt, dev: dict(x=randn((5, 12, 83), dt, dev, shift=0.5),
                               w=randn((12,), dt, dev, scale=0.5, shift=1.0),
                               b=randn((12,), dt, dev, scale=0.5)),
     forward=lambda m, t: m.group_norm_forward(t["x"], 12, 4, t["w"], t["b"], 1e-6)[0],
     library=lambda m, t: m.LigerGroupNormFunction.apply(t["x"], t["w"], t["b"], 12, 4, 1e-6),
     reference=_group_norm_reference)


case(name="liger.dyt", module="liger_kernel.ops.dyt",
     kernels={"_dyt_fwd_kernel": ("Y",)}, launcher="liger_dyt_fwd",
     make=lambda dt, dev: dict(x=randn((ROWS, HIDDEN), dt, dev),
                               alpha=randn((1,), dt, dev, scale=0.2, shift=0.5),
                               gamma=randn((HIDDEN,), dt, dev, scale=0.5, shift=1.0),
                               beta=randn((HIDDEN,), dt, dev, scale=0.5)),
     forward=lambda m, t: m.liger_dyt_fwd(t["x"], t["alpha"], t["gamma"], t["beta"]),
     library=lambda m, t: m.LigerDyTFunction.apply(t["x"], t["alpha"], t["gamma"], t["beta"]),
     reference=lambda t: _torch().tanh(t["alpha"] * t["x"]) * t["gamma"] + t["beta"])

# -- gates over fused buffers -------------------------------------------------

case(name="liger.swiglu_fused_gate_up", module="liger_kernel.ops.swiglu",
     kernels={"_swiglu_fused_gate_up_forward_kernel": ("c_ptr",)},
     launcher="swiglu_fused_gate_up_forward",
     make=lambda dt, dev: dict(y=randn((ROWS, 2 * HIDDEN), dt, dev)),
     forward=lambda m, t: m.swiglu_fused_gate_up_forward(t["y"])[1],
     library=lambda m, t: m.LigerFusedGateUpSiLUMulFunction.apply(t["y"], False),
     reference=lambda t: (_torch().nn.functional.silu(t["y"][:, :HIDDEN]) *
                          t["y"][:, HIDDEN:]),
     interpret=True)

# -- attention-like -------------------------------------------------------------


def _attn_res_reference(t, eps=1e-6):
    torch = _torch()
    v = t["v"]
    k = v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + eps) * t["w_norm"]
    alpha = torch.softmax(torch.einsum("d,nbtd->nbt", t["w_query"], k), dim=0)
    return torch.einsum("nbt,nbtd->btd", alpha, v)


case(name="liger.attn_res", module="liger_kernel.ops.attn_res",
     kernels={"_attn_res_fwd_kernel": ("Out_ptr", "Alpha_ptr", "RSTD_ptr")},
     launcher="attn_res_forward",
     # (5 blocks of [3, 13, 200]; in the interpreter 3 blocks of [1, 7, 97])
     make=lambda dt, dev: dict(
         v=randn((5, 3, 13, 200) if dev != "cpu" else (3, 1, 7, 97), dt, dev),
         w_query=randn((200 if dev != "cpu" else 97,), dt, dev, scale=0.2),
         w_norm=randn((200 if dev != "cpu" else 97,), dt, dev, scale=0.5, shift=1.0)),
     forward=lambda m, t: m.attn_res_forward(t["v"], t["w_query"], t["w_norm"], 1e-6)[0],
     library=lambda m, t: m.LigerAttnResFunction.apply(t["v"], t["w_query"], t["w_norm"], 1e-6),
     reference=_attn_res_reference,
     interpret=True)


def _mta_forward(m, t):
    """LigerMultiTokenAttentionFunction.forward's sequence of the library's own
    launchers (mask, softmax, mask) around torch's conv2d, as it calls them."""
    import torch.nn.functional as F

    probs = m._softmax_forward(m._mask_inf_forward(t["scores"]))[0]
    return m._mask_zero_forward(F.conv2d(probs, t["weight"], t["bias"], padding=1))


def _mta_reference(t):
    torch = _torch()
    scores = t["scores"]
    L = scores.shape[-1]
    future = torch.ones(L, L, dtype=torch.bool, device=scores.device).triu(1)
    probs = torch.softmax(scores.masked_fill(future, -1e9), -1)
    out = torch.nn.functional.conv2d(probs, t["weight"], t["bias"], padding=1)
    return out.masked_fill(future, 0.0)


case(name="liger.multi_token_attention", module="liger_kernel.ops.multi_token_attention",
     kernels={"_mask_fwd_kernel": ("out_ptr",),
              "liger_kernel.ops.softmax:_softmax_single_block_forward_kernel": ("Y_ptr",)},
     launcher=("_mask_inf_forward", "_softmax_forward", "_mask_zero_forward"),
     make=lambda dt, dev: dict(scores=randn((2, 3, 37, 37), dt, dev),
                               weight=randn((3, 3, 3, 3), dt, dev, scale=0.3),
                               bias=randn((3,), dt, dev, scale=0.1)),
     forward=_mta_forward,
     library=lambda m, t: m.LigerMultiTokenAttentionFunction.apply(
         t["scores"], t["weight"], t["bias"], 1, 1, 1, 1, False),
     reference=_mta_reference,
     interpret=True)

# -- rotary embeddings (in place on q and k) ----------------------------------


def _rotate_half(x):
    half = x.shape[-1] // 2
    return _torch().cat((-x[..., half:], x[..., :half]), dim=-1)


def _rope_inputs(dt, dev):
    torch = _torch()
    positions = torch.arange(37, device=dev, dtype=torch.float32)
    inverse = 1.0 / (10000 ** (torch.arange(0, 64, 2, device=dev, dtype=torch.float32) / 64))
    angles = torch.outer(positions, inverse)
    angles = torch.cat((angles, angles), -1)[None]  # (1, 37, 64)
    return dict(q=randn((2, 5, 37, 64), dt, dev), k=randn((2, 3, 37, 64), dt, dev),
                cos=angles.cos().to(dt), sin=angles.sin().to(dt))


def _rope_reference(t):
    cos, sin = t["cos"][:, None], t["sin"][:, None]
    return (t["q"] * cos + _rotate_half(t["q"]) * sin,
            t["k"] * cos + _rotate_half(t["k"]) * sin)


case(name="liger.rope", module="liger_kernel.ops.rope",
     kernels={"_triton_rope": ("q_ptr", "k_ptr")}, launcher="rope_forward",
     make=_rope_inputs,
     forward=lambda m, t: m.rope_forward(t["q"], t["k"], t["cos"], t["sin"])[:2],
     library=lambda m, t: m.LigerRopeFunction.apply(t["q"], t["k"], t["cos"], t["sin"]),
     reference=_rope_reference,
     interpret=True)


def _llama4_inputs(dt, dev):
    torch = _torch()
    positions = torch.arange(37, device=dev, dtype=torch.float32)
    inverse = 1.0 / (500000 ** (torch.arange(0, 64, 2, device=dev, dtype=torch.float32) / 64))
    freqs = torch.polar(torch.ones(37, 32, device=dev), torch.outer(positions, inverse))
    return dict(q=randn((2, 37, 5, 64), dt, dev), k=randn((2, 37, 3, 64), dt, dev), freqs=freqs)


def _llama4_reference(t):
    torch = _torch()
    freqs = t["freqs"].to(torch.complex128)[None, :, None, :]

    def rotate(x):
        pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2).contiguous())
        return torch.view_as_real(pairs * freqs).flatten(-2)

    return rotate(t["q"]), rotate(t["k"])


case(name="liger.llama4_rope", module="liger_kernel.ops.llama4_rope",
     kernels={"_llama4_rope_kernel": ("q_ptr", "k_ptr")}, launcher="llama4_rope_forward",
     make=_llama4_inputs,
     forward=lambda m, t: m.llama4_rope_forward(t["q"], t["k"], t["freqs"]),
     library=lambda m, t: m.LigerLlama4RopeFunction.apply(t["q"], t["k"], t["freqs"]),
     reference=_llama4_reference)

# -- losses --------------------------------------------------------------------


def _targets(n, vocab, dev, ignored_every=7):
    torch = _torch()
    target = torch.randint(0, vocab, (n,), device=dev)
    target[::ignored_every] = -100
    return target


def _cross_entropy_reference(t):
    return _torch().nn.functional.cross_entropy(t["x"], t["target"], ignore_index=-100)


case(name="liger.cross_entropy", module="liger_kernel.ops.cross_entropy",
     kernels={"liger_cross_entropy_kernel": ("loss_ptr",)}, launcher="cross_entropy_forward",
     make=lambda dt, dev: dict(x=randn((ROWS, HIDDEN), dt, dev, scale=2.0),
                               target=_targets(ROWS, HIDDEN, dev)),
     forward=lambda m, t: m.cross_entropy_forward(t["x"], t["target"], None, -100, 0.0, 0.0,
                                                  "mean", None, False)[0],
     library=lambda m, t: m.LigerCrossEntropyFunction.apply(t["x"], t["target"], None, -100,
                                                            0.0, 0.0, "mean")[0],
     reference=_cross_entropy_reference)


def _flce_reference(t):
    return _torch().nn.functional.cross_entropy(t["x"] @ t["w"].T, t["target"], ignore_index=-100)


case(name="liger.fused_linear_cross_entropy",
     module="liger_kernel.ops.fused_linear_cross_entropy",
     kernels={"liger_cross_entropy_kernel": ("loss_ptr",)},
     launcher="fused_linear_cross_entropy_forward",
     # (hidden 64, vocab 1000: the library splits the 37 rows into chunks of 4)
     make=lambda dt, dev: dict(x=randn((ROWS, 64), dt, dev), w=randn((HIDDEN, 64), dt, dev,
                                                                     scale=0.2),
                               target=_targets(ROWS, HIDDEN, dev)),
     forward=lambda m, t: m.fused_linear_cross_entropy_forward(t["x"], t["w"], t["target"])[0],
     library=lambda m, t: m.LigerFusedLinearCrossEntropyFunction.apply(
         t["x"], t["w"], t["target"])[0],
     reference=_flce_reference)


def _kl_div_reference(t):
    return _torch().nn.functional.kl_div(t["y_pred"], t["y_true"], reduction="batchmean")


case(name="liger.kl_div", module="liger_kernel.ops.kl_div",
     kernels={"_kldiv_kernel_forward": ("loss_ptr",)}, launcher="kldiv_forward_triton",
     make=lambda dt, dev: dict(y_pred=log_softmax_rows((ROWS, HIDDEN), dt, dev),
                               y_true=log_softmax_rows((ROWS, HIDDEN), dt, dev,
                                                       grad=False).exp()),
     forward=lambda m, t: m.kldiv_forward_triton(t["y_pred"], t["y_true"], False, "batchmean",
                                                 1e-10),
     library=lambda m, t: m.LigerKLDivLossFunction.apply(t["y_pred"], t["y_true"], "batchmean",
                                                         False, 1e-10),
     reference=_kl_div_reference)


def _jsd_reference(t, beta=0.5):
    torch = _torch()
    log_q, log_p = t["x"], t["y"]  # student (input), teacher (target), in log space
    log_m = torch.logsumexp(torch.stack((log_p + math.log(beta), log_q + math.log(1 - beta))), 0)
    kl_p = (log_p.exp() * (log_p - log_m)).sum()
    kl_q = (log_q.exp() * (log_q - log_m)).sum()
    return (beta * kl_p + (1 - beta) * kl_q) / log_q.shape[0]


case(name="liger.jsd", module="liger_kernel.ops.backends._triton.jsd",
     kernels={"_jsd_kernel": ("loss_ptr", "dX_ptr")},
     launcher="liger_kernel.ops.jsd:jsd_forward",
     make=lambda dt, dev: dict(x=log_softmax_rows((ROWS, HIDDEN), dt, dev),
                               y=log_softmax_rows((ROWS, HIDDEN), dt, dev, grad=False)),
     forward=lambda m, t: importlib_module("liger_kernel.ops.jsd").jsd_forward(
         t["x"], t["y"], None, 0.5, -100, False, "nvidia-triton")[0],
     library=lambda m, t: importlib_module("liger_kernel.ops.jsd").LigerJSDFunction.apply(
         t["x"], t["y"], None, 0.5, -100, "nvidia-triton"),
     reference=_jsd_reference)


def _tvd_reference(t):
    return 0.5 * (t["p"] - t["q"]).abs().sum() / t["p"].shape[0]


case(name="liger.tvd", module="liger_kernel.ops.tvd",
     kernels={"_tv_distance_kernel": ("loss_ptr", "grads_ptr")},
     launcher="tv_distance_forward_triton",
     make=lambda dt, dev: dict(p=log_softmax_rows((ROWS, HIDDEN), dt, dev, grad=False).exp()
                               .requires_grad_(),
                               q=log_softmax_rows((ROWS, HIDDEN), dt, dev, grad=False).exp()),
     forward=lambda m, t: m.tv_distance_forward_triton(t["p"], t["q"], None, "batchmean", -100,
                                                       False)[0],
     library=lambda m, t: m.LigerTVDLossFunction.apply(t["p"], t["q"], None, "batchmean"),
     reference=_tvd_reference)


def _fused_ce_tvd_reference(t):
    torch = _torch()
    s, target = t["student"], t["target"]
    keep = target != -100
    lse = torch.logsumexp(s, -1)
    ce = lse - s.gather(-1, target.clamp(min=0)[:, None])[:, 0]
    tvd = 0.5 * (s.softmax(-1) - t["teacher"].softmax(-1)).abs().sum(-1)
    return ce * keep, tvd * keep


case(name="liger.fused_ce_tvd", module="liger_kernel.ops.fused_ce_tvd",
     kernels={"_fused_ce_tvd_forward_kernel": ("ce_ptr", "tvd_ptr", "student_lse_ptr",
                                               "teacher_lse_ptr", "sigma_ptr")},
     launcher="fused_ce_tvd_forward",
     make=lambda dt, dev: dict(student=randn((ROWS, HIDDEN), dt, dev, scale=2.0),
                               teacher=randn((ROWS, HIDDEN), dt, dev, scale=2.0, grad=False),
                               target=_targets(ROWS, HIDDEN, dev)),
     forward=lambda m, t: m.fused_ce_tvd_forward(t["student"], t["teacher"], t["target"],
                                                 -100)[:2],
     library=lambda m, t: m.LigerFusedCETVDFunction.apply(t["student"], t["teacher"],
                                                          t["target"], -100),
     reference=_fused_ce_tvd_reference)


# -- attention over a neighborhood, hyper-connections ---------------------------


def _neighborhood_reference(t, kernel_size=7, dilation=2):
    torch = _torch()
    q, k, v = t["q"], t["k"], t["v"]
    steps = q.shape[2]
    offset = (torch.arange(steps, device=q.device)[None, :] -
              torch.arange(steps, device=q.device)[:, None])
    near = (offset.abs() <= (kernel_size // 2) * dilation) & (offset % dilation == 0)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.softmax(scores.masked_fill(~near, float("-inf")), -1) @ v


case(name="liger.neighborhood_attention", module="liger_kernel.ops.fused_neighborhood_attention",
     # (four launches: the window mask, q k^T, liger's softmax, attention x v)
     kernels={"_neighborhood_mask_kernel": ("mask_ptr",),
              "_fused_neighborhood_attention_qk_kernel": ("QK_ptr",),
              "liger_kernel.ops.softmax:_softmax_single_block_forward_kernel": ("Y_ptr",),
              "_fused_neighborhood_attention_av_kernel": ("Out_ptr",)},
     launcher="fused_neighborhood_attention_forward",
     make=lambda dt, dev: dict(q=randn((2, 3, 37, 24), dt, dev), k=randn((2, 3, 37, 24), dt, dev),
                               v=randn((2, 3, 37, 24), dt, dev)),
     forward=lambda m, t: m.fused_neighborhood_attention_forward(t["q"], t["k"], t["v"], 7, 2)[0],
     library=lambda m, t: m.LigerFusedNeighborhoodAttentionFunction.apply(t["q"], t["k"], t["v"],
                                                                          7, 2),
     reference=_neighborhood_reference,
     interpret=True)


def _float32(shape, dev, scale=1.0):
    return randn(shape, _torch().float32, dev, scale=scale)


case(name="liger.mhc_pre", module="liger_kernel.ops.mhc",
     kernels={"_mhc_pre_fwd_kernel": ("out_ptr",)}, launcher="mhc_pre_fwd",
     # (37 tokens, 4 streams of 200 channels; the mixing weights stay float32)
     make=lambda dt, dev: dict(x=randn((ROWS, 4, 200), dt, dev), h=_float32((ROWS, 4), dev)),
     forward=lambda m, t: m.mhc_pre_fwd(t["x"], t["h"]),
     library=lambda m, t: m.LigerMHCPreFunction.apply(t["x"], t["h"]),
     reference=lambda t: _torch().einsum("nsc,ns->nc", t["x"], t["h"]),
     interpret=True)

case(name="liger.mhc_post_res", module="liger_kernel.ops.mhc",
     kernels={"_mhc_post_res_fwd_kernel": ("out_ptr",)}, launcher="mhc_post_res_fwd",
     make=lambda dt, dev: dict(x=randn((ROWS, 4, 200), dt, dev), f=randn((ROWS, 200), dt, dev),
                               h_post=_float32((ROWS, 4), dev),
                               h_res=_float32((ROWS, 4, 4), dev, scale=0.5)),
     forward=lambda m, t: m.mhc_post_res_fwd(t["x"], t["f"], t["h_post"], t["h_res"]),
     library=lambda m, t: m.LigerMHCPostResFunction.apply(t["x"], t["f"], t["h_post"],
                                                          t["h_res"]),
     reference=lambda t: (t["f"][:, None, :] * t["h_post"][:, :, None] +
                          _torch().einsum("noi,nic->noc", t["h_res"], t["x"])),
     interpret=True)


# -- Qwen2-VL's multimodal rotary embedding ------------------------------------------

_MROPE_SECTION = (8, 12, 12)  # time, height, width: half of head_dim 64


def _mrope_inputs(dt, dev):
    """q, k (batch, heads, seq, head_dim); cos, sin of three position ids each
    (time, height, width: 3, batch, seq, head_dim)."""
    torch = _torch()
    positions = torch.randint(0, 50, (3, 2, 37), device=dev).float()
    inverse = 1.0 / (10000 ** (torch.arange(0, 64, 2, device=dev, dtype=torch.float32) / 64))
    angles = positions[..., None] * inverse
    angles = torch.cat((angles, angles), -1)
    return dict(q=randn((2, 5, 37, 64), dt, dev), k=randn((2, 3, 37, 64), dt, dev),
                cos=angles.cos().to(dt), sin=angles.sin().to(dt))


def _mrope_reference(t):
    """Each section of the rotated half takes its angles from its own position id."""
    torch = _torch()

    def sections(table):
        parts = table.split(list(_MROPE_SECTION) * 2, dim=-1)
        return torch.cat([part[i % 3] for i, part in enumerate(parts)], -1)[:, None]

    cos, sin = sections(t["cos"]), sections(t["sin"])
    return (t["q"] * cos + _rotate_half(t["q"]) * sin,
            t["k"] * cos + _rotate_half(t["k"]) * sin)


case(name="liger.qwen2vl_mrope", module="liger_kernel.ops.qwen2vl_mrope",
     kernels={"_triton_qwen2vl_mrope": ("q_ptr", "k_ptr")}, launcher="qwen2vl_mrope_forward",
     make=_mrope_inputs,
     forward=lambda m, t: m.qwen2vl_mrope_forward(t["q"], t["k"], t["cos"], t["sin"],
                                                  _MROPE_SECTION)[:2],
     library=lambda m, t: m.LigerQwen2VLMRopeFunction.apply(t["q"], t["k"], t["cos"], t["sin"],
                                                            _MROPE_SECTION),
     reference=_mrope_reference,
     interpret=True)

# -- GRPO's per-token loss ---------------------------------------------------------

_GRPO = dict(temperature=0.9, beta=0.04, eps_low=0.2, eps_high=0.2)
_GRPO_VOCAB = 3000  # (two of the kernel's 2048-wide blocks in its online log-sum-exp)


def _grpo_inputs(dt, dev):
    """Logits (batch, completion + 1, vocab); the old policy's and the reference
    policy's log-probabilities near the current ones; padding in the mask."""
    torch = _torch()
    logits = torch.randn((3, 38, _GRPO_VOCAB), device=dev)
    ids = torch.randint(0, _GRPO_VOCAB, (3, 37), device=dev)
    scaled = logits[:, :-1] / _GRPO["temperature"]
    logp = scaled.log_softmax(-1).gather(-1, ids[..., None])[..., 0]
    mask = torch.ones((3, 37), dtype=torch.int32, device=dev)
    mask[1, 30:] = 0
    mask[2, ::5] = 0
    return dict(logits=logits.to(dt).requires_grad_(True), ids=ids, mask=mask,
                old_logp=(logp + 0.3 * torch.randn_like(logp)),
                ref_logp=(logp + 0.3 * torch.randn_like(logp)),
                advantages=torch.randn((3,), device=dev))


def _grpo_arguments(t):
    return (t["logits"], t["old_logp"], t["ref_logp"], t["ids"], t["advantages"], t["mask"],
            *_GRPO.values(), False)


def _grpo_reference(t):
    """The clipped surrogate plus beta times the k3 estimate of KL, per token,
    masked (the library's reduce=False loss; its KL output is a metric, without
    a gradient in the library's backward)."""
    torch = _torch()
    scaled = t["logits"][:, :-1] / _GRPO["temperature"]
    logp = scaled.log_softmax(-1).gather(-1, t["ids"][..., None])[..., 0]
    ratio = (logp - t["old_logp"]).exp()
    clipped = ratio.clamp(1 - _GRPO["eps_low"], 1 + _GRPO["eps_high"])
    advantages = t["advantages"][:, None]
    kl = (t["ref_logp"] - logp).exp() - (t["ref_logp"] - logp) - 1
    loss = -torch.minimum(ratio * advantages, clipped * advantages) + _GRPO["beta"] * kl
    mask = t["mask"].to(loss.dtype)
    return loss * mask


case(name="liger.grpo_loss", module="liger_kernel.ops.grpo_loss",
     kernels={"_grpo_loss_fwd_kernel": ("LOSS", "LSE", "KL", "IS_CLIPPED")}, launcher=None,
     make=_grpo_inputs,
     forward=lambda m, t: function_forward(m.GrpoLossFunction, *_grpo_arguments(t),
                                           reduce=False)[0],
     library=lambda m, t: m.GrpoLossFunction.apply(*_grpo_arguments(t), "grpo", None,
                                                   False)[0],
     reference=_grpo_reference,
     interpret=True)

def importlib_module(name):
    import importlib
    return importlib.import_module(name)


# Forward kernels of liger_kernel.ops without a case, and why (test_peer_coverage.py
# fails on a forward kernel that is in neither CASES nor here).
_MOE_ROUTING = ("integer routing (expert histogram, prefix sum, scatter of token indices): "
                "no gradient flows through it")
_NOT_YET = "no case yet: "
UNCOVERED = {
    "liger_kernel.ops.fused_linear_kl_div:_kl_div_kernel": (
        _NOT_YET + "writes dL/dlogits in place into the logits chunk (X_ptr loaded and "
        "stored), the pattern liger.cross_entropy and liger.fused_linear_cross_entropy are "
        "refused for"),
    "liger_kernel.ops.softmax:_softmax_multi_block_forward_kernel": (
        "never launched by the library: _softmax_forward takes the single-block kernel "
        "whenever n_cols <= next_power_of_2(n_cols), that is always"),
    "liger_kernel.ops.swiglu:_swiglu_forward_kernel_tiled": (
        "launched on Blackwell only (_should_tile); elsewhere _swiglu_forward_kernel "
        "(liger.swiglu)"),
    "liger_kernel.ops.swiglu:silu": "a @triton.jit helper inlined into the swiglu kernels",
    "liger_kernel.ops.mlp:_l2_swizzle": "a @triton.jit helper (program order of the matmuls)",
    "liger_kernel.ops.fused_moe_kernels:_keyed_add": "the combine function of a tl.associative_scan",
    "liger_kernel.ops.utils:element_mul_kernel": (
        "launched by the backward of the fused-linear losses only (scales, in place, the "
        "gradient their forward stored)"),
    "liger_kernel.ops.mlp:_swiglu_kernel_forward": (
        _NOT_YET + "the fused MLP's matmuls read host TensorDescriptors (TMA) made in an "
        "autotune pre_hook; tritonad refuses tensor descriptors (docs/quickstart.md)"),
    "liger_kernel.ops.mlp:_swiglu_kernel_forward_inference": "inference only (no backward)",
    "liger_kernel.ops.fused_moe_kernels:_moe_router_histogram_kernel": _MOE_ROUTING,
    "liger_kernel.ops.fused_moe_kernels:_moe_router_prefix_sum_kernel": _MOE_ROUTING,
    "liger_kernel.ops.fused_moe_kernels:_moe_router_scatter_kernel": _MOE_ROUTING,
    "liger_kernel.ops.fused_moe_kernels:_fused_up_proj_swiglu_kernel": (
        _NOT_YET + "grouped expert matmuls over routed tokens (LigerFusedMoEFunction)"),
    "liger_kernel.ops.fused_moe_kernels:_fused_down_proj_kernel": (
        _NOT_YET + "grouped expert matmuls over routed tokens (LigerFusedMoEFunction)"),
    "liger_kernel.ops.fused_moe_kernels:_token_gather_weighted_sum_kernel": (
        _NOT_YET + "the weighted gather of LigerFusedMoEFunction"),
    "liger_kernel.ops.grpo_loss:_grpo_loss_fwd_kernel_seq": (
        _NOT_YET + "GrpoLossFunction, sequence-level importance sampling: its coefficients "
        "come from _selective_log_softmax_kernel under torch.no_grad (constants through the "
        "kernels alone), which the library's backward differentiates"),
    "liger_kernel.ops.grpo_loss:_selective_log_softmax_kernel": (
        "the library has no backward for it (reference log-probabilities, under no_grad)"),
    "liger_kernel.ops.mhc:_mhc_mm_norm_fwd_kernel": (
        _NOT_YET + "reached through LigerMHCCoeffsFunction only (matmul + RMS norm, then "
        "Sinkhorn iterations)"),
    "liger_kernel.ops.mhc:_mhc_split_sinkhorn_fwd_kernel": (
        _NOT_YET + "reached through LigerMHCCoeffsFunction only (Sinkhorn iterations)"),
    "liger_kernel.ops.vocab_parallel_cross_entropy:liger_vocab_parallel_ce_forward_kernel": (
        "needs a tensor-parallel process group (torch.distributed)"),
}
