"""The notation appendix's equation index, as the docstrings of `minigpt.costs` imply it: read, rebuilt, written."""

from __future__ import annotations

import re

import book_pages

NOTATION_PAGE = "appendices/notation.md"

_IMPLEMENTS = re.compile(r"^([^:]*?),\s*Eqs?\.\s*\((\d+)\.(\d+)\)")
_INDEX_ROW = re.compile(r"^\| \[\((\d+)\.(\d+)\)\]\(#eq-\d+-\d+\) \| (.*?) \| (.*?) \|$")


def implemented_equations() -> dict[tuple[int, int], list[tuple[str, str]]]:
    """(chapter, n) -> [(function, what it gives)] for each formula of `minigpt.costs.FORMULAS` whose
    docstring starts "<what it gives>, Eq. (x.y)"."""
    from minigpt import costs

    found: dict[tuple[int, int], list[tuple[str, str]]] = {}
    for name in costs.FORMULAS:
        doc = (getattr(costs, name).__doc__ or "").strip()
        m = _IMPLEMENTS.match(doc.splitlines()[0] if doc else "")
        if m:
            found.setdefault((int(m.group(2)), int(m.group(3))), []).append((name, m.group(1)))
    return found


def equation_index() -> tuple[str, str]:
    """(the notation page's current index table, the table with a row for every implemented equation)."""
    text = (book_pages.ROOT / NOTATION_PAGE).read_text(encoding="utf-8")
    section = text[text.index("## Equation index"):]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    current = "\n".join(lines)
    rows: dict[tuple[int, int], tuple[str, list[str]]] = {}
    for line in lines[2:]:
        m = _INDEX_ROW.match(line)
        if m:
            rows[(int(m.group(1)), int(m.group(2)))] = (m.group(3), re.findall(r"`([^`]+)`", m.group(4)))
    from minigpt import costs

    for (a, b), (what, names) in list(rows.items()):  # drop a function whose docstring no longer names it
        rows[(a, b)] = (what, [n for n in names if f"Eq. ({a}.{b})" in (getattr(costs, n, None).__doc__ or "")])
    for number, functions in implemented_equations().items():
        what, names = rows.get(number, (functions[0][1][:1].lower() + functions[0][1][1:], []))
        rows[number] = (what, names + [f for f, _ in functions if f not in names])
    table = lines[:2] + [
        f"| [({a}.{b})](#eq-{a}-{b}) | {what} | {', '.join(f'`{n}`' for n in names)} |"
        for (a, b), (what, names) in sorted(rows.items())
    ]
    return current, "\n".join(table)


def write_equation_index() -> bool:
    """Write `equation_index()`'s table into the notation page; True if it changed."""
    current, table = equation_index()
    if current == table:
        return False
    path = book_pages.ROOT / NOTATION_PAGE
    path.write_text(path.read_text(encoding="utf-8").replace(current, table), encoding="utf-8")
    return True
