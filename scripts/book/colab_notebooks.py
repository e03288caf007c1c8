"""Write the notebooks the Colab buttons open, English and Spanish, with the MyST markup resolved.

    python scripts/book/colab_notebooks.py          # locales/en/notebooks/<page>.ipynb from each English notebook
    python scripts/book/colab_notebooks.py --check  # exit 1 if one is stale (tests/test_colab_notebooks.py)
    python scripts/book/colab_notebooks.py chapters/12_serving_engine   # only these pages (one being edited
                                                                        # elsewhere does not stop them)

The Spanish ones (locales/es/notebooks/) are written by `scripts/book/translations.py notebooks`, which
translates each English notebook from its catalog and then resolves it the same way
(`minigpt.book.colab_notebooks`). Both run in `make notebooks` and `make translations`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "book"))

import new_notebook  # noqa: E402

from minigpt.book import catalogs, colab_notebooks  # noqa: E402

LANG = "en"


def generated_path(page: str, lang: str = LANG) -> Path:
    """`locales/<lang>/notebooks/<page>.ipynb`: the notebook Colab opens for a page."""
    return catalogs.LOCALES / lang / catalogs.NOTEBOOKS / f"{page}.ipynb"


def colab_text(page: str) -> str:
    """The English Colab notebook of `page` (e.g. "chapters/04_wall_clock") as the file's text."""
    english = json.loads((ROOT / f"{page}.ipynb").read_text(encoding="utf-8"))
    notebook = colab_notebooks.colab_notebook(english, page, LANG)
    for cell in notebook["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and new_notebook.BADGE_ALT in text:  # the badge opens this copy
            cell["source"] = catalogs.colab_target(text, LANG).splitlines(keepends=True)
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def pages() -> list[str]:
    return [p.relative_to(ROOT).with_suffix("").as_posix() for p in new_notebook.book_notebooks()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a notebook is stale")
    parser.add_argument("pages", nargs="*", help="only these pages (e.g. chapters/03_decode_memory_bound)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.pages) - set(pages()))
    if unknown:
        parser.error(f"pages: {', '.join(unknown)} is no notebook page of the book (e.g. chapters/04_wall_clock)")
    wanted, stale = set(), []
    for page in args.pages or pages():
        path = generated_path(page)
        wanted.add(path)
        text = colab_text(page)
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    for path in (catalogs.LOCALES / LANG / catalogs.NOTEBOOKS).rglob("*.ipynb"):
        if path not in wanted and not args.pages:  # a copy without a page, when every page was written
            stale.append(path)
            if not args.check:
                path.unlink()
                print(f"removed {path.relative_to(ROOT)}")
    if args.check and stale:
        print("stale: " + ", ".join(str(p.relative_to(ROOT)) for p in stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
