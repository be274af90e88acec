"""flash-linear-attention (fla-core 0.6.0): forward kernels of fla.ops and
fla.modules as cases of the peer oracle (oracle.py): l2norm (blocked and row
kernels), the chunk-local cumsum (scalar and vector), the fused norm-gate layers
(layer norm and RMS norm, swish gate), and the fused chunked forward of three
linear-attention variants (plain, simple GLA with a data-dependent gate, and
retention's fixed decay). Each case calls the library's own forward function,
which launches the kernel; the fp64 references are plain torch.
"""

from __future__ import annotations

from oracle import Case, function_forward

ROWS = 37
# linear attention: batch, time (3 chunks of 64, the last partial), heads, key and value width
B, T, H, K, V = 2, 150, 3, 48, 40
CHUNK = 64


def _torch():
    import torch
    return torch


def randn(shape, dtype, device, grad=True, scale=1.0, shift=0.0):
    torch = _torch()
    return (torch.randn(shape, device=device) * scale + shift).to(dtype).requires_grad_(grad)


def log_gates(shape, dtype, device, grad=True):
    """Forget gates in log space (logsigmoid), as the gated variants take them."""
    torch = _torch()
    g = torch.nn.functional.logsigmoid(torch.randn(shape, device=device) + 2.0)
    return g.to(dtype).requires_grad_(grad)


CASES = {}


def case(**fields):
    c = Case(**fields)
    CASES[c.name] = c
    return c


# -- l2norm ---------------------------------------------------------------------


def _l2norm_reference(t, eps=1e-6):
    x = t["x"]
    return x * _torch().rsqrt(x.pow(2).sum(-1, keepdim=True) + eps)


case(name="fla.l2norm", module="fla.modules.norm.l2norm",
     # (width <= 512: the blocked kernel, rows in tiles chosen by the autotuner)
     kernels={"l2norm_fwd_kernel": ("y", "rstd")}, launcher="l2norm_fwd",
     make=lambda dt, dev: dict(x=randn((ROWS, 200), dt, dev)),
     forward=lambda m, t: m.l2norm_fwd(t["x"], 1e-6)[0],
     library=lambda m, t: m.l2norm(t["x"], 1e-6),
     reference=_l2norm_reference,
     interpret=True)

case(name="fla.l2norm_row", module="fla.modules.norm.l2norm",
     kernels={"l2norm_fwd_kernel_row": ("y", "rstd")}, launcher="l2norm_fwd",
     make=lambda dt, dev: dict(x=randn((ROWS, 1000), dt, dev)),
     forward=lambda m, t: m.l2norm_fwd(t["x"], 1e-6)[0],
     library=lambda m, t: m.l2norm(t["x"], 1e-6),
     reference=_l2norm_reference,
     interpret=True)

# -- chunk-local cumsum ------------------------------------------------------------

_PEER_CUMSUM = None


def _library_cumsum(m, g):
    """The library's cumsum with the backward fla's ops give it: the reverse
    chunk-local cumsum of the upstream gradient (fla has no autograd.Function for
    the cumsum alone; its chunked ops call it so in their backward)."""
    global _PEER_CUMSUM
    if _PEER_CUMSUM is None:
        torch = _torch()

        class ChunkLocalCumsum(torch.autograd.Function):
            @staticmethod
            def forward(ctx, g):
                return m.chunk_local_cumsum(g, CHUNK)

            @staticmethod
            def backward(ctx, do):
                return m.chunk_local_cumsum(do.contiguous(), CHUNK, reverse=True,
                                            output_dtype=do.dtype)

        _PEER_CUMSUM = ChunkLocalCumsum
    return _PEER_CUMSUM.apply(g)


def _cumsum_reference(t):
    g = t["g"]
    chunks = [g[:, i:i + CHUNK].cumsum(1) for i in range(0, g.shape[1], CHUNK)]
    return _torch().cat(chunks, 1)


case(name="fla.chunk_local_cumsum", module="fla.ops.utils.cumsum",
     kernels={"chunk_local_cumsum_scalar_kernel": ("o",)}, launcher="chunk_local_cumsum_scalar",
     make=lambda dt, dev: dict(g=randn((B, T, H), dt, dev)),
     forward=lambda m, t: m.chunk_local_cumsum_scalar(t["g"], CHUNK),
     library=lambda m, t: _library_cumsum(m, t["g"]),
     reference=_cumsum_reference,
     interpret=True)

case(name="fla.chunk_local_cumsum_vector", module="fla.ops.utils.cumsum",
     kernels={"chunk_local_cumsum_vector_kernel": ("o",)}, launcher="chunk_local_cumsum_vector",
     make=lambda dt, dev: dict(g=randn((B, T, H, V), dt, dev)),
     forward=lambda m, t: m.chunk_local_cumsum_vector(t["g"], CHUNK),
     library=lambda m, t: _library_cumsum(m, t["g"]),
     reference=_cumsum_reference,
     interpret=True)

