"""The exact output distribution of a random procedure, by running it once per path through its draws.

A procedure that takes its randomness only from `draw(probs)` (one token per row of `probs`, like
`torch.multinomial`) and `coin(probs)` (True with probability `probs`, element by element) has
finitely many paths when the rows are small. `ExactDraws.run(fn)` runs `fn` once per path, in
depth-first order, each time answering every draw with the path's choice, and returns every
outcome with its probability (the product of the chosen options' probabilities). Zero-probability
options are skipped, so a one-hot row costs one path. The cost is one run of `fn` per path:
keep the vocabulary, the batch and the number of draws small (hundreds to a few thousand paths).

Chapter 17's tests and exercise 14 use it to compare speculative sampling's output distribution
with the target's, exactly (no sampling noise): any rule that changes the distribution by more
than float rounding is caught.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import torch


class ExactDraws:
    """Answers `draw` and `coin` along one path at a time; `run(fn)` enumerates every path of `fn`."""

    def __init__(self, max_paths: int = 100_000) -> None:
        if isinstance(max_paths, bool) or not isinstance(max_paths, int) or max_paths < 1:
            raise ValueError(f"max_paths must be a positive integer, got {max_paths!r}")
        self.max_paths = max_paths
        self._path: list[int] = []  # the option chosen at each draw of the current path
        self._counts: list[int] = []  # how many options each of those draws had
        self._depth = 0
        self._weight = 1.0

    def _choose(self, options: list[tuple[tuple, float]]) -> tuple:
        k = self._depth
        if k == len(self._path):  # a draw this path has not reached before: its first option
            self._path.append(0)
            self._counts.append(len(options))
        elif self._counts[k] != len(options):
            raise RuntimeError("the procedure is not deterministic given its draws: a replay saw other options")
        choice, weight = options[self._path[k]]
        self._depth += 1
        self._weight *= weight
        return choice

    def draw(self, probs: torch.Tensor, generator: Any = None) -> torch.Tensor:
        """One token per row of `probs` `[..., V]` (rows normalised, as `torch.multinomial` does)."""
        flat = probs.detach().reshape(-1, probs.shape[-1]).double().cpu()
        flat = flat / flat.sum(-1, keepdim=True)
        per_row = [[(v, float(row[v])) for v in range(row.numel()) if row[v] > 0] for row in flat]
        options = [(tuple(v for v, _ in combo), math.prod(w for _, w in combo))
                   for combo in itertools.product(*per_row)]
        tokens = self._choose(options)
        return torch.tensor(tokens, dtype=torch.long, device=probs.device).view(probs.shape[:-1])

    def coin(self, probs: torch.Tensor, generator: Any = None) -> torch.Tensor:
        """True with probability `probs` per element (u < probs for u uniform on [0, 1))."""
        flat = probs.detach().reshape(-1).double().cpu()
        per = [[(True, 1.0)] if a >= 1 else [(False, 1.0)] if a <= 0 else [(True, float(a)), (False, 1 - float(a))]
               for a in flat.tolist()]
        options = [(tuple(v for v, _ in combo), math.prod(w for _, w in combo))
                   for combo in itertools.product(*per)]
        outcome = self._choose(options)
        return torch.tensor(outcome, dtype=torch.bool, device=probs.device).view(probs.shape)

    def run(self, fn: Callable[[], Any]) -> list[tuple[Any, float]]:
        """Every outcome of `fn()` with its probability, one entry per path (the probabilities sum to 1)."""
        self._path, self._counts, outcomes = [], [], []
        while True:
            self._depth, self._weight = 0, 1.0
            outcomes.append((fn(), self._weight))
            if len(outcomes) > self.max_paths:
                raise RuntimeError(f"more than max_paths={self.max_paths} paths: make the procedure smaller")
            del self._path[self._depth :], self._counts[self._depth :]
            while self._path and self._path[-1] + 1 == self._counts[-1]:  # backtrack past exhausted draws
                self._path.pop()
                self._counts.pop()
            if not self._path:
                return outcomes
            self._path[-1] += 1
