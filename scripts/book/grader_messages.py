"""The catalog of the graded exercises' feedback: extract the messages, merge them into the .po, compile the .mo.

    python scripts/book/grader_messages.py          # update minigpt/locales/*/LC_MESSAGES/minigpt.po, compile the .mo
    python scripts/book/grader_messages.py --check  # exit 1 unless every catalog is in step, translated and compiled

The messages are the strings the feedback code marks with ``_("...")`` (translated where they are made) or
``N_("...")`` (marked, translated where they are shown: the questions' hints, the grading child's messages) in
`minigpt.exercises`, `minigpt.grading` and `minigpt.i18n`, found by babel's Python extractor. Updating merges
them into each language's ``minigpt.po`` the way ``msgmerge`` does (babel's ``Catalog.update``): a translation
is kept while its msgid is unchanged, a msgid that changed a little keeps its old translation marked fuzzy
(to be checked and unmarked by hand), a new one arrives untranslated, one gone from the code is dropped. The
``.mo`` is compiled from the ``.po`` without the fuzzy entries (``babel.messages.mofile.write_mo``); both are
committed and the ``.mo`` ships with the package (a student's Colab may lack babel).

``--check`` fails when the code holds a message the .po lacks or the .po one the code no longer holds, when a
message is untranslated or fuzzy, when a translation's ``{fields}`` are not the msgid's, or when the .mo does not
hold exactly the .po's translations (not recompiled since the .po changed).
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "minigpt"
LOCALES = PACKAGE / "locales"
DOMAIN = "minigpt"
LANGUAGES = ("es",)
KEYWORDS = {"_": None, "N_": None}
# Where the feedback's messages live (paths relative to the package); everything else is not scanned.
METHOD_MAP = [("exercises/*.py", "python"), ("grading/*.py", "python"), ("i18n.py", "python"),
              ("book/notebook.py", "python")]  # book: the kernel note of live widgets
HEADER = ("# The graded exercises' feedback ({lang}): check(), hints, grader verdicts.\n"
          "# Made by scripts/book/grader_messages.py from the _() and N_() messages of\n"
          "# the code: translate the msgstr lines, remove each fuzzy flag once\n"
          "# checked, then run the script again to compile the .mo.\n#")
FIELD = re.compile(r"\{(\w*)(?:![rsa])?(?::[^{}]*)?\}")


def po_path(lang: str) -> Path:
    return LOCALES / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def mo_path(lang: str) -> Path:
    return LOCALES / lang / "LC_MESSAGES" / f"{DOMAIN}.mo"


def template() -> Catalog:
    """Every message the code marks, with where it is (paths relative to the repository)."""
    catalog = Catalog(domain=DOMAIN, project="minigpt", fuzzy=False)
    for filename, lineno, message, comments, context in extract_from_dir(
            str(PACKAGE), METHOD_MAP, keywords=KEYWORDS, comment_tags=("TRANSLATORS:",), strip_comment_tags=True):
        if not isinstance(message, str) or not message:
            continue
        catalog.add(message, None, [(f"minigpt/{filename}", lineno)], auto_comments=comments, context=context)
    return catalog


def read_catalog(lang: str) -> Catalog | None:
    path = po_path(lang)
    if not path.is_file():
        return None
    with open(path, "rb") as f:
        return read_po(f, locale=lang, domain=DOMAIN)


def merged(lang: str, pot: Catalog) -> Catalog:
    """The language's catalog updated to `pot` (translations kept, changed msgids fuzzy, removed ones dropped)."""
    catalog = read_catalog(lang)
    if catalog is None:
        now = datetime.now(timezone.utc).replace(second=0, microsecond=0)
        catalog = Catalog(locale=lang, domain=DOMAIN, project="minigpt", version="0.1.0", creation_date=now,
                          revision_date=now, fuzzy=False, copyright_holder="the authors of Prefill & Decode",
                          last_translator="the authors of Prefill & Decode",
                          language_team=f"{lang} <the authors of Prefill & Decode>",
                          header_comment=HEADER.format(lang=lang))
    pot.creation_date = catalog.creation_date  # the file changes only when its messages do
    catalog.update(pot, update_header_comment=False)
    catalog.obsolete.clear()
    return catalog


def render_po(catalog: Catalog) -> bytes:
    buf = io.BytesIO()
    write_po(buf, catalog, width=100, ignore_obsolete=True, include_previous=True)
    return buf.getvalue()


def render_mo(catalog: Catalog) -> bytes:
    buf = io.BytesIO()
    write_mo(buf, catalog, use_fuzzy=False)
    return buf.getvalue()


def fields(text: str) -> list[str]:
    return sorted(FIELD.findall(text))


def problems(lang: str, pot: Catalog) -> list[str]:
    """Why the language's .po and .mo are not in step with the code (empty when they are)."""
    catalog = read_catalog(lang)
    if catalog is None:
        return [f"{po_path(lang).relative_to(ROOT)} is missing: run scripts/book/grader_messages.py"]
    found = []
    code = {m.id for m in pot if m.id}
    po = {m.id for m in catalog if m.id}
    found += [f"in the code, not in the .po: {m!r}" for m in sorted(code - po)]
    found += [f"in the .po, no longer in the code: {m!r}" for m in sorted(po - code)]
    for m in catalog:
        if not m.id:
            continue
        if not m.string:
            found.append(f"untranslated: {m.id!r}")
        elif m.fuzzy:
            found.append(f"fuzzy (check the translation, then remove the fuzzy flag): {m.id!r}")
        elif fields(m.id) != fields(m.string):
            found.append(f"the translation's fields {fields(m.string)} are not the msgid's {fields(m.id)}: {m.id!r}")
    path = mo_path(lang)
    if not path.is_file():
        found.append(f"{path.relative_to(ROOT)} is missing: run scripts/book/grader_messages.py")
    else:
        with open(path, "rb") as f:
            compiled = {m.id: m.string for m in read_mo(f) if m.id}
        wanted = {m.id: m.string for m in catalog if m.id and m.string and not m.fuzzy}
        if compiled != wanted:
            found.append(f"{path.relative_to(ROOT)} is stale: run scripts/book/grader_messages.py to compile it")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 unless every catalog is in step and complete")
    args = parser.parse_args(argv)
    pot = template()
    if args.check:
        found = [f"{lang}: {p}" for lang in LANGUAGES for p in problems(lang, pot)]
        for line in found:
            print(line, file=sys.stderr)
        print(f"{len(pot)} messages; " + ("catalogs in step" if not found else f"{len(found)} problem(s)"))
        return 1 if found else 0
    for lang in LANGUAGES:
        catalog = merged(lang, pot)
        po_path(lang).parent.mkdir(parents=True, exist_ok=True)
        po_path(lang).write_bytes(render_po(catalog))
        mo_path(lang).write_bytes(render_mo(catalog))
        missing = sum(1 for m in catalog if m.id and (not m.string or m.fuzzy))
        print(f"{lang}: {len(catalog)} messages, {missing} untranslated or fuzzy -> {po_path(lang).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
