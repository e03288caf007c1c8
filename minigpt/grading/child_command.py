"""How a child is started: in a bubblewrap sandbox over a staged runtime, its options on a pipe so that no
host path shows inside (`Isolation.command`), or (unsafe) as a plain process.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minigpt.grading import cgroups, host_files, sandbox, staging


@dataclass
class Isolation:
    """How children run: in a bubblewrap sandbox over a staged runtime, or (unsafe) as plain processes."""

    runtime: staging.Runtime
    limits: sandbox.Limits
    unsafe: bool = False
    cgroups: cgroups.Backend | None = None
    seccomp: bytes | None = None

    def command(self, lib: Path, passed: list[int], info_fd: int | None = None) -> tuple[list[str], dict[str, Any]]:
        """The child's command line (the staged package `lib`; bwrap reports its sandbox's PID 1 on `info_fd`) and
        the extra `subprocess.Popen` arguments; file descriptors the command needs (`info_fd` aside) are appended to
        `passed`."""
        if not self.unsafe:
            seccomp_fd = None
            if self.seccomp is not None:
                seccomp_fd = _pipe_with(self.seccomp)
                passed.append(seccomp_fd)
            argv = sandbox.bwrap_command(self.runtime, self.limits, lib, seccomp_fd, info_fd)
            argv = _args_on_a_pipe(argv, passed)
            return argv, {"env": {}, "cwd": "/", **sandbox.popen_user()}
        site = sorted({str(p.parent) for p in host_files.distribution_entries()})
        env = dict(sandbox.ENV, PYTHONPATH=os.pathsep.join([str(lib), *site]),
                   HOME=tempfile.gettempdir(), TMPDIR=tempfile.gettempdir())
        del env["LD_LIBRARY_PATH"], env["PATH"]
        return [sys.executable, *sandbox.CHILD_ARGV], {"env": env, "cwd": tempfile.gettempdir()}


def _pipe_with(data: bytes) -> int:
    """A pipe's read end, holding `data` (less than a pipe's capacity) and closed for writing."""
    read_fd, write_fd = os.pipe()
    os.write(write_fd, data)
    os.close(write_fd)
    return read_fd


def _args_on_a_pipe(argv: list[str], passed: list[int]) -> list[str]:
    """`bwrap --args FD -- COMMAND` with the options on a pipe, so that the sandbox's /proc/1/cmdline shows no
    host path (bwrap reads options, not the command, from FD)."""
    split = len(argv) - len(sandbox.CHILD_ARGV) - 1  # the interpreter, then its arguments
    data = b"".join(a.encode() + b"\0" for a in argv[1:split])
    if len(data) > 60_000:  # more than a pipe holds without a reader: keep the plain command line
        return argv
    passed.append(_pipe_with(data))
    return [argv[0], "--args", str(passed[-1]), "--", *argv[split:]]


