"""The Spanish edition's citations: "Hashimoto y Liang, 2025", "(… s. f.)", instead of "and" and "n.d.".

sphinxcontrib-bibtex's author-year referencing style with Spanish words: persons joined by "y" (with no
comma before it: "A, B y C"), and "s. f." (*sin fecha*) for a work without a year. Registered as the
referencing style `author_year_es`, which `sphinx_editions.configure_edition` chooses for the Spanish
edition; the English edition keeps `author_year`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pybtex.style.template import field as bib_field
from pybtex.style.template import first_of, join, node, optional
from sphinxcontrib.bibtex.plugin import register_plugin
from sphinxcontrib.bibtex.style.referencing import PersonStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle
from sphinxcontrib.bibtex.style.referencing.basic_author_year import (
    BasicAuthorYearParentheticalReferenceStyle,
    BasicAuthorYearTextualReferenceStyle,
)
from sphinxcontrib.bibtex.style.referencing.extra_year import ExtraYearReferenceStyle
from sphinxcontrib.bibtex.style.template import join2, post_text, pre_text, reference

STYLE = "author_year_es"
NO_DATE = "s. f."  # the year of a work without one (RAE: "sin fecha")


@node
def year_es(children: list, data: dict[str, Any]) -> Any:
    """The year, or "s. f." where the entry has none (sphinxcontrib-bibtex's `year` writes "n.d.")."""
    assert not children
    return first_of[optional[bib_field("year")], NO_DATE].format_data(data)


@dataclass
class _Parenthetical(BasicAuthorYearParentheticalReferenceStyle):
    def inner(self, role_name: str) -> Any:
        return join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[
            pre_text,
            reference[join(sep=self.author_year_sep)[self.person.author_or_editor_or_title(full="s" in role_name),
                                                     year_es]],
            post_text,
        ]


@dataclass
class _Textual(BasicAuthorYearTextualReferenceStyle):
    def inner(self, role_name: str) -> Any:
        return join(sep=self.text_reference_sep)[
            self.person.author_or_editor_or_title(full="s" in role_name),
            join[
                self.bracket.left,
                join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[pre_text, reference[year_es], post_text],
                self.bracket.right,
            ],
        ]


@dataclass
class _Year(ExtraYearReferenceStyle):
    def inner(self, role_name: str) -> Any:
        return reference[year_es]


def _spanish_persons() -> PersonStyle:
    return PersonStyle(sep2=" y ", last_sep=" y ")


@dataclass
class SpanishAuthorYearReferenceStyle(AuthorYearReferenceStyle):
    """`author_year` with "y" between persons and "s. f." for no year (the roles and brackets unchanged)."""

    person: PersonStyle = field(default_factory=_spanish_persons)

    def __post_init__(self) -> None:
        super().__post_init__()
        spanish = {
            BasicAuthorYearParentheticalReferenceStyle: lambda s: _Parenthetical(
                bracket=s.bracket, person=s.person, author_year_sep=s.author_year_sep, pre_text_sep=s.pre_text_sep,
                post_text_sep=s.post_text_sep),
            BasicAuthorYearTextualReferenceStyle: lambda s: _Textual(
                bracket=s.bracket, person=s.person, text_reference_sep=s.text_reference_sep,
                pre_text_sep=s.pre_text_sep, post_text_sep=s.post_text_sep),
            ExtraYearReferenceStyle: lambda s: _Year(bracket=s.bracket),
        }
        self.styles = [spanish[type(s)](s) if type(s) in spanish else s for s in self.styles]
        self.role_style = {}
        for style in self.styles:
            self.role_style.update((name, style) for name in style.role_names())


def register() -> None:
    """Make `author_year_es` available to sphinxcontrib-bibtex (idempotent)."""
    register_plugin("sphinxcontrib.bibtex.style.referencing", STYLE, SpanishAuthorYearReferenceStyle, force=True)


__all__ = ["NO_DATE", "STYLE", "SpanishAuthorYearReferenceStyle", "register"]
