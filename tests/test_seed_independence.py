"""A grade does not depend on the class seed: a plausible wrong answer loses marks whatever the cases drawn.

Each question names the edge cases it draws every time (`Question.edges`), each by the wrong neighbour of the right
rule it separates. Here each such wrong answer is graded as the grader grades (`prepare`: the cases of one
submission's seed; `_compare`: the verdict) under 40 seeds, and must lose the question under every one; the right
answer (the oracle) keeps it under every one. The bug this catches: an edge drawn only by luck (ex06 Q2's tiled
heads passed in about one seed in eight; ex11 Q6's uncounted copy in nine in ten).

Questions covered so far: ex06 Q2, ex11 Q6 (the two found by a student's reading); the others' edges are the
next step of this file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from minigpt.exercises import EXERCISES
from minigpt.exercises.wire import build_case, encode
from minigpt.grading.cases import prepare
from minigpt.grading.verdicts import _compare
from minigpt.runtime.paged_cache import PagedKVCache

SEEDS = range(40)


def _tiled_attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """ex06 Q2 with the KV heads tiled: query head h reads KV head h % H_kv instead of h // g."""
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat(1, g, 1, 1), v.repeat(1, g, 1, 1)
    return F.scaled_dot_product_attention(q.unsqueeze(2), k, v).squeeze(2)


def _uncounted_copy(oracle: Callable[..., Any]) -> Callable[..., Any]:
    """ex11 Q6 with the copy-on-write block left out of the all-or-nothing count: the package's own cache with
    `blocks_needed` counting new blocks only."""
    def wrong(**kwargs: Any) -> Any:
        original = PagedKVCache.blocks_needed

        def new_only(self: PagedKVCache, seq: int, T: int) -> int:
            S, table, b = self._lengths[seq], self._tables[seq], self.block_size
            return -(-(S + T) // b) - len(table)

        PagedKVCache.blocks_needed = new_only  # type: ignore[method-assign]
        try:
            return oracle(**kwargs)
        finally:
            PagedKVCache.blocks_needed = original  # type: ignore[method-assign]
    return wrong


WRONG: dict[str, tuple[str, Callable[[Callable[..., Any]], Callable[..., Any]]]] = {
    "ex06.q2": ("tiled", lambda oracle: _tiled_attend),
    "ex11.q6": ("the copy-on-write block left out", _uncounted_copy),
}


def _outputs(fn: Callable[..., Any], cases: list[dict]) -> list[Any]:
    out = []
    for case in cases:
        try:
            out.append(encode(fn(**build_case(case))))
        except Exception as err:  # noqa: BLE001 - a wrong answer may raise: it loses the case
            out.append(f"raised {type(err).__name__}")
    return out


@pytest.mark.parametrize("qid", sorted(WRONG))
def test_a_named_wrong_answer_loses_under_every_seed(qid: str) -> None:
    eid, q_id = qid.split(".")
    q = EXERCISES[eid].question(q_id)
    name, make = WRONG[qid]
    assert any(name in edge for edge in q.edges), (qid, q.edges)  # the spec names the edge that catches it
    wrong = make(q.oracle)
    passed = []
    for seed in SEEDS:
        prepared = prepare(eid, seed)
        cases, expected = prepared.cases[q.id], prepared.expected[q.id]
        assert _compare(q, cases, expected, expected)[0]  # the right answer keeps the question
        ok, _message = _compare(q, cases, expected, _outputs(wrong, cases))
        if ok:
            passed.append(seed)
    assert not passed, f"{qid}: the wrong answer ({name}) got full marks under seeds {passed}"
