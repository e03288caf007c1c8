"""minigpt.book.figure_text: a figure's smallest text as the page shows it, the check on it, and the
machinery that runs the check on every figure of the book (glue, show_figure, and the notebooks' cells).

Each test names the bug it catches; every one was seen to fail with that bug put into the module.
"""

from __future__ import annotations

import ast
import json
import struct
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from minigpt.book import GLUE_PREFIX, glue, show_figure  # noqa: E402
from minigpt.book import figure_text as ft  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: The book's notebooks whose outputs the site shows.
NOTEBOOKS = sorted([*ROOT.glob("chapters/*.ipynb"), *ROOT.glob("decoder_ring/*.ipynb"),
                    *ROOT.glob("appendices/*.ipynb"), *ROOT.glob("exercises/*.ipynb"), *ROOT.glob("*.ipynb")])


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _wide(label_pt: float, *, width: float = 11, dpi: float = 100) -> matplotlib.figure.Figure:
    """A figure `width` in wide whose x label is `label_pt` points and every other text 12 pt."""
    fig, ax = plt.subplots(figsize=(width, 4), dpi=dpi)
    ax.plot([0, 1], [0, 1])
    ax.tick_params(labelsize=12)
    ax.set_title("a title", fontsize=12)
    ax.set_ylabel("y", fontsize=12)
    ax.set_xlabel("the small label", fontsize=label_pt)
    fig.tight_layout()
    return fig


def test_a_6_pt_label_on_an_11_in_figure_fails_and_names_it():
    """The issue's case: 11 in at 100 dpi is about 1,090 px shown at 672, a 6 pt label about 5 px."""
    fig = _wide(6)
    texts = ft.figure_texts(fig)
    assert texts[0].text == "the small label" and texts[0].points == 6
    assert 4.5 < texts[0].px < 5.5
    with pytest.raises(ValueError, match=r"figure 'ch0_fig_demo'.*'the small label' 6 pt -> \d\.\d px"):
        ft.check_figure_text(fig, "ch0_fig_demo")


def test_a_figure_that_fits_passes():
    """12 pt on 11 in is 12 x 100/72 x 672/1,090 = 10.3 px; 7.5 pt on a narrow figure 10.4 px."""
    ft.check_figure_text(_wide(12))
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.tick_params(labelsize=7.5)
    ax.set_xlabel("x", fontsize=7.5)
    fig.tight_layout()
    assert ft.rendered_width_px(fig) < ft.COLUMN_PX
    assert ft.smallest_text_px(fig) == pytest.approx(7.5 * 100 / 72)
    ft.check_figure_text(fig)


def test_tick_labels_count():
    """Bug: only titles and labels are read (tick labels, the most common small text, forgotten)."""
    fig = _wide(12)
    fig.axes[0].tick_params(labelsize=6)
    with pytest.raises(ValueError, match=r"'0\.0' 6 pt"):
        ft.check_figure_text(fig)


@pytest.mark.parametrize("kind", ["legend", "annotation", "table", "suptitle", "offset text"])
def test_every_kind_of_text_counts(kind: str):
    """Bug: the texts are gathered from a list of known places (titles, labels, ticks) that misses some."""
    fig = _wide(12)
    ax = fig.axes[0]
    if kind == "legend":
        ax.plot([0, 1], [1, 0], label="a curve")
        ax.legend(fontsize=6)
    elif kind == "annotation":
        ax.annotate("a note", (0.5, 0.5), fontsize=6)
    elif kind == "table":
        table = ax.table([["a cell"]], loc="bottom")
        table.auto_set_font_size(False)
        table.set_fontsize(6)
    elif kind == "suptitle":
        fig.suptitle("the finding", fontsize=6)
    else:
        ax.plot([0, 1], [1e7, 2e7])
        ax.yaxis.get_offset_text().set_fontsize(6)
    with pytest.raises(ValueError, match="6 pt"):
        ft.check_figure_text(fig)


def test_hidden_and_empty_texts_do_not_count():
    """Bug: every Text artist is read, drawn or not (an invisible text, an empty one, a tick outside the
    view): a figure would fail on text no reader sees."""
    fig = _wide(12)
    ax = fig.axes[0]
    ax.text(0.5, 0.5, "hidden", fontsize=3).set_visible(False)
    ax.text(0.5, 0.5, "", fontsize=3)
    ax.text(0.5, 0.5, "  ", fontsize=3)
    ax.set_xticks([-5, 0, 1, 5], ["out", "0", "1", "out"], fontsize=12)
    ax.set_xlim(-0.1, 1.1)
    assert ft.figure_texts(fig)[0].points == 12
    ft.check_figure_text(fig)


def test_the_tight_bbox_not_the_figsize_sets_the_width():
    """Bug: the rendered width taken from figsize x dpi; the notebook crops the PNG to the drawn content,
    so an 11 in figure whose content spans 4 in is shown at its natural width, unshrunk."""
    fig = plt.figure(figsize=(11, 3))
    ax = fig.add_axes((0.05, 0.15, 0.3, 0.75))
    ax.tick_params(labelsize=8)
    ax.set_xlabel("x", fontsize=8)
    assert ft.rendered_width_px(fig) < ft.COLUMN_PX < 1100
    ft.check_figure_text(fig)  # 8 pt at scale 1 is 11.1 px; at 672/1100 it would be 6.8 px


