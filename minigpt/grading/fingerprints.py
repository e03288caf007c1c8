"""A function's fingerprint, to find the package's own code pasted into a submission (for the instructor).

The chapters print the package's mechanisms (`literalinclude`), some of which a question asks the student to
build; pasting one scores like writing it. The grade cannot tell the two apart, so the review lists it: the
sandboxed child fingerprints every function a submission defines (`function_fingerprints`, before any student
code runs) and sends the hashes; the parent compares them with the package's (`package_fingerprints`) and
adds a ``copy`` finding naming the package function. Nothing of the package enters the sandbox this way, and
the parent parses no submitted code, only hexadecimal strings.

The fingerprint is the function's syntax tree with its docstring, annotations, decorators and name left out
and every variable renamed in order of first use, so renaming, comments, blank lines and type hints do not
hide a copy; a changed statement does. Functions shorter than `MIN_NODES` tree nodes are not fingerprinted: a
one-line formula written independently is often the package's to the letter.
"""

from __future__ import annotations

import ast
import hashlib
import re
import threading
from functools import lru_cache
from pathlib import Path

MIN_NODES = 40  # smaller functions coincide by chance (`return 2 * L * d * d`)
HEX = re.compile(r"[0-9a-f]{24}")
Function = ast.FunctionDef | ast.AsyncFunctionDef


class _Normalise(ast.NodeTransformer):
    """Names renamed in order of first use (arguments first); docstring, annotations and decorators dropped."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _name(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_arg(self, node: ast.arg) -> ast.arg:
        return ast.arg(arg=self._name(node.arg), annotation=None)

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(id=self._name(node.id), ctx=node.ctx)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:] or [ast.Pass()]
        args = self.visit(node.args)
        return ast.FunctionDef(name="f", args=args, body=[self.visit(s) for s in body], decorator_list=[],
                               returns=None)

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815 - the NodeTransformer's naming

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if node.value is None:
            return ast.Pass()
        return ast.Assign(targets=[self.visit(node.target)], value=self.visit(node.value))


def fingerprint(node: Function) -> str | None:
    """The function's fingerprint (24 hex digits), or None when it is too small to tell a copy."""
    if sum(1 for _ in ast.walk(node)) < MIN_NODES:
        return None
    tree = _Normalise().visit(node)
    return hashlib.sha256(ast.dump(tree, annotate_fields=False).encode()).hexdigest()[:24]


def function_fingerprints(source: str) -> list[tuple[int, str]]:
    """(line, fingerprint) of every function `source` defines, nested ones and methods included.
    Raises what `ast.parse` raises on source that is not Python."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, Function):
            digest = fingerprint(node)
            if digest is not None:
                found.append((node.lineno, digest))
    return found


_LOCK = threading.Lock()  # CPython 3.11's ast.parse is not safe in two threads at once (a SystemError)


def package_fingerprints(root: Path | None = None) -> dict[str, str]:
    """fingerprint -> the package function it belongs to (``minigpt.runtime.model.attention``), over every module
    of the installed package (the parent's trusted copy). Where two functions share one, the first by path.
    Computed once; `grade_folder` calls it before its threads start, and the lock covers any other first call."""
    with _LOCK:
        return _package_fingerprints(root)


@lru_cache(maxsize=2)
def _package_fingerprints(root: Path | None) -> dict[str, str]:
    root = root or Path(__file__).resolve().parent.parent
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        module = ".".join(("minigpt", *path.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, Function):
                digest = fingerprint(node)
                if digest is not None:
                    found.setdefault(digest, f"{module}.{node.name}")
    return found


def copied_from(hex_digest: str) -> str | None:
    """The package function a child's reported fingerprint belongs to, or None (also for a malformed one)."""
    if type(hex_digest) is not str or not HEX.fullmatch(hex_digest):
        return None
    try:
        return package_fingerprints().get(hex_digest)
    except (SyntaxError, ValueError, SystemError, RecursionError, OSError):  # advisory: never costs a grade
        return None
