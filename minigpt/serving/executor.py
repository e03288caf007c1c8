"""Running a step on MiniGPT: one forward `[B, T]` per distinct chunk length T, over the paged cache."""

from __future__ import annotations

from collections import defaultdict

import torch

from minigpt.runtime.device import sync
from minigpt.runtime.generate import sample
from minigpt.runtime.model import MiniGPT
from minigpt.runtime.paged_cache import PagedKVCache
from minigpt.serving.scheduler import Chunk


def forwards(chunks: list[Chunk]) -> list[list[Chunk]]:
    """The step's chunks grouped into forwards: equal T run together (a ragged batch), longest T first."""
    groups: dict[int, list[Chunk]] = defaultdict(list)
    for c in chunks:
        groups[c.T].append(c)
    return [groups[T] for T in sorted(groups, reverse=True)]


class ModelExecutor:
    """Runs a step's chunks on a `MiniGPT` whose K/V live in `pool`; samples where a chunk ends its context.

    Each sampled token comes from its request's own logits row and settings: greedy is the row's argmax;
    at temperature > 0 the request's seeded generator draws from it, as `minigpt.generate` would alone.
    """

    predicts_time = False  # the engine times the step on the wall clock

    def __init__(self, model: MiniGPT, pool: PagedKVCache) -> None:
        if pool.config != model.config:
            raise ValueError(f"pool was built for {pool.config}, but the model is {model.config}")
        self.model = model.eval()
        self.pool = pool
        self.S_max, self.V, self.device = model.config.S_max, model.config.V, model.device

    @torch.no_grad()
    def run(self, chunks: list[Chunk]) -> dict[int, int]:
        """Feed every chunk through the model; return the new token of each request whose chunk samples.

        Keys are `id(tracked)`; the pool's lengths advance by each chunk's T (the forward does it).
        """
        out: dict[int, int] = {}
        for group in forwards(chunks):
            T = group[0].T
            rows = [c.tracked.context[c.tracked.computed : c.tracked.computed + T] for c in group]
            tokens = torch.tensor(rows, dtype=torch.long, device=self.device)  # [B, T]
            batch = self.pool.batch([c.tracked.seq for c in group])  # type: ignore[misc]
            logits = self.model(tokens, batch, last_only=True)[:, -1]  # [B, V]
            for i, c in enumerate(group):
                if c.samples:
                    s = c.tracked.request.sampling
                    row = logits[i : i + 1]
                    token = sample(row, temperature=float(s.temperature), top_k=s.top_k,
                                   generator=c.tracked.generator)  # type: ignore[arg-type]
                    out[id(c.tracked)] = int(token)
        sync(self.device)
        return out
