"""The built pages' own strings in the edition's language: the theme's chrome and the book's fixed HTML.

Part of the editions' Sphinx extension (`minigpt.book.sphinx_editions` registers `translate_chrome` for a
translated edition): what the theme's templates and scripts hard-code or its catalog lacks, and what the
English notebooks print for the reader (the Colab badge, the note beside widgets that need a kernel).
"""

from __future__ import annotations

import html
from pathlib import Path
from urllib.parse import quote

from sphinx.application import Sphinx

from minigpt import i18n
from minigpt.book import colab_badge, editions, notebook

__all__ = ["ISSUE_TEMPLATE", "edition_outputs", "translate_chrome"]


def translate_chrome(app: Sphinx, exception: Exception | None) -> None:
    """The theme's own strings in the built pages and scripts (`locales/<lang>/theme.yml`).

    Titles, aria-labels, placeholders, alt texts and button texts that the theme's catalog lacks or that
    its templates and scripts hard-code, and the book's own fixed HTML (`edition_outputs`); written over
    each page once it is built.
    """
    if exception is not None or app.builder.format != "html":
        return
    table = editions.theme_strings(app.config.language)
    out = Path(app.outdir)
    for path in [*out.rglob("*.html"), *(out / "_static").glob("*.js")]:
        text = path.read_text(encoding="utf-8")
        new = text
        for english, spanish in table.items():
            if path.suffix == ".js":
                new = new.replace(f'"{english}"', f'"{spanish}"').replace(f"'{english}'", f"'{spanish}'")
                continue
            for attribute in ("title", "aria-label", "placeholder", "data-bs-title", "alt"):
                new = new.replace(f'{attribute}="{html.escape(english)}"', f'{attribute}="{html.escape(spanish)}"')
            new = new.replace(f">{html.escape(english, quote=False)}<", f">{html.escape(spanish, quote=False)}<")
            if english in ISSUE_TEMPLATE:  # the "Open issue" link's title and body, in its URL
                new = new.replace(f"={quote(english)}", f"={quote(spanish)}")
        if path.suffix == ".html":
            new = edition_outputs(new, app.config.language)
        if new != text:
            path.write_text(new, encoding="utf-8")


#: The theme's issue template (sphinx-book-theme writes it into the "Open issue" link's URL).
ISSUE_TEMPLATE = ("Issue on page", "Your issue content here.")


def edition_outputs(page: str, lang: str) -> str:
    """A built page's HTML with what the English notebooks print for the reader in `lang`.

    The Colab badge (`colab_badge.localize`) and the note next to widgets that need a kernel
    (`notebook.KERNEL_NOTE`, translated in the package's catalog, `minigpt.i18n`).
    """
    page = colab_badge.localize(page, lang)
    note = html.escape(notebook.KERNEL_NOTE)
    if note in page:
        page = page.replace(note, html.escape(i18n.gettext_in(lang, notebook.KERNEL_NOTE)))
    return page
