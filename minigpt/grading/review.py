"""A static look at each submitted cell, for the instructor: references to answer functions and tampering.

The sandbox already keeps the answer functions out of reach; this lists what a student *tried* to
use, so the instructor can review it (``review.csv``). It changes no score. Three categories:

- ``answer``: the formulas and oracles (`minigpt.costs`, the presets' modules, `minigpt.exercises`
  beyond `check`, `minigpt.grading`, a question's ``oracle``/``expected``, private helpers ``_x`` of
  a `minigpt` module);
- ``runtime``: package functions that compute some answers outright (`generate`, `attention`, `KVCache`,
  `RequestMeters`, `MiniGPT`...), and ``getattr`` on the package: in the sandbox they are stubs that refuse
  to run, except where a question's inputs are a MiniGPT (its model and cache are then real);
- ``tampering``: the grader's machinery or the operating system (``gc``, frames, ``ctypes``,
  process creation and signals, ``dir_fd``, ``/proc``, ``sitecustomize``), and code run from data (``exec``,
  ``eval``, ``compile``, ``zlib``/``base64``/``marshal``: a copy of the package, encoded, is still a copy).

What the exercise's instructions give is not a finding: the formulas and runtime modules its questions name
(`offered`), the presets' tables, and a handout's helpers from its exercise's module (inert while grading).
The grading parent adds ``copy`` findings of its own: a submission with another's bytes, or a link to another.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

ANSWER_MODULES = {"costs", "presets", "roofline", "text_rates", "exercises", "grading", "measure", "cost_curve",
                  "sweeps", "flops", "memory", "params", "traffic", "wall_clock", "batching", "kv_storage", "parallel",
                  "shape", "format", "quality", "attention", "attention_kernels",
                  "latent", "mla", "eviction", "window_cache"}  # the last four: Exercise 18's oracles
RUNTIME_ANSWERS = {"generate", "prefill", "decode_step", "stream", "sample", "attention", "causal_visible", "KVCache",
                   "RequestMeters", "MiniGPT", "no_cache_step"}
RUNTIME_MODULES = {"model", "kv_cache", "meters", "generate"}  # minigpt.runtime modules that hold some answers
ORACLE_ATTRIBUTES = {"oracle", "expected", "EXERCISES", "registry", "question", "run_check"}
PRESET_TABLES = {"HARDWARE", "MODELS", "LINKS", "KV_LINKS", "HOST_LINKS", "HardwarePreset", "ModelPreset",
                 "LinkPreset"}  # data, offered as records in the sandbox
EXERCISE_SECRETS = ORACLE_ATTRIBUTES | {"EXERCISE", "QUESTIONS"}  # what an exercise's module would give away
OBFUSCATION_MODULES = {"zlib", "base64", "marshal", "lzma", "bz2", "gzip", "codecs", "pickle"}
OBFUSCATION_CALLS = {"exec", "eval", "compile"}
TAMPER_MODULES = {"gc", "inspect", "ctypes", "_posixsubprocess", "subprocess", "multiprocessing", "signal", "pty",
                  "socket", "importlib", "resource", "mmap", "_thread"}
TAMPER_NAMES = {"_getframe", "f_back", "f_globals", "f_locals", "gi_frame", "get_objects", "get_referrers", "fork",
                "forkpty", "setsid", "kill", "killpg", "pidfd_open", "pidfd_send_signal", "fork_exec", "dir_fd",
                "__subclasses__", "__import__", "addaudithook", "settrace", "setprofile"}
TAMPER_TEXT = re.compile(r"/proc/|sitecustomize|usercustomize|\.pth\b|/sandbox/")


@dataclass(frozen=True)
class Finding:
    """One reference in one cell."""

    cell: int
    line: int
    category: str  # "answer", "runtime" or "tampering"
    reference: str


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _minigpt_module(name: str) -> str | None:
    """The `minigpt` module a dotted name refers to, by its own name: "minigpt.costs.presets" is "presets",
    "minigpt.runtime.generate" is "generate", "minigpt.costs" is "costs" (subpackages by their module)."""
    parts = name.split(".")
    if parts[0] != "minigpt" or len(parts) < 2:
        return None
    return parts[2] if len(parts) > 2 and parts[1] in ("costs", "runtime", "measure", "corpus") else parts[1]


def review_cell(index: int, source: str, offered: frozenset[str] = frozenset()) -> list[Finding]:
    """The findings of one cell's code (a cell that does not parse is scanned as text only). `offered`: what the
    exercise's instructions give the student, which is not a finding: `minigpt.costs` formulas by name and
    runtime modules by dotted name (``minigpt.runtime.generate``)."""
    found: list[Finding] = []
    formulas = {name for name in offered if "." not in name}

    def add(node: ast.AST | None, category: str, reference: str) -> None:
        found.append(Finding(index, getattr(node, "lineno", 0), category, reference[:80]))

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    for node in ast.walk(tree) if tree is not None else []:
        if isinstance(node, ast.Import):
            for alias in node.names:
                sub = _minigpt_module(alias.name)
                if sub in ANSWER_MODULES and not (sub == "costs" and formulas):
                    add(node, "answer", f"import {alias.name}")
                if alias.name.split(".")[0] in TAMPER_MODULES:
                    add(node, "tampering", f"import {alias.name}")
                if alias.name.split(".")[0] in OBFUSCATION_MODULES:
                    add(node, "tampering", f"import {alias.name} (encoded code?)")
        elif isinstance(node, ast.ImportFrom) and node.module:
            sub = _minigpt_module(node.module)
            names = {a.name for a in node.names}
            allowed = {"exercises": {"check"}, "presets": PRESET_TABLES, "costs": formulas}.get(sub or "", set())
            helpers = re.fullmatch(r"minigpt\.exercises\.ex\d+", node.module) and not any(
                n in EXERCISE_SECRETS or _private(n) for n in names)  # a handout's helper: inert while grading
            if sub in ANSWER_MODULES and not names <= allowed and not helpers:
                add(node, "answer", f"from {node.module} import {', '.join(sorted(names))}")
            if node.module == "minigpt":
                for name in sorted(names & ANSWER_MODULES - ({"costs"} if formulas else set())):
                    add(node, "answer", f"from minigpt import {name}")
                for name in sorted(names & RUNTIME_ANSWERS):
                    add(node, "runtime", f"from minigpt import {name}")
            if sub in RUNTIME_ANSWERS | RUNTIME_MODULES and sub not in ANSWER_MODULES and node.module not in offered:
                add(node, "runtime", f"from {node.module} import {', '.join(sorted(names))}")
            if node.module.split(".")[0] in TAMPER_MODULES:
                add(node, "tampering", f"from {node.module} import ...")
            if node.module.split(".")[0] in OBFUSCATION_MODULES:
                add(node, "tampering", f"from {node.module} import ... (encoded code?)")
        elif isinstance(node, ast.Attribute):
            if node.attr in ORACLE_ATTRIBUTES:
                add(node, "answer", f".{node.attr}")
            elif node.attr in TAMPER_NAMES:
                add(node, "tampering", f".{node.attr}")
            elif isinstance(node.value, ast.Name) and node.value.id in ANSWER_MODULES | {"minigpt"}:
                if node.value.id == "costs" and node.attr in formulas:
                    pass  # a formula the instructions give
                elif node.value.id != "minigpt" or node.attr in ANSWER_MODULES or _private(node.attr):
                    add(node, "answer", f"{node.value.id}.{node.attr}")
                elif node.attr in RUNTIME_ANSWERS:
                    add(node, "runtime", f"minigpt.{node.attr}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
              and node.args and isinstance(node.args[0], (ast.Name, ast.Attribute))
              and ast.unparse(node.args[0]).split(".")[0] in {"minigpt", "runtime", "costs"}):
            add(node, "runtime", f"getattr({ast.unparse(node.args[0])[:40]}, ...)")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in OBFUSCATION_CALLS:
            add(node, "tampering", f"{node.func.id}(...) (code run from data)")
        elif isinstance(node, ast.keyword) and node.arg in TAMPER_NAMES:
            add(node.value, "tampering", f"{node.arg}=")
        elif isinstance(node, ast.Name) and node.id in TAMPER_NAMES | {"EXERCISES"}:
            add(node, "tampering" if node.id in TAMPER_NAMES else "answer", node.id)
    for number, line in enumerate(source.splitlines(), start=1):
        match = TAMPER_TEXT.search(line)
        if match:
            found.append(Finding(index, number, "tampering", f"mentions {match[0]!r}"))
    unique = {(f.line, f.category, f.reference): f for f in found}
    return sorted(unique.values(), key=lambda f: (f.line, f.category, f.reference))
