"""What each exercise's case generator promises, under many seeds: the edge a question names (`Question.edges`)
is drawn where the question says, with the property that makes it an edge, and every random case is one the
question can be about (a chip no faster than its peak, an operation list of the four documented operations).

The seed tests (`test_seed_independence*.py`) grade named wrong answers under a few seeds: they catch an edge
that stops separating a wrong answer they know. These catch a generator that stops drawing the edge itself (the
edge case drawn only by luck, so a class seed decides whether a wrong answer passes; issue 38), or that draws
cases outside the question (issue 36's sampled survivors: the edge value moved, an `if i == 0` that put the edge
on every other case, a data table faster than the hardware it claims). Generators are cheap; 200 seeds each.
"""

from __future__ import annotations

import math
import random

import pytest
import torch
from mutation_pass import per_mutant

from minigpt.costs import roofline
from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.exercises import EXERCISES, ex07, ex14_cases, ex14_rounds
from minigpt.exercises.wire import build_case

SEEDS = range(200)


def cases(qid: str, seed: int) -> list[dict]:
    """Drawn afresh at every call: a cache kept across tests would hide a mutated generator from `make mutate`
    (its forked runs inherit what the first run drew)."""
    eid, q = qid.split(".")
    return EXERCISES[eid].question(q).cases(random.Random(seed))


def edge(qid: str, words: str) -> None:
    """The question names the edge these tests check (a renamed or dropped edge fails here first)."""
    eid, q = qid.split(".")
    assert any(words in e for e in EXERCISES[eid].question(q).edges), (qid, words)


def test_ex01_the_single_token_prompt_and_the_empty_cache_are_drawn_every_time() -> None:
    edge("ex01.q1", "P = 1")
    edge("ex01.q2", "S = 0")
    for seed in SEEDS:
        assert cases("ex01.q1", seed)[1]["P"] == 1 and cases("ex01.q1", seed)[0]["P"] >= 2
        assert cases("ex01.q2", seed)[0]["S"] == 0


def test_ex06_the_edges_of_questions_1_and_3_are_drawn_every_time() -> None:
    """Under every seed: Q1's first case is a chunk of T >= 2 tokens after S >= 1 without reaching S_max (the
    top-left mask, no mask, a strict one, a write at row 0, the cache forgotten all show there), its second a
    decode step (T = 1 after S >= 1), its third a plain prefill (S = 0, T >= 2), its fourth fills the cache to
    S_max after S >= 1 with T >= 2, and every case but the fourth keeps stale rows past S + T; the queries have the
    caches' H heads and the chunk's T rows. Q3's first case is GQA with 1 < H_kv < H (H = 4, H_kv = 2) over 2 or 3
    layers and 2 or 3 sequences (only there do tiled heads differ from interleaved ones), its second a cache of one
    row (P = 1), its third P >= 2 and B >= 2, its fourth weights of scale 0.6 (the GELU edge; every other case's are
    of scale 0.3). (Q4's edges: the next test.)"""
    edge("ex06.q1", "1 <= S, 2 <= T, S + T < S_max")
    edge("ex06.q1", "T = 1 after 1 <= S")
    edge("ex06.q1", "S = 0, 2 <= T")
    edge("ex06.q1", "S + T = S_max, 1 <= S, 2 <= T")
    edge("ex06.q1", "rows past S + T hold an earlier request's values")
    edge("ex06.q3", "1 < H_kv < H (H = 4, H_kv = 2)")
    edge("ex06.q3", "P = 1, a cache of one row")
    edge("ex06.q3", "P >= 2, B = 2 or 3")
    edge("ex06.q3", "weights of scale 0.6")
    for seed in SEEDS:
        chunks = cases("ex06.q1", seed)
        sizes = [(c["S"], c["k_new"]["$randn"][2], c["k_cache"]["$randn"][2]) for c in chunks]
        (S0, T0, M0), (S1, T1, M1), (S2, T2, M2), (S3, T3, M3) = sizes[:4]
        assert S0 >= 1 and T0 >= 2 and S0 + T0 < M0, (seed, sizes[0])
        assert S1 >= 1 and T1 == 1 and S1 + T1 < M1, (seed, sizes[1])
        assert S2 == 0 and T2 >= 2 and T2 < M2, (seed, sizes[2])
        assert S3 >= 1 and T3 >= 2 and S3 + T3 == M3, (seed, sizes[3])
        assert all(S + T < M for i, (S, T, M) in enumerate(sizes) if i != 3), (seed, sizes)
        for c in chunks:
            B, H, _, d_h = c["k_cache"]["$randn"]
            assert c["q"]["$randn"] == c["k_new"]["$randn"] == c["v_new"]["$randn"] == [B, H, c["k_new"]["$randn"][2],
                                                                                      d_h], seed
        decode = cases("ex06.q3", seed)
        gqa, one_row, longer = decode[:3]
        assert [c["params"]["scale"] for c in decode] == [0.3, 0.3, 0.3, 0.6, 0.3, 0.3, 0.3], seed
        L, B, H_kv, P, _ = gqa["k_cache"]["$randn"]
        assert (gqa["config"]["H"], H_kv, gqa["config"]["H_kv"]) == (4, 2, 2) and L >= 2 and B >= 2, seed
        assert one_row["k_cache"]["$randn"][3] == 1, seed
        assert longer["k_cache"]["$randn"][3] >= 2 and longer["k_cache"]["$randn"][1] >= 2, seed


#: ex06 Q4's draws (each runs the package's generation, and its neighbours, until a case tells): 60 seeds.
Q4_SEEDS = range(60)


def test_ex06_q4_edges_are_drawn_every_time() -> None:
    """Under every seed of `Q4_SEEDS`, ex06 Q4's seven cases are its seven edges, each of B >= 2 sequences: D = 1;
    L = 2 or 3 with P >= 2 and D >= 3, where a prefill without its causal mask changes a token; the method case
    (P 24 to 32, D 8 to 10, B = 2, L 2 or 3, d = 32, d_ffn = 4d), where recomputing needs at least twice the
    bound the check allows; P >= 2 and D >= 3 where an unappended cache changes a token; D >= 2 where decode
    steps one position early change one; P >= 2 where token 1 from the prefill's first and second-to-last
    positions both change one; sequences whose first tokens are not all one. Every generated position keeps its
    two largest logits `MARGIN` apart (checked on the first 20 seeds, with the neighbours replayed)."""
    from minigpt.exercises import ex06_generate as gen

    for words in ("D = 1, B = 2 or 3", "the prefill without the causal mask", "measured: the whole prefix",
                  "not appended", "position P + i − 1", "first or second-to-last", "the batch mixed"):
        edge("ex06.q4", words)
    for seed, drawn in zip(Q4_SEEDS, _draws("ex06.q4", Q4_SEEDS.start, Q4_SEEDS.stop), strict=True):
        assert len(drawn) == 7, seed
        sizes = [(len(c["prompt"]["$long"]), len(c["prompt"]["$long"][0]), c["D"], c["config"]) for c in drawn]
        assert all(B >= 2 for B, *_ in sizes), seed
        assert sizes[0][2] == 1 and sizes[1][3]["L"] >= 2 and sizes[1][1] >= 2 and sizes[1][2] >= 3, seed
        B, P, D, config = sizes[2]
        assert B == 2 and 24 <= P <= 32 and 8 <= D <= 10, seed
        assert (config["H"], config["d_h"], config["d_ffn"]) == (4, 8, 128) and config["L"] in (2, 3), seed
        cached, least = gen._flops(config, B, P, D)
        assert least >= 2 * gen.FACTOR * cached, seed
        assert sizes[3][1] >= 2 and sizes[3][2] >= 3 and sizes[4][2] >= 2 and sizes[5][1] >= 2, seed
        if seed >= 20:
            continue
        for i, wrong in ((1, ("unmasked",)), (3, ("unappended",)), (4, ("shifted",)),
                         (5, ("first", "second-to-last")), (6, None)):
            args = build_case(drawn[i])
            model = gen._model(args["params"], args["config"])
            logits = gen._replay(model, args["prompt"], drawn[i]["D"])
            top = logits.topk(2, dim=-1).values
            assert (top[..., 0] - top[..., 1] > gen.MARGIN).all(), (seed, i)
            right = logits.argmax(-1)  # [B, D]; what tells each edge, computed here, not by the generator's own test
            if wrong is None:  # the batch mixed: the sequences' first tokens are not all one
                assert len(set(right[:, 0].tolist())) > 1, (seed, i)
            for w in wrong or ():
                other = gen._replay(model, args["prompt"], drawn[i]["D"], w).argmax(-1)
                assert other.shape == right.shape and not torch.equal(other, right), (seed, i, w)


