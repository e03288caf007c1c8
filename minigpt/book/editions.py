"""The book's editions: languages, how each writes a number, and glued values in another language.

A glued value (`{glue:text}`) is computed by a notebook and printed in English style ("32,768",
"3.95", "0.75× at γ = 2"). The Spanish edition writes the same value the Spanish way, chosen once for
the whole edition: a decimal comma, and thousands separated by a narrow no-break space (U+202F, the
SI's thin space) from five digits on, as the RAE's *Ortografía* (2010) recommends: "32 768", "2048",
"3,95"; a percent sign after a no-break space, "1,5 %" (`spaced_percent`). `localize_glued` converts a
glued string; the few glued strings that hold English words are translated through a table of
templates (`locales/<lang>/glued.yml`) whose numbers stay the computed ones.
"""

from __future__ import annotations

import re
import unicodedata
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


# A number in LaTeX as the English pages write it: thousands grouped by "{,}" ("4{,}096"), or five
# digits and more unseparated ("32000"), a decimal point ("0.75"). Its Spanish form follows the same
# rule as the prose: "4096", "32\,768" (a thin space), "0{,}75" (the braces keep TeX's comma from
# spacing itself as punctuation). Equation numbers (`\tag{3.1}`) and code (`\texttt{...}`) are names.
MATH_NUMBER = re.compile(
    r"(?<![\w.}])(?P<int>[1-9]\d{0,2}(?:\{,\}\d{3})+|\d+)(?:\.(?P<frac>\d+))?(?![\w]|\.\d|\{,\}\d|\\,\d)"
)
_MATH_NAMES = re.compile(r"\\(?:tag|texttt|label|ref|eqref)\{[^{}]*\}")

#: A number written the English way inside Spanish maths: "{,}" groups of three digits after a non-zero
#: head (thousands: "4{,}096" reads as 4.096 to a Spanish reader), a decimal point, five digits and more
#: without a thin space. Spanish maths writes "4096", "32\,768", "0{,}8", "0{,}125".
ENGLISH_MATH_NUMBER = re.compile(
    r"(?<![\w.}])[1-9]\d{0,2}(?:\{,\}\d{3})+(?!\d)"
    r"|(?<![\w.}])\d+\.\d+(?![\w.])|(?<![\w.}])\d{5,}(?![\w.])"
)


def _spanish_math(match: re.Match) -> str:
    digits = match.group("int").replace("{,}", "")
    if len(digits) >= 5:
        head = len(digits) % 3 or 3
        digits = digits[:head] + "".join("\\," + digits[i : i + 3] for i in range(head, len(digits), 3))
    if match.group("frac") is not None:
        digits += "{,}" + match.group("frac")
    return digits


def _outside_names(text: str, convert) -> str:  # type: ignore[no-untyped-def]
    """`convert` applied to the LaTeX between the names (`\\tag{3.1}`, `\\texttt{...}`), which stay."""
    out, last = [], 0
    for name in _MATH_NAMES.finditer(text):
        out += [convert(text[last : name.start()]), name.group(0)]
        last = name.end()
    return "".join([*out, convert(text[last:])])


def localize_maths(latex: str, lang: str) -> str:
    """The numbers of a LaTeX formula written the edition's way: '4{,}096' -> '4096', '0.8' -> '0{,}8'."""
    if lang == "en":
        return latex
    return _outside_names(latex, lambda part: MATH_NUMBER.sub(_spanish_math, part))


def english_math_numbers(latex: str) -> list[str]:
    """The numbers of a formula in an edition other than English still written the English way."""
    found: list[str] = []
    _outside_names(latex, lambda part: found.extend(ENGLISH_MATH_NUMBER.findall(part)) or part)
    return found


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
        return typeset(localize_numbers(text, lang))
    template = template_of(text)
    table = glued_table(lang)
    if template not in table:
        raise UntranslatedGlue(template)
    return typeset(table[template].format(*(localize_numbers(n, lang) for n in numbers)))


#: A percent sign after a number, closed up or spaced ("1.5%", "1,5 %"); and the one spacing of the Spanish
#: edition, a no-break space (the RAE's *Ortografía*, Fundéu: "el 1,5 %", never split across two lines).
PERCENT = re.compile(r"(?<=\d)[ \u202f\u00a0]?%")
NBSP = "\u00a0"


def spaced_percent(text: str) -> str:
    """'1,5%' -> '1,5 %' with a no-break space: how the Spanish edition writes a percentage."""
    return PERCENT.sub(NBSP + "%", text)


# A hyphen the notebooks print between two numbers ("28.7-30.2", "24%-39%": a range), or before one
# ("-17%": a negative value); not inside a name ("Llama-2-7B") or an exponent ("5.1e-07").
_RANGE = re.compile(r"(?<![\w.,\-])(\d+(?:[,\u202f]\d+)*(?:\u00a0?%)?)-(?=\d+(?:[,\u202f]\d+)*(?:\u00a0?%)?(?![\w\-]))")
_MINUS = re.compile(r"(?<![\w.,)\]%\-])-(?=\d)")


def typeset(text: str) -> str:
    """A glued value set the Spanish way: '1,5 %' (`spaced_percent`), ranges with an en dash ('28,7–30,2'),
    a minus sign for a negative value ('−17 %')."""
    return spaced_percent(_MINUS.sub("\u2212", _RANGE.sub("\\1\u2013", text)))


def collation_key(text: str, lang: str) -> str:
    """The key that sorts words in the edition's alphabetical order (for its glossary).

    Spanish (the RAE's order since 1994): case, accents and punctuation ignored, "ñ" a letter of its own
    after "n" ("nube" < "ñandú" < "oro"); word by word (a space sorts first). English: case ignored.
    """
    if lang == "en":
        return text.lower()
    out = []
    for char in text.lower():
        if char == "ñ":
            out.append("n{")  # "{" sorts after every letter: ñ after n + anything
        elif char.isalnum() or char == " ":
            out.append("".join(c for c in unicodedata.normalize("NFD", char) if not unicodedata.combining(c)))
    return "".join(out)


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
