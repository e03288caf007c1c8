"""Sphinx extension: a figure's image says what the figure shows, to a reader who cannot see it.

An image without alt text gets its file path as alt text from Sphinx ("../_images/64ce….png"), which a
screen reader reads out. Every image of a figure that has no alt text of its own gets the first sentence
of the figure's caption instead (in each edition, the caption as translated), which states the finding.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

from minigpt.book.captions import first_sentence


def describe_figures(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Alt text for every figure image that has none: its caption's first sentence."""
    for figure in doctree.findall(nodes.figure):
        captions = list(figure.findall(nodes.caption))
        if not captions:
            continue
        alt = first_sentence(captions[0].astext())
        for image in figure.findall(nodes.image):
            if not image.get("alt") or image.get("alt") == image.get("uri"):
                image["alt"] = alt


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-resolved", describe_figures)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
