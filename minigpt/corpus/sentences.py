"""The grammar corpus's generator: seeded sentences and the token stream MiniGPT trains on.

Sentences come from the grammar in :mod:`minigpt.corpus.grammar` ("Yesterday I worked and he played .").
:func:`generate_sentence` draws one and :func:`training_stream` joins whole sentences into the training
stream; :mod:`minigpt.corpus.checker` decides membership exactly, so the book can score what a model samples.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from minigpt.corpus import grammar as g
from minigpt.corpus.grammar import Tense

_VERB_KIND = g.verb_kinds()
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
