"""`minigpt.grading.fstrings.requote`: Python 3.12's f-strings made 3.11's, the same program or nothing.

The bugs it catches: an inner string requoted with a quote it holds (another program, or none), a quote inside a
comment or a plain string taken for an f-string's, a format spec's braces miscounted, a nested f-string (3.12
only) turned into nonsense instead of refused."""

from __future__ import annotations

import pytest

from minigpt.grading.fstrings import requote


@pytest.mark.parametrize(("source", "want"), [
    ('print(f"{row["name"]}: {x:.2f}")', "print(f\"{row['name']}: {x:.2f}\")"),
    ("s = f'{d['k']} and {d[\"k\"]!r}'", "s = f'{d[\"k\"]} and {d[\"k\"]!r}'"),
    ('print(f"{", ".join(["a", "b"])}")', "print(f\"{', '.join(['a', 'b'])}\")"),
    ('print(f"{x:{w}.{p}f} {{literal}}")', 'print(f"{x:{w}.{p}f} {{literal}}")'),  # nothing to do
    ('x = "f{a["b"]}"  # f"{c["d"]}"', 'x = "f{a["b"]}"  # f"{c["d"]}"'),  # a plain string, a comment
    ('t = rf"{1}\\d"', 't = rf"{1}\\d"'),
])
def test_inner_strings_take_the_other_quote(source: str, want: str) -> None:
    assert requote(source) == want


@pytest.mark.parametrize("source", [
    'print(f"{x["a"] + "it\'s"}")',  # the inner string holds the other quote: no 3.11 spelling here
    'print(f"{f"{x["a"]}"}")',  # two deep
    'print(f"{x # a comment in a field\n}")',
    'print(f"unterminated {x["a"]}',
])
def test_what_cannot_be_requoted_is_refused(source: str) -> None:
    assert requote(source) is None


def test_the_requoted_program_computes_the_same() -> None:
    row, x = {"name": "run"}, 2.5
    source = 'out = f"{row["name"]}: {x:.2f} {", ".join(str(i) for i in [1, 2])}"'
    scope = {"row": row, "x": x}
    exec(requote(source), scope)  # noqa: S102 - a fixed string
    assert scope["out"] == "run: 2.50 1, 2"