# -- fused norm + gate ------------------------------------------------------------


def _norm_gated_reference(t, rms, eps=1e-6):
    torch = _torch()
    x, g = t["x"], t["g"]
    if rms:
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * t["w"]
    else:
        y = torch.nn.functional.layer_norm(x, x.shape[-1:], t["w"], t["b"], eps)
    return y * torch.nn.functional.silu(g)


case(name="fla.layer_norm_gated", module="fla.modules.norm.fused_norm_gate",
     # (width <= 512: the blocked kernel)
     kernels={"layer_norm_gated_fwd_kernel": ("y", "mean", "rstd")},
     launcher="layer_norm_gated_fwd",
     make=lambda dt, dev: dict(x=randn((ROWS, 200), dt, dev, shift=0.5),
                               g=randn((ROWS, 200), dt, dev),
                               w=randn((200,), dt, dev, scale=0.5, shift=1.0),
                               b=randn((200,), dt, dev, scale=0.5)),
     forward=lambda m, t: m.layer_norm_gated_fwd(t["x"], t["g"], t["w"], t["b"], "swish",
                                                 1e-6)[0],
     library=lambda m, t: m.LayerNormGatedFunction.apply(t["x"], t["g"], t["w"], t["b"],
                                                         "swish", None, 1e-6, False, False,
                                                         False),
     reference=lambda t: _norm_gated_reference(t, rms=False),
     interpret=True)

case(name="fla.rms_norm_gated_row", module="fla.modules.norm.fused_norm_gate",
     # (width > 512: one row per program)
     kernels={"layer_norm_gated_fwd_kernel_row": ("y", "rstd")},
     launcher="layer_norm_gated_fwd",
     make=lambda dt, dev: dict(x=randn((ROWS, 1000), dt, dev), g=randn((ROWS, 1000), dt, dev),
                               w=randn((1000,), dt, dev, scale=0.5, shift=1.0)),
     forward=lambda m, t: m.layer_norm_gated_fwd(t["x"], t["g"], t["w"], None, "swish", 1e-6,
                                                 is_rms_norm=True)[0],
     library=lambda m, t: m.LayerNormGatedFunction.apply(t["x"], t["g"], t["w"], None,
                                                         "swish", None, 1e-6, False, False,
                                                         True),
     reference=lambda t: _norm_gated_reference(t, rms=True),
     interpret=True)

# -- linear attention, fused chunked forward ----------------------------------------


def _linear_attention_reference(t, log_decay=None):
    """o_t = scale * sum_{s <= t} exp(G_t - G_s) (q_t . k_s) v_s, G the running sum
    of the log decays (none: 1)."""
    torch = _torch()
    q, k, v = t["q"], t["k"], t["v"]
    steps = q.shape[1]
    scores = torch.einsum("bthk,bshk->bhts", q, k) * K ** -0.5
    causal = torch.ones(steps, steps, dtype=torch.bool, device=q.device).tril()
    if log_decay is None:
        weights = scores.masked_fill(~causal, 0.0)
    else:
        running = log_decay.cumsum(1).transpose(1, 2)  # (B, H, T)
        exponent = (running[..., :, None] - running[..., None, :]).masked_fill(~causal,
                                                                               float("-inf"))
        weights = scores * exponent.exp()
    return torch.einsum("bhts,bshv->bthv", weights, v)


def _qkv(dt, dev):
    return dict(q=randn((B, T, H, K), dt, dev), k=randn((B, T, H, K), dt, dev),
                v=randn((B, T, H, V), dt, dev))


case(name="fla.fused_chunk_linear_attn", module="fla.ops.common.fused_chunk",
     kernels={"fused_chunk_fwd_kernel": ("o", "ht")}, launcher="fused_chunk_fwd",
     make=_qkv,
     forward=lambda m, t: m.fused_chunk_fwd(t["q"], t["k"], t["v"], scale=K ** -0.5,
                                            chunk_size=CHUNK)[0],
     library=lambda m, t: m.FusedChunkFunction.apply(t["q"], t["k"], t["v"], None, None,
                                                     K ** -0.5, None, False, None)[0],
     reference=_linear_attention_reference)


def _simple_gla_forward(m, t):
    """FusedChunkFunction.forward's two launches, as it makes them: the gates'
    chunk-local cumsum (in log2 units), then the fused chunked attention."""
    g = m.chunk_local_cumsum(t["g"], chunk_size=CHUNK, scale=m.RCP_LN2)
    return m.fused_chunk_fwd(t["q"], t["k"], t["v"], g=g, scale=K ** -0.5, chunk_size=CHUNK)[0]


