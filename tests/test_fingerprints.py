"""The review's fingerprints: the package's code pasted into a submission is named for the instructor.

The chapters print mechanisms that some questions ask for (Chapter 9's `attention`, Chapter 10's quantizers,
Chapter 16's `combine_chunks`, Chapter 17's `accept_drafts`); a pasted copy scores like the student's own work,
so review.csv names it. The bugs these tests catch are named in each.
"""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path

import nbformat
import pytest

from minigpt.grading.fingerprints import MIN_NODES, copied_from, fingerprint, function_fingerprints
from minigpt.grading.notebook_code import to_python
from minigpt.grading.verdicts import _findings
from minigpt.runtime.attention import combine_chunks
from minigpt.runtime.model import attention
from minigpt.runtime.quantized_cache import quantize, quantize_per_channel
from minigpt.runtime.speculative import accept_drafts

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.source_text  # fingerprints the package's source, which a mutation run rewrites
PRINTED = [attention, quantize, quantize_per_channel, combine_chunks, accept_drafts]


def renamed(source: str) -> str:
    """The function as a student pastes it: another name, no docstring or hints, other variable names."""
    import ast

    tree = ast.parse(textwrap.dedent(source))
    fn = tree.body[0]
    fn.name = "student_" + fn.name
    fn.returns = None
    if isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant):
        fn.body = fn.body[1:]
    names = {a.arg: f"{a.arg}_{i}" for i, a in enumerate(fn.args.args)}
    for node in ast.walk(fn):
        if isinstance(node, ast.arg):
            node.annotation = None
            node.arg = names.get(node.arg, node.arg)
        elif isinstance(node, ast.Name) and node.id in names:
            node.id = names[node.id]
    return "# pasted\n" + ast.unparse(tree)


@pytest.mark.parametrize("fn", PRINTED, ids=lambda f: f.__name__)
def test_a_printed_mechanism_pasted_under_other_names_is_found(fn) -> None:
    """Bug caught: a fingerprint that keeps variable names, the function's name, its docstring or its hints
    (renaming would hide every copy), or that misses a function nested in a cell's other code."""
    source = "import torch\nx = 1\n\n" + renamed(inspect.getsource(fn))
    found = [copied_from(digest) for _, digest in function_fingerprints(source)]
    assert found == [f"{fn.__module__}.{fn.__qualname__}"], found


def test_a_changed_statement_is_not_a_copy() -> None:
    """Bug caught: a fingerprint so coarse (the statements' kinds only, constants and attributes dropped) that a
    student's different code is reported as the package's."""
    source = renamed(inspect.getsource(attention))
    assert copied_from(function_fingerprints(source)[0][1]) is not None
    for old, new in (("dim=-1", "dim=-2"), ("softmax", "log_softmax"), ("g * T", "T")):
        assert old in source
        changed = source.replace(old, new, 1)
        assert [copied_from(d) for _, d in function_fingerprints(changed)] == [None], old


def test_small_functions_are_not_fingerprinted() -> None:
    """Bug caught: one-line formulas fingerprinted, which an honest student writes exactly as the package does."""
    import ast

    small = ast.parse("def f(L, d):\n    return 2 * L * d * d\n").body[0]
    assert sum(1 for _ in ast.walk(small)) < MIN_NODES and fingerprint(small) is None


def test_no_handout_is_reported_as_a_copy() -> None:
    """Bug caught: a blank exercise notebook (its helpers, its stubs) matching a package function, which would
    list every student of that exercise in review.csv."""
    for path in sorted((ROOT / "exercises").glob("ex*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                source = to_python(cell.source) or cell.source
                assert [copied_from(d) for _, d in function_fingerprints(source)
                        if copied_from(d)] == [], (path.name, cell.source[:80])


def test_the_parent_turns_only_known_fingerprints_into_copy_findings() -> None:
    """Bug caught: a forged or unknown fingerprint shown as a finding (the child's strings reach review.csv only
    as the package function's name), or a known one dropped."""
    ((_, digest),) = function_fingerprints(renamed(inspect.getsource(combine_chunks)))
    event = {"findings": [[3, 2, "fingerprint", digest], [3, 9, "fingerprint", "0" * 24],
                          [3, 9, "fingerprint", "<script>"], [4, 1, "fingerprint", 7],
                          [5, 1, "answer", "import minigpt.costs"]]}
    found = [(f.cell, f.line, f.category, f.reference) for f in _findings(event)]
    assert found == [(3, 2, "copy", "a copy of minigpt.runtime.attention.flash_decoding.combine_chunks"),
                     (5, 1, "answer", "import minigpt.costs")], found
    assert copied_from(digest.upper()) is None and copied_from(None) is None  # type: ignore[arg-type]
