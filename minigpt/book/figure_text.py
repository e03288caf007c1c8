"""The smallest text of a matplotlib figure as the book shows it, in CSS pixels, and the check on it.

A notebook stores a figure as a PNG drawn the way the inline backend draws it: at the figure's own dpi
(100, matplotlib's default: the PNGs' pHYs chunk says so) and cropped to ``bbox_inches="tight"``
(matplotlib-inline's ``print_figure_kwargs``), so a figure of 11 in is an image of about 1,090 px. The
site shows that image at its natural width unless the main column is narrower, and then shrinks it to
the column (`COLUMN_PX`, measured in Chromium). Every text then lands on the screen at

    font size (pt) x dpi / 72 x min(1, COLUMN_PX / rendered width (px))

CSS pixels: a 10 pt tick label of an 11 in figure is 13.9 px in the PNG and 8.6 px on the page.
`figure_texts` lists every text the figure draws (titles, suptitle, axis labels, tick labels, legend,
annotations, table cells: whatever reaches the renderer, so hidden and empty texts and the ticks outside
the view do not count) at that size; `check_figure_text` raises a `ValueError` that names the figure and
its smallest texts when one is under `MIN_TEXT_PX`. `minigpt.book.glue` runs the check on every glued
figure and `minigpt.book.show_figure` on every figure a chapter shows directly, so a figure with small
text fails the notebook's execution (and nbval).

matplotlib is imported inside the functions, so ``import minigpt.book`` stays light.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: The widest a figure's image is shown in the main column (CSS px) in a 1,280 px desktop window,
#: measured in Chromium on the built site (`tests/site_checks.py` checks that no figure is shown narrower
#: than min(natural width, COLUMN_PX)). Wider windows show up to 774 px; 1,200 px, the narrowest
#: window with the sidebar, 608 px; 1,000-1,180 px (sidebar hidden) 720-864 px.
COLUMN_PX = 672
#: The smallest text a figure may show at that width (CSS px): issue 41, "text at least 10 px".
MIN_TEXT_PX = 10.0
#: How many of the smallest texts an error names.
SHOWN_IN_ERROR = 5


@dataclass(frozen=True)
class FigureText:
    """One text the figure draws: its string, its font size, and its size on the page."""

    text: str
    points: float
    px: float


def rendered_width_px(fig: Figure) -> int:
    """The width in pixels of the PNG the notebook stores: the figure drawn at its dpi, tight bbox."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=fig.dpi, bbox_inches="tight",
                facecolor=fig.get_facecolor(), edgecolor=fig.get_edgecolor())
    header = buffer.getvalue()[:24]  # PNG signature, IHDR length and type, then width and height
    return struct.unpack(">I", header[16:20])[0]


def displayed_scale(rendered_px: float, column_px: float = COLUMN_PX) -> float:
    """How much the page shrinks an image `rendered_px` wide: 1 when it fits the column."""
    return min(1.0, column_px / rendered_px)


def _drawn_texts(fig: Figure) -> list[tuple[str, float]]:
    """Every (text, font size in points) the figure hands to the renderer when drawn."""
    from matplotlib.backends.backend_agg import RendererAgg

    width, height = fig.bbox.size
    renderer = RendererAgg(int(width), int(height), fig.dpi)
    drawn: list[tuple[str, float]] = []
    draw_text = renderer.draw_text

    def recording(gc, x, y, s, prop, angle, ismath=False, mtext=None):  # noqa: ANN001, ANN202 (the Agg API)
        if s.strip():
            drawn.append((s, prop.get_size_in_points()))
        return draw_text(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    renderer.draw_text = recording  # type: ignore[method-assign]
    fig.draw(renderer)
    return drawn


def _measure(fig: Figure, column_px: float) -> tuple[int, float, list[FigureText]]:
    """The PNG's width, the page's scale of it, and every text at its size on the page, smallest first."""
    rendered = rendered_width_px(fig)
    scale = displayed_scale(rendered, column_px)
    px_per_point = fig.dpi / 72 * scale
    texts = [FigureText(text, points, points * px_per_point) for text, points in _drawn_texts(fig)]
    return rendered, scale, sorted(texts, key=lambda t: (t.px, t.text))


def figure_texts(fig: Figure, column_px: float = COLUMN_PX) -> list[FigureText]:
    """Every text `fig` draws at its size on the page (CSS px), smallest first."""
    return _measure(fig, column_px)[2]


def smallest_text_px(fig: Figure, column_px: float = COLUMN_PX) -> float:
    """The size on the page (CSS px) of the smallest text `fig` draws; inf for a figure without text."""
    texts = figure_texts(fig, column_px)
    return texts[0].px if texts else float("inf")


def figure_label(fig: Figure) -> str:
    """A name for a figure in a message: its suptitle, else its axes' titles, else its size."""
    suptitle = fig.get_suptitle() if hasattr(fig, "get_suptitle") else ""
    if suptitle:
        return suptitle
    titles = [t for ax in fig.axes if (t := ax.get_title())]
    if titles:
        return " | ".join(titles)
    width, height = fig.get_size_inches()
    return f"untitled figure of {width:g} x {height:g} in with {len(fig.axes)} axes"


def check_figure_text(fig: Figure, name: str | None = None, *, min_px: float = MIN_TEXT_PX,
                      column_px: float = COLUMN_PX) -> None:
    """Raise ValueError when a text of `fig` shows under `min_px` CSS px in a column `column_px` wide.

    The message names the figure (`name`, else `figure_label`), its rendered width, and its smallest
    texts with their sizes in points and on the page, with what would fix it.
    """
    rendered, scale, texts = _measure(fig, column_px)
    small = [t for t in texts if t.px < min_px]
    if not small:
        return
    label = name or figure_label(fig)
    listed = "; ".join(f"{t.text[:40]!r} {t.points:g} pt -> {t.px:.1f} px" for t in small[:SHOWN_IN_ERROR])
    more = f" (and {len(small) - SHOWN_IN_ERROR} more)" if len(small) > SHOWN_IN_ERROR else ""
    need = min_px / (fig.dpi / 72 * scale)
    raise ValueError(
        f"figure {label!r}: {len(small)} text(s) under {min_px:g} px on the page: {listed}{more}. "
        f"It renders {rendered} px wide at {fig.dpi:g} dpi and is shown at {min(rendered, column_px):g} px "
        f"(scale {scale:.2f}), so a text needs at least {need:.1f} pt: raise the font sizes, or narrow "
        f"the figure (fewer panels per row)."
    )
