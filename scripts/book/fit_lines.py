"""Fit a notebook's code to the page (79 columns): `ruff format --line-length 79` on the code cells,
then what a formatter leaves: comments re-wrapped, long string literals split at spaces into implicitly
concatenated pieces (f-string fields never cut). The first code cell (the shared setup cell) is left as
it is. Printed lines are not touched: what a cell prints is fixed in its code, by hand.

    python scripts/book/fit_lines.py chapters/04_wall_clock.ipynb [...]

Prints what still does not fit.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import tempfile
import textwrap
import tokenize
from pathlib import Path

WIDTH = 79
STRING = re.compile(r'^(?P<indent>\s*)(?P<prefix>[rfbRFB]{0,2})(?P<q>"|\')(?P<body>.*)(?P=q)(?P<tail>[,)\s]*)$')


def _cuts(body: str) -> list[int]:
    """Spaces outside f-string fields and not right after a backslash: where a literal may be cut."""
    depth, out = 0, []
    for i, ch in enumerate(body):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif ch == " " and depth == 0 and i > 0 and body[i - 1] != "\\":
            out.append(i)
    return out


def split_string(line: str) -> list[str]:
    m = STRING.match(line)
    if not m or '{' in m["prefix"]:
        return [line]
    indent, prefix, q, body, tail = m["indent"], m["prefix"], m["q"], m["body"], m["tail"]
    if q in body.replace("\\" + q, ""):
        return [line]  # more than one literal on the line
    pieces, rest = [], body
    room = WIDTH - len(indent) - len(prefix) - 2 - len(tail)
    while len(rest) > room:
        cuts = [c for c in _cuts(rest) if 0 < c + 1 <= room]
        if not cuts:
            break
        c = cuts[-1] + 1  # the space stays at the end of the first piece
        pieces.append(rest[:c])
        rest = rest[c:]
    if not pieces:
        return [line]
    pieces.append(rest)

    def lit(s: str) -> str:
        p = prefix if ("{" in s or "f" not in prefix.lower()) else prefix.replace("f", "").replace("F", "")
        return f"{indent}{p}{q}{s}{q}"

    out = [lit(s) for s in pieces]
    out[-1] += tail
    return out


def wrap_comment(line: str) -> list[str]:
    m = re.match(r"^(\s*)# (.*)$", line)
    if not m:
        return [line]
    indent = m[1]
    return textwrap.wrap(m[2], WIDTH - len(indent) - 2, initial_indent=indent + "# ",
                         subsequent_indent=indent + "# ", break_on_hyphens=False) or [line]


def fit_source(src: str) -> str:
    out = []
    for line in src.split("\n"):
        if len(line) <= WIDTH:
            out.append(line)
        elif line.lstrip().startswith("#"):
            out.extend(wrap_comment(line))
        else:
            out.extend(split_string(line))
    return "\n".join(out)


def lift_comments(src: str) -> str:
    """A trailing comment that makes its line too wide goes on its own line above the code."""
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(src).readline))
    except (tokenize.TokenError, SyntaxError):
        return src
    lines = src.split("\n")
    moves = {}
    for tok in toks:
        if tok.type != tokenize.COMMENT:
            continue
        row, col = tok.start
        line = lines[row - 1]
        if len(line) > WIDTH and line[:col].strip():
            moves[row - 1] = col
    out = []
    for i, line in enumerate(lines):
        if i in moves:
            col = moves[i]
            indent = line[: len(line) - len(line.lstrip())]
            out.append(indent + line[col:].strip())
            out.append(line[:col].rstrip())
        else:
            out.append(line)
    return "\n".join(out)


def fit(path: Path) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / path.name
        nb = json.loads(path.read_text(encoding="utf-8"))
        setup = next(c for c in nb["cells"] if c["cell_type"] == "code")
        kept = setup["source"]
        for cell in nb["cells"]:
            if cell["cell_type"] == "code" and cell is not setup:
                cell["source"] = lift_comments("".join(cell["source"]))
        copy.write_text(json.dumps(nb), encoding="utf-8")
        subprocess.run([sys.executable, "-m", "ruff", "format", "--isolated", "--line-length", str(WIDTH),
                        "--quiet", str(copy)], check=False)
        nb = json.loads(copy.read_text(encoding="utf-8"))
    wide = []
    first = True
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        if first:
            cell["source"], first = kept, False
            continue
        src = fit_source("".join(cell["source"]))
        cell["source"] = src.splitlines(keepends=True)
        wide += [line for line in src.splitlines() if len(line) > WIDTH]
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return wide


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        left = fit(Path(arg))
        print(f"{arg}: {len(left)} code lines still wider than {WIDTH}")
        for line in left:
            print("   ", line)
