"""Chapter 4's characters-per-token module: Eq. (4.2), the samples, the recorded token counts."""

from __future__ import annotations

import pytest

from minigpt.corpus import generate_sentences
from minigpt.costs import text_rates as tr


def test_eq_4_2_chars_per_second():
    assert tr.chars_per_second(tok_s=40, chars_per_token=4) == 160
    assert tr.chars_per_token(chars=330, tokens=70) == pytest.approx(4.714, abs=1e-3)


@pytest.mark.parametrize("bad", [{"chars": 10, "tokens": 0}, {"chars": -1, "tokens": 3}])
def test_chars_per_token_rejects_bad_counts(bad):
    with pytest.raises(ValueError):
        tr.chars_per_token(**bad)


def test_samples_and_recordings_cover_the_same_languages():
    for name in tr.TOKENIZERS:
        assert list(tr.RECORDED_TOKENS[name]) == list(tr.SAMPLES)
        assert name in tr.RECORDED_WITH


def test_text_rates_rows():
    rows = tr.text_rates(tr.RECORDED_TOKENS["cl100k_base"], tok_s=40)
    english = rows[0]
    assert english.language == "English" and english.chars == len(tr.SAMPLES["English"])
    assert english.chars_per_s == pytest.approx(40 * english.chars / english.tokens)
    assert all(r.utf8_bytes >= r.chars for r in rows)


def test_unknown_tokenizer():
    with pytest.raises(ValueError, match="allowed"):
        tr.load_encoder("nope")


@pytest.mark.parametrize("name", sorted(tr.TOKENIZERS))
def test_token_counts_are_measured_when_the_tokenizer_loads(name):
    counts, measured = tr.token_counts(name)
    try:
        tr.load_encoder(name)
    except ImportError:
        assert not measured  # the fallback is taken only when the tokenizer is really absent
    else:
        assert measured
    assert counts == tr.RECORDED_TOKENS[name]


@pytest.mark.parametrize("name", sorted(tr.TOKENIZERS))
def test_token_counts_fall_back_to_the_recorded_ones(name, monkeypatch):
    def absent(_name):
        raise ImportError("not installed")

    monkeypatch.setattr(tr, "load_encoder", absent)
    counts, measured = tr.token_counts(name)
    assert not measured and counts == tr.RECORDED_TOKENS[name]
    counts["English"] = -1  # the caller gets a copy: the recorded table stays intact
    assert tr.RECORDED_TOKENS[name]["English"] != -1


@pytest.mark.parametrize("name", sorted(tr.TOKENIZERS))
def test_recorded_counts_reproduce(name):
    try:
        encode = tr.load_encoder(name)
    except ImportError as error:
        pytest.skip(str(error))
    assert tr.measure(encode) == tr.RECORDED_TOKENS[name]


def test_word_level_chars_per_token():
    assert tr.word_level_chars_per_token(["I won .", "He ran ."]) == pytest.approx(16 / 6)
    value = tr.word_level_chars_per_token(generate_sentences(200, seed=0))
    assert 3 < value < 8
