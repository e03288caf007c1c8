"""Sphinx extension: a figure's image says what the figure shows, to a reader who cannot see it.

An image without alt text gets its file path as alt text from Sphinx ("../_images/64ce….png"), which a
screen reader reads out. Every image of a figure that has no alt text of its own gets the first sentence
of the figure's caption instead (in each edition, the caption as translated), which states the finding.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

# A sentence ends at ". " (or "? ", "! ") before a capital, not inside "e.g. x" or "Fig. 3.1".
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-ZÁÉÍÓÚÑ¿¡(])")
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|Fig|Eq|Eqs|Ec|Ecs|vs|cf|approx)\.$", re.IGNORECASE)


def first_sentence(text: str) -> str:
    """The caption's first sentence, on one line.

    >>> first_sentence("Decode-step intensity as the batch grows (cf. Fig. 3.1). The dashed line is the ridge.")
    'Decode-step intensity as the batch grows (cf. Fig. 3.1).'
    """
    text = " ".join(text.split())
    for m in _SENTENCE_END.finditer(text):
        if not _ABBREVIATION.search(text[:m.start()]):
            return text[:m.start()]
    return text


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
