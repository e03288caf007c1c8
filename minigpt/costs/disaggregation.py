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
from minigpt.costs.memory import FIT_RESERVE, kv_bytes_per_token
from minigpt.costs.serving import mixed_step_time


def _latency(link_latency: object) -> float:
    """`link_latency` as seconds >= 0, or a ValueError naming it."""
    if isinstance(link_latency, bool) or not isinstance(link_latency, (int, float)) or not 0 <= link_latency < math.inf:
        raise ValueError(f"link_latency must be a finite number >= 0 (seconds), got {link_latency!r}")
    return link_latency


def kv_transfer_bytes(*, L: int, H_kv: int, d_h: int, s: int, P: int) -> int:
    """Bytes of one request's K/V sent from prefill to decode, Eq. (19.1): P · 2·L·H_kv·d_h·s (Eq. 2.1 · P)."""
    return _int("P", P) * kv_bytes_per_token(L=L, H_kv=H_kv, d_h=d_h, s=s)


def kv_transfer_time(*, L: int, H_kv: int, d_h: int, s: int, P: int, link_bandwidth: float,
                     link_latency: float = 0.0) -> float:
    """Seconds to move one request's K/V, Eq. (19.2): latency + Eq. (19.1)'s bytes / link_bandwidth."""
    b = kv_transfer_bytes(L=L, H_kv=H_kv, d_h=d_h, s=s, P=P)
    return _latency(link_latency) + b / _positive("link_bandwidth", link_bandwidth)


def layerwise_transfer_exposed(*, layer_s: Sequence[float], layer_bytes: int, link_bandwidth: float,
                               link_latency: float = 0.0) -> float:
    """Seconds from the end of the prefill to the arrival of the last layer's K/V when each layer is sent as
    soon as its prefill ends (Mooncake's layer-wise store, Chapter 19), against Eq. (19.2) paid after it.

    The link sends one message at a time, in layer order: layer l's message starts at
    max(ready_l, done_(l-1)), ready_l = layer_s[0] + ... + layer_s[l], and takes link_latency +
    layer_bytes / link_bandwidth. Compute-bound (every layer slower than a message) only the last layer's
    message shows; link-bound the link never rests after the first layer, and what shows is the L messages
    less the compute of the layers after the first.
    """
    if not isinstance(layer_s, (list, tuple)) or not layer_s:
        raise ValueError(f"layer_s must be a non-empty list of seconds (one per layer), got {layer_s!r}")
    if any(isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t < math.inf for t in layer_s):
        raise ValueError(f"layer_s must hold finite numbers >= 0 (seconds), got {layer_s!r}")
    send = _latency(link_latency) + _int("layer_bytes", layer_bytes, 0) / _positive("link_bandwidth", link_bandwidth)
    ready = done = 0.0
    for t in layer_s:
        ready += t
        done = max(ready, done) + send
    return done - ready


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


def disagg_goodput_bound(
    *, L: int, d: int, N_params: int, s: int, bandwidth: float, peak_flops: float, H_kv: int, d_h: int,
    P: int, D: int, ttft_slo: float, tpot_slo: float, link_bandwidth: float, prefill_chips: int,
    decode_chips: int, d_ffn: int | None = None, V: int = 0, ffn_matrices: int = 2, B_max: int = 256,
    memory_bytes: float | None = None,
) -> float:
    """An upper bound on disaggregated goodput per chip, Eq. (19.6), for requests of P prompt and D output
    tokens: Eq. (19.5) with each pool's rate at its objective, at the roofline, with no queueing.

    A prefill chip serves 1/t_pre requests/s, t_pre = Eq. (7.2)'s step for P tokens, and none if
    t_pre > ttft_slo. A decode chip runs the largest batch B <= B_max whose step (B decodes at the mean
    context S = P + D/2) plus the transfer spread over the D − 1 gaps (Eq. 19.2 / (D − 1)) stays within
    tpot_slo and, given the chip's `memory_bytes`, whose caches fit beside the weights with Eq. (9.4)'s
    10 % reserve; it serves B / ((D − 1) · step) requests/s (the first of a request's D tokens comes from its
    prefill chip, so a decode chip emits D − 1 of them), and none if even B = 1 misses. Queueing only lowers the
    measured goodput below this bound (DistServe's placement search starts from the same two rates).
    """
    _int("D", D, 2)  # a TPOT needs two output tokens
    ttft, tpot = _positive("ttft_slo", ttft_slo), _positive("tpot_slo", tpot_slo)
    chip = dict(L=L, d=d, N_params=N_params, s=s, bandwidth=bandwidth, peak_flops=peak_flops, H_kv=H_kv,
                d_h=d_h, d_ffn=d_ffn, V=V, ffn_matrices=ffn_matrices)
    t_pre = mixed_step_time(T=_int("P", P, 1), **chip)
    gap = kv_transfer_time(L=L, H_kv=H_kv, d_h=d_h, s=s, P=P, link_bandwidth=link_bandwidth) / (D - 1)
    S = P + D // 2
    top = _int("B_max", B_max, 1)
    if memory_bytes is not None:
        room = _positive("memory_bytes", memory_bytes) * (1 - FIT_RESERVE) - N_params * s
        top = min(top, int(room // (S * kv_bytes_per_token(L=L, H_kv=H_kv, d_h=d_h, s=s))))
    best = 0.0
    for B in range(1, top + 1):
        step = mixed_step_time(B=B, S=S, **chip)
        if step + gap > tpot:
            break
        best = B / ((D - 1) * step)
    if t_pre > ttft or best == 0.0:
        return 0.0
    chips = _int("prefill_chips", prefill_chips, 1) + _int("decode_chips", decode_chips, 1)
    return disagg_rate(prefill_chips=prefill_chips, decode_chips=decode_chips, prefill_rate=1 / t_pre,
                       decode_rate=best) / chips
