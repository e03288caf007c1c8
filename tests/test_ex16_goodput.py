"""Exercise 16 Question 2 (`minigpt.exercises.ex16_goodput`): the goodput of a split of prefill and decode workers
over a few request rates, each trace's times out of the queue of Question 3's routing. The oracle is the package
(`ex16_routing.route`, the engine's TPOT meter, `costs.slo_attainment`, `costs.goodput`); the case generator
picks its edges with a plain replay (`_replay`) and its wrong neighbours. Here: the replay is the oracle, a
reference written apart agrees and the instructors' solution passes, each edge separates its neighbour under
every seed, plausible mutants of the reference solution fail (tests/test_exercise_mechanisms.py), the generator
spans its ranges and gives up when it must, the check takes an array too, and one case worked by hand. (The named
wrong answers, written apart, lose under every seed in `tests/test_seed_independence_ex14_18.py`.)"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from minigpt.exercises import EXERCISES, ex16_goodput, run_check

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "exercises" / "solutions" / "ex16_disaggregation.py"
SEEDS = range(100)


def drawn(seed: int) -> list[dict]:
    return EXERCISES["ex16"].question("q2").cases(random.Random(seed))


def random_cases(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [ex16_goodput._case(rng) for _ in range(n)]


def test_the_replay_is_the_oracle() -> None:
    """`_replay`, which picks the edges, must answer what the package answers (the routing walk, the engine's
    TPOT meter, Eqs. 19.3-19.4 per chip) on 2,000 random cases and every seed's edges. Catches a replay that
    drifts from the oracle: the edges would then separate a rule the grader does not hold."""
    for case in random_cases(2000, seed=1) + [c for seed in range(20) for c in drawn(seed)]:
        assert ex16_goodput._replay(**case) == ex16_goodput.split_goodput(**case), case


def goodput_apart(runs: list[dict], prefill_workers: int, decode_workers: int, prefill_ms_per_token: int,
                  decode_step_ms: int, ttft_slo: int, tpot_slo: int) -> tuple[list[float], float]:
    """A reference written apart from the package: every request's prefill kept as an interval on its worker,
    loads read off the intervals that straddle the arrival, each token's time written out, the goodput by the
    prefix of passing runs."""
    chips = prefill_workers + decode_workers
    rated = []
    for run in sorted(runs, key=lambda r: r["rate"]):
        spans: list[list[tuple[int, int, int]]] = [[] for _ in range(prefill_workers)]  # (start, end, P)
        lives: list[list[int]] = [[] for _ in range(decode_workers)]  # each request's last token
        good = 0
        for t, P, D in zip(run["arrivals_ms"], run["prompt_tokens"], run["new_tokens"], strict=True):
            p = min(range(prefill_workers), key=lambda k: (sum(n for _, e, n in spans[k] if e > t), k))
            d = min(range(decode_workers), key=lambda k: (sum(1 for last in lives[k] if last > t), k))
            start = max([t] + [e for _, e, _ in spans[p]])
            end = start + P * prefill_ms_per_token
            spans[p].append((start, end, P))
            tokens = [end + i * decode_step_ms for i in range(D)]
            lives[d].append(tokens[-1])
            tpot_met = len(tokens) == 1 or (tokens[-1] - tokens[0]) / (len(tokens) - 1) <= tpot_slo
            good += tokens[0] - t <= ttft_slo and tpot_met
        rated.append((run["rate"], good / len(run["arrivals_ms"])))
    passing = 0
    while passing < len(rated) and rated[passing][1] >= 0.9:
        passing += 1
    return [a for _, a in rated], (rated[passing - 1][0] / chips if passing else 0.0)


def test_a_reference_written_apart_agrees_and_the_solution_passes() -> None:
    """A reference written apart from the module agrees with the oracle on 1,000 random cases and every seed's
    edges; the instructors' solution passes `check` under four seeds. Catches an oracle that answers something
    other than the question's statement."""
    for case in random_cases(1000, seed=2) + [c for seed in range(10) for c in drawn(seed)]:
        assert goodput_apart(**case) == ex16_goodput.split_goodput(**case), case
    namespace: dict = {}
    exec(compile(SOLUTION.read_text(encoding="utf-8"), str(SOLUTION), "exec"), namespace)  # noqa: S102
    for seed in range(4):
        result = run_check("ex16.q2", namespace["split_goodput"], seed=seed)
        assert result.status == "pass", result.message


def test_each_edge_separates_its_neighbour_under_every_seed() -> None:
    """Case i (i < 12) answers otherwise under neighbour i than under the package's rule, for 100 seeds; the
    edges are the question's first cases, one per name. Catches an edge drawn by luck (a class seed would decide
    whether a wrong answer passes) or moved to another slot."""
    q = EXERCISES["ex16"].question("q2")
    assert q.edges == ex16_goodput.GOODPUT_EDGES and len(q.edges) == len(ex16_goodput._NEIGHBOURS) == 12
    for seed in SEEDS:
        cases = drawn(seed)
        assert len(cases) == 15
        for case, wrong in zip(cases, ex16_goodput._NEIGHBOURS, strict=False):
            assert ex16_goodput._replay(**case, wrong=wrong) != ex16_goodput._replay(**case), (seed, wrong)


