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

Failures. A request is checked where it enters (`disagg_driver.admission`, the colocated engine's rule):
one that no decode worker could hold is refused before any worker sees it. A worker never dies of a
request: what it cannot serve ends `failed`, and a step that raises sends back every request it held,
to be retried once elsewhere (`disagg_workers`). A worker may still die (the launcher's `expendable`
ranks): a send to it raises in gloo ("Connection closed by peer"), but a receive from it may never
complete, so the driver also watches silence: a worker holding requests that has reported nothing for
`silence_s` is declared dead. Either way its requests are prefilled again and sent to another live decode
worker, once, or end `failed` with the reason; none is lost. Every message carries the request's attempt
number, so a late message of a dead attempt is ignored. A rank that dies before the process group forms,
or the driver itself, ends the whole run: every request fails with that reason (`DisaggRun.error`).

MiniGPT simplifies: greedy requests only (a sampled request would also need its generator's state
moved), one transfer after the whole prefill (vLLM's P2P connector overlaps it layer by layer), no
prefix cache on either side, and time is the machine's monotonic clock, shared by the processes.

Devices. Control messages are CPU tensors on the default group, over gloo, whatever the device. The K/V
go over a group of their own per (prefill, decode) pair, gloo on a CPU and NCCL on GPUs, each used by
one thread on each side: NCCL ignores tags, and one communicator must not be driven by two threads at
once. vLLM's and SGLang's distributed code keep such a CPU group for control beside the device one.

This module is the run (`serve`, each rank's part); the parts, one concern each:

- `disagg_wire`     what goes over the wire besides the K/V: tags, message kinds, reports, control messages
- `disagg_records`  the configuration, each request's record, the pool log's line, the run
- `disagg_engines`  the serving engine on each side: K/V handed out after the prefill, taken in for decode
- `disagg_senders`  a prefill worker's sender threads, one per decode worker
- `disagg_workers`  the prefill and decode workers' loops
- `disagg_admission` where a request enters: the colocated engine's rule, checked by the driver
- `disagg_driver`   rank 0: arrivals, routing, reports, failures, the pool log
"""

from __future__ import annotations

from dataclasses import asdict
from functools import partial

import torch
import torch.distributed as dist

from minigpt.distributed import launch
from minigpt.distributed.disagg_admission import admission
from minigpt.distributed.disagg_driver import Driver, driver
from minigpt.distributed.disagg_engines import DecodeEngine, PrefillEngine
from minigpt.distributed.disagg_records import DisaggConfig, DisaggRun, Fault, PoolInterval, RequestRecord
from minigpt.distributed.disagg_wire import ctrl_groups, kill_self
from minigpt.distributed.disagg_workers import decode_worker, prefill_worker
from minigpt.runtime.checkpoint import load_pretrained
from minigpt.serving.request import Request

__all__ = [
    "DecodeEngine", "DisaggConfig", "DisaggRun", "Driver", "Fault", "PoolInterval", "PrefillEngine", "RequestRecord",
    "admission", "decode_worker", "driver", "prefill_worker", "serve",
]


def _device(rank: int, device: str) -> torch.device:
    """The driver works on the CPU; worker rank k on the CPU, or on GPU k − 1."""
    return torch.device("cuda", rank - 1) if device == "cuda" and rank > 0 else torch.device("cpu")


def _setup(cfg: DisaggConfig, device: str, rank: int) -> None:
    """Each rank, before its process group forms: its GPU, and the rendezvous faults of the tests."""
    if cfg.fault_at(rank, "rendezvous") is not None:
        kill_self()
    if _device(rank, device).type == "cuda":
        torch.cuda.set_device(_device(rank, device))


def _pair_groups(cfg: DisaggConfig, device: str) -> dict[tuple[int, int], object]:
    """One group per (prefill, decode) pair for its K/V (NCCL on GPUs, gloo on a CPU), created by every rank
    in the same order (`new_group` is collective): each is used by one sender and one receiver thread."""
    backend = "nccl" if device == "cuda" else "gloo"
    return {(p, d): dist.new_group([p, d], backend=backend) for p in cfg.prefill_ranks() for d in cfg.decode_ranks()}


def _rank_main(rank: int, world_size: int, cfg: DisaggConfig, requests: list[Request], echo: bool,
               timeout_s: float, device: str) -> object:
    pairs = _pair_groups(cfg, device)
    ctrl = ctrl_groups(cfg.prefill_ranks() + cfg.decode_ranks())
    if rank == 0:
        c = load_pretrained().model.config
        return driver(rank, world_size, cfg, requests, echo, timeout_s, S_max=c.S_max, V=c.V, ctrl=ctrl)
    if rank in cfg.prefill_ranks():
        return prefill_worker(rank, cfg, {d: g for (p, d), g in pairs.items() if p == rank}, _device(rank, device),
                              ctrl[rank])
    return decode_worker(rank, cfg, {p: g for (p, d), g in pairs.items() if d == rank}, _device(rank, device),
                         ctrl[rank])


def _check_backend(cfg: DisaggConfig, backend: str, device: str) -> str:
    """The launcher's backend for `backend` and `device`; a ValueError naming what is wrong."""
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if backend not in ("gloo", "nccl"):
        raise ValueError(f"backend must be 'gloo' (device='cpu') or 'nccl' (device='cuda'), got {backend!r}")
    if (backend == "nccl") != (device == "cuda"):
        raise ValueError(f"backend={backend!r} does not go with device={device!r}: gloo carries the K/V of "
                         "workers on the CPU, NCCL those of workers on GPUs")
    if device == "cuda":
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        workers = cfg.prefill_workers + cfg.decode_workers
        if gpus < workers:
            raise ValueError(f"device='cuda' puts each of the {workers} workers on its own GPU, but this machine "
                             f"has {gpus}")
        return "cpu:gloo,cuda:nccl"  # control on the CPU over gloo, the K/V over NCCL
    return "gloo"


def _failed_run(requests: list[Request], error: str) -> DisaggRun:
    """The run of a cluster that failed as a whole: every request failed, with the reason."""
    first = error.strip().splitlines()[0] if error.strip() else "the run failed"
    records = [RequestRecord(r.id, r.P, r.max_new_tokens, r.arrival_s, status="failed",
                             reason=f"the run failed: {first} (run.error has the detail)") for r in requests]
    return DisaggRun(records, [], {}, {}, 0.0, error=error)


def serve(requests: list[Request], cfg: DisaggConfig | None = None, *, echo: bool = False,
          timeout_s: float = 120.0, backend: str = "gloo", device: str = "cpu") -> DisaggRun:
    """Serve `requests` (greedy; `arrival_s` from the start) on `cfg`'s pools, each worker a process, and
    return when every request has ended: `finished`, or `failed` with the reason. A bad request is refused
    on arrival and harms no other; a worker that dies costs the requests it held one retry each; a run
    that fails whole (a rank dead before the group formed, the driver dead, `timeout_s` passed) fails
    every request with that reason and says why in `run.error`. No worker outlives the call.

    `backend="gloo", device="cpu"`: every worker on the CPU. `backend="nccl", device="cuda"`: worker rank
    k on GPU k − 1 (one GPU per worker), the K/V over NCCL, every control message on the CPU over gloo.
    Raises `ValueError` only for arguments that are not requests or a configuration."""
    cfg = cfg or DisaggConfig()
    if not isinstance(cfg, DisaggConfig):
        raise ValueError(f"cfg must be a DisaggConfig, got {type(cfg).__name__}")
    requests = list(requests)
    if not requests:
        raise ValueError("requests is empty: serve needs at least one Request")
    for r in requests:
        if not isinstance(r, Request):
            raise ValueError(f"requests must hold minigpt.serving.Request objects, got {type(r).__name__}")
    launch_backend = _check_backend(cfg, backend, device)
    try:
        out = launch.run(_rank_main, cfg.world_size, cfg, requests, echo, timeout_s, device,
                         backend=launch_backend, timeout_s=timeout_s + 60, expendable=range(1, cfg.world_size),
                         setup=partial(_setup, cfg, device))
    except (RuntimeError, TimeoutError) as e:  # the group never formed, the driver died, or the run hung
        return _failed_run(requests, f"{type(e).__name__}: {e}")
    run = out[0]
    assert isinstance(run, DisaggRun)
    for k, w in enumerate(out[1:], start=1):
        if isinstance(w, launch.WorkerFailure):
            last = (w.detail.strip().splitlines() or [""])[-1]
            run.dead[k] = f"{run.dead.get(k, 'died after the last request ended')}; exit code {w.exitcode}" + (
                f": {last}" if last and last != f"exit code {w.exitcode}" else "")
            run.workers[k] = asdict(w)
        else:
            run.workers[k] = w
    return run
