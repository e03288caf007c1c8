"""Argument checks shared by the formula modules: each error names the parameter and what is allowed."""

from __future__ import annotations

import math


def _int(name: str, value: object, minimum: int = 0) -> int:
    """`value` as an int >= minimum, or a ValueError naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return value


def _positive(name: str, value: object) -> float:
    """`value` as a finite number > 0, or a ValueError naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return value


def _fraction(name: str, value: object) -> float:
    """`value` as a number in [0, 1), or a ValueError naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"{name} must be a number in [0, 1), got {value!r}")
    return value


def _mfu(mfu: object) -> float:
    """Model FLOPs utilisation: the share of the peak a forward's products sustain, in (0, 1] (1: the floor)."""
    if isinstance(mfu, bool) or not isinstance(mfu, (int, float)) or not 0 < mfu <= 1:
        raise ValueError(f"mfu must be a share of the peak in (0, 1], got {mfu!r}")
    return float(mfu)


def _kv_width(d: int, H_kv: int | None, d_h: int | None) -> int:
    """Width of the keys (or values) of one token, H_kv·d_h; d for multi-head attention."""
    _int("d", d, 1)
    if H_kv is None and d_h is None:
        return d
    if H_kv is None or d_h is None:
        raise ValueError("give both H_kv and d_h, or neither (neither is multi-head attention, H_kv·d_h = d)")
    _int("H_kv", H_kv, 1)
    _int("d_h", d_h, 1)
    if d % d_h != 0:
        raise ValueError(f"d_h must divide d = H·d_h; got d={d}, d_h={d_h}")
    H = d // d_h
    if H % H_kv != 0:
        raise ValueError(f"H_kv must divide H = d/d_h = {H}; got H_kv={H_kv}")
    return H_kv * d_h


def _ffn(d: int, d_ffn: int | None) -> int:
    return 4 * d if d_ffn is None else _int("d_ffn", d_ffn, 1)


def _ffn_matrices(ffn_matrices: int) -> int:
    if ffn_matrices not in (2, 3) or isinstance(ffn_matrices, bool):
        raise ValueError(
            f"ffn_matrices must be 2 (GELU MLP, MiniGPT/GPT) or 3 (SwiGLU, Llama/Mistral), got {ffn_matrices!r}"
        )
    return ffn_matrices

