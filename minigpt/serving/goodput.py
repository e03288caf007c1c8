"""Goodput (Chapter 19): requests per second that meet both a TTFT and a TPOT objective, colocated or
with prefill and decode apart, measured (any records with arrival and token times) or replayed.

`attainment` is Eq. (19.3) over a run's requests; `goodput` (in `costs`) is Eq. (19.4). The replay
prices a published model on published chips with the same engine as Chapters 12-14 (`Engine.replay`):

- colocated: `chips` replicas, each one engine doing prefills and decodes (requests round-robin);
- disaggregated: N prefill engines (requests of one token, round-robin) and M decode engines; a
  request reaches its decode engine when its first token is out *and* its K/V have crossed the link
  (Eq. 19.2), and joins the running batch there with P tokens computed: every step of a decode engine
  is decodes only. Decode engines take requests round-robin in the order they become ready.

What the replay leaves out: the transfer never competes with other transfers for the link (one
link per pair of chips), and a prefill engine's step is priced by the roofline like any other step,
so both pools run at the formulas' ceiling (Chapter 3), not at a measured utilisation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from minigpt import costs
from minigpt.costs.preset_types import HardwarePreset, LinkPreset, ModelPreset
from minigpt.serving.engine import Engine, EngineConfig
from minigpt.serving.meters import TokenTimes, percentile
from minigpt.serving.request import Request, Status, Tracked


@dataclass(frozen=True)
class Latency(TokenTimes):
    """One request's arrival and token times (seconds): what attainment needs, whoever served it."""

    arrival_s: float
    token_s: tuple[float, ...]


def latencies(records: Iterable[object]) -> list[Latency]:
    """`Latency` of each finished record: `Tracked` (the engine), or any object with `arrival_s`, `token_s`
    and a `status` of "finished" (a disaggregated run's `RequestRecord`). A request that did not finish
    counts as missing both objectives (TTFT infinite)."""
    out = []
    for r in records:
        if isinstance(r, Tracked):
            ok = r.status is Status.FINISHED and bool(r.token_s)
            arrival = r.request.arrival_s
        else:
            ok = getattr(r, "status", None) == "finished" and bool(r.token_s)  # type: ignore[attr-defined]
            arrival = r.arrival_s  # type: ignore[attr-defined]
        out.append(Latency(arrival, tuple(r.token_s)) if ok else Latency(arrival, (math.inf,)))
    return out


def attainment(records: Iterable[object], *, ttft_slo: float, tpot_slo: float) -> float:
    """Share of requests meeting both objectives, Eq. (19.3) (an unfinished one meets neither)."""
    lat = latencies(records)
    return costs.slo_attainment(ttft=[x.ttft_s for x in lat], tpot=[x.tpot_s for x in lat], ttft_slo=ttft_slo,
                                tpot_slo=tpot_slo)


def p90(records: Iterable[object]) -> dict[str, float]:
    """P90 of TTFT and TPOT over the finished requests (DistServe states its SLOs at P90)."""
    lat = [x for x in latencies(records) if math.isfinite(x.ttft_s)]
    return {"ttft_p90_s": percentile([x.ttft_s for x in lat], 90),
            "tpot_p90_s": percentile([x.tpot_s for x in lat], 90)}


# -- replay --------------------------------------------------------------------------------------


