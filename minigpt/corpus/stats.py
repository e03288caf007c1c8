"""Summaries of the grammar corpus: its vocabulary by word class, and sizes, tenses and clauses of sentences."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from minigpt.corpus import grammar as g
from minigpt.corpus.checker import tense_of


def describe() -> dict[str, int]:
    """Number of vocabulary words per word class (the grammar's rules are minigpt.corpus.grammar.rules())."""
    return g.class_counts()


@dataclass(frozen=True)
class CorpusStats:
    """Summary of a list of sentences: sizes, lengths in tokens, tenses and clause counts."""

    n_sentences: int
    n_tokens: int
    mean_length: float
    max_length: int
    tenses: dict[str, int]
    clauses: dict[int, int]


def corpus_stats(sentences: Sequence[str]) -> CorpusStats:
    """Count tokens, tenses and clauses (1 + connectors) over sentences of the grammar."""
    if not sentences:
        raise ValueError("sentences must be a non-empty sequence of strings, got an empty one")
    lengths = [len(s.split(" ")) for s in sentences]
    tenses = Counter(str(tense_of(s)) for s in sentences)
    clauses = Counter(1 + sum(t in g.CONNECTORS for t in s.split(" ")) for s in sentences)
    return CorpusStats(
        n_sentences=len(sentences),
        n_tokens=sum(lengths),
        mean_length=sum(lengths) / len(lengths),
        max_length=max(lengths),
        tenses=dict(sorted(tenses.items())),
        clauses=dict(sorted(clauses.items())),
    )
