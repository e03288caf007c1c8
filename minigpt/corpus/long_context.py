"""Quality of caches that forget (Chapter 22): next-token loss position by position, and sampled text past S_max.

`stream_nll` feeds held-out text one token at a time through a cache (a window with sinks, an eviction
budget) and records −log p of each next token: the StreamingLLM measurement (perplexity against position).
`sample_long` samples B streams of any length through a cache that never fills (positions re-indexed) and
returns the sentences with the position where each starts, for the grammar checker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from minigpt.corpus import generate_sentences, is_grammatical
from minigpt.runtime.model import MiniGPT
from minigpt.runtime.tokenizer import Tokenizer

CacheFactory = Callable[[int], Any]  # B -> cache


@torch.no_grad()
def stream_nll(model: MiniGPT, tokens: torch.Tensor, new_cache: CacheFactory, *, P: int = 1) -> torch.Tensor:
    """−log p(x_{t+1} | what the cache kept of x_{≤t}) `[B, T-1]` for `tokens` `[B, T]`: a prefill of P tokens,
    then one decode step per token (T may exceed S_max when the cache re-indexes positions)."""
    B, T = tokens.shape
    if isinstance(P, bool) or not isinstance(P, int) or not 1 <= P < T:
        raise ValueError(f"P must be an integer in 1..T-1 = 1..{T - 1} (the prefill), got {P!r}")
    cache = new_cache(B)
    tokens = tokens.to(model.device)
    logits = [model(tokens[:, :P], cache).float()]
    logits += [model(tokens[:, t : t + 1], cache).float() for t in range(P, T - 1)]
    all_logits = torch.cat(logits, dim=1)  # [B, T-1, V]
    return F.cross_entropy(all_logits.transpose(1, 2), tokens[:, 1:], reduction="none").cpu()


@torch.no_grad()
def sample_long(model: MiniGPT, tokenizer: Tokenizer, new_cache: CacheFactory, *, B: int, n_tokens: int,
                seed: int = 0, temperature: float = 1.0) -> list[tuple[int, str]]:
    """B streams of `n_tokens` sampled tokens each, started from a corpus sentence's first word; returns every
    complete sentence as (its first word's position, the sentence)."""
    starts = [s.split()[0] for s in generate_sentences(B, seed=seed)]
    ids = torch.tensor([[tokenizer.id_of(w)] for w in starts], dtype=torch.long, device=model.device)
    generator = torch.Generator(device=model.device).manual_seed(seed)
    cache = new_cache(B)
    out = [ids]
    for _ in range(n_tokens):
        probs = torch.softmax(model(out[-1], cache)[:, -1].float() / temperature, dim=-1)
        out.append(torch.multinomial(probs, 1, generator=generator))
    words = torch.cat(out, dim=1).tolist()
    sentences: list[tuple[int, str]] = []
    period = tokenizer.id_of(".")
    for row in words:
        begin = 0
        for i, w in enumerate(row):
            if w == period:
                if i > begin:
                    sentences.append((begin, " ".join(tokenizer.decode(row[begin : i + 1]).split())))
                begin = i + 1
    return sentences


def grammatical_by_position(sentences: list[tuple[int, str]], edges: list[int]) -> list[dict[str, int]]:
    """The grammar checker's verdict per bin of start positions [edges[i], edges[i+1])."""
    bins = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        inside = [s for p, s in sentences if lo <= p < hi]
        bins.append({"from": lo, "to": hi, "sentences": len(inside),
                     "grammatical": sum(is_grammatical(s) for s in inside)})
    return bins
