"""flash-linear-attention (fla-core 0.6.0): forward kernels of fla.ops and
fla.modules as cases of the peer oracle (oracle.py): l2norm (blocked and row
kernels), the chunk-local cumsum (scalar and vector), the fused norm-gate layers
(layer norm and RMS norm, swish gate), and the fused chunked forward of three
linear-attention variants (plain, simple GLA with a data-dependent gate, and
retention's fixed decay). Each case calls the library's own forward function,
which launches the kernel; the fp64 references are plain torch.
"""

from __future__ import annotations

from oracle import Case

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
