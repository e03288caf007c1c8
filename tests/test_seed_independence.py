"""A grade does not depend on the class seed: a plausible wrong answer loses marks whatever the cases drawn.

Each question names the edge cases it draws every time (`Question.edges`), each by the wrong neighbour of the right
rule it separates. The wrong answers live in `tests/test_seed_independence_*.py` (harness: `tests/seed_harness.py`);
each is graded as the grader grades under 40 seeds and must lose the question under every one. The bug this
catches: an edge drawn only by luck (ex06 Q2's tiled heads passed in about one seed in eight; ex11 Q6's uncounted
copy in nine in ten). This file holds ex06 Q2 and ex11 Q6 (the two found by a student's reading).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from seed_harness import Make, seeds_passed

from minigpt.runtime.paged_cache import PagedKVCache


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


WRONG: dict[str, list[tuple[str, Make]]] = {
    "ex06.q2": [("tiled", lambda oracle: _tiled_attend)],
    "ex11.q6": [("the copy-on-write block left out", _uncounted_copy)],
}


@pytest.mark.parametrize(("qid", "index"), [(q, i) for q, v in sorted(WRONG.items()) for i in range(len(v))])
def test_a_named_wrong_answer_loses_under_every_seed(qid: str, index: int) -> None:
    name, make = WRONG[qid][index]
    assert not seeds_passed(qid, name, make), f"{qid}: the wrong answer ({name}) kept the question"


def test_every_question_of_every_exercise_names_a_wrong_answer_and_its_edge() -> None:
    """The bug this catches: a question (a new one, or one whose edges were dropped) whose grade may depend on the
    class seed because no named wrong answer is graded against its cases."""
    import importlib
    from pathlib import Path

    from minigpt.exercises import EXERCISES

    covered = dict(WRONG)
    for path in sorted(Path(__file__).parent.glob("test_seed_independence_*.py")):
        covered.update(importlib.import_module(path.stem).WRONG)
    questions = {f"{eid}.{q.id}" for eid, ex in EXERCISES.items() for q in ex.questions}
    assert not questions - set(covered), sorted(questions - set(covered))
    for qid, wrong in covered.items():
        eid, q_id = qid.split(".")
        edges = EXERCISES[eid].question(q_id).edges
        assert wrong and all(any(name in edge for edge in edges) for name, _ in wrong), (qid, edges)
