"""The untrusted side of the grader: run one submission's code cells, call its functions, write the outputs.

    python -m minigpt.grading.child JOB.json

Started by `minigpt.grading.grader` in a fresh process, one per submission (relaunched for the
questions that remain when a question or cell had to be killed). The job file holds the code cells
(magics already transformed), the question names and their *inputs* only: the expected outputs
never reach this process, so nothing the student's code does here can change a verdict.

Order of work: read the job; import torch and the package; build every input (tensors, models,
presets) before any student code runs; install an audit hook (`sys.addaudithook`) that forbids
reading the reference solutions, writing under the package / exercises / output / submission
folders, starting processes, opening sockets, signalling other processes and loading native code
with ctypes; then execute the cells one by one (an error, `sys.exit()` or a timeout in one cell is
recorded and the next cell runs, like "Run all" with continue-on-error); then call each question's
function on its inputs. Every step is one JSON line appended to the result file, flushed at once,
so the parent knows how far the child got even if it is killed.
"""

from __future__ import annotations

import builtins
import json
import os
import signal
import sys
import time
import traceback
from typing import Any

GRADING_ENV = "MINIGPT_GRADING"

_BLOCKED_EVENTS = {
    "subprocess.Popen": "starting a process",
    "os.system": "starting a process",
    "os.exec": "starting a process",
    "os.posix_spawn": "starting a process",
    "os.spawn": "starting a process",
    "os.fork": "forking the process",
    "os.forkpty": "forking the process",
    "pty.spawn": "starting a process",
    "os.startfile": "starting a process",
    "socket.__new__": "opening a socket",
    "socket.connect": "opening a socket",
    "socket.bind": "opening a socket",
    "os.kill": "signalling a process",
    "os.killpg": "signalling a process",
    "signal.pthread_kill": "signalling a process",
    "ctypes.dlopen": "loading native code",
    "ctypes.dlsym": "loading native code",
    "ctypes.dlsym/handle": "loading native code",
    "ctypes.cdata": "raw memory access",
    "ctypes.string_at": "raw memory access",
    "ctypes.wstring_at": "raw memory access",
    "ctypes.addressof": "raw memory access",
}
_PATH_EVENTS = {  # event -> indexes of path arguments that are modified
    "os.remove": (0,), "os.rmdir": (0,), "os.rename": (0, 1), "os.replace": (0, 1), "os.truncate": (0,),
    "os.chmod": (0,), "os.chown": (0,), "os.mkdir": (0,), "os.link": (0, 1), "os.symlink": (1,),
    "os.utime": (0,), "shutil.rmtree": (0,), "shutil.move": (0, 1), "shutil.copyfile": (1,),
}
_LIST_EVENTS = {"os.listdir": 0, "os.scandir": 0, "glob.glob": 0, "glob.glob/2": 0, "os.walk": 0}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class GraderTimeout(BaseException):
    """Raised by SIGALRM when a cell or a question runs past its time limit (not an Exception on purpose)."""


def _real(path: Any) -> str | None:
    if isinstance(path, int) or path is None:
        return None
    try:
        return os.path.realpath(os.fsdecode(path))
    except (TypeError, ValueError):
        return None


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def is_solutions_path(path: str, solutions: list[str]) -> bool:
    """True for any path inside a reference-solutions folder (this checkout's or any `exercises/solutions`)."""
    norm = path.replace(os.sep, "/")
    return any(_under(path, s) for s in solutions) or "/exercises/solutions" in norm


class Guard:
    """The audit hook: records and refuses what student code may not do."""

    def __init__(self, emit: Any, solutions: list[str], protected: list[str], result: str) -> None:
        self.emit = emit
        self.solutions = [os.path.realpath(s) for s in solutions]
        self.protected = [os.path.realpath(p) for p in protected]
        self.result = os.path.realpath(result)
        self.phase: str = "setup"
        self.active = False
        self._inside = False

    def violation(self, kind: str, detail: str) -> None:
        self.emit({"event": "violation", "kind": kind, "detail": detail[:300], "phase": self.phase})
        if kind == "solutions":
            raise PermissionError("the grader does not allow reading the reference solutions")
        raise PermissionError(f"the grader does not allow {detail[:200]}")

    def __call__(self, event: str, args: tuple) -> None:
        if not self.active or self._inside:
            return
        self._inside = True
        try:
            self._check(event, args)
        finally:
            self._inside = False

    def _check(self, event: str, args: tuple) -> None:
        if event in _BLOCKED_EVENTS:
            self.violation("blocked", f"{_BLOCKED_EVENTS[event]} ({event})")
        if event == "open":
            path = _real(args[0])
            if path is None:
                return
            if is_solutions_path(path, self.solutions):
                self.violation("solutions", f"open {path}")
            mode, flags = args[1] if len(args) > 1 else None, args[2] if len(args) > 2 else 0
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool((flags or 0) & _WRITE_FLAGS)
            if writing and (path == self.result or any(_under(path, p) for p in self.protected)):
                self.violation("write", f"writing {path}")
        elif event in _LIST_EVENTS:
            path = _real(args[0] if args else ".")
            if path and is_solutions_path(path, self.solutions):
                self.violation("solutions", f"{event} {path}")
        elif event in _PATH_EVENTS:
            for i in _PATH_EVENTS[event]:
                path = _real(args[i]) if len(args) > i else None
                if path and is_solutions_path(path, self.solutions):
                    self.violation("solutions", f"{event} {path}")
                if path and (path == self.result or any(_under(path, p) for p in self.protected)):
                    self.violation("write", f"{event} {path}")


