"""Exercise 18 Question 4 (`minigpt.exercises.ex18_window`): the keys each query of a chunk attends through a
sliding-window cache with attention sinks. The oracle is the package's `WindowKVCache` driven as `MiniGPT` drives
it; the case generator picks its edges with a plain replay (`_replay`) and its wrong neighbours. Here: the oracle is
what a real `MiniGPT` forward hands its attention, the replay is the oracle, a reference solution written apart
agrees and the instructors' solution passes, each edge separates its neighbour under every seed, plausible mutants
of the reference solution fail (tests/test_exercise_mechanisms.py), the generator spans its ranges and gives up when
it must, and one case worked by hand. (The named wrong answers, written apart, lose under every seed in
`tests/test_seed_independence_ex14_18.py`.)"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch
from test_exercise_mechanisms import mutant

from minigpt.config import ModelConfig
from minigpt.exercises import EXERCISES, ex18_window, run_check
from minigpt.runtime.model import MiniGPT, attention
from minigpt.runtime.window_cache import WindowKVCache

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "exercises" / "solutions" / "ex18_cache_frontier.py"
SEEDS = range(200)


def drawn(seed: int) -> list[dict]:
    return EXERCISES["ex18"].question("q4").cases(random.Random(seed))


def random_cases(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [ex18_window._case(rng) for _ in range(n)]


def test_the_oracle_is_what_minigpt_hands_its_attention() -> None:
    """The oracle drives the cache by hand (`_forward`: check_room, update, visible, advance); a real MiniGPT
    forward through the same cache must apply the same mask to the chunk. Catches an oracle that drives the
    cache otherwise than the model does (visible before update, a decode step fed as a chunk, the chunk's mask
    read after advance)."""
    config = ModelConfig(L=2, H=2, H_kv=1, d_h=4, d_ffn=8, V=11, S_max=64)
    torch.manual_seed(0)
    model = MiniGPT(config)
    masks: list[torch.Tensor] = []

    def recording(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        masks.append(visible.clone())
        return attention(q, k, v, visible)

    for block in model.blocks:
        block.attn.kernel = recording
    for case in random_cases(60, seed=7) + drawn(0):
        cache = WindowKVCache(config, window=case["window"], sinks=case["sinks"], positions="absolute")
        with torch.no_grad():
            for n in (*case["fed"], case["T"]):
                masks.clear()
                model(torch.randint(0, config.V, (1, n)), cache)
        rows = [row.nonzero().flatten().tolist() for row in masks[-1][0]]
        assert masks[0].equal(masks[-1]) and rows == ex18_window._window_chunk_keys(**case), case


def test_the_replay_is_the_packages_window_cache() -> None:
    """`_replay`, which picks the edges, must read what the package reads, key tensor included (each key made
    its position plus one, so the tensor `update` returns names its columns' positions; an empty slot reads 0).
    Catches a replay that drifts from `WindowKVCache` (another kept rule, another column order): the edges
    would then separate a rule the grader does not hold."""
    for case in random_cases(2000, seed=1) + [c for seed in range(20) for c in drawn(seed)]:
        config = ModelConfig(L=1, H=1, H_kv=1, d_h=1, d_ffn=1, V=1, S_max=sum(case["fed"]) + case["T"])
        cache = WindowKVCache(config, window=case["window"], sinks=case["sinks"])
        for n in case["fed"]:
            ex18_window._forward(cache, n)
        keys, visible = ex18_window._forward(cache, case["T"])
        rows, positions = ex18_window._replay(**case)
        assert rows == [r.nonzero().flatten().tolist() for r in visible[0]] == ex18_window._window_chunk_keys(**case)
        assert positions == [int(x) - 1 for x in keys.flatten()], case


def chunk_keys_apart(fed: list[int], T: int, window: int, sinks: int) -> list[list[int]]:
    """A reference written apart from the package and the replay: the ring as the set of positions still
    inside it (the sinks, and the last `window` positions once each forward is done), each placed in the slot
    the chapter's formula gives; the mask by the windowed causal rule."""
    S = sum(fed)
    held, start = set(range(min(S, sinks))), 0
    for n in fed:
        held |= set(range(max(start, start + n - window), start + n))
        start += n
    held = {p for p in held if p < sinks or p >= S - window}
    by_slot = sorted(held, key=lambda p: p if p < sinks else sinks + (p - sinks) % window)
    keys = by_slot + list(range(S, S + T))
    return [[j for j, p in enumerate(keys) if p <= t and (p < sinks or t - p < window)] for t in range(S, S + T)]


def test_a_reference_written_apart_agrees_and_the_solution_passes() -> None:
    """A reference written apart from the module agrees with the oracle on 1,000 random cases and every seed's
    edges; the instructors' solution passes `check` under four seeds. Catches an oracle that answers something
    other than the question's statement."""
    for case in random_cases(1000, seed=2) + [c for seed in range(10) for c in drawn(seed)]:
        assert chunk_keys_apart(**case) == ex18_window._window_chunk_keys(**case), case
    namespace: dict = {}
    exec(compile(SOLUTION.read_text(encoding="utf-8"), str(SOLUTION), "exec"), namespace)  # noqa: S102
    for seed in range(4):
        result = run_check("ex18.q4", namespace["window_chunk_keys"], seed=seed)
        assert result.status == "pass", result.message


def test_storing_a_whole_chunk_is_not_a_neighbour() -> None:
    """The neighbour `ex18_window` leaves out on purpose: a forward that stores every one of its tokens, each in
    its slot, in order, leaves the ring as the cache's kept rule does (later tokens overwrite the earlier ones
    in the ring), so it passes. Catches a kept rule or a ring changed so that the two part (the module's
    docstring would then be wrong, and this a neighbour to name)."""
    fn = mutant("ex18.q4", "window_chunk_keys", "if p < sinks or p >= S + n - window:", "if True:")
    for case in random_cases(1000, seed=3):
        assert fn(**case) == ex18_window._window_chunk_keys(**case), case
    assert run_check("ex18.q4", fn, seed=0).status == "pass"


def test_each_edge_separates_its_neighbour_under_every_seed() -> None:
    """Case i (i < 9) reads other keys under neighbour i than under the cache's rule, for 200 seeds; the edges
    are the question's first cases, one per name. Catches an edge drawn by luck (a class seed would decide
    whether a wrong answer passes) or moved to another slot."""
    q = EXERCISES["ex18"].question("q4")
    assert q.edges == ex18_window.WINDOW_EDGES and len(q.edges) == len(ex18_window._NEIGHBOURS) == 9
    for seed in SEEDS:
        cases = drawn(seed)
        assert len(cases) == 12
        for case, wrong in zip(cases, ex18_window._NEIGHBOURS, strict=False):
            assert ex18_window._replay(**case, wrong=wrong)[0] != ex18_window._replay(**case)[0], (seed, wrong)


def test_the_generator_spans_its_documented_ranges() -> None:
    """Windows 1 to 6, sinks 0 to 3, 0 to 4 earlier forwards of 1 or 2 to 10 tokens, a chunk of 2 to 10: every
    case within them and both ends of each drawn. Catches a range moved by one (an empty history, a one-slot
    ring, a chunk of two tokens never drawn) and a case outside the question (a chunk of one token)."""
    seen: dict[str, set] = {k: set() for k in ("window", "sinks", "T", "forwards", "sizes")}
    for seed in SEEDS:
        for case in drawn(seed):
            assert set(case) == {"fed", "T", "window", "sinks"}
            assert 1 <= case["window"] <= 6 and 0 <= case["sinks"] <= 3 and 2 <= case["T"] <= 10
            assert len(case["fed"]) <= 4 and all(1 <= n <= 10 for n in case["fed"])
            seen["window"].add(case["window"]), seen["sinks"].add(case["sinks"]), seen["T"].add(case["T"])
            seen["forwards"].add(len(case["fed"])), seen["sizes"].update(case["fed"])
    assert seen["window"] == set(range(1, 7)) and seen["sinks"] == set(range(4))
    assert seen["T"] == set(range(2, 11)) and seen["forwards"] == set(range(5)) and seen["sizes"] == set(range(1, 11))


def test_the_generator_gives_up_after_its_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """A neighbour no draw separates raises after `DRAWS` draws instead of looping for ever or handing back a
    case that does not separate it."""
    monkeypatch.setattr(ex18_window, "DRAWS", 5)
    monkeypatch.setattr(ex18_window, "_separates", lambda case, wrong: wrong != "sinks hidden")
    with pytest.raises(RuntimeError, match="no case in 5 draws separates the window cache from 'sinks hidden'"):
        ex18_window._window_cases(random.Random(0))


def test_a_case_worked_by_hand() -> None:
    """One sink, a window of two; a chunk of four tokens (0..3) fed first, then a chunk of three.
    The first forward stores its sink, 0 (slot 0), and its last two tokens: 2 in slot 1 + (2 - 1) mod 2 = 2 and
    3 in slot 1 + (3 - 1) mod 2 = 1; token 1 is dropped. So the ring has wrapped: slots hold [0, 3, 2], and the
    chunk's attention gets the keys of positions [0, 3, 2, 4, 5, 6] (indices 0..5). Query 4 sees the sink and
    the positions after 4 - 2 = 2 up to itself: 0, 3, 4, at indices 0, 1, 3. Query 5: 0, 4, 5 at 0, 3, 4. Query 6:
    0, 5, 6 at 0, 4, 5. Written first, as a decode step is, the chunk puts 4 in slot 2, 5 in slot 1, then 6 in
    slot 2 again: query 4 finds only [0, 5, 6] and sees the sink alone, its own key overwritten. In position
    order the held slots would read [0, 2, 3] and query 4's keys 0, 3, 4 would sit at indices 0, 2, 3."""
    case = dict(fed=[4], T=3, window=2, sinks=1)
    expected = [[0, 1, 3], [0, 3, 4], [0, 4, 5]]
    assert ex18_window._window_chunk_keys(**case) == expected
    assert ex18_window._replay(**case) == (expected, [0, 3, 2, 4, 5, 6])
    assert ex18_window._replay(**case, wrong="write first") == ([[0], [0, 1], [0, 1, 2]], [0, 5, 6])
    assert ex18_window._replay(**case, wrong="position order")[0] == [[0, 2, 3], [0, 3, 4], [0, 4, 5]]
    assert ex18_window._replay(**case, wrong="sinks dropped") == ([[0, 2], [2, 3], [3, 4]], [3, 2, 4, 5, 6])
