"""The instructors' reference solutions (`exercises/solutions/<eid>_*.py`, one `# %% solution:qN` block per
question), run whole as a notebook would run its cells, so that a test can call the function a question asks for."""

from __future__ import annotations

import runpy
from collections.abc import Callable
from pathlib import Path
from typing import Any

SOLUTIONS = Path(__file__).resolve().parent.parent / "exercises" / "solutions"


def reference(eid: str, name: str) -> Callable[..., Any]:
    """The function `name` of exercise `eid`'s reference solutions (a fresh run of the file on each call)."""
    (path,) = SOLUTIONS.glob(f"{eid}_*.py")
    return runpy.run_path(str(path))[name]
