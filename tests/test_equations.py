"""Numbered equations are real targets: every "Eq. (x.y)" is a link to `#eq-x-y`, every target is a
tagged display equation, numbers run in order, and the equations `minigpt.costs` names exist.

The convention: a numbered equation is a display block preceded by a MyST target and tagged with
the book's number, numbered in the order the equations appear in their chapter,

    (eq-1-6)=
    $$
    F_{\\text{head}} = 2\\,B\\,T\\,d\\,V \\tag{1.6}
    $$

and in prose `[Eq. (1.6)](#eq-1-6)`. A link to a missing target is also a build warning
(`myst.xref_missing`), which `make book` (`-W`) turns into a failure.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from limits import HANG_S

ROOT = Path(__file__).resolve().parent.parent
if "book_text" not in sys.modules:  # tests/test_prose.py loads it the same way
    _spec = importlib.util.spec_from_file_location("book_text", ROOT / "scripts" / "book" / "book_text.py")
    sys.modules["book_text"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["book_text"])
book_text = sys.modules["book_text"]
book_pages = sys.modules["book_pages"]  # book_text finds the book at its ROOT: a test patches it there

PAGES = book_text.pages()
TARGET = re.compile(r"^\s*\(eq-(\d+)-(\d+)\)=\s*$")
TAG = re.compile(r"\\tag\{(\d+)\.(\d+)\}")
EQ_LINK = re.compile(r"\[([^\]]*)\]\((?:[^)#\s]*)#eq-(\d+)-(\d+)\)")
# a reference to a numbered equation left as plain text: "Eq. 3.5", "(Eq. 2.1)", "Eqs. (1.4) and (1.5)", "(1.6)"
PLAIN_REFERENCE = re.compile(r"\bEq(?:s|uations?)?\.?\s*\(?\d+\.\d+\)?|\(\d+\.\d+\)")


def _number(chapter: str, n: str) -> tuple[int, int]:
    return int(chapter), int(n)


def equations(page: str) -> list[tuple[tuple[int, int], str]]:
    """((chapter, n), problem) for each target of `page` in order; problem is "" for a good target."""
    found = []
    for block in book_text.page_blocks(page):
        lines = book_text.strip_code(block.text).splitlines()
        for i, line in enumerate(lines):
            m = TARGET.match(line)
            if not m:
                continue
            number = _number(*m.groups())
            rest = [x for x in lines[i + 1:] if x.strip()]
            problem = ""
            if not rest or not rest[0].lstrip().startswith("$$"):
                problem = f"target eq-{number[0]}-{number[1]} is not followed by a $$ display equation"
            else:
                display = "\n".join(rest)
                end = display.find("$$", display.find("$$") + 2)
                tags = TAG.findall(display[: end + 2 if end >= 0 else len(display)])
                if [(_number(*t)) for t in tags] != [number]:
                    tagged = ['{}.{}'.format(*t) for t in tags] or 'nothing'
                    problem = (f"target eq-{number[0]}-{number[1]}: its display equation is tagged {tagged}, "
                               f"expected \\tag{{{number[0]}.{number[1]}}}")
            found.append((number, f"{block.label}: {problem}" if problem else ""))
    return found


def all_targets() -> dict[tuple[int, int], str]:
    targets: dict[tuple[int, int], str] = {}
    for page in PAGES:
        for number, _ in equations(page):
            targets.setdefault(number, page)
    return targets


def test_convention_is_live_in_the_book():
    """The checks below are about something: the book has numbered equations."""
    assert len(all_targets()) >= 10, "fewer than ten (eq-x-y)= targets in the whole book"


@pytest.mark.parametrize("page", PAGES)
def test_every_target_is_a_tagged_display_equation(page):
    problems = [p for _, p in equations(page) if p]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", PAGES)
def test_every_tagged_equation_has_a_target(page):
    """A `\\tag{x.y}` without an `(eq-x-y)=` line above it cannot be linked to; `\\text{Eq. …}` is no tag."""
    targets = {number for number, _ in equations(page)}
    problems = []
    for block in book_text.page_blocks(page):
        text = book_text.strip_code(block.text)
        for display in re.findall(r"\$\$.*?\$\$", text, flags=re.S):
            for tag in TAG.findall(display):
                if _number(*tag) not in targets:
                    problems.append(f"{block.label}: \\tag{{{tag[0]}.{tag[1]}}} has no (eq-{tag[0]}-{tag[1]})= target")
            for label in re.findall(r"\\text\{\s*Eq[^}]*\}", display):
                problems.append(f"{block.label}: equation labelled {label!r}; use a target and \\tag")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", [p for p in PAGES if book_text.chapter_number(p) is not None])
def test_equation_numbers_belong_to_the_chapter_and_increase(page):
    numbers = [number for number, _ in equations(page)]
    chapter = book_text.chapter_number(page)
    wrong = [f"({a}.{b})" for a, b in numbers if a != chapter]
    assert not wrong, f"{page} is Chapter {chapter} but numbers equations {wrong}"
    ns = [b for _, b in numbers]
    assert ns == sorted(ns) and len(set(ns)) == len(ns), (
        f"{page}: equations appear in the order {[f'({chapter}.{n})' for n in ns]}; number them as they appear"
    )


def references(block_text: str) -> tuple[list[tuple[str, tuple[int, int]]], list[str]]:
    """(linked references as (link text, number), plain-text references) in a block's prose."""
    text = book_text.strip_inline_code(book_text.strip_roles(book_text.strip_code(block_text)))
    text = book_text.strip_math(text)
    linked = [(m.group(1), _number(m.group(2), m.group(3))) for m in EQ_LINK.finditer(text)]
    rest = EQ_LINK.sub(" ", text)
    rest = re.sub(r"\[[^\]]*\]\([^)]*\)", " ", rest)  # other links: their text is not an equation reference
    plain = [m.group(0) for m in PLAIN_REFERENCE.finditer(rest)]
    return linked, plain