def test_the_rendered_width_is_the_notebooks_png():
    """Bug: another crop or padding than the inline backend's (`print_figure`, bbox_inches="tight", its
    0.1 in pad, the figure's dpi): the PNG the notebook stores would be wider or narrower."""
    from IPython.core.pylabtools import print_figure
    from matplotlib_inline.config import InlineBackend

    for dpi in (72, 100, 150):
        fig = _wide(12, dpi=dpi)
        png = print_figure(fig, "png", **InlineBackend.instance().print_figure_kwargs)
        assert ft.rendered_width_px(fig) == struct.unpack(">I", png[16:20])[0]


def test_the_dpi_cancels_out_when_the_image_is_shrunk():
    """Bug: points turned into pixels at a fixed 100 dpi (or the dpi left out of the scale): a figure
    drawn at 200 dpi would read half its size, or twice it."""
    sizes = [ft.smallest_text_px(_wide(12, dpi=dpi)) for dpi in (100, 200)]
    assert sizes[0] == pytest.approx(sizes[1], rel=0.02)


def test_an_image_narrower_than_the_column_is_not_enlarged():
    """Bug: the scale taken as column / rendered width even when the image fits: the page shows it at its
    natural width, so a 7 pt text there is 9.7 px, not more."""
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xlabel("x", fontsize=7)
    ax.tick_params(labelsize=8)
    fig.tight_layout()
    assert ft.displayed_scale(ft.rendered_width_px(fig)) == 1
    with pytest.raises(ValueError, match=r"'x' 7 pt -> 9\.7 px"):
        ft.check_figure_text(fig)


def test_glue_and_show_figure_check_the_figure():
    """Bug: the machinery skipped: a glued or shown figure with small text would reach the book."""
    with pytest.raises(ValueError, match="figure 'ch0_fig_small'"):
        glue("ch0_fig_small", _wide(6), display=False)
    fig = _wide(6)
    fig.suptitle("A finding", fontsize=12)
    with pytest.raises(ValueError, match="figure 'A finding'"):
        show_figure(fig)
    fig = _wide(12)
    show_figure(fig)
    assert not plt.fignum_exists(fig.number)  # closed: not shown a second time at the cell's end


def _calls(source: str) -> set[str]:
    """The functions a cell's source calls, by name (`glue`) and, for an attribute, also with its object's
    name (`plt.show`: a chapter's own `show(...)` helper is not pyplot's)."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                names.add(func.attr)
                if isinstance(func.value, ast.Name):
                    names.add(f"{func.value.id}.{func.attr}")
            else:
                names.add(getattr(func, "id", ""))
    return names


def figure_cell_problems(cell: dict) -> list[str]:
    """What is wrong with a code cell's figures: an image shown directly by a cell that does not call
    `show_figure`, a glued image from a cell that does not call `glue`, and any call of `plt.show()`."""
    calls = _calls("".join(cell.get("source", "")))
    problems = []
    if calls & {"plt.show", "pyplot.show"}:
        problems.append("calls plt.show(): use minigpt.book.show_figure(fig), which checks the text")
    for output in cell.get("outputs", []):
        for key in output.get("data", {}):
            if not key.startswith(("image/", GLUE_PREFIX + "image/")):
                continue
            if key.startswith("image/") and "show_figure" not in calls:
                problems.append("shows an image without show_figure()")
            if not key.startswith("image/") and "glue" not in calls:
                problems.append("glues an image without glue()")
    return problems


def test_the_check_of_cells_finds_a_figure_shown_by_plt_show():
    """Bug: the static check reads nothing (a wrong MIME key, a source never parsed): it must fail on
    the cell every chapter had before, and pass on the two ways the book shows a figure."""
    image = {"output_type": "display_data", "data": {"image/png": "", "text/plain": ""}}
    plain = {"cell_type": "code", "source": "fig, ax = plt.subplots()\nplt.show()", "outputs": [image]}
    assert len(figure_cell_problems(plain)) == 2
    own = {"cell_type": "code", "source": "def show(x):\n    print(x)\nshow(1)", "outputs": []}
    assert figure_cell_problems(own) == []  # a chapter's own show() is not pyplot's
    shown = {"cell_type": "code", "source": "fig, ax = plt.subplots()\nshow_figure(fig)", "outputs": [image]}
    glued_image = {"output_type": "display_data", "data": {GLUE_PREFIX + "image/png": ""}}
    glued = {"cell_type": "code", "source": "glue('ch0_fig', fig)", "outputs": [glued_image]}
    assert figure_cell_problems(shown) == figure_cell_problems(glued) == []
    assert figure_cell_problems({**glued, "source": "display(fig)"}) == ["glues an image without glue()"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_figure_of_the_book_is_checked(path: Path):
    """Every cell with an image output glues it or shows it with show_figure, so the text check ran on
    it when the notebook was executed (and runs again under nbval)."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    problems = [f"cell {i}: {problem}" for i, cell in enumerate(notebook["cells"]) if cell["cell_type"] == "code"
                for problem in figure_cell_problems(cell)]
    assert problems == [], f"{path.relative_to(ROOT)}:\n" + "\n".join(problems)
