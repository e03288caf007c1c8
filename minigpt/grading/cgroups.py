"""Limits per submission that count everything it starts: one control group per child run.

An rlimit is per process (``RLIMIT_AS`` misses shared memory and tmpfs pages; a process that leaves the
session escapes CPU fairness). A control group counts the whole sandbox, whatever its processes do:
memory (anonymous, page cache, ``/tmp`` and ``/dev/shm`` tmpfs pages alike), the number of tasks, and CPU
time. `detect` picks, in this order:

- **cgroup v2** where the grader's own cgroup is delegated (writable, with the ``memory``, ``pids`` and
  ``cpu`` controllers available to its children): ``memory.max`` and ``memory.swap.max = 0``, ``pids.max``,
  ``cpu.max`` (one CPU) and ``cpu.weight`` (an equal share);
- **cgroup v1** where the ``memory``, ``pids`` and ``cpu`` hierarchies are mounted and writable (as root):
  ``memory.limit_in_bytes`` (and ``memory.memsw.limit_in_bytes``, no swap), ``pids.max``,
  ``cpu.cfs_quota_us`` (one CPU) and ``cpu.shares`` (an equal share);
- **none**: the child's rlimits only (address space, processes per user, CPU seconds; `minigpt.grading.child`),
  with the reason recorded in ``run.json``.

A run's group is created before the child starts (the child waits on a gate until it has been moved in, so
every process it ever starts is counted), and removed after it, every process left in it killed first.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from minigpt.grading.teardown import GUARD_S, SandboxSurvived

CPU_PERIOD_US = 100_000


@dataclass(frozen=True)
class Budget:
    """What one run's control group allows."""

    memory_bytes: int
    tasks: int
    cpus: float = 1.0


def _own_path(controller: str) -> str | None:
    """This process's cgroup path in the hierarchy of `controller` ("" for the cgroup v2 hierarchy)."""
    for line in Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines():
        _, controllers, path = line.split(":", 2)
        if (controller and controller in controllers.split(",")) or (not controller and not controllers):
            return path
    return None


def _mounts() -> list[tuple[str, str, str]]:
    """(mount point, filesystem type, options) of every cgroup mount."""
    found = []
    for line in Path("/proc/self/mounts").read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[2] in ("cgroup", "cgroup2"):
            found.append((parts[1], parts[2], parts[3]))
    return found


class Group:
    """One run's control group (one folder per hierarchy)."""

    def __init__(self, backend: Backend, folders: list[Path]) -> None:
        self.backend, self.folders = backend, folders

    def add(self, pid: int) -> None:
        """Move `pid` (and so everything it will start) into the group."""
        for folder in self.folders:
            (folder / "cgroup.procs").write_text(str(pid), encoding="ascii")

    def out_of_memory(self) -> bool:
        """Whether the kernel refused or killed for memory in this group."""
        folder = self.folders[0]
        try:
            if self.backend.version == 2:
                events = (folder / "memory.events").read_text(encoding="ascii")
                return any(line.split()[0] in ("oom_kill", "oom") and int(line.split()[1]) > 0
                           for line in events.splitlines())
            return any(line.startswith("oom_kill ") and int(line.split()[1]) > 0
                       for line in (folder / "memory.oom_control").read_text(encoding="ascii").splitlines())
        except (OSError, ValueError, IndexError):
            return False

    def _pids(self) -> set[int]:
        pids: set[int] = set()
        for folder in self.folders:
            try:
                pids |= {int(p) for p in (folder / "cgroup.procs").read_text(encoding="ascii").split()}
            except (OSError, ValueError):
                continue
        return pids

    def remove(self) -> None:
        """Kill whatever is left in the group, wait until it is empty (`SandboxSurvived` past the hang guard,
        `teardown.GUARD_S`) and remove it."""
        if self.backend.version == 2:
            try:
                (self.folders[0] / "cgroup.kill").write_text("1", encoding="ascii")
            except OSError:
                pass
        guard = time.monotonic() + GUARD_S
        while pids := self._pids():
            if time.monotonic() > guard:
                raise SandboxSurvived(f"processes {sorted(pids)} of a run's control group were still alive "
                                      f"{GUARD_S:g} s after SIGKILL")
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.02)
        for folder in self.folders:
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


