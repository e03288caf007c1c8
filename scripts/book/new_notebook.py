"""Create a chapter or exercise notebook skeleton, or bring existing notebooks' first cells in line.

Every notebook of the book starts with the same three cells:

1. a Markdown title cell (`# Title`),
2. an "Open in Colab" badge opening the notebook's Colab copy, `locales/en/notebooks/<path>` (its MyST
   markup resolved: scripts/book/colab_notebooks.py),
3. the setup cell (`setup_cell_source()`): the one place where its text is written.

The repository URL and branch come from `_config.yml` (`repository.url`, `repository.branch`), read by
`minigpt.book.repository`; the setup cell contains them literally because Colab has no checkout to read
them from. `--sync` also rewrites the other files that name the repository (`MENTIONS`: the install
lines, a source link). `tests/test_book.py` checks every notebook against these functions.

Usage:
    python scripts/book/new_notebook.py chapters/09_new_chapter.ipynb "A new chapter"
    python scripts/book/new_notebook.py --sync            # rewrite badge + setup cell of every notebook
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from minigpt.book import colab_badge  # noqa: E402
from minigpt.book import repository as repo  # noqa: E402

BADGE_ALT = colab_badge.badge_alt("en")
#: Files besides the notebooks that write the repository's address (kept in step by --sync).
MENTIONS = ("README.md", "intro.md", "appendices/notation.md")
COLAB_FOLDER = "locales/en/notebooks"  # where the English Colab notebooks are generated

SETUP_CELL = '''\
# Setup. In Colab: install the companion package `minigpt` from the book's
# repository (--no-deps: torch, numpy and ipywidgets come with Colab and
# are never reinstalled). Everywhere: seed the RNGs and pick the device
# ($MINIGPT_DEVICE, else cuda if present, else cpu).
import sys

if "google.colab" in sys.modules:
    import os

    MINIGPT_SOURCE = os.environ.get(
        "MINIGPT_SOURCE",
        "git+{url}@{branch}",
    )
    %pip install --quiet --no-deps "$MINIGPT_SOURCE" safetensors tqdm

from minigpt.book import setup

device = setup(seed=0)'''

# The badge (a self-contained SVG: no request to any server when the page is shown), in English here; the
# Spanish edition swaps it for its own (minigpt.book.colab_badge.localize).
BADGE_IMG = colab_badge.badge_img("en")


def repository() -> tuple[str, str]:
    """(url, branch) of the book's repository, from `_config.yml`."""
    return repo.repository()


def setup_cell_source() -> str:
    """The exact source of every notebook's first code cell."""
    url, branch = repository()
    return SETUP_CELL.replace("{url}", url).replace("{branch}", branch)


def colab_url(relpath: str) -> str:
    """The Colab URL that opens `relpath` (relative to the repository root) from GitHub."""
    return repo.colab_url(relpath)


def badge_source(relpath: str) -> str:
    """The Markdown (raw HTML) of the "Open in Colab" badge cell for `relpath`: it opens the generated copy."""
    return f'<a href="{colab_url(f"{COLAB_FOLDER}/{relpath}")}"><img src="{BADGE_IMG}" alt="{BADGE_ALT}"></a>'


def notebook_metadata() -> dict:
    """Kernel and Colab metadata shared by every notebook (Colab opens it on a T4 GPU)."""
    return {
        "accelerator": "GPU",
        "colab": {"provenance": [], "gpuType": "T4"},
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    }


def new_notebook(relpath: str, title: str) -> nbformat.NotebookNode:
    """A skeleton: title, badge, setup cell."""
    nb = nbformat.v4.new_notebook()
    nb.metadata.update(notebook_metadata())
    nb.cells = [
        nbformat.v4.new_markdown_cell(f"# {title}"),
        nbformat.v4.new_markdown_cell(badge_source(relpath)),
        nbformat.v4.new_code_cell(setup_cell_source()),
    ]
    return nb


def book_notebooks() -> list[Path]:
    """Every notebook of the book (chapters, the decoder ring) and the exercises (reference solutions excluded)."""
    return sorted([*ROOT.glob("chapters/*.ipynb"), *ROOT.glob("decoder_ring/*.ipynb"), *ROOT.glob("exercises/*.ipynb")])


def sync(path: Path) -> bool:
    """Rewrite `path`'s badge cell and setup cell to the canonical text; True if it changed."""
    nb = nbformat.read(path, as_version=4)
    relpath = path.resolve().relative_to(ROOT).as_posix()
    changed = False
    code = [c for c in nb.cells if c.cell_type == "code"]
    if not code:
        raise SystemExit(f"{relpath}: no code cell (expected the setup cell)")
    if code[0].source != setup_cell_source():
        code[0].source = setup_cell_source()
        changed = True
    badge = [c for c in nb.cells if c.cell_type == "markdown" and BADGE_ALT in c.source]
    if badge and badge[0].source != badge_source(relpath):
        badge[0].source = badge_source(relpath)
        changed = True
    elif not badge:
        nb.cells.insert(1, nbformat.v4.new_markdown_cell(badge_source(relpath)))
        changed = True
    for key, value in notebook_metadata().items():
        if key not in nb.metadata:
            nb.metadata[key] = value
            changed = True
    if changed:
        nbformat.write(nb, path)
    return changed


def sync_mentions() -> list[str]:
    """Rewrite the repository's address in `MENTIONS` to the configured one; the files changed."""
    url, branch = repository()
    changed = []
    for name in MENTIONS:
        path = ROOT / name
        text = path.read_text(encoding="utf-8")
        new = repo.MENTION.sub(lambda m: m.group(0).replace(m.group(1), repo.slug()), text)
        new = re.sub(r"(git\+https://github\.com/[\w.-]+/[\w.-]+)@[\w./-]+?(?=[\"`\s])", rf"\1@{branch}", new)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(name)
    return changed


def main(argv: list[str] | None = None) -> int:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    parser.add_argument("path", nargs="?", help="new notebook, relative to the repository root")
    parser.add_argument("title", nargs="?", help="its title (the page's H1)")
    parser.add_argument("--sync", action="store_true", help="rewrite badge and setup cell of every notebook")
    args = parser.parse_args(argv)
    if args.sync:
        for path in book_notebooks():
            if sync(path):
                print(f"updated {path.relative_to(ROOT)}")
        for name in sync_mentions():
            print(f"updated {name}")
        return 0
    if not args.path or not args.title:
        parser.error("give PATH and TITLE, or --sync")
    target = ROOT / args.path
    if target.exists():
        parser.error(f"{args.path} exists; use --sync to update its first cells")
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(args.path, args.title), target)
    print(f"created {args.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
