"""The Spanish edition's catalogs: complete, faithful to the English markup, consistent in their terms.

The strict Spanish build (`make book`) fails on any page message without a translation; these tests
check the catalogs themselves, quickly, and say which message is wrong:

- coverage: every message translated, none fuzzy (a changed English sentence leaves its old
  translation fuzzy after `make translations`, and this fails until someone retranslates it);
- markup: every glued value, maths, code span, citation, cross-reference and link target kept
  (`catalogs.markup_problems`), so that a translated sentence shows the same computed numbers;
- terminology: a message whose English uses a term of `locales/es/terminology.yml` uses its Spanish
  term, and no translation uses an avoided variant;
- numbers: the prose writes numbers the Spanish way (decimal comma, thin space from five digits);
- the glued-value table and the update rule (a changed message becomes fuzzy, a new one empty).
"""

from __future__ import annotations

import re

import pytest
import yaml
from babel.messages.catalog import Catalog

from minigpt.book import catalogs, edition_notebooks, editions
from minigpt.book.editions import ENGLISH_NUMBER

LANG = "es"
PAGES = catalogs.pages(LANG)
TERMS = yaml.safe_load((catalogs.LOCALES / LANG / "terminology.yml").read_text(encoding="utf-8"))
QUOTE = re.compile(r'"[^"]*"|«[^»]*»|“[^”]*”')


def messages(page: str):
    return [m for m in catalogs.read(catalogs.catalog_path(page, LANG)) if m.id]


# Equation numbers "(3.5)", "\\tag{3.1}" and a message that is a display equation are not prose.
EQ_NUMBER = re.compile(r"\(\d+\.\d+\)|\\tag\{[^}]*\}|\d+\.\d+\)")


is_display_maths = catalogs.is_display_maths


def prose(text: str) -> str:
    """A message without its roles, maths, code, link targets, equation numbers and quotations."""
    text = VERSION.sub(" ", EQ_NUMBER.sub(" ", text))
    text = catalogs._ROLE.sub(" ", text)
    text = catalogs._MATH.sub(" ", text)
    text = catalogs._CODE.sub(" ", text)
    text = catalogs._LINK.sub("](x)", text)
    text = re.sub(r"<[^>]+>", " ", text)
    return QUOTE.sub(" ", text)


def test_every_page_of_the_book_has_a_catalog():
    toc = (catalogs.ROOT / "_toc.yml").read_text(encoding="utf-8")
    files = re.findall(r"file:\s*(\S+)", toc) + [re.search(r"root:\s*(\S+)", toc).group(1)]
    missing = sorted(set(files) - set(PAGES))
    assert not missing, f"pages without a Spanish catalog (run `make translations`): {missing}"


@pytest.mark.parametrize("page", PAGES)
def test_every_message_is_translated_and_none_fuzzy(page):
    bad = [("fuzzy" if m.fuzzy else "empty", m.id[:70]) for m in messages(page) if m.fuzzy or not m.string]
    assert not bad, (f"{page}: {len(bad)} message(s) to translate (scripts/book/translations.py export {page}): "
                     f"{bad[:5]}")


@pytest.mark.parametrize("page", PAGES)
def test_translations_keep_the_markup(page):
    bad = [(m.id[:60], p) for m in messages(page) if m.string for p in catalogs.markup_problems(m.id, m.string)]
    assert not bad, f"{page}: {bad[:5]}"


@pytest.mark.parametrize("page", PAGES)
def test_terms_are_the_editions(page):
    bad = []
    for m in messages(page):
        if not m.string or m.string == m.id or is_display_maths(m.id):
            continue
        en, es = prose(m.id), prose(m.string)
        quotes = QUOTE.search(m.string) is not None  # quoting the sources' own Spanish: its words, not ours
        for rule in TERMS:
            if quotes or not re.search(rule["en"], en, re.I):
                pass
            elif not any(re.search(t, es, re.I) for t in rule["es"]):
                bad.append((rule["en"], m.string[:90]))
            for avoid in rule.get("avoid", []):
                if re.search(avoid, es, re.I):
                    bad.append((f"avoid {avoid!r}", m.string[:90]))
    assert not bad, f"{page}: {bad[:5]}"


# Version numbers are names, not quantities.
VERSION = re.compile(r"\b(?:Python|CUDA|PyTorch|torch|Sphinx|Book|NCCL|llama-cpp-python|v)\s?\d+(?:\.\d+)+")


@pytest.mark.parametrize("page", PAGES)
def test_prose_numbers_are_written_the_spanish_way(page):
    bad = [
        (ENGLISH_NUMBER.search(prose(m.string)).group(0), m.string[:80])
        for m in messages(page)
        if m.string and m.string != m.id and not is_display_maths(m.id) and ENGLISH_NUMBER.search(prose(m.string))
    ]
    assert not bad, f"{page}: numbers written the English way: {bad[:5]}"


def test_the_term_checks_can_fail():
    """The checks above are not vacuous: a wrong term, a lost glue and an English number are caught."""
    rule = next(r for r in TERMS if r["en"] == r"\bbandwidth\b")
    assert not any(re.search(t, prose("la anchura de memoria"), re.I) for t in rule["es"])
    assert catalogs.markup_problems("{glue:text}`a` GiB", "{glue:text}`b` GiB")
    assert catalogs.markup_problems("$x = 1$", "$x=1$")
    assert ENGLISH_NUMBER.search(prose("son 3.95 ms y 32,768 tokens"))
    assert ENGLISH_NUMBER.search(prose("1,234,567 bytes"))
    spanish = 'son 3,95 ms, 0,001 s, llama.cpp 0.3.36, Llama-3.1, Python 3.11 y "~2.6 GB"'
    assert not ENGLISH_NUMBER.search(prose(spanish))


