"""A figure caption's first sentence: the alt text of the figure's image, on the site
(`minigpt.book.sphinx_figures`) and in the notebooks Colab opens (`minigpt.book.colab_notebooks`).
"""

from __future__ import annotations

import re

# A sentence ends at ". " (or "? ", "! ") before a capital, not inside "e.g. x" or "Fig. 3.1".
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-ZÁÉÍÓÚÑ¿¡(])")
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|Fig|Eq|Eqs|Ec|Ecs|vs|cf|approx)\.$", re.IGNORECASE)
_MARKDOWN_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


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


def markdown_alt(caption: str) -> str:
    """A Markdown caption's first sentence as plain text for ``![alt](…)``: links kept as their text,
    emphasis and code marks dropped, and no bracket left to end the alt text early.

    >>> markdown_alt("The roof of [Eq. (3.3)](https://x/#eq) and `B` = 1. More.")
    'The roof of Eq. (3.3) and B = 1.'
    """
    plain = _MARKDOWN_LINK.sub(lambda m: m.group(1), caption)
    return first_sentence(plain.replace("**", "").replace("`", "").replace("[", "(").replace("]", ")"))