case(name="fla.fused_chunk_simple_gla", module="fla.ops.common.fused_chunk",
     kernels={"fla.ops.utils.cumsum:chunk_local_cumsum_scalar_kernel": ("o",),
              "fused_chunk_fwd_kernel": ("o", "ht")},
     launcher=("chunk_local_cumsum", "fused_chunk_fwd"),
     make=lambda dt, dev: dict(**_qkv(dt, dev), g=log_gates((B, T, H), dt, dev)),
     forward=_simple_gla_forward,
     library=lambda m, t: m.FusedChunkFunction.apply(t["q"], t["k"], t["v"], t["g"], None,
                                                     K ** -0.5, None, False, None)[0],
     reference=lambda t: _linear_attention_reference(t, t["g"]))


def _retention_decay(dt, dev):
    """Retention's fixed per-head decay, log(1 - 2^(-5 - h)) (no gradient)."""
    torch = _torch()
    heads = torch.arange(H, device=dev, dtype=torch.float32)
    return (1 - 2.0 ** (-5.0 - heads)).log().to(dt)


case(name="fla.fused_chunk_retention", module="fla.ops.common.fused_chunk",
     kernels={"fused_chunk_fwd_kernel": ("o", "ht")}, launcher="fused_chunk_fwd",
     make=lambda dt, dev: dict(**_qkv(dt, dev), gamma=_retention_decay(dt, dev)),
     forward=lambda m, t: m.fused_chunk_fwd(t["q"], t["k"], t["v"],
                                            g_gamma=t["gamma"] * m.RCP_LN2, scale=K ** -0.5,
                                            chunk_size=CHUNK)[0],
     library=lambda m, t: m.FusedChunkFunction.apply(t["q"], t["k"], t["v"], None, t["gamma"],
                                                     K ** -0.5, None, False, None)[0],
     reference=lambda t: _linear_attention_reference(
         t, t["gamma"].to(t["q"].dtype).expand(B, T, H)))


# -- linear attention, chunked forward (states per chunk, then outputs) ------------

_CHUNKED = {"fla.ops.common.chunk_h:chunk_fwd_kernel_h": ("h", "ht"),
            "fla.ops.common.chunk_o:chunk_fwd_kernel_o": ("o",)}


def _chunk_simple_gla_forward(m, t):
    """ChunkSimpleGLAFunction.forward's launches, as it makes them: the gates'
    chunk-local cumsum (log2 units), the chunk states h, then the outputs."""
    g = t.get("g")
    if g is not None:
        g = m.chunk_local_cumsum(g, chunk_size=CHUNK, scale=m.RCP_LN2)
    return m.chunk_simple_gla_fwd(t["q"], t["k"], t["v"], g=g, scale=K ** -0.5,
                                  chunk_size=CHUNK)[0]


def _chunk_simple_gla_library(m, t):
    return m.ChunkSimpleGLAFunction.apply(t["q"], t["k"], t["v"], t.get("g"), None, K ** -0.5,
                                          None, False, False, None, None, CHUNK)[0]


case(name="fla.chunk_linear_attn", module="fla.ops.simple_gla.chunk",
     kernels=dict(_CHUNKED), launcher="chunk_simple_gla_fwd",
     make=_qkv,
     forward=_chunk_simple_gla_forward,
     library=_chunk_simple_gla_library,
     reference=_linear_attention_reference)

case(name="fla.chunk_simple_gla", module="fla.ops.simple_gla.chunk",
     kernels={"fla.ops.utils.cumsum:chunk_local_cumsum_scalar_kernel": ("o",), **_CHUNKED},
     launcher=("chunk_local_cumsum", "chunk_simple_gla_fwd"),
     make=lambda dt, dev: dict(**_qkv(dt, dev), g=log_gates((B, T, H), dt, dev)),
     forward=_chunk_simple_gla_forward,
     library=_chunk_simple_gla_library,
     reference=lambda t: _linear_attention_reference(t, t["g"]))


# -- fused recurrent forwards (one program per state tile, a loop over time) ----------
# (not in Triton's interpreter: the library's own forward fails there, at its
# `for _ in range(0, T)`)


def _hgrn_reference(t):
    """h_t = exp(g_t) h_{t-1} + x_t; the output is every h_t."""
    torch = _torch()
    x, g = t["x"], t["g"]
    h = torch.zeros_like(x[:, 0])
    states = []
    for step in range(x.shape[1]):
        h = g[:, step].exp() * h + x[:, step]
        states.append(h)
    return torch.stack(states, 1)


def _hgrn_inputs(dt, dev):
    return dict(x=randn((B, T, 100), dt, dev), g=log_gates((B, T, 100), dt, dev))


case(name="fla.fused_recurrent_hgrn", module="fla.ops.hgrn.fused_recurrent",
     kernels={"fused_recurrent_hgrn_fwd_kernel": ("o", "ht")}, launcher="fused_recurrent_hgrn_fwd",
     make=_hgrn_inputs,
     forward=lambda m, t: m.fused_recurrent_hgrn_fwd(t["x"], t["g"])[0],
     library=lambda m, t: m.fused_recurrent_hgrn(t["x"], t["g"])[0],
     reference=_hgrn_reference)

