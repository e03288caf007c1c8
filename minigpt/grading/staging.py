"""What one submission's sandbox holds: a stripped copy of `minigpt`, the interpreter and the distributions
the runtime needs, staged under a folder of the grader's (`stage`) for `minigpt.grading.sandbox` to bind read-only.

The allowlist: `CHILD_PACKAGE` names the parts of `minigpt` the child gets (the runtime: model,
cache, generation, tokenizer, checkpoint, corpus; the child itself and the wire format), and
`STAND_INS` the modules the sandbox replaces by a harmless version (``check`` that does nothing,
presets as plain records without formula methods, ``minigpt.book.setup`` that only seeds). The answer
functions (`minigpt.costs`, the presets' methods, `minigpt.exercises`' registry and oracles) and the
grading parent are not in it.

The runtime is itself an answer to some questions (`attention` is Exercise 9's grouped attention,
`KVCache.update` Exercise 6's cache write, `generate` its greedy loop, `RequestMeters` Exercise 4's rates, a
`MiniGPT` counts Exercise 5's parameters). So each set of questions gets its own copy of the package
(`stage_lib`, one per `Needs`): only the runtime modules its inputs need are real (a question that
receives a MiniGPT gets `model` and `kv_cache`, nothing else), every other runtime module is a *stub*
(`_stub`) with the same names, importable, whose functions and classes refuse to run; and only the
formulas its instructions name (`Question.formulas`) are offered by ``minigpt.costs``. A question graded
with the model in reach is one whose inputs are that model: using it is the exercise.
`stage` refuses a staged module that imports a part of `minigpt` left out, so a package reorganised
later fails loudly here, not as a mysterious ImportError in every submission.
"""

from __future__ import annotations

import ast
import os
import shutil
import sys
import sysconfig
import threading
from dataclasses import dataclass, field
from pathlib import Path

from minigpt.grading.allowlist import (
    CHILD_PACKAGE,
    INSIDE,
    MODEL_MODULES,
    PACKAGE_DIR,
    STUBBABLE,
    Needs,
    StagingError,
    closure,
)
from minigpt.grading.host_files import (
    RUNTIME_DISTRIBUTIONS,
    STDLIB_LEFT_OUT,
    _link_tree,
    _reachable,
    distribution_entries,
)
from minigpt.grading.stand_ins import STAND_INS, _offered_formulas, _stub

__all__ = [
    "ANSWERS_LEFT_OUT", "CHILD_PACKAGE", "INSIDE", "MODEL_MODULES", "PACKAGE_DIR", "RUNTIME_DISTRIBUTIONS",
    "STAND_INS", "STDLIB_LEFT_OUT", "STUBBABLE", "Needs", "Runtime", "StagingError", "distribution_entries",
    "stage", "stage_lib",
]

# ---------------------------------------------------------------------------------------------
# Staging


@dataclass
class Runtime:
    """A staged runtime: the read-only binds (host path -> path inside), the interpreter inside, and the copies
    of the package staged so far (one per `Needs`, bound at /sandbox/lib by the run that uses it)."""

    root: Path
    binds: list[tuple[Path, Path]]
    masks: list[Path]  # empty tmpfs laid over these inside paths (parts of a bound folder left out)
    python: Path
    libs: dict[Needs, Path] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def lib(self, needs: Needs = Needs()) -> Path:
        """The package copy for `needs` (staged on first use)."""
        with self.lock:
            if needs not in self.libs:
                self.libs[needs] = stage_lib(self.root / f"lib-{needs.key()}", needs)
            return self.libs[needs]


def _expose(src: Path, inside: Path, runtime: Runtime, skip: tuple[str, ...] = ()) -> None:
    """Make `src` appear read-only at `inside`: bound where uid 65534 can read it, else staged by hard links."""
    if _reachable(src):
        runtime.binds.append((src, inside))
        runtime.masks.extend(inside / s for s in skip if (src / s).is_dir())
    else:
        staged = runtime.root / "host" / inside.relative_to(INSIDE)
        _link_tree(src, staged, skip)
        runtime.binds.append((staged, inside))



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
        raise StagingError("the sandbox's copy of minigpt is incomplete (extend CHILD_PACKAGE in minigpt/grading/"
                           "allowlist.py or STAND_INS in stand_ins.py, without answer functions): "
                           + "; ".join(sorted(set(missing))))


def stage_lib(lib: Path, needs: Needs = Needs()) -> Path:
    """Stage the package copy for `needs` at `lib` (see the module docstring): the allowlist, the stand-ins, the
    runtime modules `needs` keeps real (and what they import), stubs for the other runtime modules, and the
    `minigpt.costs` modules of the formulas it offers."""
    real = closure(set(needs.modules), STUBBABLE)
    unknown = set(needs.modules) - set(STUBBABLE)
    if unknown:
        raise StagingError(f"Needs names {sorted(unknown)}, which are not runtime modules of CHILD_PACKAGE")
    for rel in CHILD_PACKAGE:
        src = PACKAGE_DIR / rel
        if not src.exists():
            raise StagingError(f"CHILD_PACKAGE names minigpt/{rel}, which does not exist")
        dest = lib / "minigpt" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
        elif rel in STUBBABLE and rel not in real:
            dest.write_text(_stub(rel), encoding="utf-8")
        else:
            shutil.copy2(src, dest)
    stand_ins = dict(STAND_INS)
    if needs.formulas:
        offered, modules = _offered_formulas(needs.formulas)
        stand_ins["costs/__init__.py"] = lambda: offered
        for rel in modules:
            (lib / "minigpt" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(PACKAGE_DIR / rel, lib / "minigpt" / rel)
    for rel, write in stand_ins.items():
        (lib / "minigpt" / rel).parent.mkdir(parents=True, exist_ok=True)
        (lib / "minigpt" / rel).write_text(write(), encoding="utf-8")
    _check_imports(lib)
    for folder, _dirs, _files in os.walk(lib):
        os.chmod(folder, 0o755)
    return lib


def stage(root: Path) -> Runtime:
    """Build the sandbox's runtime under `root` (a fresh folder of the grader's): the interpreter, the standard
    library and the distributions, bound read-only; the package copies come per `Needs` (`Runtime.lib`)."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    python = INSIDE / "python" / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    runtime = Runtime(root, [], [], python)
    runtime.lib(Needs())  # the plain copy: a staging problem shows before any submission runs
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
    for folder, _dirs, _files in os.walk(root):
        os.chmod(folder, 0o755)
    return runtime
