"""What the theme's and plug-ins' HTML needs to pass axe-core: accessible names and list roles.

A Sphinx extension (`_config.yml`) for both editions. Once the pages are built it rewrites, in each page, the
markup that axe-core 4.14 (`tests/site_checks.py`, every page of both editions) reports as serious:

- *label-content-name-mismatch*: the sidebar's search button shows "Search Ctrl+K" but is named "Search"
  by its `aria-label`, and myst-nb's code-cell toggles show "Show code cell source" but are named "Toggle
  hidden content". Without the `aria-label`, each is named by the text it shows (WCAG 2.5.3, Label in Name).
- *summary-name*: the sidebar's toggles of a part's sections are a `<summary>` holding only an icon. Each
  gets a name, `Sections`, translated in a translated edition by the theme table (`locales/<lang>/theme.yml`),
  whose hook runs after this one.
- *aria-required-children*: docutils writes the bibliography as `role="list"` whose items are
  `role="doc-biblioentry"`, a role DPUB-ARIA 1.1 deprecates; the items become `listitem`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

__all__ = ["SECTIONS", "accessible", "fix_pages"]

#: The name of a sidebar toggle that opens a part's or chapter's sections.
SECTIONS = "Sections"

_SEARCH_FIELD = re.compile(r'(<button class="[^"]*\bsearch-button-field\b[^"]*"[^>]*?) aria-label="[^"]*"')
_TOGGLE = '<summary aria-label="Toggle hidden content">'
_SIDEBAR_TOGGLE = re.compile(
    r'(<details(?: open="open")?>)<summary>(<span class="toctree-toggle" role="presentation">)')


def accessible(page: str) -> str:
    """A built page's HTML with the fixes above; a page without that markup comes back unchanged."""
    page = _SEARCH_FIELD.sub(r"\1", page)
    page = page.replace(_TOGGLE, "<summary>")
    page = _SIDEBAR_TOGGLE.sub(rf'\1<summary aria-label="{SECTIONS}">\2', page)
    return page.replace('role="doc-biblioentry"', 'role="listitem"')  # docutils writes it only in citation lists


def fix_pages(app: Sphinx, exception: Exception | None) -> None:
    """Every built HTML page through `accessible`, written back only where it changed."""
    if exception is not None or app.builder.format != "html":
        return
    for path in Path(app.outdir).rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        new = accessible(text)
        if new != text:
            path.write_text(new, encoding="utf-8")


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("build-finished", fix_pages, priority=400)  # before the theme table translates the names
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