case(name="fla.chunk_hgrn", module="fla.ops.hgrn.chunk",
     # (per chunk: the local scan and the gates' running sum; then each chunk adds
     # the previous chunk's last state, read from and written to o in place)
     kernels={"chunk_hgrn_fwd_kernel_h": ("gc", "o"), "chunk_hgrn_fwd_kernel_o": ("o",)},
     launcher=None,
     make=_hgrn_inputs,
     forward=lambda m, t: function_forward(m.ChunkHGRNFunction, t["x"], t["g"])[0],
     library=lambda m, t: m.chunk_hgrn(t["x"], t["g"])[0],
     reference=_hgrn_reference)


def _recurrent_reference(t, key_decay=None, head_decay=None, bonus=None):
    """The linear recurrence h_t = decay_t * h_{t-1} + k_t v_t^T (per head, K x V),
    o_t = scale q_t^T h_t; `bonus` (rwkv6's u) reads o_t = scale q_t^T (h_{t-1} +
    diag(u) k_t v_t^T) before the update instead."""
    torch = _torch()
    q, k, v = t["q"] * K ** -0.5, t["k"], t["v"]
    h = q.new_zeros(B, H, K, V)
    outputs = []
    for step in range(q.shape[1]):
        kv = k[:, step, :, :, None] * v[:, step, :, None, :]
        decay = 1.0
        if key_decay is not None:
            decay = key_decay[:, step].exp()[..., None]
        elif head_decay is not None:
            decay = head_decay.exp()[None, :, None, None]
        if bonus is not None:
            outputs.append(torch.einsum("bhk,bhkv->bhv", q[:, step],
                                        h + bonus[None, :, :, None] * kv))
            h = decay * h + kv
        else:
            h = decay * h + kv
            outputs.append(torch.einsum("bhk,bhkv->bhv", q[:, step], h))
    return torch.stack(outputs, 1)


case(name="fla.fused_recurrent_gla", module="fla.ops.common.fused_recurrent",
     kernels={"fused_recurrent_fwd_kernel": ("o", "ht")}, launcher="fused_recurrent_fwd",
     make=lambda dt, dev: dict(**_qkv(dt, dev), gk=log_gates((B, T, H, K), dt, dev)),
     forward=lambda m, t: m.fused_recurrent_fwd(t["q"], t["k"], t["v"], gk=t["gk"],
                                                scale=K ** -0.5)[0],
     library=lambda m, t: importlib_module("fla.ops.gla").fused_recurrent_gla(
         t["q"], t["k"], t["v"], gk=t["gk"], scale=K ** -0.5)[0],
     reference=lambda t: _recurrent_reference(t, key_decay=t["gk"]))

case(name="fla.fused_recurrent_retention", module="fla.ops.common.fused_recurrent",
     kernels={"fused_recurrent_fwd_kernel": ("o", "ht")}, launcher="fused_recurrent_fwd",
     make=lambda dt, dev: dict(**_qkv(dt, dev)),
     # (fused_recurrent_retention's launch: the decay of each head as g_gamma)
     forward=lambda m, t: m.fused_recurrent_fwd(t["q"], t["k"], t["v"],
                                                g_gamma=_retention_decay(_torch().float32,
                                                                         t["q"].device),
                                                scale=K ** -0.5)[0],
     library=lambda m, t: importlib_module("fla.ops.retention").fused_recurrent_retention(
         t["q"], t["k"], t["v"], scale=K ** -0.5)[0],
     reference=lambda t: _recurrent_reference(
         t, head_decay=_retention_decay(_torch().float64, t["q"].device)))

case(name="fla.fused_recurrent_rwkv6", module="fla.ops.rwkv6.fused_recurrent",
     kernels={"fused_recurrent_rwkv6_fwd_kernel": ("o", "ht")},
     launcher="fused_recurrent_rwkv6_fwd",
     make=lambda dt, dev: dict(**_qkv(dt, dev), w=log_gates((B, T, H, K), dt, dev),
                               u=randn((H, K), dt, dev, scale=0.5)),
     forward=lambda m, t: m.fused_recurrent_rwkv6_fwd(t["q"], t["k"], t["v"], t["w"], t["u"],
                                                      scale=K ** -0.5)[0],
     library=lambda m, t: m.fused_recurrent_rwkv6(t["q"], t["k"], t["v"], t["w"], t["u"],
                                                  scale=K ** -0.5)[0],
     reference=lambda t: _recurrent_reference(t, key_decay=t["w"], bonus=t["u"]))


def _delta_rule_inputs(dt, dev):
    torch = _torch()
    inputs = _qkv(dt, dev)
    # (unit keys keep the delta rule's state bounded, as its users' l2norm does)
    keys = torch.nn.functional.normalize(torch.randn((B, T, H, K), device=dev), dim=-1)
    inputs["k"] = keys.to(dt).requires_grad_(True)
    inputs["beta"] = torch.rand((B, T, H), device=dev).to(dt).requires_grad_(True)
    return inputs


