"""Python 3.12's f-strings, for the sandbox's Python 3.11: a cell written in Colab (Python 3.12) may reuse the
outer quote inside a replacement field, ``f"{row["name"]}: {x:.2f}"``, which 3.11 cannot parse (PEP 701). Where a
cell does not compile, `requote` rewrites each such inner string with the other quote, ``f"{row['name']}..."``:
the same program. It gives up (returns None) where the rewrite would not be the same program: an inner string that
holds the other quote too, a string nested two deep, a backslash or a comment inside a replacement field."""

from __future__ import annotations

import re

_START = re.compile(r"([rRbBuUfF]{0,2})('''|\"\"\"|'|\")")
_OTHER = {'"': "'", "'": '"'}


class _GiveUp(Exception):
    pass


def _plain_end(src: str, i: int, quote: str, raw: bool) -> int:
    """The index just past the closing `quote` of a string whose body starts at `i`."""
    while i < len(src):
        if src[i] == "\\" and not raw:
            i += 2
            continue
        if src.startswith(quote, i):
            return i + len(quote)
        if src[i] == "\n" and len(quote) == 1:
            raise _GiveUp
        i += 1
    raise _GiveUp


def _fstring(src: str, i: int, quote: str, raw: bool, depth: int) -> tuple[int, str]:
    """Scan an f-string's body from `i` (its opening quote just read); returns (index past its close, the body
    and closing quote rewritten)."""
    out: list[str] = []
    while i < len(src):
        c = src[i]
        if c == "\\" and not raw:
            out.append(src[i:i + 2])
            i += 2
            continue
        if src.startswith(quote, i):
            out.append(quote)
            return i + len(quote), "".join(out)
        if c == "\n" and len(quote) == 1:
            raise _GiveUp
        if src.startswith("{{", i):
            out.append("{{")
            i += 2
            continue
        if c == "{":
            i, field = _field(src, i + 1, quote, depth)
            out.append("{" + field)
            continue
        out.append(c)
        i += 1
    raise _GiveUp


def _field(src: str, i: int, quote: str, depth: int) -> tuple[int, str]:
    """A replacement field from `i` (after its `{`) to its closing `}` (included), inner strings requoted."""
    out: list[str] = []
    brackets = 0
    while i < len(src):
        c = src[i]
        if c in "\\#":
            raise _GiveUp  # allowed in 3.12 fields only: no 3.11 equivalent written here
        m = _START.match(src, i)
        if m and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            prefix, inner = m.group(1), m.group(2)
            body = m.end()
            if inner == quote or (len(quote) == 1 and inner[0] == quote):
                if depth > 0 or len(quote) == 3:
                    raise _GiveUp
                new = _OTHER[quote]
                if "f" in prefix.lower():
                    end, text = _fstring(src, body, quote, "r" in prefix.lower(), depth + 1)
                    text = text[:-1]
                else:
                    end = _plain_end(src, body, quote, "r" in prefix.lower())
                    text = src[body:end - 1]
                if new in text or quote in text:
                    raise _GiveUp
                out.append(prefix + new + text + new)
                i = end
                continue
            if "f" in prefix.lower():
                end, text = _fstring(src, body, inner, "r" in prefix.lower(), depth + 1)
                out.append(prefix + inner + text)
            else:
                end = _plain_end(src, body, inner, "r" in prefix.lower())
                out.append(src[i:end])
            i = end
            continue
        if c in "([{":
            brackets += 1
        elif c in ")]" or (c == "}" and brackets > 0):
            brackets -= 1
        elif c == "}":
            out.append("}")
            return i + 1, "".join(out)
        out.append(c)
        i += 1
    raise _GiveUp


def requote(source: str) -> str | None:
    """`source` with the inner strings of its f-strings quoted the other way, or None if it cannot be done."""
    out: list[str] = []
    i, n = 0, len(source)
    try:
        while i < n:
            c = source[i]
            if c == "#":
                j = source.find("\n", i)
                j = n if j < 0 else j
                out.append(source[i:j])
                i = j
                continue
            m = _START.match(source, i)
            if m and (i == 0 or not (source[i - 1].isalnum() or source[i - 1] == "_")):
                prefix, quote = m.group(1), m.group(2)
                raw = "r" in prefix.lower()
                if "f" in prefix.lower():
                    end, text = _fstring(source, m.end(), quote, raw, 0)
                    out.append(prefix + quote + text)
                else:
                    end = _plain_end(source, m.end(), quote, raw)
                    out.append(source[i:end])
                i = end
                continue
            out.append(c)
            i += 1
    except _GiveUp:
        return None
    return "".join(out)
