"""H2O and SnapKV keep what their papers' arithmetic keeps: each cache, driven step by step with random queries
and keys, holds in every (layer, sequence, K/V head) row exactly the positions and scores of a plain reference
written from the papers (one row at a time, float64, lists), and two hand-worked cases.

The bugs these catch (each checked by mutating `minigpt/runtime/eviction.py`):
- H2O scoring each step afresh instead of accumulating (`score = ...` for `score += ...`): the decode steps
  after the prompt choose other heavy hitters;
- SnapKV keeping its lowest-voted keys, voting with the last query only, or skipping the max-pool: another
  kept set for the same prompt;
- SnapKV pooling across the window's edge (the window's votes spilling onto the key before it);
- a vote or a score summed over the wrong heads (every head instead of the K/V head's group).

The references follow the reference code's arithmetic: H2O (FMInference/H2O at 0ee6a85,
`h2o_hf/utils_real_drop/modify_llama.py`, `_update_hh_score`) adds each step's attention weights, summed over
its new queries, to the accumulated score of every key they saw, and keeps the `recent` newest plus the best
accumulated scores. That code keeps one score per query head (its K/V repeated to every head); a cache that
stores each K/V head once keeps one per K/V head, summed over its group's query heads, as here. SnapKV
(FasterDecoding/SnapKV at 395b54d, `snapkv_utils.py`, with `pooling='maxpool'`) sums the observation
window's softmax over its queries for the keys before the window, max-pools those among themselves
(kernel, stride 1, same length), keeps the window plus the top of them, and compresses the prompt once.
Where the reference code averages a K/V head's group (SnapKV's GQA ports) this cache sums it: a constant factor g,
the same top-k. Max-pooling makes plateaus of equal votes, and topk breaks ties as it likes (here and in
the reference code), so SnapKV's kept keys are checked by their votes, not their positions.
"""

from __future__ import annotations

import math
import random

import pytest
import torch

