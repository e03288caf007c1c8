"""Book front-ends: `notebook` (the setup cell, glue, show_figure, kernel notes) and `explorers` (browser sliders).

``from minigpt.book import setup, glue, explorer, Slider, Output`` is what chapters import.
"""

from minigpt.book.explorers import (
    Output,
    Plot,
    Series,
    Slider,
    chip_value,
    explorer,
    explorer_html,
    preset_value,
)
from minigpt.book.notebook import GLUE_PREFIX, glue, in_colab, kernel_note, setup, show_figure

__all__ = [
    "GLUE_PREFIX", "Output", "Plot", "Series", "Slider", "chip_value", "explorer", "explorer_html", "glue",
    "in_colab", "kernel_note", "preset_value", "setup", "show_figure",
]
