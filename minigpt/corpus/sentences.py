"""The grammar corpus: a seeded sentence generator and an exact checker for its language.

Sentences come from the grammar in :mod:`minigpt.corpus.grammar` ("Yesterday I worked and he played .").
:func:`generate_sentence` draws one, :func:`training_stream` joins whole sentences into the token
stream MiniGPT trains on, and :func:`is_grammatical` decides membership exactly with a
deterministic left-to-right parser, so the book can score what a model samples.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from minigpt.corpus import grammar as g
from minigpt.corpus.grammar import Tense

_ADVERB_TENSE: dict[tuple[str, ...], Tense] = {
    adverb: tense for tense, adverbs in g.ADVERBS_BY_TENSE.items() for adverb in adverbs
}
_VERB_KIND = g.verb_kinds()
_BASE = {v[0]: v for v in g.all_verbs()}
_THIRD = {v[1]: v for v in g.all_verbs()}
_PAST = {v[2]: v for v in g.all_verbs()}
_PERSON_SG = frozenset(sg for sg, _ in g.PERSON_NOUNS)
_PERSON_PL = frozenset(pl for _, pl in g.PERSON_NOUNS)
_THINGS = frozenset(w for pair in g.THING_NOUNS for w in pair)
_DETERMINERS = frozenset(g.DETERMINERS)
_NAMES = frozenset(g.NAMES)
_ALL_VERBS = g.all_verbs()
_TENSES: tuple[Tense, ...] = ("past", "present", "future")
_CLAUSE_WEIGHTS = (0.4, 0.4, 0.2)  # one, two or three clauses


# ----------------------------------------------------------------------------- generation


def _subject(rng: random.Random) -> tuple[list[str], bool]:
    """A subject's tokens and whether it is 3rd person singular (which takes the -s form)."""
    r = rng.random()
    if r < 0.45:
        pronoun = rng.choice(tuple(g.PRONOUNS))
        person, number = g.PRONOUNS[pronoun]
        return [pronoun], person == 3 and number == "singular"
    if r < 0.70:
        return [rng.choice(g.NAMES)], True
    singular, plural = rng.choice(g.PERSON_NOUNS)
    is_singular = rng.random() < 0.5
    return [rng.choice(g.DETERMINERS), singular if is_singular else plural], is_singular


def _complement(kind: str, rng: random.Random) -> list[str]:
    """The tokens a verb of this kind takes after it ("dinner", "the film", "to the park")."""
    if kind == "intransitive":
        return []
    if kind == "food":
        return [rng.choice(g.FOOD_NOUNS)]
    if kind == "media":
        return [rng.choice(g.DETERMINERS), rng.choice(g.MEDIA_NOUNS)]
    if kind == "thing":
        return [rng.choice(g.DETERMINERS), rng.choice(rng.choice(g.THING_NOUNS))]
    return [g.TO, rng.choice(g.DETERMINERS), rng.choice(g.PLACE_NOUNS)]


def _clause(tense: Tense, rng: random.Random) -> list[str]:
    """One clause, subject + verb phrase, in the given tense with present-tense agreement."""
    subject, third_singular = _subject(rng)
    base, third, past = verb = rng.choice(_ALL_VERBS)
    if tense == "past":
        verb_tokens = [past]
    elif tense == "future":
        verb_tokens = [g.WILL, base]
    else:
        verb_tokens = [third if third_singular else base]
    return subject + verb_tokens + _complement(_VERB_KIND[verb[0]], rng)


def generate_sentence(rng: random.Random) -> str:
    """One sentence of the grammar, e.g. "Yesterday I worked and he played ." (tokens joined by spaces)."""
    tense = rng.choice(_TENSES)
    tokens = list(rng.choice(g.ADVERBS_BY_TENSE[tense]))
    n_clauses = rng.choices((1, 2, 3), weights=_CLAUSE_WEIGHTS)[0]
    for i in range(n_clauses):
        if i > 0:
            tokens.append(rng.choice(g.CONNECTORS))
        tokens += _clause(tense, rng)
    tokens.append(g.PERIOD)
    return " ".join(tokens)


