"""Prefill and decode apart, Chapter 19: what the K/V transfer moves and costs, and goodput.

A disaggregated request's prompt is prefilled on one worker and decoded on another, so its P tokens'
keys and values cross a link once: Eq. (2.1)'s bytes per token times P, Eq. (19.1); over a link of
`link_bandwidth` bytes/s each way with a fixed `link_latency`, Eq. (19.2). The first token waits for
the prefill; the second waits for the transfer too.

Goodput (DistServe, Zhong et al. 2024): a request *attains* the service-level objectives if its
time to first token is at most `ttft_slo` and its time per output token at most `tpot_slo`; the
attainment of a run is the share of its requests that attain both, Eq. (19.3); the goodput is the
highest request rate whose attainment is at least `target` (90 % in DistServe), Eq. (19.4), divided by
the chips it takes when systems of different sizes are compared (DistServe's per-GPU goodput).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from minigpt.costs._check import _int, _positive
from minigpt.costs.memory import kv_bytes_per_token


def kv_transfer_bytes(*, L: int, H_kv: int, d_h: int, s: int, P: int) -> int:
    """Bytes of one request's K/V sent from prefill to decode, Eq. (19.1): P · 2·L·H_kv·d_h·s (Eq. 2.1 · P)."""
    return _int("P", P) * kv_bytes_per_token(L=L, H_kv=H_kv, d_h=d_h, s=s)


def kv_transfer_time(*, L: int, H_kv: int, d_h: int, s: int, P: int, link_bandwidth: float,
                     link_latency: float = 0.0) -> float:
    """Seconds to move one request's K/V, Eq. (19.2): latency + Eq. (19.1)'s bytes / link_bandwidth."""
    if isinstance(link_latency, bool) or not isinstance(link_latency, (int, float)) or not 0 <= link_latency < math.inf:
        raise ValueError(f"link_latency must be a finite number >= 0 (seconds), got {link_latency!r}")
    b = kv_transfer_bytes(L=L, H_kv=H_kv, d_h=d_h, s=s, P=P)
    return link_latency + b / _positive("link_bandwidth", link_bandwidth)


def _times(name: str, values: object) -> list[float]:
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError(f"{name} must be a non-empty list of seconds (one per request), got {values!r}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ValueError(f"{name} must hold numbers >= 0 (seconds; nan for a one-token request's TPOT), "
                             f"got {v!r}")
        out.append(float(v))
    return out


def slo_attainment(*, ttft: Sequence[float], tpot: Sequence[float], ttft_slo: float, tpot_slo: float) -> float:
    """Share of requests whose TTFT <= ttft_slo and TPOT <= tpot_slo, Eq. (19.3) (a one-token request has
    no TPOT, given as nan: only its TTFT counts)."""
    a, b = _times("ttft", ttft), _times("tpot", tpot)
    if len(a) != len(b):
        raise ValueError(f"ttft and tpot must have one value per request, got {len(a)} and {len(b)}")
    t1, t2 = _positive("ttft_slo", ttft_slo), _positive("tpot_slo", tpot_slo)
    ok = sum(1 for x, y in zip(a, b, strict=True) if x <= t1 and (math.isnan(y) or y <= t2))
    return ok / len(a)


def goodput(*, rates: Sequence[float], attainments: Sequence[float], target: float = 0.9, chips: int = 1) -> float:
    """Requests per second per chip, Eq. (19.4): the highest of `rates` whose attainment (Eq. 19.3) is at least
    `target`, over `chips`; 0.0 when no rate attains it. Rates above the first one that fails do not count
    (a system that misses at a lower rate is not trusted at a higher one)."""
    if not isinstance(rates, (list, tuple)) or not isinstance(attainments, (list, tuple)) or not rates \
            or len(rates) != len(attainments):
        raise ValueError("rates and attainments must be non-empty lists of the same length (one per load)")
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target <= 1:
        raise ValueError(f"target must be a share in (0, 1], got {target!r}")
    pairs = sorted((_positive("rates", r), a) for r, a in zip(rates, attainments, strict=True))
    for _, a in pairs:
        if isinstance(a, bool) or not isinstance(a, (int, float)) or not 0 <= a <= 1:
            raise ValueError(f"attainments must be shares in [0, 1], got {a!r}")
    best = 0.0
    for r, a in pairs:
        if a < target:
            break
        best = r
    return best / _int("chips", chips, 1)


def disagg_rate(*, prefill_chips: int, decode_chips: int, prefill_rate: float, decode_rate: float) -> float:
    """Requests per second that N prefill and M decode chips sustain together, Eq. (19.5):
    min(N · prefill_rate, M · decode_rate), each rate what one chip of that pool serves within its SLO."""
    N, M = _int("prefill_chips", prefill_chips, 1), _int("decode_chips", decode_chips, 1)
    return min(N * _positive("prefill_rate", prefill_rate), M * _positive("decode_rate", decode_rate))


def best_pd_ratio(*, chips: int, prefill_rate: float, decode_rate: float) -> dict[str, int]:
    """The split of `chips` (N + M, both >= 1) that maximises Eq. (19.5); among equals, the fewest prefill chips."""
    total = _int("chips", chips, 2)
    best = max(range(1, total), key=lambda n: (disagg_rate(prefill_chips=n, decode_chips=total - n,
                                                           prefill_rate=prefill_rate, decode_rate=decode_rate), -n))
    return {"prefill": best, "decode": total - best}
