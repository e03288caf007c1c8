"""What a student may read: an error's kind, its exception type and a short sanitized message.

Everything the child reports about an error is untrusted text. Before it reaches ``details.csv`` or
the student-visible Gradescope ``results.json`` it is cut down to the exception's type name and at
most `MESSAGE_CAP` characters of its message, with terminal escape sequences and control characters
removed and anything that looks like a file path, an environment assignment or a long number/hex string
replaced by ``…``. The texts are in the language of ``MINIGPT_LANG`` (`minigpt.i18n`); a message the child made
from the wire format's templates (`minigpt.exercises.wire.MESSAGES`) is translated before it is sanitized.
"""

from __future__ import annotations

import re
from typing import Any

from minigpt.exercises.wire import MESSAGES as WIRE_MESSAGES
from minigpt.i18n import N_, _, fmt_num, translate_known

MESSAGE_CAP = 120
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.?"
                      r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_controls(text: str) -> str:
    """`text` without terminal escape sequences (CSI, OSC, ...) or control characters (newlines and tabs kept)."""
    return _CONTROL.sub("", text)

_TYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,60}")
_HIDDEN = re.compile(
    r"(?:[A-Za-z]:)?(?:~|\.{1,2})?(?:/[^\s/'\":,;()\[\]{}<>]+)+/?"  # absolute or relative paths
    r"|\b[A-Z][A-Z0-9_]{2,}=\S*"  # NAME=value (an environment entry)
    r"|\b0x[0-9a-fA-F]{6,}\b|\b[0-9a-fA-F]{16,}\b|\b\d{7,}\b"  # addresses, hashes, long numbers (seeds)
)


def sanitize(text: Any, cap: int = MESSAGE_CAP) -> str:
    """`text` as a short single line with paths, environment entries and long numbers hidden."""
    if not isinstance(text, str):
        return ""
    line = "".join(c if c.isprintable() else " " for c in strip_controls(text))
    line = _HIDDEN.sub("…", " ".join(line.split()))
    return line if len(line) <= cap else line[: cap - 1] + "…"


def exception_type(name: Any) -> str:
    """A plausible exception class name, or "Exception" when the child sent something else."""
    return name if isinstance(name, str) and _TYPE.fullmatch(name) else "Exception"


def describe(error: Any, timeout: float) -> str:
    """The student-visible text for an error the child reported (see `minigpt.grading.child.describe_error`)."""
    if not isinstance(error, dict):
        return _(NO_DESCRIPTION)
    kind = error.get("kind")
    if kind == "timeout":
        return _("timed out after {seconds} s").format(seconds=fmt_num(timeout, "g"))
    if kind == "exit":
        code = error.get("code")
        if isinstance(code, int) and not isinstance(code, bool):
            return _("called {call}").format(call=f"sys.exit({max(-999, min(code, 999))})")
        return _("called {call}").format(call="sys.exit(...)" if error.get("has_code") else "sys.exit()")
    if kind == "not_implemented":
        return _("not implemented (the stub still raises NotImplementedError)")
    if kind == "syntax":
        line = error.get("line")
        message = sanitize(error.get("message"))
        if isinstance(line, int) and not isinstance(line, bool):
            return _("SyntaxError: {message} (line {line})").format(message=message, line=line)
        return _("SyntaxError: {message}").format(message=message)
    if kind == "unsupported":
        return sanitize(translate_known(error.get("message"), WIRE_MESSAGES))
    if kind == "unsaveable":
        return _("its output could not be sent to the grader")
    if kind == "exception":
        message = sanitize(translate_known(error.get("message"), WIRE_MESSAGES))
        return f"{exception_type(error.get('type'))}: {message}" if message else exception_type(error.get("type"))
    return _(NO_DESCRIPTION)


NO_DESCRIPTION = N_("failed (no usable description)")
