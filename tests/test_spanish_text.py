"""The Spanish edition's text as a Spanish editor reads it: numbers in maths, one gender for *caché*.

tests/test_translations.py checks that the catalogs are complete and keep the English markup; these
checks look at the Spanish itself, over every message of every catalog:

- maths: a number inside a formula follows the prose's rule ("4096", "32\\,768", "0{,}8"); an English
  "4{,}096" reads as 4,096 ≈ 4 to a Spanish reader, "0.8" is not Spanish;
- caché: feminine everywhere ("la caché KV", "las cachés"), as `locales/es/terminology.yml` says.
"""

from __future__ import annotations

import pytest

from minigpt.book import catalogs, editions

LANG = "es"
PAGES = catalogs.pages(LANG)


def messages(page: str):
    return [m for m in catalogs.read(catalogs.catalog_path(page, LANG)) if m.id and m.string]


def math_spans(msgid: str, msgstr: str) -> list[str]:
    """The maths of a translation: the whole message for a display equation, else its `$...$` spans."""
    if catalogs.is_display_maths(msgid):
        return [msgstr]
    return catalogs._MATH.findall(catalogs._ROLE.sub(" ", msgstr))


def english_numbers_in_maths(msgid: str, msgstr: str) -> list[str]:
    return [n for span in math_spans(msgid, msgstr) for n in editions.english_math_numbers(span)]


@pytest.mark.parametrize("page", PAGES)
def test_numbers_in_maths_are_written_the_spanish_way(page):
    """Bug: `$P = 4{,}096$`, `$\\alpha = 0.8$` or `$V = 32000$` left as in the English page."""
    bad = [(found, m.string[:70]) for m in messages(page) if (found := english_numbers_in_maths(m.id, m.string))]
    assert not bad, f"{page}: English numbers inside maths (write 4096, 32\\,768, 0{{,}}8): {bad[:5]}"


@pytest.mark.parametrize(
    ("english", "spanish"),
    [
        ("P = 4{,}096", "P = 4096"),
        ("S = 32{,}768", "S = 32\\,768"),
        ("2 = 131{,}072", "2 = 131\\,072"),
        ("V = 32000", "V = 32\\,000"),
        ("\\alpha = 0.8", "\\alpha = 0{,}8"),
        ("4.8 \\cdot 10^{-7}", "4{,}8 \\cdot 10^{-7}"),
        ("x \\tag{10.1}", "x \\tag{10.1}"),  # an equation number is a name
        ("\\texttt{costs.f2}", "\\texttt{costs.f2}"),
        ("B^{16} \\le 2048", "B^{16} \\le 2048"),
    ],
)
def test_maths_numbers_are_localized_like_the_prose(english, spanish):
    """Bug: the build's and the checks' rule for maths drifting from `editions.format_number`'s."""
    assert editions.localize_maths(english, LANG) == spanish
    assert editions.localize_maths(english, "en") == english
    assert not editions.english_math_numbers(spanish)
    assert editions.localize_maths(spanish, LANG) == spanish  # idempotent: a Spanish formula stays


@pytest.mark.parametrize(
    "bad",
    ["$P = 4{,}096$", "$S = 1{,}024$", "$\\alpha = 0.8$", "$e^{1/2} \\approx 1.65$", "$V = 32000$", "$393{,}216$"],
)
def test_the_maths_check_fails_on_english_numbers(bad):
    assert english_numbers_in_maths("Where " + bad + ".", "Donde " + bad + ".")


def test_spanish_decimals_in_maths_pass():
    assert not english_numbers_in_maths("x", "$0{,}125 + 2{,}5 = 32\\,768 \\cdot 10^{-3}$ y $\\tag{3.1}$")


def test_a_translation_must_localize_the_maths_of_its_english():
    """Bug: the markup check accepting the English maths unchanged (or a changed value) in Spanish."""
    msgid = "At $P = 4{,}096$ and $\\alpha = 0.8$."
    assert catalogs.markup_problems(msgid, "Con $P = 4{,}096$ y $\\alpha = 0.8$.")
    assert catalogs.markup_problems(msgid, "Con $P = 4097$ y $\\alpha = 0{,}8$.")
    assert not catalogs.markup_problems(msgid, "Con $P = 4096$ y $\\alpha = 0{,}8$.")
    assert catalogs.autofill("$S = 32{,}768$") == "$S = 32\\,768$"