def test_ex06_the_packed_write_edges_are_drawn_every_time() -> None:
    """ex06 Q5's first three cases are its edges under every seed: three different lengths beside a chunk of 2+
    rows among one-row decodes, a count of 0 between two scheduled sequences, a slot filled to its last row; and
    every slot of every case keeps rows past its new length (stale values a rebuilt cache would lose)."""
    edge("ex06.q5", "lengths differ and counts differ")
    edge("ex06.q5", "a count of 0 between two scheduled sequences")
    edge("ex06.q5", "lengths[b] + counts[b] = S_max")
    edge("ex06.q5", "rows past a sequence's new length")
    for seed in SEEDS:
        found = cases("ex06.q5", seed)
        first, second, third = found[0], found[1], found[2]
        assert len(set(first["lengths"])) == 3 and first["counts"][0] == first["counts"][2] == 1
        assert first["counts"][1] >= 2
        assert second["counts"][1] == 0 and second["counts"][0] > 0 and second["counts"][2] > 0
        S_max = third["k_cache"]["$randn"][2]  # the shape [B, H_kv, S_max, d_h] of its random values
        assert any(S + T == S_max for S, T in zip(third["lengths"], third["counts"], strict=True))
        for case in found:
            n = case["k_cache"]["$randn"][2]
            stale = [S + T < n for S, T in zip(case["lengths"], case["counts"], strict=True)]
            assert sum(stale) >= len(stale) - 1, (seed, case["lengths"], case["counts"])


def test_ex07_the_capacity_edges_sit_where_the_question_says() -> None:
    edge("ex07.q3", "Llama-2-13B on the A100 40GB, reserve >= 0.1")
    edge("ex07.q5", "B = 2048 in Bs")
    for seed in SEEDS:
        cap = cases("ex07.q3", seed)
        assert all(c["model"] == {"$preset": "Llama-2-7B"} for c in cap[:3])
        assert cap[3]["model"] == {"$preset": "Llama-2-13B"} and cap[3]["hardware"] == {"$hardware": "A100 40GB"}
        assert cap[3]["reserve"] >= 0.1
        assert sum(c["model"] == {"$preset": "Llama-2-13B"} and c["hardware"] == {"$hardware": "A100 40GB"}
                   and c["reserve"] >= 0.1 for c in cap[4:]) < len(cap) - 4  # the edge is one case, not all
    for seed in range(2000):  # the edge appends B = 2048 to a draw that must not hold it (1 chance in 300)
        for i, c in enumerate(cases("ex07.q5", seed)):
            assert c["Bs"] == sorted(set(c["Bs"])), (seed, i)  # distinct batch sizes in increasing order
            assert i > 0 or (c["Bs"][-1] == 2048 and 1 <= c["S"] <= 1024)
        edge_case = cases("ex07.q5", seed)[0]
        if seed < 200:  # above B_crit, where the LM head's FLOPs and the overlap move the step time
            model, hardware = MODELS[edge_case["model"]["$preset"]], HARDWARE[edge_case["hardware"]["$hardware"]]
            crit = roofline.critical_batch_on(model, hardware, S=edge_case["S"])
            assert crit is not None and crit < 2048, (seed, edge_case)


def test_ex07_the_frontier_edge_gives_up_after_its_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no draw puts B = 2048 above B_crit, ex07 Q5's generator raises instead of handing out a memory-bound
    edge, on which an answer without the LM head passes. Guards a draw loop without its bound or its error."""
    monkeypatch.setattr(roofline, "critical_batch_on", lambda model, hardware, S: None)
    monkeypatch.setattr(ex07, "DRAWS", 3)
    with pytest.raises(RuntimeError, match="no draw in 3"):
        ex07._frontier_cases(random.Random(0))


def test_ex07_the_critical_batch_draw_gives_up_after_its_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no model and chip has a limit of S >= 10, ex07 Q2's draw raises instead of drawing forever (a grading
    child would hang to its time-out). Guards a draw loop without its bound or its error."""
    monkeypatch.setattr(ex07, "_threshold_S", lambda model, hardware: 9.0)
    monkeypatch.setattr(ex07, "DRAWS", 3)
    with pytest.raises(RuntimeError, match="no model and chip in 3 draws"):
        ex07._crit_at(random.Random(0), 0.5, 0.9)


def test_ex08_no_measured_row_beats_the_chips_peak() -> None:
    """A table of timings that claims more FLOP/s than the chip's peak is not a measurement (Eq. 8.2's
    efficiency is at most 1): every prefill at most the peak, every decode step within its 3 % noise. Nor is a
    table slower than Eq. 8.2 with its documented spread: a step at most (a floor of at most 1 ms, plus its bytes
    at 60 % of the bandwidth) times 1.03, a prefill at most (L floors plus its FLOPs at 10 % of the peak) times
    1.03 (a noise factor drawn from (1.97, 1.03) instead of (0.97, 1.03) makes steps up to twice as slow)."""
    for seed in SEEDS[:50]:
        for case in cases("ex08.q3", seed):
            for row in case["rows"]:
                assert row["prefill_flops"] / row["prefill_s"] <= case["peak_flops"], seed
                assert row["decode_bytes"] / row["decode_step_s"] <= case["bandwidth"] / 0.97, seed
                slowest_step = (1e-3 + row["decode_bytes"] / (0.6 * case["bandwidth"])) * 1.03
                slowest_prefill = (1e-3 * row["config"]["L"] + row["prefill_flops"] / (0.1 * case["peak_flops"])) * 1.03
                assert row["decode_step_s"] <= slowest_step and row["prefill_s"] <= slowest_prefill, seed


def test_ex09_the_gqa_edges_are_drawn_every_time() -> None:
    edge("ex09.q1", "H_kv = 2, g = 2, T >= 2")
    edge("ex09.q4", "with H_kv = 1, S <= 1024")
    for seed in SEEDS:
        first = build_case(cases("ex09.q1", seed)[0])
        assert first["q"].shape[1] == 4 and first["k"].shape[1] == 2 and first["q"].shape[2] >= 2
        batch = cases("ex09.q4", seed)[0]
        assert batch["H_kv"] == 1 and batch["S"] <= 1024
        assert batch["model"]["$preset"] in ("Llama-3-8B", "Mistral-7B")


@pytest.mark.parametrize("qid", ["ex11.q5", "ex11.q6"])
def test_ex11_every_operation_is_one_of_the_four_documented(qid: str) -> None:
    """`["add"]`, `["append", seq, T or tokens]`, `["fork", seq]`, `["free", seq]`: a misspelt operation would
    be skipped by a replay that does not know it, and the edge it carried would vanish."""
    for seed in SEEDS[:50]:
        for case in cases(qid, seed):
            for op in case["ops"]:
                assert (op == ["add"] or (op[0] in ("fork", "free") and len(op) == 2)
                        or (op[0] == "append" and len(op) == 3)), (seed, op)


def test_ex11_the_random_operations_keep_a_few_sequences() -> None:
    """`ex11_ops._ops` works on a few sequences: a new one is added only while fewer than four are live (or
    none), a fork only while fewer than five are, and it acts only on live ones; a class of 60 sequences could
    not be traced by hand. Replayed from the operations themselves (a sequence's id is its order of creation)."""
    for qid in ("ex11.q5", "ex11.q6"):
        adds_at = set()
        for seed in SEEDS:
            for case in cases(qid, seed):
                live: list[int] = []
                made = 0
                for op in case["ops"]:
                    if op[0] in ("add", "fork"):
                        assert len(live) < (4 if op[0] == "add" else 5) or not live, (qid, seed, op, live)
                        if op[0] == "add":
                            adds_at.add(len(live))
                        live.append(made)
                        made += 1
                    else:
                        assert op[1] in live, (qid, seed, op, live)
                        if op[0] == "free":
                            live.remove(op[1])
        assert adds_at == {0, 1, 2, 3}, (qid, adds_at)


def test_ex14_the_speculative_edges_are_drawn_every_time() -> None:
    edge("ex14.q2", "Chapter 17's rule")
    edge("ex14.q2", "a cautious rule")
    edge("ex14.q2", "more often than p emits it")
    edge("ex14.q3", "every draft kept")
    for seed in SEEDS[:40]:
        kinds = []
        for case in map(build_case, cases("ex14.q2", seed)):
            p, q, accept = case["p"], case["q"], case["accept"]
            assert p.dtype == q.dtype == accept.dtype == torch.float64 and p.shape == q.shape == accept.shape
            assert abs(float(p.sum()) - 1) < 1e-12 and abs(float(q.sum()) - 1) < 1e-12
            assert bool(((accept >= 0) & (accept <= 1)).all())
            kept = q * accept
            assert 1 - float(kept.sum()) >= ex14_cases.REJECTS  # no case divides by (almost) nothing
            over = kept - p
            on_line = over.abs() < ex14_cases.CLEAR
            assert bool((over[on_line] <= 0).all())  # at the limit, never past it, in float64 arithmetic
            if bool((over > 0).any()):
                kinds.append("over")
            elif bool(torch.equal(accept, torch.tensor(ex14_cases.chapter_accept(p.tolist(), q.tolist()),
                                                       dtype=torch.float64))):
                kinds.append("chapter")
                assert bool(on_line.any())  # Chapter 17's rule sits on the limit where p < q
            elif len(set((accept / torch.minimum(torch.ones_like(p), p / q)).round(decimals=9).tolist())) == 1:
                kinds.append("cautious" if float(accept.max()) > 0 else "never")
            else:
                kinds.append("other")
        assert kinds[:3] == ["chapter", "cautious", "over"], (seed, kinds)

