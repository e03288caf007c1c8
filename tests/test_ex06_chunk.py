"""Exercise 6 Question 1 (`minigpt.exercises.ex06`, `_chunk_attention`): a chunk of T >= 1 new tokens appended to a
cache that holds S, attended with the causal mask aligned bottom-right (query i, at position S + i, sees keys
0 … S + i): a second turn, a chunk of a chunked prefill, a speculative verify step. The oracle is the package's
`KVCache.update` and `attention` under `causal_visible(S, T)`. Here: the oracle against PyTorch's
`causal_lower_right` and against an implementation written apart; `is_causal=True` (the top-left triangle) against
the oracle; a case worked by hand; each edge separates the neighbours it names; the generator's replays are the
neighbours written apart; the reference solution and one written apart pass, and the reference writes in place.
(The named wrong answers, written apart, lose under every seed in `tests/test_seed_independence_ex06_09.py`; the
reference solution's mutants fail in `tests/test_exercise_mechanisms.py`, MUTANTS; the generator's ranges are
pinned in `tests/test_case_generators.py`.)"""

from __future__ import annotations

import itertools
import math
import random

import torch
import torch.nn.functional as F
from reference import reference
from test_seed_independence_ex06_09 import WRONG, _chunk
from torch.nn.attention.bias import causal_lower_right, causal_upper_left

from minigpt.exercises import EXERCISES, ex06, run_check
from minigpt.exercises.wire import build_case, encode

Q = EXERCISES["ex06"].question("q1")


def solution():
    return reference("ex06", "chunk_attention")


def _random(S: int, T: int, S_max: int | None = None, B: int = 2, H: int = 2, d_h: int = 8,
            seed: int = 0) -> dict[str, torch.Tensor | int]:
    """Random inputs of the question's shapes (every cache row random: the rows from S on are stale)."""
    g = torch.Generator().manual_seed(seed)
    S_max = S_max or S + T + 3
    return dict(q=torch.randn(B, H, T, d_h, generator=g), k_cache=torch.randn(B, H, S_max, d_h, generator=g),
                v_cache=torch.randn(B, H, S_max, d_h, generator=g), k_new=torch.randn(B, H, T, d_h, generator=g),
                v_new=torch.randn(B, H, T, d_h, generator=g), S=S)


def _inputs() -> list[dict]:
    """Every case of three seeds, and every (S, T) with S 0 to 3 and T 1 to 4."""
    drawn = [build_case(c) for seed in range(3) for c in Q.cases(random.Random(seed))]
    return drawn + [_random(S, T, seed=4 * S + T) for S, T in itertools.product(range(4), range(1, 5))]


