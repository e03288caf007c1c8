"""The book's prose as text, for the checks of `tests/test_prose.py` and `tests/test_equations.py`.

A *page* is a file listed in `_toc.yml` (the root page included): a Markdown page, or a notebook whose
Markdown cells are its prose. `blocks()` returns each page's Markdown as `Block`s (one per Markdown
page, one per Markdown cell of a notebook), so every check reads the pages as they are, whatever the
chapters contain. The helpers of `prose_strip.py` remove what is not prose (code, math, roles, link
addresses) in steps, so that each check removes exactly what it must ignore.

The errata appendix is checked against the chapters from here too: `erratum_boxes()` finds every
```` ```{admonition} Erratum ```` box of the book with its `:name:`, and `shown_in()` says which page
holds it. `python scripts/book/book_text.py --errata` lists the boxes; `--write` rewrites the link text of
the appendix's "Shown in" cells from where the boxes are; `--name-boxes FILE` gives boxes their
`:name:` from lines `page | a fragment of the title | name`.

The notation appendix's equation index is checked against `minigpt.costs`: `implemented_equations()`
reads which equation each formula implements from the head of its docstring ("Prefill FLOPs, Eq. (1.2):
…"); `--equation-index` prints the index with a row for each, `--equation-index --write` writes it
(keeping the descriptions of the rows already there).

This file is the command line; the work is in its neighbours, one job each: `book_pages.py` (the pages and
their Markdown), `prose_strip.py` (removing what is not prose), `errata_boxes.py` (the Erratum boxes and the
appendix's links) and `notation_index.py` (the equation index). Their names are importable from here.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its modules, one job each, next to it

# What the tests import from here. The repository root is `book_pages.ROOT` (patch it there).
from book_pages import Block, blocks, chapter_number, page_blocks, page_title, pages  # noqa: E402
from errata_boxes import (  # noqa: E402
    ERRATA_PAGE,
    ErratumBox,
    erratum_boxes,
    name_boxes,
    shown_in,
    shown_in_links,
    table_rows,
    write_shown_in,
)
from notation_index import NOTATION_PAGE, equation_index, implemented_equations, write_equation_index  # noqa: E402
from prose_strip import (  # noqa: E402
    PROSE_DIRECTIVES,
    prose,
    strip_code,
    strip_inline_code,
    strip_markup,
    strip_math,
    strip_roles,
)

__all__ = [
    "Block", "blocks", "chapter_number", "page_blocks", "page_title", "pages",
    "ERRATA_PAGE", "ErratumBox", "erratum_boxes", "name_boxes", "shown_in", "shown_in_links", "table_rows",
    "write_shown_in", "NOTATION_PAGE", "equation_index", "implemented_equations", "write_equation_index",
    "PROSE_DIRECTIVES", "prose", "strip_code", "strip_inline_code", "strip_markup", "strip_math", "strip_roles",
    "main",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--errata", action="store_true", help="list every Erratum box with its page and name")
    parser.add_argument("--name-boxes", metavar="FILE",
                        help="give Erratum boxes names from FILE, lines 'page | title fragment | name'")
    parser.add_argument("--equation-index", action="store_true",
                        help="print the notation appendix's equation index as minigpt.costs implies it")
    parser.add_argument("--write", action="store_true",
                        help="rewrite the errata appendix's 'Shown in' links (with --equation-index: the index)")
    args = parser.parse_args(argv)
    if args.name_boxes:
        lines = Path(args.name_boxes).read_text(encoding="utf-8").splitlines()
        mapping = [tuple(p.strip() for p in line.split(" | ")) for line in lines if line.strip()]
        for done in name_boxes(mapping):  # type: ignore[arg-type]
            print(done)
        return 0
    if args.equation_index:
        if args.write:
            print("rewrote the equation index" if write_equation_index() else "the equation index is up to date")
        else:
            print(equation_index()[1])
        return 0
    if args.write:
        for change in write_shown_in():
            print(change)
        return 0
    if args.errata:
        for box in erratum_boxes():
            print(f"{box.page} {box.where}\t{box.name or '(no :name:)'}\t{box.title}")
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