@pytest.mark.parametrize("page", PAGES)
def test_every_equation_reference_is_a_link_to_an_existing_target(page):
    targets = all_targets()
    problems = []
    for block in book_text.page_blocks(page):
        linked, plain = references(block.text)
        problems += [f"{block.label}: {p!r} is not a link; write [Eq. (x.y)](#eq-x-y)" for p in plain]
        for text, number in linked:
            if f"({number[0]}.{number[1]})" not in text:
                problems.append(f"{block.label}: link text {text!r} does not say ({number[0]}.{number[1]})")
            if number not in targets:
                problems.append(f"{block.label}: [{text}](#eq-{number[0]}-{number[1]}) points at no equation")
    assert not problems, "\n".join(problems)


def docstring_equations() -> dict[tuple[int, int], list[str]]:
    """Every equation number named in a docstring of `minigpt/costs`, with where it is named.

    Forms: "Eq. (1.2)", "Eq. 3.1", "Eqs. (3.1) and (3.3)", ranges "Eqs. 1.1–1.6" (expanded).
    """
    named: dict[tuple[int, int], list[str]] = {}
    for path in sorted((ROOT / "minigpt" / "costs").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef)))]
        for node in nodes:
            doc = ast.get_docstring(node) or ""
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'name', 'module')}"
            for m in re.finditer(r"\bEqs?\.\s*((?:\(?\d+\.\d+\)?(?:\s*(?:,|and|–|-|to)\s*)?)+)", doc):
                numbers = [_number(*n) for n in re.findall(r"(\d+)\.(\d+)", m.group(1))]
                if re.search(r"\d\)?\s*(?:–|-|to)\s*\(?\d", m.group(1)) and len(numbers) == 2 \
                        and numbers[0][0] == numbers[1][0]:
                    numbers = [(numbers[0][0], n) for n in range(numbers[0][1], numbers[1][1] + 1)]
                for number in numbers:
                    named.setdefault(number, []).append(where)
    return named


