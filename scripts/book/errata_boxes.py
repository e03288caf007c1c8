"""The Erratum boxes of the book and the errata appendix's "Shown in" links to them: finding, naming, linking."""

from __future__ import annotations

import re
from dataclasses import dataclass

import book_pages
from book_pages import blocks, page_title

ERRATA_PAGE = "appendices/errata.md"

_ERRATUM = re.compile(r"^(\s*)(`{3,}|:{3,})\{admonition\}\s*Erratum\b(.*)$")


@dataclass(frozen=True)
class ErratumBox:
    """One ```` ```{admonition} Erratum ```` box: where it is, its title, its options."""

    page: str
    where: str
    title: str
    name: str | None
    classes: tuple[str, ...]


def erratum_boxes(selected: list[str] | None = None) -> list[ErratumBox]:
    """Every Erratum box of the book (or of the selected pages), with its `:name:` and `:class:`."""
    found = []
    for block in blocks(selected):
        lines = block.text.splitlines()
        for i, line in enumerate(lines):
            m = _ERRATUM.match(line)
            if not m:
                continue
            options: dict[str, str] = {}
            for option in lines[i + 1:]:
                o = re.match(r"^\s*:([\w-]+):\s*(.*)$", option)
                if not o:
                    break
                options[o.group(1)] = o.group(2).strip()
            found.append(ErratumBox(
                block.page, block.where, ("Erratum" + m.group(3)).strip(), options.get("name"),
                tuple(options.get("class", "").split()),
            ))
    return found


def table_rows(text: str) -> list[list[str]]:
    """The rows of every Markdown table in `text`, as lists of cells (header and separator rows dropped)."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if all(set(c) <= set("-: ") for c in cells):
                rows.pop()  # the row above the separator is the header
            else:
                rows.append(cells)
    return rows


def shown_in_links(cell: str) -> list[tuple[str, str]]:
    """The (text, address) of each link in a "Shown in" cell."""
    return re.findall(r"\[([^\]]+)\]\(([^)]+)\)", cell)


def shown_in(box: ErratumBox) -> str:
    """The link that a "Shown in" cell gives for `box`: `[Chapter 1](#erratum-…)`."""
    return f"[{page_title(box.page)}](#{box.name})"


def write_shown_in() -> list[str]:
    """Rewrite the link text of every `(#erratum-…)` link of the errata appendix from where its box is."""
    by_name = {b.name: b for b in erratum_boxes() if b.name}
    path = book_pages.ROOT / ERRATA_PAGE
    text = path.read_text(encoding="utf-8")
    changes = []

    def fix(m: re.Match[str]) -> str:
        box = by_name.get(m.group(2))
        if box is None:
            return m.group(0)
        new = shown_in(box)
        if new != m.group(0):
            changes.append(f"{m.group(0)} -> {new}")
        return new

    text = re.sub(r"\[([^\]]+)\]\(#(erratum-[\w-]+)\)", fix, text)
    path.write_text(text, encoding="utf-8")
    return changes


def name_boxes(mapping: list[tuple[str, str, str]]) -> list[str]:
    """Give Erratum boxes their `:name:` (and the `erratum` class): (page, a fragment of the title, name) each.

    Only the Markdown of the boxes changes (a notebook's outputs stay as they are); a box that already has a
    name keeps it. Returns what was done, and raises if a fragment matches no box or more than one.
    """
    import nbformat

    done = []
    for page, fragment, name in mapping:
        path = book_pages.ROOT / page
        nb = nbformat.read(path, as_version=4) if path.suffix == ".ipynb" else None
        markdown = [c for c in nb.cells if c.cell_type == "markdown"] if nb else []
        sources = [c.source for c in markdown] if nb else [path.read_text(encoding="utf-8")]
        hits = [(i, j) for i, src in enumerate(sources) for j, line in enumerate(src.split("\n"))
                if _ERRATUM.match(line) and fragment in line]
        if len(hits) != 1:
            raise ValueError(f"{page}: {fragment!r} matches {len(hits)} Erratum boxes, expected one")
        i, j = hits[0]
        lines = sources[i].split("\n")
        k = j + 1
        options = {}
        while k < len(lines) and re.match(r"^\s*:[\w-]+:", lines[k]):
            key = re.match(r"^\s*:([\w-]+):", lines[k]).group(1)
            options[key] = k
            k += 1
        if "name" in options:
            continue
        if "class" in options:
            if "erratum" not in lines[options["class"]].split():
                lines[options["class"]] += " erratum"
            lines.insert(options["class"] + 1, f":name: {name}")
        else:
            lines[j + 1: j + 1] = [":class: warning erratum", f":name: {name}"]
        new = "\n".join(lines)
        if nb:
            markdown[i].source = new
            nbformat.write(nb, path)
        else:
            path.write_text(new, encoding="utf-8")
        done.append(f"{page}: {name}")
    return done
