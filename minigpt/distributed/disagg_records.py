"""Disaggregated serving's configuration and records (Chapter 19): the pools and their engines
(`DisaggConfig`), what the driver knows of each request (`RequestRecord`), one log line of the two pools
(`PoolInterval`), and a whole run (`DisaggRun`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from minigpt.serving.engine import EngineConfig
from minigpt.serving.meters import TokenTimes

#: Where each role can be killed by a `Fault`: before its process group forms, in the middle of its work,
#: between a transfer's header and its K/V, after the run's last request ended.
PHASES = {
    "driver": ("rendezvous", "decode", "shutdown"),
    "prefill": ("rendezvous", "prefill", "step", "transfer", "shutdown"),
    "decode": ("rendezvous", "transfer", "decode", "step", "shutdown"),
}

HANGS_AT = ("prefill", "transfer", "decode", "shutdown")  # where a worker's fault may stop it instead


@dataclass(frozen=True)
class Fault:
    """Fault injection (the tests of Chapter 19): kill `role`'s worker number `worker` (SIGKILL, as the OOM
    killer would) at `phase`, the `after`-th time it gets there. Phases: `rendezvous`, before the process
    group forms; `prefill`, after a prefill step (a prefill worker); `transfer`, between a K/V transfer's
    header and its K/V (the prefill worker sending it, or the decode worker receiving it); `decode`, after a
    generated token (a decode worker) or a report of one (the driver); `shutdown`, once the last request has
    ended (the driver before it sends STOP, a worker once it has received it). `step` kills nothing: the
    worker's `after`-th engine step raises, as a kernel error would. `hangs=True` (a worker, not at `step`
    or `rendezvous`): the process stops there instead (SIGSTOP), as a deadlock or a kernel call that never
    returns would leave it: its connections stay open and it answers nothing."""

    role: str
    phase: str
    worker: int = 0
    after: int = 1
    hangs: bool = False

    def __post_init__(self) -> None:
        if self.role not in PHASES:
            raise ValueError(f"role must be one of {tuple(PHASES)}, got {self.role!r}")
        if self.phase not in PHASES[self.role]:
            raise ValueError(f"phase of a {self.role} fault must be one of {PHASES[self.role]}, got {self.phase!r}")
        for name in ("worker", "after"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < (1 if name == "after" else 0):
                raise ValueError(f"{name} must be an integer >= {1 if name == 'after' else 0}, got {v!r}")
        if not isinstance(self.hangs, bool):
            raise ValueError(f"hangs must be True or False, got {self.hangs!r}")
        if self.hangs and (self.role == "driver" or self.phase not in HANGS_AT):
            raise ValueError(f"hangs=True is for a worker at a phase after its group formed ({HANGS_AT}); got a "
                             f"{self.role} fault at {self.phase!r}")


@dataclass(frozen=True)
class DisaggConfig:
    """Pools and their engines: N prefill and M decode workers, each with its own paged pool of
    `num_blocks` blocks of `block_size` tokens; `chunk_size` chunks long prompts on the prefill side.
    `silence_s`: a worker holding requests that says nothing this long is dead; `retries`: whether (1) or
    not (0) a request whose worker died, or whose step raised, is prefilled again; never twice, since a
    request that failed twice may be what kills workers. `faults`: fault injection for the tests."""

    prefill_workers: int = 1
    decode_workers: int = 1
    max_batch: int = 8
    chunk_size: int | None = None
    num_blocks: int = 64
    block_size: int = 16
    silence_s: float = 10.0
    retries: int = 1
    log_interval_s: float = 1.0
    faults: tuple[Fault, ...] = ()

    def __post_init__(self) -> None:
        for name in ("prefill_workers", "decode_workers", "max_batch", "num_blocks", "block_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if self.retries not in (0, 1) or isinstance(self.retries, bool):
            raise ValueError(f"retries must be 0 or 1 (a request that failed twice may be what kills workers: it "
                             f"is not retried again), got {self.retries!r}")
        if not self.silence_s > 0:
            raise ValueError(f"silence_s must be > 0 seconds, got {self.silence_s!r}")
        object.__setattr__(self, "faults", tuple(self.faults))
        for f in self.faults:
            if not isinstance(f, Fault):
                raise ValueError(f"faults must hold minigpt.distributed.disagg.Fault, got {type(f).__name__}")
            top = {"driver": 1, "prefill": self.prefill_workers, "decode": self.decode_workers}[f.role]
            if f.worker >= top:
                raise ValueError(f"a {f.role} fault names worker {f.worker}, but there are {top} (0..{top - 1})")

    def _faults(self, rank: int, phase: str) -> list[Fault]:
        role = "driver" if rank == 0 else "prefill" if rank in self.prefill_ranks() else "decode"
        first = {"driver": 0, "prefill": 1, "decode": 1 + self.prefill_workers}[role]
        return [f for f in self.faults if f.role == role and f.phase == phase and first + f.worker == rank]

    def fault_at(self, rank: int, phase: str) -> int | None:
        """How many times `rank` gets to `phase` before it is killed there, or None."""
        hits = [f.after for f in self._faults(rank, phase)]
        return min(hits) if hits else None

    def fault_hangs(self, rank: int, phase: str) -> bool:
        """Whether `rank`'s first fault at `phase` stops it (`Fault.hangs`) rather than killing it."""
        hits = sorted(self._faults(rank, phase), key=lambda f: f.after)
        return bool(hits) and hits[0].hangs

    @property
    def world_size(self) -> int:
        return 1 + self.prefill_workers + self.decode_workers

    def prefill_ranks(self) -> list[int]:
        return list(range(1, 1 + self.prefill_workers))

    def decode_ranks(self) -> list[int]:
        return list(range(1 + self.prefill_workers, self.world_size))

    def engine_config(self, *, prefill: bool) -> EngineConfig:
        return EngineConfig(max_batch=self.max_batch, chunk_size=self.chunk_size if prefill else None)