def _delta_rule_reference(t):
    """S_t = S_{t-1} + beta_t (v_t - S_{t-1} k_t) k_t^T (V x K); o_t = scale S_t q_t."""
    torch = _torch()
    q, k, v, beta = t["q"] * K ** -0.5, t["k"], t["v"], t["beta"]
    state = q.new_zeros(B, H, V, K)
    outputs = []
    for step in range(q.shape[1]):
        error = v[:, step] - torch.einsum("bhvk,bhk->bhv", state, k[:, step])
        state = state + (beta[:, step, :, None] * error)[..., None] * k[:, step, :, None, :]
        outputs.append(torch.einsum("bhvk,bhk->bhv", state, q[:, step]))
    return torch.stack(outputs, 1)


case(name="fla.fused_recurrent_delta_rule", module="fla.ops.delta_rule.fused_recurrent",
     kernels={"fused_recurrent_delta_rule_fwd_kernel": ("u", "o", "ht")},
     launcher="fused_recurrent_delta_rule_fwd",
     make=_delta_rule_inputs,
     forward=lambda m, t: m.fused_recurrent_delta_rule_fwd(t["q"], t["k"], t["v"], t["beta"],
                                                           K ** -0.5, None, False)[0],
     library=lambda m, t: m.fused_recurrent_delta_rule(t["q"], t["k"], t["v"], t["beta"],
                                                       scale=K ** -0.5)[0],
     reference=_delta_rule_reference)

case(name="fla.chunk_delta_rule", module="fla.ops.delta_rule.chunk",
     # (per chunk: beta K K^T, its unit-lower-triangular inverse (16x16 blocks merged),
     # the WY factors w, u, the states with the corrected values, the outputs)
     kernels={"fla.ops.common.chunk_scaled_dot_kkt:chunk_scaled_dot_kkt_fwd_kernel": ("A",),
              "fla.ops.utils.solve_tril:merge_16x16_to_64x64_inverse_kernel": ("Ai",),
              "fla.ops.delta_rule.wy_fast:recompute_w_u_fwd_kernel": ("w", "u"),
              "fla.ops.common.chunk_delta_h:chunk_gated_delta_rule_fwd_kernel_h_blockdim64": (
                  "h", "v_new", "ht"),
              "fla.ops.common.chunk_o:chunk_fwd_kernel_o": ("o",)},
     launcher="chunk_delta_rule_fwd",
     make=_delta_rule_inputs,
     forward=lambda m, t: m.chunk_delta_rule_fwd(t["q"], t["k"], t["v"], t["beta"], K ** -0.5,
                                                 None, False)[0],
     library=lambda m, t: m.chunk_delta_rule(t["q"], t["k"], t["v"], t["beta"],
                                             scale=K ** -0.5)[0],
     reference=_delta_rule_reference,
     dtypes=("bfloat16",))  # (the library's Function refuses float32)

# -- parallel (quadratic) based attention --------------------------------------------


def _based_reference(t):
    """Based's Taylor feature map: o_t = sum_{s <= t} (1 + a + a^2 / 2) v_s with
    a = scale q_t . k_s, normalized by the weights' sum."""
    torch = _torch()
    q, k, v = t["q"], t["k"], t["v"]
    scores = torch.einsum("bthk,bshk->bhts", q * K ** -0.5, k)
    causal = torch.ones(q.shape[1], q.shape[1], dtype=torch.bool, device=q.device).tril()
    weights = (1 + scores + 0.5 * scores ** 2).masked_fill(~causal, 0.0)
    o = torch.einsum("bhts,bshv->bthv", weights, v)
    return o / (weights.sum(-1).transpose(1, 2)[..., None] + 1e-6)


def _based_forward(m, t):
    """parallel_based's own code around its Function: heads first, then o / z."""
    q, k, v = (x.transpose(1, 2) for x in (t["q"], t["k"], t["v"]))
    o, z = function_forward(m.ParallelBasedFunction, q, k, v, K ** -0.5)
    return (o / (z[..., None] + 1e-6)).transpose(1, 2)


case(name="fla.parallel_based", module="fla.ops.based.parallel",
     kernels={"parallel_based_fwd_kernel": ("o", "z")}, launcher=None,
     make=_qkv,
     forward=_based_forward,
     library=lambda m, t: m.parallel_based(t["q"], t["k"], t["v"], K ** -0.5),
     reference=_based_reference)

# -- fla.modules: token shift, short convolution ---------------------------------------


case(name="fla.token_shift", module="fla.modules.token_shift",
     kernels={"token_shift_fwd_kernel_short": ("y", "cache_out")}, launcher="token_shift_fwd",
     make=lambda dt, dev: dict(x=randn((B, T, 100), dt, dev)),
     forward=lambda m, t: m.token_shift_fwd(t["x"])[0],
     library=lambda m, t: m.token_shift(t["x"]),
     reference=lambda t: _torch().nn.functional.pad(t["x"], (0, 0, 1, -1)) - t["x"],
     interpret=True)