def _valid(args: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """The keys and values a chunk attends over: the S cached rows, then the chunk's (stale rows left out)."""
    S = args["S"]
    return (torch.cat([args["k_cache"][:, :, :S], args["k_new"]], 2),
            torch.cat([args["v_cache"][:, :, :S], args["v_new"]], 2))


def _sdpa(args: dict, **kw) -> torch.Tensor:
    """PyTorch's attention over the valid keys, with `kw` its mask (`attn_mask=`, `is_causal=`)."""
    k, v = _valid(args)
    return F.scaled_dot_product_attention(args["q"], k, v, **kw)


def _by_hand(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, k_new: torch.Tensor,
             v_new: torch.Tensor, S: int) -> torch.Tensor:
    """The output written apart, query by query in float64: the list of the keys 0 … S + i that query i sees,
    exp of its scaled scores over their sum, those weights times the values."""
    B, H, T, d_h = q.shape
    keys = [k_cache[:, :, j] for j in range(S)] + [k_new[:, :, t] for t in range(T)]  # key j: [B, H, d_h]
    values = [v_cache[:, :, j] for j in range(S)] + [v_new[:, :, t] for t in range(T)]
    out = torch.zeros(B, H, T, d_h, dtype=torch.float64)
    for i in range(T):
        seen = range(S + i + 1)
        scores = torch.stack([(q[:, :, i].double() * keys[j].double()).sum(-1) / math.sqrt(d_h) for j in seen], -1)
        weights = torch.exp(scores - scores.max(-1, keepdim=True).values)
        weights = weights / weights.sum(-1, keepdim=True)
        out[:, :, i] = sum(weights[..., j, None] * values[j].double() for j in seen)
    return out


def test_the_oracle_is_sdpa_under_pytorchs_lower_right_mask() -> None:
    """On every case of three seeds and every (S, T) with S <= 3, T <= 4: the oracle's output is PyTorch's
    scaled_dot_product_attention over the S cached rows and the chunk's T under
    `torch.nn.attention.bias.causal_lower_right(T, S + T)`, and its k_valid, v_valid are exactly those rows.
    Guards an oracle whose mask is aligned top-left or offset by one, that attends over stale rows, or that writes
    the chunk at other rows than S … S + T − 1."""
    for args in _inputs():
        T, S = args["k_new"].shape[2], args["S"]
        out, k_valid, v_valid = ex06._chunk_attention(**args)
        k, v = _valid(args)
        torch.testing.assert_close(out, _sdpa(args, attn_mask=causal_lower_right(T, S + T)), atol=1e-5, rtol=1e-5)
        assert torch.equal(k_valid, k) and torch.equal(v_valid, v)


def test_the_oracle_is_an_implementation_written_apart() -> None:
    """The same inputs: the oracle's output is, within 1e-5, the output computed query by query in float64 from
    the list of keys each query sees (no mask, no SDPA) and that of the named wrong answers' right-answer form in
    the seed tests (`_chunk()`, its mask built key by key). Guards the oracle against torch itself (a mask both
    would get wrong the same way), and the scale 1/√d_h."""
    for args in _inputs():
        out = ex06._chunk_attention(**args)[0]
        torch.testing.assert_close(out.double(), _by_hand(**args), atol=1e-5, rtol=1e-5)
        for dtype in (torch.float32, torch.float64):
            apart = _chunk(dtype=dtype)(**{n: a.clone() if isinstance(a, torch.Tensor) else a
                                           for n, a in args.items()})
            torch.testing.assert_close(apart[0], out, atol=1e-5, rtol=1e-5)


def test_is_causal_true_is_the_top_left_mask() -> None:
    """The bug the question is about, as torch 2.13 behaves: `is_causal=True` is
    `causal_upper_left(T, S + T)` (query i sees keys 0 … i), which gives the oracle's output exactly when S = 0
    (a plain prefill) and differs from it whenever S >= 1, one-query decode steps included (the query sees key 0
    alone); `is_causal=T > 1` (no mask for a decode step) differs exactly when S >= 1 and T >= 2. Guards an
    oracle or a package mask that follows is_causal, and says so if PyTorch ever changes the alignment."""
    for S, T in itertools.product(range(4), range(1, 5)):
        args = _random(S, T, seed=100 + 4 * S + T)
        out = ex06._chunk_attention(**args)[0]
        top_left = _sdpa(args, is_causal=True)
        torch.testing.assert_close(top_left, _sdpa(args, attn_mask=causal_upper_left(T, S + T)))
        assert torch.allclose(top_left, out, atol=1e-5) == (S == 0), (S, T)
        assert torch.allclose(_sdpa(args, is_causal=T > 1), out, atol=1e-5) == (S == 0 or T == 1), (S, T)


def test_a_case_worked_by_hand() -> None:
    """d_h = 4, so the scores are q·k / 2. A chunk of T = 2 after S = 1, in a cache of 5 rows whose rows 1 … 4 hold
    an earlier request's 100s, with zero queries (each query weighs the keys it sees equally): v row 0 is
    (3, 0, 0, 0) and the chunk's values (0, 3, 0, 0), (0, 0, 3, 0). Query 0, at position 1, sees rows 0 and 1:
    (1.5, 1.5, 0, 0); query 1, at position 2, rows 0 to 2: (1, 1, 1, 0). The valid rows are row 0 and the two new
    ones; rows 3 and 4 stay stale. is_causal=True shows query 0 row 0 alone, (3, 0, 0, 0), and query 1 rows 0 and
    1, (1.5, 1.5, 0, 0). Then a decode step (T = 1 after S = 1): q = (2 ln 3, 0, 0, 0), k row 0 zero and the new
    key (1, 0, 0, 0), so the scores are 0 and ln 3, the weights 1/4 and 3/4, and the values (4, 0, 0, 0), (0, 4,
    0, 0) give (1, 3, 0, 0); over d_h instead of √d_h the scores are 0 and ln 3 / 2 (weights 1 : √3), and
    is_causal=True sees row 0 alone, (4, 0, 0, 0)."""
    e = torch.eye(4)
    k_cache, v_cache = torch.full((1, 1, 5, 4), 100.0), torch.full((1, 1, 5, 4), 100.0)
    v_cache[0, 0, 0] = 3 * e[0]
    chunk = dict(q=torch.zeros(1, 1, 2, 4), k_cache=k_cache, v_cache=v_cache,
                 k_new=torch.ones(1, 1, 2, 4), v_new=3 * e[1:3].view(1, 1, 2, 4), S=1)
    expected = torch.tensor([[1.5, 1.5, 0, 0], [1, 1, 1, 0]])
    valid_v = torch.stack([3 * e[0], 3 * e[1], 3 * e[2]])
    for fn in (ex06._chunk_attention, solution(), _chunk()):
        args = {n: a.clone() if isinstance(a, torch.Tensor) else a for n, a in chunk.items()}
        out, k_valid, v_valid = fn(**args)
        torch.testing.assert_close(out[0, 0], expected)
        assert torch.equal(v_valid[0, 0], valid_v) and torch.equal(k_valid[0, 0, 1:], torch.ones(2, 4))
    torch.testing.assert_close(_sdpa(chunk, is_causal=True)[0, 0], torch.tensor([[3.0, 0, 0, 0], [1.5, 1.5, 0, 0]]))

    step = dict(q=(2 * math.log(3) * e[0]).view(1, 1, 1, 4), k_cache=torch.zeros(1, 1, 3, 4),
                v_cache=torch.zeros(1, 1, 3, 4), k_new=e[0].view(1, 1, 1, 4), v_new=(4 * e[1]).view(1, 1, 1, 4), S=1)
    step["v_cache"][0, 0, 0] = 4 * e[0]
    r = math.sqrt(3)
    for fn, want in ((ex06._chunk_attention, [1.0, 3, 0, 0]), (solution(), [1.0, 3, 0, 0]),
                     (_chunk(), [1.0, 3, 0, 0]), (_chunk(scale=lambda d_h: d_h), [4 / (1 + r), 4 * r / (1 + r), 0, 0]),
                     (_chunk(sdpa=lambda T: True), [4.0, 0, 0, 0])):
        args = {n: a.clone() if isinstance(a, torch.Tensor) else a for n, a in step.items()}
        torch.testing.assert_close(fn(**args)[0][0, 0, 0], torch.tensor(want))


#: Which named wrong answers (`WRONG["ex06.q1"]`, by name) each edge case separates: edge i is case i; the last
#: edge, stale rows, is every case but the full one (case 3).
SEPARATED = (
    ("is_causal=True", "is_causal=T > 1", "the mask aligned top-left", "no mask at all", "a strict mask",
     "the new rows written at row 0", "only the first new row written", "the scale 1/d_h instead of 1/√d_h",
     "the cache forgotten"),
    ("is_causal=True", "a strict mask", "the new rows written at row 0", "the scale 1/d_h instead of 1/√d_h",
     "the cache forgotten"),
    ("a strict mask", "no mask at all", "the scale 1/d_h instead of 1/√d_h"),
    ("a room check off by one", "is_causal=True", "a strict mask", "the cache forgotten"),
    ("attending over the whole S_max", "the whole preallocated cache returned", "the new rows never written"),
)


def _loses(make, case: dict) -> bool:
    """Whether the wrong answer `make` builds fails the question's comparison on `case` (raising fails it)."""
    try:
        actual = encode(make(ex06._chunk_attention)(**build_case(case)))
    except Exception:  # noqa: BLE001 - a wrong answer may raise: it loses the case
        return True
    return Q.compare(Q.expected(case), actual) is not None


def test_each_edge_separates_the_neighbours_it_names() -> None:
    """Under 20 seeds, each edge case alone fails the wrong answers written apart that `SEPARATED` lists for it
    (those its edge names, and more; the stale-row edge on every case but the full one), and the plain prefill
    (S = 0) is the one edge where is_causal=True is right. Guards an edge drawn where its neighbour is right (S = 0
    in the first edge, a full cache in a stale-row case, T = 1 where a chunk is wanted) and a generator that stops
    drawing until it separates."""
    wrong = dict(WRONG["ex06.q1"])
    assert set(wrong) == {name for names in SEPARATED for name in names}
    for seed in range(20):
        cases = Q.cases(random.Random(seed))
        for i, names in enumerate(SEPARATED):
            for name in names:
                on = [c for j, c in enumerate(cases) if j != 3] if i == 4 else [cases[i]]
                assert all(_loses(wrong[name], c) for c in on), (seed, i, name)
        assert not _loses(wrong["is_causal=True"], cases[2]), seed


def test_the_generators_replays_are_the_named_neighbours() -> None:
    """The generator draws each edge until the package, run as each neighbour runs (`_replay`), moves a value by
    `MARGIN`; on every case of two seeds each replay gives the output of that neighbour written apart (the
    top-left, missing and strict masks, the rows written at row 0, scores over d_h, the cache forgotten, all
    S_max rows under a mask aligned to the last one), or the edges would separate another answer."""
    kinds = {"top-left": dict(visible=lambda i, j, S, T, K: j <= i),
             "unmasked": dict(visible=lambda i, j, S, T, K: True),
             "strict": dict(visible=lambda i, j, S, T, K: j < S + i),
             "row 0": dict(at=lambda S: 0), "scale": dict(scale=lambda d_h: d_h),
             "new only": dict(keys="new", visible=lambda i, j, S, T, K: j <= i),
             "whole": dict(keys="whole", visible=lambda i, j, S, T, K: j <= K - T + i)}
    assert set(kinds) == set(ex06.NEIGHBOURS) and all(set(s) <= set(kinds) for s in ex06.SEPARATES)
    for case in (c for seed in range(2) for c in Q.cases(random.Random(seed))):
        for wrong, bug in kinds.items():
            replayed = ex06._replay(**build_case(case), wrong=wrong)
            for got, want in zip(replayed, _chunk(**bug)(**build_case(case)), strict=True):
                torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5, equal_nan=True, msg=wrong)


