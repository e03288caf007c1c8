"""The notebooks the Colab buttons open (locales/<lang>/notebooks/): fresh, and with no MyST markup left.

Colab renders Markdown, not MyST: a `{glue:text}` role would show its key where the number belongs, a
`{term}` its English target, a `](#eq-1-2)` link would point nowhere. minigpt.book.colab_notebooks resolves
them; these tests catch a generated notebook left stale after its source changed, markup the resolver
misses, and links or anchors that do not match what the published site names.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from minigpt.book import colab_notebooks as C

ROOT = Path(__file__).resolve().parents[1]
GENERATED = sorted((ROOT / "locales").glob("*/notebooks/**/*.ipynb"))


def _script():
    spec = importlib.util.spec_from_file_location("colab_script", ROOT / "scripts" / "book" / "colab_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_english_colab_notebooks_are_fresh():
    """Catches: a chapter re-executed or edited without `python scripts/book/colab_notebooks.py` (Colab would
    open the old text and numbers), or a generated notebook left behind for a page that no longer exists."""
    assert _script().main(["--check"]) == 0, "run: python scripts/book/colab_notebooks.py"


def test_named_pages_are_generated_alone(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture):
    """Catches: naming one page still reading every other (so one chapter mid-edit, not yet re-executed,
    stopped the page a maintainer was regenerating), or removing the other pages' copies as gone; and a
    misspelt page passing silently."""
    script = _script()
    page = "chapters/03_decode_memory_bound"

    def only(name: str) -> str:
        assert name == page, f"read {name}"
        return (ROOT / "locales" / "en" / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8")

    monkeypatch.setattr(script, "colab_text", only)
    assert script.main(["--check", page]) == 0
    with pytest.raises(SystemExit):
        script.main(["--check", "chapters/03_decode"])
    assert "pages: chapters/03_decode is no notebook page" in capsys.readouterr().err


def test_every_notebook_page_has_its_colab_notebook_in_each_edition():
    """Catches: a page whose Colab button opens a missing file (English or Spanish)."""
    pages = _script().pages()
    assert len(pages) >= 40
    for lang in ("en", "es"):
        missing = [p for p in pages if not (ROOT / "locales" / lang / "notebooks" / f"{p}.ipynb").is_file()]
        assert not missing, (lang, missing)


@pytest.mark.parametrize("path", GENERATED, ids=lambda p: p.relative_to(ROOT / "locales").as_posix())
def test_generated_notebook_holds_no_myst_markup(path):
    """Catches: a role or a same-page link the resolver does not handle, shown raw in Colab."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    text = "".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    assert C.leftover_markup(notebook) == []
    for marker in ("{glue", "{term", "{cite", "{claim", "](#", ".ipynb)", ".md)"):
        assert marker not in text, marker


def _page(page: str = "chapters/03_decode_memory_bound", lang: str = "en", glued=None) -> C.Page:
    return C.Page(page, lang, glued or {}, {})


def test_links_resolve_to_the_published_page_that_holds_the_target():
    """Catches: a cross-reference kept relative (nowhere in Colab) or sent to the current page when another
    page defines the label."""
    site = C.site_url()
    page = _page()
    assert page.link("#eq-1-2") == f"{site}chapters/01_prefill_vs_decode.html#eq-1-2"
    assert page.link("../exercises/ex03_decode_memory_bound.ipynb") == f"{site}exercises/ex03_decode_memory_bound.html"
    assert page.link("02_kv_cache_memory.ipynb#sec-x") == f"{site}chapters/02_kv_cache_memory.html#sec-x"
    assert page.link("#a-heading-of-this-page") == f"{site}chapters/03_decode_memory_bound.html#a-heading-of-this-page"
    assert page.link("https://example.org/x") == "https://example.org/x"
    assert _page(lang="es").link("#eq-1-2") == f"{site}es/chapters/01_prefill_vs_decode.html#eq-1-2"


