"""The Spanish edition's reference list: pybtex's `plain` style with its words in Spanish.

`plain` writes its own words between the fields of an entry: "A, B, and C" between authors, "and others"
for the ones a `.bib` entry leaves out, "In" before a proceedings' title, "Technical Report", and the month
names its macros expand to ("October 2023"). Registered as the formatting style `plain_es`, which
`sphinx_editions.configure_edition` chooses for the Spanish edition: "A, B y C", "y otros", "En", "Informe
técnico", "octubre de 2023". The fields themselves (titles, notes) are the `.bib`'s, translated through
locales/es/bibliography.yml where they hold words; titles of works stay as published.
"""

from __future__ import annotations

from typing import Any

from pybtex.database import Entry
from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting import toplevel
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.formatting.unsrt import date, pages
from pybtex.style.template import (
    field,
    first_of,
    names,
    optional,
    optional_field,
    sentence,
    words,
)

STYLE = "plain_es"
MONTHS = ("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre",
          "noviembre", "diciembre")
_ENGLISH_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
                   "october", "november", "december")
OTHERS = "otros"  # "and others" in a .bib's author list


class SpanishPlainStyle(PlainStyle):
    """`plain` with Spanish words (see the module docstring); the order of the fields is unchanged."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        english_name = self.format_name

        def format_name(person: Any, abbreviate: bool = False) -> Any:
            if str(person) == "others":
                return Text(OTHERS)
            return english_name(person, abbreviate)

        self.format_name = format_name

    def format_names(self, role: str, as_sentence: bool = True) -> Any:
        formatted = names(role, sep=", ", sep2=" y ", last_sep=" y ")
        return sentence[formatted] if as_sentence else formatted

    def format_entry(self, label: str, entry: Entry, bib_data: Any = None) -> Any:
        month = entry.fields.get("month", "")
        if month.lower() in _ENGLISH_MONTHS:  # "octubre de 2023": the date template writes month, then year
            spanish = Entry(entry.type, fields={**entry.fields, "month": MONTHS[_ENGLISH_MONTHS.index(month.lower())]
                                                + " de"}, persons=entry.persons)
            spanish.key = entry.key
            entry = spanish
        return super().format_entry(label, entry, bib_data=bib_data)

    def get_inproceedings_template(self, e: Entry) -> Any:
        return toplevel[
            sentence[self.format_names("author")],
            self.format_title(e, "title"),
            words[
                "En",
                sentence[
                    optional[self.format_editor(e, as_sentence=False)],
                    self.format_btitle(e, "booktitle", as_sentence=False),
                    self.format_volume_and_series(e, as_sentence=False),
                    optional[pages],
                ],
                self.format_address_organization_publisher_date(e),
            ],
            sentence[optional_field("note")],
            self.format_web_refs(e),
        ]

    def get_techreport_template(self, e: Entry) -> Any:
        return toplevel[
            sentence[self.format_names("author")],
            self.format_title(e, "title"),
            sentence[
                words[first_of[optional_field("type"), "Informe técnico"], optional_field("number")],
                field("institution"),
                optional_field("address"),
                date,
            ],
            sentence[optional_field("note")],
            self.format_web_refs(e),
        ]


def register() -> None:
    """Make `plain_es` available to sphinxcontrib-bibtex (idempotent)."""
    register_plugin("pybtex.style.formatting", STYLE, SpanishPlainStyle, force=True)


__all__ = ["MONTHS", "OTHERS", "STYLE", "SpanishPlainStyle", "register"]