def test_ex14_q3_draws_the_same_rounds_from_the_same_seed() -> None:
    """Each draft of ex14 Q3 is drawn by a generator seeded from the case's own random stream: a draw from the
    global RNG would give every call other drafts (the class's cases would change between grader runs)."""
    for seed in range(3):
        assert cases("ex14.q3", seed) == cases("ex14.q3", seed), seed


def test_ex14_q2_random_rules_are_of_every_kind_the_generator_documents() -> None:
    """ex14 Q2's three random cases (after its three edges) are a random share of Chapter 17's rule per token,
    a rule that never keeps, or any rule at all (most of which over-emit some token), each kind drawn; six
    cases a seed; V from 4 to 24; and p, q softmaxes of logits 2·N(0, 1), whose log-probabilities spread about
    2 (a spread of 3 or 4 would draw flatter or sharper distributions than the question says)."""
    kinds, sizes, spreads = [], set(), []
    for seed in range(300):
        drawn = [build_case(c) for c in cases("ex14.q2", seed)]
        assert len(drawn) == 6, seed
        for case in drawn:
            p, q, accept = case["p"], case["q"], case["accept"]
            sizes.add(len(p))
            spreads += [float(p.log().std()), float(q.log().std())]
        for case in drawn[3:]:
            p, q, accept = case["p"], case["q"], case["accept"]
            chapter = torch.tensor(ex14_cases.chapter_accept(p.tolist(), q.tolist()), dtype=torch.float64)
            if not bool(accept.any()):
                kinds.append("never")
            elif bool((accept <= chapter).all()):
                share = accept / chapter
                assert float(share.max() - share.min()) > 0.01, seed  # a share of its own per token
                kinds.append("per_token")
            else:
                kinds.append("any")
    # drawn one in four, one in four and one in two; an "any" rule under Chapter 17's on every token reads as a
    # share per token, rarely: the shares, not just the kinds seen, tell a generator that never draws one
    share = {k: kinds.count(k) / len(kinds) for k in ("never", "per_token", "any")}
    assert 0.18 < share["never"] < 0.32 and 0.18 < share["per_token"] < 0.38 and 0.38 < share["any"] < 0.6, share
    assert sizes == set(range(4, 25)), sorted(sizes)
    assert 1.7 < sum(spreads) / len(spreads) < 2.3, sum(spreads) / len(spreads)


def test_ex14_the_replayed_gamma_edges_are_drawn_every_time() -> None:
    """ex14 Q4's first six cases are its edges under every seed, each separating its named wrong answer (the
    module's exact replay, `ex14_rounds.best_from_rounds`); the sixth is an exact tie of γ = 1 and γ = 2 that
    floats see exactly; every other case's best γ is clear of a tie by `TIE_GAP`; and the draws span what the
    module documents (one draw a seed for all of it: a case takes 17 ms)."""
    for words in ("not those of one rate α", "its bonus token left out", "the kept drafts alone counted",
                  "a round's cost without it", "gamma_max never tried", "the larger one"):
        edge("ex14.q4", words)
    seen: dict[str, set] = {key: set() for key in ("gamma_max", "tie_gamma_max", "R", "v", "c_exp", "ends",
                                                   "first", "tie_first", "bimodal", "styles", "top_all")}
    for seed in range(300):
        drawn = cases("ex14.q4", seed)
        assert len(drawn) == 10
        for case, kind in zip(drawn, ex14_rounds.WRONG_KINDS, strict=False):
            assert ex14_rounds.best_from_rounds(**case, kind=kind) != ex14_rounds.best_from_rounds(**case), seed
        tie = drawn[5]
        n, c, v = len(tie["accepted"]), tie["cost_ratio"], tie["verify_ratio"]
        assert (n, c, v) == (8, 0.25, 1.0) and sorted(tie["accepted"])[:6] == [0, 1, 1, 1, 1, 2], seed
        assert (sum(min(a, 1) + 1 for a in tie["accepted"]) / (n * (c + v))
                == sum(min(a, 2) + 1 for a in tie["accepted"]) / (n * (2 * c + v)))
        seen["tie_gamma_max"].add(tie["gamma_max"])
        seen["tie_first"].add(tie["accepted"][0])
        for case in drawn[:5] + drawn[6:]:
            rates = sorted(ex14_rounds._rates(**case), reverse=True)
            assert rates[0] - rates[1] >= ex14_rounds.TIE_GAP * rates[0], seed
            assert all(0 <= a <= case["gamma_max"] for a in case["accepted"]), seed
            seen["gamma_max"].add(case["gamma_max"])
            seen["R"].add(len(case["accepted"]))
            seen["v"].add(round(case["verify_ratio"], 1))
            seen["c_exp"].add(math.floor(math.log10(case["cost_ratio"]) * 2) / 2)
            seen["ends"] |= {("zero", a == 0) for a in case["accepted"]} | {("all", a == case["gamma_max"])
                                                                           for a in case["accepted"]}
        seen["first"].add(drawn[6]["accepted"][0] > 1)
        first = drawn[0]  # the fitted-α edge: easy rounds accept every draft, hard ones at most one
        assert set(first["accepted"]) <= {0, 1, first["gamma_max"]}, seed
        seen["bimodal"] |= {a if a < 2 else "all" for a in first["accepted"]}
        seen["styles"] |= {set(x["accepted"]) <= {0, 1, x["gamma_max"]} for x in drawn[6:]}
        seen["top_all"].add(all(a == drawn[4]["gamma_max"] for a in drawn[4]["accepted"]))
    assert seen["gamma_max"] == set(range(3, 11)) and seen["tie_gamma_max"] == {3, 4, 5, 6}
    assert (min(seen["R"]), max(seen["R"])) == (8, 40)
    assert seen["v"] == {1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8}
    assert seen["c_exp"] == {-3.0, -2.5, -2.0, -1.5, -1.0}  # 0.003 (10^-2.5 rounded: cheap drafts) to 10^-0.5
    assert seen["ends"] == {("zero", True), ("zero", False), ("all", True), ("all", False)}
    assert seen["first"] == {True, False} and len(seen["tie_first"]) >= 3  # rounds of every length; the tie shuffled
    assert seen["bimodal"] == {0, 1, "all"} and seen["styles"] == {True, False}  # both kinds of random rounds
    assert seen["top_all"] == {True, False}  # the gamma_max edge: high acceptance, not always every draft


def test_ex15_every_seed_draws_its_mask_cases_and_the_chunk_edge() -> None:
    """A generator that can draw an impossible range (T >= 2 in a cache of one row) fails for some seeds only:
    a class whose seed is one of them cannot be graded."""
    edge("ex15.q4", "a chunk of T ≥ 2 positions")
    for seed in SEEDS:
        drawn = cases("ex15.q4", seed)
        positions = [c["input_pos"]["$long"] for c in drawn]
        assert len(positions[0]) >= 2, seed
        for p, c in zip(positions, drawn, strict=True):  # consecutive positions inside the cache
            assert p == list(range(p[0], p[0] + len(p))) and p[-1] < c["S_max"], seed


def test_ex17_q3_plans_keep_a_norms_width_and_the_chapters_forward_is_the_chapters() -> None:
    """A norm leaves its input's width (a plan whose norm changed it would not be a forward), every width is an
    int; the ninth case is `chapter_layers` of its own d, H, H_kv, d_ffn = 4d and V, whose walk is Eqs.
    (20.1)-(20.2)."""
    from minigpt import costs
    from minigpt.exercises import ex17_placements

    for seed in range(300):
        for case in cases("ex17.q3", seed):
            widths = [w for _, w in case["layers"]]
            assert all(w == widths[i - 1] for i, (k, w) in enumerate(case["layers"]) if k == "norm" and i), case
            assert all(type(w) is int for w in widths), case  # a float width would reach the student as 96.0
        c = cases("ex17.q3", seed)[8]
        layers = c["layers"]
        L, d, qkv, V = (len(layers) - 3) // 8, layers[0][1], layers[2][1], layers[-1][1]
        assert layers == ex17_placements.chapter_layers(L=L, d=d, qkv=qkv, d_ffn=4 * d, V=V)
        got = ex17_placements.collectives(**c)
        assert len(got) == costs.tp_collectives_per_step(L=L, W=c["W"])
        assert sum(n for _, n in got) == costs.tp_collective_bytes(L=L, B=c["B"], T=c["T"], d=d, V=V, s=c["s"],
                                                                   W=c["W"])


