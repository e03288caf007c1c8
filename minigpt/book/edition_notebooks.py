"""The edition's notebooks for Colab: each English notebook with its markdown translated from the catalog.

Code cells, their outputs and the setup cell stay as they are; every message of the page's catalog is
placed where its block stands in a markdown cell (or in a figure caption in a code cell's metadata).
`scripts/book/translations.py notebooks` writes them; tests/test_translations.py checks they are fresh.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

from babel.messages.catalog import Catalog

from minigpt.book import colab_badge
from minigpt.book.catalogs import LOCALES, NOTEBOOKS

# Where a message may start in a markdown cell: a line's start after indentation, quote marks, a list
# marker or a heading's hashes; a table cell; a directive's argument (an admonition's title).
_BLOCK_START = (
    r"(?:(?<=\n)|^)[ \t>]*(?:[-*+][ \t]+|\d+[.)][ \t]+|#{1,6}[ \t]+|\$\$)?|(?<=\|)[ \t]*|(?<=\})[ \t]+"
)
# Where it may end: the end of a line (and so of the paragraph's last line), a table cell's bar, or
# the closing `$$` of a one-line display equation.
_BLOCK_END = r"(?=[ \t]*(?:\n|$|\||\$\$))"


def _message_pattern(msgid: str) -> re.Pattern:
    """A message as it stands in Markdown: its words, with any run of spaces or a line break between."""
    words = [re.escape(w) for w in msgid.split(" ") if w]
    gap = r"(?:[ \t]*\n[ \t>]*|[ \t]+)"
    return re.compile(f"(?:{_BLOCK_START})({gap.join(words)}){_BLOCK_END}")


def translate_markdown(source: str, translations: dict[str, str]) -> tuple[str, set[str]]:
    """A markdown cell with every message of `translations` (English -> edition) replaced.

    Longer messages first, each replaced by a placeholder until the end, so that a short message
    ("layers") is never found inside a longer one's translation. Returns the new source and the set of
    messages placed.
    """
    placed: set[str] = set()
    held: list[str] = []

    def hold(text: str) -> str:
        held.append(text)
        return f"\x00{len(held) - 1}\x00"

    for msgid in sorted(translations, key=len, reverse=True):
        if not msgid.strip():
            continue
        pattern = _message_pattern(msgid.strip())
        if pattern.search(source) is None:
            continue
        placed.add(msgid)
        text = translations[msgid]
        source = pattern.sub(lambda m, text=text: m.group(0)[: m.start(1) - m.start(0)] + hold(text), source)
    for i, text in enumerate(held):
        source = source.replace(f"\x00{i}\x00", text)
    return source, placed


def translate_notebook(notebook: dict, catalog: Catalog) -> tuple[dict, set[str]]:
    """A copy of a notebook (nbformat JSON) whose markdown cells are translated; code and outputs kept.

    The Colab badge is the catalog's language's (`colab_badge.localize`).

    Returns the notebook and the messages of the catalog that no markdown cell holds (empty when the
    notebook is fully translated). Markdown that a code cell prints (a table in a `text/markdown`
    output) is a message of the page too, but an output: it stays as it is, like every output.
    """
    translations = {m.id: m.string for m in catalog if m.id and m.string and not m.fuzzy}
    lang = catalog.locale.language if catalog.locale else "en"
    out = copy.deepcopy(notebook)
    placed: set[str] = set()
    for cell in out["cells"]:
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        if figure.get("caption") in translations:  # a code cell's figure caption (myst-nb cell metadata)
            placed.add(figure["caption"])
            figure["caption"] = translations[figure["caption"]]
        if cell["cell_type"] != "markdown":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        new, got = translate_markdown(source, translations)
        placed |= got
        new = colab_badge.localize(new, lang) if lang in colab_badge.LANGS else new
        cell["source"] = new.splitlines(keepends=True)
    printed = " ".join(
        "".join(o.get("data", {}).get("text/markdown", "")).replace("\n", " ")
        for cell in notebook["cells"]
        for o in cell.get("outputs", [])
    )
    printed = " ".join(printed.split())
    missing = {
        m.id
        for m in catalog
        if m.id and m.id not in placed and m.string != m.id and " ".join(m.id.split()) not in printed
    }
    return out, missing


def edition_notebook_path(page: str, lang: str = "es") -> Path:
    """`locales/<lang>/notebooks/<page>.ipynb`: where Colab opens the edition's notebook of a page."""
    return LOCALES / lang / NOTEBOOKS / f"{page}.ipynb"
