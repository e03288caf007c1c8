"""Tests of the word-level tokenizer."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from minigpt.corpus import generate_sentences
from minigpt.corpus.grammar import vocabulary
from minigpt.runtime.tokenizer import Tokenizer

TOK = Tokenizer(vocabulary())


def test_grammar_tokenizer_has_600_words_and_pad_zero() -> None:
    assert TOK.V == 600 == len(TOK)
    assert TOK.pad_id == 0 and TOK.id_of("<pad>") == 0
    assert TOK.id_of(".") == 1
    assert TOK.vocab == vocabulary()


@settings(max_examples=examples(50), deadline=None)
@given(seed=st.integers(min_value=0, max_value=10**9))
def test_round_trip_on_generated_sentences(seed: int) -> None:
    for sentence in generate_sentences(20, seed):
        ids = TOK.encode(sentence)
        assert len(ids) == len(sentence.split(" "))
        assert all(1 <= i < TOK.V for i in ids)  # "<pad>" never appears in text
        assert TOK.decode(ids) == sentence


def test_running_example_ids() -> None:
    ids = TOK.encode("Yesterday I worked and he played .")
    assert [TOK.decode([i]) for i in ids] == ["Yesterday", "I", "worked", "and", "he", "played", "."]
    assert ids[-1] == 1


def test_empty_text_encodes_to_nothing() -> None:
    assert TOK.encode("") == []
    assert TOK.decode([]) == ""


def test_tokens_are_case_sensitive() -> None:
    with pytest.raises(ValueError, match="'yesterday'"):
        TOK.encode("yesterday I worked .")


def test_unknown_words_are_all_named() -> None:
    with pytest.raises(ValueError) as info:
        TOK.encode("Yesterday the zebra worked with a unicorn .")
    message = str(info.value)
    assert "['zebra', 'with', 'a', 'unicorn']" in message
    assert "600 words" in message and "minigpt.corpus.grammar.vocabulary()" in message
    with pytest.raises(ValueError, match="'zebra'"):
        TOK.id_of("zebra")


@pytest.mark.parametrize("bad", [-1, 600, 10**6, "3", 1.5, None])
def test_decode_rejects_out_of_range_ids(bad: object) -> None:
    with pytest.raises(ValueError, match=r"allowed ids are 0\.\.599") as info:
        TOK.decode([1, bad])  # type: ignore[list-item]
    assert repr(bad) in str(info.value) and "position 1" in str(info.value)


def test_decode_accepts_integer_like_ids() -> None:
    torch = pytest.importorskip("torch")
    ids = torch.tensor(TOK.encode("Every day he works ."))
    assert TOK.decode(ids.tolist()) == TOK.decode(list(ids)) == "Every day he works ."


def test_to_dict_round_trips_through_json() -> None:
    data = json.loads(json.dumps(TOK.to_dict()))
    again = Tokenizer.from_dict(data)
    assert again.vocab == TOK.vocab and again.V == 600


@pytest.mark.parametrize(
    "data",
    [
        None,
        ["<pad>", "."],
        {},
        {"kind": "bpe", "vocab": ["<pad>", "."]},
        {"kind": "word"},
        {"kind": "word", "vocab": "<pad> ."},
        {"kind": "word", "vocab": ["<pad>", 3]},
        {"kind": "word", "vocab": [".", "<pad>"]},
        {"kind": "word", "vocab": ["<pad>", ".", "."]},
        {"kind": "word", "vocab": []},
    ],
)
def test_from_dict_rejects_malformed_data(data: object) -> None:
    with pytest.raises(ValueError, match="tokenizer data|vocab"):
        Tokenizer.from_dict(data)


@pytest.mark.parametrize(
    ("vocab", "message"),
    [
        ([], "must start with '<pad>'"),
        (["a", "<pad>"], "must start with '<pad>'"),
        (["<pad>", "a", "a"], r"unique, got duplicates \['a'\]"),
        (["<pad>", "two words"], "without whitespace"),
        (["<pad>", ""], "without whitespace"),
    ],
)
def test_constructor_validates_vocab(vocab: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Tokenizer(vocab)


def test_small_custom_vocab() -> None:
    tok = Tokenizer(["<pad>", ".", "hi"])
    assert tok.V == 3 and tok.encode("hi hi .") == [2, 2, 1]
    assert repr(tok) == "Tokenizer(V=3)"


def test_unknown_words_come_with_the_nearest_words() -> None:
    with pytest.raises(ValueError, match="nearest: 'yesterday': Yesterday, .*'wrked': worked, "):
        TOK.encode("yesterday I wrked .")
    assert TOK.nearest("worked.", 1) == ["worked"] and TOK.nearest("Teachers", 2)[0] == "teachers"
    assert "<pad>" not in TOK.nearest("<pad", 5)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        TOK.nearest("he", 0)
