"""What one submission's sandbox holds: a stripped copy of `minigpt`, the interpreter and the distributions
the runtime needs, staged under a folder of the grader's (`stage`) for `minigpt.grading.sandbox` to bind read-only.

The allowlist: `CHILD_PACKAGE` names the parts of `minigpt` the child gets (the runtime: model,
cache, generation, tokenizer, checkpoint, corpus; the child itself and the wire format), and
`STAND_INS` the modules the sandbox replaces by a harmless version (``check`` that does nothing,
presets as plain records without formula methods). The answer functions (`minigpt.costs`, the
presets' methods, `minigpt.exercises`' registry and oracles) and the grading parent are not in it.
`stage` refuses a staged module that imports a part of `minigpt` left out, so a package reorganised
later fails loudly here, not as a mysterious ImportError in every submission.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import stat
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
INSIDE = Path("/sandbox")  # where the runtime appears inside the sandbox

# The parts of `minigpt` (paths relative to the package) copied into the sandbox: the runtime the
# notebooks use, the corpus, and the grading child with its wire format. No answer function.
CHILD_PACKAGE: tuple[str, ...] = (
    "__init__.py", "config.py", "data",
    *(f"runtime/{name}.py" for name in ("__init__", "model", "kv_cache", "generate", "meters", "checkpoint",
                                         "tokenizer", "device")),
    "corpus/__init__.py", "corpus/grammar.py", "corpus/sentences.py", "corpus/checker.py", "corpus/stats.py",
    "grading/child.py", "exercises/wire.py",
)

# The distributions whose files (with their dependencies') the child can import.
RUNTIME_DISTRIBUTIONS: tuple[str, ...] = ("torch", "numpy", "safetensors")

# Stdlib folders the child does not need (the interpreter's own site-packages above all).
STDLIB_LEFT_OUT: tuple[str, ...] = ("site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo",
                                    "ensurepip", "lib2to3", "venv")


class StagingError(RuntimeError):
    """The sandbox's copy of minigpt cannot be built (the allowlist names a missing file, or is incomplete)."""


# ---------------------------------------------------------------------------------------------
# Stand-ins: what the sandbox offers in place of modules that would hand out answers


def _inert_check() -> str:
    return ('"""Stand-in written by the grader: `check` does nothing while grading."""\n\n'
            "\ndef check(qid, function, *, seed=None):\n"
            '    """Do nothing but say so: the instructor\'s grader compares the outputs itself."""\n'
            '    print(f"{qid}: check skipped while grading")\n')


def _preset_records() -> str:
    from minigpt.costs.presets import HARDWARE, MODELS
    from minigpt.exercises.spec import preset_fields

    def table(presets: dict) -> str:
        return json.dumps({name: preset_fields(p) for name, p in presets.items()})

    return ('"""Stand-in written by the grader: the presets as read-only records (fields, no formulas)."""\n\n'
            "import json\n\nfrom minigpt.exercises.wire import records\n\n"
            f"MODELS = records('ModelPreset', json.loads({table(MODELS)!r}))\n"
            f"HARDWARE = records('HardwarePreset', json.loads({table(HARDWARE)!r}))\n")


def _child_only() -> str:
    return '"""The grading child and its wire format (the grading parent is not in the sandbox)."""\n'


def _no_formulas() -> str:
    return ('"""Stand-in written by the grader: the formulas are answers; only the presets\' records are here."""\n\n'
            "\ndef __getattr__(name):\n"
            '    raise ImportError(f"minigpt.costs.{name} is not available while grading: formulas are answers")\n')


# Module path (relative to the package) -> its text.


STAND_INS: dict[str, Callable[[], str]] = {
    "grading/__init__.py": _child_only,
    "exercises/__init__.py": _inert_check,  # the notebooks' `from minigpt.exercises import check`
    "costs/__init__.py": _no_formulas,  # the package of the formulas, without them
    "costs/presets.py": _preset_records,  # `from minigpt.costs.presets import HARDWARE, MODELS`
}


# ---------------------------------------------------------------------------------------------
# Staging


@dataclass
class Runtime:
    """A staged runtime: the read-only binds (host path -> path inside) and the interpreter inside."""

    root: Path
    binds: list[tuple[Path, Path]]
    masks: list[Path]  # empty tmpfs laid over these inside paths (parts of a bound folder left out)
    python: Path


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


