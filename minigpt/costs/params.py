"""Parameter counts of the GPT-2-style MiniGPT: the N of Eq. (2.3), by component."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minigpt.costs._check import _ffn, _int, _kv_width

if TYPE_CHECKING:
    from minigpt.config import ModelConfig


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


def kv_projection_params(*, L: int, d: int, H_kv: int, d_h: int, biases: bool = False) -> int:
    """Parameters of the key and value projections, Eq. (9.3): 2·L·(d + b)·H_kv·d_h, b = 1 with biases.

    The part of N that grouped-query attention changes: each layer maps the d-wide input to H_kv keys
    and H_kv values of d_h each (Llama has no biases; GPT-2 and MiniGPT have one per output).
    """
    _kv_width(d, H_kv, d_h)
    return 2 * _int("L", L, 1) * (d + int(bool(biases))) * H_kv * d_h


def kv_heads_params(
    *, N_params: int, L: int, d: int, d_h: int, H_kv: int, H_kv_new: int, biases: bool = False,
) -> int:
    """N of the same model with H_kv_new key/value heads instead of H_kv, Eq. (9.3):
    N + 2·L·(d + b)·d_h·(H_kv_new − H_kv). The query, output and FFN weights do not change."""
    before = kv_projection_params(L=L, d=d, H_kv=H_kv, d_h=d_h, biases=biases)
    after = kv_projection_params(L=L, d=d, H_kv=H_kv_new, d_h=d_h, biases=biases)
    if before > _int("N_params", N_params, 1):
        raise ValueError(f"N_params must hold the {before:,} K/V projection parameters of H_kv = {H_kv}, "
                         f"got {N_params:,}")
    return N_params - before + after


def config_param_count(config: ModelConfig) -> int:
    """Parameters N of a MiniGPT-family config (tied LM head, S_max learned positions, biases), Eq. (2.3)'s N:
    `param_count` of its shape. (A preset carries its published N as ``N_params``.)"""
    return param_count(L=config.L, d=config.d, d_ffn=config.d_ffn, H_kv=config.H_kv, d_h=config.d_h, V=config.V,
                       S_max=config.S_max)