def _check_count(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")


def generate_sentences(n: int, seed: int = 0) -> list[str]:
    """n sentences drawn with random.Random(seed): the same seed always gives the same list."""
    _check_count("n", n)
    rng = random.Random(seed)
    return [generate_sentence(rng) for _ in range(n)]


def training_stream(n_tokens: int, seed: int) -> list[str]:
    """A flat token list of whole sentences (each ending in "."), at least n_tokens long.

    Sentences are drawn with random.Random(seed) and appended until the stream has n_tokens
    tokens or more; it is never cut mid-sentence, so it may be a sentence longer than asked.
    """
    _check_count("n_tokens", n_tokens)
    rng = random.Random(seed)
    tokens: list[str] = []
    while len(tokens) < n_tokens:
        tokens += generate_sentence(rng).split(" ")
    return tokens


def split_sentences(tokens: Sequence[str]) -> list[list[str]]:
    """Split a token stream after every "."; a trailing piece without a final "." is dropped."""
    sentences: list[list[str]] = []
    current: list[str] = []
    for token in tokens:
        current.append(token)
        if token == g.PERIOD:
            sentences.append(current)
            current = []
    return sentences


# ----------------------------------------------------------------------------- checking


class _Reject(Exception):
    """The tokens are not a prefix of any sentence of the language."""


class _Incomplete(Exception):
    """The tokens ran out: they are a proper prefix of some sentence (so far no error)."""


class _Parser:
    """Deterministic recursive-descent parser; every word belongs to one class, so no backtracking."""

    def __init__(self, tokens: Sequence[str]) -> None:
        self.tokens = tokens
        self.i = 0

    def peek(self) -> str:
        if self.i >= len(self.tokens):
            raise _Incomplete
        return self.tokens[self.i]

    def take(self, allowed: frozenset[str] | dict[str, object] | tuple[str, ...]) -> str:
        token = self.peek()
        if token not in allowed:
            raise _Reject
        self.i += 1
        return token

    def adverb(self) -> Tense:
        first = self.peek()
        candidates = [a for a in _ADVERB_TENSE if a[0] == first]
        if not candidates:
            raise _Reject
        self.i += 1
        for adverb in candidates:  # "Last night" / "Last week": decided by the second token
            if len(adverb) == 1:
                return _ADVERB_TENSE[adverb]
        second = self.take(frozenset(a[1] for a in candidates))
        return _ADVERB_TENSE[(first, second)]

    def subject(self) -> bool:
        token = self.peek()
        if token in g.PRONOUNS:
            self.i += 1
            person, number = g.PRONOUNS[token]
            return person == 3 and number == "singular"
        if token in _NAMES:
            self.i += 1
            return True
        self.take(_DETERMINERS)
        noun = self.take(_PERSON_SG | _PERSON_PL)
        return noun in _PERSON_SG

    def clause(self, tense: Tense) -> None:
        third_singular = self.subject()
        if tense == "past":
            verb = self.take(_PAST)
        elif tense == "future":
            self.take((g.WILL,))
            verb = self.take(_BASE)
        else:
            verb = self.take(_THIRD if third_singular else _BASE)
        kind = _VERB_KIND[verb]
        if kind == "food":
            self.take(g.FOOD_NOUNS)
        elif kind == "media":
            self.take(_DETERMINERS)
            self.take(g.MEDIA_NOUNS)
        elif kind == "thing":
            self.take(_DETERMINERS)
            self.take(_THINGS)
        elif kind == "motion":
            self.take((g.TO,))
            self.take(_DETERMINERS)
            self.take(g.PLACE_NOUNS)

    def sentence(self) -> None:
        tense = self.adverb()
        self.clause(tense)
        for _ in range(g.MAX_CLAUSES - 1):
            if self.peek() not in g.CONNECTORS:
                break
            self.i += 1
            self.clause(tense)
        self.take((g.PERIOD,))
        if self.i != len(self.tokens):
            raise _Reject


def _status(tokens: Sequence[str]) -> str:
    """'complete', 'prefix' (a proper prefix of some sentence) or 'reject'."""
    try:
        _Parser(tokens).sentence()
    except _Incomplete:
        return "prefix"
    except _Reject:
        return "reject"
    return "complete"


def is_grammatical(sentence: str) -> bool:
    """True exactly when sentence (tokens separated by single spaces) is in the grammar's language.

    Unknown words, extra whitespace, a missing final "." or the empty string give False.
    """
    if not isinstance(sentence, str) or not sentence:
        return False
    return _status(sentence.split(" ")) == "complete"


def is_valid_prefix(text: str) -> bool:
    """True when text (space-separated tokens, possibly empty) can be continued to a sentence."""
    if not isinstance(text, str):
        return False
    tokens = text.split(" ") if text else []
    return _status(tokens) in ("prefix", "complete")


def next_words(text: str) -> list[str]:
    """The vocabulary words that may follow the prefix text, in vocabulary order ([] if none)."""
    tokens = text.split(" ") if text else []
    if _status(tokens) != "prefix":
        return []
    return [w for w in g.vocabulary()[1:] if _status([*tokens, w]) != "reject"]


def tense_of(sentence: str) -> Tense | None:
    """The tense set by the sentence's opening time adverb, or None if it opens with none."""
    if not isinstance(sentence, str):
        return None
    tokens = sentence.split(" ")
    for length in (2, 1):
        tense = _ADVERB_TENSE.get(tuple(tokens[:length]))
        if tense is not None:
            return tense
    return None


# ----------------------------------------------------------------------------- statistics


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
