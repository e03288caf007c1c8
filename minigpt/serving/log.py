"""The engine log, in the style of a real engine's periodic stats line.

Every `interval_s` of engine time one `Interval` is recorded: prompt and generation throughput over
the interval, requests running, waiting and preempted so far, KV-block usage and the prefix-cache hit
rate. `str(interval)` reads like vLLM's line ("Avg prompt throughput: … tokens/s, … GPU KV cache usage").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Interval:
    """One line of the engine log: what the engine did between `start_s` and `end_s`."""

    start_s: float
    end_s: float
    prompt_tok_s: float
    generation_tok_s: float
    steps: int
    running: int
    waiting: int
    preempted: int
    kv_usage: float  # blocks held by running sequences / all blocks
    prefix_hit_rate: float  # prompt tokens served from the prefix cache / prompt tokens admitted, so far

    def __str__(self) -> str:
        return (
            f"[{self.end_s:9.3f} s] Avg prompt throughput: {self.prompt_tok_s:,.1f} tokens/s, "
            f"Avg generation throughput: {self.generation_tok_s:,.1f} tokens/s, Running: {self.running} reqs, "
            f"Preempted: {self.preempted} reqs, Pending: {self.waiting} reqs, "
            f"KV cache usage: {100 * self.kv_usage:.1f}%, Prefix cache hit rate: {100 * self.prefix_hit_rate:.1f}%"
        )

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


class EngineLog:
    """Accumulates step counts and emits an `Interval` each time engine time passes `interval_s`."""

    def __init__(self, interval_s: float, *, echo: bool = False) -> None:
        if isinstance(interval_s, bool) or not isinstance(interval_s, (int, float)) or not interval_s > 0:
            raise ValueError(f"log interval_s must be a number > 0 (seconds of engine time), got {interval_s!r}")
        self.interval_s = float(interval_s)
        self.echo = echo
        self.intervals: list[Interval] = []
        self._start = 0.0
        self._prompt = self._generated = self._steps = 0

    def step(self, *, prompt_tokens: int, generated_tokens: int) -> None:
        """Count one step's work."""
        self._prompt += prompt_tokens
        self._generated += generated_tokens
        self._steps += 1

    def due(self, now: float) -> bool:
        """True when the current interval has run `interval_s`."""
        return now - self._start >= self.interval_s

    def tick(self, now: float, *, running: int, waiting: int, preempted: int, kv_usage: float,
             prefix_hit_rate: float, force: bool = False) -> None:
        """Close the interval if `interval_s` has passed (or `force`, at the end of a run)."""
        span = now - self._start
        if span < self.interval_s and not (force and self._steps):
            return
        line = Interval(self._start, now, self._prompt / span if span > 0 else 0.0,
                        self._generated / span if span > 0 else 0.0, self._steps, running, waiting, preempted,
                        kv_usage, prefix_hit_rate)
        self.intervals.append(line)
        if self.echo:
            print(line)
        self._start, self._prompt, self._generated, self._steps = now, 0, 0, 0
