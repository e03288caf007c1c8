"""Model quality as numbers: grammaticality of sampled sentences and tense agreement on probes."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from minigpt.corpus import generate_sentences, is_grammatical, split_sentences
from minigpt.runtime.generate import CacheFactory, generate
from minigpt.runtime.model import MiniGPT
from minigpt.runtime.tokenizer import Tokenizer


@dataclass(frozen=True)
class Grammaticality:
    """How many complete sampled sentences the checker accepts."""

    n_sentences: int
    n_grammatical: int
    examples_bad: tuple[str, ...]

    @property
    def fraction(self) -> float:
        return self.n_grammatical / self.n_sentences


def sample_sentences(
    model: MiniGPT, tokenizer: Tokenizer, n_sentences: int = 1000, *, temperature: float = 1.0,
    seed: int = 0, B: int = 64, new_cache: CacheFactory | None = None,
) -> list[str]:
    """Sample `n_sentences` complete sentences: B streams, each started from a corpus sentence's first word.

    Every word after the first is the model's; the streams run to the position limit and are split on ".".
    `new_cache(B, S_max)` builds the cache the streams write (default: the model's own, `KVCache`).
    """
    if not isinstance(n_sentences, int) or n_sentences <= 0:
        raise ValueError(f"n_sentences must be a positive integer, got {n_sentences!r}")
    sentences: list[str] = []
    round_ = 0
    while len(sentences) < n_sentences:
        starts = [s.split()[0] for s in generate_sentences(B, seed=seed * 1_000 + round_)]
        prompt = [[tokenizer.id_of(w)] for w in starts]
        out = generate(model, prompt, model.config.S_max, temperature=temperature, seed=seed * 1_000 + round_,
                       new_cache=new_cache)
        for first, new in zip(starts, out.tokens, strict=True):
            words = [first] + tokenizer.decode(new).split()
            sentences += [" ".join(s) for s in split_sentences(words)]
        round_ += 1
    return sentences[:n_sentences]


def grammaticality(
    model: MiniGPT, tokenizer: Tokenizer, n_sentences: int = 1000, *, temperature: float = 1.0, seed: int = 0,
    new_cache: CacheFactory | None = None,
) -> Grammaticality:
    """Fraction of `n_sentences` sampled sentences that `is_grammatical` accepts (Chapter 5's quality bar)."""
    sentences = sample_sentences(model, tokenizer, n_sentences, temperature=temperature, seed=seed,
                                 new_cache=new_cache)
    bad = [s for s in sentences if not is_grammatical(s)]
    return Grammaticality(n_sentences=len(sentences), n_grammatical=len(sentences) - len(bad),
                          examples_bad=tuple(bad[:5]))


@torch.no_grad()
def greedy_next_word(model: MiniGPT, tokenizer: Tokenizer, prompt: str) -> str:
    """The model's most likely next word after `prompt`."""
    out = generate(model, prompt, 1, tokenizer=tokenizer)
    return tokenizer.decode(out.tokens[0])
