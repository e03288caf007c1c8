"""Running a step on MiniGPT over the paged cache: one fused forward for all the step's tokens.

The step's chunks (prompt chunks of any length T and decodes, T = 1) are flattened into one batch
(`minigpt.runtime.varlen.flatten`) and run by one forward (`forward_varlen`): the per-token layers read
their weights once for the whole step, attention reads each sequence's own blocks, and the LM head runs
only at the rows that sample. `fused=False` runs the unfused executor, one `MiniGPT.forward` `[B, T]` per
distinct chunk length T over a padded ragged batch: the comparison of `scripts/bench/bench.py`.
"""

from __future__ import annotations

from collections import defaultdict

import torch

from minigpt.runtime.device import sync
from minigpt.runtime.generate import sample
from minigpt.runtime.model import MiniGPT
from minigpt.runtime.paged_cache import PagedKVCache
from minigpt.runtime.varlen import flatten, forward_varlen
from minigpt.serving.request import Chunk


def forwards(chunks: list[Chunk]) -> list[list[Chunk]]:
    """The step's chunks grouped as the unfused executor runs them: equal T together, longest T first."""
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

    def __init__(self, model: MiniGPT, pool: PagedKVCache, *, fused: bool = True) -> None:
        if pool.config != model.config:
            raise ValueError(f"pool was built for {pool.config}, but the model is {model.config}")
        self.model = model.eval()
        self.pool = pool
        self.fused = fused
        self.S_max, self.V, self.device = model.config.S_max, model.config.V, model.device

    def run(self, chunks: list[Chunk]) -> dict[int, int]:
        """Feed every chunk through the model; return the new token of each request whose chunk samples.

        Keys are `id(tracked)`; the pool's lengths advance by each chunk's T (the forward does it).
        """
        with torch.no_grad():
            sampled = [c for c in chunks if c.samples]
            if self.fused:
                batch = flatten(self.pool, [c.tracked.seq for c in chunks],  # type: ignore[misc]
                                [c.tracked.context[c.tracked.computed : c.tracked.computed + c.T] for c in chunks],
                                [c.samples for c in chunks])
                logits = forward_varlen(self.model, self.pool, batch)  # [len(sampled), V]
            else:
                rows = {}
                for group in forwards(chunks):
                    T = group[0].T
                    ids = [c.tracked.context[c.tracked.computed : c.tracked.computed + T] for c in group]
                    tokens = torch.tensor(ids, dtype=torch.long, device=self.device)  # [B, T]
                    batch = self.pool.batch([c.tracked.seq for c in group])  # type: ignore[misc]
                    out = self.model(tokens, batch, last_only=True)[:, -1]  # [B, V]
                    rows.update({id(c): out[i] for i, c in enumerate(group)})
                logits = torch.stack([rows[id(c)] for c in sampled]) if sampled else None
            out: dict[int, int] = {}
            for i, c in enumerate(sampled):
                s = c.tracked.request.sampling
                token = sample(logits[i : i + 1], temperature=float(s.temperature), top_k=s.top_k,  # type: ignore[index]
                               generator=c.tracked.generator)  # type: ignore[arg-type]
                out[id(c.tracked)] = int(token)
            sync(self.device)
            return out
