"""Tests of the grammar corpus: vocabulary, generator, and the exact checker."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from minigpt.corpus import (
    corpus_stats,
    describe,
    generate_sentence,
    generate_sentences,
    is_grammatical,
    is_valid_prefix,
    next_words,
    split_sentences,
    tense_of,
    training_stream,
)
from minigpt.corpus import grammar as g

VOCAB = g.vocabulary()


def _alt(words) -> str:
    return "(?:" + "|".join(re.escape(w) for w in words) + ")"


def _reference_regex() -> re.Pattern[str]:
    """An independent oracle: the language written as one regular expression over the text."""
    det = _alt(g.DETERMINERS)
    subject_3sg = f"(?:{_alt(('he', 'she', 'it') + g.NAMES)}|{det} {_alt(s for s, _ in g.PERSON_NOUNS)})"
    subject_other = f"(?:{_alt(('I', 'you', 'we', 'they'))}|{det} {_alt(p for _, p in g.PERSON_NOUNS)})"
    complements = {
        "intransitive": "",
        "food": " " + _alt(g.FOOD_NOUNS),
        "media": f" {det} {_alt(g.MEDIA_NOUNS)}",
        "thing": f" {det} {_alt(w for pair in g.THING_NOUNS for w in pair)}",
        "motion": f" to {det} {_alt(g.PLACE_NOUNS)}",
    }

    def phrase(form: int, prefix: str = "") -> str:
        return (
            "(?:"
            + "|".join(
                prefix + _alt(v[form] for v in verbs) + complements[kind]
                for kind, verbs in g.VERBS_BY_KIND.items()
            )
            + ")"
        )

    subject = f"(?:{subject_3sg}|{subject_other})"
    clauses = {
        "past": f"{subject} {phrase(2)}",
        "future": f"{subject} {phrase(0, 'will ')}",
        "present": f"(?:{subject_3sg} {phrase(1)}|{subject_other} {phrase(0)})",
    }
    sentences = []
    for tense, clause in clauses.items():
        adverb = _alt(" ".join(a) for a in g.ADVERBS_BY_TENSE[tense])
        sentences.append(f"{adverb} {clause}(?: {_alt(g.CONNECTORS)} {clause}){{0,2}} \\.")
    return re.compile("(?:" + "|".join(sentences) + ")")


ORACLE = _reference_regex()


# ----------------------------------------------------------------------------- vocabulary


def test_vocabulary_is_exactly_600_unique_words_with_pad_first() -> None:
    assert len(VOCAB) == 600
    assert len(set(VOCAB)) == 600
    assert VOCAB[0] == "<pad>" and VOCAB[1] == "."
    assert g.vocabulary() == VOCAB  # deterministic order


def test_class_counts_cover_the_vocabulary_once() -> None:
    counts = describe()
    assert sum(counts.values()) == 600
    assert counts["padding"] == 1 and counts["period"] == 1
    assert counts["base verb"] == counts["present verb 3sg"] == counts["past verb"] == len(g.all_verbs())
    assert [g.word_class(w) for w in VOCAB].count("name") == counts["name"] == len(g.NAMES)


def test_word_classes_used_by_the_book() -> None:
    assert g.word_class("worked") == "past verb" and g.is_past_verb("went")
    assert g.word_class("works") == "present verb 3sg" and g.is_present_3sg_verb("has")
    assert g.word_class("work") == "base verb" and g.is_base_verb("go")
    assert g.word_class("I") == "pronoun" and g.word_class("Yesterday") == "time adverb"
    assert not g.is_past_verb("works") and not g.is_present_3sg_verb("worked")
    assert not g.is_past_verb("zebra")
    with pytest.raises(ValueError, match="'zebra'"):
        g.word_class("zebra")


def test_every_vocabulary_word_is_generated() -> None:
    seen = {w for s in generate_sentences(30_000, seed=0) for w in s.split(" ")}
    assert seen <= set(VOCAB)
    assert seen == set(VOCAB) - {"<pad>"}


def test_rules_are_printable() -> None:
    assert any("will" in line for line in g.rules())
    assert len(g.rules()) >= 8


# ----------------------------------------------------------------------------- generator


@settings(max_examples=examples(100), deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_generated_sentences_are_grammatical(seed: int) -> None:
    for sentence in generate_sentences(50, seed=seed):
        assert is_grammatical(sentence), sentence
        assert ORACLE.fullmatch(sentence), sentence
        assert set(sentence.split(" ")) <= set(VOCAB)
        assert 4 <= len(sentence.split(" ")) <= 26
        assert sentence.endswith(" .") and "  " not in sentence


@given(seed=st.integers(min_value=0, max_value=10**9))
def test_generation_is_deterministic_by_seed(seed: int) -> None:
    assert generate_sentences(20, seed) == generate_sentences(20, seed)
    assert generate_sentence(random.Random(seed)) == generate_sentences(1, seed)[0]


def test_different_seeds_give_different_sentences() -> None:
    assert generate_sentences(20, seed=1) != generate_sentences(20, seed=2)


def test_sentence_lengths_and_mix() -> None:
    stats = corpus_stats(generate_sentences(5000, seed=3))
    assert 6 <= stats.mean_length <= 13
    assert stats.max_length <= 26
    assert set(stats.tenses) == {"past", "present", "future"}
    assert set(stats.clauses) == {1, 2, 3}
    assert all(count > 500 for count in stats.tenses.values())


def test_generate_sentences_rejects_bad_n() -> None:
    assert generate_sentences(0) == []
    with pytest.raises(ValueError, match="n must be a non-negative integer, got -3"):
        generate_sentences(-3)
    with pytest.raises(ValueError, match="n_tokens"):
        training_stream(-1, seed=0)


@given(n_tokens=st.integers(min_value=0, max_value=500), seed=st.integers(min_value=0, max_value=1000))
def test_training_stream_is_whole_sentences(n_tokens: int, seed: int) -> None:
    stream = training_stream(n_tokens, seed)
    assert n_tokens <= len(stream) < n_tokens + 27
    assert stream == training_stream(n_tokens, seed)
    if stream:
        assert stream[-1] == "."
    sentences = split_sentences(stream)
    assert sum(map(len, sentences)) == len(stream)
    assert all(is_grammatical(" ".join(s)) for s in sentences)


def test_split_sentences_drops_the_incomplete_tail() -> None:
    tokens = "Yesterday I worked . Every day he works . Tomorrow we".split(" ")
    assert split_sentences(tokens) == [
        ["Yesterday", "I", "worked", "."],
        ["Every", "day", "he", "works", "."],
    ]
    assert split_sentences([]) == []


# ----------------------------------------------------------------------------- checker


GOOD = [
    "Yesterday I worked and he played .",
    "Every day he works .",
    "Every day I work .",
    "Every day my brothers cook dinner .",
    "Usually the teacher watches the film but we go to the park .",
    "Tomorrow he will work .",
    "Next week Anna will find her keys and they will travel to the city but I will sleep .",
    "Last night she went to the park .",
    "Every morning it has lunch .",
]

BAD = [
    "Yesterday I work .",  # present after a past adverb
    "Yesterday I will work .",
    "Yesterday I worked and he plays .",  # the second clause must share the tense
    "Tomorrow he will works .",  # will + inflected form
    "Tomorrow he will worked .",
    "Tomorrow he works .",
    "Every day he work .",  # broken agreement
    "Every day I works .",
    "Every day they works .",
    "Every day my brothers works .",
    "Every day the teacher work .",
    "Every day he worked .",
    "Yesterday I worked",  # missing final "."
    "Yesterday I worked . .",
    "I worked yesterday .",
    "Yesterday I watched .",  # a media verb needs its object
    "Yesterday I cooked the dinner .",  # food nouns take no determiner
    "Yesterday I went the park .",
    "Yesterday I slept the film .",
    "Yesterday teacher worked .",
    "Yesterday I worked and .",
    "Yesterday I worked and he played and we slept and they ran .",  # at most three clauses
    "Yesterday  I worked .",  # double space
    " Yesterday I worked .",
    "Yesterday I worked zebra .",  # unknown word
    "Yesterday I worked .\n",
    "",
    ".",
    "<pad>",
]


@pytest.mark.parametrize("sentence", GOOD)
def test_hand_written_sentences_are_accepted(sentence: str) -> None:
    assert is_grammatical(sentence)
    assert ORACLE.fullmatch(sentence)


@pytest.mark.parametrize("sentence", BAD)
def test_hand_written_errors_are_rejected(sentence: str) -> None:
    assert is_grammatical(sentence) is False
    assert not ORACLE.fullmatch(sentence)


def test_running_example_prefix() -> None:
    assert is_valid_prefix("Yesterday I")
    assert is_valid_prefix("Yesterday I worked and he")
    assert is_valid_prefix("")
    assert not is_valid_prefix("Yesterday I work")
    after = next_words("Yesterday I worked and he")
    assert after and all(g.is_past_verb(w) for w in after)
    assert len(after) == len(g.all_verbs())
    every_day = next_words("Every day he")
    assert every_day and all(g.is_present_3sg_verb(w) for w in every_day)
    assert next_words("Yesterday I worked .") == []


def test_tense_of() -> None:
    assert tense_of("Yesterday I worked and he played .") == "past"
    assert tense_of("Last night she slept .") == "past"
    assert tense_of("Every day he works .") == "present"
    assert tense_of("Tomorrow he will work .") == "future"
    assert tense_of("I worked .") is None
    assert tense_of("") is None
    assert tense_of("Last") is None


@settings(max_examples=examples(200), deadline=None)
@given(seed=st.integers(min_value=0, max_value=10**9))
def test_shuffles_agree_with_the_oracle(seed: int) -> None:
    rng = random.Random(seed)
    tokens = generate_sentence(rng).split(" ")
    shuffled = tokens[:]
    rng.shuffle(shuffled)
    text = " ".join(shuffled)
    assert is_grammatical(text) == bool(ORACLE.fullmatch(text))


def test_almost_all_shuffles_are_rejected() -> None:
    rng = random.Random(7)
    rejected = total = 0
    for _ in range(3000):
        tokens = generate_sentence(rng).split(" ")
        shuffled = tokens[:]
        rng.shuffle(shuffled)
        if shuffled == tokens:
            continue
        total += 1
        rejected += not is_grammatical(" ".join(shuffled))
    assert rejected / total > 0.99


def test_swapping_whole_clauses_stays_grammatical() -> None:
    assert is_grammatical("Yesterday he played and I worked .")


@settings(max_examples=examples(300), deadline=None)
@given(seed=st.integers(min_value=0, max_value=10**9), data=st.data())
def test_single_word_substitutions_agree_with_the_oracle(seed: int, data: st.DataObject) -> None:
    tokens = generate_sentence(random.Random(seed)).split(" ")
    position = data.draw(st.integers(min_value=0, max_value=len(tokens) - 1))
    tokens[position] = data.draw(st.sampled_from(VOCAB + ["zebra", ""]))
    text = " ".join(tokens)
    assert is_grammatical(text) == bool(ORACLE.fullmatch(text))


def test_checker_accepts_a_thousand_generated_sentences() -> None:
    # Its speed is measured in `make bench` (scripts/bench/bench.py), not asserted here.
    assert all(is_grammatical(s) for s in generate_sentences(1000, seed=11))
