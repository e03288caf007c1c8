"""An exact checker for the grammar corpus's language: a deterministic left-to-right parser.

:func:`is_grammatical` decides membership, :func:`is_valid_prefix` and :func:`next_words` read a prefix, and
:func:`tense_of` names a sentence's tense; every word belongs to one class of :mod:`minigpt.corpus.grammar`,
so the parser never backtracks.
"""

from __future__ import annotations

from collections.abc import Sequence

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
