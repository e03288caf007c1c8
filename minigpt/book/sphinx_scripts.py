"""Sphinx extension: each page with explorers loads `explorer.js` and the cost scripts its explorers call.

The explorers' HTML carries only a JSON spec (`minigpt.book.explorers`); the scripts are files of the
site (``html_static_path`` adds ``minigpt/web``, so ``_static/costs/flops.js`` and so on). When a page
is written, this reads the functions its specs name and adds `cost_scripts.scripts_for` of them, then
`explorer.js`, to that page only (Sphinx resets a page's added scripts after it); a page without an
explorer loads none of them. The order is core, the rooms, `explorer_plot.js`, then `explorer.js`, after
the scripts of ``html_js_files`` (`i18n.js`, the edition's strings). Every page also gets `screen.css`: the
explorers' layout on a phone and in the dark theme, and long inline code that breaks inside the column.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx

from minigpt.book.cost_scripts import page_functions, scripts_for

EXPLORER_JS = "explorer.js"
EXPLORER_PLOT_JS = "explorer_plot.js"  # the explorers' plots, loaded before explorer.js
SCREEN_CSS = "screen.css"  # every page: explorers on a phone and in the dark theme, long inline code that breaks
PRIORITY = 850  # after html_js_files (800): i18n.js is there before the explorers are wired


def add_explorer_scripts(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any],
                         doctree: Any) -> None:
    """Add the page's cost scripts and `explorer.js` if its body holds an explorer's spec."""
    functions = page_functions(context.get("body", ""))
    if not functions:
        return
    try:
        scripts = scripts_for(functions)
    except ValueError as err:
        raise ValueError(f"page {pagename}: {err}") from err
    for path in [*scripts, EXPLORER_PLOT_JS, EXPLORER_JS]:
        app.add_js_file(path, priority=PRIORITY)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("html-page-context", add_explorer_scripts)
    app.add_css_file(SCREEN_CSS)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
