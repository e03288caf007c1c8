"""The notebooks Colab opens: each page's notebook with its MyST markup resolved into plain Markdown.

The book's sources speak MyST, which Jupyter Book resolves and Colab does not: a `{glue:text}` role would show
its key, not its number. The Colab notebook of a page (`locales/<lang>/notebooks/<page>.ipynb`, English or an
edition's) is the source notebook (translated, for an edition) with every markdown cell rewritten:

- `{glue:text}`name`` -> the value the notebook's own outputs recorded (in the edition's number style);
- `{glue:figure}` -> the glued image as a cell attachment, with its numbered caption;
- `{term}`text <Term>`` -> the text, linked to the term in the published glossary;
- `{cite}`key`` -> "[Author et al., year]", linked to the published references page;
- `{claim}`id`` -> "[System version]", linked to its entry in the published ledger;
- `{numref}`fig-…`` -> "Fig. N.M", linked to the figure;
- `](#label)` and relative links -> the published page that holds the target;
- `{literalinclude}` and `{admonition}` directives -> the code from the package's source, a block quote
  (`colab_directives`).

Code cells and outputs stay as they are. `scripts/book/colab_notebooks.py` writes them; tests/test_colab_notebooks.py
checks they are fresh and hold no MyST markup. The published site's address comes from
`minigpt.book.repository` (`_config.yml`), the one place that names the repository.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from minigpt.book import editions
from minigpt.book.captions import markdown_alt
from minigpt.book.colab_directives import resolve_directives
from minigpt.book.repository import repository, site_url, source_url  # noqa: F401 (re-exported)

ROOT = Path(__file__).resolve().parents[2]
GLUE_PREFIX = "application/papermill.record/"
FIGURE_WORD = {"en": "Fig.", "es": "Figura"}

_GLUE_TEXT = re.compile(r"\{glue:text\}`([^`:]+)(?::([^`]*))?`")
_GLUE_FIGURE = re.compile(r"^```\{glue:figure\}[ \t]+(\S+)\n((?::[a-z_-]+:[^\n]*\n)*)\n?(.*?)^```[ \t]*$", re.M | re.S)
_ROLE = re.compile(r"\{(term|cite|cite:p|cite:t|claim|numref)\}`([^`]*)`")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_LABEL_LINE = re.compile(r"^\(([A-Za-z0-9_-]+)\)=[ \t]*$", re.M)
_NAME_OPTION = re.compile(r"^:(?:name|label):[ \t]+(\S+)", re.M)
_ANGLE = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.S)


def _sources() -> list[Path]:
    """Every page of the book (what a cross-reference may point into)."""
    pages = [*ROOT.glob("chapters/*.ipynb"), *ROOT.glob("chapters/*.md"), *ROOT.glob("exercises/*.ipynb"),
             *ROOT.glob("exercises/*.md"), *ROOT.glob("decoder_ring/*"), *ROOT.glob("appendices/*.md"),
             ROOT / "intro.md"]
    return sorted(p for p in pages if p.suffix in (".ipynb", ".md"))


def _page_texts(path: Path) -> tuple[list[str], list[dict]]:
    """A page's markdown texts (in order) and its cells' metadata (for a notebook; empty for Markdown)."""
    if path.suffix == ".md":
        return [path.read_text(encoding="utf-8")], []
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) if c["cell_type"] == "markdown" else "" for c in cells], [
        c.get("metadata", {}) for c in cells]


@lru_cache(maxsize=1)
def labels() -> dict[str, str]:
    """Label -> the page (path without suffix) that defines it: `(label)=` targets, `:name:`/`:label:` options,
    code cells' figure names."""
    found: dict[str, str] = {}
    for path in _sources():
        page = path.relative_to(ROOT).with_suffix("").as_posix()
        texts, metas = _page_texts(path)
        for text in texts:
            for label in (*_LABEL_LINE.findall(text), *_NAME_OPTION.findall(text)):
                found.setdefault(label, page)
        for meta in metas:
            name = meta.get("mystnb", {}).get("figure", {}).get("name")
            if name:
                found.setdefault(name, page)
    return found


def figure_numbers(notebook: dict, page: str) -> dict[str, str]:
    """Figure label -> "N.M" in a numbered chapter (chapters/NN_…: N from the file name, M in page order), as
    the site numbers them (`sphinx_numbering`)."""
    match = re.match(r"chapters/(\d\d)_", page)
    if not match:
        return {}
    order: list[str] = []
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            text = "".join(cell["source"])
            blocks = re.findall(r"^```\{(?:figure|glue:figure)\}.*\n((?::[a-z_-]+:.*\n)*)", text, re.M)
            order += [name for block in blocks for name in _NAME_OPTION.findall(block)]
        else:
            name = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name")
            if name:
                order.append(name)
    return {label: f"{int(match.group(1))}.{i}" for i, label in enumerate(order, 1)}


