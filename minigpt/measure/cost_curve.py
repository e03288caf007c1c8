"""The cost-curve experiment of Chapter 6: cost per step and in total vs S, with and without the cache.

The formulas of Chapter 1 are polynomials. With the KV cache a decode step costs Eq. (1.3),
constant + linear in the cached tokens S; without it the same step re-runs a forward over all
S + 1 tokens, Eq. (1.2) with P = S + 1, constant + linear + quadratic in S. Summed over a
generation of D new tokens they become Eq. (1.2) + Eq. (1.4), quadratic in D, and Eq. (1.5),
cubic in D. This module gives the exact polynomial coefficients of those formulas (from
`minigpt.costs`, never re-derived), least-squares fits of measured curves on the same powers, and
the FLOPs that `FlopCounterMode` counts for one step of the real model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np
import torch

from minigpt import costs
from minigpt.costs.shape import ModelShape
from minigpt.measure import count_flops
from minigpt.runtime.generate import decode_step
from minigpt.runtime.model import MiniGPT

STEP_POWERS: dict[bool, tuple[int, ...]] = {True: (0, 1), False: (0, 1, 2)}
"""Powers of S in one step's cost: Eq. (6.1) with the cache (True), Eq. (6.2) without."""

TOTAL_POWERS: dict[bool, tuple[int, ...]] = {True: (0, 1, 2), False: (0, 1, 2, 3)}
"""Powers of D in a generation's cost, Eq. (1.2) + (1.4) with the cache (True) and Eq. (1.5) without."""


def step_flops(config: ModelShape, *, S: int, cached: bool) -> int:
    """FLOPs of the step that sees S earlier tokens: Eq. (6.1) with the cache (Eq. (1.3)), Eq. (6.2) without
    (Eq. (1.2) at P = S + 1).

    Both include the LM head at one position (Eq. (1.6)), as generation computes it. `config` is any
    model shape `costs.of` takes (a `ModelConfig` or a `ModelPreset`, SwiGLU included).
    """
    if cached:
        return costs.of(config).decode_step_flops(S=S)
    return costs.of(config).prefill_flops(P=S + 1)


def total_flops(config: ModelShape, *, P: int, D: int, cached: bool) -> int:
    """FLOPs of generating D tokens after a P-token prompt: Eq. (1.2) + Eq. (1.4) cached, Eq. (1.5) not."""
    if cached:
        return costs.of(config).generation_flops(P=P, D=D)
    return costs.of(config).no_cache_flops(P=P, D=D)


def polynomial_coefficients(f: Callable[[int], int], powers: Sequence[int], start: int = 0) -> list[Fraction]:
    """Exact coefficients c_k with f(x) = Σ c_k·x^k, for an integer polynomial f on the given powers.

    Solves the Vandermonde system at x = start, start+1, … in rational arithmetic, then checks the
    result at one more point, so a formula that is not such a polynomial raises ValueError.
    """
    powers = list(powers)
    n = len(powers)
    xs = list(range(start, start + n))
    rows = [[Fraction(x) ** k for k in powers] + [Fraction(f(x))] for x in xs]
    for col in range(n):  # Gauss-Jordan elimination, exact
        pivot = next(r for r in range(col, n) if rows[r][col] != 0)
        rows[col], rows[pivot] = rows[pivot], rows[col]
        rows[col] = [v / rows[col][col] for v in rows[col]]
        for r in range(n):
            if r != col and rows[r][col] != 0:
                factor = rows[r][col]
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[col], strict=True)]
    coeffs = [rows[i][n] for i in range(n)]
    check = start + n + 3
    if sum(c * Fraction(check) ** k for c, k in zip(coeffs, powers, strict=True)) != f(check):
        raise ValueError(f"f is not a polynomial on powers {powers}")
    return coeffs


def step_coefficients(config: ModelShape, *, cached: bool) -> list[Fraction]:
    """Exact coefficients in S of `step_flops` on `STEP_POWERS[cached]` (constant, S, S²)."""
    return polynomial_coefficients(lambda S: step_flops(config, S=S, cached=cached), STEP_POWERS[cached])


def total_coefficients(config: ModelShape, *, P: int, cached: bool) -> list[Fraction]:
    """Exact coefficients in D of `total_flops` on `TOTAL_POWERS[cached]` (constant, D, D², D³)."""
    return polynomial_coefficients(
        lambda D: total_flops(config, P=P, D=D, cached=cached), TOTAL_POWERS[cached], start=1
    )


def fit_powers(x: Sequence[float], y: Sequence[float], powers: Sequence[int]) -> np.ndarray:
    """Least-squares coefficients c with y ≈ Σ c_k·x^k (numpy lstsq; columns scaled for conditioning)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D of equal length, got shapes {x.shape} and {y.shape}")
    if len(x) < len(powers):
        raise ValueError(f"need at least {len(powers)} points to fit powers {list(powers)}, got {len(x)}")
    A = np.stack([x**k for k in powers], axis=1)
    scale = np.abs(A).max(axis=0)
    scale[scale == 0] = 1.0
    c, *_ = np.linalg.lstsq(A / scale, y, rcond=None)
    return c / scale


def evaluate(coeffs: Sequence[float], powers: Sequence[int], x: Sequence[float] | float) -> np.ndarray:
    """Σ c_k·x^k at the points x."""
    x = np.asarray(x, dtype=np.float64)
    return sum(float(c) * x**k for c, k in zip(coeffs, powers, strict=True))


@torch.no_grad()
def counted_step_flops(model: MiniGPT, *, S: int, cached: bool, seed: int = 0) -> int:
    """FLOPs `FlopCounterMode` counts for the real step that sees S earlier tokens (B = 1).

    Cached: a cache holding S tokens and one `decode_step`. Not cached: `model(tokens, last_only=True)`
    over all S + 1 tokens, as `generate(..., use_cache=False)` does.
    """
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(model.config.V, (1, S + 1), generator=g).to(model.device)
    if not cached:
        return count_flops(lambda: model(tokens, last_only=True))
    cache = model.new_cache(1)
    if S > 0:
        model(tokens[:, :S], cache)
    return count_flops(lambda: decode_step(model, tokens[:, S], cache))