@dataclass
class RequestRecord(TokenTimes):
    """What the driver knows of one request at the end: `finished` or `failed` (with the reason), its
    tokens, arrival and token times (seconds from the start), and where it ran."""

    id: str
    P: int
    max_new_tokens: int
    arrival_s: float
    status: str = "waiting"
    reason: str = ""
    tokens: list[int] = field(default_factory=list)
    token_s: list[float] = field(default_factory=list)
    attempt: int = 0
    prefill_rank: int | None = None
    decode_rank: int | None = None
    kv_bytes: int = 0  # K/V bytes of the transfer that completed (Eq. 2.1 · P)
    transfer_s: float | None = None  # seconds the prefill worker's sender spent on the transfer
    retried: list[str] = field(default_factory=list)  # why each earlier attempt was given up


@dataclass(frozen=True)
class PoolInterval:
    """One log line of the two pools between `start_s` and `end_s` (the engine log's style, per pool)."""

    start_s: float
    end_s: float
    prompt_tok_s: float  # prefill pool
    generation_tok_s: float  # decode pool
    transfer_bytes: int  # K/V bytes whose transfer completed in the interval
    prefilling: int
    decoding: int
    waiting: int

    def __str__(self) -> str:
        return (f"[{self.end_s:8.3f} s] Prefill pool: {self.prompt_tok_s:,.1f} prompt tokens/s, "
                f"{self.prefilling} reqs | "
                f"Decode pool: {self.generation_tok_s:,.1f} generation tokens/s, {self.decoding} reqs | "
                f"KV transfer: {self.transfer_bytes:,} B | Pending: {self.waiting} reqs")


@dataclass
class DisaggRun:
    """A run's requests (in submission order), its pool log, each worker's stats, and the dead ranks."""

    records: list[RequestRecord]
    log: list[PoolInterval]
    workers: dict[int, dict]
    dead: dict[int, str]
    span_s: float
    pids: dict[int, int] = field(default_factory=dict)  # every worker's process id (from its hello)
    error: str = ""  # why the run itself ended early (its group never formed, the driver died), if it did

    @property
    def kv_bytes(self) -> int:
        return sum(w.get("kv_bytes_sent", 0) for w in self.workers.values() if isinstance(w, dict))