def test_the_reference_and_a_solution_written_apart_pass_and_write_in_place() -> None:
    """The instructors' solution and one written apart in float64 pass `check` under two seeds; the reference
    writes the chunk's rows into the given caches (rows S … S + T − 1 hold k_new, v_new, every other row is as it
    was); an answer that returns the old question's pair (k_valid, v_valid) is told the triple it owes. Guards a
    reference that attends over a concatenation and never writes the cache, and a comparison that reads two
    items only."""
    for seed in range(2):
        for fn in (solution(), _chunk(dtype=torch.float64)):
            result = run_check("ex06.q1", fn, seed=seed)
            assert result.status == "pass", result.message
    args = build_case(Q.cases(random.Random(0))[0])
    S, T = args["S"], args["k_new"].shape[2]
    before = args["k_cache"].clone(), args["v_cache"].clone()
    solution()(**args)
    for cache, old, new in zip((args["k_cache"], args["v_cache"]), before, (args["k_new"], args["v_new"]),
                               strict=True):
        assert torch.equal(cache[:, :, S:S + T], new)
        assert torch.equal(cache[:, :, :S], old[:, :, :S]) and torch.equal(cache[:, :, S + T:], old[:, :, S + T:])
    pair = run_check("ex06.q1", lambda **a: solution()(**a)[1:], seed=0)
    assert pair.status == "fail" and "expected a tuple (out, k_valid, v_valid)" in pair.message, pair.message


