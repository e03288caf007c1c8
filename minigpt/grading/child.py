"""The untrusted side of the grader: run one submission's code cells, call its functions, report the outputs.

    python -S -s -B -m minigpt.grading.child    (inside the sandbox of minigpt.grading.sandbox)

Started by `minigpt.grading.grader` in a fresh bubblewrap sandbox, one per run (relaunched for the
questions that remain when a question or cell had to be killed). The job arrives on standard input,
which the parent writes and closes: one JSON line, then the notebook's raw bytes; the job holds the question names,
their *inputs* (presets already resolved to plain records), the time limit, the resource limits and a fixed cap
on one question's outputs (the same for every question: it says nothing of any answer). Nothing derived from
an expected output reaches this process, not even its shape, and its copy of `minigpt` holds no answer
functions.

Order of work: read the job and the notebook's bytes; apply the resource limits (hard, so student code
cannot raise them); parse the notebook here, under those limits (`minigpt.grading.notebook_code`: a
notebook over a size limit is reported as too large, nothing of it runs); import torch and build every
input before any student code runs; execute the cells one by one (an error, `sys.exit()` or a timeout in
one cell is recorded and the next cell runs, like "Run all" with continue-on-error); then call each
question's function on its inputs and convert each result to plain data through the base classes (`encode`:
a tensor subclass cannot lie about its shape); the parent checks it against the answer's shape.
Each step is one JSON line on the job's ``events_fd``, a pipe the parent reads and checks against the
order it expects; student code can write there too, which only makes the parent stop this run: the
verdicts are the parent's own comparisons. Nothing here is a security boundary: the sandbox is.
"""

from __future__ import annotations

import builtins
import json
import os
import resource
import signal
import sys
import time
from inspect import CO_COROUTINE
from typing import Any

MESSAGE_CAP = 300  # characters of an exception message sent to the parent (which sanitizes and shortens it)
MAX_FINDINGS = 200  # review findings sent to the parent
FINDINGS_BYTES = 32 * 2**10  # and their size, JSON-encoded


class GraderTimeout(BaseException):
    """Raised by SIGALRM when a cell or a question runs past its time limit (not an Exception on purpose)."""


def apply_limits(limits: dict[str, int]) -> None:
    """Hard rlimits for this process and everything it starts: address space, processes, file size, CPU."""
    for name, key in (("RLIMIT_AS", "memory_bytes"), ("RLIMIT_NPROC", "processes"), ("RLIMIT_FSIZE", "file_bytes")):
        value = int(limits[key])
        resource.setrlimit(getattr(resource, name), (value, value))
    cpu = int(limits["cpu_s"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))  # SIGXCPU at the soft limit, SIGKILL at the hard one
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails with EFBIG instead of killing us


class _NoShell:
    """Stands in for `get_ipython()`: magics and shell escapes are not run by the grader."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def _new_loop() -> Any:
    import asyncio

    return asyncio.new_event_loop()


def _alarm(seconds: float) -> None:
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.0))


def _on_alarm(signum: int, frame: Any) -> None:
    raise GraderTimeout()


def describe_error(err: BaseException) -> dict[str, Any]:
    """The error as data: its kind, type name, a capped message (the parent sanitizes before showing it)."""
    if isinstance(err, GraderTimeout):
        return {"kind": "timeout"}
    if isinstance(err, SystemExit):
        return {"kind": "exit", "code": err.code if isinstance(err.code, int) else None,
                "has_code": err.code is not None}
    if isinstance(err, NotImplementedError):
        return {"kind": "not_implemented"}
    if isinstance(err, SyntaxError):
        return {"kind": "syntax", "message": str(err.msg)[:MESSAGE_CAP], "line": err.lineno}
    try:
        message = str(err)[:MESSAGE_CAP]
    except BaseException:  # noqa: BLE001 - a hostile __str__
        message = ""
    return {"kind": "exception", "type": type(err).__name__[:80], "message": message}


def _read_job() -> tuple[dict[str, Any], bytes]:
    """The job (one JSON line, from the trusted parent) and the submitted notebook's bytes (the rest of stdin)."""
    data = sys.stdin.buffer.read()
    header, _, notebook = data.partition(b"\n")
    return json.loads(header.decode("utf-8")), notebook