@dataclass
class Backend:
    """Where runs' groups are made: the parent folder of each hierarchy, and the cgroup version."""

    version: int
    parents: dict[str, Path]  # controller ("memory", "pids", "cpu"; "" for v2) -> this grader's folder

    def describe(self) -> str:
        return f"cgroup v{self.version}"

    def create(self, budget: Budget) -> Group:
        """A fresh group with `budget`'s limits (OSError when the kernel refuses)."""
        name = f"run-{uuid.uuid4().hex[:12]}"
        folders: list[Path] = []
        group = Group(self, folders)
        try:
            if self.version == 2:
                folder = self.parents[""] / name
                folder.mkdir()
                folders.append(folder)
                _write(folder / "memory.max", budget.memory_bytes)
                _write(folder / "memory.swap.max", 0, optional=True)
                _write(folder / "pids.max", budget.tasks)
                _write(folder / "cpu.max", f"{int(budget.cpus * CPU_PERIOD_US)} {CPU_PERIOD_US}")
                _write(folder / "cpu.weight", 100, optional=True)
            else:
                for controller in ("memory", "pids", "cpu"):
                    folder = self.parents[controller] / name
                    folder.mkdir()
                    folders.append(folder)
                _write(folders[0] / "memory.limit_in_bytes", budget.memory_bytes)
                _write(folders[0] / "memory.memsw.limit_in_bytes", budget.memory_bytes, optional=True)
                _write(folders[1] / "pids.max", budget.tasks)
                _write(folders[2] / "cpu.cfs_period_us", CPU_PERIOD_US)
                _write(folders[2] / "cpu.cfs_quota_us", int(budget.cpus * CPU_PERIOD_US))
                _write(folders[2] / "cpu.shares", 1024, optional=True)
        except OSError:
            group.remove()
            raise
        return group

    def close(self) -> None:
        for folder in self.parents.values():
            try:
                folder.rmdir()
            except OSError:
                pass


def _write(path: Path, value: object, optional: bool = False) -> None:
    try:
        path.write_text(str(value), encoding="ascii")
    except OSError:
        if not optional:
            raise


def _v2(mount: Path) -> Backend | str:
    own = _own_path("")
    if own is None:
        return "no cgroup v2 path for this process"
    base = mount / own.lstrip("/")
    available = set((base / "cgroup.controllers").read_text(encoding="ascii").split()) if (
        base / "cgroup.controllers").exists() else set()
    missing = {"memory", "pids", "cpu"} - available
    if missing:
        return f"cgroup v2 without the {', '.join(sorted(missing))} controller(s) delegated here"
    parent = base / f"minigpt-grader-{os.getpid()}"
    try:
        parent.mkdir()
        (parent / "cgroup.subtree_control").write_text("+memory +pids +cpu", encoding="ascii")
    except OSError as err:
        try:
            parent.rmdir()
        except OSError:
            pass
        return f"cgroup v2 not delegated to this user ({type(err).__name__})"
    return Backend(2, {"": parent})


def _v1(mounts: dict[str, Path]) -> Backend | str:
    parents: dict[str, Path] = {}
    for controller in ("memory", "pids", "cpu"):
        if controller not in mounts:
            return f"no cgroup v1 {controller} hierarchy"
        own = _own_path(controller) or "/"
        folder = mounts[controller] / own.lstrip("/") / f"minigpt-grader-{os.getpid()}"
        try:
            folder.mkdir(exist_ok=True)
        except OSError as err:
            Backend(1, parents).close()
            return f"cgroup v1 {controller} hierarchy not writable ({type(err).__name__})"
        parents[controller] = folder
    return Backend(1, parents)


def detect() -> tuple[Backend | None, str]:
    """The control groups this grader can make (None when it cannot) and a sentence saying which, or why not."""
    try:
        mounts = _mounts()
    except OSError:
        return None, "no control groups: /proc/self/mounts unreadable; rlimits only"
    reasons = []
    for point, fstype, _ in mounts:
        if fstype == "cgroup2":
            found = _v2(Path(point))
            if isinstance(found, Backend):
                return found, "cgroup v2 per run (memory.max, pids.max, cpu.max)"
            reasons.append(found)
    v1 = {}
    for point, fstype, options in mounts:
        if fstype == "cgroup":
            for controller in ("memory", "pids", "cpu"):
                if controller in options.split(","):
                    v1.setdefault(controller, Path(point))
    if v1:
        found = _v1(v1)
        if isinstance(found, Backend):
            why = f" ({'; '.join(reasons)})" if reasons else ""
            return found, f"cgroup v1 per run (memory.limit_in_bytes incl. tmpfs, pids.max, cpu.cfs_quota_us){why}"
        reasons.append(found)
    return None, "no control groups (" + "; ".join(reasons or ["none mounted"]) + "); rlimits only"
