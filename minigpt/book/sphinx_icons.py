"""Sphinx extension: the theme's icon fonts cut down to the icons the site shows.

pydata-sphinx-theme draws its icons (search, menu, light/dark, the repository and launch buttons) with
Font Awesome's web fonts, 1,900 icons for the twenty or so the pages use: 0.27 MB that every page loads
(the solid and brand fonts). After the build this writes a subset of each font, with only the icons whose
`fa-*` class appears in a built page, as WOFF next to the originals, and `_static/icons.css`, which every
page loads after the theme's stylesheet: its `@font-face` rules, declared last, replace the theme's for the
same family and weight, so the browser fetches the subsets instead (a few kB).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

ICONS_CSS = "icons.css"
WEBFONTS = "_static/vendor/fontawesome/webfonts"
THEME_CSS = "_static/styles/pydata-sphinx-theme.css"
# (file stem, CSS family, weight): the theme's three faces.
FACES = (
    ("fa-solid-900", "Font Awesome 6 Free", 900),
    ("fa-regular-400", "Font Awesome 6 Free", 400),
    ("fa-brands-400", "Font Awesome 6 Brands", 400),
)
_ICON_RULE = re.compile(r"([^{}]+)\{content:\"\\([0-9a-f]+)\"\}")
_ICON_CLASS = re.compile(r"\bfa-[a-z0-9-]+")


def icon_codepoints(theme_css: str) -> dict[str, int]:
    """Each `fa-*` icon class of the theme's stylesheet and the code point its `:before` shows.

    >>> icon_codepoints('.fa-github:before{content:"\\\\f09b"}.fa-a:before,.fa-b:before{content:"\\\\41"}')
    {'fa-github': 61595, 'fa-a': 65, 'fa-b': 65}
    """
    found = {}
    for selectors, code in _ICON_RULE.findall(theme_css):
        for selector in selectors.split(","):
            m = re.fullmatch(r"\s*\.(fa-[a-z0-9-]+):before\s*", selector)
            if m:
                found[m.group(1)] = int(code, 16)
    return found


def used_icons(outdir: Path) -> set[str]:
    """The `fa-*` classes of the build's pages and scripts (a nested edition's pages included)."""
    used: set[str] = set()
    for path in [*outdir.rglob("*.html"), *(outdir / "_static").rglob("*.js")]:
        used |= set(_ICON_CLASS.findall(path.read_text(encoding="utf-8", errors="replace")))
    return used


def stylesheet_glyphs(outdir: Path) -> set[int]:
    """The icons the stylesheets draw themselves (admonition titles, external links: `--pst-icon-*`), as
    private-use characters, written literally or escaped, outside the `.fa-*:before` rules."""
    glyphs: set[int] = set()
    for css in (outdir / "_static").rglob("*.css"):
        text = _ICON_RULE.sub("", css.read_text(encoding="utf-8", errors="replace"))
        glyphs |= {ord(c) for c in text if 0xE000 <= ord(c) <= 0xF8FF}
        glyphs |= {int(h, 16) for h in re.findall(r"\\(f[0-9a-f]{3})\b", text)}
    return glyphs


def write_subsets(outdir: Path) -> list[Path]:
    """The subset fonts and `_static/icons.css` of one built edition; returns the files written."""
    from fontTools import subset

    theme = (outdir / THEME_CSS).read_text(encoding="utf-8")
    codes = icon_codepoints(theme)
    wanted = sorted({codes[name] for name in used_icons(outdir) if name in codes} | stylesheet_glyphs(outdir))
    written, rules = [], []
    for stem, family, weight in FACES:
        source = outdir / WEBFONTS / f"{stem}.ttf"
        if not source.is_file():
            continue
        target = source.with_name(f"{stem}.subset.woff")
        options = subset.Options()
        options.flavor = "woff"
        options.layout_features = ["*"]
        font = subset.load_font(str(source), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=wanted)
        subsetter.subset(font)
        subset.save_font(font, str(target), options)
        written.append(target)
        rules.append(f'@font-face{{font-display:block;font-family:"{family}";font-style:normal;'
                     f'font-weight:{weight};src:url(vendor/fontawesome/webfonts/{target.name}) format("woff")}}')
    css = outdir / "_static" / ICONS_CSS
    css.write_text("/* minigpt.book.sphinx_icons: the icon fonts, cut to the icons the site shows. */\n"
                   + "\n".join(rules) + "\n", encoding="utf-8")
    return [*written, css]


def _after_build(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        write_subsets(Path(app.outdir))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_css_file(ICONS_CSS, priority=900)
    app.connect("build-finished", _after_build)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
