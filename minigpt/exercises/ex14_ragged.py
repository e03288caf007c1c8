"""Exercise 14, Question 1 (`minigpt.exercises.ex14`): one greedy round of a *ragged* batch, where each sequence
keeps its own accepted prefix n_b and its target cache its own length. Chapter 17's `accept_drafts` keeps the
batch's minimum n for every sequence, because MiniGPT's contiguous `KVCache` holds one length for the batch; its
printed code is therefore this question's main wrong neighbour (right only when every sequence accepts as many
drafts).

The oracle is the package, one sequence at a time (`alone`): its tokens are `accept_drafts` at B = 1 (greedy,
one-hot p and q), its cache length what `speculative_generate` leaves in the target's `KVCache` after that round
(its forwards answered from the case's tables by `_Scripted`, its truncate calls its own).

The generator replays the round in plain Python (`replay`) with each plausible wrong neighbour (`NEIGHBOURS`, one
per edge of `RAGGED_EDGES`) and draws each edge case until that neighbour answers otherwise, giving up after
`DRAWS` draws; then `RANDOM_CASES` random batches.
"""

from __future__ import annotations

import random
from typing import Any

import torch
import torch.nn.functional as F

from minigpt.config import ModelConfig
from minigpt.runtime.kv_cache import KVCache
from minigpt.runtime.speculative import accept_drafts, speculative_generate

#: The edges, one per wrong neighbour (`NEIGHBOURS`, same order): case i is drawn until neighbour i answers
#: otherwise than the round.
RAGGED_EDGES = (
    "sequences that accept different counts: each keeps its own n_b, not the batch's minimum (Chapter 17's "
    "rectangular round)",
    "a sequence that accepts every draft: its γ drafts and then the bonus token, not the drafts alone",
    "a sequence that rejects a draft: the correction is the target's argmax there, not the rejected draft",
    "a draft that matches the target after an earlier mismatch: only the leading matches are accepted, not every "
    "match",
    "a sequence that rejects a draft: its prefix ends before the first mismatch, not one draft past it",
    "any round: the cache keeps lengths[b] + n_b rows, not the emitted token's too",
    "a sequence that rejects a draft: its cache rewinds past the rejected drafts, not keeping all γ + 1 rows the "
    "verify pass wrote",
    "any round: the cache keeps the last committed token's row, written by the verify pass, not lengths[b] − 1 "
    "+ n_b",
)
NEIGHBOURS = ("batch minimum", "no bonus", "draft as correction", "every match", "one past", "emitted cached",
              "no rewind", "last row left out")
#: Per edge: the fewest sequences and drafts it is drawn with, and the agreement shares it draws from.
_EDGE_DRAW = ((2, 1, (0.7, 0.85, 0.95)), (1, 1, (0.85, 0.95)), (1, 1, (0.7, 0.85)), (1, 2, (0.5, 0.7)),
              (1, 1, (0.7, 0.85)), (1, 1, (0.7, 0.85, 0.95)), (1, 1, (0.7, 0.85)), (1, 1, (0.7, 0.85, 0.95)))
#: Batches of 1 to `B_MAX` sequences, 1 to `GAMMA_MAX` drafts, token ids below V (`V_MIN` to `V_MAX`), 1 to
#: `LENGTH_MAX` tokens committed before the round; draws allowed for one edge (over 300 seeds none took more
#: than 5).
B_MAX, GAMMA_MAX, V_MIN, V_MAX, LENGTH_MAX = 4, 8, 8, 50, 40
DRAWS, RANDOM_CASES = 10_000, 4


class _Scripted:
    """A model for `speculative_generate` that answers each forward with the next of its `logits`: its caches are
    the package's `KVCache`, advanced by the tokens fed as MiniGPT's forward advances them (weights, and the rows'
    contents, play no part in what a round keeps)."""

    def __init__(self, V: int, S_max: int, logits: list[torch.Tensor]) -> None:
        self.config = ModelConfig(L=1, H=1, H_kv=1, d_h=1, d_ffn=1, V=V, S_max=S_max)
        self._logits = iter(logits)
        self.caches: list[KVCache] = []

    def new_cache(self, B: int = 1, S_max: int | None = None) -> KVCache:
        self.caches.append(KVCache(self.config, B, S_max=S_max))
        return self.caches[-1]

    def __call__(self, tokens: torch.Tensor, cache: KVCache, *, last_only: bool = False) -> torch.Tensor:
        cache.advance(tokens.shape[1])
        return next(self._logits)


def _tokens_alone(row: list[int], best: list[int], V: int) -> list[int]:
    """The package's `accept_drafts` on one sequence (B = 1), greedy, the argmaxes as one-hot distributions."""
    p = F.one_hot(torch.tensor([best]), V).float()  # [1, γ+1, V]
    x = torch.tensor([row])  # [1, γ]
    n, nxt = accept_drafts(p, list(F.one_hot(x, V).float().unbind(1)), list(x.split(1, dim=1)), greedy=True)
    return x[0, :n].tolist() + [int(nxt)]