def test_costs_docstrings_name_equations_of_the_book():
    named = docstring_equations()
    assert named, "no docstring of minigpt/costs names an equation"
    targets = all_targets()
    missing = {f"({a}.{b})": where for (a, b), where in named.items() if (a, b) not in targets}
    assert not missing, f"minigpt/costs docstrings name equations the book does not have: {missing}"


# ---------------------------------------------------------------- the checks themselves


def test_reference_finder_on_examples():
    linked, plain = references(
        "See [Eq. (1.6)](#eq-1-6), Eqs. [(1.4)](#eq-1-4) and (1.5), (Eq. 2.1), Eq. 3.5 and `Eq. (9.9)`;"
        " $x \\tag{2.2}$, [Chapter 1](../chapters/01_x.ipynb)."
    )
    assert linked == [("Eq. (1.6)", (1, 6)), ("(1.4)", (1, 4))]
    assert plain == ["(1.5)", "Eq. 2.1)", "Eq. 3.5"]


def test_equation_parser_on_examples(tmp_path, monkeypatch):
    page = tmp_path / "chapters" / "03_x.md"
    page.parent.mkdir()
    page.write_text(
        "(eq-3-1)=\n$$\nI = F/B \\tag{3.1}\n$$\n\n(eq-3-3)=\n$$\nx \\tag{3.2}\n$$\n\n(eq-3-4)=\ntext\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(book_pages, "ROOT", tmp_path)
    found = equations("chapters/03_x.md")
    assert [n for n, _ in found] == [(3, 1), (3, 3), (3, 4)]
    assert found[0][1] == ""
    assert "tagged ['3.2']" in found[1][1]
    assert "not followed by a $$ display" in found[2][1]


def _build_tiny_book(tmp_path: Path, reference: str) -> subprocess.CompletedProcess:
    """Build a two-page book with the book's own `_config.yml` and `make book`'s flags."""
    book = tmp_path / "book"
    (book / "_build" / "assets").mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", book / "_config.yml")
    shutil.copy(ROOT / "references.bib", book / "references.bib")
    shutil.copytree(ROOT / "minigpt" / "web", book / "minigpt" / "web")  # the config's html_static_path
    shutil.copytree(ROOT / "_theme", book / "_theme")  # and its templates, stylesheet and favicon
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n- file: chapters/01_a\n")
    (book / "chapters").mkdir()
    (book / "intro.md").write_text(f"# Intro\n\nSee {reference}.\n")
    (book / "chapters" / "01_a.md").write_text("# A\n\n(eq-1-1)=\n$$\nF = 2dV \\tag{1.1}\n$$\n")
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    return subprocess.run([str(jupyter_book), "build", str(book), "-n", "-W", "--keep-going"],
                          capture_output=True, text=True, timeout=HANG_S)


@pytest.mark.skipif(shutil.which("jupyter-book", path=str(Path(sys.executable).parent)) is None,
                    reason="jupyter-book is not installed next to this Python")
def test_a_dangling_equation_link_fails_the_build(tmp_path):
    """`make book` builds with -n -W: a link to a missing equation target must fail it, a good one must not."""
    good = _build_tiny_book(tmp_path / "good", "[Eq. (1.1)](#eq-1-1)")
    assert good.returncode == 0, good.stdout[-3000:] + good.stderr[-3000:]
    bad = _build_tiny_book(tmp_path / "bad", "[Eq. (9.9)](#eq-9-9)")
    assert bad.returncode != 0
    assert "eq-9-9" in bad.stdout + bad.stderr and "xref_missing" in bad.stdout + bad.stderr


def test_notation_index_lists_every_equation_the_formulas_implement():
    """Each formula of `costs.FORMULAS` whose docstring starts "<what>, Eq. (x.y)" is in the notation appendix's
    equation index, in the row of (x.y); `python scripts/book/book_text.py --equation-index --write` adds missing
    rows."""
    implemented = book_text.implemented_equations()
    assert implemented, "no formula of minigpt.costs says which equation it implements"
    current, expected = book_text.equation_index()
    assert current == expected, (
        "run `python scripts/book/book_text.py --equation-index --write`; the index should be:\n" + expected)
