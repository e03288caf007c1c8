"""The "Open in Colab" badge of every notebook, in each edition's language.

A self-contained SVG (no request to any server when the page is shown) in a `data:` URL, with its `alt`
text. The English notebooks carry the English badge (`scripts/book/new_notebook.py` writes it); the
Spanish edition's pages and notebooks swap it for the Spanish one with `localize`, whatever link the
badge holds.
"""

from __future__ import annotations

import base64
import html

# language -> (alt text, left label, width of the left part in px): the right part always says "Colab".
_LABELS = {"en": ("Open In Colab", "Open in", 55), "es": ("Abrir en Colab", "Abrir en", 62)}
_RIGHT = 62  # width of the "Colab" part
LANGS = tuple(_LABELS)


def badge_alt(lang: str = "en") -> str:
    """The badge's `alt` text in `lang` ("Open In Colab", "Abrir en Colab")."""
    return _labels(lang)[0]


def badge_svg(lang: str = "en") -> str:
    """The badge itself: a grey label and an orange "Colab", sized to the label's text."""
    alt, label, left = _labels(lang)
    width = left + _RIGHT
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="20" role="img" '
        f'aria-label="{html.escape(alt.replace("In ", "in "))}">'
        f'<rect width="{width}" height="20" rx="3" fill="#555"/><rect x="{left}" width="{_RIGHT}" height="20" rx="3" '
        f'fill="#f9ab00"/><rect x="{left}" width="6" height="20" fill="#f9ab00"/>'
        '<g fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
        f'<text x="7" y="14">{html.escape(label)}</text><text x="{left + 8}" y="14">Colab</text></g></svg>'
    )


def badge_img(lang: str = "en") -> str:
    """The badge as the `src` of an `<img>`: a base64 `data:` URL."""
    return "data:image/svg+xml;base64," + base64.b64encode(badge_svg(lang).encode()).decode()


def localize(source: str, lang: str) -> str:
    """`source` (a badge cell, a built page) with the English badge's image and `alt` replaced by `lang`'s."""
    if lang == "en":
        return source
    return source.replace(f'src="{badge_img("en")}"', f'src="{badge_img(lang)}"').replace(
        f'alt="{badge_alt("en")}"', f'alt="{badge_alt(lang)}"'
    )


def _labels(lang: str) -> tuple[str, str, int]:
    if lang not in _LABELS:
        raise ValueError(f"lang must be one of {sorted(_LABELS)}, got {lang!r}")
    return _LABELS[lang]
