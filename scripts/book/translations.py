"""Keep the other editions' catalogs in step with the English pages (CONTRIBUTING.md, "Translations").

    python scripts/book/translations.py update          # templates from the pages, then merge into every catalog
    python scripts/book/translations.py status          # per page: messages, translated, fuzzy, empty
    python scripts/book/translations.py export PAGE     # the messages still to translate, as JSON (stdout)
    python scripts/book/translations.py import PAGE F   # translations from a JSON file [{"id", "es"}, ...]
    python scripts/book/translations.py check           # every message translated, none fuzzy, markup kept
    python scripts/book/translations.py notebooks       # the edition's notebooks for Colab, from the catalogs
    python scripts/book/translations.py notebooks chapters/12_serving_engine   # only these pages

`make translations` runs `update`, `notebooks` and `status`.
A changed English sentence leaves its old translation
marked fuzzy; the Spanish build then fails on it (an untranslated message is an error) until someone
retranslates it and removes the mark (`import` does both).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from minigpt.book import catalogs, colab_notebooks, edition_notebooks  # noqa: E402


def cmd_update(lang: str) -> int:
    sys.path.insert(0, str(ROOT / "scripts" / "book"))
    import build_book

    if build_book.main(["--gettext"]) != 0:
        return 1
    for pot in sorted(catalogs.TEMPLATES.rglob("*.pot")):
        page = pot.relative_to(catalogs.TEMPLATES).with_suffix("").as_posix()
        path = catalogs.catalog_path(page, lang)
        old = catalogs.read(path) if path.exists() else None
        catalogs.write(catalogs.update_catalog(catalogs.read(pot), old, lang), path)
    wanted = {p.relative_to(catalogs.TEMPLATES).with_suffix("").as_posix() for p in catalogs.TEMPLATES.rglob("*.pot")}
    for page in catalogs.pages(lang):
        if page not in wanted:  # the page left the book
            catalogs.catalog_path(page, lang).unlink()
    return 0


def cmd_status(lang: str) -> int:
    rows = [
        (page, catalogs.coverage(catalogs.read(catalogs.catalog_path(page, lang)))) for page in catalogs.pages(lang)
    ]
    width = max(len(p) for p, _ in rows)
    print(f"{'page':<{width}}  messages  translated  fuzzy  empty  words to do")
    for page, c in rows:
        print(f"{page:<{width}}  {c.total:8d}  {c.translated:10d}  {c.fuzzy:5d}  {c.empty:5d}  {c.words:11d}")
    total = sum(c.total for _, c in rows)
    done = sum(c.translated for _, c in rows)
    print(f"{'all':<{width}}  {total:8d}  {done:10d}  ({100 * done / total:.1f} %)")
    return 0


def cmd_export(page: str, lang: str, everything: bool) -> int:
    catalog = catalogs.read(catalogs.catalog_path(page, lang))
    out = []
    for m in catalog:
        if m.id and (everything or m.fuzzy or not m.string):
            row = {"id": m.id, lang: m.string if everything else ""}
            if m.fuzzy:
                row["fuzzy_previous"] = m.string
            out.append(row)
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    print()
    return 0


def cmd_import(page: str, source: str, lang: str) -> int:
    path = catalogs.catalog_path(page, lang)
    catalog = catalogs.read(path)
    rows = json.loads(Path(source).read_text(encoding="utf-8"))
    bad = 0
    for row in rows:
        msgid, msgstr = row["id"], row.get(lang, "").strip()
        message = catalog.get(msgid)
        if message is None:
            print(f"not in {page}: {msgid[:70]!r}", file=sys.stderr)
            bad += 1
            continue
        if not msgstr:
            continue
        problems = catalogs.markup_problems(msgid, msgstr, lang)
        if problems:
            print(f"refused ({'; '.join(problems)}): {msgid[:70]!r}", file=sys.stderr)
            bad += 1
            continue
        message.string = msgstr
        message.flags.discard("fuzzy")
        message.previous_id = []
    catalogs.write(catalog, path)
    print(f"{page}: {catalogs.coverage(catalog)}")
    return 1 if bad else 0


def cmd_check(lang: str) -> int:
    bad = 0
    for page in catalogs.pages(lang):
        catalog = catalogs.read(catalogs.catalog_path(page, lang))
        for m in catalog:
            if not m.id:
                continue
            if m.fuzzy or not m.string:
                print(f"{page}: {'fuzzy' if m.fuzzy else 'untranslated'}: {m.id[:70]!r}")
                bad += 1
            elif problems := catalogs.markup_problems(m.id, m.string, lang):
                print(f"{page}: {'; '.join(problems)}: {m.id[:70]!r}")
                bad += 1
    print(f"{bad} message(s) to fix" if bad else "every message translated, markup kept")
    return 1 if bad else 0


def edition_notebook(page: str, lang: str) -> tuple[str, set[str]]:
    """The edition's notebook of a page as the file's text, and the messages it could not place."""
    english = json.loads((ROOT / f"{page}.ipynb").read_text(encoding="utf-8"))
    notebook, missing = edition_notebooks.translate_notebook(english, catalogs.read(catalogs.catalog_path(page, lang)))
    # What Colab shows: no MyST markup (glued values written in, terms, citations and links to the site).
    notebook = colab_notebooks.colab_notebook(notebook, page, lang, outputs_from=english)
    notebook.setdefault("metadata", {})["language_info"] = english.get("metadata", {}).get("language_info", {})
    if page.startswith("exercises/ex"):
        # The graded exercises' feedback in the notebook's language: a cell after the (unchanged) setup cell.
        first_code = next(i for i, c in enumerate(notebook["cells"]) if c["cell_type"] == "code")
        notebook["cells"].insert(first_code + 1, {
            "cell_type": "code", "execution_count": None, "id": f"minigpt-lang-{lang}", "metadata": {}, "outputs": [],
            "source": ["import os\n", "\n", f'os.environ["MINIGPT_LANG"] = "{lang}"  # check() responde en español'],
        })
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", missing


def notebook_pages(lang: str) -> list[str]:
    """The pages that are notebooks (and so have a Colab button)."""
    return [page for page in catalogs.pages(lang) if (ROOT / f"{page}.ipynb").exists()]


def cmd_notebooks(lang: str, only: list[str] | None = None) -> int:
    """Write the edition's notebooks (of the pages `only`, if given) and remove those of pages that are gone."""
    unknown = sorted(set(only or ()) - set(notebook_pages(lang)))
    if unknown:
        print(f"pages: {', '.join(unknown)} is no notebook page of the book (e.g. chapters/04_wall_clock)",
              file=sys.stderr)
        return 2
    bad = 0
    wanted = set()
    for page in only or notebook_pages(lang):
        text, missing = edition_notebook(page, lang)
        if missing:
            print(f"{page}: {len(missing)} message(s) not placed, e.g. {sorted(missing)[0][:70]!r}", file=sys.stderr)
            bad += 1
        path = edition_notebooks.edition_notebook_path(page, lang)
        wanted.add(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    for path in (catalogs.LOCALES / lang / catalogs.NOTEBOOKS).rglob("*.ipynb"):
        if path not in wanted and not only:
            path.unlink()
            print(f"removed {path.relative_to(ROOT)}")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", default="es", help="the edition's language (default: es)")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("update")
    sub.add_parser("status")
    p = sub.add_parser("export")
    p.add_argument("page")
    p.add_argument("--all", action="store_true", help="every message, with its translation")
    p = sub.add_parser("import")
    p.add_argument("page")
    p.add_argument("file")
    sub.add_parser("check")
    p = sub.add_parser("notebooks")
    p.add_argument("pages", nargs="*", help="only these pages (e.g. chapters/12_serving_engine)")
    args = parser.parse_args(argv)
    if args.cmd == "update":
        return cmd_update(args.lang)
    if args.cmd == "status":
        return cmd_status(args.lang)
    if args.cmd == "export":
        return cmd_export(args.page, args.lang, args.all)
    if args.cmd == "import":
        return cmd_import(args.page, args.file, args.lang)
    if args.cmd == "notebooks":
        return cmd_notebooks(args.lang, args.pages)
    return cmd_check(args.lang)


if __name__ == "__main__":
    sys.exit(main())
