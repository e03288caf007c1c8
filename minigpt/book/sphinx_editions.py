"""Sphinx extension for the book's editions (README, "The Spanish edition"); listed in `_config.yml`.

In every edition it adds the language switch: a link at the top of each page to the same page in the
other edition, and `<link rel="alternate" hreflang>` in its head. English is the site's root, Spanish
is `es/` below it.

In a translated edition (Sphinx's `language` other than "en") it also

- lets a translated message paste glued values (`_patch_glue_lookup`);
- writes every glued value the edition's way (`editions.localize_glued`: numbers, and the few glued
  strings with words);
- warns about every message of a page that has no translation, or only a fuzzy one, so that the
  strict build (`-W`) fails until the catalog is complete (coverage is a build error, not a report);
- sorts the glossary by its translated terms (`SortGlossary`);
- points the Colab launch buttons to the edition's generated notebooks (`catalogs.NOTEBOOKS`, English too);
- translates the parts' captions, the site's title and author, and the theme's own strings
  (`locales/<lang>/theme.yml`).
"""

from __future__ import annotations

import hashlib
import html
import json
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util.nodes import extract_messages

from minigpt.book import bibliography_es, catalogs, citations_es, editions
from minigpt.book.sphinx_chrome import translate_chrome

logger = logging.getLogger(__name__)

def _patch_glue_lookup() -> None:
    """myst-nb's glue lookup, falling back to the page's glue data for a translated message.

    Sphinx parses a translated message as a small document of its own, where myst-nb finds no
    notebook and so no glue data. The page's glue data is already on disk by then: myst-nb writes it
    (`<docname>.glue.json` in its output folder) when it parses the notebook, before Sphinx translates.
    """
    from myst_nb.core.variables import VariableOutput
    from myst_nb.ext.glue import crossref, directives, roles, utils

    original = utils.retrieve_glue_data
    if getattr(original, "_minigpt_editions", False):
        return

    def retrieve_glue_data(document: nodes.document, key: str):  # type: ignore[no-untyped-def]
        try:
            return original(document, key)
        except utils.RetrievalError:
            env = getattr(document.settings, "env", None)
            if env is None or not str(document.get("source", "")).endswith("<translated>"):
                raise
            data = crossref.read_glue_cache(env.mystnb_config.output_folder, env.docname)
            if key not in data:
                raise
            return VariableOutput(
                data=data[key]["data"], metadata=data[key].get("metadata", {}), nb_renderer=None, vtype="glue"
            )

    retrieve_glue_data._minigpt_editions = True  # type: ignore[attr-defined]
    for module in (utils, roles, directives):
        if hasattr(module, "retrieve_glue_data"):
            module.retrieve_glue_data = retrieve_glue_data


class LocalizeGlued(SphinxPostTransform):
    """Glued text written the edition's way (runs after glue from other pages is pasted, priority 5)."""

    default_priority = 900

    def run(self, **kwargs: Any) -> None:
        lang = self.config.language
        for node in list(self.document.findall(nodes.inline)):
            if "pasted-text" not in node.get("classes", []):
                continue
            text = node.astext()
            try:
                new = editions.localize_glued(text, lang)
            except editions.UntranslatedGlue as exc:
                logger.warning(
                    "glued text with English words and no entry in locales/%s/glued.yml: %r",
                    lang,
                    exc.args[0],
                    location=node,
                    type="minigpt",
                    subtype="glue",
                )
                continue
            if new != text:
                node.children = [nodes.Text(new)]


def _catalog_index(lang: str, docname: str) -> dict[str, tuple[str, bool]]:
    path = catalogs.catalog_path(docname, lang)
    if not path.exists():
        return {}
    return {m.id: (m.string, m.fuzzy) for m in catalogs.read(path) if m.id}


def check_translated(app: Sphinx, doctree: nodes.document) -> None:
    """Warn for every message of the page left in English (no translation, an empty or a fuzzy one)."""
    lang = app.config.language
    docname = app.env.docname
    index = _catalog_index(lang, docname)
    missing = 0
    first = ""
    for node, msg in extract_messages(doctree):
        if node.get("translated") or not msg.strip():
            continue  # translated, or an empty message (a toctree without a caption)
        string, fuzzy = index.get(msg, ("", False))
        if string and not fuzzy:
            continue  # translated as itself (maths, a name)
        missing += 1
        first = first or msg
    if missing:
        logger.warning(
            "%d message(s) of %s have no %s translation (or a fuzzy one), e.g. %r: run `make translations`"
            " and translate them in %s",
            missing,
            docname,
            lang,
            first[:80],
            catalogs.catalog_path(docname, lang).relative_to(catalogs.ROOT),
            location=docname,
            type="minigpt",
            subtype="untranslated",
        )


def _other_edition(pagename: str, lang: str) -> tuple[str, str]:
    """(language, relative URL) of the same page in the other edition."""
    up = "../" * pagename.count("/")
    if lang == "en":
        return "es", f"{up}es/{pagename}.html"
    return "en", f"../{up}{pagename}.html"


