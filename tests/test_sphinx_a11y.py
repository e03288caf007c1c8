"""The build's accessibility fixes (minigpt.book.sphinx_a11y) on the theme's own markup: each rewrite hits
what axe-core reported and nothing else. The whole built site is checked by axe-core itself in each page's
visit (tests/site_checks.py, `axe_problems`)."""

from __future__ import annotations

from minigpt.book.sphinx_a11y import SECTIONS, accessible

SEARCH = ('<button class="btn search-button-field search-button__button pst-js-only" title="Search" '
          'aria-label="Search" data-bs-placement="bottom">')
ICON = ('<button class="btn btn-sm pst-navbar-icon search-button search-button__button pst-js-only" '
        'title="Search" aria-label="Search">')


def test_the_search_field_is_named_by_its_text_and_the_icon_button_keeps_its_name() -> None:
    """The field shows "Search Ctrl+K": an aria-label of "Search" hides the shortcut (Label in Name). The
    icon-only button shows no text, so its aria-label is its only name and must stay."""
    out = accessible(SEARCH + ICON)
    assert 'aria-label' not in out.split(ICON)[0] and 'title="Search"' in out
    assert ICON in out


def test_toggles_are_named() -> None:
    toc = '<details{}><summary><span class="toctree-toggle" role="presentation"><i></i></span></summary>'
    for state in ("", ' open="open"'):
        out = accessible(toc.format(state))
        assert f'<details{state}><summary aria-label="{SECTIONS}"><span class="toctree-toggle"' in out, out
    assert accessible('<summary aria-label="Toggle hidden content">\n<p>Show</p>') == "<summary>\n<p>Show</p>"


def test_bibliography_items_are_list_items_and_other_pages_are_unchanged() -> None:
    refs = '<div role="list" class="citation-list">\n<div class="citation" id="a" role="doc-biblioentry">'
    assert accessible(refs) == refs.replace("doc-biblioentry", "listitem")
    plain = '<p aria-label="Search">x</p><summary>y</summary><details><summary>z</summary>'
    assert accessible(plain) == plain