def test_the_separation_filter_redraws_and_gives_up() -> None:
    """`_apart` calls a neighbour's output apart only past `MARGIN` (or for another shape, or a NaN), and the
    generator draws an edge again while a neighbour it names does not separate, then gives up with a message
    naming the edge. Guards a filter that passes every draw (a test of the outputs' shapes only, a sum for a
    difference, no neighbour consulted): random floats separate almost every first draw (one case in 2,100 over
    300 seeds was drawn again), so the seed tests alone would not see it go."""
    zero, same = (torch.zeros(2, 3),), (torch.zeros(2, 3),)
    assert not ex06._apart(zero, same)
    at_margin = (torch.full((2, 3), ex06.MARGIN, dtype=torch.float64),)
    assert not ex06._apart((torch.zeros(2, 3, dtype=torch.float64),), at_margin)  # at the margin: not apart
    assert ex06._apart(zero, (torch.full((2, 3), 2 * ex06.MARGIN),))
    assert ex06._apart(zero, (torch.zeros(3, 2),)) and ex06._apart(zero, (torch.full((2, 3), math.nan),))
    assert not ex06._apart((torch.ones(2, 3),), (torch.ones(2, 3),))  # equal values away from zero
    replay = ex06._replay
    try:
        ex06._replay = lambda **args: ex06._chunk_attention(**{k: v for k, v in args.items() if k != "wrong"})
        with_message = None
        try:
            ex06._chunk_cases(random.Random(0))
        except RuntimeError as error:
            with_message = str(error)
        assert with_message is not None and "no case in 100 draws separated the neighbours of edge 0" in with_message
    finally:
        ex06._replay = replay
