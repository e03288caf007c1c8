"""A built page's article text outside what may keep its own syntax or language (code, output, maths,
quotations), read without changing or re-parsing the page: the static site tests parse each page once and
share it (tests/test_site_pages.py, tests/test_editions_site.py)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from bs4 import BeautifulSoup, CData, NavigableString, Tag


@cache
def parsed(path: Path) -> BeautifulSoup:
    """A built page, parsed once per process for every static test that reads it (none changes it)."""
    return BeautifulSoup(path.read_text(encoding="utf-8"), "lxml")


def _matcher(selectors: list[str]):
    """A test for a tag against simple selectors: ``name``, ``.class`` or ``name.class``."""
    rules = [(s.split(".")[0] or None, s.split(".")[1] if "." in s else None) for s in selectors]

    def matches(tag: Tag) -> bool:
        classes = tag.get("class") or ()
        return any((name is None or tag.name == name) and (cls is None or cls in classes) for name, cls in rules)

    return matches


def text_outside(html: str | BeautifulSoup | Tag, skip: list[str]) -> str:
    """The text of the page's <main> (or of the whole fragment) with every element matching `skip` left out,
    strings joined by one space and whitespace collapsed: what ``main.select(s).decompose()`` for each
    selector and then ``get_text(" ")`` gives, without touching the (cached) tree."""
    soup = BeautifulSoup(html, "lxml") if isinstance(html, str) else html
    main = soup.find("main") or soup
    matches = _matcher(skip)
    parts: list[str] = []
    stack = list(reversed(list(main.children)))
    while stack:
        node = stack.pop()
        if isinstance(node, Tag):
            if not matches(node):
                stack.extend(reversed(list(node.children)))
        elif type(node) in (NavigableString, CData):
            parts.append(node)
    return " ".join(" ".join(parts).split())
