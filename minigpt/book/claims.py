"""The claims ledger, `references/claims.yml`: every sentence of the book that says what a real system
does (a default, a flag, a kernel, a design choice, a number from its code or docs) names an entry here,
with the system's version or commit that was checked, the source (file and line, or page), the date
checked and a short quote.

A page marks such a sentence with the role ``{claim}`id` ``; the build renders it as the version checked
("[vLLM v0.11.2]"), linked to the entry in the appendix "Claims checked" (the ``{claims-ledger}``
directive, `minigpt.book.sphinx_claims`). `tests/test_claims.py` fails on a sentence that names one of
the ledger's `systems` with no marker, unless the ledger lists it under `mentions` (it names the system
and states nothing about it, or states a paper's result with its citation) or `unchecked` (not yet
checked: `make claims-report` lists them, with the entries older than `max_age_days`).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

FIELDS = ("system", "version", "source", "url", "checked", "quote", "statement", "statement_es")
OPTIONAL = ("source_es",)  # the source in Spanish words, required where the source has prose words
ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# A token of a source or version that reads the same in both editions: a path, a file, a line range, a
# commit, a flag or an identifier (it holds one of / . _ : @ = or a digit, starts with --, or has a capital
# after its first letter: EngineArgs, CUDA). Every other word is prose, in some language, hyphenated
# words ("tensor-parallel") included.
_CODE_LIKE = re.compile(r"[/._:@=\d]|^--|^\w[^A-Z]*[A-Z]")


def prose_words(text: str) -> list[str]:
    """The words of `text` that are prose, not code ("the v0.2 model card" -> the, model, card)."""
    return [w for w in re.split(r"[\s,;()`]+", text) if re.search(r"[^\W\d_]", w) and not _CODE_LIKE.search(w)]


@dataclass(frozen=True)
class Claim:
    """One entry: what `system` at `version` does, as `source` shows (`quote`), checked on `checked`."""

    id: str
    system: str
    version: str
    source: str
    url: str
    checked: dt.date
    quote: str
    statement: str
    statement_es: str  # the same statement in the Spanish edition (its appendix shows no English)
    source_es: str = ""  # the source in the Spanish edition, where the source has prose words

    def source_in(self, language: str) -> str:
        """The source as the edition shows it: in Spanish words where it has any prose, else as written."""
        return self.source_es if language == "es" and self.source_es else self.source

    def statement_in(self, language: str) -> str:
        """The statement in the edition's language ("es" or any other for English)."""
        return self.statement_es if language == "es" else self.statement

    @property
    def label(self) -> str:
        """The text the role shows: the system and the version checked."""
        return f"{self.system} {self.version}"

    @property
    def anchor(self) -> str:
        return f"claim-{self.id}"


@dataclass(frozen=True)
class Ledger:
    claims: dict[str, Claim]
    systems: tuple[str, ...]
    max_age_days: int
    mentions: tuple[dict[str, str], ...]
    unchecked: tuple[dict[str, str], ...]

    def stale(self, today: dt.date, days: int | None = None) -> list[Claim]:
        """The entries checked more than `days` (default `max_age_days`) before `today`, oldest first."""
        age = self.max_age_days if days is None else days
        old = [c for c in self.claims.values() if (today - c.checked).days > age]
        return sorted(old, key=lambda c: (c.checked, c.id))


def _claim(key: object, entry: object) -> Claim:
    if not isinstance(key, str) or not ID.fullmatch(key):
        raise ValueError(f"claims: an id must be lower-case words joined by '-', got {key!r}")
    if not isinstance(entry, dict):
        raise ValueError(f"claims.{key}: an entry must be a mapping of {', '.join(FIELDS)}, got {entry!r}")
    unknown = sorted(set(entry) - set(FIELDS) - set(OPTIONAL))
    missing = [f for f in FIELDS if f not in entry]
    if unknown or missing:
        raise ValueError(f"claims.{key}: fields must be exactly {', '.join(FIELDS)} (and {', '.join(OPTIONAL)} "
                         f"where needed); missing {missing}, unknown {unknown}")
    checked = entry["checked"]
    if isinstance(checked, str):
        try:
            checked = dt.date.fromisoformat(checked)
        except ValueError:
            checked = None
    if not isinstance(checked, dt.date):
        raise ValueError(f"claims.{key}.checked: a date YYYY-MM-DD, got {entry['checked']!r}")
    for field in ("system", "version", "source", "url", "quote", "statement", "statement_es"):
        if not isinstance(entry[field], str) or not entry[field].strip():
            raise ValueError(f"claims.{key}.{field}: a non-empty string, got {entry[field]!r}")
    if not entry["url"].startswith("https://"):
        raise ValueError(f"claims.{key}.url: an https:// address, got {entry['url']!r}")
    # The version is the bracket both editions' prose show ("[vLLM v0.33.0]"): code and numbers only.
    if words := prose_words(entry["version"]):
        raise ValueError(f"claims.{key}.version: a tag, commit or date that reads the same in both editions, "
                         f"without the words {words}; got {entry['version']!r}")
    source_es = entry.get("source_es", "")
    if "source_es" in entry and (not isinstance(source_es, str) or not source_es.strip()):
        raise ValueError(f"claims.{key}.source_es: a non-empty string, got {source_es!r}")
    if (words := prose_words(entry["source"])) and not source_es:
        raise ValueError(f"claims.{key}.source_es: the source has the words {words}, which the Spanish appendix "
                         f"would show in English; give the source in Spanish")
    return Claim(key, entry["system"], entry["version"], entry["source"], entry["url"], checked,
                 entry["quote"], entry["statement"], entry["statement_es"], source_es)


def _sentences(raw: object, name: str, fields: tuple[str, ...]) -> tuple[dict[str, str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValueError(f"{name}: a list of {{{', '.join(fields)}}}, got {type(raw).__name__}")
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or sorted(item) != sorted(fields) or not all(
                isinstance(item[f], str) and item[f].strip() for f in fields):
            raise ValueError(f"{name}[{i}]: exactly the non-empty strings {', '.join(fields)}, got {item!r}")
    return tuple(raw)


def parse(data: Any) -> Ledger:
    """A `Ledger` from the YAML's data; a clear error names the entry and the field that is wrong."""
    if not isinstance(data, dict) or not isinstance(data.get("claims"), dict):
        raise ValueError("the ledger must be a mapping with a 'claims' mapping")
    systems = data.get("systems")
    if not isinstance(systems, list) or not systems or not all(isinstance(s, str) and s for s in systems):
        raise ValueError(f"systems: a non-empty list of names, got {systems!r}")
    age = data.get("max_age_days")
    if not isinstance(age, int) or isinstance(age, bool) or age < 1:
        raise ValueError(f"max_age_days: an integer >= 1, got {age!r}")
    claims = {key: _claim(key, entry) for key, entry in data["claims"].items()}
    return Ledger(claims, tuple(systems), age, _sentences(data.get("mentions"), "mentions", ("page", "text", "why")),
                  _sentences(data.get("unchecked"), "unchecked", ("page", "text")))


def load(path: Path) -> Ledger:
    """The ledger at `path` (the book's is `references/claims.yml`)."""
    return parse(yaml.safe_load(path.read_text(encoding="utf-8")))


MARKER = re.compile(r"\{claim\}`([^`]+)`")


def markers(text: str) -> list[str]:
    """The ids of the ``{claim}`id` `` markers in `text`, in order."""
    return MARKER.findall(text)