def _short_convolution_reference(t):
    """Depthwise causal convolution over time, then SiLU."""
    torch = _torch()
    x, w = t["x"], t["w"]
    y = torch.nn.functional.conv1d(x.transpose(1, 2), w[:, None, :], t["b"],
                                   padding=w.shape[1] - 1, groups=w.shape[0])
    return torch.nn.functional.silu(y[..., :x.shape[1]].transpose(1, 2))


case(name="fla.causal_conv1d", module="fla.modules.causal_conv1d.ops",
     kernels={"causal_conv1d_fwd_kernel": ("y",)}, launcher="causal_conv1d_fwd",
     make=lambda dt, dev: dict(x=randn((B, T, 100), dt, dev),
                               w=randn((100, 4), dt, dev, scale=0.5),
                               b=randn((100,), dt, dev, scale=0.5)),
     forward=lambda m, t: m.causal_conv1d_fwd(t["x"], t["w"], t["b"], None,
                                              activation="silu")[0],
     library=lambda m, t: m.causal_conv1d(t["x"], weight=t["w"], bias=t["b"],
                                          activation="silu")[0],
     reference=_short_convolution_reference,
     interpret=True)


# -- parallel (quadratic) attention: softmax with grouped heads, and simple GLA ----------

HQ = 2 * H  # query heads: two share each key/value head


