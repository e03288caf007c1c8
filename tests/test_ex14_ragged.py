"""Exercise 14 Question 1 (`minigpt.exercises.ex14_ragged`): one greedy round of a ragged batch, each sequence
keeping its own accepted prefix n_b and its target cache its own length. The oracle is the package one sequence
at a time (`accept_drafts` at B = 1, the cache `speculative_generate` leaves): it equals a ragged round written
from scratch, and Chapter 17's batch round (`accept_drafts` on the whole batch) wherever the two must agree; the
reference solution passes (its mutants fail in tests/test_exercise_mechanisms.py); the generator draws what it
documents; a round worked by hand."""

from __future__ import annotations

import random
import runpy
from pathlib import Path
from typing import Any
from unittest import mock

import torch
import torch.nn.functional as F

from minigpt.exercises import EXERCISES, ex14, ex14_ragged, run_check
from minigpt.runtime.kv_cache import KVCache
from minigpt.runtime.speculative import accept_drafts, speculative_generate

SOLUTIONS = Path(__file__).resolve().parent.parent / "exercises" / "solutions" / "ex14_speculative_decoding.py"
SOLUTION = runpy.run_path(str(SOLUTIONS))["greedy_round"]
SEEDS = range(40)


def _cases(seeds: range = SEEDS) -> list[dict]:
    return [c for seed in seeds for c in EXERCISES["ex14"].question("q1").cases(random.Random(seed))]


def _scratch(drafts: list[list[int]], target_argmax: list[list[int]], lengths: list[int]) -> list[list[Any]]:
    """The ragged round from scratch: sequence b walks its drafts while each is the target's argmax (n_b), emits
    the argmax at n_b, and its cache, which held lengths[b] − 1 rows and got γ + 1 from the verify pass, keeps
    lengths[b] − 1 + 1 + n_b (the last committed token and the accepted drafts)."""
    out = []
    for row, best, length in zip(drafts, target_argmax, lengths, strict=True):
        n = 0
        for x, t in zip(row, best, strict=False):
            if x != t:
                break
            n += 1
        out.append([row[:n] + [best[n]], (length - 1) + 1 + n])
    return out


def _batch_oracle(drafts: list[list[int]], target_argmax: list[list[int]]) -> list[list[int]]:
    """The question's oracle before the ragged round: `accept_drafts` on the whole batch (the batch's minimum)."""
    V = 1 + max(max(row) for row in drafts + target_argmax)
    p = F.one_hot(torch.tensor(target_argmax), V).float()
    x = torch.tensor(drafts)
    n, nxt = accept_drafts(p, list(F.one_hot(x, V).float().unbind(1)), list(x.split(1, dim=1)), greedy=True)
    return torch.cat([x[:, :n], nxt], dim=1).tolist()


def _random_batch(rng: random.Random, same: bool) -> dict:
    """A batch of 1 to 4 sequences; with `same`, every sequence accepts the same count of its drafts."""
    B, gamma, V = rng.randint(1, 4), rng.randint(1, 8), rng.randint(2, 50)
    best = [[rng.randrange(V) for _ in range(gamma + 1)] for _ in range(B)]
    n_all = rng.randint(0, gamma)
    drafts = []
    for row in best:
        n = n_all if same else rng.randint(0, gamma)
        drafts.append([t if i < n else (t + rng.randrange(1, V)) % V if i == n else rng.randrange(V)
                       for i, t in enumerate(row[:gamma])])
    return dict(drafts=drafts, target_argmax=best, lengths=[rng.randint(1, 40) for _ in range(B)])


def test_the_oracle_is_a_ragged_round() -> None:
    """Guards an oracle that takes the batch's minimum, leaves the bonus out, or reads a cache length off by a
    row: on every case of 40 seeds and on 300 random batches it equals the round written from scratch."""
    rng = random.Random(1)
    for case in _cases() + [_random_batch(rng, same=False) for _ in range(300)]:
        assert ex14._greedy_round(**case) == _scratch(**case), case


def test_where_every_sequence_accepts_as_many_it_is_chapter_17s_batch_round() -> None:
    """Guards a ragged oracle that is not the package's batch rule where the two must agree: at B = 1, and in a
    batch whose sequences all accept the same count, its tokens are `accept_drafts` on the whole batch; and with
    one committed length for the batch, `speculative_generate` on the whole batch leaves each of its caches."""
    rng = random.Random(2)
    for i in range(200):
        case = _random_batch(rng, same=True)
        if i % 2:
            case = {k: v[:1] for k, v in case.items()}  # B = 1 (any count)
        ragged = ex14._greedy_round(**case)
        assert [tokens for tokens, _ in ragged] == _batch_oracle(case["drafts"], case["target_argmax"]), case
        L, B, gamma = case["lengths"][0], len(case["drafts"]), len(case["drafts"][0])
        V = 1 + max(max(row) for row in case["drafts"] + case["target_argmax"])
        prefill = [torch.zeros(B, L - 1, V)] if L > 1 else []
        draft = ex14_ragged._Scripted(V, L + gamma, prefill + [F.one_hot(torch.tensor(col)[:, None], V).float()
                                                                for col in zip(*case["drafts"], strict=True)])
        target = ex14_ragged._Scripted(V, L + gamma, [*prefill, F.one_hot(torch.tensor(case["target_argmax"]),
                                                                           V).float()])
        speculative_generate(target, draft, torch.zeros(B, L, dtype=torch.long), 1, gamma=gamma)  # type: ignore
        alone = ex14._greedy_round(**{**case, "lengths": [L] * B})
        assert all(kept == target.caches[0].S for _, kept in alone), case


