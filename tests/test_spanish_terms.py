"""The Spanish edition's words and signs as a Spanish systems editor would have them.

- calques and wrong terms that once read in the catalogs: a biology word for colocated serving, the
  shipped model as "distribuido", "en esperanza", "reporte", held-out text as "reservado", "10k";
- one erratum is *una errata* (the boxes' title), the list of them the *fe de erratas*;
- glued values set the Spanish way: ranges with an en dash, negative values with a minus sign;
- the words of an equation that say what a sum runs over are translated (Eq. 11.2's requests).
"""

from __future__ import annotations

import re

import pytest

from minigpt.book import catalogs, editions
from tests.test_spanish_text import PAGES, messages, spanish_words

# (pattern, why): each a calque or a wrong term a translation must not use (case-insensitive, in the words
# a reader sees: code, maths, link targets and quotations aside).
CALQUES = [
    (r"\bcolocaliz", "colocated serving is *coubicado* (colocalizar is biology's)"),
    (r"\b(el|del|al) modelo distribuido\b|\bcheckpoints? distribuidos?\b", "the shipped model is *el modelo incluido*"),
    (r"\ben esperanza\b", "in expectation is *en valor esperado*"),
    (r"\breport(e|es|a|an|ar|ado|ados|ada|adas)\b", "to report is *indicar*, *informar*; a report, *un informe*"),
    (r"\bfallar en (las|los) cach", "a buffer that misses the caches *no cabe en las cachés*"),
    (r"\b(datos|texto|ventanas) reservad", "held-out text is *de validación*"),
    (r"\bscaling book\b", "the book's title, *How to Scale Your Model*"),
    (r"(?<![\w.,])\d+k\b(?!\s*=)", "10k is *10 000* (or *10 mil*); a context of 8k tokens, *8192 tokens*"),
]


def calques(text: str) -> list[str]:
    words = spanish_words(text)
    return [f"{m.group(0)!r}: {why}" for pattern, why in CALQUES for m in re.finditer(pattern, words, re.I)]


@pytest.mark.parametrize("page", PAGES)
def test_no_calques(page):
    """Bug: an English phrase translated word for word ("fallar en las cachés", "en esperanza")."""
    bad = [(found, m.string[:60]) for m in messages(page) if (found := calques(m.string))]
    assert not bad, f"{page}: {bad[:5]}"


@pytest.mark.parametrize(
    "bad",
    [
        "un motor colocalizado", "el modelo distribuido continúa", "del checkpoint distribuido", "en esperanza",
        "que reporte Linux", "el búfer tiene que fallar en las cachés", "sobre datos reservados",
        "texto reservado", "según el scaling book", "un contexto de 8k tokens", "10k peticiones",
    ],
)
def test_the_calque_check_fails_on_each(bad):
    assert calques(bad), bad


@pytest.mark.parametrize(
    "good",
    [
        "un motor coubicado", "el modelo incluido", "en valor esperado", "que indique Linux",
        "posiciones reservadas", "*How to Scale Your Model*", '20k = 20 000 tokens', "`ctx_8k`", "L4-d128",
    ],
)
def test_the_calque_check_passes_the_editions_words(good):
    assert not calques(good), good


def test_an_erratum_box_is_titled_errata():
    """Bug: "Fe de erratas" (the list of errata) as the title of a box that holds one erratum."""
    bad = [
        (page, m.string[:60])
        for page in PAGES
        for m in messages(page)
        if m.id.startswith("Erratum") and not m.string.startswith("Errata")
    ]
    assert not bad, bad[:5]


@pytest.mark.parametrize(
    ("english", "spanish"),
    [
        ("29.2 ms (28.7-30.2)", "29,2 ms (28,7\u201330,2)"),
        ("24%-39%", "24\u00a0%\u201339\u00a0%"),
        ("-17%", "\u221217\u00a0%"),
        ("-5.1e-07 ± 3.2e-06", "\u22125,1e-07 ± 3,2e-06"),
        ("Llama-2-7B", "Llama-2-7B"),
        ("L4-d128", "L4-d128"),
        ("0.93× [0.89–1.10]", "0,93× [0,89–1,10]"),
    ],
)
def test_glued_ranges_and_negatives_are_set_the_spanish_way(english, spanish):
    """Bug: a hyphen as a range dash ("28,7-30,2") or as a minus sign ("-17 %") in a glued value."""
    assert editions.localize_glued(english, "es") == spanish
    assert editions.localize_glued(english, "en") == english


def test_the_words_a_sum_runs_over_are_translated():
    """Bug: Eq. (11.2) summing over `\\text{requests}` in Spanish (the words under a sum are prose)."""
    english = r"U = \frac{\sum_\text{requests} S_t}{\sum_\text{requests} \text{reserved}(S_t)} \tag{11.2}"
    spanish = r"U = \frac{\sum_\text{peticiones} S_t}{\sum_\text{peticiones} \text{reservado}(S_t)} \tag{11.2}"
    assert not catalogs.markup_problems(english, spanish)
    assert catalogs.markup_problems("$b_\\text{token}$ y más", "$b_\\text{ficha}$ y más"), "a subscript name stays"
    eq = [m.string for m in messages("chapters/11_paged_attention") if "\\tag{11.2}" in m.id]
    assert eq and "requests" not in eq[0] and "peticiones" in eq[0], eq
