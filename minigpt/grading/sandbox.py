"""The grading sandbox: what one submission's child process may see and use, and the bubblewrap command.

One sandbox per child run. ``bwrap`` (Debian's ``bubblewrap``) builds it from nothing: an empty
root with, read-only, the system libraries, a Python interpreter, the site-packages the runtime
needs and a *staged, stripped copy* of `minigpt` (`minigpt.grading.staging.stage`). Nothing else of
the checkout is there: no reference solutions, no ``.git``, no submissions or output folders, no other job's files. The
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
    ``multiprocessing``) cannot outlive the grader. A backstop only: the kernel does this
    asynchronously, so the grader itself kills the sandbox's init at the end of each run and
    waits until it is gone (``--info-fd``).
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
``--seccomp FD``
    the filter of `minigpt.grading.seccomp` (no nested namespaces, io_uring, keyrings, ptrace, bpf, mounts...),
    installed by bwrap on the child just before it starts, so it holds for every process in the sandbox.
``--info-fd FD``
    bwrap reports there the pid (outside) of the sandbox's PID 1, which `minigpt.grading.teardown` holds as a
    pidfd, kills at the end of the run and waits for: a PID namespace's init exits only once every other
    process in it is gone, so no process of a run outlives it.

Resource limits (`Limits`) are applied twice: to the whole sandbox by its control group where the machine
has one (`minigpt.grading.cgroups`: memory including tmpfs and shared memory, tasks, one CPU), and to each
process by the child itself before it imports anything or runs student code
(`minigpt.grading.child.apply_limits`: address space, processes, file size, CPU seconds), hard limits that
an unprivileged process cannot raise.

What goes into the sandbox (the allowlist of `minigpt`, the stand-ins, the interpreter and the
distributions) is staged by `minigpt.grading.staging`.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from minigpt.grading.allowlist import INSIDE
from minigpt.grading.staging import Runtime

BWRAP = "bwrap"
SANDBOX_UID = 65534  # nobody
CHILD_ARGV = ["-S", "-s", "-B", "-m", "minigpt.grading.child"]

ENV: dict[str, str] = {
    "PATH": str(INSIDE / "python" / "bin"), "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
    "PYTHONPATH": f"{INSIDE / 'lib'}:{INSIDE / 'site-packages'}", "LD_LIBRARY_PATH": str(INSIDE / "python" / "lib"),
    "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
    "MPLBACKEND": "Agg", "MINIGPT_GRADING": "1", "MINIGPT_DEVICE": "cpu", "CUDA_VISIBLE_DEVICES": "",
}
#: The float-kernel selectors, passed through from the grader when set: the child must compute a case's inputs
#: with the kernels the grader computes its expected values with (`ATEN_CPU_CAPABILITY=default` in the grader
#: and AVX-512 in the child made an exact comparison fail by one float32 ulp; `make unit-portable`).
FLOAT_KERNEL_ENV: tuple[str, ...] = ("ATEN_CPU_CAPABILITY", "MKL_CBWR")


def _float_kernel_env() -> dict[str, str]:
    """The grader's float-kernel selectors (only plain words: they select a kernel family, nothing else)."""
    return {key: os.environ[key] for key in FLOAT_KERNEL_ENV
            if os.environ.get(key, "").replace("_", "").isalnum()}


@dataclass(frozen=True)
class Limits:
    """Hard resource limits of one child run (the child applies them to itself before any other work)."""

    memory_bytes: int = 2 * 2**30  # RLIMIT_AS, and the control group's memory (resident + tmpfs + shm)
    processes: int = 64  # RLIMIT_NPROC, and the control group's tasks (processes and threads)
    file_bytes: int = 64 * 2**20  # RLIMIT_FSIZE: largest file it may write
    cpu_s: int = 600  # RLIMIT_CPU: CPU seconds (the grader sets it from the submission's wall-clock budget)
    tmp_bytes: int = 64 * 2**20  # size of the private /tmp
    shm_bytes: int = 16 * 2**20  # size of the private /dev/shm

    def as_job(self) -> dict[str, int]:
        """The limits the child applies (sent in its job)."""
        return asdict(self)


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


def bwrap_command(runtime: Runtime, limits: Limits, lib: Path, seccomp_fd: int | None = None,
                  info_fd: int | None = None) -> list[str]:
    """The bubblewrap command line that runs the grading child in a fresh sandbox (see the module docstring), over
    the staged package `lib` (one per set of questions: `minigpt.grading.staging.stage_lib`), with the seccomp
    filter read from `seccomp_fd` and the sandbox's PID 1 reported on `info_fd`, where they are given."""
    args = [BWRAP, "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--die-with-parent", "--new-session", "--clearenv"]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    if info_fd is not None:
        args += ["--info-fd", str(info_fd)]
    for key, value in {**ENV, **_float_kernel_env()}.items():
        args += ["--setenv", key, value]
    args += _system_libraries()
    args += ["--proc", "/proc", "--dev", "/dev", "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm",
             "--remount-ro", "/dev", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]
    for src, inside in [*runtime.binds, (lib, INSIDE / "lib")]:
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
