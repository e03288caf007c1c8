"""Notebook helpers: the setup cell's `setup()`, Colab detection, `glue` that also works without
myst-nb, `show_figure` (a figure shown in place, its text checked), and the note shown next to widgets
that need a running kernel.

Every figure a chapter shows goes through `glue` or `show_figure`, and both check that its smallest
text is readable on the page (`minigpt.book.figure_text`); `tests/test_figure_text.py` fails on a cell
with an image output that does neither.

Importing this module is cheap: IPython, myst-nb, matplotlib and ipywidgets are imported inside
the functions that need them.
"""

from __future__ import annotations

import html
import random
import sys
from typing import Any

import numpy as np
import torch

from minigpt.i18n import N_, _
from minigpt.runtime.device import DEVICE_ENV, default_device

__all__ = ["DEVICE_ENV", "GLUE_PREFIX", "glue", "in_colab", "kernel_note", "setup", "show_figure"]

# myst-nb stores glued values under this MIME prefix (myst_nb.ext.glue.GLUE_PREFIX).
GLUE_PREFIX = "application/papermill.record/"


def in_colab() -> bool:
    """True when running inside Google Colab."""
    return "google.colab" in sys.modules


def setup(seed: int = 0) -> torch.device:
    """Seed Python, NumPy and PyTorch RNGs and return the device the notebook should use.

    Prints nothing: the device name differs between CPU and GPU runs, and the setup cell's
    output is compared by nbval. Print `device` in a cell marked `# NBVAL_IGNORE_OUTPUT`.
    """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    return default_device()


def _is_figure(value: Any) -> bool:
    return type(value).__name__ == "Figure" and hasattr(value, "savefig")


def glue(name: str, value: Any, display: bool = False) -> None:
    """Record `value` for the book's `{glue}` roles; myst-nb's `glue`, or the same output without it.

    A matplotlib figure is checked first: `figure_text.check_figure_text` raises a ValueError naming
    `name` when a text of it would show under 10 px on the page.
    """
    if _is_figure(value):
        from minigpt.book.figure_text import check_figure_text

        check_figure_text(value, name)
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        myst_glue = None
    if myst_glue is not None:
        myst_glue(name, value, display=display)
        return
    from IPython.core.formatters import format_display_data
    from IPython.display import display as ipy_display

    if _is_figure(value):  # no book here to paste it into (Colab): show the figure itself
        display = True
    bundle, metadata = format_display_data(value)
    prefix = "" if display else GLUE_PREFIX
    metadata["scrapbook"] = {"name": name, "mime_prefix": prefix}
    ipy_display({prefix + k: v for k, v in bundle.items()}, raw=True, metadata=metadata)


def show_figure(fig: Any) -> None:
    """Show a matplotlib figure as the cell's output (in place of ``plt.show()``), its text checked first.

    `figure_text.check_figure_text` raises a ValueError naming the figure by its title when a text of it
    would show under 10 px on the page; otherwise the figure is displayed (the inline backend's PNG and
    its ``<Figure size ...>`` text, as ``plt.show()`` gives) and closed, so it is not shown twice.
    """
    import matplotlib.pyplot as plt
    from IPython.display import display as ipy_display

    from minigpt.book.figure_text import check_figure_text

    check_figure_text(fig)
    ipy_display(fig)
    plt.close(fig)


KERNEL_NOTE = N_(
    "Moving these sliders needs a running kernel: open this chapter in Colab "
    "(the rocket button at the top of the page) or run it in Jupyter."
)


def kernel_note(text: str = KERNEL_NOTE) -> Any:
    """An HTML note for a live widget: on the static site its controls move but nothing recomputes.

    In the language of ``MINIGPT_LANG`` (`minigpt.i18n`); the Spanish site translates the English one.
    """
    from IPython.display import HTML

    text = _(text)

    return HTML(
        '<div class="minigpt-kernel-note" style="border-left:4px solid #d39e00;padding:0.4em 0.8em;'
        f'margin:0.5em 0;background:rgba(211,158,0,0.08)">&#9888; {html.escape(text)}</div>'
    )