def test_the_generator_spans_its_documented_ranges() -> None:
    """One to three workers a pool, 1 to 3 ms a prompt token, decode steps of 5 to 20 ms, three to five traces of
    ten requests at increasing integer rates, prompts of 1 to 60 tokens, 1 to 40 new tokens, a TPOT objective
    from two under the step to ten over it, a TTFT objective 20 to 120 prompt tokens' time or one of the TTFTs:
    every case within them and both ends of each drawn. Catches a range moved by one (a one-token request, a
    one-worker pool, a TPOT objective at the step never drawn) and a case outside the question."""
    seen: dict[str, set] = {k: set() for k in ("N", "M", "m", "step", "runs", "P", "D", "tpot", "ttft")}
    for seed in SEEDS:
        for case in drawn(seed):
            assert set(case) == {"runs", "prefill_workers", "decode_workers", "prefill_ms_per_token",
                                 "decode_step_ms", "ttft_slo", "tpot_slo"}
            N, M, m, step = (case[k] for k in ("prefill_workers", "decode_workers", "prefill_ms_per_token",
                                              "decode_step_ms"))
            assert 1 <= N <= 3 and 1 <= M <= 3 and 1 <= m <= 3 and 5 <= step <= 20
            assert -2 <= case["tpot_slo"] - step <= 10 and case["tpot_slo"] > 0
            rates = sorted(r["rate"] for r in case["runs"])
            assert 3 <= len(rates) <= 5 and rates[0] >= 1 and len(set(rates)) == len(rates)
            ttfts = set()
            for run in case["runs"]:
                arrivals = run["arrivals_ms"]
                assert len(arrivals) == len(run["prompt_tokens"]) == len(run["new_tokens"]) == 10
                assert arrivals == sorted(arrivals) and arrivals[0] >= 0
                assert all(isinstance(x, int) for x in arrivals + run["prompt_tokens"] + run["new_tokens"])
                assert all(1 <= P <= 60 for P in run["prompt_tokens"]) and all(1 <= D <= 40 for D in run["new_tokens"])
                seen["P"].update(run["prompt_tokens"]), seen["D"].update(run["new_tokens"])
                ttfts.update(row[2] for row in ex16_goodput.route(run["arrivals_ms"], run["prompt_tokens"],
                                                                 run["new_tokens"], N, M, m, step))
            assert case["ttft_slo"] in ttfts or 20 * m <= case["ttft_slo"] <= 120 * m
            seen["N"].add(N), seen["M"].add(M), seen["m"].add(m), seen["step"].add(step)
            seen["runs"].add(len(rates)), seen["tpot"].add(case["tpot_slo"] - step)
            seen["ttft"].add(case["ttft_slo"] // m if case["ttft_slo"] % m == 0 else None)
    assert seen["N"] == seen["M"] == seen["m"] == {1, 2, 3} and seen["step"] == set(range(5, 21))
    assert seen["runs"] == {3, 4, 5} and seen["P"] == set(range(1, 61)) and seen["D"] == set(range(1, 41))
    assert seen["tpot"] == set(range(-2, 11)) and {20, 120} <= seen["ttft"]


def test_the_generator_gives_up_after_its_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """A neighbour no draw separates raises after `DRAWS` draws instead of looping for ever or handing back a
    case that does not separate it."""
    monkeypatch.setattr(ex16_goodput, "DRAWS", 5)
    monkeypatch.setattr(ex16_goodput, "_separates", lambda case, wrong: wrong != "at_arrival")
    with pytest.raises(RuntimeError, match="no case in 5 draws separates the goodput from 'at_arrival'"):
        ex16_goodput.goodput_cases(random.Random(0))


def test_the_check_takes_the_attainments_as_an_array_too() -> None:
    """A numpy array (or tensor) of attainments arrives as a tensor on the wire, as in every other question;
    the bug it catches: a check that wanted a list and marked a correct array down. A wrong attainment gets the
    rule in words, with its names in capitals as the chapter writes them."""
    import numpy as np
    import torch

    from minigpt.exercises.wire import encode

    check = ex16_goodput.goodput_check
    expected = ([1.0, 0.5], 10.0 / 3)
    assert check(expected, encode((np.array([1.0, 0.5]), 10.0 / 3))) is None
    assert check(expected, encode((torch.tensor([1.0, 0.5], dtype=torch.float64), 10.0 / 3))) is None
    assert check(expected, encode((np.array([1.0, 0.4]), 10.0 / 3))) is not None
    assert check(expected, encode(([1.0, 0.5], 10.0))).startswith("attainments right; goodput should be 3.33333 ")
    assert check(expected, encode(([1.0, 0.4], 10.0 / 3))) == (
        "the attainment of run 2 (the runs in increasing rate) should be 0.50, you have 0.4: route its requests as "
        "in Question 3, a request's TTFT running from its arrival (the wait for its prefill worker included); it "
        "attains if TTFT <= ttft_slo AND, with two tokens or more, TPOT = (last - first) / (D - 1) <= tpot_slo")


def test_the_check_says_what_is_wrong_in_full() -> None:
    """Each of the check's other verdicts, word for word: an output that is not a pair (or whose first item is not
    a list), a list of the wrong length, a wrong goodput; and a value within 1e-12 of an expected 0 passes. The bug
    it catches: a message that lost its numbers (the expected count, the student's value) or tells the student
    nothing, and a shape test whose `or` became `and` (a three-item answer taken as a pair)."""
    check = ex16_goodput.goodput_check
    expected = ([1.0, 0.0], 0.5)
    assert check(expected, [[1.0, 0.0], 0.5, 7]) == (
        "expected a pair (attainments in increasing rate, goodput), got [[1.0, 0.0], 0.5, 7]")
    assert check(expected, ("x", 0.5)) == "expected a pair (attainments in increasing rate, goodput), got ('x', 0.5)"
    assert check(expected, 3) == "expected a pair (attainments in increasing rate, goodput), got 3"
    assert check(expected, ([1.0], 0.5)) == "expected 2 attainments, one per run in increasing rate, got 1"
    assert check(expected, ([1.0, 0.0], 0.25)) == (
        "attainments right; goodput should be 0.5 req/s per chip, you have 0.25: the highest rate whose attainment "
        "is at least 90 %, counting up from the lowest rate and stopping at the first that misses (0.0 if the "
        "lowest misses), divided by the split's chips")
    assert check(([0.0], 0.0), ([1e-13], 1e-13)) is None  # within the absolute tolerance of an expected 0


def test_a_case_worked_by_hand() -> None:
    """Two prefill workers and one decode worker (3 chips), 2 ms a prompt token, 10 ms a decode step, TTFT <= 40
    ms, TPOT <= 10 ms; three runs given out of order.
    Rate 4: arrivals 0, 5, 10, prompts of 10 tokens (20 ms each), 3, 1, 2 tokens. Request 0 -> worker 0, 0-20,
    TTFT 20, TPOT 10 (at the objective: attains). Request 1 at 5: worker 0 holds 10 prompt tokens, worker 1 none
    -> worker 1, 5-25, TTFT 20, one token: judged by its TTFT, attains. Request 2 at 10: 10 tokens on each, the
    tie to worker 0, busy until 20: 20-40, TTFT 30, TPOT 10. Attainment 3/3 = 1.
    Rate 8: four arrivals at 0, prompts 10, 10, 10, 15, tokens 2, 2, 2, 1: worker 0 (0-20, TTFT 20), worker 1
    (0-20, TTFT 20), the tie to worker 0 (20-40, TTFT 40, at the objective: attains), then worker 1 (10 tokens
    against 20; 20-50, TTFT 50 > 40: a miss). Attainment 3/4.
    Rate 6: arrivals 0 and 30, prompts of 5 (10 ms), 2 tokens each: TTFT 10, both attain. Attainment 1.
    In increasing rate [1, 1, 0.75]: the last rate before the first miss is 6, over 3 chips: 2 req/s per chip.
    The queue left out, the rate-8 run's TTFTs are 20, 20, 20, 30 (all attain): goodput 8 / 3. With < for <=,
    request 2 of the rate-8 run misses (2/4) and, for the TPOT, every request of two tokens or more misses
    (rate 4 keeps its one-token request: 1/3; rates 6 and 8 none: goodput 0). In the given order the walk stops
    at the rate-8 run: 4 / 3. Not per chip: 6."""
    runs = [dict(rate=4, arrivals_ms=[0, 5, 10], prompt_tokens=[10, 10, 10], new_tokens=[3, 1, 2]),
            dict(rate=8, arrivals_ms=[0, 0, 0, 0], prompt_tokens=[10, 10, 10, 15], new_tokens=[2, 2, 2, 1]),
            dict(rate=6, arrivals_ms=[0, 30], prompt_tokens=[5, 5], new_tokens=[2, 2])]
    case = dict(runs=runs, prefill_workers=2, decode_workers=1, prefill_ms_per_token=2, decode_step_ms=10,
                ttft_slo=40, tpot_slo=10)
    assert ex16_goodput.split_goodput(**case) == ([1.0, 1.0, 0.75], 2.0)
    assert ex16_goodput._replay(**case, wrong="no_wait") == ([1.0, 1.0, 1.0], 8 / 3)
    assert ex16_goodput._replay(**case, wrong="strict_ttft") == ([1.0, 1.0, 0.5], 2.0)
    assert ex16_goodput._replay(**case, wrong="strict_tpot") == ([1 / 3, 0.0, 0.0], 0.0)
    assert ex16_goodput._replay(**case, wrong="unsorted") == ([1.0, 0.75, 1.0], 4 / 3)
    assert ex16_goodput._replay(**case, wrong="whole") == ([1.0, 1.0, 0.75], 6.0)
