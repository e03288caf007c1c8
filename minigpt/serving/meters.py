"""Per-request latencies, as a serving benchmark reports them, and their percentiles over a run.

TTFT runs from arrival to the first token (queueing included: Eq. 4.1's prefill time is its floor);
TPOT (time per output token) is the mean gap between a request's later tokens; ITL (inter-token
latency) is every single gap, whose tail shows a decode stalled behind a long prefill; end-to-end
latency runs from arrival to the last token.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from minigpt.serving.request import Status, Tracked


def ttft_s(t: Tracked) -> float:
    """Time to first token: first token's time minus arrival (queueing + prefill)."""
    return t.token_s[0] - t.request.arrival_s


def time_per_output_token(token_s: Sequence[float]) -> float:
    """TPOT_b of Eq. (19.3), the glossary's TPOT (the decode term of Eq. 4.1 per token): a request's mean
    gap between its later tokens, (last − first token time) / (D − 1) over its D token times; nan when
    D ≤ 1 (no gap to average). The one definition: the engine's meters, goodput's `Latency` and a
    disaggregated run's `RequestRecord` all call it."""
    n = len(token_s)
    return (token_s[-1] - token_s[0]) / (n - 1) if n > 1 else float("nan")


class TokenTimes:
    """TTFT and TPOT of a record with `arrival_s` and `token_s` (seconds), whoever served it: goodput's
    `Latency`, a disaggregated run's `RequestRecord`."""

    arrival_s: float
    token_s: Sequence[float]

    @property
    def ttft_s(self) -> float:
        return self.token_s[0] - self.arrival_s

    @property
    def tpot_s(self) -> float:
        return time_per_output_token(self.token_s)


def tpot_s(t: Tracked) -> float:
    """Time per output token after the first: `time_per_output_token` of the request's token times."""
    return time_per_output_token(t.token_s)


def e2e_s(t: Tracked) -> float:
    """End-to-end latency: last token's time minus arrival."""
    return t.token_s[-1] - t.request.arrival_s


def itl_s(t: Tracked) -> list[float]:
    """Inter-token latencies: every gap between consecutive tokens of the request."""
    return [b - a for a, b in zip(t.token_s[:-1], t.token_s[1:], strict=True)]


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation (numpy's default); nan when empty."""
    xs = sorted(v for v in values if not math.isnan(v))
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def latency_summary(tracked: Iterable[Tracked]) -> dict[str, float]:
    """Throughput and P50/P99 of TTFT, TPOT, ITL and end-to-end latency over the finished requests.

    Throughput is generated tokens over the span from the first arrival to the last token.
    """
    done = [t for t in tracked if t.status is Status.FINISHED and t.token_s]
    if not done:
        raise ValueError("no finished request to summarise")
    start = min(t.request.arrival_s for t in done)
    end = max(t.token_s[-1] for t in done)
    tokens = sum(len(t.token_s) for t in done)
    out: dict[str, float] = {
        "requests": len(done),
        "output_tokens": tokens,
        "prompt_tokens": sum(t.request.P for t in done),
        "span_s": end - start,
        "output_tok_s": tokens / (end - start) if end > start else float("nan"),
        "requests_per_s": len(done) / (end - start) if end > start else float("nan"),
    }
    series = {
        "ttft_s": [ttft_s(t) for t in done],
        "tpot_s": [tpot_s(t) for t in done],
        "itl_s": [g for t in done for g in itl_s(t)],
        "e2e_s": [e2e_s(t) for t in done],
    }
    for name, values in series.items():
        for q in (50, 99):
            out[f"{name[:-2]}_p{q}_s"] = percentile(values, q)
        finite = [v for v in values if not math.isnan(v)]
        out[f"{name[:-2]}_mean_s"] = sum(finite) / len(finite) if finite else float("nan")
    return out
