"""Read a submitted notebook as data (never as code), inside the sandbox: its code cells, bounded, as plain Python.

The grading parent only reads the notebook's bytes (after checking the file's size) and hands them to the
sandboxed child, which parses them here under the sandbox's limits: the JSON, the per-cell and per-notebook
size limits (`SizeLimits`, a `TooLarge` error names the cell and the limit) and the IPython syntax.

A notebook of nbformat 3 (its cells in ``worksheets``, a code cell's source in ``input``) is read as one of
nbformat 4. IPython syntax is handled without IPython and only where the cell is not already Python (a
top-level ``await`` is Python here, as in Jupyter; Python 3.12's f-strings are requoted for this interpreter,
`minigpt.grading.fstrings`): a cell that compiles is run exactly as written (so no transformation can change a
correct answer); a cell that does not gets its magic and shell lines rewritten (`to_python`): ``%time stmt`` /
``%timeit stmt`` run ``stmt`` once, ``%%time`` / ``%%timeit`` / ``%%capture`` cells run their body, other
magics and ``!shell`` lines do nothing (``x = !ls`` gives an empty list), and a cell of another language
(``%%bash``, ``%%writefile``...) is not run. Every code cell runs, the Colab setup cell and the ``check(...)``
cells included: in the sandbox ``%pip`` does nothing, ``minigpt.book.setup`` only seeds the RNGs and ``check``
only prints that it is skipped.
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from dataclasses import dataclass

from minigpt.grading.fstrings import requote

# This module runs in the sandbox, which holds no catalog: the grader translates its messages (`MESSAGES`)
# where it shows them.
from minigpt.i18n import N_


class CorruptNotebook(ValueError):
    """The submission is not a readable notebook (invalid JSON, wrong structure)."""


class TooLarge(ValueError):
    """The submission is over a size limit (the whole file, one cell, the code in all, the number of cells)."""


@dataclass(frozen=True)
class SizeLimits:
    """What a submission may hold. The parent checks `notebook_bytes` before reading; the rest is checked here."""

    notebook_bytes: int = 16 * 2**20  # the file, outputs and images included
    cell_bytes: int = 256 * 2**10  # one code cell's source
    code_bytes: int = 2 * 2**20  # all code cells together
    code_cells: int = 400


DEFAULT_SIZES = SizeLimits()


NOT_TEXT = N_("a cell's source is not text")
CELL_TOO_LARGE = N_("cell {i} has more than {n} KiB of code (the limit per cell)")
NOTEBOOK_TOO_LARGE = N_("the notebook is larger than {n} MiB")
NO_CELLS = N_("not a valid notebook file (no list of cells)")
NOT_NOTEBOOK = N_("not a valid notebook file ({type})")
TOO_MANY_CELLS = N_("the notebook has more than {n} code cells")
TOO_MUCH_CODE = N_("the notebook has more than {n} MiB of code")
MESSAGES: tuple[str, ...] = (NOT_TEXT, CELL_TOO_LARGE, NOTEBOOK_TOO_LARGE, NO_CELLS, NOT_NOTEBOOK, TOO_MANY_CELLS,
                             TOO_MUCH_CODE)  # in the order `minigpt.i18n.translate_known` tries them


@dataclass(frozen=True)
class CodeCell:
    index: int  # position among all the notebook's cells
    source: str
    tags: tuple[str, ...]


def _source(cell: dict, index: int, limits: SizeLimits) -> str:
    src = cell.get("source", cell.get("input", ""))  # nbformat 3 names a code cell's source "input"
    if isinstance(src, list) and all(isinstance(s, str) for s in src):
        size = sum(len(s) for s in src)
    elif isinstance(src, str):
        size = len(src)
    else:
        raise CorruptNotebook(NOT_TEXT)
    if size > limits.cell_bytes:
        raise TooLarge(CELL_TOO_LARGE.format(i=index, n=limits.cell_bytes // 2**10))
    return src if isinstance(src, str) else "".join(src)


def _tags(cell: dict) -> tuple[str, ...]:
    metadata = cell.get("metadata")
    tags = metadata.get("tags", []) if isinstance(metadata, dict) else []
    return tuple(t[:80] for t in tags[:20] if isinstance(t, str)) if isinstance(tags, list) else ()


def parse_notebook(data: bytes, limits: SizeLimits = DEFAULT_SIZES) -> list[CodeCell]:
    """Every code cell of the notebook `data`, in order (CorruptNotebook, or TooLarge past a limit)."""
    if len(data) > limits.notebook_bytes:
        raise TooLarge(NOTEBOOK_TOO_LARGE.format(n=limits.notebook_bytes // 2**20))
    try:
        nb = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise CorruptNotebook(NOT_NOTEBOOK.format(type=type(err).__name__)) from err
    if isinstance(nb, dict) and "cells" not in nb and isinstance(nb.get("worksheets"), list):  # nbformat 3
        nb = {"cells": [c for ws in nb["worksheets"] if isinstance(ws, dict) and isinstance(ws.get("cells"), list)
                        for c in ws["cells"]]}
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise CorruptNotebook(NO_CELLS)
    cells, total = [], 0
    for i, cell in enumerate(nb["cells"]):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            if len(cells) >= limits.code_cells:
                raise TooLarge(TOO_MANY_CELLS.format(n=limits.code_cells))
            source = _source(cell, i, limits)
            total += len(source)
            if total > limits.code_bytes:
                raise TooLarge(TOO_MUCH_CODE.format(n=limits.code_bytes // 2**20))
            cells.append(CodeCell(i, source, _tags(cell)))
    return cells


_RUN_BODY = {"time", "timeit", "capture", "prun", "memit"}  # cell magics whose body is Python, run once
_RUN_LINE = {"time", "timeit", "prun", "memit"}  # line magics whose argument is a Python statement
_ASSIGNED = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_.,\s\[\]]*?)\s*=\s*([!%])(.*)$")


def _statement(rest: str) -> str:
    """The Python statement of ``%timeit -n 10 -r 3 stmt`` (its options dropped)."""
    words = rest.split()
    while words and words[0].startswith("-"):
        option = words.pop(0)
        if option in ("-n", "-r", "-p", "-o") and words and option != "-o" and words[0].lstrip("-").isdigit():
            words.pop(0)
    return rest[rest.find(words[0]):] if words else "pass"


def _line(line: str) -> str:
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    assigned = _ASSIGNED.match(line)
    if assigned and not stripped.startswith(("%", "!")):
        return f"{assigned[1]}{assigned[2]} = {'[]' if assigned[3] == '!' else 'None'}  # grader: {assigned[3]}..."
    if stripped.startswith("%") and not stripped.startswith("%%"):
        name, _, rest = stripped[1:].partition(" ")
        if name in _RUN_LINE and rest.strip():
            return indent + _statement(rest)
        return indent + "pass  # grader: magic not run"
    if stripped.startswith("!"):
        return indent + "pass  # grader: shell command not run"
    if stripped.endswith("?") and not stripped.startswith("#") and re.fullmatch(r"[\w.?]+", stripped):
        return indent + "pass  # grader: help not shown"
    return line


#: A cell may `await` at its top level, as in Jupyter and Colab (the child runs such a cell's coroutine).
COMPILE_FLAGS = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


def compiles(source: str) -> bool:
    try:
        compile(source, "<cell>", "exec", flags=COMPILE_FLAGS)
        return True
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError):
        return False


def to_python(source: str) -> str | None:
    """`source` as plain Python: unchanged when it compiles; else with Python 3.12's f-strings requoted for this
    interpreter (`fstrings.requote`) if that is all it takes; else magics rewritten; None for a cell of another
    language (``%%bash``, ``%%writefile``, ``%%html``...), which is not run."""
    if compiles(source):
        return source
    requoted = requote(source)
    if requoted is not None and compiles(requoted):
        return requoted
    lines = source.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        name = lines[first].lstrip()[2:].split(" ")[0]
        if name not in _RUN_BODY:
            return None
        lines = lines[first + 1:]
    inside = _string_lines("\n".join(lines))
    return "\n".join(line if number in inside else _line(line) for number, line in enumerate(lines, start=1))


def _string_lines(source: str) -> set[int]:
    """The (1-based) lines that continue a multi-line string: text there is never a magic."""
    inside: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                inside.update(range(tok.start[0] + 1, tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        pass
    return inside
