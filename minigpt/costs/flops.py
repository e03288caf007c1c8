"""FLOPs of prefill, decode and generation, Chapter 1 (Eqs. 1.1–1.6), 2 FLOPs per multiply-add.

The course page's boxed formulas count 1 FLOP per multiply-add (MHA, d_ffn = 4d, no LM head);
they are the ``*_macs`` functions. LayerNorm, softmax, GELU, embedding lookups, residual adds and
biases count 0, as `torch.utils.flop_counter.FlopCounterMode` does.
"""

from __future__ import annotations

from minigpt.costs._check import _ffn, _ffn_matrices, _int, _kv_width


def _token_matrix_flops(
    d: int, H_kv: int | None, d_h: int | None, d_ffn: int | None, ffn_matrices: int = 2
) -> int:
    """FLOPs of one layer's weight matrices on one token: QKV, output projection, FFN (24·d² for MHA, 4d GELU)."""
    kv = _kv_width(d, H_kv, d_h)
    return 2 * d * (d + 2 * kv) + 2 * d * d + 2 * _ffn_matrices(ffn_matrices) * d * _ffn(d, d_ffn)



def layer_flops(
    *, T: int, S: int, d: int, H_kv: int | None = None, d_h: int | None = None,
    d_ffn: int | None = None, B: int = 1, ffn_matrices: int = 2, causal: bool = False,
) -> int:
    """Per-layer FLOPs, Eq. (1.1): B·T·(2d(d+2·H_kv·d_h) + 2d² + 4d·d_ffn) + 4·B·T·(S+T)·d, every query against
    all S+T keys, as MiniGPT computes them. `causal=True` counts only the keys each query sees, as causal
    kernels (FlashAttention, the engines' prefill) compute: query i of T sees S+i+1 of them, so the attention
    term is 4·B·d·(T·S + T(T+1)/2); a decode step (T = 1) is the same both ways."""
    _int("T", T, 1)
    _int("S", S)
    _int("B", B, 1)
    if not isinstance(causal, bool):
        raise ValueError(f"causal must be True or False, got {causal!r}")
    keys = T * S + T * (T + 1) // 2 if causal else T * (S + T)
    return B * T * _token_matrix_flops(d, H_kv, d_h, d_ffn, ffn_matrices) + 4 * B * keys * d


def lm_head_flops(*, d: int, V: int, T: int = 1, B: int = 1) -> int:
    """LM-head FLOPs, Eq. (1.6): 2·B·T·d·V for T positions whose logits are computed."""
    return 2 * _int("B", B, 1) * _int("T", T) * _int("d", d, 1) * _int("V", V)


def prefill_flops(
    *, L: int, P: int, d: int, H_kv: int | None = None, d_h: int | None = None,
    d_ffn: int | None = None, V: int = 0, B: int = 1, ffn_matrices: int = 2,
) -> int:
    """Prefill FLOPs, Eq. (1.2): L layers on P tokens, empty cache, plus the LM head at one position."""
    _int("L", L, 1)
    _int("P", P, 1)
    layers = L * layer_flops(T=P, S=0, d=d, H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, B=B, ffn_matrices=ffn_matrices)
    return layers + lm_head_flops(d=d, V=V, T=1, B=B)


def decode_step_flops(
    *, L: int, S: int, d: int, H_kv: int | None = None, d_h: int | None = None,
    d_ffn: int | None = None, V: int = 0, B: int = 1, ffn_matrices: int = 2,
) -> int:
    """Decode-step FLOPs, Eq. (1.3): one new token per sequence against S cached tokens, plus the LM head."""
    _int("L", L, 1)
    layers = L * layer_flops(T=1, S=S, d=d, H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, B=B, ffn_matrices=ffn_matrices)
    return layers + lm_head_flops(d=d, V=V, T=1, B=B)


def decode_flops(
    *, L: int, P: int, D: int, d: int, H_kv: int | None = None, d_h: int | None = None,
    d_ffn: int | None = None, V: int = 0, B: int = 1, ffn_matrices: int = 2,
) -> int:
    """Total decode FLOPs, Eq. (1.4): the D−1 decode steps of a D-token generation, S = P..P+D−2."""
    _int("L", L, 1)
    _int("P", P, 1)
    _int("D", D, 1)
    _int("B", B, 1)
    n = D - 1  # decode steps; the prefill produced token 1
    # Step t attends over S+1 = P+t keys: sum over t=1..n of (P+t) = n·P + n(n+1)/2.
    keys = n * P + n * (n + 1) // 2
    per_token = L * _token_matrix_flops(d, H_kv, d_h, d_ffn, ffn_matrices) + 2 * d * _int("V", V)
    return B * (n * per_token + 4 * L * d * keys)


def generation_flops(
    *, L: int, P: int, D: int, d: int, H_kv: int | None = None, d_h: int | None = None,
    d_ffn: int | None = None, V: int = 0, B: int = 1, ffn_matrices: int = 2,
) -> int:
    """Generation FLOPs with a KV cache, Eq. (1.2) + Eq. (1.4): one prefill and D−1 decode steps."""
    model = dict(d=d, H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, V=V, B=B, ffn_matrices=ffn_matrices)
    return prefill_flops(L=L, P=P, **model) + decode_flops(L=L, P=P, D=D, **model)


