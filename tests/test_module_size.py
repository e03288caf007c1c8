"""One concern per module: no module of the package, no script and no browser script past MAX_LINES.

A module that grows past it has taken on a second job: split it along its concerns, with names that say
them (ARCHITECTURE.md). The modules already past it are listed in OVER with the most lines each may have;
the list may only shrink: a listed module may not grow past its ceiling, and one that falls to MAX_LINES or
below (or is gone) must leave the list, so that the next wave cannot grow a 600-line room unnoticed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 300
#: Where the rule applies: the package's Python, its browser scripts, and the scripts.
PATTERNS = ("minigpt/*.py", "minigpt/**/*.py", "minigpt/web/*.js", "scripts/*.py", "scripts/**/*.py")
#: Modules past MAX_LINES today, each with its ceiling (its length when the rule was written, or less).
OVER = {
    "minigpt/web/minigpt_live.js": 510,
    "minigpt/web/minigpt_forward.js": 465,
}


def line_counts() -> dict[str, int]:
    """Every tracked (or new, not ignored) file the rule covers, with its number of lines."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", *PATTERNS],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return {path: len((ROOT / path).read_text(encoding="utf-8").splitlines())
            for path in sorted(set(out)) if (ROOT / path).is_file()}


def violations(counts: dict[str, int], over: dict[str, int]) -> list[str]:
    """What breaks the rule: a module past MAX_LINES and not listed, a listed one past its ceiling, and a
    listed one back within MAX_LINES or gone (the list only shrinks)."""
    found = [f"{path}: {n} lines (at most {MAX_LINES}): split it along its concerns"
             for path, n in counts.items() if n > MAX_LINES and path not in over]
    found += [f"{path}: {counts[path]} lines, past its ceiling of {ceiling}: split it, do not grow it"
              for path, ceiling in over.items() if counts.get(path, 0) > ceiling]
    found += [f"{path}: {counts.get(path, 'no')} lines now: take it off OVER (the list only shrinks)"
              for path, ceiling in over.items() if counts.get(path, 0) <= MAX_LINES]
    return found


def test_no_module_grows_past_one_concern() -> None:
    found = violations(line_counts(), OVER)
    assert not found, "\n".join(found)


def test_the_rule_catches_what_it_is_for() -> None:
    counts = {"a.py": MAX_LINES + 1, "b.py": 400, "c.py": 250, "d.py": 100}
    found = violations(counts, {"b.py": 350, "c.py": 320})
    assert len(found) == 3, found
    assert "a.py: 301 lines" in found[0]  # a new module past the limit
    assert "b.py: 400 lines, past its ceiling of 350" in found[1]  # a listed one that grew
    assert "c.py: 250 lines now" in found[2] and "e.py: no lines now" in violations({}, {"e.py": 400})[0]
    assert violations(counts, {"a.py": 301, "b.py": 400}) == []
    assert line_counts()["minigpt/config.py"] > 0  # the files are found
