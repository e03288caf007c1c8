"""Exercise 18, Question 4: the keys each query of a chunk attends through a sliding window with attention sinks.

The oracle is the package: `minigpt.runtime.window_cache.WindowKVCache` (positions="absolute") driven as
`MiniGPT` drives it, for one layer and one K/V head: each earlier forward of `fed` and then the chunk go through
`check_room`, `update`, `visible` and `advance`, and the answer is the chunk's `visible` mask, row by row, as the
indices of the keys each query may attend within the tensor `update` handed its attention (the held slots in slot
order, then the chunk's own keys). Chapter 22 prints `update` and the ring's slot formula, not the chunk's mask
(`_visible_keys`) nor which of a chunk's tokens stay (`_kept`). The case generator replays the cache in plain
Python (`_replay`) with each plausible wrong neighbour (`WINDOW_EDGES`) and draws until each one reads other keys.

A neighbour left out on purpose: a chunk that stores all of its tokens, each in its slot, in order. The later
ones overwrite the earlier ones, so the ring ends as `_kept` leaves it and no case can tell them apart.
"""

from __future__ import annotations

import random

import torch

from minigpt.config import ModelConfig
from minigpt.runtime.window_cache import WindowKVCache

#: The edges, one per wrong neighbour (`_NEIGHBOURS`, same order); case i is drawn until neighbour i reads other
#: keys than the cache does somewhere in the chunk.
WINDOW_EDGES = (
    "a ring the chunk overwrites: written before its attention, early queries lose keys later tokens overwrote",
    "a sink outside a query's window: the sinks seen only inside the window",
    "a key at t - window held: the window one too wide (t - window, not t - window + 1)",
    "a chunk longer than the window: no window mask among the chunk's own tokens",
    "a chunk of T >= 2: a query seeing the chunk's later tokens (no causal mask)",
    "an earlier chunk over the sinks: its sinks dropped, only its last window tokens stored",
    "sinks not a multiple of the window, past the first wrap: the ring not offset by the sinks (p % window)",
    "a cache not yet full: its empty slots read as keys too",
    "a wrapped ring: the held slots taken in position order, not slot order",
)
_NEIGHBOURS = ("write first", "sinks hidden", "too wide", "no chunk window", "no causal", "sinks dropped",
               "unshifted", "empty read", "position order")
#: Draws allowed for one edge before the generator gives up (none comes close: each edge is a few % of draws).
DRAWS = 10_000


def _replay(fed: list[int], T: int, window: int, sinks: int, wrong: str | None = None
            ) -> tuple[list[list[int]], list[int]]:
    """Each query's visible keys (indices, increasing) and the positions of the keys the chunk's attention gets
    (-1: an empty slot), by the cache's rule or by its wrong neighbour `wrong` (one of `_NEIGHBOURS`)."""
    slots = [-1] * (sinks + window)

    def slot(p: int) -> int:
        return p if p < sinks else sinks + ((p if wrong == "unshifted" else p - sinks) % window)

    S = 0
    for n in fed:  # a forward stores the sinks among its tokens and its last window tokens, each in its slot
        for p in range(S, S + n):
            if (p < sinks and wrong != "sinks dropped") or p >= S + n - window:
                slots[slot(p)] = p
        S += n
    chunk = list(range(S, S + T))
    if wrong == "write first":  # as a decode step: every token into its slot, then attention over the slots
        for p in chunk:
            slots[slot(p)] = p
        keys = [p for p in slots if p >= 0]
    elif wrong == "empty read":
        keys = slots + chunk
    elif wrong == "position order":
        keys = sorted(p for p in slots if p >= 0) + chunk
    else:
        keys = [p for p in slots if p >= 0] + chunk
    low = 0 if wrong == "too wide" else 1

    def sees(p: int, t: int) -> bool:
        if p < 0 or (p > t and wrong != "no causal"):
            return False
        if p < sinks and wrong != "sinks hidden":
            return True
        return p >= t - window + low or (wrong == "no chunk window" and p >= S)

    return [[j for j, p in enumerate(keys) if sees(p, t)] for t in chunk], keys


def _case(rng: random.Random) -> dict:
    """Windows 1 to 6, 0 to 3 sinks, 0 to 4 earlier forwards (each a decode step or a chunk of 2 to 10 tokens,
    even odds), a chunk of 2 to 10 tokens."""
    window, sinks = rng.randint(1, 6), rng.randint(0, 3)
    fed = [1 if rng.random() < 0.5 else rng.randint(2, 10) for _ in range(rng.randint(0, 4))]
    return dict(fed=fed, T=rng.randint(2, 10), window=window, sinks=sinks)


def _separates(case: dict, wrong: str) -> bool:
    """Whether the neighbour `wrong` reads other keys than the cache somewhere in the case's chunk."""
    return _replay(**case, wrong=wrong)[0] != _replay(**case)[0]


def _window_cases(rng: random.Random) -> list[dict]:
    """One case per wrong neighbour (`WINDOW_EDGES`), each drawn until that neighbour reads other keys, then
    three random ones."""
    cases = []
    for wrong in _NEIGHBOURS:
        for _ in range(DRAWS):
            case = _case(rng)
            if _separates(case, wrong):
                break
        else:
            raise RuntimeError(f"no case in {DRAWS:,} draws separates the window cache from {wrong!r}")
        cases.append(case)
    return cases + [_case(rng) for _ in range(3)]


def _forward(cache: WindowKVCache, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One forward of n tokens through the cache's one layer, as `MiniGPT.forward` makes it: the keys (each the
    position of its token plus one) handed to attention, and the mask attention applies."""
    cache.check_room(n)
    k_new = (cache.t + 1 + torch.arange(n, dtype=torch.float32)).view(1, 1, n, 1)
    keys, _ = cache.update(0, k_new, torch.zeros_like(k_new))
    visible = cache.visible(n)
    cache.advance(n)
    return keys, visible


def _window_chunk_keys(fed: list[int], T: int, window: int, sinks: int) -> list[list[int]]:
    config = ModelConfig(L=1, H=1, H_kv=1, d_h=1, d_ffn=1, V=1, S_max=sum(fed) + T)
    cache = WindowKVCache(config, window=window, sinks=sinks, positions="absolute")
    for n in fed:
        _forward(cache, n)
    _, visible = _forward(cache, T)
    return [row.nonzero().flatten().tolist() for row in visible[0]]
