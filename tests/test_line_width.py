"""Code the reader cannot see is code the reader cannot read: the site shows about 78 columns of a code cell and
cuts the rest. Every code line and every printed line of a notebook must fit 79 columns.

The shared setup cell (``scripts/book/new_notebook.py``, checked verbatim by ``tests/test_book.py``) is checked here
too, once, from its source.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WIDTH = 79
NOTEBOOKS = sorted(p.relative_to(ROOT).as_posix() for d in ("chapters", "exercises", "decoder_ring")
                   for p in (ROOT / d).glob("*.ipynb"))


def too_wide(path: str) -> list[str]:
    """Each code line (the setup cell is checked once, from its source) and each printed line longer than
    WIDTH, with where it is."""
    nb = json.loads((ROOT / path).read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    found = []
    for n, cell in enumerate(code[1:], start=2):
        found += [f"code cell {n}: {line[:60]}…" for line in "".join(cell["source"]).splitlines()
                  if len(line) > WIDTH]
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "text" in out:
                text = "".join(out["text"])
            elif "text/plain" in data and not ({"text/html", "image/png"} & set(data)):
                text = "".join(data["text/plain"])
            else:
                continue
            found += [f"output of code cell {n}: {line[:60]}…" for line in text.splitlines() if len(line) > WIDTH]
    return found


def test_the_setup_cell_fits_the_page() -> None:
    import sys
    sys.path.insert(0, str(ROOT / "scripts" / "book"))
    from new_notebook import setup_cell_source
    wide = [line for line in setup_cell_source().splitlines() if len(line) > WIDTH]
    assert not wide, wide


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_code_and_printed_lines_fit_the_page(path: str) -> None:
    wide = too_wide(path)
    assert not wide, f"{path}: {len(wide)} lines wider than {WIDTH} columns:\n" + "\n".join(wide[:20])


def test_a_wide_line_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nb = {"cells": [{"cell_type": "code", "source": ["# setup\n"], "outputs": []},
                    {"cell_type": "code", "source": ["x = 1\n", "y = '" + "a" * 80 + "'\n"],
                     "outputs": [{"output_type": "stream", "text": ["b" * 80 + "\n"]}]}]}
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert [w.split(":")[0] for w in too_wide("nb.ipynb")] == ["code cell 2", "output of code cell 2"]