@lru_cache(maxsize=1)
def glossary_terms() -> dict[str, str]:
    """Lower-case term -> the term as the glossary defines it."""
    text = (ROOT / "appendices" / "glossary.md").read_text(encoding="utf-8")
    body = text.split("```{glossary}", 1)[1].split("\n```", 1)[0]
    return {line.strip().lower(): line.strip() for line in body.splitlines() if line.strip() and line[0] != " "}


def term_anchor(term: str) -> str:
    """Sphinx's id of a glossary term: `term-` and its words joined by hyphens (non-ASCII letters dropped)."""
    ascii_only = unicodedata.normalize("NFKD", term).encode("ascii", "ignore").decode()
    return "term-" + re.sub(r"[^\w]+", "-", ascii_only, flags=re.ASCII).strip("-")


@lru_cache(maxsize=1)
def citation_labels() -> dict[str, str]:
    """BibTeX key -> "Author et al., year" (author-year, as the site shows it)."""
    from pybtex.database import parse_file

    out = {}
    for key, entry in parse_file(str(ROOT / "references.bib")).entries.items():
        people = entry.persons.get("author", [])
        last = [" ".join(p.last_names).replace("{", "").replace("}", "") for p in people]
        who = (last[0] if len(last) == 1 else f"{last[0]} and {last[1]}" if len(last) == 2
               else f"{last[0]} et al." if last else entry.fields.get("title", key).replace("{", "").replace("}", ""))
        out[key] = f"{who}, {entry.fields.get('year', 'n.d.')}"
    return out


@lru_cache(maxsize=1)
def claim_labels() -> dict[str, tuple[str, str]]:
    """Claim id -> (the text its role shows, its anchor in the ledger's appendix)."""
    from minigpt.book.claims import load

    return {key: (c.label, c.anchor) for key, c in load(ROOT / "references" / "claims.yml").claims.items()}


def glued_values(notebook: dict) -> dict[str, dict[str, Any]]:
    """Name -> the data (MIME type -> value) each `glue` output of the notebook recorded."""
    values = {}
    for cell in notebook["cells"]:
        for out in cell.get("outputs", []):
            meta = out.get("metadata", {}).get("scrapbook", {})
            if "name" in meta:
                prefix = meta.get("mime_prefix", GLUE_PREFIX)
                values[meta["name"]] = {k.removeprefix(prefix): v for k, v in out.get("data", {}).items()}
    return values


@dataclass
class Page:
    """What resolving one page's markdown needs: where it stands, its edition, its glued values, its figures."""

    page: str
    lang: str
    glued: dict[str, dict[str, Any]]
    figures: dict[str, str]

    def url(self, page: str, anchor: str = "") -> str:
        return f"{site_url(self.lang)}{page}.html" + (f"#{anchor}" if anchor else "")

    def glue_text(self, name: str, spec: str | None) -> str:
        if name not in self.glued or "text/plain" not in self.glued[name]:
            raise KeyError(f"{self.page}: no glued value {name!r} in the notebook's outputs (re-execute it)")
        text = "".join(self.glued[name]["text/plain"])
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            text = text[1:-1]
        elif spec:
            text = format(float(text) if "." in text or "e" in text else int(text), spec)
        try:
            return editions.localize_glued(text, self.lang)
        except editions.UntranslatedGlue:  # the edition's build reports it; here the English words stay
            return text

    def link(self, target: str) -> str:
        """A link target of the page as a published URL (an absolute one as it stands)."""
        if target.startswith(("http://", "https://", "mailto:", "attachment:", "data:")):
            return target
        path, _, anchor = target.partition("#")
        if not path:
            return self.url(labels().get(anchor, self.page), anchor)
        resolved = (Path(self.page).parent / path).as_posix()
        parts: list[str] = []
        for part in resolved.split("/"):
            if part == "..":
                parts.pop()
            elif part not in ("", "."):
                parts.append(part)
        return self.url(re.sub(r"\.(ipynb|md)$", "", "/".join(parts)), anchor)

    def role(self, match: re.Match) -> str:
        role, body = match.groups()
        if role == "term":
            angle = _ANGLE.match(body)
            text, term = (angle.group(1), angle.group(2)) if angle else (body, body)
            term = glossary_terms().get(term.strip().lower(), term.strip())
            return f"[{text}]({self.url('appendices/glossary', term_anchor(term))})"
        if role.startswith("cite"):
            cites = "; ".join(citation_labels()[key.strip()] for key in body.split(","))
            return f"[[{cites}]]({self.url('appendices/references')})"
        if role == "claim":
            label, anchor = claim_labels()[body.strip()]
            return f"[[{label}]]({self.url('appendices/claims', anchor)})"
        angle = _ANGLE.match(body)
        label = angle.group(2) if angle else body
        number = self.figures.get(label.strip())
        if number is None:
            raise KeyError(f"{self.page}: {{numref}} to {label!r}, which is no numbered figure of the page")
        text = f"{FIGURE_WORD.get(self.lang, 'Fig.')} {number}"
        if angle:
            text = angle.group(1).replace("%s", number).replace("{number}", number)
        return f"[{text}]({self.link('#' + label.strip())})"


