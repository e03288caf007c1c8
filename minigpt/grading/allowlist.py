"""What the sandbox holds: the allowlist of `minigpt`'s files copied into it (`CHILD_PACKAGE`), the runtime
modules among them that compute answers (`STUBBABLE`), what one set of questions may use (`Needs`), and the
package's import graph that decides what a kept module brings along (`closure`).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
INSIDE = Path("/sandbox")  # where the runtime appears inside the sandbox

# The parts of `minigpt` (paths relative to the package) copied into the sandbox: the runtime the
# notebooks use, the corpus, and the grading child with its wire format. No answer function.
CHILD_PACKAGE: tuple[str, ...] = (
    "__init__.py", "config.py", "i18n.py", "data",
    *(f"runtime/{name}.py" for name in ("__init__", "model", "kv_cache", "generate", "meters", "checkpoint",
                                         "tokenizer", "device")),
    "corpus/__init__.py", "corpus/grammar.py", "corpus/sentences.py", "corpus/checker.py", "corpus/stats.py",
    "grading/child.py", "grading/habits.py", "grading/fstrings.py", "exercises/wire.py", "grading/notebook_code.py",
    "grading/review.py", "grading/fingerprints.py", "exercises/work.py",
    *(f"exercises/wire_{name}.py" for name in ("messages", "inputs", "encode", "shapes")),
)

# The modules of CHILD_PACKAGE that compute answers: real only where a question's inputs need them (`Needs`).
STUBBABLE: tuple[str, ...] = tuple(rel for rel in CHILD_PACKAGE if rel.startswith(("runtime/", "corpus/"))
                                   and not rel.endswith("__init__.py"))
MODEL_MODULES = frozenset({"runtime/model.py"})  # a MiniGPT input (kv_cache and device follow by import)


class StagingError(RuntimeError):
    """The sandbox's copy of minigpt cannot be built (the allowlist names a missing file, or is incomplete)."""


@dataclass(frozen=True)
class Needs:
    """What one set of questions may use: the runtime modules kept real, the formulas of `minigpt.costs` offered."""

    modules: frozenset[str] = frozenset()  # paths in STUBBABLE (their imports follow)
    formulas: frozenset[str] = frozenset()  # names in minigpt.costs

    def key(self) -> str:
        import hashlib

        text = json.dumps([sorted(self.modules), sorted(self.formulas)])
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def _minigpt_imports(path: Path) -> set[str]:
    """The `minigpt` modules (dotted names) the file at `path` imports, at any level of its code."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("minigpt.")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("minigpt"):
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def _rel(dotted: str) -> str | None:
    """The package-relative path of a dotted `minigpt` module name ("minigpt.runtime.model" -> "runtime/model.py")."""
    parts = dotted.split(".")[1:]
    if parts and PACKAGE_DIR.joinpath(*parts).with_suffix(".py").is_file():
        return "/".join(parts) + ".py"
    return None


def closure(modules: set[str], within: tuple[str, ...]) -> set[str]:
    """`modules` and every module of `within` they import, transitively (package-relative paths)."""
    todo, seen = list(modules), set()
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        for dotted in _minigpt_imports(PACKAGE_DIR / rel):
            dep = _rel(dotted)
            if dep and dep in within and dep not in seen:
                todo.append(dep)
    return seen