def test_roles_become_text_linking_to_the_site():
    """Catches: a term linked to an id Sphinx does not write (it drops non-ASCII letters: the en dash),
    a citation without its author-year text, a glued string shown with its quotes or in English numbers."""
    site = C.site_url()
    page = _page(glued={"n": {"text/plain": "'32,768'"}, "x": {"text/plain": "0.25"}})
    out = C.resolve_markdown("{term}`frontier <Latency–throughput frontier>` {term}`prefill`", page)
    assert out == (f"[frontier]({site}appendices/glossary.html#term-Latencythroughput-frontier) "
                   f"[prefill]({site}appendices/glossary.html#term-Prefill)")
    assert C.resolve_markdown("{cite}`dao2022flashattention`", page) == (
        f"[[Dao et al., 2022]]({site}appendices/references.html)")
    assert C.resolve_markdown("S = {glue:text}`n`, {glue:text}`x:.1%`", page) == "S = 32,768, 25.0%"
    spanish = _page(lang="es", glued={"n": {"text/plain": "'32,768'"}})
    assert C.resolve_markdown("S = {glue:text}`n`", spanish) == "S = 32\u202f768"
    with pytest.raises(KeyError, match="no glued value 'missing'"):
        C.resolve_markdown("{glue:text}`missing`", page)


def test_the_repository_address_names_the_site():
    """Catches: a site address written somewhere else than the repository's one setting (_config.yml)."""
    url, _ = C.repository()
    owner, name = url.removeprefix("https://github.com/").split("/")
    assert C.site_url() == f"https://{owner.lower()}.github.io/{name}/"
    assert C.site_url("es") == C.site_url() + "es/"


def test_every_editions_launch_button_opens_its_generated_notebooks():
    """Catches: the English site's Colab (rocket) button left on the raw source notebook."""
    from types import SimpleNamespace

    from minigpt.book import sphinx_editions

    for lang in ("en", "es"):
        config = SimpleNamespace(language=lang, html_theme_options={"search_bar_text": "Search this book..."},
                                 bibtex_bibfiles=[], bibtex_reference_style="author_year")
        sphinx_editions.configure_edition(SimpleNamespace(srcdir=str(ROOT)), config)  # type: ignore[arg-type]
        assert config.html_theme_options["path_to_docs"] == f"locales/{lang}/notebooks"


def test_directives_become_plain_markdown():
    """Catches: a literalinclude left as a raw directive or showing the wrong lines (a method looked up at the
    module's top level, decorators dropped, a quoted start-at not found), an admonition without its title."""
    from minigpt.book import colab_directives as D

    blob = "https://github.com/o/n/blob/main/".__add__
    out = D.resolve_directives("```{literalinclude} ../minigpt/runtime/generate.py\n:language: python\n"
                               ":pyobject: prefill\n```", "chapters/x", blob)
    assert out.startswith("From [`minigpt/runtime/generate.py`](https://github.com/o/n/blob/main/minigpt/runtime/")
    assert "```python\n@torch.no_grad()\ndef prefill(" in out and out.endswith("\n```")
    method = D.resolve_directives("```{literalinclude} ../minigpt/runtime/kv_cache.py\n:pyobject: KVCache.update\n"
                                  "```", "chapters/x", blob, "es")
    assert method.startswith("De ") and "    def update(" in method and "class KVCache" not in method
    between = D.resolve_directives('```{literalinclude} ../minigpt/costs/presets.py\n:start-at: "FAMILY: dict"\n'
                                   ':end-at: "}"\n```', "chapters/x", blob)
    assert "FAMILY: dict" in between.splitlines()[3] and between.splitlines()[-2].strip().endswith("}")
    note = D.resolve_directives("```{admonition} Erratum\n:class: tip\n:name: x\n\nOne.\n\nTwo.\n```", "c/x", blob)
    assert note == "> **Erratum**\n>\n> One.\n>\n> Two."