def _figure(page: Page, match: re.Match, attachments: dict) -> str:
    name, options, caption = match.group(1), match.group(2), match.group(3).strip()
    label = (_NAME_OPTION.findall(options) or [""])[0]
    data = page.glued.get(name, {})
    mime = next((m for m in ("image/png", "image/jpeg", "image/svg+xml") if m in data), None)
    if mime is None:
        raise KeyError(f"{page.page}: no glued figure {name!r} in the notebook's outputs (re-execute it)")
    filename = f"{name}.{mime.split('/')[1].split('+')[0]}"
    value = data[mime]
    attachments[filename] = {mime: value if mime != "image/svg+xml" else
                             base64.b64encode("".join(value).encode()).decode()}
    head = _figure_head(page, label)
    alt = head.replace("**", "") + markdown_alt(_resolve_inline(caption, page))  # the site's: the finding
    return f"![{alt}](attachment:{filename})\n\n{head}{caption}"


def _figure_head(page: Page, label: str) -> str:
    """A caption's lead, "**Fig. 16.1.** ", as the site numbers the figure labelled `label` (or nothing)."""
    number = page.figures.get(label)
    return f"**{FIGURE_WORD.get(page.lang, 'Fig.')} {number}.** " if number else ""


def resolve_markdown(source: str, page: Page, attachments: dict | None = None) -> str:
    """A markdown cell's source with the MyST markup resolved (see the module docstring)."""
    attachments = {} if attachments is None else attachments
    source = resolve_directives(source, page.page, source_url, page.lang)
    source = _GLUE_FIGURE.sub(lambda m: _figure(page, m, attachments), source)
    return _resolve_inline(_LABEL_LINE.sub("", source), page)


def _resolve_inline(text: str, page: Page) -> str:
    """`text` with its glued values written in, its roles as links to the site, and its links published."""
    text = _GLUE_TEXT.sub(lambda m: page.glue_text(m.group(1), m.group(2)), text)
    text = _ROLE.sub(page.role, text)
    return _LINK.sub(lambda m: f"]({page.link(m.group(1))})", text)


def colab_notebook(notebook: dict, page: str, lang: str = "en", outputs_from: dict | None = None) -> dict:
    """A copy of `notebook` whose markdown cells (and figure captions) hold no MyST markup.

    `outputs_from`: the notebook whose outputs hold the glued values (the English one, for an edition)."""
    source = outputs_from or notebook
    resolver = Page(page, lang, glued_values(source), figure_numbers(source, page))
    out = copy.deepcopy(notebook)
    cells = []
    for cell in out["cells"]:
        cells.append(cell)
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        if "caption" in figure:
            figure["caption"] = resolve_markdown(figure["caption"], resolver)
            cells.append(_caption_cell(cell, figure, resolver))  # Colab shows no cell metadata
        if cell["cell_type"] != "markdown":
            continue
        attachments: dict = dict(cell.get("attachments", {}))
        text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        cell["source"] = resolve_markdown(text, resolver, attachments).splitlines(keepends=True)
        if attachments:
            cell["attachments"] = attachments
    out["cells"] = cells
    return out


def _caption_cell(cell: dict, figure: dict, page: Page) -> dict:
    """The caption of a code cell's figure (its `mystnb.figure` metadata, which the site shows and Colab does
    not) as a markdown cell to follow it, numbered as the site numbers it."""
    text = _figure_head(page, figure.get("name", "")) + figure["caption"]
    caption = {"cell_type": "markdown", "metadata": {}, "source": text.splitlines(keepends=True)}
    if "id" in cell:
        caption["id"] = f"{cell['id']}-caption"
    return caption


def leftover_markup(notebook: dict) -> list[str]:
    """The MyST markup Colab would show raw, as found in the notebook's markdown cells."""
    bad = re.compile(r"\{glue|\{term\}|\{cite|\{claim\}|\{numref\}|\]\(#|^(?:`{3,}|:{3,})\{[\w:-]+\}", re.M)
    return [m.group(0) for cell in notebook["cells"] if cell["cell_type"] == "markdown"
            for m in bad.finditer("".join(cell["source"]))]
