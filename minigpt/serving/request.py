"""Requests: what a user sends (`Request`) and what the engine keeps about it while serving (`Tracked`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from minigpt.runtime.generate import Sampling
from minigpt.serving.prefix_cache import BlockKey


class Status(enum.Enum):
    """Where a request is: every request ends finished, rejected (with a reason) or cancelled."""

    WAITING = "waiting"  # arrived, not admitted (or preempted and waiting to be recomputed)
    RUNNING = "running"  # holds a sequence in the paged cache
    SWAPPED = "swapped"  # preempted by swap: its K/V wait in the host pool
    FINISHED = "finished"
    REJECTED = "rejected"
    CANCELLED = "cancelled"

    @property
    def done(self) -> bool:
        return self in (Status.FINISHED, Status.REJECTED, Status.CANCELLED)


@dataclass(frozen=True)
class Request:
    """One generation request: prompt token ids, sampling settings (incl. stop sequences), a token bound.

    `arrival_s` is when it reaches the engine (engine time); `cancel_s`, if given, when the user
    cancels it. Malformed fields raise `ValueError` here; what depends on the engine (the model's
    positions, the KV memory) is checked on arrival and ends in `Status.REJECTED` with a reason.
    """

    id: str
    prompt: tuple[int, ...]
    max_new_tokens: int
    arrival_s: float = 0.0
    sampling: Sampling = field(default_factory=Sampling)
    cancel_s: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"id must be a non-empty string, got {self.id!r}")
        prompt = tuple(self.prompt)
        if not prompt:
            raise ValueError(f"request {self.id}: prompt is empty; a request needs at least one token (P >= 1)")
        if not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in prompt):
            raise ValueError(f"request {self.id}: prompt must hold non-negative integer token ids")
        object.__setattr__(self, "prompt", prompt)
        m = self.max_new_tokens
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ValueError(
                f"request {self.id}: max_new_tokens must be an integer >= 1 (a request produces at least one "
                f"token), got {m!r}"
            )
        for name in ("arrival_s", "cancel_s"):
            t = getattr(self, name)
            if t is None and name == "cancel_s":
                continue
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t < float("inf"):
                raise ValueError(f"request {self.id}: {name} must be a finite time >= 0 (seconds), got {t!r}")
        if not isinstance(self.sampling, Sampling):
            got = type(self.sampling).__name__
            raise ValueError(f"request {self.id}: sampling must be a minigpt.Sampling, got {got}")
        for stop in self.sampling.stop:
            if isinstance(stop, str):
                raise ValueError(f"request {self.id}: stop sequences must be token ids here, got the string {stop!r}")
            if not stop:
                raise ValueError(f"request {self.id}: stop sequences must be non-empty")

    @property
    def P(self) -> int:
        """Prompt length."""
        return len(self.prompt)


def rejection(r: Request, *, S_max: int, V: int, num_blocks: int, block_size: int) -> str | None:
    """Why an engine whose model has `S_max` positions and `V` ids, and whose pool has `num_blocks` blocks of
    `block_size` tokens, can never serve `r`; None if it can. The one admission rule: the colocated engine
    applies it on arrival, the disaggregated driver before any worker sees the request."""
    if r.P > S_max:
        return f"prompt has P={r.P} tokens but the model has S_max={S_max} positions"
    if r.P + r.max_new_tokens - 1 > S_max:
        return (f"max_new_tokens={r.max_new_tokens} does not fit: P + max_new_tokens - 1 = "
                f"{r.P + r.max_new_tokens - 1} positions exceed S_max={S_max}; allowed: max_new_tokens <= "
                f"{S_max - r.P + 1}")
    if max(r.prompt) >= V:
        return f"token id {max(r.prompt)} is out of range: ids must be in 0..{V - 1} (V={V})"
    if r.sampling.top_k is not None and r.sampling.top_k > V:
        return f"top_k must be None or an integer in 1..{V} (V), got {r.sampling.top_k}"
    total = r.P + r.max_new_tokens - 1
    blocks = -(-total // block_size)
    if blocks > num_blocks:
        return (f"needs {blocks} KV blocks of {block_size} tokens for P + max_new_tokens - 1 = {total} tokens, "
                f"but the pool has {num_blocks} blocks in all")
    return None


@dataclass(eq=False)
class Tracked:
    """The engine's record of one request: status, output, its sequence in the cache, and its timestamps.

    The cache holds the first `computed` tokens of `context` (prompt, then generated tokens). A step
    feeds the next `pending` of them (a prompt chunk, or the last sampled token: a decode is a chunk of
    one) and samples a new token when the chunk reaches the end of the context.
    """

    request: Request
    status: Status = Status.WAITING
    reason: str = ""  # "max_new_tokens", "stop", or why it was rejected or cancelled
    generated: list[int] = field(default_factory=list)  # every sampled token (a matched stop sequence included)
    stop_len: int = 0  # length of the stop sequence that ended it (cut from `tokens` unless include_stop)
    seq: int | None = None  # its sequence id in the paged cache while running
    computed: int = 0
    cached_tokens: int = 0  # prompt tokens that came from the prefix cache, over all admissions
    preemptions: int = 0
    swaps: int = 0  # preemptions by swap (the rest were by recompute)
    swapped: object = None  # its `minigpt.runtime.swap.SwappedSequence` while swapped out
    recompute_hit_tokens: int = 0  # context tokens a recompute (after preemption) found in the prefix cache
    hashes: list[BlockKey] = field(default_factory=list)  # key chain of the full blocks of `context`
    registered: int = 0  # leading blocks of its sequence that are in the prefix cache
    token_s: list[float] = field(default_factory=list)  # engine time at which each new token was sampled
    admitted_s: float | None = None
    finished_s: float | None = None
    generator: object = None  # the torch.Generator of a sampled (temperature > 0) request

    @property
    def context(self) -> list[int]:
        """Prompt plus generated tokens: what the cache must hold (a preempted request recomputes it all)."""
        return [*self.request.prompt, *self.generated]

    @property
    def pending(self) -> int:
        """Context tokens not yet in the cache: the prompt (or what a prefix hit left), or 1 when decoding."""
        return len(self.request.prompt) + len(self.generated) - self.computed

    @property
    def decoding(self) -> bool:
        """Past its prefill: one token per step."""
        return bool(self.generated) and self.pending == 1

    @property
    def tokens(self) -> list[int]:
        """The new tokens the user sees (a matched stop sequence cut off unless `include_stop`)."""
        if self.stop_len and not self.request.sampling.include_stop:
            return self.generated[: len(self.generated) - self.stop_len]
        return list(self.generated)


@dataclass(frozen=True)
class Chunk:
    """T tokens of one request's context, fed in this step (starting at `request.computed`)."""

    tracked: Tracked
    T: int

    @property
    def samples(self) -> bool:
        """True when the chunk reaches the end of the context: its last logits give a new token."""
        return self.T == self.tracked.pending