def _expose(src: Path, inside: Path, runtime: Runtime, skip: tuple[str, ...] = ()) -> None:
    """Make `src` appear read-only at `inside`: bound where uid 65534 can read it, else staged by hard links."""
    if _reachable(src):
        runtime.binds.append((src, inside))
        runtime.masks.extend(inside / s for s in skip if (src / s).is_dir())
    else:
        staged = runtime.root / "host" / inside.relative_to(INSIDE)
        _link_tree(src, staged, skip)
        runtime.binds.append((staged, inside))


def _requirements(name: str) -> list[str]:
    found = []
    for req in metadata.requires(name) or []:
        if re.search(r"extra\s*==", req):
            continue  # an optional extra's dependency
        match = re.match(r"[A-Za-z0-9._-]+", req)
        if match:
            found.append(match[0])
    return found


def distribution_entries(names: tuple[str, ...] = RUNTIME_DISTRIBUTIONS) -> list[Path]:
    """The top-level site-packages entries (packages, modules, .libs, .dist-info) of `names` and their dependencies."""
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
    return sorted(p for p in entries if p.exists() and "__editable__" not in p.name)


# Imports inside a function of a staged module that are left out on purpose: in the sandbox they raise
# ImportError, because what they compute is an answer.
ANSWERS_LEFT_OUT: dict[str, set[str]] = {}


def _check_imports(lib: Path) -> None:
    """Every `minigpt` module a staged file imports must be staged too (StagingError naming the culprit)."""
    missing = []
    for path in sorted((lib / "minigpt").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] != "minigpt" or len(parts) < 2:
                    continue
                real = PACKAGE_DIR.joinpath(*parts[1:])
                if not (real.with_suffix(".py").is_file() or real.is_dir()):
                    continue  # an attribute (`from minigpt import MiniGPT`), not a module
                staged = lib.joinpath(*parts)
                left_out = name in ANSWERS_LEFT_OUT.get(path.relative_to(lib).as_posix(), set())
                if not (staged.with_suffix(".py").is_file() or staged.is_dir()) and not left_out:
                    missing.append(f"{path.relative_to(lib)} imports {name}")
    if missing:
        raise StagingError("the sandbox's copy of minigpt is incomplete (extend CHILD_PACKAGE or STAND_INS in "
                           "minigpt/grading/staging.py, without answer functions): " + "; ".join(sorted(set(missing))))


def stage(root: Path) -> Runtime:
    """Build the sandbox's runtime under `root` (a fresh folder of the grader's): the stripped package and the binds."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    python = INSIDE / "python" / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    runtime = Runtime(root, [], [], python)
    lib = root / "lib"
    for rel in CHILD_PACKAGE:
        src = PACKAGE_DIR / rel
        if not src.exists():
            raise StagingError(f"CHILD_PACKAGE names minigpt/{rel}, which does not exist")
        if src.is_dir():
            shutil.copytree(src, lib / "minigpt" / rel, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (lib / "minigpt" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, lib / "minigpt" / rel)
    for rel, text in STAND_INS.items():
        (lib / "minigpt" / rel).parent.mkdir(parents=True, exist_ok=True)
        (lib / "minigpt" / rel).write_text(text(), encoding="utf-8")
    _check_imports(lib)
    for folder, _dirs, _files in os.walk(root):
        os.chmod(folder, 0o755)
    runtime.binds.append((lib, INSIDE / "lib"))
    # The interpreter: its executable, its shared library, its standard library (without site-packages).
    executable = Path(sys.executable).resolve()
    _expose(executable, runtime.python, runtime)
    libdir, soname = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("INSTSONAME")
    if libdir and soname and (Path(libdir) / soname).is_file():
        _expose(Path(libdir) / soname, INSIDE / "python" / "lib" / soname, runtime)
    stdlib = Path(sysconfig.get_path("stdlib"))
    _expose(stdlib, INSIDE / "python" / "lib" / stdlib.name, runtime, STDLIB_LEFT_OUT)
    for entry in distribution_entries():
        _expose(entry, INSIDE / "site-packages" / entry.name, runtime)
    return runtime
