"""The host's files the sandbox reads: the interpreter's standard library and the distributions the runtime needs
(`distribution_entries`), and how a file is made readable to the sandbox's user (`_reachable`, `_link_tree`).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import stat
from importlib import metadata
from pathlib import Path

# The distributions whose files (with their dependencies') the child can import.
RUNTIME_DISTRIBUTIONS: tuple[str, ...] = ("torch", "numpy", "safetensors")

# Stdlib folders the child does not need (the interpreter's own site-packages above all).
STDLIB_LEFT_OUT: tuple[str, ...] = ("site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo",
                                    "ensurepip", "lib2to3", "venv")



def _reachable(path: Path) -> bool:
    """Whether uid 65534 can read `path` (every folder above it searchable by others, itself readable)."""
    if os.geteuid() != 0:
        return True  # bwrap runs as the grader's own user, who can read what the grader reads
    mode = path.stat().st_mode
    if not mode & stat.S_IROTH or (stat.S_ISDIR(mode) and not mode & stat.S_IXOTH):
        return False
    return all(parent.stat().st_mode & stat.S_IXOTH for parent in path.parents)


def _link_tree(src: Path, dest: Path, skip: tuple[str, ...] = ()) -> None:
    """Hard-link (or copy, across filesystems) the files of `src` into `dest`; folders are created."""
    if src.is_file():
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src, dest)
        except OSError:
            shutil.copy2(src, dest)
        return
    for folder, dirs, files in os.walk(src):
        rel = Path(folder).relative_to(src)
        dirs[:] = [d for d in dirs if not (rel == Path(".") and d in skip)]
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            _link_tree(Path(folder) / name, dest / rel / name)



def _requirements(name: str) -> list[str]:
    found = []
    for req in metadata.requires(name) or []:
        if re.search(r"extra\s*==", req):
            continue  # an optional extra's dependency
        match = re.match(r"[A-Za-z0-9._-]+", req)
        if match:
            found.append(match[0])
    return found


@functools.cache
def distribution_entries(names: tuple[str, ...] = RUNTIME_DISTRIBUTIONS) -> tuple[Path, ...]:
    """The top-level site-packages entries (packages, modules, .libs, .dist-info) of `names` and their dependencies.
    Read once per process (half a second of metadata: every grading run stages them), so a distribution
    installed or removed while a grader runs is seen by the next grader process."""
    seen: set[str] = set()
    todo = list(names)
    entries: set[Path] = set()
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional dependency that is not installed
        base = Path(dist.locate_file(""))
        for f in dist.files or []:
            if f.parts and f.parts[0] not in ("..", "__pycache__") and not f.name.endswith(".pth"):
                entries.add(base / f.parts[0])
        todo.extend(_requirements(name))
    return tuple(sorted(p for p in entries if p.exists() and "__editable__" not in p.name))