def main() -> None:
    job, notebook = _read_job()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    apply_limits(job["limits"])
    channel = os.fdopen(int(job["events_fd"]), "w", encoding="utf-8")
    write, flush, dumps = channel.write, channel.flush, json.dumps

    def emit(event: dict) -> None:
        write(dumps(event) + "\n")
        flush()

    from minigpt.grading.notebook_code import (
        COMPILE_FLAGS,
        CorruptNotebook,
        SizeLimits,
        TooLarge,
        parse_notebook,
        to_python,
    )

    try:
        parsed = parse_notebook(notebook, SizeLimits(**job["size_limits"]))
    except TooLarge as err:
        emit({"event": "rejected", "kind": "too_large", "message": str(err)[:MESSAGE_CAP]})
        os._exit(0)
    except CorruptNotebook as err:
        emit({"event": "rejected", "kind": "corrupt", "message": str(err)[:MESSAGE_CAP]})
        os._exit(0)
    del notebook
    skip = set(job["skip_cells"])
    cells = []
    for cell in parsed:
        if cell.index not in skip:
            source = to_python(cell.source)
            if source is not None:
                cells.append((cell.index, source))
    from minigpt.grading.fingerprints import function_fingerprints
    from minigpt.grading.review import review_cell

    findings = []
    for cell in parsed:  # the static review, before any student code runs (so what it reports is the child's own)
        try:
            findings += [[f.cell, f.line, f.category, f.reference]
                         for f in review_cell(cell.index, cell.source, frozenset(job["offered"]))]
        except Exception:  # noqa: BLE001 - the review is advisory
            findings.append([cell.index, 0, "tampering", "the review could not read this cell"])
    for cell in parsed:  # each function's fingerprint, after the findings (cut first): the parent looks them up
        try:
            findings += [[cell.index, line, "fingerprint", digest] for line, digest in function_fingerprints(
                to_python(cell.source) or cell.source)]
        except Exception:  # noqa: BLE001, S112 - a cell that does not parse defines no function to compare
            continue
    findings = findings[:MAX_FINDINGS]
    while len(json.dumps(findings)) > FINDINGS_BYTES:  # the listing must stay a small event (the parent's bound)
        findings = findings[: len(findings) // 2]
    emit({"event": "cells", "cells": [index for index, _ in cells], "findings": findings})

    import torch

    from minigpt.exercises.wire import UnsupportedOutput, build_case, encode
    from minigpt.exercises.work import measured

    torch.set_num_threads(1)
    inputs = {q["id"]: [build_case(c) for c in q["cases"]] for q in job["questions"]}
    timeout = float(job["timeout"])
    cap = int(job["output_cap"])
    signal.signal(signal.SIGALRM, _on_alarm)
    from minigpt.grading.habits import install

    install()  # plots, progress bars, display and tables import and draw nothing (not in the sandbox)
    namespace: dict[str, Any] = {
        "__name__": "__main__", "__builtins__": builtins, "get_ipython": _NoShell,
        "display": lambda *objs, **kw: print(*objs), "device": torch.device("cpu"),
    }
    emit({"event": "ready"})

    loop = None
    for index, source in cells:
        emit({"event": "cell_start", "cell": index})
        error = None
        try:
            code = compile(source, f"<cell {index}>", "exec", flags=COMPILE_FLAGS)
            _alarm(timeout)
            try:
                if code.co_flags & CO_COROUTINE:  # a top-level `await`, as Jupyter runs it
                    loop = loop or _new_loop()
                    loop.run_until_complete(eval(code, namespace))  # noqa: S307 - untrusted code, by design
                else:
                    exec(code, namespace)  # noqa: S102 - this process exists to run untrusted code
            finally:
                _alarm(0)
        except BaseException as err:  # noqa: BLE001 - continue-on-error, like "Run all"
            error = describe_error(err)
        emit({"event": "cell_end", "cell": index, "error": error})

    for q in job["questions"]:
        emit({"event": "q_start", "q": q["id"]})
        fn = namespace.get(q["function"])
        if not callable(fn):
            emit({"event": "q_end", "q": q["id"], "error": {"kind": "missing"}})
            continue
        outputs, work, error, started, size = [], [], None, time.monotonic(), 0
        try:
            _alarm(timeout)
            try:
                for kwargs in inputs[q["id"]]:
                    if q.get("measure"):  # a question about the method: how much work each case took
                        value, done = measured(fn, kwargs)
                        work.append(done)
                    else:
                        value = fn(**kwargs)
                    value = encode(value)
                    size += len(dumps(value))
                    if size > cap:  # the parent's fixed cap on one question's outputs (no answer's size)
                        error = {"kind": "too_large"}
                        break
                    outputs.append(value)
            finally:
                _alarm(0)
        except UnsupportedOutput as err:
            error = {"kind": "unsupported", "message": str(err)[:MESSAGE_CAP]}
        except BaseException as err:  # noqa: BLE001 - anything the student's function raises
            error = describe_error(err)
        if error:
            emit({"event": "q_end", "q": q["id"], "error": error})
            continue
        try:
            emit({"event": "q_end", "q": q["id"], "outputs": outputs, "seconds": round(time.monotonic() - started, 3),
                  **({"work": work} if q.get("measure") else {})})
        except (TypeError, ValueError):
            emit({"event": "q_end", "q": q["id"], "error": {"kind": "unsaveable"}})
    emit({"event": "done"})
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip atexit handlers, finalizers and threads the student's code may have left


if __name__ == "__main__":
    main()
