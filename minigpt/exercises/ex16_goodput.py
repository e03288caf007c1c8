"""Exercise 16's second question (Chapter 19): the goodput of a split, from the queueing of Question 3's driver.

A split of N prefill and M decode workers serves one trace per request rate. Each trace is routed as Question 3
routes it (`ex16_routing.route`: the driver's rule, `disagg_admission.least_loaded`, and its time model: a prefill
worker runs its prompts one after another, P · `prefill_ms_per_token` ms each; the first token at the prefill's
end; the other D − 1 one decode step each), so each request's TTFT and TPOT come out of the queue the student
simulates; then Eq. (19.3) per trace (`costs.slo_attainment`, a one-token request judged by its TTFT alone) and
Eq. (19.4) over the rates, per chip (`costs.goodput`, chips = N + M). Chapter 19 prints the two equations, not the
queue that produces the times. Every time is an integer number of ms, so a time at its objective is a tie, never a
rounding.

`_replay` is the same computation in plain Python with one plausible wrong neighbour (`_NEIGHBOURS`); the case
generator draws, for each, until that neighbour answers otherwise (`GOODPUT_EDGES`), then random cases.
"""

from __future__ import annotations

import math
import random
from typing import Any

from minigpt import costs
from minigpt.exercises.ex16_routing import route
from minigpt.exercises.ex16_transfer import _short
from minigpt.exercises.spec import _, fmt_num
from minigpt.serving.meters import time_per_output_token

#: The edges, one per wrong neighbour (`_NEIGHBOURS`, same order); case i is drawn until neighbour i answers
#: otherwise than the package.
GOODPUT_EDGES = (
    "a request that waits for a busy prefill worker: its TTFT from the prefill's start (the queue left out)",
    "prefill workers that free at different times: the request sent to the one that frees first, not to the one "
    "with the fewest prompt tokens outstanding",
    "a prefill that ends at the very time of an arrival: still counted in its worker's load",
    "a TPOT objective just under one decode step: TPOT over D tokens instead of the D - 1 gaps",
    "a one-token request within the TTFT objective: counted as a miss (it has no TPOT)",
    "a one-token request: left out of its run's share instead of judged by its TTFT alone",
    "a TTFT exactly at its objective: a miss (< instead of <=)",
    "a decode step exactly at the TPOT objective: a miss (< instead of <=)",
    "a run at exactly 90 %: a miss (above 90 % asked for, not at least)",
    "a run that misses below one that passes: the highest passing rate, not the last before the first miss",
    "runs not given in increasing rate: the attainments and the walk in the given order",
    "a split of several chips: the goodput not divided by the prefill and decode workers",
)
_NEIGHBOURS = ("no_wait", "work_left", "at_arrival", "tpot_over_d", "one_token_miss", "one_token_dropped",
               "strict_ttft", "strict_tpot", "strict_target", "no_stop", "unsorted", "whole")
#: The routing slips among them, replayed by `ex16_routing.route(kind=...)` itself.
_ROUTING = ("no_wait", "work_left", "at_arrival")
#: Draws allowed for one edge before the generator gives up (the rarest, a prefill ending at an arrival's time
#: that changes an attainment, is about 3 % of draws).
DRAWS = 5_000
#: Requests in each trace (so that 90 % is 9 of them, a tie that happens).
REQUESTS = 10


def split_goodput(runs: list[dict], prefill_workers: int, decode_workers: int, prefill_ms_per_token: int,
                  decode_step_ms: int, ttft_slo: int, tpot_slo: int) -> tuple[list[float], float]:
    """The package's answer: each trace (increasing rate) routed by `ex16_routing.route`, its requests' token times
    [arrival + TTFT, then one decode step each], TPOT by the engine's meter (`time_per_output_token`: nan for one
    token), `costs.slo_attainment` per trace and `costs.goodput` per chip over the N + M workers."""
    ordered = sorted(runs, key=lambda r: r["rate"])
    attainments = []
    for run in ordered:
        rows = route(run["arrivals_ms"], run["prompt_tokens"], run["new_tokens"], prefill_workers, decode_workers,
                     prefill_ms_per_token, decode_step_ms)
        ttft = [row[2] for row in rows]
        tpot = [time_per_output_token([t + f + i * decode_step_ms for i in range(D)])
                for t, f, D in zip(run["arrivals_ms"], ttft, run["new_tokens"], strict=True)]
        attainments.append(costs.slo_attainment(ttft=ttft, tpot=tpot, ttft_slo=ttft_slo, tpot_slo=tpot_slo))
    return attainments, costs.goodput(rates=[r["rate"] for r in ordered], attainments=attainments, target=0.9,
                                      chips=prefill_workers + decode_workers)


def _replay(runs: list[dict], prefill_workers: int, decode_workers: int, prefill_ms_per_token: int,
            decode_step_ms: int, ttft_slo: int, tpot_slo: int, wrong: str | None = None
            ) -> tuple[list[float], float]:
    """`split_goodput` in plain Python, or with its wrong neighbour `wrong` (one of `_NEIGHBOURS`)."""
    ordered = runs if wrong == "unsorted" else sorted(runs, key=lambda r: r["rate"])
    attainments = []
    for run in ordered:
        rows = route(run["arrivals_ms"], run["prompt_tokens"], run["new_tokens"], prefill_workers, decode_workers,
                     prefill_ms_per_token, decode_step_ms, kind=wrong if wrong in _ROUTING else None)
        ok = n = 0
        for (_p, _d, ttft), D in zip(rows, run["new_tokens"], strict=True):
            if D == 1 and wrong == "one_token_dropped":
                continue
            n += 1
            ttft_ok = ttft < ttft_slo if wrong == "strict_ttft" else ttft <= ttft_slo
            tpot = (D - 1) * decode_step_ms / (D if wrong == "tpot_over_d" else D - 1) if D > 1 else None
            if tpot is None:
                tpot_ok = wrong != "one_token_miss"
            else:
                tpot_ok = tpot < tpot_slo if wrong == "strict_tpot" else tpot <= tpot_slo
            ok += ttft_ok and tpot_ok
        attainments.append(ok / n if n else 1.0)
    best = 0.0
    for run, a in zip(ordered, attainments, strict=True):
        if a > 0.9 if wrong == "strict_target" else a >= 0.9:
            best = run["rate"]
        elif wrong != "no_stop":
            break
    return attainments, best / (1 if wrong == "whole" else prefill_workers + decode_workers)


