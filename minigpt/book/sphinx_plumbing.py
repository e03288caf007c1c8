"""Sphinx extension: a code cell on the site shows its computation, not the book's plumbing.

A chapter's code does two jobs. It computes what the prose says (the lesson), and it keeps the prose honest:
`glue(...)` pastes a computed value into the text, `assert` checks a claim the text makes, and
`# NBVAL_IGNORE_OUTPUT` tells the notebook test that a cell prints a timing. The second job runs in every
notebook (the Colab button opens them whole, and `make test` re-runs them); on the site it only stands in the
reader's way. `strip_plumbing` drops, from the code shown, the top-level statements that do nothing but that
(a `glue` call, an `assert`, a loop or a branch holding only those, the import of `glue`), the comment lines
right above them, and the notebook test's markers; a cell left with nothing to show shows only its output.
A cell that is not plain Python (a `%pip` line) is shown as it is.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

NBVAL_MARKER = re.compile(r"^\s*#\s*NBVAL_[A-Z_]+\s*$")
PLUMBING_NAMES = frozenset({"glue"})  # what a cell imports for the plumbing alone


def _is_glue_call(node: ast.AST) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id in PLUMBING_NAMES)


def is_plumbing(node: ast.stmt) -> bool:
    """A statement that only pastes values into the text or checks a claim: a `glue` call, an `assert`, or a
    `for`, `while`, `if` or `with` whose every statement is plumbing."""
    if _is_glue_call(node) or isinstance(node, ast.Assert):
        return True
    if isinstance(node, (ast.For, ast.While, ast.If, ast.With)):
        bodies = [node.body, getattr(node, "orelse", [])]
        return all(is_plumbing(s) for body in bodies for s in body)
    return False


def _import_without_glue(node: ast.stmt, lines: list[str]) -> str | None:
    """For `from x import a, glue`: the line without glue ("" if glue was all it imported); None otherwise."""
    if not isinstance(node, ast.ImportFrom) or not any(a.name in PLUMBING_NAMES for a in node.names):
        return None
    kept = [a for a in node.names if a.name not in PLUMBING_NAMES]
    if not kept:
        return ""
    line = lines[node.lineno - 1]
    indent = line[: len(line) - len(line.lstrip())]
    names = ", ".join(a.name if a.asname is None else f"{a.name} as {a.asname}" for a in kept)
    return f"{indent}from {'.' * node.level}{node.module or ''} import {names}"


def strip_plumbing(source: str) -> str:
    """The code of a cell as the site shows it: plumbing statements, their comments and test markers left out.

    >>> print(strip_plumbing("from minigpt.book import glue\\nx = 2 * 3\\n# the text quotes it\\n"
    ...                      "glue('x', x)\\nassert x == 6\\nprint(x)"))
    x = 2 * 3
    print(x)
    """
    lines = source.split("\n")
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython syntax (%pip, !ls): shown as written
        return source
    drop: set[int] = set()  # 0-based line numbers
    replace: dict[int, str] = {}

    def walk(body: list[ast.stmt]) -> None:
        for node in body:
            first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
            new = _import_without_glue(node, lines)
            if new is not None:  # the import, on one line or several, rewritten on its first line without glue
                drop.update(range(first + bool(new), last + 1))
                if new:
                    replace[first] = new
                continue
            if not is_plumbing(node):
                for field in ("body", "orelse", "finalbody"):  # a compound statement: its plumbing, inside
                    inner = getattr(node, field, None)
                    if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                        walk(inner)
                continue
            drop.update(range(first, last + 1))
            above = first - 1  # the comment block right above a dropped statement is about it
            while above >= 0 and lines[above].lstrip().startswith("#"):
                drop.add(above)
                above -= 1

    walk(tree.body)
    kept = [replace.get(i, line) for i, line in enumerate(lines)
            if i not in drop and not NBVAL_MARKER.match(line)]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(kept))
    return text.strip("\n")


def hide_plumbing(app: Sphinx, doctree: nodes.document) -> None:
    """Every notebook code cell's shown source, without its plumbing; an input left empty is removed."""
    for cell_input in list(doctree.findall(nodes.container)):
        if cell_input.get("nb_element") != "cell_code_source":
            continue
        for block in list(cell_input.findall(nodes.literal_block)):
            shown = strip_plumbing(block.astext())
            if shown == block.astext():
                continue
            if not shown.strip():
                block.parent.remove(block)
                continue
            block.rawsource = shown
            block.children = []
            block += nodes.Text(shown)
        if not list(cell_input.findall(nodes.literal_block)):
            cell_input.parent.remove(cell_input)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-read", hide_plumbing)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