class _TransferredDecode(Engine):
    """A replay engine whose arrivals are prefilled elsewhere: each joins the running batch with P tokens
    computed and its first token out, when the batch and the pool have room (held until then)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.held: list[Tracked] = []  # arrived, prefilled elsewhere, waiting for room in the batch and the pool

    def _arrive(self, r: Request) -> None:
        t = Tracked(r)
        self.requests[r.id] = t
        t.generated = [0]
        self.held.append(t)

    @property
    def busy(self) -> bool:
        return bool(self.held) or super().busy

    def step(self):  # type: ignore[no-untyped-def]
        self._events()
        s, held = self.scheduler, self.held
        while held and len(s.running) < s.max_batch and s.fits(-(-held[0].request.P // self.pool.block_size)):
            t = held.pop(0)
            t.seq = self.pool.add_sequence()
            self.pool.reserve([t.seq], t.request.P)
            self.pool.advance([t.seq], t.request.P)
            t.computed, t.status, t.admitted_s = t.request.P, Status.RUNNING, self.now
            s.running.append(t)
        if held and not s.running:
            raise RuntimeError(f"request {held[0].request.id} cannot fit the decode pool even alone")
        return super().step()


def _round_robin(items: Sequence[Request], n: int) -> list[list[Request]]:
    return [list(items[k::n]) for k in range(n)]


def replay_colocated(requests: Sequence[Request], model: ModelPreset, hardware: HardwarePreset, *, chips: int = 1,
                     config: EngineConfig | None = None) -> list[Latency]:
    """Each request's latency on `chips` colocated replicas (round-robin), in `requests`' order."""
    out: dict[str, Latency] = {}
    for part in _round_robin(requests, chips):
        if part:
            engine = Engine.replay(model, hardware, config=config)
            for t in engine.run(part):
                out[t.request.id] = latencies([t])[0]
    return [out[r.id] for r in requests]


def replay_disaggregated(requests: Sequence[Request], model: ModelPreset, hardware: HardwarePreset,
                         link: LinkPreset, *, prefill: int = 1, decode: int = 1,
                         prefill_config: EngineConfig | None = None, decode_config: EngineConfig | None = None,
                         s: int = 2) -> list[Latency]:
    """Each request's latency with `prefill` prefill chips and `decode` decode chips joined by `link`."""
    first: dict[str, float] = {}
    for part in _round_robin(requests, prefill):
        if part:
            engine = Engine.replay(model, hardware, config=prefill_config, s=s)
            ones = [Request(r.id, r.prompt, 1, arrival_s=r.arrival_s) for r in part]
            for t in engine.run(ones):
                first[t.request.id] = t.token_s[0]
    by_id = {r.id: r for r in requests}
    ready = []
    for r in requests:
        move = costs.kv_transfer_time(L=model.L, H_kv=model.H_kv, d_h=model.d_h, s=s, P=r.P,
                                      link_bandwidth=link.bandwidth_per_direction)
        ready.append(Request(r.id, r.prompt, r.max_new_tokens, arrival_s=first[r.id] + move))
    ready.sort(key=lambda r: r.arrival_s)
    out: dict[str, Latency] = {}
    for part in _round_robin([r for r in ready if r.max_new_tokens > 1], decode):
        if not part:
            continue
        base = Engine.replay(model, hardware, config=decode_config, s=s)
        engine = _TransferredDecode(base.executor, base.pool, base.config)
        for t in engine.run(part):
            r = by_id[t.request.id]
            out[r.id] = Latency(r.arrival_s, (first[r.id], *t.token_s))
    for r in requests:
        if r.max_new_tokens == 1:
            out[r.id] = Latency(r.arrival_s, (first[r.id],))
    return [out[r.id] for r in requests]


def attainment_of(lat: Sequence[Latency], *, ttft_slo: float, tpot_slo: float) -> float:
    """Eq. (19.3) over replayed latencies."""
    return costs.slo_attainment(ttft=[x.ttft_s for x in lat], tpot=[x.tpot_s for x in lat], ttft_slo=ttft_slo,
                                tpot_slo=tpot_slo)


def goodput_curve(trace: Callable[[float], Sequence[Request]], rates: Sequence[float],
                  serve: Callable[[Sequence[Request]], Sequence[Latency]], *, ttft_slo: float, tpot_slo: float,
                  chips: int, target: float = 0.9) -> dict[str, object]:
    """Attainment at each rate (a trace per rate, `serve` replays it) and Eq. (19.4)'s goodput per chip."""
    att = [attainment_of(serve(trace(rate)), ttft_slo=ttft_slo, tpot_slo=tpot_slo) for rate in rates]
    return {"rates": list(rates), "attainment": att,
            "goodput_per_chip": costs.goodput(rates=list(rates), attainments=att, target=target, chips=chips)}
