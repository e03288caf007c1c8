"""The Spanish edition's text as a Spanish editor reads it: numbers in maths, one gender for *caché*.

tests/test_translations.py checks that the catalogs are complete and keep the English markup; these
checks look at the Spanish itself, over every message of every catalog:

- maths: a number inside a formula follows the prose's rule ("4096", "32\\,768", "0{,}8"); an English
  "4{,}096" reads as 4,096 ≈ 4 to a Spanish reader, "0.8" is not Spanish;
- caché: feminine everywhere ("la caché KV", "las cachés"), as `locales/es/terminology.yml` says;
- percentages: a no-break space before "%" in prose and glued values ("el 1,5 %", RAE and Fundéu), and
  the article of a share ("ocupan solo el 1,5 % del paso", not "solo 1,5 % del paso").
"""

from __future__ import annotations

import json
import re
from functools import cache

import pytest
import yaml
from babel.messages.pofile import read_po

from minigpt.book import catalogs, editions

LANG = "es"
PAGES = catalogs.pages(LANG)
TERMS = yaml.safe_load((catalogs.LOCALES / LANG / "terminology.yml").read_text(encoding="utf-8"))
CACHE_RULE = next(r for r in TERMS if r["en"] == r"\bKV cache\b")
MASCULINE_CACHE = [re.compile(p, re.I) for p in CACHE_RULE["avoid"] if "caché" in p]
QUOTE = re.compile(r'"[^"]*"|«[^»]*»|“[^”]*”')
TABLES = ("ui.yml", "theme.yml", "glued.yml", "bibliography.yml")
FEEDBACK = catalogs.ROOT / "minigpt" / "locales" / LANG / "LC_MESSAGES" / "minigpt.po"


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


def spanish_words(text: str) -> str:
    """What a reader sees of a translation: a term's text kept; maths, code, other roles, link targets and
    quotations (a source's own Spanish, quoted as it is) left out."""
    text = re.sub(r"\{term\}`([^`<]*?)\s*(?:<[^>]*>)?`", r"\1", text)
    text = catalogs._ROLE.sub(" ", text)
    text = catalogs._MATH.sub(" ", text)
    text = catalogs._CODE.sub(" ", text)
    text = catalogs._LINK.sub("](x)", text)
    return QUOTE.sub(" ", text)


def masculine_cache(text: str) -> list[str]:
    words = spanish_words(text)
    return [m.group(0) for pattern in MASCULINE_CACHE for m in pattern.finditer(words)]


def test_the_term_list_holds_the_gender_of_cache():
    assert len(MASCULINE_CACHE) >= 3, "locales/es/terminology.yml lost the masculine forms of *caché* to avoid"


@pytest.mark.parametrize("page", PAGES)
def test_cache_is_feminine_in_the_book(page):
    """Bug: "el caché KV" next to "la caché de prefijos" (two genders for one word in one book)."""
    bad = page_problems(page, masculine_cache)
    assert not bad, f"{page}: *caché* is feminine in this edition (la caché, las cachés): {bad[:5]}"


def feedback_strings() -> list[str]:
    """The translations of the grader's feedback (`minigpt.po`)."""
    with open(FEEDBACK, "rb") as fh:
        return [m.string for m in read_po(fh) if m.id and isinstance(m.string, str)]


def page_problems(page: str, check) -> list[tuple[list[str], str]]:  # type: ignore[no-untyped-def]
    """What `check` finds in each translation of a page, with the start of the translation."""
    return [(found, m.string[:70]) for m in messages(page) if (found := check(m.string))]


def test_cache_is_feminine_in_the_graders_feedback():
    bad = [found for text in feedback_strings() if (found := masculine_cache(text))]
    assert not bad, f"{FEEDBACK.name}: {bad[:5]}"


@pytest.mark.parametrize("name", TABLES)
def test_cache_is_feminine_in_the_interface_tables(name):
    table = yaml.safe_load((catalogs.LOCALES / LANG / name).read_text(encoding="utf-8")) or {}
    bad = [found for value in table.values() if (found := masculine_cache(str(value)))]
    assert not bad, f"locales/{LANG}/{name}: {bad[:5]}"


@pytest.mark.parametrize(
    "bad",
    [
        "el caché KV crece", "lee todo del caché", "escribe al caché", "un caché cuantizado", "este caché",
        "los cachés reservados", "la caché KV cuantizado", "Caché estático", "una caché **preasignado**",
        "las cachés acotados", "una caché KV más pequeño", "el {term}`caché KV <KV cache>`", "su propio caché",
    ],
)
def test_the_gender_check_fails_on_the_masculine(bad):
    assert masculine_cache(bad), bad


@pytest.mark.parametrize(
    "good",
    [
        "la caché KV crece", "de la caché", "a la caché", "una caché cuantizada", "las cachés reservadas",
        "los bytes de la caché leídos", "el prefijo en caché más largo", "guardada en caché junto al latente",
        "sin caché, el paso", 'la página del curso: "El caché te compra un factor de D"', "el `cache` del modelo",
    ],
)
def test_the_gender_check_passes_the_feminine(good):
    assert not masculine_cache(good), good


def glue_roles_as_numbers(text: str) -> str:
    """A translation's words with each glued value as a number (it prints one): `{glue:text}`x`` -> 9."""
    return spanish_words(re.sub(r"\{glue:text\}`[^`]*`", "9", text))