def test_update_marks_a_changed_message_fuzzy_and_a_new_one_empty():
    old = Catalog(locale=LANG)
    old.add("The cache grows by one row per step.", "El caché crece una fila por paso.")
    old.add("Kept.", "Conservado.")
    template = Catalog()
    template.add("The cache grows by one row per decode step.")
    template.add("Kept.")
    template.add("A new sentence.")
    new = catalogs.update_catalog(template, old, LANG)
    changed = new.get("The cache grows by one row per decode step.")
    assert changed.fuzzy and changed.string == "El caché crece una fila por paso."
    assert new.get("Kept.").string == "Conservado." and not new.get("Kept.").fuzzy
    assert not new.get("A new sentence.").string
    assert new.get("The cache grows by one row per step.") is None
    c = catalogs.coverage(new)
    assert (c.total, c.translated, c.fuzzy, c.empty) == (3, 1, 1, 1) and not c.done


def test_autofill_only_what_needs_no_translator():
    assert catalogs.autofill("$L$") == "$L$"
    assert catalogs.autofill("{glue:text}`ch1_L`") == "{glue:text}`ch1_L`"
    assert catalogs.autofill("MiniGPT") == "MiniGPT"
    assert catalogs.autofill("layers") is None
    colab = '<a href="https://colab.research.google.com/github/prefill-decode/prefill-decode-book/blob/main/x.ipynb">'
    assert "blob/main/locales/es/notebooks/x.ipynb" in catalogs.autofill(colab + "</a>")


def test_glued_table_keeps_the_numbers():
    table = editions.glued_table(LANG)
    assert table, "locales/es/glued.yml is empty"
    for en, es in table.items():
        assert en.count("{}") == es.count("{}"), f"{en!r} -> {es!r}: the numbers must all be placed"
    assert editions.localize_glued("0.93× [0.89–1.10] the plain speed", LANG).startswith("0,93× [0,89–1,10] ")


@pytest.mark.parametrize(
    ("english", "spanish"),
    [
        ("32,768", "32\u202f768"),
        ("2,048", "2048"),
        ("3.95", "3,95"),
        ("−1,234,567.25", "−1\u202f234\u202f567,25"),
        ("1.2e-05", "1,2e-05"),
        ("0.3.36", "0.3.36"),
        ("L4-d128", "L4-d128"),
        ("128 GiB", "128 GiB"),
    ],
)
def test_glued_numbers_are_written_the_spanish_way(english, spanish):
    assert editions.localize_glued(english, LANG) == spanish
    assert editions.localize_glued(english, "en") == english


def test_a_glued_phrase_without_a_translation_is_an_error():
    with pytest.raises(editions.UntranslatedGlue):
        editions.localize_glued("a phrase nobody translated", LANG)


def _translations_script():
    import importlib.util

    script = catalogs.ROOT / "scripts" / "book" / "translations.py"
    spec = importlib.util.spec_from_file_location("translations", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NOTEBOOK_PAGES = [p for p in PAGES if (catalogs.ROOT / f"{p}.ipynb").exists()]


@pytest.mark.parametrize("page", NOTEBOOK_PAGES)
def test_the_spanish_notebook_is_generated_fresh_from_the_catalog(page):
    """The committed Colab notebook equals what the catalog and the English notebook give now."""
    text, missing = _translations_script().edition_notebook(page, LANG)
    assert not missing, f"{page}: messages no markdown cell holds: {sorted(missing)[:3]}"
    path = edition_notebooks.edition_notebook_path(page, LANG)
    assert path.exists(), f"{path} missing: run `make translations`"
    assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run `make translations`"


def test_a_spanish_notebook_keeps_code_and_translates_prose():
    import json

    page = "chapters/03_decode_memory_bound"
    english = json.loads((catalogs.ROOT / f"{page}.ipynb").read_text(encoding="utf-8"))
    spanish = json.loads(edition_notebooks.edition_notebook_path(page, LANG).read_text(encoding="utf-8"))
    assert len(english["cells"]) == len(spanish["cells"])
    for en, es in zip(english["cells"], spanish["cells"], strict=True):
        if en["cell_type"] == "code":
            assert en["source"] == es["source"] and en.get("outputs") == es.get("outputs")
    prose_es = " ".join("".join(c["source"]) for c in spanish["cells"] if c["cell_type"] == "markdown")
    assert "La decodificación" in prose_es and "blob/main/locales/es/notebooks/" + page in prose_es


def test_translate_markdown_places_blocks_not_fragments():
    """A short message ("layers") is replaced where it is a whole block (a table cell), never inside text."""
    source = "| symbol | meaning |\n|---|---|\n| $L$ | layers |\n\nThe layers of a model\nare stacked.\n"
    out, placed = edition_notebooks.translate_markdown(
        source,
        {"layers": "capas", "The layers of a model are stacked.": "Las capas se apilan.", "meaning": "significado"},
    )
    assert "| $L$ | capas |" in out and "| significado |" in out
    assert "Las capas se apilan.\n" in out and "The layers" not in out
    assert placed == {"layers", "The layers of a model are stacked.", "meaning"}
