"""minigpt.book.sphinx_plumbing: the site's code cells show the computation, without the book's plumbing
(`glue(...)`, `assert`, NBVAL markers), and nothing else of the code is lost.

The unit tests run `strip_plumbing` on hand-made cells and on every code cell of the book's notebooks; the
site test (marked `site`) reads the built pages of both editions.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from site_text import parsed
from test_site import book_pages

from minigpt.book.sphinx_plumbing import is_plumbing, strip_plumbing

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(p for folder in ("chapters", "decoder_ring", "appendices") for p in (ROOT / folder).glob("*.ipynb"))


def test_glue_asserts_markers_and_their_comments_go_the_computation_stays() -> None:
    """Guards the plausible slips: a glue inside a loop left shown, a comment about a dropped check left
    dangling, a loop that prints dropped with the glue it holds, an import of glue with other names dropped
    whole."""
    cell = "\n".join([
        "# NBVAL_IGNORE_OUTPUT",
        "from minigpt.book import glue, setup",
        "x = 2 * 3",
        "# the text quotes x",
        "glue('x', x)",
        "for k in range(2):",
        "    y = k * x",
        "    print(y)",
        "    glue(f'y{k}', y)",
        "",
        "",
        "",
        "# every y is even",
        "for k in range(2):",
        "    assert (k * x) % 2 == 0",
        "assert x == 6, 'x'",
        "print(x)",
    ])
    assert strip_plumbing(cell) == "\n".join([
        "from minigpt.book import setup",
        "x = 2 * 3",
        "for k in range(2):",
        "    y = k * x",
        "    print(y)",
        "",
        "print(x)",
    ])


def test_a_cell_that_is_not_python_and_a_cell_of_plumbing_alone() -> None:
    magic = "%pip install minigpt\nglue('x', 1)"
    assert strip_plumbing(magic) == magic  # IPython syntax: shown as written, never half-stripped
    assert strip_plumbing("from minigpt.book import glue\nglue('a', 1)\nassert True") == ""
    assert strip_plumbing("glue2('a', 1)\nx.glue('b', 2)") == "glue2('a', 1)\nx.glue('b', 2)"  # other names
    assert strip_plumbing("from minigpt.book import (\n    glue,\n    setup,\n)\nx = 1") == (
        "from minigpt.book import setup\nx = 1")  # an import over several lines, rewritten whole
    tree = ast.parse("if a:\n    glue('x', 1)\nelse:\n    print(2)")
    assert not is_plumbing(tree.body[0])  # a branch that prints is the lesson


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_cell_of_the_book_keeps_its_computation(path: Path) -> None:
    """Each code cell as the site shows it still parses, shows no glue call or NBVAL marker, and keeps every
    line of code outside the plumbing statements (at any depth), word for word: a rule that dropped a
    computation would fail here, on the book's own cells."""
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        shown = strip_plumbing(source)
        try:
            tree = ast.parse(source)
        except SyntaxError:
            assert shown == source
            continue
        ast.parse(shown)
        assert "glue(" not in shown and "NBVAL_" not in shown, (path.name, shown)
        plumbing = {i for node in ast.walk(tree) if isinstance(node, ast.stmt) and (is_plumbing(node) or (
            isinstance(node, ast.ImportFrom) and any(a.name == "glue" for a in node.names)))
            for i in range(node.lineno, (node.end_lineno or node.lineno) + 1)}
        for i, line in enumerate(source.split("\n"), start=1):
            if i not in plumbing and line.strip() and not line.lstrip().startswith("#"):
                assert line in shown, (path.name, line)


@pytest.mark.site
@pytest.mark.parametrize("edition", ("", "es/"))
def test_the_sites_code_cells_show_no_plumbing(built_site: Path, edition: str) -> None:
    """No code cell of a built page shows a glue call or a notebook-test marker; the chapters still show code
    (a transform that removed every cell would pass the first check)."""
    shown = 0
    for page in book_pages():
        html = parsed(built_site / f"{edition}{page}.html")
        for block in html.select("div.cell_input pre"):
            text = block.get_text()
            assert "glue(" not in text and "NBVAL_" not in text, (edition, page, text[:200])
            shown += 1
    assert shown > 300, f"only {shown} code cells shown: the check looks in the wrong place"
