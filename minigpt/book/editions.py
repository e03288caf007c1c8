"""The book's editions: languages, how each writes a number, and glued values in another language.

A glued value (`{glue:text}`) is computed by a notebook and printed in English style ("32,768",
"3.95", "0.75× at γ = 2"). The Spanish edition writes the same value the Spanish way, chosen once for
the whole edition: a decimal comma, and thousands separated by a narrow no-break space (U+202F, the
SI's thin space) from five digits on, as the RAE's *Ortografía* (2010) recommends: "32 768", "2048",
"3,95". `localize_glued` converts a glued string; the few glued strings that hold English words are
translated through a table of templates (`locales/<lang>/glued.yml`) whose numbers stay the computed
ones.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
LANGS = ("en", "es")
#: The languages' names in each language: LANG_NAMES[page's language][named language] ("en inglés", "in Spanish").
LANG_NAMES = {"en": {"en": "English", "es": "Spanish"}, "es": {"en": "inglés", "es": "español"}}
THIN = "\u202f"  # narrow no-break space: the thousands separator of the Spanish edition

# A number as the notebooks print it: optional sign, English thousands commas, a decimal part, an
# exponent. Not inside a word or a dotted version ("L4-d128", "0.3.36" stay as they are).
NUMBER = re.compile(
    r"(?<![\w.,])(?P<sign>[-−+]?)(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<frac>\d+))?"
    r"(?P<exp>e[-+]?\d+)?(?![\w]|[.,]\d)"
)
# Letters that may stand in a glued string in every language: units and symbols.
_UNIVERSAL = re.compile(
    r"\b(?:[KMGTP]i?B|[kMGTP]?B/s|[kMGTP]?FLOPs?|[mµun]?s|tok/s|req/s|GHz|MHz|W|B|x|e|S|K|P|D|L|V|d|d_h|H|H_kv|"
    r"MiniGPT|fp16|fp32|bf16|int8|fp8|q8_0|f16|f32)\b"
)


#: A number written the English way, found in Spanish text: a thousands comma, or a decimal point (not a
#: version "0.3.36", not inside a name "Llama-3.1", not an IP or section number). "0,001" and "1,234" are
#: Spanish decimals too: only a 2-3 digit head or several groups is English. The Spanish edition's tests
#: (catalogs, built pages, the browser) all look for it with this one pattern.
ENGLISH_NUMBER = re.compile(
    r"(?<![\w.,])(?:[1-9]\d{1,2},\d{3}|\d{1,3}(?:,\d{3}){2,})(?![\d,])|(?<![\w.\-])\d+\.\d+(?![\w.]|\.\d)"
)


def format_number(text: str, lang: str) -> str:
    """One number written the edition's way: '32,768.5' -> '32 768,5' in Spanish (unchanged in English)."""
    match = NUMBER.fullmatch(text)
    if lang == "en" or match is None:
        return text
    return _spanish(match)


def _spanish(match: re.Match) -> str:
    digits = match.group("int").replace(",", "")
    if len(digits) >= 5:
        head = len(digits) % 3 or 3
        digits = digits[:head] + "".join(THIN + digits[i : i + 3] for i in range(head, len(digits), 3))
    out = match.group("sign") + digits
    if match.group("frac") is not None:
        out += "," + match.group("frac")
    return out + (match.group("exp") or "")


def localize_numbers(text: str, lang: str) -> str:
    """Every number of a string written the edition's way."""
    if lang == "en":
        return text
    return NUMBER.sub(_spanish, text)


def template_of(text: str) -> str:
    """A glued string with each number replaced by '{}': the key of its translation."""
    return NUMBER.sub("{}", text)


def needs_words(text: str) -> bool:
    """Whether a glued string holds words (not only numbers, units and symbols) to translate."""
    rest = _UNIVERSAL.sub(" ", NUMBER.sub(" ", text))
    return re.search(r"[A-Za-z]{2,}", rest) is not None


@cache
def glued_table(lang: str) -> dict[str, str]:
    """English template -> the edition's template, from `locales/<lang>/glued.yml` (empty for English)."""
    return _table(lang, "glued.yml")


class UntranslatedGlue(KeyError):
    """A glued string with English words and no entry in the edition's table."""


def localize_glued(text: str, lang: str) -> str:
    """A glued value in the edition's language: its numbers reformatted, its words from the table.

    Raises `UntranslatedGlue` for a string with words the table does not have (the build reports it).
    """
    if lang == "en":
        return text
    numbers = [m.group(0) for m in NUMBER.finditer(text)]
    if not needs_words(text):
        return localize_numbers(text, lang)
    template = template_of(text)
    table = glued_table(lang)
    if template not in table:
        raise UntranslatedGlue(template)
    return table[template].format(*(localize_numbers(n, lang) for n in numbers))


def _table(lang: str, name: str) -> dict[str, str]:
    """One of the edition's YAML tables, `locales/<lang>/<name>` (empty for English or when absent)."""
    path = ROOT / "locales" / lang / name
    if lang == "en" or not path.exists():
        return {}
    return {str(k): str(v) for k, v in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).items()}


@cache
def ui_strings(lang: str) -> dict[str, str]:
    """English -> the edition's string for the page scripts' interface, from `locales/<lang>/ui.yml`."""
    return _table(lang, "ui.yml")


@cache
def theme_strings(lang: str) -> dict[str, str]:
    """English -> the edition's string for the site's own interface, from `locales/<lang>/theme.yml`."""
    return _table(lang, "theme.yml")


# The bibliography's own words: the `note` and `howpublished` fields of references.bib.
_BIB_FIELD = re.compile(r"(?P<head>\b(?:note|howpublished)\s*=\s*\{)(?P<value>(?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*)\}")
_BIB_NAME_ONLY = re.compile(r"arXiv:[\d.v]+(?: \(\d{4}\))?")
# A title or an author: translated only where the table holds it (a work written in the edition's language, a
# collective author such as "ggml contributors").
_BIB_TITLE = re.compile(r"(?P<head>\b(?:title|author)\s*=\s*\{)(?P<value>(?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*)\}")


def translate_bibliography(text: str, lang: str) -> tuple[str, list[str]]:
    """references.bib with its `note`/`howpublished` words in the edition's language.

    Returns the new text and the fields with words that `locales/<lang>/bibliography.yml` lacks.
    Authors, titles and venues are left as published, except where the table holds the whole field: a work
    published in the edition's language (the book's two Spanish sources' own titles), a collective author.
    """
    if lang == "en":
        return text, []
    table = _table(lang, "bibliography.yml")
    missing: list[str] = []

    def field(match: re.Match) -> str:
        value = " ".join(match.group("value").split())
        if value in table:
            return match.group("head") + table[value] + "}"
        if re.search(r"[A-Za-z]{3,}", value) and not _BIB_NAME_ONLY.fullmatch(value):
            missing.append(value)
        return match.group(0)

    def title(match: re.Match) -> str:
        value = " ".join(match.group("value").split())
        return match.group("head") + table[value] + "}" if value in table else match.group(0)

    return _BIB_TITLE.sub(title, _BIB_FIELD.sub(field, text)), missing