def unspaced_percents(text: str) -> list[str]:
    """Percent signs after a number (or a glued value) without the no-break space: '1,5%', '1,5 %'."""
    return re.findall(r"\d[ \u202f]?%", glue_roles_as_numbers(text))


@pytest.mark.parametrize("page", PAGES)
def test_percentages_take_a_no_break_space(page):
    """Bug: "1,5%" next to "1,5 %" (two spacings), or a plain space that lets "%" start a new line."""
    bad = page_problems(page, unspaced_percents)
    assert not bad, f"{page}: write a percentage with a no-break space, 1,5\u00a0%: {bad[:5]}"


def test_percentages_in_the_graders_feedback_take_a_no_break_space():
    bad = [found for text in feedback_strings() if (found := unspaced_percents(text))]
    assert not bad, f"{FEEDBACK.name}: {bad[:5]}"


@pytest.mark.parametrize(
    ("english", "spanish"), [("1.5%", "1,5\u00a0%"), ("12.3 %", "12,3\u00a0%"), ("45%", "45\u00a0%")]
)
def test_a_glued_percentage_takes_the_same_space(english, spanish):
    """Bug: the build writing glued "1,5%" while the prose writes "1,5 %"."""
    assert editions.localize_glued(english, LANG) == spanish
    assert editions.localize_glued(english, "en") == english
    assert not unspaced_percents(spanish)


@pytest.mark.parametrize("bad", ["el 1,5% del paso", "el 1,5 % del paso", "el {glue:text}`x`%", "el {glue:text}`x` %"])
def test_the_percent_check_fails_on_other_spacings(bad):
    assert unspaced_percents(bad)


def test_the_percent_check_leaves_code_alone():
    assert not unspaced_percents("en la fila `p % b` y `%pip`, el 1,5\u00a0% del paso")


@cache
def percentage_glue() -> frozenset[str]:
    """The glued values that are percentages: a notebook glues them formatted with '%' ("1.5%")."""
    keys = set()
    for path in [*catalogs.ROOT.glob("chapters/*.ipynb"), *catalogs.ROOT.glob("decoder_ring/*.ipynb")]:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        keys.update(re.findall(r'glue\(\s*"([^"]+)"\s*,\s*f"[^"\n]*%[^"\n]*"', code))
    return frozenset(keys)


ARTICLES = {"el", "un", "del", "al"}
SHARE = re.compile(r"(\S*)\s*(?:\{glue:text\}`([^`:]+)(?::[^`]*)?`|\d[\d,]*)(\u00a0%)?\**\s+de(?:l)?\b")


def shares_without_article(text: str) -> list[str]:
    """A percentage of something ("1,5 % del paso") whose article is missing ("ocupan solo 1,5 % del paso")."""
    bad = []
    for match in SHARE.finditer(text):
        before, key, sign = match.groups()
        percentage = sign is not None or (key is not None and key in percentage_glue())
        if percentage and before.lower().lstrip("(*[") not in ARTICLES and not before.endswith(("=", "≈", "(")):
            bad.append(match.group(0))
    return bad


@pytest.mark.parametrize("page", PAGES)
def test_a_share_takes_its_article(page):
    """Bug: a calque of "takes only 1.5% of the step": "ocupa solo 1,5 % del paso" (Spanish: "el 1,5 %")."""
    bad = page_problems(page, shares_without_article)
    assert not bad, f"{page}: a percentage of something takes its article (el 1,5 % del paso): {bad[:5]}"


def test_percentage_glue_is_found():
    assert {"ch3_tp_link_share64", "ch4_attn_share_12k"} <= percentage_glue()


@pytest.mark.parametrize(
    "bad",
    ["ocupan solo {glue:text}`ch3_tp_link_share64` del paso", "solo 1,5\u00a0% del paso",
     "GB/s, {glue:text}`ch8_big_bw_share` de lo que midió", "suponen 12\u00a0% de los bytes"],
)
def test_the_article_check_fails_without_the_article(bad):
    assert shares_without_article(bad)


@pytest.mark.parametrize(
    "good",
    ["ocupan solo el {glue:text}`ch3_tp_link_share64` del paso", "solo un 1,5\u00a0% del paso",
     "una reserva $r$ = {glue:text}`ch9_reserve` de la memoria", "con 8 de las 12 capas"],
)
def test_the_article_check_passes_an_article(good):
    assert not shares_without_article(good)


def test_every_catalog_loads_as_gettext_reads_it() -> None:
    """Each page's catalog compiled to a .mo is read by gettext (as Sphinx's translator reads it) and translates
    its page title. Bug caught: a header broken by an edit of the messages (a no-break space written into
    `Plural-Forms: ... n % 1000000 ...` made gettext refuse three catalogs, whose pages kept English titles)."""
    import gettext
    import io

    from babel.messages.mofile import write_mo

    for page in PAGES:
        with open(catalogs.catalog_path(page, LANG), "rb") as f:
            catalog = read_po(f, locale=LANG)
        buffer = io.BytesIO()
        write_mo(buffer, catalog)
        buffer.seek(0)
        translations = gettext.GNUTranslations(buffer)  # raises on a header gettext cannot parse
        first = next(m for m in catalog if m.id and m.string)
        assert translations.gettext(first.id) == first.string, page
