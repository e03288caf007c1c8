"""Read a submitted notebook as data (never as code): its code cells, minus the setup and check cells.

IPython syntax (``%pip``, ``!ls``, ``%%time``) is transformed to plain Python calls on
``get_ipython()``, which the grading child replaces with an object that does nothing, so magics
are neither run nor a syntax error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

SETUP_MARKERS = ("from minigpt.book import setup", "%pip install")
MAX_NOTEBOOK_BYTES = 20 * 2**20


class CorruptNotebook(ValueError):
    """The submission is not a readable notebook (invalid JSON, wrong structure, too large)."""


@dataclass(frozen=True)
class CodeCell:
    index: int  # position among all the notebook's cells
    source: str
    tags: tuple[str, ...]


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    if isinstance(src, list):
        if not all(isinstance(s, str) for s in src):
            raise CorruptNotebook("a cell's source is not text")
        return "".join(src)
    if not isinstance(src, str):
        raise CorruptNotebook("a cell's source is not text")
    return src


def _tags(cell: dict) -> tuple[str, ...]:
    metadata = cell.get("metadata")
    tags = metadata.get("tags", []) if isinstance(metadata, dict) else []
    return tuple(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else ()


def read_code_cells(path: Path) -> list[CodeCell]:
    """Every code cell of the notebook at `path`, in order; CorruptNotebook if it cannot be read."""
    try:
        if path.stat().st_size > MAX_NOTEBOOK_BYTES:
            raise CorruptNotebook(f"the notebook is larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB")
        nb = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise CorruptNotebook(f"not a valid notebook file ({type(err).__name__}: {str(err)[:200]})") from err
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise CorruptNotebook("not a valid notebook file (no list of cells)")
    cells = []
    for i, cell in enumerate(nb["cells"]):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            cells.append(CodeCell(i, _source(cell), _tags(cell)))
    return cells


def to_python(source: str) -> str:
    """`source` with IPython syntax turned into plain Python (magics become `get_ipython()` calls)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # no IPython: comment out magic and shell lines, keeping indentation valid
        lines = []
        for line in source.splitlines():
            stripped = line.lstrip()
            if stripped.startswith(("%", "!")):
                line = line[: len(line) - len(stripped)] + "pass  # " + stripped
            lines.append(line)
        return "\n".join(lines)
    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - let compile() report the cell's own syntax error
        return source


def cells_to_run(cells: list[CodeCell]) -> list[CodeCell]:
    """The cells the grader executes: not the setup cell (it installs packages in Colab), not `check:` cells."""
    keep = []
    for cell in cells:
        if any(marker in cell.source for marker in SETUP_MARKERS):
            continue
        if any(tag.startswith("check:") for tag in cell.tags):
            continue
        keep.append(CodeCell(cell.index, to_python(cell.source), cell.tags))
    return keep
