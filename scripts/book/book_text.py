"""The book's prose as text, for the checks of `tests/test_prose.py` and `tests/test_equations.py`.

A *page* is a file listed in `_toc.yml` (the root page included): a Markdown page, or a notebook whose
Markdown cells are its prose. `blocks()` returns each page's Markdown as `Block`s (one per Markdown
page, one per Markdown cell of a notebook), so every check reads the pages as they are, whatever the
chapters contain. The helpers below remove what is not prose (code, math, roles, link addresses) in
steps, so that each check removes exactly what it must ignore.

The errata appendix is checked against the chapters from here too: `erratum_boxes()` finds every
```` ```{admonition} Erratum ```` box of the book with its `:name:`, and `shown_in()` says which page
holds it. `python scripts/book/book_text.py --errata` lists the boxes; `--write` rewrites the link text of
the appendix's "Shown in" cells from where the boxes are; `--name-boxes FILE` gives boxes their
`:name:` from lines `page | a fragment of the title | name`.

The notation appendix's equation index is checked against `minigpt.costs`: `implemented_equations()`
reads which equation each formula implements from the head of its docstring ("Prefill FLOPs, Eq. (1.2):
…"); `--equation-index` prints the index with a row for each, `--equation-index --write` writes it
(keeping the descriptions of the rows already there).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
ERRATA_PAGE = "appendices/errata.md"
NOTATION_PAGE = "appendices/notation.md"


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


# ---------------------------------------------------------------- removing what is not prose

# Directives whose body is prose (kept); every other fenced block is code or data (dropped).
PROSE_DIRECTIVES = {
    "admonition", "note", "warning", "tip", "important", "caution", "attention", "hint", "seealso",
    "danger", "error", "glossary", "figure", "epigraph", "topic", "sidebar", "margin", "dropdown",
}
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,}|:{3,})\s*(\{([\w:-]+)\})?(.*)$")


def strip_code(text: str, *, keep_titles: bool = True) -> str:
    """`text` without fenced code blocks, directive options (`:class: …`) and non-prose directives.

    The bodies of prose directives (admonitions, notes, figures' captions, the glossary) stay; so does a
    directive's title (the text after ```` ```{admonition} ````) unless `keep_titles` is False.
    """
    out: list[str] = []
    stack: list[tuple[str, bool]] = []  # (opening fence, is its body prose)
    for line in text.splitlines():
        m = _FENCE.match(line)
        if stack:
            fence, body_is_prose = stack[-1]
            bare = line.strip()
            if bare and set(bare) == {fence[0]} and len(bare) >= len(fence):
                stack.pop()  # the closing fence
                continue
            if not body_is_prose:
                continue
            if not m and re.match(r"^\s*:[\w-]+:", line):
                continue  # a directive option
        if m:
            prose_directive = m.group(4) in PROSE_DIRECTIVES
            stack.append((m.group(2), prose_directive))
            if prose_directive and keep_titles:
                out.append(m.group(5))
            continue
        out.append(line)
    return "\n".join(out)


def strip_math(text: str) -> str:
    """`text` without display math (`$$…$$`, `\\[…\\]`) and inline math (`$…$`, `\\(…\\)`)."""
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = re.sub(r"\\\[.*?\\\]", " ", text, flags=re.S)
    text = re.sub(r"(?<![\\$])\$(?!\$)[^$\n]*(?:\n[^$\n]+)*?\$", " ", text)
    return re.sub(r"\\\(.*?\\\)", " ", text, flags=re.S)


def strip_roles(text: str) -> str:
    """Roles: `{term}` keeps its text, every other role (glue, cite, ref, …) becomes a space."""
    text = re.sub(r"\{term\}`([^`<]*?)(?:\s*<[^>]*>)?`", r"\1", text)
    return re.sub(r"\{[\w:.-]+\}`[^`]*`", " ", text)


def strip_inline_code(text: str) -> str:
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", " ", text, flags=re.S)


def strip_markup(text: str) -> str:
    """HTML tags and comments, link addresses (the link text stays), MyST targets and comments."""
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"<[^>\n]+>", " ", text)
    text = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"^\s*\([\w:.-]+\)=\s*$", " ", text, flags=re.M)
    return re.sub(r"^\s*%.*$", " ", text, flags=re.M)


def prose(text: str, *, keep_titles: bool = True) -> str:
    """The words of a block: no code, math, roles other than {term}, link addresses or markup."""
    text = strip_code(text, keep_titles=keep_titles)
    text = strip_roles(text)
    text = strip_inline_code(text)
    text = strip_math(text)
    return strip_markup(text)


# ---------------------------------------------------------------- Erratum boxes and the errata appendix

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
    path = ROOT / ERRATA_PAGE
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
        path = ROOT / page
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


# ---------------------------------------------------------------- the equation index of the notation appendix

_IMPLEMENTS = re.compile(r"^([^:]*?),\s*Eqs?\.\s*\((\d+)\.(\d+)\)")
_INDEX_ROW = re.compile(r"^\| \[\((\d+)\.(\d+)\)\]\(#eq-\d+-\d+\) \| (.*?) \| (.*?) \|$")


def implemented_equations() -> dict[tuple[int, int], list[tuple[str, str]]]:
    """(chapter, n) -> [(function, what it gives)] for each formula of `minigpt.costs.FORMULAS` whose
    docstring starts "<what it gives>, Eq. (x.y)"."""
    from minigpt import costs

    found: dict[tuple[int, int], list[tuple[str, str]]] = {}
    for name in costs.FORMULAS:
        doc = (getattr(costs, name).__doc__ or "").strip()
        m = _IMPLEMENTS.match(doc.splitlines()[0] if doc else "")
        if m:
            found.setdefault((int(m.group(2)), int(m.group(3))), []).append((name, m.group(1)))
    return found


def equation_index() -> tuple[str, str]:
    """(the notation page's current index table, the table with a row for every implemented equation)."""
    text = (ROOT / NOTATION_PAGE).read_text(encoding="utf-8")
    section = text[text.index("## Equation index"):]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    current = "\n".join(lines)
    rows: dict[tuple[int, int], tuple[str, list[str]]] = {}
    for line in lines[2:]:
        m = _INDEX_ROW.match(line)
        if m:
            rows[(int(m.group(1)), int(m.group(2)))] = (m.group(3), re.findall(r"`([^`]+)`", m.group(4)))
    from minigpt import costs

    for (a, b), (what, names) in list(rows.items()):  # drop a function whose docstring no longer names it
        rows[(a, b)] = (what, [n for n in names if f"Eq. ({a}.{b})" in (getattr(costs, n, None).__doc__ or "")])
    for number, functions in implemented_equations().items():
        what, names = rows.get(number, (functions[0][1][:1].lower() + functions[0][1][1:], []))
        rows[number] = (what, names + [f for f, _ in functions if f not in names])
    table = lines[:2] + [
        f"| [({a}.{b})](#eq-{a}-{b}) | {what} | {', '.join(f'`{n}`' for n in names)} |"
        for (a, b), (what, names) in sorted(rows.items())
    ]
    return current, "\n".join(table)


def write_equation_index() -> bool:
    """Write `equation_index()`'s table into the notation page; True if it changed."""
    current, table = equation_index()
    if current == table:
        return False
    path = ROOT / NOTATION_PAGE
    path.write_text(path.read_text(encoding="utf-8").replace(current, table), encoding="utf-8")
    return True


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
