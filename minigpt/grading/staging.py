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
import json
import os
import re
import shutil
import stat
import sys
import sysconfig
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
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
    "grading/child.py", "exercises/wire.py", "grading/notebook_code.py", "grading/review.py",
)

# The modules of CHILD_PACKAGE that compute answers: real only where a question's inputs need them (`Needs`).
STUBBABLE: tuple[str, ...] = tuple(rel for rel in CHILD_PACKAGE if rel.startswith(("runtime/", "corpus/"))
                                   and not rel.endswith("__init__.py"))
MODEL_MODULES = frozenset({"runtime/model.py"})  # a MiniGPT input (kv_cache and device follow by import)

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


def _book() -> str:
    return ('"""Stand-in written by the grader: the setup cell\'s `setup` seeds the RNGs and returns the CPU."""\n\n'
            "\ndef setup(seed=0, **kwargs):\n"
            "    import random\n\n    import numpy as np\n    import torch\n\n"
            "    random.seed(seed)\n    np.random.seed(seed)\n    torch.manual_seed(seed)\n"
            "    return torch.device('cpu')\n\n\n"
            "def in_colab():\n    return False\n\n\n"
            "def __getattr__(name):\n"
            "    raise ImportError(f'minigpt.book.{name} is not available while grading')\n")


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
    "book/__init__.py": _book,  # the setup cell's `from minigpt.book import setup`
}


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


def _stub(rel: str) -> str:
    """A module with the public names of minigpt/`rel`, each refusing to run: importable, computes nothing."""
    module = "minigpt." + rel.removesuffix(".py").replace("/", ".")
    tree = ast.parse((PACKAGE_DIR / rel).read_text(encoding="utf-8"))
    lines = [f'"""Stand-in written by the grader: {module} computes answers to this question, so its functions and',
             'classes refuse to run here."""', "", "",
             "def _refuse(name):",
             f"    raise RuntimeError(f'{module}.{{name}} is not available while grading this question "
             "(it computes the answer)')", ""]
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines += ["", f"def {node.name}(*args, **kwargs):", f"    _refuse({node.name!r})", ""]
        elif isinstance(node, ast.ClassDef):
            lines += ["", f"class {node.name}:", "    def __init__(self, *args, **kwargs):",
                      f"        _refuse({node.name!r})", ""]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is None or not all(isinstance(t, ast.Name) for t in targets):
                continue
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            lines += [f"{t.id} = {value!r}" for t in targets if isinstance(t, ast.Name)]
    return "\n".join(lines) + "\n"


def _offered_formulas(formulas: frozenset[str]) -> tuple[str, set[str]]:
    """The `minigpt.costs` stand-in offering `formulas` (and nothing else), and the costs modules it needs."""
    from minigpt import costs

    modules, imports = set(), []
    for name in sorted(formulas):
        home = getattr(costs, name).__module__
        rel = _rel(home)
        if rel is None or not rel.startswith("costs/"):
            raise StagingError(f"formula {name!r} is not a function of a minigpt.costs module")
        modules.add(rel)
        imports.append(f"from {home} import {name}")
    text = ('"""Stand-in written by the grader: the formulas are answers; only those this question\'s instructions '
            'use are here."""\n\n' + "\n".join(imports) + "\n\n"
            f"FORMULAS = {tuple(sorted(formulas))!r}\n\n\n"
            "def __getattr__(name):\n"
            '    raise ImportError(f"minigpt.costs.{name} is not available while grading: formulas are answers")\n')
    costs_modules = tuple(p.relative_to(PACKAGE_DIR).as_posix() for p in (PACKAGE_DIR / "costs").glob("*.py"))
    return text, closure(modules, costs_modules) - {"costs/__init__.py", "costs/presets.py"}


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
