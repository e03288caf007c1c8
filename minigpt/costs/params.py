"""Parameter counts of the GPT-2-style MiniGPT: the N of Eq. (2.3), by component."""

from __future__ import annotations

from minigpt.costs._check import _ffn, _int, _kv_width


def params_by_component(
    *, L: int, d: int, V: int, S_max: int, d_ffn: int | None = None, H_kv: int | None = None,
    d_h: int | None = None, biases: bool = True,
) -> dict[str, int]:
    """Parameters of the GPT-2-style MiniGPT by component (tied LM head), the terms of Eq. (2.3)'s N."""
    _int("L", L, 1)
    _int("V", V, 1)
    _int("S_max", S_max, 1)
    kv, ffn, b = _kv_width(d, H_kv, d_h), _ffn(d, d_ffn), int(bool(biases))
    qkv = d * (d + 2 * kv) + b * (d + 2 * kv)
    out = d * d + b * d
    mlp = d * ffn + b * ffn + ffn * d + b * d
    return {
        "token_embedding": V * d,
        "position_embedding": S_max * d,
        "attention": L * (qkv + out),
        "mlp": L * mlp,
        "layer_norms": L * 2 * (2 * d) + 2 * d,
        "lm_head": 0,  # tied to the token embedding
    }


def param_count(
    *, L: int, d: int, V: int, S_max: int, d_ffn: int | None = None, H_kv: int | None = None,
    d_h: int | None = None, biases: bool = True,
) -> int:
    """Total parameters N of the GPT-2-style MiniGPT (tied LM head), the N of Eq. (2.3)."""
    parts = params_by_component(L=L, d=d, V=V, S_max=S_max, d_ffn=d_ffn, H_kv=H_kv, d_h=d_h, biases=biases)
    return sum(parts.values())


def non_embedding_matrix_params(
    *, L: int, d: int, d_ffn: int | None = None, H_kv: int | None = None, d_h: int | None = None,
) -> int:
    """Weight-matrix parameters outside the embeddings, the seed's 12·L·d² (MHA, d_ffn = 4d) of Eq. (2.3)."""
    _int("L", L, 1)
    kv = _kv_width(d, H_kv, d_h)
    return L * (d * (d + 2 * kv) + d * d + 2 * d * _ffn(d, d_ffn))
