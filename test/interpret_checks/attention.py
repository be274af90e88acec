"""Flash attention in two loops (the off-diagonal key blocks, then the diagonal
ones, masked), threading m, l and acc from one to the other, l starting at 1
as in Triton's tutorial: the two running maxima are one stabilizer family,
and both loops are reversed with the family's final max; deterministic
two-loop attention, dK and dV summed by programs of their own.
"""

import torch
import triton

from interpret_checks import check
from interpreter_util import kernel_gradients, randn
from corpus.attention import two_loop_attention_grads, two_stage_attention


@check("two_stage_attention_is_one_stabilizer_family")
def _():
    L, D, BLOCK = 45, 16, 16
    scale = 0.25
    log2e = 1.4426950408889634

    def reference(Q, K, V):
        scores = (Q @ K.T) * scale * log2e  # in log2 units, as the kernel
        causal = torch.ones(L, L, dtype=torch.bool).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        lse2 = torch.logsumexp(scores / log2e, -1) * log2e
        return {"O": torch.softmax(scores / log2e, -1) @ V, "M": lse2}

    # With l starting from a loaded value the family is refused (its gradient
    # would pass through the first iteration's rescaling by 0 turned into 1):
    # both loops are replayed, and the loaded value gets no gradient.
    for loaded in (False, True):
        bwd = kernel_gradients(
            two_stage_attention, (triton.cdiv(L, BLOCK),),
            {"Q": randn(L, D), "K": randn(L, D), "V": randn(L, D), "L0": randn(1).abs() + 1},
            {"O": torch.empty(L, D), "M": torch.empty(L)},
            {"seq_len": L, "qk_scale": scale * log2e},
            {"BLOCK_M": BLOCK, "BLOCK_N": BLOCK, "HEAD_DIM": D, "LOADED_L": loaded},
            lambda Q, K, V, L0: reference(Q, K, V), rtol=1e-4, atol=1e-4,
            pointers=("Q", "K", "V", "O", "M", "L0"))  # (loads in a helper the interpreter hides)
        notes = [line for line in bwd.schedule().splitlines() if line.startswith("loop ")]
        stabilized = [("only stabilizes exponentials" in note) for note in notes]
        assert stabilized == [not loaded] * 2, bwd.schedule()


@check("two_loop_attention_deterministic")
def _():
    for advance, (length, block_m, block_n) in ((False, (45, 16, 16)), (True, (53, 32, 16)),
                                                (False, (70, 32, 16)), (True, (16, 16, 16))):
        bwd, _ = two_loop_attention_grads(length, 2, advance, block_m, block_n)
        lines = {line.split(": ", 1)[0]: line for line in bwd.schedule().splitlines()}
        for name in ("K", "V"):
            assert lines[name].count("re-parallelized (programs of its own") == 2, lines[name]
            assert "launch 2 of the parts" in lines[name], lines[name]
            assert "atomic (" not in lines[name], lines[name]
