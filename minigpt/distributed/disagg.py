"""Prefill and decode apart (Chapter 19): a router, N prefill workers and M decode workers, each a process.

The shape is the one of vLLM's disaggregated prefill (a proxy, a prefill instance with a KV producer, a
decode instance with a KV consumer), SGLang's PD disaggregation and DistServe:

- rank 0, the **driver** (the router): it lets requests arrive at their times, picks a prefill worker
  (fewest prompt tokens outstanding) and a decode worker (fewest requests held) for each, sends the
  prompt to the prefill worker, and collects what the workers report: the first token, the transfer,
  each later token. It is the only rank that sees the whole request.
- ranks 1..N, **prefill workers**: each runs the serving engine (`minigpt.serving.Engine`: its
  scheduler and executor, chunked prefill if `chunk_size` is set) on requests of one token; when a
  request's first token is sampled, its P tokens' K/V leave the paged pool (`kv_transfer.export_kv`)
  and go straight to the chosen decode worker (`isend`), not through the driver.
- ranks N+1..N+M, **decode workers**: each receives K/V into its own paged pool (`import_kv`) and runs
  the same engine on them: a received request joins the running batch with P tokens computed and its
  first token generated, so every later step is a decode (a preemption by recompute would prefill it
  again here, as a colocated engine does).

Failures. A worker may die (the launcher's `expendable` ranks): a send to it raises in gloo ("Connection
closed by peer"), but a receive from it just never completes, so the driver also watches silence: a
worker holding requests that has reported nothing for `silence_s` is declared dead. Either way its
requests are prefilled again and sent to another live decode worker (up to `retries` times) or end
`failed` with the reason; none is lost. Every message carries the request's attempt number, so a late
message of a dead attempt is ignored.

MiniGPT simplifies: greedy requests only (a sampled request would also need its generator's state
moved), one transfer after the whole prefill (vLLM's P2P connector overlaps it layer by layer), no
prefix cache on either side, and time is the machine's monotonic clock, shared by the processes.

This module is the run (`serve`, each rank's part); the parts, one concern each:

- `disagg_wire`     what goes over the wire besides the K/V: tags, message kinds, reports, control messages
- `disagg_records`  the configuration, each request's record, the pool log's line, the run
- `disagg_engines`  the serving engine on each side: K/V handed out after the prefill, taken in for decode
- `disagg_senders`  a prefill worker's sender threads, one per decode worker
- `disagg_workers`  the prefill and decode workers' loops
- `disagg_driver`   rank 0: arrivals, routing, reports, failures, the pool log
"""

from __future__ import annotations

from dataclasses import asdict

from minigpt.distributed import launch
from minigpt.distributed.disagg_driver import Driver, driver
from minigpt.distributed.disagg_engines import DecodeEngine, PrefillEngine
from minigpt.distributed.disagg_records import DisaggConfig, DisaggRun, PoolInterval, RequestRecord
from minigpt.distributed.disagg_workers import decode_worker, prefill_worker
from minigpt.runtime.generate import Sampling
from minigpt.serving.request import Request

__all__ = [
    "DecodeEngine", "DisaggConfig", "DisaggRun", "Driver", "PoolInterval", "PrefillEngine", "RequestRecord",
    "decode_worker", "driver", "prefill_worker", "serve",
]


def _rank_main(rank: int, world_size: int, cfg: DisaggConfig, requests: list[Request], echo: bool,
               timeout_s: float) -> object:
    if rank == 0:
        return driver(rank, world_size, cfg, requests, echo, timeout_s)
    if rank in cfg.prefill_ranks():
        return prefill_worker(rank, cfg)
    return decode_worker(rank, cfg)


def serve(requests: list[Request], cfg: DisaggConfig | None = None, *, echo: bool = False,
          timeout_s: float = 120.0) -> DisaggRun:
    """Serve `requests` (greedy; `arrival_s` from the start) on `cfg`'s pools, each worker a process on one
    gloo group; returns when every request has finished or failed. No worker outlives the call."""
    cfg = cfg or DisaggConfig()
    requests = list(requests)
    if not requests:
        raise ValueError("requests is empty: serve needs at least one Request")
    if len({r.id for r in requests}) != len(requests):
        raise ValueError("request ids must be unique")
    for r in requests:
        if r.sampling != Sampling():
            raise ValueError(f"request {r.id}: disaggregated serving here takes greedy requests only "
                             f"(sampling=Sampling()), got {r.sampling}")
        if r.cancel_s is not None:
            raise ValueError(f"request {r.id}: cancel_s is not supported by disaggregated serving")
    out = launch.run(_rank_main, cfg.world_size, cfg, requests, echo, timeout_s, timeout_s=timeout_s + 60,
                     expendable=range(1, cfg.world_size))
    run = out[0]
    assert isinstance(run, DisaggRun)
    for k, w in enumerate(out[1:], start=1):
        run.workers[k] = w if isinstance(w, dict) else asdict(w)
    return run