from minigpt import ModelConfig
from minigpt.runtime.eviction import H2OCache, SnapKVCache

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _drive(cache, steps: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    """Feed `(q [L, B, H, T, d_h], k [L, B, H_kv, T, d_h])` per step as MiniGPT does: update, observe, advance."""
    for q, k in steps:
        T = k.shape[3]
        for layer in range(cache.config.L):
            keys, _ = cache.update(layer, k[layer], k[layer])
            cache.observe(layer, q[layer], keys, cache.visible(T))
        cache.advance(T)


def _random_steps(config: ModelConfig, B: int, lengths: list[int], seed: int, scale: float = 2.0):
    gen = torch.Generator().manual_seed(seed)
    return [(scale * torch.randn(config.L, B, config.H, T, config.d_h, generator=gen),
             scale * torch.randn(config.L, B, config.H_kv, T, config.d_h, generator=gen)) for T in lengths]


def _softmax(xs: list[float]) -> list[float]:
    top = max(xs)
    e = [math.exp(x - top) for x in xs]
    return [v / sum(e) for v in e]


def _dot(a, b) -> float:
    return sum(float(x) * float(y) for x, y in zip(a, b, strict=True))


def _h2o_row(steps, l, b, h, g, budget, recent):
    """One row of H2O, as lists: (position, key, accumulated score) held after every step."""
    held, t, after = [], 0, []
    for q, k in steps:
        T, d_h = k.shape[3], k.shape[4]
        held += [[t + i, k[l, b, h, i].tolist(), 0.0] for i in range(T)]
        n_old = len(held) - T
        for head in range(h * g, (h + 1) * g):  # the query heads of this K/V head's group
            for i in range(T):
                seen = held[: n_old + i + 1]  # every held key, and the new ones causally
                w = _softmax([_dot(q[l, b, head, i], key) / math.sqrt(d_h) for _, key, _ in seen])
                for entry, weight in zip(seen, w, strict=True):
                    entry[2] += weight
        t += T
        if len(held) > budget:
            keep_recent = [e for e in held if e[0] >= t - recent]
            rest = sorted((e for e in held if e[0] < t - recent), key=lambda e: -e[2])
            held = sorted(keep_recent + rest[: budget - len(keep_recent)], key=lambda e: e[0])
        after.append([(e[0], e[2]) for e in held])
    return after


def _snapkv_votes(q, k, l, b, h, g, window, kernel):
    """SnapKV's pooled votes for one row's keys before the window: the window's softmax summed over its queries
    and the group's heads, then max-pooled among those keys only (SnapKV pools `attn_weights[..., :-window]`)."""
    T, d_h = k.shape[3], k.shape[4]
    w = min(window, T)
    votes = [0.0] * (T - w)
    for head in range(h * g, (h + 1) * g):
        for i in range(T - w, T):
            weights = _softmax([_dot(q[l, b, head, i], k[l, b, h, j]) / math.sqrt(d_h) for j in range(i + 1)])
            for j in range(T - w):
                votes[j] += weights[j]
    r = kernel // 2
    return [max(votes[max(0, j - r): j + r + 1]) for j in range(T - w)]


def test_h2o_accumulates_scores_over_every_step_as_the_reference_does():
    config = ModelConfig(L=2, H=4, H_kv=2, d_h=4, d_ffn=16, V=20, S_max=32)
    B, budget, recent = 2, 5, 2
    lengths = [7, 1, 1, 1, 1, 1, 1]
    steps = _random_steps(config, B, lengths, seed=5)
    cache = H2OCache(config, B, budget=budget, recent=recent)
    g = config.H // config.H_kv
    rows = {(l, b, h): _h2o_row(steps, l, b, h, g, budget, recent)
            for l in range(config.L) for b in range(B) for h in range(config.H_kv)}
    for s in range(len(steps)):
        _drive(cache, steps[s : s + 1])
        for (l, b, h), after in rows.items():
            want = after[s]
            assert cache.pos[l, b, h, : cache.n].tolist() == [p for p, _ in want], (s, l, b, h)
            got = cache.score[l, b, h, : cache.n].tolist()
            assert got == pytest.approx([sc for _, sc in want], rel=1e-5, abs=1e-6), (s, l, b, h)
    # The case is one where accumulating matters: ranking the last step's weights alone keeps other keys.
    assert any(after[-1] != _h2o_row(steps[-1:], l, b, h, g, budget, recent)[-1] for (l, b, h), after in rows.items())


def test_h2o_hand_worked_uniform_attention():
    """Keys all zero: every query spreads its weight evenly. Prompt of 3 (causal): key 0 gets 1 + 1/2 + 1/3,
    key 1 gets 1/2 + 1/3, key 2 gets 1/3; then one decode token adds 1/4 to each of the four keys. Budget 3 with
    one recent slot keeps token 3 (recent) and keys 0 and 1, the two heaviest: 25/12 and 13/12."""
    config = ModelConfig(L=1, H=1, H_kv=1, d_h=2, d_ffn=4, V=4, S_max=8)
    cache = H2OCache(config, 1, budget=3, recent=1)
    zeros = [(torch.ones(1, 1, 1, T, 2), torch.zeros(1, 1, 1, T, 2)) for T in (3, 1)]
    _drive(cache, zeros[:1])
    assert cache.score[0, 0, 0, :3].tolist() == pytest.approx([11 / 6, 5 / 6, 1 / 3])
    _drive(cache, zeros[1:])
    assert cache.pos[0, 0, 0, :3].tolist() == [0, 1, 3]
    assert cache.score[0, 0, 0, :3].tolist() == pytest.approx([25 / 12, 13 / 12, 1 / 4])


@pytest.mark.parametrize("H, H_kv, kernel", [(4, 4, 3), (4, 2, 1), (4, 1, 5)])
def test_snapkv_keeps_the_window_and_the_best_pooled_votes_as_the_reference_does(H, H_kv, kernel):
    config = ModelConfig(L=2, H=H, H_kv=H_kv, d_h=4, d_ffn=16, V=20, S_max=32)
    B, P, budget, window = 2, 16, 7, 3
    (q, k), *decode = _random_steps(config, B, [P, 1, 1], seed=11 + kernel)
    cache = SnapKVCache(config, B, budget=budget, window=window, kernel=kernel)
    _drive(cache, [(q, k)])
    g = H // H_kv
    for l in range(config.L):
        for b in range(B):
            for h in range(H_kv):
                kept = cache.pos[l, b, h, :budget].tolist()
                assert kept == sorted(kept) and kept[-window:] == list(range(P - window, P))  # the window stays
                pooled = _snapkv_votes(q, k, l, b, h, g, window, kernel)
                best = sorted(pooled, reverse=True)[: budget - window]
                # the other kept keys are a top-(b - window) of the pooled votes: equal values, not equal
                # positions, since max-pooling makes plateaus of equal votes and topk breaks ties as it likes
                got = sorted((pooled[j] for j in kept[:-window]), reverse=True)
                assert got == pytest.approx(best, rel=1e-6), (l, b, h, kept)
                assert cache.score[l, b, h, : budget - window].tolist() == pytest.approx(
                    [pooled[j] for j in kept[:-window]], rel=1e-5)
    _drive(cache, decode)  # decode appends, nothing is evicted again
    assert cache.n == budget + 2 and (cache.pos[..., budget : budget + 2] == torch.tensor([P, P + 1])).all()


def test_snapkv_hand_worked_votes_and_pooling():
    """One head, d_h = 2, a prompt of 6 whose last query (the window, w = 1) is q = (40, 0); key 1 is (1, 0)
    and the others (0, 0). The window's vote is e^(40/√2) / (e^(40/√2) + 5) ≈ 1 on key 1 and the same tiny
    value ε on every other key. A max-pool of 3 gives keys 0, 1 and 2 the vote of key 1 and keys 3 and 4 ε,
    so a budget of 4 (the window and three more) keeps exactly keys 0, 1, 2 and 5. Without pooling (kernel 1)
    only key 1 stands out: it is kept, with two of the tied others."""
    config = ModelConfig(L=1, H=1, H_kv=1, d_h=2, d_ffn=4, V=4, S_max=8)
    q = torch.zeros(1, 1, 1, 6, 2)
    q[..., 5, 0] = 40.0
    k = torch.zeros(1, 1, 1, 6, 2)
    k[..., 1, 0] = 1.0
    cache = SnapKVCache(config, 1, budget=4, window=1, kernel=3)
    _drive(cache, [(q, k)])
    assert cache.pos[0, 0, 0, :4].tolist() == [0, 1, 2, 5]
    big = math.exp(40 / math.sqrt(2))
    assert cache.score[0, 0, 0, :3].tolist() == pytest.approx([big / (big + 5)] * 3)
    no_pool = SnapKVCache(config, 1, budget=4, window=1, kernel=1)
    _drive(no_pool, [(q, k)])
    assert 1 in no_pool.pos[0, 0, 0, :4].tolist() and no_pool.pos[0, 0, 0, 3] == 5


def test_reference_rows_are_exercised_with_more_than_one_group_head():
    """The H2O case sums over a group of two query heads: a sum over one head, or over all four, differs."""
    config = ModelConfig(L=1, H=4, H_kv=2, d_h=4, d_ffn=16, V=20, S_max=32)
    steps = _random_steps(config, 1, [6, 1, 1], seed=random.Random(3).randint(0, 99))
    full = _h2o_row(steps, 0, 0, 1, 2, 4, 1)
    one_head = _h2o_row(steps, 0, 0, 1, 1, 4, 1)
    assert full[-1] != one_head[-1]
