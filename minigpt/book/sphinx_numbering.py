"""Sphinx extension: one numbering a reader can follow, the chapter's own number everywhere.

A chapter is numbered by its file (``chapters/09_gqa_mqa`` is Chapter 9 in the sidebar, its title, its
sections 9.1, 9.2, its figures Fig. 9.1 and its equations), the number the prose uses ("Chapter 9"),
wherever `_toc.yml` places it; an appendix by a letter in the order of the table of contents (A, B, ...).
A page under a numbered part that is neither (a part's index) is not numbered, and neither are the parts
that `_toc.yml` leaves unnumbered (the exercises, whose titles carry their own "Exercise N").

Sphinx numbers the entries of a numbered toctree 1, 2, 3 in order, restarting in each part (or, with
sphinx-multitoc-numbering, continuing across the parts): either way the numbers stop matching the files
as soon as a part is unnumbered or a chapter sits out of file order. This replaces
`assign_section_numbers` of Sphinx's toctree collector and of sphinx-external-toc's (what
sphinx-multitoc-numbering also replaces; `_config.yml` turns that one off) with the same walk, whose
top-level number is the chapter's label.
"""

from __future__ import annotations

import re
import string
from typing import Any, cast

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.environment.collectors.toctree import TocTreeCollector
from sphinx.util import url_re

CHAPTER = re.compile(r"^chapters/(\d+)_")
APPENDIX = "appendices/"


def chapter_labels(docnames: list[str]) -> dict[str, int | str]:
    """The number of each top-level page in table-of-contents order: a chapter's file number, an appendix's
    letter (A for the first appendix listed); other pages have none.

    >>> chapter_labels(["chapters/09_gqa_mqa", "decoder_ring/index", "appendices/notation", "appendices/glossary"])
    {'chapters/09_gqa_mqa': 9, 'appendices/notation': 'A', 'appendices/glossary': 'B'}
    """
    labels: dict[str, int | str] = {}
    appendices = 0
    for name in docnames:
        m = CHAPTER.match(name)
        if m:
            labels[name] = int(m.group(1))
        elif name.startswith(APPENDIX):
            labels[name] = string.ascii_uppercase[appendices]
            appendices += 1
    return labels


def _numbered_toctrees(env: BuildEnvironment) -> list[tuple[addnodes.toctree, int]]:
    """The numbered toctrees of the documents that hold one, in the order of `env.tocs`, with their depth."""
    found = []
    for docname in env.tocs:
        if docname in env.numbered_toctrees:
            for toctree in env.get_doctree(docname).findall(addnodes.toctree):
                if toctree.get("numbered", 0):
                    found.append((toctree, toctree["numbered"]))
    return found


def assign_section_numbers(self: TocTreeCollector, env: BuildEnvironment) -> list[str]:
    """Section numbers of every page under a numbered toctree, the top level being the chapter's label."""
    rewrite_needed: list[str] = []
    assigned: set[str] = set()
    old_secnumbers = env.toc_secnumbers
    env.toc_secnumbers = {}
    toctrees = _numbered_toctrees(env)
    labels = chapter_labels([ref for toctree, _ in toctrees for _, ref in toctree["entries"]])
    numstack: list[int] = []
    label: list[int | str] = []  # the top-level page's label, while its sections are walked

    def walk_toc(node: nodes.Element, secnums: dict, depth: int, titlenode: nodes.Element | None) -> None:
        for subnode in node.children:
            if isinstance(subnode, nodes.bullet_list):
                numstack.append(0)
                walk_toc(subnode, secnums, depth - 1, titlenode)
                numstack.pop()
                titlenode = None
            elif isinstance(subnode, (nodes.list_item, addnodes.only)):
                walk_toc(subnode, secnums, depth, titlenode)
                titlenode = None
            elif isinstance(subnode, addnodes.compact_paragraph):
                numstack[-1] += 1
                reference = cast(nodes.reference, subnode[0])
                number = (*label, *numstack[1:]) if depth > 0 else None
                secnums[reference["anchorname"]] = number
                reference["secnumber"] = list(number) if number else None
                if titlenode:
                    titlenode["secnumber"] = reference["secnumber"]
                    titlenode = None
            elif isinstance(subnode, addnodes.toctree):
                walk_toctree(subnode, depth)

    def walk_toctree(toctree: addnodes.toctree, depth: int, top: bool = False) -> None:
        for _title, ref in toctree["entries"]:
            if url_re.match(ref) or ref == "self" or ref not in env.tocs:
                continue
            if ref in assigned:
                continue  # Sphinx warns about a page under two numbered toctrees; the first numbering stands
            if top:
                if ref not in labels:
                    continue  # a part's index page: not numbered
                label[:] = [labels[ref]]
                numstack[:] = [0]
            secnums: dict[str, tuple | None] = {}
            env.toc_secnumbers[ref] = secnums
            assigned.add(ref)
            walk_toc(env.tocs[ref], secnums, depth, env.titles.get(ref))
            if secnums != old_secnumbers.get(ref):
                rewrite_needed.append(ref)

    for toctree, depth in toctrees:
        walk_toctree(toctree, depth, top=True)
    return rewrite_needed


def _install(app: Sphinx) -> None:
    # At builder-inited, after every extension's setup: sphinx-multitoc-numbering patches the same method, and
    # sphinx-external-toc's collector (which replaces Sphinx's) renumbers each part's pages 1, 2, 3 after it
    # (its numbering "styles", which `_toc.yml` does not use).
    from sphinx_external_toc.collectors import TocTreeCollectorWithStyles

    for collector in (TocTreeCollector, TocTreeCollectorWithStyles):
        collector.assign_section_numbers = assign_section_numbers  # type: ignore[method-assign]


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", _install)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