def add_switch(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """The language switch: a link to the same page in the other edition, and hreflang in the head."""
    lang = app.config.language or "en"
    other, url = _other_edition(pagename, lang)
    name = editions.LANG_NAMES[lang][other]  # named in the page's language: "en inglés", "in Spanish"
    label = {"en": "Read this page in", "es": "Lee esta página en"}[lang]
    link = (
        f'<p class="minigpt-lang-switch" style="text-align:right;margin:0 0 0.5em 0;font-size:0.9em">'
        f'{label} <a href="{html.escape(url)}" hreflang="{other}">{name}</a></p>\n'
    )
    context["body"] = link + context.get("body", "")
    context["metatags"] = context.get("metatags", "") + (
        f'<link rel="alternate" hreflang="{other}" href="{html.escape(url)}" />\n'
    )


EDITION_TITLES = {"es": ("Prefill & Decode — un libro ejecutable", "los autores de Prefill & Decode")}


def configure_edition(app: Sphinx, config: Any) -> None:
    """An edition's settings: Colab buttons opening its generated notebooks (every edition, English included:
    locales/<lang>/notebooks/, their MyST markup resolved); a translated one's title and author."""
    lang = config.language or "en"
    options = dict(config.html_theme_options or {})
    options["path_to_docs"] = f"locales/{lang}/{catalogs.NOTEBOOKS}"
    if lang == "en":
        config.html_theme_options = options
        return
    table = editions.theme_strings(lang)
    if "search_bar_text" in options:
        options["search_bar_text"] = table.get(options["search_bar_text"], options["search_bar_text"])
    config.html_theme_options = options
    if lang in EDITION_TITLES:
        config.html_title, config.author = EDITION_TITLES[lang]
    if lang == "es" and config.bibtex_reference_style == "author_year":
        citations_es.register()  # "Hashimoto y Liang, 2025", "s. f."
        config.bibtex_reference_style = citations_es.STYLE
    if lang == "es" and getattr(config, "bibtex_default_style", None) == "plain":
        bibliography_es.register()  # the reference list: "A, B y C", "En", "octubre de 2023"
        config.bibtex_default_style = bibliography_es.STYLE
    # Sphinx re-reads every page when a config value changes: the tables count as configuration.
    tables = sorted((catalogs.LOCALES / lang).glob("*.yml"))
    config.minigpt_edition_tables = hashlib.sha256(b"".join(p.read_bytes() for p in tables)).hexdigest()
    bibfiles = []
    for name in config.bibtex_bibfiles or []:
        text, missing = editions.translate_bibliography((Path(app.srcdir) / name).read_text(encoding="utf-8"), lang)
        if missing:
            raise ExtensionError(
                f"{name}: fields with words and no {lang} translation in locales/{lang}/bibliography.yml: {missing}"
            )
        out = Path(app.srcdir) / "_build" / "bib" / f"{Path(name).stem}.{lang}.bib"
        out.parent.mkdir(parents=True, exist_ok=True)
        if not out.exists() or out.read_text(encoding="utf-8") != text:
            out.write_text(text, encoding="utf-8")
        bibfiles.append(str(out))
    config.bibtex_bibfiles = bibfiles


class TranslateToctreeCaptions(SphinxTransform):
    """The parts' captions of the table of contents, from the root page's catalog.

    sphinx-external-toc inserts the toctrees (priority 100) after Sphinx translated the page (20), so
    their captions are translated here, from the same messages the gettext builder extracted.
    """

    default_priority = 150

    def apply(self, **kwargs: Any) -> None:
        index = None
        for node in self.document.findall(addnodes.toctree):
            caption = node.get("caption")
            if not caption:
                continue
            index = index if index is not None else _catalog_index(self.config.language, self.env.docname)
            string, fuzzy = index.get(caption, ("", False))
            if string and not fuzzy:
                node["caption"] = string


class SortGlossary(SphinxTransform):
    """A glossary in the edition's alphabetical order (`editions.collation_key`), once its terms are translated.

    The English page lists its terms in English order; translated (Sphinx's Locale, priority 20), they are
    sorted again by their translated text, each term with its definition and its anchor.
    """

    default_priority = 30

    def apply(self, **kwargs: Any) -> None:
        sort_glossaries(self.document, self.config.language)


def sort_glossaries(document: nodes.Node, lang: str) -> None:
    """Every glossary of a doctree with its entries in `lang`'s alphabetical order (by their first term)."""
    for glossary in document.findall(addnodes.glossary):
        for entries in glossary.findall(nodes.definition_list):
            items = list(entries.children)
            items.sort(key=lambda item: editions.collation_key(item.next_node(nodes.term).astext(), lang))
            entries.children = items


def add_ui_strings(app: Sphinx) -> None:
    """The edition's table of interface strings (explorers, MiniGPT live), for the page scripts.

    `globalThis.MiniGPTStrings = {lang, strings}` in every page's head, from `locales/<lang>/ui.yml`;
    `minigpt/web/explorer.js` and `minigpt_live.js` look their English strings up in it.
    """
    lang = app.config.language
    table = editions.ui_strings(lang)
    payload = json.dumps({"lang": lang, "strings": table}, ensure_ascii=False, sort_keys=True)
    app.add_js_file(None, body="globalThis.MiniGPTStrings = " + payload.replace("</", "<\\/") + ";", priority=200)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("minigpt_edition_tables", "", "env")
    app.connect("config-inited", configure_edition)
    app.connect("html-page-context", add_switch)
    if (app.config.language or "en") != "en":
        add_ui_strings(app)
        app.add_transform(TranslateToctreeCaptions)
        app.add_transform(SortGlossary)
        app.connect("build-finished", translate_chrome)
        _patch_glue_lookup()
        app.add_post_transform(LocalizeGlued)
        app.connect("doctree-read", check_translated)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
