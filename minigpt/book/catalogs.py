"""The translation catalogs of the book's other editions: read, update, check (README, "The Spanish edition").

One catalog per page, `locales/<lang>/LC_MESSAGES/<page>.po`, made from the templates Sphinx's gettext
builder writes (`_build/gettext/<page>.pot`). A message is one block of the page's MyST source (a
paragraph, a heading, a list item, a table cell, a caption); its translation is MyST too, parsed by the
same parser when the edition is built. This module holds what the build, the scripts and the tests share:

- `update_catalog`: merge a new template into a catalog the way gettext's `msgmerge` does (babel's
  `Catalog.update`): a message whose English changed keeps its old translation marked fuzzy, a new one
  starts empty, a removed one is dropped;
- `markup_problems`: what a translation must keep from its English (glued values, maths, code, link
  targets, citations, cross-references), so that every number in a translated sentence is still the
  computed one;
- `coverage`: translated, fuzzy and empty messages of a catalog.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

from minigpt.book import editions, repository

ROOT = Path(__file__).resolve().parents[2]
LOCALES = ROOT / "locales"
TEMPLATES = ROOT / "_build" / "gettext"
PROJECT = "Prefill & Decode"
# Headers carry a fixed date, so that a catalog changes only when one of its messages does.
_FIXED_DATE = datetime(2026, 1, 1, tzinfo=timezone.utc)

# Where each edition's notebooks live for Colab (generated, committed): the page chapters/x.ipynb becomes
# locales/<lang>/notebooks/chapters/x.ipynb, English included (minigpt.book.colab_notebooks).
NOTEBOOKS = "notebooks"

# The markup a translation keeps: every role's target, maths, inline code, link targets.
_ROLE = re.compile(r"\{([a-z:]+)\}`([^`]*)`")
_MATH = re.compile(r"(?<!\\)\$\$?(?:[^$\\]|\\.)+?\$\$?")
_CODE = re.compile(r"(?<!`)`([^`]+)`(?!`)")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_ANGLE = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.S)
# Roles whose text a translation may change as long as the target stays (a term's text is its target
# when it has no "<...>"; the Spanish then writes {term}`texto <English term>`).
_TEXT_ROLES = {"term", "ref", "doc", "numref", "download", "eq"}


def role_targets(text: str) -> Counter:
    """The (role, target) pairs of a MyST message, e.g. ('glue:text', 'ch1_L'), ('term', 'Prefill')."""
    out: Counter = Counter()
    for role, body in _ROLE.findall(text):
        target = body
        if role in _TEXT_ROLES:
            match = _ANGLE.match(body)
            target = match.group(2) if match else body
            if role == "term":
                target = target.lower()
        out[(role, target.strip())] += 1
    return out


def _without_roles(text: str) -> str:
    return _ROLE.sub(" ", text)


# Words in maths, `\text{bytes moved}` or an underbrace's `_{\text{decode time}}`, are prose a
# translation changes; a subscript's one-word text, `b_\text{token}` or `t_{\text{decode}}`, is a name
# of the notation and stays, except under a sum or a product, where it says in words what the index runs
# over (`\sum_\text{requests}`: "over the requests").
_MATH_TEXT = re.compile(r"(_\{|\^\{|_|\^)?\\(text|mathrm|textrm|mbox)\{([^{}]*)\}")
_OPERATOR = re.compile(r"\\(?:sum|prod|bigcup|bigcap)\s*$")


def _blank_words(match: re.Match) -> str:
    sub, command, words = match.groups()
    over = sub is not None and _OPERATOR.search(match.string, 0, match.start()) is not None
    if sub and not over and not re.search(r"[ ,]", words.strip()):
        return match.group(0)
    return f"{sub or ''}\\{command}{{…}}"


def is_display_maths(msgid: str) -> bool:
    """A message that is a display equation's LaTeX (no `$`, a command, and a relation or a line break)."""
    if "$" in msgid or re.search(r"\\[a-zA-Z]+", msgid) is None:
        return False
    return msgid.startswith("\n") or re.search(r"=|\\(?:le|ge|approx|tag|propto|sim)\b", msgid) is not None


def maths(text: str, lang: str = "en") -> Counter:
    """The inline and display maths of a message (their words, outside subscripts, aside).

    As written, or (`lang`) with its numbers written that edition's way (`editions.localize_maths`).
    """
    found = [text.strip()] if is_display_maths(text) else _MATH.findall(_without_roles(text))
    return Counter(editions.localize_maths(_MATH_TEXT.sub(_blank_words, m), lang) for m in found)


def edition_maths(msgid: str, lang: str) -> str:
    """A message with the numbers of its maths written the edition's way (the rest as it is)."""
    if is_display_maths(msgid):
        return editions.localize_maths(msgid, lang)
    return _MATH.sub(lambda m: editions.localize_maths(m.group(0), lang), msgid)


def code_spans(text: str) -> Counter:
    """The inline code spans of a message (outside roles and maths)."""
    return Counter(_CODE.findall(_MATH.sub(" ", _without_roles(text))))


def link_targets(text: str) -> Counter:
    """The targets of the message's Markdown links, `[text](target)`."""
    return Counter(_LINK.findall(text))


def colab_target(english: str, lang: str) -> str:
    """The edition's Colab link for an English one: a source page's (`blob/<branch>/chapters/x.ipynb`) or the
    English Colab notebook's (`blob/<branch>/locales/en/notebooks/chapters/x.ipynb`)."""
    base = repository.blob()
    generated = f"{base}locales/{lang}/{NOTEBOOKS}/"
    return english.replace(f"{base}locales/en/{NOTEBOOKS}/", base).replace(base, generated)