def _kept_alone(row: list[int], best: list[int], length: int, V: int) -> tuple[int, int]:
    """`speculative_generate` for one round (D = 1) of one sequence of `length` committed tokens, its draft
    proposing `row` and its target's verify pass answering `best`: (drafts it accepted, the rows its target's
    cache keeps)."""
    prefill = [torch.zeros(1, length - 1, V)] if length > 1 else []
    S_max = length + len(row)  # what the run allocates: the verify pass writes γ + 1 rows after length − 1
    draft = _Scripted(V, S_max, prefill + [F.one_hot(torch.tensor([[x]]), V).float() for x in row])
    target = _Scripted(V, S_max, [*prefill, F.one_hot(torch.tensor([best]), V).float()])
    prompt = torch.zeros(1, length, dtype=torch.long)
    result = speculative_generate(target, draft, prompt, 1, gamma=len(row))  # type: ignore[arg-type]
    return result.accepted[0], target.caches[0].S


def alone(drafts: list[list[int]], target_argmax: list[list[int]], lengths: list[int]) -> list[list[Any]]:
    """Each sequence verified alone by the package: [its tokens, the rows its target cache keeps]."""
    V = 1 + max(max(row) for row in drafts + target_argmax)
    out: list[list[Any]] = []
    for row, best, length in zip(drafts, target_argmax, lengths, strict=True):
        tokens = _tokens_alone(row, best, V)
        accepted, kept = _kept_alone(row, best, length, V)
        if accepted != len(tokens) - 1:
            raise RuntimeError(f"accept_drafts kept {len(tokens) - 1} drafts, speculative_generate {accepted}")
        out.append([tokens, kept])
    return out


def replay(drafts: list[list[int]], target_argmax: list[list[int]], lengths: list[int],
           wrong: str | None = None) -> list[list[Any]]:
    """The ragged round in plain Python, or its neighbour `wrong` (`NEIGHBOURS`)."""
    leading = [next((i for i, (x, t) in enumerate(zip(row, best, strict=False)) if x != t), len(row))
               for row, best in zip(drafts, target_argmax, strict=True)]
    out: list[list[Any]] = []
    for b, (row, best, length) in enumerate(zip(drafts, target_argmax, lengths, strict=True)):
        gamma, n = len(row), leading[b]
        if wrong == "batch minimum":
            n = min(leading)
        elif wrong == "every match":
            n = sum(x == t for x, t in zip(row, best, strict=False))
        elif wrong == "one past":
            n = min(n + 1, gamma)
        last = row[n] if wrong == "draft as correction" and n < gamma else best[n]
        tokens = row[:n] + ([] if wrong == "no bonus" and n == gamma else [last])
        kept = {"emitted cached": length + n + 1, "no rewind": length + gamma,
                "last row left out": length + n - 1}.get(wrong or "", length + n)
        out.append([tokens, kept])
    return out


def _batch(rng: random.Random, B_min: int, gamma_min: int, agree: float) -> dict:
    """B sequences of γ drafts each agreeing with the target's argmax with probability `agree` (else another
    token), each with its own committed length."""
    B, gamma, V = rng.randint(B_min, B_MAX), rng.randint(gamma_min, GAMMA_MAX), rng.randint(V_MIN, V_MAX)
    target_argmax = [[rng.randrange(V) for _ in range(gamma + 1)] for _ in range(B)]
    drafts = [[t if rng.random() < agree else (t + rng.randrange(1, V)) % V for t in row[:gamma]]
              for row in target_argmax]
    return dict(drafts=drafts, target_argmax=target_argmax, lengths=[rng.randint(1, LENGTH_MAX) for _ in range(B)])


def separates(case: dict, wrong: str) -> bool:
    """Whether neighbour `wrong` answers `case` otherwise than the ragged round."""
    return replay(**case, wrong=wrong) != replay(**case)


def ragged_cases(rng: random.Random) -> list[dict]:
    """One batch per edge (`RAGGED_EDGES`), each drawn until its neighbour answers otherwise (the batch-minimum
    edge from 2 sequences, the every-match edge from 2 drafts), then `RANDOM_CASES` random batches; 1 to `B_MAX`
    sequences of 1 to `GAMMA_MAX` drafts, token ids below 8 to 50, 1 to `LENGTH_MAX` committed tokens each."""
    cases = []
    for wrong, (B_min, gamma_min, shares) in zip(NEIGHBOURS, _EDGE_DRAW, strict=True):
        for _ in range(DRAWS):
            case = _batch(rng, B_min, gamma_min, rng.choice(shares))
            if separates(case, wrong):
                break
        else:
            raise RuntimeError(f"no batch in {DRAWS:,} draws separates the ragged round from {wrong!r}")
        cases.append(case)
    return cases + [_batch(rng, 1, 1, rng.choice((0.7, 0.85, 0.95))) for _ in range(RANDOM_CASES)]