def test_ex17_q4_models_span_what_the_generator_documents() -> None:
    """ex17 Q4's eight models (one draw of 100 seeds: each case builds a MiniGPT's shapes): the edges first, the
    replica edge (the second) with H_kv < W, the shipped MiniGPT sixth over 2 or 4 ranks, and the random ones
    spanning L 1-3, H 2-8, d_h 4-16, d_ffn 8-256 and V 16-1,024 in steps of 8, S_max 8-256, W 1-8, s 2 or 4.
    Catches a range moved by one, or an edge drawn without the property that makes it one."""
    from minigpt.config import ModelConfig
    from minigpt.exercises import ex17_shards

    keys = ("L", "H", "H_kv", "d_h", "d_ffn", "V", "S_max", "W", "s", "n", "layouts", "shipped")
    seen: dict[str, set] = {k: set() for k in keys}
    for seed in range(100):
        drawn = cases("ex17.q4", seed)
        seen["n"].add(len(drawn))
        assert drawn[1]["H_kv"] < drawn[1]["W"], seed
        assert drawn[5]["shapes"] == ex17_shards.model_shapes(ModelConfig()), seed
        seen["shipped"].add((drawn[5]["W"], drawn[5]["s"]))
        seen["layouts"] |= {(c["H"], c["H_kv"], c["W"]) for c in drawn[:5] + drawn[6:]}
        for c in drawn[:5] + drawn[6:]:
            shapes = c["shapes"]
            V, d = shapes["tok_emb.weight"]
            for key, value in (("L", len({k.split(".")[1] for k in shapes if k.startswith("blocks.")})),
                               ("H", c["H"]), ("H_kv", c["H_kv"]), ("d_h", d // c["H"]), ("V", V),
                               ("d_ffn", shapes["blocks.0.mlp.up.weight"][0]), ("S_max", shapes["pos_emb.weight"][0]),
                               ("W", c["W"]), ("s", c["s"])):
                seen[key].add(value)
    assert seen["n"] == {8}
    assert seen["shipped"] == {(2, 2), (2, 4), (4, 2), (4, 4)}
    # every head layout the sharded model accepts: W divides H, and W divides H_kv or H_kv divides W
    assert seen["layouts"] == {(H, h, W) for H in (2, 4, 8) for h in (1, 2, 4, 8) for W in (1, 2, 4, 8)
                               if H % h == 0 and H % W == 0 and (h % W == 0 or W % h == 0)}
    assert (seen["L"], seen["H"], seen["H_kv"]) == ({1, 2, 3}, {2, 4, 8}, {1, 2, 4, 8})
    assert (seen["d_h"], seen["W"], seen["s"]) == ({4, 8, 16}, {1, 2, 4, 8}, {2, 4})
    assert all(v % 8 == 0 for v in seen["d_ffn"] | seen["V"])
    assert (min(seen["d_ffn"]), max(seen["d_ffn"]), min(seen["V"]), max(seen["V"])) == (8, 256, 16, 1024)
    assert (min(seen["S_max"]), max(seen["S_max"])) == (8, 256)


def test_ex17_the_replica_edge_picks_a_rank_the_tiled_mapping_gets_wrong() -> None:
    edge("ex17.q2", "a rank whose K/V head (rank·H_kv // W) is not rank % H_kv")
    for seed in SEEDS:
        c = cases("ex17.q2", seed)[0]
        assert 1 < c["H_kv"] < c["W"] and c["rank"] * c["H_kv"] // c["W"] != c["rank"] % c["H_kv"], (seed, c)


def test_ex16_the_transfer_edges_are_link_bound_compute_bound_and_mixed_every_time() -> None:
    """Every seed's case 0 is link-bound (a layer's message longer than every layer) with a first layer slower
    than the mean, case 1 compute-bound (every layer longer than a message), case 2 has layers on both sides;
    all three a GQA model with a latency above 0. Without case 0 a message started while the link is busy,
    or the mean layer time, would pass; without case 1, messages chained from the prefill's start."""
    from minigpt.costs.presets import MODELS

    for words in ("link-bound", "compute-bound", "slower than the rest", "latency paid once", "GQA"):
        edge("ex16.q1", words)
    for seed in SEEDS:
        drawn = cases("ex16.q1", seed)
        for i, c in enumerate(drawn[:3]):
            m = MODELS[c["model"]["$preset"]]
            send = c["latency"] + 2 * m.H_kv * m.d_h * 2 * c["P"] / c["link_bandwidth"]  # one layer, bf16
            ls = c["layer_s"]
            assert m.H_kv < m.H and c["latency"] > 0 and len(ls) == m.L, (seed, i)
            if i == 0:
                assert max(ls) < send and ls[0] > sum(ls) / len(ls), (seed, c)
            elif i == 1:
                assert min(ls) > send, (seed, c)
            else:
                assert min(ls) < send < max(ls), (seed, c)


def test_ex16_the_receive_edges_fill_the_first_four_cases_and_the_rest_spans_the_domain() -> None:
    """Every seed's first four cases hold all four `RECEIVE_EDGES` (L = H_kv = 2, a partly filled last block
    after a full one, a shuffled free list longer than needed whose first blocks are neither in id order nor
    the smallest ids); then three random cases. Each case is consistent (the payload's L, H_kv, d_h are the
    pool's, the free list distinct blocks of the pool with one block at least held, room for P tokens), and
    over the seeds the random cases draw every value of the question's small domain (L 1-2, H_kv 1-3, b 2 or
    4, d_h 2-3, one to three blocks, P a multiple of b or not, a one-token prompt, a free list with no block
    to spare), so the edges are not the only cases."""
    edge("ex16.q4", "a free list out of order")
    edge("ex16.q4", "P not a multiple of b")
    seen: dict[str, set] = {k: set() for k in ("L", "H_kv", "b", "d_h", "n", "full", "P = 1", "no spare")}
    for seed in SEEDS:
        drawn = cases("ex16.q4", seed)
        assert len(drawn) == 7, seed
        for i, c in enumerate(drawn):
            _, L, N, H_kv, b, d_h = c["pools"]["$randn"]
            two, L_, H_kv_, P, d_h_ = c["kv"]["$randn"]
            free, n = c["free_blocks"], -(-P // b)
            assert (two, L_, H_kv_, d_h_) == (2, L, H_kv, d_h) and N <= 8, (seed, i)
            assert len(set(free)) == len(free) < N and set(free) <= set(range(N)) and len(free) >= n, (seed, i)
            if i < 4:
                assert (L, H_kv) == (2, 2) and n >= 2 and P % b and len(free) > n, (seed, i)
                assert free[:n] != sorted(free[:n]) and free[:n] != sorted(free)[:n], (seed, i)
            else:
                for key, value in (("L", L), ("H_kv", H_kv), ("b", b), ("d_h", d_h), ("n", n),
                                   ("full", P % b == 0), ("P = 1", P == 1), ("no spare", len(free) == n)):
                    seen[key].add(value)
    assert seen == {"L": {1, 2}, "H_kv": {1, 2, 3}, "b": {2, 4}, "d_h": {2, 3}, "n": {1, 2, 3},
                    "full": {True, False}, "P = 1": {True, False}, "no spare": {True, False}}


def _drawn(qid: str, pick, seeds: range = range(2000)) -> list:
    """Every value `pick(cases)` returns (a list) over `seeds`. The draws are made once per question and seed range
    for all of its rows of `DOMAINS` (ex11 Q1's 2,000 draws take seconds), per mutant (`mutation_pass.per_mutant`)."""
    return [v for drawn in _draws(qid, seeds.start, seeds.stop) for v in pick(drawn)]


@per_mutant
def _draws(qid: str, start: int, stop: int) -> tuple[list[dict], ...]:
    return tuple(cases(qid, seed) for seed in range(start, stop))


def _crit(case: dict) -> int | None:
    """ex07 Q2: B_crit of a case, by the cost model (None: no batch reaches the ridge point)."""
    return roofline.critical_batch_on(MODELS[case["model"]["$preset"]], HARDWARE[case["hardware"]["$hardware"]],
                                      S=case["S"])


def _gqa(case: dict) -> bool:
    """ex07 Q4: whether the case's model shares its K and V heads (H_kv < H)."""
    model = MODELS[case["model"]["$preset"]]
    return model.H_kv < model.H


def _fork_write(case: dict) -> int:
    """ex11 Q1's second edge: the tokens its fork wrote after the prompt (sequence 1 holds the prompt and those)."""
    return case["lengths"][1] - case["lengths"][0]


def _held(case: dict) -> list[int]:
    """ex11 Q3: the blocks each request holds at its longest, its P + D − 1 tokens'."""
    return [-(-(P + D - 1) // case["block_size"]) for P, D in case["requests"]]


# What each generator's docstring and the question's text promise its random cases span, checked over 2,000
# seeds (the same draws every run): a range or a set of choices moved by one (issue 36's sampled survivors)
# stops reaching an end it documents, or reaches past it. Each row: question, what is drawn, the values.
_GQA = {name: m.H_kv < m.H for name, m in MODELS.items()}
def _prompt(case: dict) -> tuple[int, int]:
    """ex06 Q4's prompt [B, P]: its shape."""
    return len(case["prompt"]["$long"]), len(case["prompt"]["$long"][0])


def _shape(case: dict, name: str = "k_cache") -> list[int]:
    """The shape of a case's random tensor `name` (its spec), e.g. ex06 Q5's cache [B, H_kv, S_max, d_h]."""
    return case[name]["$randn"]


DOMAINS = [
    ("ex02.q1", "H_kv of the random cases", lambda c: [x["H_kv"] for x in c[1:]], {1, 2, 4, 8, 16, 32, 64, 96}),
    ("ex04.q3", "D = decode steps + 1, from 2 to 2,000", lambda c: [x["decode_steps"] + 1 for x in c[1:]], (2, 2000)),
    ("ex05.q1", "d from 16 (16 x 1) to 2,048", lambda c: [x["d"] for x in c], (16, 2048)),
    ("ex06.q2", "the MQA edge: H_kv = 1 of H = 4", lambda c: [(c[2]["k"]["$randn"][1], c[2]["q"]["$randn"][1])],
     {(1, 4)}),
    ("ex06.q1", "seven cases", lambda c: [len(c)], {7}),
    ("ex06.q1", "B from 1 to 3", lambda c: [_shape(x, "k_cache")[0] for x in c], (1, 3)),
    ("ex06.q1", "H (= H_kv) 1, 2 or 4", lambda c: [_shape(x, "k_cache")[1] for x in c], {1, 2, 4}),
    ("ex06.q1", "S_max from 8 to 24", lambda c: [_shape(x, "k_cache")[2] for x in c], (8, 24)),
    ("ex06.q1", "d_h 4 or 8", lambda c: [_shape(x, "k_cache")[3] for x in c], {4, 8}),
    ("ex06.q1", "the chunk edges' T (cases 0, 2, 3), 2 to 5",
     lambda c: [_shape(c[i], "k_new")[2] for i in (0, 2, 3)], (2, 5)),
    ("ex06.q1", "the random cases' T, 1 to 5", lambda c: [_shape(x, "k_new")[2] for x in c[4:]], (1, 5)),
    ("ex06.q1", "the first two edges' S, from 1 to S_max - T - 1",
     lambda c: [(x["S"] == 1, x["S"] + _shape(x, "k_new")[2] == _shape(x)[2] - 1) for x in c[:2]],
     {(True, False), (False, True), (False, False)}),
    ("ex06.q1", "the random cases' S, from 0 to S_max - T - 1",
     lambda c: [(x["S"] == 0, x["S"] + _shape(x, "k_new")[2] == _shape(x)[2] - 1) for x in c[4:]],
     {(True, False), (False, True), (False, False)}),
    ("ex06.q1", "stale rows past S + T in every case but the full one, from 1 (1, or 2 and more)",
     lambda c: [min(_shape(x)[2] - x["S"] - _shape(x, "k_new")[2], 2) for i, x in enumerate(c) if i != 3], {1, 2}),
    ("ex06.q2", "six cases", lambda c: [len(c)], {6}),
    ("ex06.q2", "the random cases' H_kv, 1 or 2", lambda c: [_shape(x, "k")[1] for x in c[3:]], {1, 2}),
    ("ex06.q2", "the random cases' g = H / H_kv, 1, 2 or 4",
     lambda c: [_shape(x, "q")[1] // _shape(x, "k")[1] for x in c[3:]], {1, 2, 4}),
    ("ex06.q2", "B from 1 to 3", lambda c: [_shape(x, "q")[0] for x in c], (1, 3)),
    ("ex06.q2", "d_h 4, 8 or 16", lambda c: [_shape(x, "q")[2] for x in c], {4, 8, 16}),
    ("ex06.q2", "S from 1 to 30", lambda c: [_shape(x, "k")[2] for x in c], (1, 30)),
    ("ex06.q3", "seven cases", lambda c: [len(c)], {7}),
    ("ex06.q3", "L from 1 to 3", lambda c: [_shape(x)[0] for x in c], (1, 3)),
    ("ex06.q3", "the GQA edge's L, 2 or 3", lambda c: [_shape(c[0])[0]], {2, 3}),
    ("ex06.q3", "B from 1 to 3", lambda c: [_shape(x)[1] for x in c], (1, 3)),
    ("ex06.q3", "the GQA edge's B, 2 or 3", lambda c: [_shape(c[0])[1]], {2, 3}),
    ("ex06.q3", "the P >= 2 edge's B, 2 or 3", lambda c: [_shape(c[2])[1]], {2, 3}),
    ("ex06.q3", "P from 1 to 12", lambda c: [_shape(x)[3] for x in c], (1, 12)),
    ("ex06.q3", "the P >= 2 edge's P, 2 to 12", lambda c: [_shape(c[2])[3]], (2, 12)),
    ("ex06.q3", "the random cases' P, 1 to 12", lambda c: [_shape(x)[3] for x in c[4:]], (1, 12)),
    ("ex06.q3", "(H, H_kv) of the random cases", lambda c: [(x["config"]["H"], x["config"]["H_kv"]) for x in c[4:]],
     {(2, 1), (2, 2), (4, 1), (4, 2), (4, 4)}),
    ("ex06.q3", "d_h 2 or 4", lambda c: [x["config"]["d_h"] for x in c], {2, 4}),
    ("ex06.q3", "d_ffn 2d or 4d", lambda c: [x["config"]["d_ffn"] / x["config"]["d"] for x in c], {2, 4}),
    ("ex06.q3", "V from 8 to 32", lambda c: [x["config"]["V"] for x in c], (8, 32)),
    ("ex06.q3", "S_max from P + 1 to P + 4", lambda c: [x["config"]["S_max"] - _shape(x)[3] for x in c], (1, 4)),
    ("ex06.q3", "d = H d_h, the weights of the model the config describes",
     lambda c: [x["config"]["d"] == x["config"]["H"] * x["config"]["d_h"] and x["params"]["$weights"] == {
         k: v for k, v in x["config"].items() if k != "d"} for x in c], {True}),
    ("ex06.q4", "seven cases", lambda c: [len(c)], {7}),
    ("ex06.q4", "B 2 or 3 outside the method case (B = 2 there)",
     lambda c: [len(x["prompt"]["$long"]) for x in c[:2] + c[3:]], {2, 3}),
    ("ex06.q4", "L from 1 to 3", lambda c: [x["config"]["L"] for x in c], (1, 3)),
    ("ex06.q4", "the unmasked and method edges' L, 2 or 3", lambda c: [c[1]["config"]["L"], c[2]["config"]["L"]],
     {2, 3}),
    ("ex06.q4", "P from 1 to 12 outside the method case", lambda c: [_prompt(x)[1] for x in c[:2] + c[3:]], (1, 12)),
    ("ex06.q4", "the P >= 2 edges' P, 2 to 12", lambda c: [_prompt(c[i])[1] for i in (1, 3, 5)], (2, 12)),
    ("ex06.q4", "the method case's P, 24 to 32", lambda c: [_prompt(c[2])[1]], (24, 32)),
    ("ex06.q4", "the method case's D, 8 to 10", lambda c: [c[2]["D"]], (8, 10)),
    ("ex06.q4", "the unmasked and unappended edges' D, 3 to 6", lambda c: [c[1]["D"], c[3]["D"]], (3, 6)),
    ("ex06.q4", "the shifted edge's D, 2 to 6", lambda c: [c[4]["D"]], (2, 6)),
    ("ex06.q4", "the first-position and mixed edges' D, 1 to 6", lambda c: [c[5]["D"], c[6]["D"]], (1, 6)),
    ("ex06.q4", "(H, H_kv) outside the method case",
     lambda c: [(x["config"]["H"], x["config"]["H_kv"]) for x in c[:2] + c[3:]], {(2, 1), (2, 2), (4, 1), (4, 2),
                                                                                  (4, 4)}),
    ("ex06.q4", "the method case's H_kv, 1, 2 or 4", lambda c: [c[2]["config"]["H_kv"]], {1, 2, 4}),
    ("ex06.q4", "d_h 2, 4 or 8", lambda c: [x["config"]["d_h"] for x in c], {2, 4, 8}),
    ("ex06.q4", "d_ffn 2d or 4d", lambda c: [x["config"]["d_ffn"] / x["config"]["d"] for x in c], {2, 4}),
    ("ex06.q4", "V from 8 to 64", lambda c: [x["config"]["V"] for x in c], (8, 64)),
    ("ex06.q4", "S_max from P + D - 1 to P + D + 2",
     lambda c: [x["config"]["S_max"] - _prompt(x)[1] - x["D"] + 1 for x in c], (0, 3)),
    ("ex06.q4", "tokens from 0 to V - 1 (a case's least is 0, its greatest V - 1, none past it)",
     lambda c: [(min(map(min, x["prompt"]["$long"])) == 0, max(map(max, x["prompt"]["$long"])) == x["config"]["V"] - 1,
                 max(map(max, x["prompt"]["$long"])) < x["config"]["V"]) for x in c],
     {(True, True, True), (True, False, True), (False, True, True), (False, False, True)}),
    ("ex06.q4", "d = H d_h, the weights of the model the config describes, of scale 0.6",
     lambda c: [x["config"]["d"] == x["config"]["H"] * x["config"]["d_h"] and x["params"]["scale"] == 0.6
                and x["params"]["$weights"] == {k: v for k, v in x["config"].items() if k != "d"} for x in c], {True}),
    ("ex06.q5", "six cases", lambda c: [len(c)], {6}),
    ("ex06.q5", "B of the first random case, 1 to 4", lambda c: [_shape(c[3])[0]], (1, 4)),
    ("ex06.q5", "B of the random cases, 1 to 4", lambda c: [_shape(x)[0] for x in c[3:]], (1, 4)),
    ("ex06.q5", "H_kv, 1 or 2", lambda c: [_shape(x)[1] for x in c], {1, 2}),
    ("ex06.q5", "S_max from 10 to 16", lambda c: [_shape(x)[2] for x in c], (10, 16)),
    ("ex06.q5", "d_h, 4 or 8", lambda c: [_shape(x)[3] for x in c], {4, 8}),
    ("ex06.q5", "the first edge's chunk, 2 to 4 rows", lambda c: [c[0]["counts"][1]], (2, 4)),
    ("ex06.q5", "the second edge's first count, 1 to 3", lambda c: [c[1]["counts"][0]], (1, 3)),
    ("ex06.q5", "the second edge's last count, 1 to 3", lambda c: [c[1]["counts"][2]], (1, 3)),
    ("ex06.q5", "the random counts, 0 to 4", lambda c: [n for x in c[3:] for n in x["counts"]], (0, 4)),
    ("ex06.q5", "every case writes a row", lambda c: [sum(x["counts"]) >= 1 for x in c], {True}),
    ("ex06.q5", "random lengths down to 0", lambda c: [min(x["lengths"]) == 0 for x in c[3:]], {True, False}),
    ("ex06.q5", "a slot left with exactly one stale row",
     lambda c: [any(S + T == _shape(x)[2] - 1 for S, T in zip(x["lengths"], x["counts"], strict=True))
                for x in c[3:]], {True, False}),
    ("ex06.q5", "the first edge's longest sequence reaching S_max - 6",
     lambda c: [max(c[0]["lengths"]) == _shape(c[0])[2] - 6], {True, False}),
    ("ex06.q5", "the filled slot's count, 1 to 4",
     lambda c: [min(T for S, T in zip(c[2]["lengths"], c[2]["counts"], strict=True) if S + T == _shape(c[2])[2])],
     (1, 4)),
    ("ex07.q3", "the short contexts of the first three cases, from S = 1", lambda c: [x["S"] for x in c[:3]], (1, 96)),
    ("ex07.q1", "ten cases", lambda c: [len(c)], {10}),
    ("ex07.q1", "the first edge's S, 1 to 256", lambda c: [c[0]["S"]], (1, 256)),
    ("ex07.q1", "the second edge at S = 0, the third above 256", lambda c: [c[1]["S"] == 0 < 256 < c[2]["S"]], {True}),
    ("ex07.q1", "the edges' B and overlap", lambda c: [(x["B"], x["overlap"]) for x in c[:3]],
     {(4096, False), (4096, True), (1, True)}),
    ("ex07.q1", "overlap on the even random cases, off on the odd",
     lambda c: [x["overlap"] == (i % 2 == 0) for i, x in enumerate(c) if i >= 3], {True}),
    ("ex07.q1", "random S of 0 among them", lambda c: [min(x["S"] for x in c[3:]) == 0], {True, False}),
    ("ex07.q1", "random short S from 1 to 256", lambda c: [x["S"] for x in c[3:] if 1 <= x["S"] <= 256], (1, 256)),
    ("ex07.q1", "random B of 1 among them", lambda c: [min(x["B"] for x in c[3:]) == 1], {True, False}),
    ("ex07.q1", "random small B from 2 to 64", lambda c: [x["B"] for x in c[3:] if 2 <= x["B"] <= 64], (2, 64)),
    ("ex07.q2", "ten cases, the first Llama-3-8B at S = 0",
     lambda c: [(len(c), c[0]["model"]["$preset"], c[0]["S"])], {(10, "Llama-3-8B", 0)}),
    ("ex07.q2", "B_crit exists below the limit (edge 2, cases 4 to 6), not above it (edge 3)",
     lambda c: [_crit(x) is not None for x in c[1:2] + c[3:6]] + [_crit(c[2]) is None], {True}),
    ("ex07.q3", "ten cases, reserves to three places",
     lambda c: [len(c) == 10] + [round(x["reserve"], 3) == x["reserve"] for x in c], {True}),
    ("ex07.q3", "the no-fit edge on a chip below 141 GB",
     lambda c: [HARDWARE[c[4]["hardware"]["$hardware"]].memory_bytes < 141 * 10**9], {True}),
    ("ex07.q3", "random reserves 0 or from 0.02 to 0.2",
     lambda c: [x["reserve"] == 0 or 0.02 <= x["reserve"] <= 0.2 for x in c[5:]], {True}),
    ("ex07.q4", "eight cases, the first GQA", lambda c: [(len(c), _gqa(c[0]))], {(8, True)}),
    ("ex07.q4", "MHA and GQA among the others", lambda c: [_gqa(x) for x in c[1:]], {True, False}),
    ("ex07.q5", "the edge's batch sizes from 1 to 2048", lambda c: [b for b in c[0]["Bs"]], (1, 2048)),
    ("ex08.q1", "three to nine copy timings", lambda c: [len(x["copy_s"]) for x in c], (3, 9)),
    ("ex09.q1", "g = H / H_kv of the random cases, MHA (g = 1) among them",
     lambda c: [x["q"]["$randn"][1] // x["k"]["$randn"][1] for x in c[1:]], {1, 2, 4}),
    ("ex10.q2", "group sizes that divide d_h, 128 among them", lambda c: [x["group_size"] for x in c],
     {16, 32, 64, 128}),
    ("ex10.q5", "token groups per case: one to four, at least two in the edge",
     lambda c: [x["k"]["$randn"][1] // x["token_group"] for x in c[1:]], {1, 2, 3, 4}),
    ("ex11.q1", "the edges' block sizes, 2 to 16", lambda c: [x["block_size"] for x in c[:3]], {2, 4, 8, 16}),
    ("ex11.q1", "the random block sizes, 1 to 16", lambda c: [x["block_size"] for x in c[3:]], {1, 2, 4, 8, 16}),
    ("ex11.q1", "the first edge's forks, 2 to 4 sequences", lambda c: [len(c[0]["tables"])], (2, 4)),
    ("ex11.q1", "the edges' prompts, one to three full blocks and a partly filled one",
     lambda c: [c[k]["lengths"][0] // c[k]["block_size"] for k in (0, 1)], (1, 3)),
    ("ex11.q1", "the third edge: a multiple of b, 1 to 4 blocks, and an empty sequence",
     lambda c: [c[2]["lengths"][0] / c[2]["block_size"], c[2]["lengths"][1] - 1], {1.0, 2.0, 3.0, 4.0, -1}),
    ("ex11.q1", "the second edge's fork writing 1 token sometimes", lambda c: [_fork_write(c[1]) == 1], {True, False}),
    ("ex11.q1", "the second edge's fork writing 2 b tokens sometimes",
     lambda c: [_fork_write(c[1]) == 2 * c[1]["block_size"]], {True, False}),
    ("ex11.q1", "the second edge's fork never writing more than 2 b tokens",
     lambda c: [_fork_write(c[1]) <= 2 * c[1]["block_size"]], {True}),
    ("ex11.q1", "the third edge's third sequence holding 1 token sometimes", lambda c: [c[2]["lengths"][2] == 1],
     {True, False}),
    ("ex11.q1", "the third edge's third sequence holding 3 b tokens sometimes",
     lambda c: [c[2]["lengths"][2] == 3 * c[2]["block_size"]], {True, False}),
    ("ex11.q1", "the third edge's third sequence never past 3 b tokens",
     lambda c: [c[2]["lengths"][2] <= 3 * c[2]["block_size"]], {True}),
    ("ex11.q1", "random pools of one to five live sequences", lambda c: [len(x["tables"]) for x in c[3:]], (1, 5)),
    ("ex11.q2", "the edges' block sizes, 2 to 16", lambda c: [x["block_size"] for x in c[:3]], {2, 4, 8, 16}),
    ("ex11.q2", "the random block sizes, 1 to 16", lambda c: [x["block_size"] for x in c[3:]], {1, 2, 4, 8, 16}),
    ("ex11.q2", "the random steps of 1 to 6 sequences", lambda c: [len(x["counts"]) for x in c[3:]], (1, 6)),
    ("ex11.q2", "the random counts, 1 to 24", lambda c: [T for x in c[3:] for T in x["counts"]], (1, 24)),
    ("ex11.q2", "the random lengths, 0 to 40", lambda c: [S for x in c[3:] for S in x["lengths"]], (0, 40)),
    ("ex11.q2", "the edges' chunk crossing into its next block by 1 to b tokens (b up to 16)",
     lambda c: [S + T - (S // x["block_size"] + 1) * x["block_size"] for x in c[:3]
                for S, T in zip(x["lengths"], x["counts"], strict=True) if T > 1], (1, 16)),
    ("ex11.q2", "random steps that share prefix blocks, and steps that do not",
     lambda c: [len({b for t in x["tables"] for b in t}) < sum(map(len, x["tables"])) for x in c[3:]],
     {True, False}),
    ("ex11.q3", "thirteen cases: ten edges, three random", lambda c: [len(c)], {13}),
    ("ex11.q3", "the edges' reservations, as RUNNING_EDGES names them",
     lambda c: [tuple(x["reservation"] for x in c[:9])],
     {("paged", "max_tokens", "max_tokens", "paged", "paged", "paged", "paged", "paged", "max_tokens")}),
    ("ex11.q3", "the late-freeing edge and the random cases under either reservation",
     lambda c: [x["reservation"] for x in c[9:]], {"paged", "max_tokens"}),
    ("ex11.q3", "the edges' block sizes, 2 to 16", lambda c: [x["block_size"] for x in c[:10]], {2, 4, 8, 16}),
    ("ex11.q3", "the random block sizes, 1 to 16", lambda c: [x["block_size"] for x in c[10:]], {1, 2, 4, 8, 16}),
    ("ex11.q3", "the edges' requests, 2 to 5", lambda c: [len(x["requests"]) for x in c[:10]], (2, 5)),
    ("ex11.q3", "the random requests, 1 to 5", lambda c: [len(x["requests"]) for x in c[10:]], (1, 5)),
    ("ex11.q3", "P and D from 1 to 40", lambda c: [v for x in c for r in x["requests"] for v in r], (1, 40)),
    ("ex11.q3", "P and D up to 6 b where that is below 40 (b of 1 or 2), 6 b reached",
     lambda c: [max(v for r in x["requests"] for v in r) - 6 * x["block_size"] for x in c if x["block_size"] < 4],
     (-11, 0)),
    ("ex11.q3", "pools from the largest request's blocks to all of them and 2 more, both ends reached",
     lambda c: [(x["num_blocks"] == max(_held(x)), x["num_blocks"] == sum(_held(x)) + 2,
                 max(_held(x)) <= x["num_blocks"] <= sum(_held(x)) + 2) for x in c[10:]],
     {(True, False, True), (False, True, True), (False, False, True)}),
    ("ex11.q3", "the tight edges' pools, from the largest request to half of all",
     lambda c: [max(_held(x)) <= x["num_blocks"] <= max(max(_held(x)), sum(_held(x)) // 2)
                for i, x in enumerate(c[:10]) if i != 9 and x["reservation"] == "paged" or i == 8], {True}),
    ("ex11.q4", "ten cases: seven edges, three random", lambda c: [len(c)], {10}),
    ("ex11.q4", "the edges' block sizes, 2 to 16", lambda c: [x["block_size"] for x in c[:7]], {2, 4, 8, 16}),
    ("ex11.q4", "the random block sizes, 1 to 16", lambda c: [x["block_size"] for x in c[7:]], {1, 2, 4, 8, 16}),
    ("ex11.q4", "the edges' beams, 2 to 6", lambda c: [len(x["parents"][0]) for x in c[:7]], (2, 6)),
    ("ex11.q4", "the random beams, 1 to 6", lambda c: [len(x["parents"][0]) for x in c[7:]], (1, 6)),
    ("ex11.q4", "P from 1 to 40", lambda c: [x["P"] for x in c], (1, 40)),
    ("ex11.q4", "1 to 16 steps", lambda c: [len(x["parents"]) for x in c], (1, 16)),
    ("ex11.q4", "the first step's parents all the prompt, every step k of them",
     lambda c: [x["parents"][0] == [0] * len(x["parents"][0])
                and {len(s) for s in x["parents"]} == {len(x["parents"][0])} for x in c], {True}),
    ("ex11.q4", "a later step's distinct parents from 1 (few likelier: 5 of 6 the most seen), each a beam of the "
     "step before", lambda c: [len(set(s)) * (max(s) < len(s)) for x in c for s in x["parents"][1:]], (1, 5)),
    ("ex11.q6", "block sizes of the random cases", lambda c: [x["block_size"] for x in c[3:]], {2, 4, 8}),
    ("ex12.q2", "the edges' max_batch, from 2 to 4", lambda c: [c[0]["max_batch"], c[1]["max_batch"]], {2, 3, 4}),
    ("ex12.q4", "S of the random cases, up to 4,096", lambda c: [x["S"] for x in c[1:]], (16, 4096)),
    ("ex15.q1", "S from 1 to 30", lambda c: [x["S"] for x in c], (1, 30)),
    ("ex15.q4", "S_max of the random cases, from 1", lambda c: [x["S_max"] for x in c[1:]], (1, 40)),
    ("ex14.q3", "gamma from 1 to 5 drafts, over 3 to 9 tokens",
     lambda c: [len(x["drafts"]["$long"]) for x in c] + [-x["draft_logits"]["$randn"][1] for x in c],
     {1, 2, 3, 4, 5} | {-v for v in range(3, 10)}),
    ("ex16.q1", "eight cases, the random latencies 0 or 2e-6 s", lambda c: [len(c)] + [x["latency"] for x in c[3:]],
     {8, 0.0, 2e-6}),
    ("ex16.q1", "the random models, with and without GQA",
     lambda c: [_GQA[x["model"]["$preset"]] for x in c[3:]], {True, False}),
    ("ex16.q3", "ten traces, one to three workers in each pool",
     lambda c: [len(c)] + [x["prefill_workers"] for x in c] + [x["decode_workers"] for x in c], {10, 1, 2, 3}),
    ("ex16.q3", "five to ten requests a trace, prompts of 1 to 60 tokens",
     lambda c: [len(x["arrivals_ms"]) for x in c] + [-t for x in c for t in x["prompt_tokens"]],
     set(range(5, 11)) | {-t for t in range(1, 61)}),
    ("ex16.q3", "the random traces: one to three workers in each pool",
     lambda c: [(x["prefill_workers"], x["decode_workers"]) for x in c[6:]], {(n, m) for n in (1, 2, 3) for m in
                                                                                (1, 2, 3)}),
    ("ex16.q3", "the edges about several prefill workers: two or three of them",
     lambda c: [c[i]["prefill_workers"] for i in (0, 1, 3)], {2, 3}),
    ("ex16.q3", "the edges about several decode workers: two or three of them",
     lambda c: [c[i]["decode_workers"] for i in (2, 3)], {2, 3}),
    ("ex16.q3", "the first arrival from 0 ms to 60 ms x 3", lambda c: [x["arrivals_ms"][0] for x in c], (0, 180)),
    ("ex16.q3", "arrivals together or up to 60 ms x 3 apart",
     lambda c: [b - a for x in c for a, b in zip(x["arrivals_ms"], x["arrivals_ms"][1:], strict=False)], (0, 180)),
    ("ex16.q3", "1 to 40 tokens to generate", lambda c: [t for x in c for t in x["new_tokens"]], (1, 40)),
    ("ex16.q3", "1 to 3 ms a prompt token, decode steps of 5 to 20 ms",
     lambda c: [x["prefill_ms_per_token"] for x in c] + [x["decode_step_ms"] for x in c], set(range(1, 4)) |
     set(range(5, 21))),
    ("ex17.q3", "twelve plans", lambda c: [len(c)], {12}),
    ("ex17.q3", "one rank for the one-rank edge", lambda c: [c[5]["W"]], {1}),
    ("ex17.q3", "2, 4 or 8 ranks for the other edges and the chapter's forward",
     lambda c: [x["W"] for i, x in enumerate(c[:9]) if i != 5], {2, 4, 8}),
    ("ex17.q3", "1, 2, 4 or 8 ranks in the random plans", lambda c: [x["W"] for x in c[9:]], {1, 2, 4, 8}),
    ("ex17.q3", "two to eight layers a plan", lambda c: [len(x["layers"]) for x in c[:8] + c[9:]], set(range(2, 9))),
    ("ex17.q3", "every kind of layer", lambda c: [k for x in c for k, _ in x["layers"]],
     {"column", "row", "local", "norm"}),
    ("ex17.q3", "a layer's width (not a norm's) of 8 to 512, multiples of 8",
     lambda c: [w for x in c[:8] + c[9:] for k, w in x["layers"] if k != "norm"], set(range(8, 513, 8))),
    ("ex17.q3", "a plan's input width (read by a first norm) of 8 to 512, multiples of 8",
     lambda c: [x["layers"][0][1] for x in c[:8] + c[9:] if x["layers"][0][0] == "norm"], set(range(8, 513, 8))),
    ("ex17.q3", "1 to 8 sequences in the plans", lambda c: [x["B"] for x in c[:8] + c[9:]], set(range(1, 9))),
    ("ex17.q3", "1 to 8 sequences in the chapter's forward", lambda c: [c[8]["B"]], set(range(1, 9))),
    ("ex17.q3", "1 to 64 new tokens in the plans", lambda c: [x["T"] for x in c[:8] + c[9:]], set(range(1, 65))),
    ("ex17.q3", "1 to 64 new tokens in the chapter's forward", lambda c: [c[8]["T"]], set(range(1, 65))),
    ("ex17.q3", "2 or 4 bytes a value", lambda c: [x["s"] for x in c], {2, 4}),
    ("ex17.q3", "the chapter's forward of 1 to 4 blocks", lambda c: [(len(c[8]["layers"]) - 3) / 8], {1, 2, 3, 4}),
    ("ex17.q3", "the chapter's forward: d of 64, 512 or 4,096, V of 600, 32,000 or 128,256",
     lambda c: [c[8]["layers"][0][1], -c[8]["layers"][-1][1]], {64, 512, 4096, -600, -32000, -128256}),
    ("ex17.q3", "the chapter's forward: MHA, GQA and MQA (QKV widths over d)",
     lambda c: [c[8]["layers"][2][1] / c[8]["layers"][0][1]], {1.5, 2.0, 3.0, 1.125, 1.25, 1.0625}),
]


@pytest.mark.parametrize(("qid", "what", "pick", "values"), DOMAINS, ids=[f"{d[0]}: {d[1]}" for d in DOMAINS])
def test_the_random_cases_span_what_the_question_documents(qid: str, what: str, pick, values) -> None:
    seeds = Q4_SEEDS if qid == "ex06.q4" else range(300) if qid.startswith(("ex06", "ex16", "ex14.q3")) else range(
        2000)
    drawn = _drawn(qid, pick, seeds)
    if isinstance(values, set):
        assert set(drawn) == values, (qid, what, sorted(set(drawn) ^ values, key=str))
    else:
        assert (min(drawn), max(drawn)) == values, (qid, what, min(drawn), max(drawn))


def test_ex18_q2_snapkv_prompts_span_their_documented_ranges() -> None:
    """ex18 Q2's prompts: the first fits the budget (2 <= T <= budget), every other runs 2 to 14 keys past it;
    windows of 1 to 4, odd kernels 3, 5 and 7, a budget 1 to 6 keys above the window, heads of width 2, 4 and
    8, queries and keys of scale 1.5 (sharp enough for a vote to decide). Guards a range moved by one, which
    stops drawing its end (a window of 1 is the last-query neighbour's own case) and a changed scale."""
    edge("ex18.q2", "within the budget")
    seen: dict[str, set] = {"window": set(), "kernel": set(), "above": set(), "past": set(), "d_h": set()}
    for seed in SEEDS:
        drawn = cases("ex18.q2", seed)
        for i, case in enumerate(drawn):
            T, d_h = case["k"]["$randn"]
            assert case["q"]["$randn"] == [T, d_h] and case["q"]["scale"] == case["k"]["scale"] == 1.5
            window, budget = case["window"], case["budget"]
            assert 1 <= window <= 4 and case["kernel"] in (3, 5, 7) and 1 <= budget - window <= 6
            if i == 0:
                assert 2 <= T <= budget
            else:
                assert 2 <= T - budget <= 14
                seen["past"].add(T - budget)
            seen["window"].add(window)
            seen["kernel"].add(case["kernel"])
            seen["above"].add(budget - window)
            seen["d_h"].add(d_h)
    assert seen["window"] == {1, 2, 3, 4} and seen["kernel"] == {3, 5, 7} and seen["above"] == set(range(1, 7))
    assert {2, 14} <= seen["past"] and seen["d_h"] == {2, 4, 8}


def test_ex18_q1_latent_cases_span_their_documented_ranges() -> None:
    """ex18 Q1: twelve cases; the first sized for the method check (H = 2, d_h = 32, d_c = 4, d_rope = 4, S from
    600 to 700), the others (one per value neighbour, then two random) with H in {1, 2, 4}, d_h in {2, 4, 8}, d_c
    in {2, 3, 5, 6, 8, 12}, d_rope in {2, 4, 6, 8}, S from 2 to 12 and theta in {10, 100, 1000, 10000}; weights of
    scale 0.5, x, the latents and the RoPE keys of scale 1; w_q and w_o [d, d], w_qr [H·d_rope, d]. Every edge case
    separates its neighbour (the halves' case has d_rope >= 4, the unrotated one S >= 2, the 1/√d_c one d_c ≠
    d_h + d_rope). Guards a range moved by one, the sized case moved or repeated, a neighbour's case not drawn
    until it separates, and a changed scale (weights of scale 1.5 saturate the softmax)."""
    from minigpt.exercises import ex18_latent

    edge("ex18.q1", "the first case, measured")
    seen: dict[str, set] = {k: set() for k in ("H", "d_h", "d_c", "d_rope", "S", "S0", "theta")}
    for seed in SEEDS[:100]:
        drawn = cases("ex18.q1", seed)
        assert len(drawn) == 12
        for i, case in enumerate(drawn):
            H, d_h, d_c = case["w_uk"]["$randn"]
            S, d_rope = case["k_rope"]["$randn"]
            d = H * d_h
            assert case["c"]["$randn"] == [S, d_c] and case["x"]["$randn"] == [d]
            assert case["w_uv"]["$randn"] == [H, d_h, d_c] and case["w_q"]["$randn"] == case["w_o"]["$randn"] == [d, d]
            assert case["w_qr"]["$randn"] == [H * d_rope, d]
            assert [case[w]["scale"] for w in ("w_q", "w_qr", "w_uk", "w_uv", "w_o")] == [0.5] * 5
            assert case["x"]["scale"] == case["c"]["scale"] == case["k_rope"]["scale"] == 1.0
            assert case["theta"] in (10.0, 100.0, 1000.0, 10000.0)
            if i == 0:
                assert (H, d_h, d_c, d_rope) == (2, 32, 4, 4) and 600 <= S <= 700
                seen["S0"].add(S)
                continue
            assert H in (1, 2, 4) and d_h in (2, 4, 8) and d_c in (2, 3, 5, 6, 8, 12) and d_rope in (2, 4, 6, 8)
            assert 2 <= S <= 12
            for key, value in (("H", H), ("d_h", d_h), ("d_c", d_c), ("d_rope", d_rope), ("S", S),
                               ("theta", case["theta"])):
                seen[key].add(value)
            if i <= len(ex18_latent._NEIGHBOURS):
                assert ex18_latent._separates(case, ex18_latent._NEIGHBOURS[i - 1]), (seed, i)
    assert seen["H"] == {1, 2, 4} and seen["d_h"] == {2, 4, 8} and seen["d_c"] == {2, 3, 5, 6, 8, 12}
    assert seen["d_rope"] == {2, 4, 6, 8} and seen["S"] == set(range(2, 13))
    assert seen["theta"] == {10.0, 100.0, 1000.0, 10000.0} and min(seen["S0"]) < 610 and max(seen["S0"]) > 690


def test_ex11_q2_every_edge_case_holds_all_three_edges() -> None:
    """ex11 Q2's first three cases each hold every edge, under every seed: three different lengths, each S past
    its first block and inside a block (S > b, S % b > 0: a table read at a later entry, ⌈p / b⌉ and the row
    told apart), b >= 2, no block id equal to its place in its table (the logical slot told apart), one
    sequence's chunk crossing into its next block, numbered other than next (the chunk's slots laid
    consecutively told apart). The bug it catches: a generator mutated so that an edge holds only by luck."""
    for name in ("one late", "⌈p / b⌉", "the logical slot p", "not × b", "laid consecutively",
                 "one start for every sequence", "one slot per sequence"):
        edge("ex11.q2", name)
    for seed in range(300):
        for case in cases("ex11.q2", seed)[:3]:
            b, lengths, counts = case["block_size"], case["lengths"], case["counts"]
            assert b >= 2 and len(set(lengths)) == 3, (seed, case)
            assert all(S > b and S % b for S in lengths), (seed, case)
            assert all(block != i for table in case["tables"] for i, block in enumerate(table)), (seed, case)
            chunks = [(table, S, T) for table, S, T in zip(case["tables"], lengths, counts, strict=True) if T > 1]
            assert len(chunks) == 1 and sorted(counts)[:2] == [1, 1], (seed, case)
            table, S, T = chunks[0]
            j = S // b
            assert (S + T - 1) // b == j + 1 and table[j + 1] != table[j] + 1, (seed, case)