def _case(rng: random.Random) -> dict[str, Any]:
    """One to three workers in each pool, 1 to 3 ms a prompt token, decode steps of 5 to 20 ms; three to five
    traces of `REQUESTS` requests at increasing integer rates (the first a fifth to three fifths of what the
    prefill pool serves, each next 1.3 to 2 times the last), given shuffled; prompts of 1 to 60 tokens, 1 to 40
    new tokens (one token a fifth of the time); a TTFT objective half the time one of the TTFTs of a trace (a tie),
    else 20 to 120 prompt tokens' time; a TPOT objective one decode step, 1 or 2 ms under it, or 1 to 10 ms over
    it (even odds on the last three fifths)."""
    N, M, m, step = rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 3), rng.randint(5, 20)
    rate = max(1, round(N * 1000 / (30 * m) * rng.uniform(0.2, 0.6)))
    runs = []
    for _k in range(rng.randint(3, 5)):
        t, arrivals = 0, []
        for _i in range(REQUESTS):
            t += round(rng.expovariate(rate / 1000))
            arrivals.append(t)
        runs.append(dict(rate=rate, arrivals_ms=arrivals, prompt_tokens=[rng.randint(1, 60) for _a in arrivals],
                         new_tokens=[1 if rng.random() < 0.2 else rng.randint(2, 40) for _a in arrivals]))
        rate = max(rate + 1, round(rate * rng.uniform(1.3, 2.0)))
    rng.shuffle(runs)
    if rng.random() < 0.5:
        run = rng.choice(runs)
        rows = route(run["arrivals_ms"], run["prompt_tokens"], run["new_tokens"], N, M, m, step)
        ttft_slo = rng.choice(rows)[2]
    else:
        ttft_slo = rng.randint(20, 120) * m
    roll = rng.random()
    tpot_slo = step - rng.randint(1, 2) if roll < 0.2 else step if roll < 0.4 else step + rng.randint(1, 10)
    return dict(runs=runs, prefill_workers=N, decode_workers=M, prefill_ms_per_token=m, decode_step_ms=step,
                ttft_slo=ttft_slo, tpot_slo=tpot_slo)


def _separates(case: dict[str, Any], wrong: str) -> bool:
    """Whether the neighbour `wrong` answers otherwise than the package on the case (attainments or goodput)."""
    return _replay(**case, wrong=wrong) != _replay(**case)


def goodput_cases(rng: random.Random) -> list[dict[str, Any]]:
    """One case per wrong neighbour (`GOODPUT_EDGES`), each drawn until that neighbour answers otherwise, then
    three random ones."""
    cases = []
    for wrong in _NEIGHBOURS:
        for _draw in range(DRAWS):
            case = _case(rng)
            if _separates(case, wrong):
                break
        else:
            raise RuntimeError(f"no case in {DRAWS:,} draws separates the goodput from {wrong!r}")
        cases.append(case)
    return cases + [_case(rng) for _ in range(3)]


def goodput_check(expected: Any, actual: Any) -> str | None:
    """The attainments (a list, or an array or tensor of them) and the goodput, each to 1e-9; the first
    difference said in words."""
    att, g = expected
    if isinstance(actual, (tuple, list)) and len(actual) == 2 and isinstance(actual[0], dict) \
            and isinstance(actual[0].get("$tensor"), list):
        actual = [actual[0]["$tensor"], actual[1]]  # a numpy array or tensor of attainments, as elsewhere

    def close(a: Any, e: float) -> bool:
        return not isinstance(a, bool) and isinstance(a, (int, float)) and math.isclose(a, e, rel_tol=1e-9,
                                                                                         abs_tol=1e-12)

    if not isinstance(actual, (tuple, list)) or len(actual) != 2 or not isinstance(actual[0], (list, tuple)):
        return _("expected a pair (attainments in increasing rate, goodput), got {actual}").format(
            actual=_short(actual))
    got, gg = actual
    if len(got) != len(att):
        return _("expected {n} attainments, one per run in increasing rate, got {n_got}").format(n=len(att),
                                                                                              n_got=len(got))
    for i, (e, a) in enumerate(zip(att, got, strict=True)):
        if not close(a, e):
            return _("the attainment of run {rank} (the runs in increasing rate) should be {expected}, you have "
                     "{actual}: route its requests as in Question 3, a request's TTFT running from its arrival "
                     "(the wait for its prefill worker included); it attains if TTFT <= ttft_slo AND, with two "
                     "tokens or more, TPOT = (last - first) / (D - 1) <= tpot_slo").format(
                rank=i + 1, expected=fmt_num(e, ".2f"), actual=_short(a))
    if not close(gg, g):
        return _("attainments right; goodput should be {expected} req/s per chip, you have {actual}: the highest "
                 "rate whose attainment is at least 90 %, counting up from the lowest rate and stopping at the "
                 "first that misses (0.0 if the lowest misses), divided by the split's chips").format(
            expected=fmt_num(g, ".6g"), actual=_short(gg))
    return None
