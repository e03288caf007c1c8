"""Wall clock of one request, Chapter 4 (Eq. 4.1): time to first token plus decode time."""

from __future__ import annotations

from dataclasses import dataclass

from minigpt.costs._check import _int, _positive


@dataclass(frozen=True)
class WallClock:
    """The terms of Eq. (4.1): time to first token, decode time, their sum, and decode's share."""

    ttft_s: float
    decode_s: float
    total_s: float
    decode_share: float


def wall_clock(*, P: int, D: int, prefill_tok_s: float, decode_tok_s: float) -> WallClock:
    """Wall clock, Eq. (4.1): P / prefill_tok_s + D / decode_tok_s (the guide's accounting).

    Engines report decode tok/s over the generated tokens, so D (not D − 1) divides it here.
    """
    ttft = _int("P", P) / _positive("prefill_tok_s", prefill_tok_s)
    decode = _int("D", D) / _positive("decode_tok_s", decode_tok_s)
    total = ttft + decode
    share = decode / total if total else 0.0
    return WallClock(ttft_s=ttft, decode_s=decode, total_s=total, decode_share=share)


def cost_per_million_tokens(*, price_per_hour: float, tok_s: float) -> float:
    """Cost of a million generated tokens, Eq. (4.3): price_per_hour · 10⁶ / (3600 · tok_s).

    `tok_s` is the whole machine's output rate (all B sequences of a batch together) and
    `price_per_hour` what that machine costs per hour, in any currency.
    """
    return _positive("price_per_hour", price_per_hour) * 1e6 / (3600 * _positive("tok_s", tok_s))


def decode_time_with_kv(
    *, P: int, D: int, decode_tok_s: float, weight_bytes: int, kv_bytes_per_token: int,
) -> float:
    """Eq. (4.1)'s decode term when every step also reads the cache, Eq. (3.5): D steps at S = P, ..., P+D−1.

    `decode_tok_s` is the rate of a step that reads the weights alone; step t takes
    (weight_bytes + S·kv_bytes_per_token) / weight_bytes times as long, so the D steps take
    (D·weight_bytes + kv_bytes_per_token·(D·P + D(D−1)/2)) / weight_bytes / decode_tok_s seconds.
    """
    _int("P", P)
    _int("D", D)
    _int("weight_bytes", weight_bytes, 1)
    _int("kv_bytes_per_token", kv_bytes_per_token)
    read = D * weight_bytes + kv_bytes_per_token * (D * P + D * (D - 1) // 2)
    return read / weight_bytes / _positive("decode_tok_s", decode_tok_s)
