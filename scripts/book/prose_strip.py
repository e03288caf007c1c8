"""Removing what is not prose from a page's Markdown (code, math, roles, link addresses, markup), in steps."""

from __future__ import annotations

import re

# Directives whose body is prose (kept); every other fenced block is code or data (dropped).
PROSE_DIRECTIVES = {
    "admonition", "note", "warning", "tip", "important", "caution", "attention", "hint", "seealso",
    "danger", "error", "glossary", "figure", "epigraph", "topic", "sidebar", "margin", "dropdown",
}
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,}|:{3,})\s*(\{([\w:-]+)\})?(.*)$")


def strip_code(text: str, *, keep_titles: bool = True) -> str:
    """`text` without fenced code blocks, directive options (`:class: …`) and non-prose directives.

    The bodies of prose directives (admonitions, notes, figures' captions, the glossary) stay; so does a
    directive's title (the text after ```` ```{admonition} ````) unless `keep_titles` is False.
    """
    out: list[str] = []
    stack: list[tuple[str, bool]] = []  # (opening fence, is its body prose)
    for line in text.splitlines():
        m = _FENCE.match(line)
        if stack:
            fence, body_is_prose = stack[-1]
            bare = line.strip()
            if bare and set(bare) == {fence[0]} and len(bare) >= len(fence):
                stack.pop()  # the closing fence
                continue
            if not body_is_prose:
                continue
            if not m and re.match(r"^\s*:[\w-]+:", line):
                continue  # a directive option
        if m:
            prose_directive = m.group(4) in PROSE_DIRECTIVES
            stack.append((m.group(2), prose_directive))
            if prose_directive and keep_titles:
                out.append(m.group(5))
            continue
        out.append(line)
    return "\n".join(out)


def strip_math(text: str) -> str:
    """`text` without display math (`$$…$$`, `\\[…\\]`) and inline math (`$…$`, `\\(…\\)`)."""
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = re.sub(r"\\\[.*?\\\]", " ", text, flags=re.S)
    text = re.sub(r"(?<![\\$])\$(?!\$)[^$\n]*(?:\n[^$\n]+)*?\$", " ", text)
    return re.sub(r"\\\(.*?\\\)", " ", text, flags=re.S)


def strip_roles(text: str) -> str:
    """Roles: `{term}` keeps its text, every other role (glue, cite, ref, …) becomes a space."""
    text = re.sub(r"\{term\}`([^`<]*?)(?:\s*<[^>]*>)?`", r"\1", text)
    return re.sub(r"\{[\w:.-]+\}`[^`]*`", " ", text)


def strip_inline_code(text: str) -> str:
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", " ", text, flags=re.S)


def strip_markup(text: str) -> str:
    """HTML tags and comments, link addresses (the link text stays), MyST targets and comments."""
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"<[^>\n]+>", " ", text)
    text = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"^\s*\([\w:.-]+\)=\s*$", " ", text, flags=re.M)
    return re.sub(r"^\s*%.*$", " ", text, flags=re.M)


def prose(text: str, *, keep_titles: bool = True) -> str:
    """The words of a block: no code, math, roles other than {term}, link addresses or markup."""
    text = strip_code(text, keep_titles=keep_titles)
    text = strip_roles(text)
    text = strip_inline_code(text)
    text = strip_math(text)
    return strip_markup(text)
