"""The grading sandbox: what one submission's child process may see and use, and the bubblewrap command.

One sandbox per child run. ``bwrap`` (Debian's ``bubblewrap``) builds it from nothing: an empty
root with, read-only, the system libraries, a Python interpreter, the site-packages the runtime
needs and a *staged, stripped copy* of `minigpt` (`stage`). Nothing else of the checkout is there:
no reference solutions, no ``.git``, no submissions or output folders, no other job's files. The
flags, in the order `bwrap_command` writes them:

``--unshare-all``
    new user, PID, network, IPC, UTS and cgroup namespaces: the child sees only its own processes
    (``/proc/<ppid>`` is bwrap's own init, never the grader), and has no network but a loopback.
``--unshare-user --uid 65534 --gid 65534``
    the child runs as ``nobody`` inside, with no capabilities. When the grader runs as root,
    bwrap itself is started as uid/gid 65534 too, so the child is not root outside either, and
    the per-user process limit counts this sandbox's processes only (a fresh user namespace).
``--die-with-parent``
    the whole sandbox is killed when the grader's watching thread goes away; the PID namespace
    dies with its init, so a daemon started in a new session (``setsid``, ``fork_exec``,
    ``multiprocessing``) cannot outlive its run, let alone the grader.
``--new-session``
    a new terminal session: no ``TIOCSTI`` injection into the instructor's terminal.
``--clearenv`` and ``--setenv``
    the instructor's environment never reaches the child; it gets the few variables of `ENV`.
``--ro-bind SRC DEST``, ``--symlink``
    the system libraries (``/usr/lib``, ``/lib``...), the interpreter (``/sandbox/python``), the
    needed distributions' files (``/sandbox/site-packages``) and the staged package
    (``/sandbox/lib/minigpt``), all read-only. A source that uid 65534 could not reach (an interpreter
    under ``/root``) is first staged by hard links into the grader's staging folder. Where the
    standard library is bound whole, an empty read-only ``--tmpfs`` hides the folders it does not
    need (its own ``site-packages`` above all).
``--proc /proc``, ``--dev /dev``
    a proc for the new PID namespace and a minimal ``/dev`` (null, zero, urandom, ...); ``/dev``
    is then remounted read-only and ``/dev/shm`` is a small private tmpfs.
``--size BYTES --tmpfs /tmp``
    a private, size-limited ``/tmp``: the only place the child can write (besides ``/dev/shm``).
``--remount-ro /``
    the sandbox's root itself is read-only (no unlimited writes into the root tmpfs).
``--chdir /tmp``
    the child starts in its private ``/tmp``.
``--args FD``
    (added by `minigpt.grading.runner`) the options above reach bwrap on a pipe, so the sandbox's
    ``/proc/1/cmdline`` (bwrap's init) names no host path.

Resource limits (`Limits`: address space, processes, file size, CPU seconds) are applied by the
child itself before it imports anything or runs student code (`minigpt.grading.child.apply_limits`);
they are hard limits that an unprivileged process cannot raise.

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
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
BWRAP = "bwrap"
SANDBOX_UID = 65534  # nobody
INSIDE = Path("/sandbox")  # where the runtime appears inside the sandbox
CHILD_ARGV = ["-S", "-s", "-B", "-m", "minigpt.grading.child"]

# The parts of `minigpt` (paths relative to the package) copied into the sandbox. After the package
# is reorganised (runtime/, corpus/), this list becomes ("__init__.py", "config.py", "runtime", "corpus",
# "grading/child.py", "grading/wire.py").
CHILD_PACKAGE: tuple[str, ...] = (
    "__init__.py", "config.py", "data",
    *(f"runtime/{name}.py" for name in ("__init__", "model", "kv_cache", "generate", "meters", "checkpoint",
                                         "tokenizer", "device")),
    "corpus/__init__.py", "corpus/grammar.py", "corpus/sentences.py",
    "grading/child.py", "grading/wire.py",
)

# The distributions whose files (with their dependencies') the child can import.
RUNTIME_DISTRIBUTIONS: tuple[str, ...] = ("torch", "numpy", "safetensors")

# Stdlib folders the child does not need (the interpreter's own site-packages above all).
STDLIB_LEFT_OUT: tuple[str, ...] = ("site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo",
                                    "ensurepip", "lib2to3", "venv")

ENV: dict[str, str] = {
    "PATH": str(INSIDE / "python" / "bin"), "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
    "PYTHONPATH": f"{INSIDE / 'lib'}:{INSIDE / 'site-packages'}", "LD_LIBRARY_PATH": str(INSIDE / "python" / "lib"),
    "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
    "MPLBACKEND": "Agg", "MINIGPT_GRADING": "1", "MINIGPT_DEVICE": "cpu", "CUDA_VISIBLE_DEVICES": "",
}


class SandboxError(RuntimeError):
    """The sandbox cannot be built here (bwrap missing or not working, or the allowlist is inconsistent)."""


@dataclass(frozen=True)
class Limits:
    """Hard resource limits of one child run (the child applies them to itself before any other work)."""

    memory_bytes: int = 2 * 2**30  # RLIMIT_AS: torch and a small MiniGPT need < 1 GiB of address space
    processes: int = 64  # RLIMIT_NPROC: processes and threads of the sandbox's user
    file_bytes: int = 64 * 2**20  # RLIMIT_FSIZE: largest file it may write
    cpu_s: int = 600  # RLIMIT_CPU: CPU seconds (the grader sets it from the submission's wall-clock budget)
    tmp_bytes: int = 64 * 2**20  # size of the private /tmp
    shm_bytes: int = 16 * 2**20  # size of the private /dev/shm

    def as_job(self) -> dict[str, int]:
        """The limits the child applies (sent in its job)."""
        return asdict(self)


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
            "import json\n\nfrom minigpt.grading.wire import records\n\n"
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
ANSWERS_LEFT_OUT: dict[str, set[str]] = {
    "minigpt/config.py": {"minigpt.costs.params", "minigpt.costs.params.param_count"},  # ModelConfig.param_count
}


def _check_imports(lib: Path) -> None:
    """Every `minigpt` module a staged file imports must be staged too (SandboxError naming the culprit)."""
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
        raise SandboxError("the sandbox's copy of minigpt is incomplete (extend CHILD_PACKAGE or STAND_INS in "
                           "minigpt/grading/sandbox.py, without answer functions): " + "; ".join(sorted(set(missing))))


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
            raise SandboxError(f"CHILD_PACKAGE names minigpt/{rel}, which does not exist")
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


# ---------------------------------------------------------------------------------------------
# The command


def _system_libraries() -> list[str]:
    args: list[str] = []
    for path in ("/usr/lib", "/usr/lib64", "/lib", "/lib64"):
        p = Path(path)
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), path]
        elif p.is_dir():
            args += ["--ro-bind", path, path]
    return args


def bwrap_command(runtime: Runtime, limits: Limits) -> list[str]:
    """The bubblewrap command line that runs the grading child in a fresh sandbox (see the module docstring)."""
    args = [BWRAP, "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--die-with-parent", "--new-session", "--clearenv"]
    for key, value in ENV.items():
        args += ["--setenv", key, value]
    args += _system_libraries()
    args += ["--proc", "/proc", "--dev", "/dev", "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm",
             "--remount-ro", "/dev", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]
    for src, inside in runtime.binds:
        args += ["--ro-bind", str(src), str(inside)]
    for inside in runtime.masks:
        args += ["--tmpfs", str(inside), "--remount-ro", str(inside)]
    args += ["--remount-ro", "/", "--chdir", "/tmp", str(runtime.python), *CHILD_ARGV]
    return args


def popen_user() -> dict[str, object]:
    """`subprocess.Popen` arguments that start bwrap as uid/gid 65534 when the grader runs as root (else nothing)."""
    if os.geteuid() == 0:
        return {"user": SANDBOX_UID, "group": SANDBOX_UID, "extra_groups": []}
    return {}


def unavailable() -> str | None:
    """Why no sandbox can be built here (None when bwrap is installed and works)."""
    if shutil.which(BWRAP) is None:
        return ("bubblewrap (bwrap) is not installed; install it (Debian/Ubuntu: apt-get install bubblewrap) "
                "or pass --unsafe-no-sandbox to grade without an OS sandbox")
    import subprocess

    true = Path(shutil.which("true") or "/bin/true").resolve()
    probe = [BWRAP, "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
             *_system_libraries(), "--proc", "/proc", "--dev", "/dev", "--ro-bind", str(true), "/true", "/true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=30, **popen_user())  # type: ignore[call-overload]
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bubblewrap does not run here ({type(err).__name__}); pass --unsafe-no-sandbox to grade without it"
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip()[:200]
        return (f"bubblewrap cannot create a sandbox here ({detail}); unprivileged user namespaces may be "
                "disabled. Pass --unsafe-no-sandbox to grade without an OS sandbox")
    return None