def no_cache_flops(
    *, L: int, P: int, D: int, d: int, H_kv: int | None = None, d_h: int | None = None,
    d_ffn: int | None = None, V: int = 0, B: int = 1, ffn_matrices: int = 2,
) -> int:
    """No-cache FLOPs, Eq. (1.5): step t = 0..D−1 recomputes a full forward over P+t tokens."""
    _int("L", L, 1)
    _int("P", P, 1)
    _int("D", D, 1)
    _int("B", B, 1)
    tokens = D * P + D * (D - 1) // 2  # sum of (P+t)
    squares = D * P * P + P * D * (D - 1) + (D - 1) * D * (2 * D - 1) // 6  # sum of (P+t)²
    matrices = L * _token_matrix_flops(d, H_kv, d_h, d_ffn, ffn_matrices)
    return B * (matrices * tokens + 4 * L * d * squares + D * 2 * d * _int("V", V))


def cache_saving_factor(
    *, L: int, P: int, D: int, d: int, H_kv: int | None = None, d_h: int | None = None,
    d_ffn: int | None = None, V: int = 0, B: int = 1, ffn_matrices: int = 2,
) -> float:
    """Eq. (1.5) / (Eq. (1.2) + Eq. (1.4)): how many times more FLOPs generation costs without the cache."""
    args = dict(L=L, P=P, D=D, d=d, H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, V=V, B=B, ffn_matrices=ffn_matrices)
    return no_cache_flops(**args) / generation_flops(**args)


# ---------------------------------------------------------------------------------------------
# Chapter 1: seed 002's convention (1 FLOP per multiply-add, MHA, d_ffn = 4d, no LM head)


def prefill_macs(*, L: int, P: int, d: int) -> int:
    """Seed prefill, Eq. (1.2) in multiply-adds: 12·L·P·d² + 2·L·P²·d."""
    _int("L", L, 1)
    _int("P", P, 1)
    _int("d", d, 1)
    return 12 * L * P * d**2 + 2 * L * P**2 * d


def decode_step_macs(*, L: int, S: int, d: int) -> int:
    """Seed decode step, Eq. (1.3) in multiply-adds: 12·L·d² + 2·L·S·d."""
    _int("L", L, 1)
    _int("S", S)
    _int("d", d, 1)
    return 12 * L * d**2 + 2 * L * S * d


def decode_macs_seed(*, L: int, P: int, D: int, d: int) -> int:
    """Seed total decode, Eq. (1.4), D steps S = P..P+D−1: 12·L·D·d² + 2·L·d·(D·P + D(D−1)/2)."""
    _int("L", L, 1)
    _int("P", P, 1)
    _int("D", D, 1)
    _int("d", d, 1)
    return 12 * L * D * d**2 + 2 * L * d * (D * P + D * (D - 1) // 2)


def no_cache_macs_seed(*, L: int, P: int, D: int, d: int) -> int:
    """Seed no-cache total, Eq. (1.5): sum over t = 0..D−1 of 12·L·(P+t)·d² + 2·L·(P+t)²·d."""
    _int("L", L, 1)
    _int("P", P, 1)
    _int("D", D, 1)
    _int("d", d, 1)
    tokens = D * P + D * (D - 1) // 2
    squares = D * P * P + P * D * (D - 1) + (D - 1) * D * (2 * D - 1) // 6
    return 12 * L * d**2 * tokens + 2 * L * d * squares


def prefill_attention_share(*, P: int, d: int) -> float:
    """Attention's share of prefill, from Eq. (1.2): 2·P²·d / (12·P·d² + 2·P²·d) = P / (6d + P)."""
    _int("P", P, 1)
    _int("d", d, 1)
    return P / (6 * d + P)


def prefill_crossover_P(*, d: int) -> int:
    """Prompt length where the two terms of Eq. (1.2) are equal: 12·P·d² = 2·P²·d at P = 6·d."""
    return 6 * _int("d", d, 1)


def no_cache_attention_share(*, P: int, D: int, d: int) -> float:
    """Attention's share of the no-cache total, Eq. (1.5) in the course page's form (MHA, d_ffn = 4d, no LM
    head): Σ 2·n²·d / Σ (12·n·d² + 2·n²·d) over the forward lengths n = P..P+D−1; ½ near D = 9d (Eq. (6.4))."""
    _int("P", P, 1)
    _int("D", D, 1)
    _int("d", d, 1)
    tokens = D * P + D * (D - 1) // 2  # sum of n
    squares = D * P * P + P * D * (D - 1) + (D - 1) * D * (2 * D - 1) // 6  # sum of n²
    return squares / (6 * d * tokens + squares)


def no_cache_crossover_D(*, d: int) -> int:
    """Generation length where attention becomes half of the no-cache total (Eq. (6.4)): 12·d²·D² = (4/3)·d·D³
    at D = 9·d for a short prompt (P = 1: exactly ½ at D = 9d − ½); one step's terms cross at 6·d (Eq. (1.2))."""
    return 9 * _int("d", d, 1)
def prefill_flops_by_term(
    *, L: int, P: int, d: int, H_kv: int | None = None, d_h: int | None = None,
    d_ffn: int | None = None, V: int = 0, B: int = 1, ffn_matrices: int = 2,
) -> dict[str, int]:
    """The terms of Eq. (1.2), in FLOPs: QKV projections, attention (QKᵀ and AV), output projection, FFN, LM head."""
    _int("L", L, 1)
    _int("P", P, 1)
    _int("B", B, 1)
    kv, tokens = _kv_width(d, H_kv, d_h), B * P
    return {
        "qkv": L * tokens * 2 * d * (d + 2 * kv),
        "attention": L * 4 * B * P * P * d,
        "output": L * tokens * 2 * d * d,
        "ffn": L * tokens * 2 * _ffn_matrices(ffn_matrices) * d * _ffn(d, d_ffn),
        "lm_head": lm_head_flops(d=d, V=V, T=1, B=B),
    }
