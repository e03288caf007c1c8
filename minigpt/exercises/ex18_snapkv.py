"""Exercise 18, Question 2: the prompt's keys a SnapKV cache keeps.

The oracle is the package: `minigpt.runtime.eviction.SnapKVCache` prefilled as `MiniGPT` prefills it, for one
layer, one K/V head and one query head (`update` with the whole prompt, the attention's `weights` through
`observe`, then `advance`, which compresses the prompt to the budget). Chapter 22 describes the selection in
words and prints none of its code. The case generator replays it in plain Python (`_select`) with each
plausible wrong neighbour (`SNAP_EDGES`) and draws until each one keeps other keys, and until no two keys tie
at the cut (a float32 and a float64 answer must keep the same keys; max-pooling makes neighbours' votes equal).
"""

from __future__ import annotations

import math
import random

import torch
import torch.nn.functional as F

from minigpt.config import ModelConfig
from minigpt.exercises.spec import build, randn
from minigpt.runtime.eviction import SnapKVCache

#: The edges: a prompt within the budget first, then one per wrong neighbour (`_NEIGHBOURS`, same order), each
#: case drawn until that neighbour keeps other keys than SnapKV does.
SNAP_EDGES = (
    "a prompt within the budget: every key kept",
    "votes ranked lowest first: the keys the window looks at least",
    "the last query's votes alone, not the window's sum",
    "no pooling: each key by its own votes",
    "the window's own votes pooled too, spilling onto the keys just before it",
    "an average pool (SnapKV's code's default) instead of the max-pool",
    "the window competing with the earlier keys for the budget instead of kept whole",
    "a window query counting keys after itself (no causal mask)",
    "scores divided by d_h instead of √d_h (another softmax temperature)",
)
_NEIGHBOURS = ("lowest", "last query", "no pooling", "window pooled", "average", "window competes", "no mask",
               "scale")
#: The smallest gap between the last key kept and the first key evicted, in pooled votes.
TIE_GAP = 1e-4


def _votes(q: torch.Tensor, k: torch.Tensor, window: int, kernel: int, wrong: str | None = None) -> torch.Tensor:
    """Each key's vote `[T]` (float64): the attention the window's queries give it, summed, then the keys before
    the window max-pooled over `kernel` neighbours (or as the neighbour `wrong` has it)."""
    T, d_h = k.shape
    w = min(window, T)
    scores = (q.double() @ k.double().T) / (d_h if wrong == "scale" else math.sqrt(d_h))
    if wrong != "no mask":
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    rows = slice(T - 1, T) if wrong == "last query" else slice(T - w, T)
    votes = torch.softmax(scores[rows], dim=-1).sum(dim=0)
    end = T if wrong == "window pooled" else T - w
    if end and wrong != "no pooling":
        pool = F.avg_pool1d if wrong == "average" else F.max_pool1d
        votes[:end] = pool(votes[:end].view(1, 1, -1), kernel, stride=1, padding=kernel // 2).view(-1)
    return votes


def _select(q: torch.Tensor, k: torch.Tensor, window: int, kernel: int, budget: int, wrong: str | None = None
            ) -> tuple[list[int], float]:
    """The kept positions by SnapKV's rule or by its wrong neighbour `wrong`, and the vote gap at the cut
    (math.inf when nothing is evicted)."""
    T = k.shape[0]
    if T <= budget:
        return list(range(T)), math.inf
    votes = _votes(q, k, window, kernel, wrong).tolist()
    w = min(window, T)
    pool, take = (range(T), budget) if wrong == "window competes" else (range(T - w), budget - w)
    ranked = sorted(pool, key=lambda p: votes[p], reverse=wrong != "lowest")
    gap = abs(votes[ranked[take - 1]] - votes[ranked[take]]) if 0 < take < len(ranked) else math.inf
    kept = ranked[:take] + ([] if wrong == "window competes" else list(range(T - w, T)))
    return sorted(kept), gap


def _case(rng: random.Random, within: bool = False) -> dict:
    window, kernel = rng.randint(1, 4), rng.choice([3, 5, 7])
    budget = rng.randint(window + 1, window + 6)
    T = rng.randint(2, budget) if within else rng.randint(budget + 2, budget + 14)
    d_h = rng.choice([2, 4, 8])
    return dict(q=randn([T, d_h], rng, 1.5), k=randn([T, d_h], rng, 1.5), window=window, kernel=kernel,
                budget=budget)


def _separates(case: dict, wrong: str | None) -> bool:
    """Whether the case has no near tie at the cut and, where `wrong` is named, its neighbour keeps other keys."""
    args = dict(q=build(case["q"]), k=build(case["k"]), window=case["window"], kernel=case["kernel"],
                budget=case["budget"])
    right, gap = _select(**args)
    if gap < TIE_GAP:
        return False
    return wrong is None or _select(**args, wrong=wrong)[0] != right


def _snap_cases(rng: random.Random) -> list[dict]:
    """A prompt within the budget, then one case per wrong neighbour (`SNAP_EDGES`), each drawn until that
    neighbour keeps other keys, then two random prompts past the budget; none with a near tie at the cut."""
    cases = [_case(rng, within=True)]
    for wrong in (*_NEIGHBOURS, None, None):
        for _ in range(10_000):
            case = _case(rng)
            if _separates(case, wrong):
                break
        else:
            raise RuntimeError(f"no case in 10,000 draws separates SnapKV from {wrong!r}")
        cases.append(case)
    return cases


def _snapkv_keep(q: torch.Tensor, k: torch.Tensor, window: int, kernel: int, budget: int) -> list[int]:
    T, d_h = q.shape
    config = ModelConfig(L=1, H=1, H_kv=1, d_h=d_h, d_ffn=1, V=1, S_max=T)
    cache = SnapKVCache(config, budget=budget, window=window, kernel=kernel)
    keys, _ = cache.update(0, k.view(1, 1, T, d_h), torch.zeros(1, 1, T, d_h))
    cache.observe(0, q.view(1, 1, T, d_h), keys, cache.visible(T))
    cache.advance(T)
    return cache.pos[0, 0, 0, : cache.n].tolist()
