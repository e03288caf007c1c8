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
    """Wall clock, Eq. (4.1): P / prefill_tok_s + D / decode_tok_s (seed 000's accounting).

    Engines report decode tok/s over the generated tokens, so D (not D − 1) divides it here.
    """
    ttft = _int("P", P) / _positive("prefill_tok_s", prefill_tok_s)
    decode = _int("D", D) / _positive("decode_tok_s", decode_tok_s)
    total = ttft + decode
    share = decode / total if total else 0.0
    return WallClock(ttft_s=ttft, decode_s=decode, total_s=total, decode_share=share)