def _softmax_attention_reference(t):
    torch = _torch()
    q = t["q"]
    k, v = (x.repeat_interleave(HQ // H, dim=2) for x in (t["k"], t["v"]))
    scores = torch.einsum("bthk,bshk->bhts", q, k) * K ** -0.5
    causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    weights = scores.masked_fill(~causal, float("-inf")).softmax(-1)
    return torch.einsum("bhts,bshv->bthv", weights, v)


case(name="fla.parallel_attn", module="fla.ops.attn.parallel",
     kernels={"parallel_attn_fwd_kernel": ("o", "lse")}, launcher="parallel_attn_fwd",
     make=lambda dt, dev: dict(q=randn((B, T, HQ, K), dt, dev), k=randn((B, T, H, K), dt, dev),
                               v=randn((B, T, H, V), dt, dev)),
     forward=lambda m, t: m.parallel_attn_fwd(t["q"], t["k"], t["v"], None, None, K ** -0.5)[0],
     library=lambda m, t: m.parallel_attn(t["q"], t["k"], t["v"], scale=K ** -0.5),
     reference=_softmax_attention_reference)

case(name="fla.parallel_simple_gla", module="fla.ops.simple_gla.parallel",
     kernels={"fla.ops.utils.cumsum:chunk_local_cumsum_scalar_kernel": ("o",),
              "parallel_simple_gla_fwd_kernel": ("o", "attn")},
     launcher="parallel_simple_gla_fwd",
     make=lambda dt, dev: dict(**_qkv(dt, dev), g=log_gates((B, T, H), dt, dev)),
     forward=lambda m, t: m.parallel_simple_gla_fwd(t["q"], t["k"], t["v"], t["g"],
                                                    K ** -0.5)[0],
     library=lambda m, t: m.parallel_simple_gla(t["q"], t["k"], t["v"], t["g"],
                                                scale=K ** -0.5)[0],
     reference=lambda t: _linear_attention_reference(t, t["g"]))



def _stick_breaking_reference(t):
    """Query t gives key s < t the weight sigmoid(z_ts) prod_{s < l < t} (1 -
    sigmoid(z_tl)), z = scale q_t . k_s: the nearest key breaks the stick first."""
    torch = _torch()
    q = t["q"]
    k, v = (x.repeat_interleave(HQ // H, dim=2) for x in (t["k"], t["v"]))
    z = torch.einsum("bthk,bshk->bhts", q, k) * K ** -0.5
    visible = torch.ones(T, T, dtype=torch.bool, device=q.device).tril(-1)
    remaining = torch.where(visible, -torch.nn.functional.softplus(z), 0.0)
    after = remaining.flip(-1).cumsum(-1).flip(-1) - remaining  # sum over s < l
    log_weights = torch.nn.functional.logsigmoid(z) + after
    weights = log_weights.masked_fill(~visible, float("-inf")).exp()
    return torch.einsum("bhts,bshv->bthv", weights, v)


case(name="fla.parallel_stickbreaking_attn", module="fla.ops.stickbreaking_attn.parallel",
     # (the log of the remaining stick carried from the nearer key blocks to the
     # farther ones; a reversed cumsum within each block)
     kernels={"parallel_stickbreaking_attn_fwd_kernel": ("o", "rem")},
     launcher="parallel_stickbreaking_attn_fwd",
     make=lambda dt, dev: dict(q=randn((B, T, HQ, K), dt, dev), k=randn((B, T, H, K), dt, dev),
                               v=randn((B, T, H, V), dt, dev)),
     forward=lambda m, t: m.parallel_stickbreaking_attn_fwd(t["q"], t["k"], t["v"],
                                                           K ** -0.5)[0],
     library=lambda m, t: m.parallel_stickbreaking_attn(t["q"], t["k"], t["v"],
                                                       scale=K ** -0.5)[0],
     reference=_stick_breaking_reference)

# -- native sparse attention: each query attends to the key blocks it selected --------

NSA_GROUP, NSA_BLOCK, NSA_SELECTED = 16, 32, 3  # query heads per key head, block, blocks


def _nsa_inputs(dt, dev):
    """One key/value head, 16 query heads; per query 3 distinct blocks among those
    at or before it (fewer, padded with -1, where fewer exist)."""
    torch = _torch()
    blocks = -(-T // NSA_BLOCK)
    reachable = torch.arange(blocks, device=dev) <= (torch.arange(T, device=dev) //
                                                      NSA_BLOCK)[:, None]
    scores = torch.rand((B, T, 1, blocks), device=dev).masked_fill(~reachable[:, None],
                                                                    float("-inf"))
    best, chosen = scores.topk(NSA_SELECTED, -1)
    chosen = chosen.masked_fill(best == float("-inf"), -1)
    return dict(q=randn((B, T, NSA_GROUP, K), dt, dev), k=randn((B, T, 1, K), dt, dev),
                v=randn((B, T, 1, V), dt, dev), blocks=chosen)


def _nsa_reference(t):
    torch = _torch()
    q, k, v, chosen = t["q"], t["k"], t["v"], t["blocks"]
    blocks = -(-T // NSA_BLOCK)
    selected = torch.zeros((B, T, blocks + 1), dtype=torch.bool, device=q.device)
    selected.scatter_(-1, chosen[:, :, 0].clamp(min=-1) % (blocks + 1), True)
    selected = selected[..., :blocks]  # (-1 went to the extra column)
    keys = torch.arange(T, device=q.device)
    visible = selected[..., keys // NSA_BLOCK] & (keys[None, :] <= keys[:, None])  # (B, T, S)
    scores = torch.einsum("btgk,bsk->bgts", q, k[:, :, 0]) * K ** -0.5
    weights = scores.masked_fill(~visible[:, None], float("-inf")).softmax(-1)
    return torch.einsum("bgts,bsv->btgv", weights, v[:, :, 0])


case(name="fla.parallel_nsa", module="fla.ops.nsa.parallel",
     # (a loop over the selected blocks, their starts loaded; an online softmax)
     kernels={"parallel_nsa_fwd_kernel": ("o", "lse")}, launcher="parallel_nsa_fwd",
     make=_nsa_inputs,
     forward=lambda m, t: m.parallel_nsa_fwd(t["q"], t["k"], t["v"], t["blocks"], NSA_SELECTED,
                                             NSA_BLOCK, K ** -0.5)[0],
     library=lambda m, t: m.ParallelNSAFunction.apply(t["q"], t["k"], t["v"], t["blocks"],
                                                      NSA_SELECTED, NSA_BLOCK, K ** -0.5, None),
     reference=_nsa_reference)

# -- chunked GLA: a gate per key feature ---------------------------------------------


def _gla_reference(t):
    """o_t = scale sum_{s <= t} sum_k q_tk k_sk exp(G_tk - G_sk) v_s, G the running sum
    of the per-feature log gates."""
    torch = _torch()
    running = t["g"].cumsum(1)
    causal = torch.ones(T, T, dtype=torch.bool, device=running.device).tril()
    decay = (running[:, :, None] - running[:, None, :])  # (B, T, S, H, K)
    decay = decay.masked_fill(~causal[None, :, :, None, None], float("-inf")).exp()
    weights = torch.einsum("bthk,bshk,btshk->bhts", t["q"], t["k"], decay) * K ** -0.5
    return torch.einsum("bhts,bshv->bthv", weights, t["v"])


case(name="fla.chunk_gla", module="fla.ops.gla.chunk",
     # (per chunk: the gates' local cumsum, the states h, the intra-chunk scores A
     # (blocks below the diagonal, then the diagonal blocks, into one A), the outputs)
     kernels={"fla.ops.utils.cumsum:chunk_local_cumsum_vector_kernel": ("o",),
              "fla.ops.common.chunk_h:chunk_fwd_kernel_h": ("h", "ht"),
              "chunk_gla_fwd_A_kernel_intra_sub_inter": ("A",),
              "chunk_gla_fwd_A_kernel_intra_sub_intra": ("A",),
              "chunk_gla_fwd_kernel_o": ("o",)},
     launcher="chunk_gla_fwd",
     make=lambda dt, dev: dict(**_qkv(dt, dev), g=log_gates((B, T, H, K), dt, dev)),
     forward=lambda m, t: m.chunk_gla_fwd(t["q"], t["k"], t["v"], t["g"], None, K ** -0.5,
                                          None, False)[-1],
     library=lambda m, t: m.chunk_gla(t["q"], t["k"], t["v"], t["g"], scale=K ** -0.5)[0],
     reference=_gla_reference)

# -- mean pooling per chunk (the last chunk partial) -------------------------------------


def _mean_pooling_reference(t):
    return _torch().stack([chunk.mean(1) for chunk in t["x"].split(CHUNK, 1)], 1)


case(name="fla.mean_pooling", module="fla.ops.utils.pooling",
     kernels={"mean_pooling_fwd_kernel": ("o",)}, launcher="mean_pooling_fwd",
     make=lambda dt, dev: dict(x=randn((B, T, H, 100), dt, dev)),
     forward=lambda m, t: m.mean_pooling_fwd(t["x"], CHUNK),
     library=lambda m, t: m.mean_pooling(t["x"], CHUNK),
     reference=_mean_pooling_reference,
     interpret=True)

# -- rotary embedding: the first 2R of each head's D features rotated, the rest copied --

_ROTARY_HALF = 24  # R: 2R = 48 of the 64 features


def _rotary_inputs(dt, dev):
    torch = _torch()
    inverse = 1.0 / (10000 ** (torch.arange(0, _ROTARY_HALF, device=dev) / _ROTARY_HALF))
    angles = torch.outer(torch.arange(T + 7, device=dev, dtype=torch.float32), inverse)
    return dict(x=randn((B, T, H, 64), dt, dev), cos=angles.cos().to(dt),
                sin=angles.sin().to(dt))


def _rotary_reference(t):
    x, half = t["x"], _ROTARY_HALF
    cos, sin = (c[:x.shape[1], None, :] for c in (t["cos"], t["sin"]))
    x1, x2 = x[..., :half], x[..., half:2 * half]
    return _torch().cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos, x[..., 2 * half:]), -1)


case(name="fla.rotary_embedding", module="fla.modules.rotary.ops",
     # (y is zeros, its last D - 2R features copied from x by torch before the launch)
     kernels={"rotary_embedding_kernel": ("y",)}, launcher="rotary_embedding_fwdbwd",
     make=_rotary_inputs,
     forward=lambda m, t: m.rotary_embedding_fwdbwd(t["x"], t["cos"], t["sin"]),
     library=lambda m, t: m.rotary_embedding(t["x"], t["cos"], t["sin"]),
     reference=_rotary_reference,
     interpret=True)

# -- cross entropy: soft-capped logits, label smoothing, z-loss, ignored rows ----------

_CROSS_ENTROPY = dict(label_smoothing=0.1, logit_scale=1.0, lse_square_scale=1e-3)
_SOFTCAP = 20.0


def _cross_entropy_inputs(dt, dev):
    torch = _torch()
    target = torch.randint(0, 1000, (ROWS,), device=dev)
    target[::7] = -100
    return dict(x=randn((ROWS, 1000), dt, dev, scale=8.0), target=target)


def _cross_entropy_reference(t, cap=None):
    """Per row: lse - (1 - s) c_target - s mean(c) + z lse^2 (c the logits,
    soft-capped by `cap`); 0 for an ignored row."""
    torch = _torch()
    smoothing = _CROSS_ENTROPY["label_smoothing"]
    capped = t["x"] if cap is None else cap * torch.tanh(t["x"] / cap)
    lse = capped.logsumexp(-1)
    kept = t["target"] != -100
    picked = capped.gather(-1, t["target"].clamp(min=0)[:, None])[:, 0]
    loss = (lse - (1 - smoothing) * picked - smoothing * capped.mean(-1) +
            _CROSS_ENTROPY["lse_square_scale"] * lse ** 2)
    return torch.where(kept, loss, torch.zeros_like(loss))


case(name="fla.cross_entropy", module="fla.modules.fused_cross_entropy.ops",
     kernels={"cross_entropy_fwd_kernel": ("loss", "z_loss", "lse")}, launcher="cross_entropy_fwd",
     make=_cross_entropy_inputs,
     forward=lambda m, t: m.cross_entropy_fwd(t["x"], t["target"], **_CROSS_ENTROPY)[0],
     library=lambda m, t: m.cross_entropy_loss(t["x"], t["target"], **_CROSS_ENTROPY)[0],
     reference=_cross_entropy_reference,
     interpret=True)

case(name="fla.cross_entropy_softcap", module="fla.modules.fused_cross_entropy.ops",
     # (not in the interpreter: fla's tanh, a libdevice call, is None there)
     kernels={"cross_entropy_fwd_kernel": ("loss", "z_loss", "lse")}, launcher="cross_entropy_fwd",
     make=_cross_entropy_inputs,
     forward=lambda m, t: m.cross_entropy_fwd(t["x"], t["target"], **_CROSS_ENTROPY,
                                              logit_softcapping=_SOFTCAP)[0],
     library=lambda m, t: m.cross_entropy_loss(t["x"], t["target"], **_CROSS_ENTROPY,
                                               logit_softcapping=_SOFTCAP)[0],
     reference=lambda t: _cross_entropy_reference(t, _SOFTCAP))


def importlib_module(name):
    import importlib
    return importlib.import_module(name)
