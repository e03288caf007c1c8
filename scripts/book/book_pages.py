"""The book's pages as `_toc.yml` lists them, and the Markdown of each: `Block`s, chapter numbers, page titles.

`ROOT` (the repository root) is read here, at each call, by every module of `book_text.py`: a test that points
the checks at a small book sets `book_pages.ROOT`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Block:
    """The Markdown of one page (a `.md` file) or of one Markdown cell of a notebook."""

    page: str  # path relative to the repository root, e.g. "chapters/01_prefill_vs_decode.ipynb"
    where: str  # "cell 12" for a notebook, "" for a Markdown page
    text: str

    @property
    def label(self) -> str:
        return f"{self.page} {self.where}".strip()


def _toc_files(node: object) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("root", "file") and isinstance(value, str):
                found.append(value)
            else:
                found += _toc_files(value)
    elif isinstance(node, list):
        for item in node:
            found += _toc_files(item)
    return found


def pages() -> list[str]:
    """Every page of the book, in `_toc.yml` order, as paths relative to the root."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    out = []
    for name in _toc_files(toc):
        for suffix in (".md", ".ipynb"):
            if (ROOT / f"{name}{suffix}").is_file():
                out.append(f"{name}{suffix}")
                break
        else:
            raise FileNotFoundError(f"_toc.yml lists {name!r}, which has no .md or .ipynb file")
    return out


def page_blocks(page: str) -> list[Block]:
    """The Markdown of `page`: the file itself, or each Markdown cell of a notebook."""
    path = ROOT / page
    if path.suffix == ".md":
        return [Block(page, "", path.read_text(encoding="utf-8"))]
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [
        Block(page, f"cell {i}", "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"])
        for i, cell in enumerate(cells)
        if cell["cell_type"] == "markdown"
    ]


def blocks(selected: list[str] | None = None) -> list[Block]:
    """The Markdown blocks of the given pages (default: every page of the book)."""
    return [b for page in (pages() if selected is None else selected) for b in page_blocks(page)]


def chapter_number(page: str) -> int | None:
    """12 for "chapters/12_x.ipynb"; None for a page that is not a numbered chapter."""
    m = re.fullmatch(r"chapters/(\d+)_[^/]+\.(ipynb|md)", page)
    return int(m.group(1)) if m else None


def page_title(page: str) -> str:
    """How the book names a page in a link: "Chapter 3", "The decoder ring", or the page's H1."""
    n = chapter_number(page)
    if n is not None:
        return f"Chapter {n}"
    if page.startswith("decoder_ring/"):
        return "The decoder ring"
    for block in page_blocks(page):
        m = re.search(r"^# (.+)$", block.text, re.M)
        if m:
            return m.group(1).strip()
    return page
