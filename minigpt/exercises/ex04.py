"""Exercise 4 (Chapter 4, wall clock): TTFT + decode time, Eq. (4.1), and reading measurements."""

from __future__ import annotations

import random

import numpy as np

from minigpt import costs
from minigpt.exercises.spec import N_, Exercise, Question, close, pair
from minigpt.runtime.meters import RequestMeters

CLOCK_EDGES = ("D = 1: D - 1 decode tokens (the first one counted in the TTFT) instead of D",)
METER_EDGES = ("a single decode step: the generated total (steps + 1) instead of the decode steps",)
FIT_EDGES = ("noisy totals: an intercept (a column of ones) fitted as well",)


def _clock_cases(rng: random.Random) -> list[dict]:
    """The edge first (`CLOCK_EDGES`), then random."""
    return [dict(P=rng.randint(1, 32768), D=D, prefill_tok_s=10 ** rng.uniform(2, 5),
                 decode_tok_s=10 ** rng.uniform(0, 3)) for D in [1] + [rng.randint(1, 4096) for _ in range(7)]]


def _meter_cases(rng: random.Random) -> list[dict]:
    """The edge first (`METER_EDGES`: D = 2 generated tokens, one decode step), then random."""
    cases = []
    for D in [2] + [rng.randint(2, 2000) for _ in range(7)]:
        cases.append(dict(prompt_tokens=rng.randint(1, 32768), prefill_s=rng.uniform(0.01, 20),
                          decode_steps=D - 1, decode_s=rng.uniform(0.1, 200)))
    return cases


def _rates(prompt_tokens: int, prefill_s: float, decode_steps: int, decode_s: float) -> tuple[float, float]:
    m = RequestMeters(prompt_tokens=prompt_tokens, prefill_s=prefill_s, generated_tokens=decode_steps + 1,
                      decode_steps=decode_steps, decode_s=decode_s)
    return m.prefill_tok_s, m.decode_tok_s


def _fit_cases(rng: random.Random) -> list[dict]:
    """Four noisy sets of timings: every one is the edge of `FIT_EDGES` (an intercept fits the noise)."""
    cases = []
    for _ in range(4):
        prefill, decode = 10 ** rng.uniform(2.5, 4.5), 10 ** rng.uniform(0.7, 2.3)
        P = [rng.randint(50, 8000) for _ in range(12)]
        D = [rng.randint(10, 1000) for _ in range(12)]
        total = [costs.wall_clock(P=p, D=n, prefill_tok_s=prefill, decode_tok_s=decode).total_s
                 * rng.uniform(0.97, 1.03) for p, n in zip(P, D, strict=True)]
        cases.append(dict(P=P, D=D, total_s=total))
    return cases


def _fit(P: list[int], D: list[int], total_s: list[float]) -> tuple[float, float]:
    A = np.array([P, D], dtype=np.float64).T
    (a, b), *_ = np.linalg.lstsq(A, np.array(total_s, dtype=np.float64), rcond=None)
    return float(1 / a), float(1 / b)


EXERCISE = Exercise(
    id="ex04",
    notebook="ex04_wall_clock.ipynb",
    title="Wall clock",
    questions=(
        Question(
            "q1", "wall_clock_s", "wall_clock_s(P, D, prefill_tok_s, decode_tok_s) -> float", _clock_cases,
            lambda **kw: costs.wall_clock(**kw).total_s, close(1e-9),
            N_("Eq. (4.1): P / prefill_tok_s (TTFT) + D / decode_tok_s."),
            edges=CLOCK_EDGES,
        ),
        Question(
            "q2", "decode_share", "decode_share(P, D, prefill_tok_s, decode_tok_s) -> float", _clock_cases,
            lambda **kw: costs.wall_clock(**kw).decode_share, close(1e-9),
            N_("the decode term of Eq. (4.1) divided by the total (a fraction between 0 and 1, not a percentage)."),
            edges=CLOCK_EDGES,
        ),
        Question(
            "q3", "rates_from_meters",
            "rates_from_meters(prompt_tokens, prefill_s, decode_steps, decode_s) -> (prefill_tok_s, decode_tok_s)",
            _meter_cases, _rates, pair(close(1e-9), close(1e-9), ("prefill_tok_s", "decode_tok_s")),
            N_("prefill rate = prompt tokens / prefill seconds; decode rate = decode steps / decode seconds "
               "(the tokens the decode steps produced, not the generated total). Return a tuple of two floats."),
            edges=METER_EDGES,
        ),
        Question(
            "q4", "fit_rates", "fit_rates(P, D, total_s) -> (prefill_tok_s, decode_tok_s)", _fit_cases, _fit,
            pair(close(1e-6), close(1e-6), ("prefill_tok_s", "decode_tok_s")),
            N_("Eq. (4.1) is linear in 1/prefill_tok_s and 1/decode_tok_s: fit total_s ≈ a·P + b·D by least "
               "squares with no intercept (np.linalg.lstsq on the columns P and D), then return (1/a, 1/b)."),
            edges=FIT_EDGES,
        ),
    ),
)