def test_the_cache_length_is_the_one_speculative_generate_leaves() -> None:
    """Guards an oracle that computes the cache length itself: without the package's rewind (`KVCache.truncate`
    a no-op) every sequence keeps lengths[b] + γ rows, so the length must come from the run's own cache."""
    case = _cases(range(1))[0]
    with mock.patch.object(KVCache, "truncate", lambda self, S: None):
        kept = [k for _, k in ex14._greedy_round(**case)]
    assert kept == [length + len(row) for row, length in zip(case["drafts"], case["lengths"], strict=True)]


def test_the_reference_solution_passes_the_check() -> None:
    """Guards a question whose own reference solution fails (a generator that draws a case off the rule)."""
    for seed in range(6):
        result = run_check("ex14.q1", SOLUTION, seed=seed)
        assert result.status == "pass", result.message


def test_the_generator_draws_what_it_documents() -> None:
    """Guards a generator that never reaches an end of its documented ranges (1 to 4 sequences, 2 to 4 in the
    batch-minimum edge; 1 to 8 drafts, 2 to 8 in the every-match edge; token ids below 8 to 50; 1 to 40
    committed tokens) or puts an edge case off its edge: twelve cases a seed, the eight edges first, each
    separating its neighbour; the random batches hold sequences that keep every draft and ones that reject."""
    Bs, edge_Bs, gammas, match_gammas, lengths, tops, full, rejects = (set() for _ in range(8))
    n_edges = len(ex14_ragged.RAGGED_EDGES)
    for seed in range(300):
        cases = _cases(range(seed, seed + 1))
        assert len(cases) == n_edges + ex14_ragged.RANDOM_CASES == 12, seed
        for i, case in enumerate(cases):
            drafts, best = case["drafts"], case["target_argmax"]
            assert len(drafts) == len(best) == len(case["lengths"]), (seed, i)
            assert all(len(t) == len(d) + 1 == len(drafts[0]) + 1 for d, t in zip(drafts, best, strict=True))
            (edge_Bs if i == 0 else Bs).add(len(drafts))
            (match_gammas if i == 3 else gammas).add(len(drafts[0]))
            lengths.update(case["lengths"])
            tops.add(max(x for row in drafts + best for x in row))
            if i < n_edges:
                assert ex14_ragged.separates(case, ex14_ragged.NEIGHBOURS[i]), (seed, i)
            else:
                for tokens, _ in ex14_ragged.replay(**case):
                    (full if len(tokens) == len(drafts[0]) + 1 else rejects).add(seed)
    assert Bs == {1, 2, 3, 4} and edge_Bs == {2, 3, 4}, (Bs, edge_Bs)
    assert gammas == set(range(1, 9)) and match_gammas == set(range(2, 9)), (gammas, match_gammas)
    assert lengths == set(range(1, 41)), lengths
    assert max(tops) == 49 and min(tops) <= 7, (min(tops), max(tops))
    assert len(full) > 100 and len(rejects) > 100, (len(full), len(rejects))


def test_a_round_worked_by_hand() -> None:
    """Guards a round that takes the batch's minimum, counts every match, or misreads the cache.
    Sequence 0 (4 committed tokens) drafts 5, 7, 2 and the target's argmaxes are 5, 7, 2, then 9: every draft is
    kept (n = 3) and the bonus 9 follows, [5, 7, 2, 9]; its cache held 3 rows, the verify pass wrote 4 (the last
    committed token and the 3 drafts), all kept: 7 = 4 + 3. Sequence 1 (10 tokens) drafts 5, 1, 6 against 5, 3,
    6, 0: draft 1 differs, so n = 1 (the match at draft 2 does not count) and the correction is 3: [5, 3], cache
    11. Sequence 2 (1 token) drafts 8, 8, 8 against 1, 8, 8, 4: n = 0, [1], cache 1. The batch's minimum, 0,
    gives [5], [5], [1] with caches 4, 10, 1; counting every match gives sequence 1 [5, 1, 6] and 12, sequence 2
    [8, 8, 8] and 3."""
    case = dict(drafts=[[5, 7, 2], [5, 1, 6], [8, 8, 8]], target_argmax=[[5, 7, 2, 9], [5, 3, 6, 0], [1, 8, 8, 4]],
                lengths=[4, 10, 1])
    right = [[[5, 7, 2, 9], 7], [[5, 3], 11], [[1], 1]]
    assert ex14._greedy_round(**case) == SOLUTION(**case) == right
    assert ex14_ragged.replay(**case, wrong="batch minimum") == [[[5], 4], [[5], 10], [[1], 1]]
    assert ex14_ragged.replay(**case, wrong="every match") == [[[5, 7, 2, 9], 7], [[5, 1, 6], 12], [[8, 8, 8], 3]]
