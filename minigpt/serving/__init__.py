"""A small serving engine on MiniGPT: many requests, one model step at a time (Part III, Chapters 12-14).

Above `minigpt.runtime`, one concern per module:

- `request`       what a user sends (`Request`) and what the engine keeps about it (`Tracked`, `Status`)
- `meters`        per-request latencies (TTFT, time per output token, end-to-end) and their percentiles
- `log`           the engine log: throughput per interval, running and waiting counts, KV usage
- `prefix_cache`  cached prefixes indexed by a SHA-256 chain over full token blocks; leaves evicted first (LRU)
- `scheduler`     what runs in the next step: admission, retirement, block growth or reservation, preemption
                  by recompute or swap (static or continuous)
- `executor`      running a step on MiniGPT over the paged cache: one fused forward for all its tokens
- `replay`        the same steps timed by the book's formulas (one fused forward each) for a published model and chip
- `engine`        the loop: arrivals, cancellations, a step, its outputs, stop conditions, the clock
- `trace`         arrival traces: Poisson arrivals, shared system prompts, multi-turn chats
- `schedule_log`  a replayed run's per-step schedule as plain JSON (what the browser's engine twin is checked against)
"""

from minigpt.serving.engine import Engine, EngineConfig
from minigpt.serving.executor import ModelExecutor
from minigpt.serving.meters import latency_summary
from minigpt.serving.prefix_cache import PrefixCache
from minigpt.serving.replay import ReplayExecutor, replay_blocks
from minigpt.serving.request import Request, Status, Tracked

__all__ = [
    "Engine", "EngineConfig", "ModelExecutor", "PrefixCache", "ReplayExecutor", "Request", "Status", "Tracked",
    "latency_summary", "replay_blocks",
]