def markup_problems(msgid: str, msgstr: str, lang: str = "es") -> list[str]:
    """What the translation `msgstr` lost or added against `msgid`; empty when it keeps all the markup.

    Glued values, citations and cross-references must keep their targets (a term's text may change,
    its target may not); maths is kept with its numbers written the edition's way ("4{,}096" -> "4096",
    "0.8" -> "0{,}8"), inline code as written; links keep their targets, except a Colab link, which
    points to the edition's notebook.
    """
    problems = []
    checks = (
        ("roles", role_targets, role_targets),
        ("maths", lambda text: maths(text, lang), maths),
        ("inline code", code_spans, code_spans),
    )
    for name, count_en, count in checks:
        want, got = count_en(msgid), count(msgstr)
        if want != got:
            lost, added = want - got, got - want
            parts = []
            if lost:
                parts.append("lost " + ", ".join(map(str, sorted(lost))))
            if added:
                parts.append("added " + ", ".join(map(str, sorted(added))))
            problems.append(f"{name}: " + "; ".join(parts))
    want_links = Counter(colab_target(t, lang) if "colab" in t else t for t in link_targets(msgid).elements())
    if want_links != link_targets(msgstr):
        problems.append(
            f"links: want {sorted(want_links.elements())}, got {sorted(link_targets(msgstr).elements())}"
        )
    return problems


def catalog_path(page: str, lang: str = "es") -> Path:
    """`locales/<lang>/LC_MESSAGES/<page>.po` for a page name such as 'chapters/01_prefill_vs_decode'."""
    return LOCALES / lang / "LC_MESSAGES" / f"{page}.po"


def pages(lang: str = "es") -> list[str]:
    """The page names that have a catalog in `lang`, sorted."""
    base = LOCALES / lang / "LC_MESSAGES"
    return sorted(p.relative_to(base).with_suffix("").as_posix() for p in base.rglob("*.po"))


def read(path: Path) -> Catalog:
    """A catalog (or template) from disk."""
    with open(path, "rb") as fh:
        return read_po(fh)


def write(catalog: Catalog, path: Path) -> None:
    """Write a catalog without line wrapping (one message, one line: diffs show whole sentences)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    catalog.header_comment = f"# {PROJECT}: the {catalog.locale_identifier or ''} edition's messages."
    catalog.creation_date = catalog.revision_date = _FIXED_DATE
    catalog.project, catalog.version = PROJECT, ""
    catalog.fuzzy = False
    catalog.last_translator = catalog.language_team = ""
    tmp = path.with_suffix(".po.tmp")
    with open(tmp, "wb") as fh:
        write_po(fh, catalog, width=0, omit_header=False, ignore_obsolete=True, include_previous=True)
    tmp.replace(path)


def needs_no_translation(msgid: str) -> bool:
    """A message with nothing to translate: maths, glued values, code, names and numbers only."""
    rest = _LINK.sub(" ", _CODE.sub(" ", _MATH.sub(" ", _without_roles(msgid))))
    rest = re.sub(r"<[^>]+>", " ", rest)  # HTML tags
    words = re.findall(r"[A-Za-z]{2,}", rest)
    names = {"MiniGPT", "GPT", "KV", "MHA", "GQA", "MQA", "MLA", "FLOPs", "FLOP", "GiB", "MiB", "KiB", "ms"}
    return all(w in names for w in words)


def autofill(msgid: str, lang: str = "es") -> str | None:
    """The translation of a message that needs no translator, else None.

    Colab links point to the edition's notebooks, and the numbers of maths are written its way.
    """
    if "colab.research.google.com" in msgid and msgid.startswith("<a href="):
        return colab_target(msgid, lang).replace('alt="Open In Colab"', 'alt="Abrir en Colab"')
    if needs_no_translation(msgid):
        return edition_maths(msgid, lang)
    return None


def update_catalog(template: Catalog, old: Catalog | None, lang: str = "es") -> Catalog:
    """The catalog for a new template: old translations kept, changed ones fuzzy, trivial ones filled."""
    if old is None:
        old = Catalog(locale=lang)
    old.update(template, no_fuzzy_matching=False, update_header_comment=False)
    old.obsolete.clear()
    for message in old:
        if not message.id:
            continue
        fill = autofill(message.id, lang)
        if fill is not None and (not message.string or message.fuzzy):
            message.string = fill
            message.flags.discard("fuzzy")
            message.previous_id = []
    return old


@dataclass(frozen=True)
class Coverage:
    """How much of one catalog is translated."""

    total: int
    translated: int
    fuzzy: int
    empty: int
    words: int  # English words still to translate (empty or fuzzy)

    @property
    def done(self) -> bool:
        return self.translated == self.total


def coverage(catalog: Catalog) -> Coverage:
    """Translated (non-empty, not fuzzy), fuzzy and empty messages of a catalog."""
    total = translated = fuzzy = empty = words = 0
    for message in catalog:
        if not message.id:
            continue
        total += 1
        if message.fuzzy:
            fuzzy += 1
            words += len(message.id.split())
        elif not message.string:
            empty += 1
            words += len(message.id.split())
        else:
            translated += 1
    return Coverage(total, translated, fuzzy, empty, words)


def _raw_maths(text: str, display: bool) -> Counter:
    return Counter([text.strip()] if display else _MATH.findall(_without_roles(text)))


def pages_with_own_maths(lang: str = "es") -> list[str]:
    """The pages whose translated maths differ from the English (a `\\text{}` whose words were translated,
    a number written the edition's way).

    Everywhere else the edition's maths is the English page's, character for character.
    """
    out = []
    for page in pages(lang):
        for m in read(catalog_path(page, lang)):
            display = bool(m.id) and is_display_maths(m.id)
            if m.id and m.string and _raw_maths(m.id, display) != _raw_maths(m.string, display):
                out.append(page)
                break
    return out
