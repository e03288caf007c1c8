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


def test_token_counts_fall_back_to_recorded_or_match_them():
    for name in tr.TOKENIZERS:
        counts, measured = tr.token_counts(name)
        assert counts == tr.RECORDED_TOKENS[name], (name, measured)


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
