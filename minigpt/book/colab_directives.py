"""The MyST directives of a markdown cell as plain Markdown, for the Colab notebooks (`colab_notebooks`).

- ```` ```{literalinclude} ../minigpt/x.py ```` with `:pyobject: name` (or `:start-at:`/`:end-at:`) -> the code
  it shows on the site, read from the package's source, in a fenced block under a link to the file;
- ```` ```{admonition} Title ```` -> a block quote headed by its title in bold.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A directive's fence (``` or :::, three or more), its name and argument, its options, its body, the same fence.
DIRECTIVE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>literalinclude|admonition)\}[ \t]*(?P<arg>[^\n]*)\n"
                       r"(?P<options>(?::[\w-]+:[^\n]*\n)*)(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S)
_OPTION = re.compile(r"^:([\w-]+):[ \t]*(.*)$", re.M)
FROM = {"en": "From", "es": "De"}  # "From [file](link):" above the code


def _options(text: str) -> dict[str, str]:
    """A directive's options; a quoted value (YAML) without its quotes."""
    out = {}
    for key, value in _OPTION.findall(text):
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key] = value
    return out


def pyobject_lines(source: str, dotted: str) -> str:
    """The lines of the function or class `dotted` ("f", "Class", "Class.method") of a module's source,
    decorators included."""
    body: list[ast.stmt] = ast.parse(source).body
    node: ast.AST | None = None
    for part in dotted.split("."):
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            raise KeyError(f"no object {dotted!r} in the source")
        body = node.body  # type: ignore[attr-defined]
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])  # type: ignore[union-attr]
    return "\n".join(source.splitlines()[start - 1:node.end_lineno])  # type: ignore[union-attr]


def _between(source: str, start_at: str | None, end_at: str | None) -> str:
    lines = source.splitlines()
    first = next((i for i, line in enumerate(lines) if start_at in line), None) if start_at else 0
    if first is None:
        raise KeyError(f"start-at {start_at!r} is in no line of the source")
    last = next((i for i in range(first, len(lines)) if end_at in lines[i]), None) if end_at else len(lines) - 1
    if last is None:
        raise KeyError(f"end-at {end_at!r} is in no line after start-at")
    return "\n".join(lines[first:last + 1])


def literalinclude(page: str, arg: str, options: dict[str, str], blob: Callable[[str], str], lang: str = "en") -> str:
    """The code a literalinclude shows, fenced, under a link (`blob(relpath)`) to the file it comes from."""
    path = (ROOT / Path(page).parent / arg.strip()).resolve()
    relpath = path.relative_to(ROOT).as_posix()
    source = path.read_text(encoding="utf-8")
    if "pyobject" in options:
        code = pyobject_lines(source, options["pyobject"])
    else:
        code = _between(source, options.get("start-at"), options.get("end-at"))
    language = options.get("language", "python" if path.suffix == ".py" else "")
    return f"{FROM.get(lang, FROM['en'])} [`{relpath}`]({blob(relpath)}):\n\n```{language}\n{code}\n```"


def admonition(title: str, body: str) -> str:
    """An admonition as a block quote: its title in bold, then its body."""
    lines = [f"**{title.strip()}**", "", *body.strip("\n").splitlines()]
    return "\n".join(">" if not line.strip() else f"> {line}" for line in lines)


def resolve_directives(source: str, page: str, blob: Callable[[str], str], lang: str = "en") -> str:
    """A markdown cell's literalinclude and admonition directives as plain Markdown (nested ones too)."""

    def one(match: re.Match) -> str:
        options = _options(match.group("options"))
        if match.group("name") == "literalinclude":
            return literalinclude(page, match.group("arg"), options, blob, lang)
        return admonition(match.group("arg"), resolve_directives(match.group("body"), page, blob, lang))

    return DIRECTIVE.sub(one, source)