def test_a_glued_figure_keeps_its_caption_and_its_number():
    """Catches: the figure's option lines read past their line (`.*` under re.S), swallowing the caption, so
    Colab showed the image with no caption; and a chapter past the eighth left unnumbered in Colab although
    the site numbers its figures ("Fig. 16.1")."""
    fig = {"image/png": "iVBORw0KGgo="}
    source = ("```{glue:figure} ch16_fig\n:name: fig-ch16-merge\n\nSplitting the cache *fills* the SMs.\n"
              "Two lines of caption.\n```\n\nAfter.")
    page = C.Page("chapters/16_flash_decoding", "en", {"ch16_fig": fig}, {"fig-ch16-merge": "16.1"})
    out = C.resolve_markdown(source, page, {})
    assert out.startswith("![Fig. 16.1. Splitting the cache *fills* the SMs.](attachment:ch16_fig.png)\n\n"
                          "**Fig. 16.1.** Splitting the cache *fills*")
    assert "Two lines of caption." in out and out.endswith("After.")
    notebook = {"cells": [{"cell_type": "markdown", "source": [source]},
                          {"cell_type": "markdown", "source": ["```{glue:figure} b\n:name: fig-b\n\nB.\n```"]}]}
    assert C.figure_numbers(notebook, "chapters/16_flash_decoding") == {"fig-ch16-merge": "16.1", "fig-b": "16.2"}


def test_a_glued_figures_alt_text_states_its_finding():
    """Catches: the image's alt text left as the glue name ("ch3_fig_roofs"), which is what a screen reader
    reads in Colab, where the site reads the caption's first sentence; and markup (a glued number, a role, a
    link's brackets) left in the alt text, where a "]" ends it early."""
    fig = {"image/png": "iVBORw0KGgo="}
    glued = {"ch3_fig": fig, "ch3_n": {"text/plain": "'295'"}}
    source = ("```{glue:figure} ch3_fig\n:name: fig-ch3-roofs\n\nThe ridge is at {glue:text}`ch3_n` FLOP/byte "
              "on [the H100](#sec-x) {cite}`williams2009roofline`. Second sentence.\n```")
    page = C.Page("chapters/03_decode_memory_bound", "en", glued, {"fig-ch3-roofs": "3.2"})
    alt = C.resolve_markdown(source, page, {}).split("](attachment:")[0]
    assert alt.startswith("![Fig. 3.2. The ridge is at 295 FLOP/byte on the H100 (")
    assert alt.endswith(").") and "Second" not in alt and "{" not in alt and "]" not in alt[2:]
    es = C.Page("chapters/03_decode_memory_bound", "es", glued, {"fig-ch3-roofs": "3.2"})
    assert C.resolve_markdown(source, es, {}).startswith("![Figura 3.2. The ridge is at 295")


def test_a_code_cells_figure_caption_follows_it_as_text():
    """Catches: a figure shown by its code cell (`show_figure`), whose caption and label live in the cell's
    `mystnb.figure` metadata: the site shows them, Colab shows no metadata, so its figure had no caption."""
    figure = {"name": "fig-ch14-x", "caption": "**Chunks cut the tail.** See [Eq. (1.2)](#eq-1-2)."}
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": "c1", "metadata": {"mystnb": {"figure": figure}}, "source": ["x = 1"],
         "outputs": [], "execution_count": None},
        {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": ["After."]}]}
    out = C.colab_notebook(notebook, "chapters/14_chunked_prefill")
    kinds = [(c["cell_type"], c.get("id")) for c in out["cells"]]
    assert kinds == [("code", "c1"), ("markdown", "c1-caption"), ("markdown", "m1")]
    text = "".join(out["cells"][1]["source"])
    assert text.startswith("**Fig. 14.1.** **Chunks cut the tail.** See [Eq. (1.2)](https://") and "](#" not in text