class _NoShell:
    """Stands in for `get_ipython()`: magics and shell escapes are not run by the grader."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def _alarm(seconds: float) -> None:
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.0))


def _on_alarm(signum: int, frame: Any) -> None:
    raise GraderTimeout()


def _describe_error(err: BaseException, timeout: float) -> str:
    if isinstance(err, GraderTimeout):
        return f"timed out after {timeout:g} s"
    if isinstance(err, SystemExit):
        return f"called sys.exit({err.code!r})" if err.code is not None else "called sys.exit()"
    if isinstance(err, NotImplementedError):
        return "not implemented (the stub still raises NotImplementedError)"
    if isinstance(err, SyntaxError):
        return f"SyntaxError: {err.msg} (line {err.lineno})"
    text = f"{type(err).__name__}: {err}"
    return text[:500]


def main(job_path: str) -> None:
    with open(job_path, encoding="utf-8") as f:
        job = json.load(f)
    log = open(job["result"], "a", encoding="utf-8")  # noqa: SIM115 - held open for the whole run
    write, flush, dumps = log.write, log.flush, json.dumps

    def emit(event: dict) -> None:
        write(dumps(event) + "\n")
        flush()

    os.environ[GRADING_ENV] = "1"
    import torch

    from minigpt.exercises.registry import exercise
    from minigpt.exercises.spec import UnsupportedOutput, build_case, encode

    torch.set_num_threads(1)
    exercise(job["exercise"])  # validates the id before any student code runs
    inputs = {q["id"]: [build_case(c) for c in q["cases"]] for q in job["questions"]}
    timeout = float(job["timeout"])
    guard = Guard(emit, job["solutions"], job["protected"], job["result"])
    sys.addaudithook(guard)
    signal.signal(signal.SIGALRM, _on_alarm)
    namespace: dict[str, Any] = {
        "__name__": "__main__", "__builtins__": builtins, "get_ipython": _NoShell,
        "display": lambda *objs, **kw: print(*objs), "device": torch.device("cpu"),
    }
    emit({"event": "ready"})
    guard.active = True

    skip_cells = set(job.get("skip_cells", []))
    for cell in job["cells"]:
        if cell["index"] in skip_cells:
            continue
        guard.phase = f"cell {cell['index']}"
        emit({"event": "cell_start", "cell": cell["index"]})
        error = None
        try:
            code = compile(cell["source"], f"<cell {cell['index']}>", "exec")
            _alarm(timeout)
            try:
                exec(code, namespace)  # noqa: S102 - this process exists to run untrusted code
            finally:
                _alarm(0)
        except BaseException as err:  # noqa: BLE001 - continue-on-error, like "Run all"
            error = _describe_error(err, timeout)
            if not isinstance(err, (GraderTimeout, SystemExit, SyntaxError)):
                traceback.print_exc(limit=3)
        emit({"event": "cell_end", "cell": cell["index"], "error": error})

    skip_questions = set(job.get("skip_questions", []))
    for q in job["questions"]:
        if q["id"] in skip_questions:
            continue
        guard.phase = f"question {q['id']}"
        emit({"event": "q_start", "q": q["id"]})
        fn = namespace.get(q["function"])
        if not callable(fn):
            emit({"event": "q_error", "q": q["id"], "reason": f"function {q['function']} not defined"})
            continue
        outputs, reason, started = [], None, time.monotonic()
        try:
            _alarm(timeout)
            try:
                for kwargs in inputs[q["id"]]:
                    outputs.append(encode(fn(**kwargs)))
            finally:
                _alarm(0)
        except UnsupportedOutput as err:
            reason = f"{q['function']} {err}"
        except BaseException as err:  # noqa: BLE001 - anything the student's function raises
            reason = f"{q['function']} {_describe_error(err, timeout)}"
        if reason:
            emit({"event": "q_error", "q": q["id"], "reason": reason})
        else:
            try:
                emit({"event": "q_result", "q": q["id"], "outputs": outputs,
                      "seconds": round(time.monotonic() - started, 3)})
            except (TypeError, ValueError) as err:
                emit({"event": "q_error", "q": q["id"], "reason": f"output could not be saved: {err}"})
    emit({"event": "done"})
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip atexit handlers, finalizers and threads the student's code may have left


if __name__ == "__main__":
    main(sys.argv[1])
