"""Disaggregated serving's configuration and records (Chapter 19): the pools and their engines
(`DisaggConfig`), what the driver knows of each request (`RequestRecord`), one log line of the two pools
(`PoolInterval`), and a whole run (`DisaggRun`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from minigpt.serving.engine import EngineConfig
from minigpt.serving.meters import TokenTimes


@dataclass(frozen=True)
class DisaggConfig:
    """Pools and their engines: N prefill and M decode workers, each with its own paged pool of
    `num_blocks` blocks of `block_size` tokens; `chunk_size` chunks long prompts on the prefill side.
    `silence_s`: a worker holding requests that says nothing this long is dead; `retries`: how many
    times a request whose worker died is prefilled again. `die_after`: fault injection for the tests,
    (decode worker j, tokens): that worker exits hard once it has generated that many tokens."""

    prefill_workers: int = 1
    decode_workers: int = 1
    max_batch: int = 8
    chunk_size: int | None = None
    num_blocks: int = 64
    block_size: int = 16
    silence_s: float = 10.0
    retries: int = 1
    log_interval_s: float = 1.0
    die_after: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        for name in ("prefill_workers", "decode_workers", "max_batch", "num_blocks", "block_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ValueError(f"retries must be an integer >= 0, got {self.retries!r}")
        if not self.silence_s > 0:
            raise ValueError(f"silence_s must be > 0 seconds, got {self.silence_s!r}")
        if self.die_after is not None and not 0 <= self.die_after[0] < self.decode_workers:
            raise ValueError(f"die_after names decode worker j in 0..{self.decode_workers - 1}, got {self.die_after}")

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

    @property
    def kv_bytes(self) -> int:
        return sum(w.get("kv_bytes_sent", 0) for w in self.workers.values() if isinstance(w, dict))
