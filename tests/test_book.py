"""The book's machinery: notebooks start with the canonical badge + setup cell, the repository URL
lives in _config.yml, and (marker `site`) the built site loads nothing from outside."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"

_spec = importlib.util.spec_from_file_location("new_notebook", ROOT / "scripts" / "book" / "new_notebook.py")
new_notebook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(new_notebook)

NOTEBOOKS = [p.relative_to(ROOT).as_posix() for p in new_notebook.book_notebooks()]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
REPO_URL = CONFIG["repository"]["url"]


def _read(relpath: str) -> nbformat.NotebookNode:
    return nbformat.read(ROOT / relpath, as_version=4)


def test_config() -> None:
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", REPO_URL), REPO_URL
    assert CONFIG["repository"]["branch"] == "main"
    assert CONFIG["execute"]["execute_notebooks"] == "off", "the site renders committed outputs"
    assert CONFIG["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert CONFIG["bibtex_bibfiles"] == ["references.bib"]
    for pattern in (".venv", "_build", ".pytest_cache", "node_modules", "exercises/solutions", "tests",
                    "README.md", "**.ipynb_checkpoints", ".hypothesis"):
        assert pattern in CONFIG["exclude_patterns"] or pattern.startswith("."), pattern
    assert ".*" in CONFIG["exclude_patterns"]


def test_setup_cell_text() -> None:
    source = new_notebook.setup_cell_source()
    assert f'"git+{REPO_URL}@main"' in source, "the setup cell installs from _config.yml's repository"
    assert "--no-deps" in source, "Colab's torch/numpy/ipywidgets must never be reinstalled"
    assert source.rstrip().endswith("device = setup(seed=0)")


@pytest.mark.parametrize("relpath", NOTEBOOKS)
def test_first_code_cell_is_the_setup_cell(relpath: str) -> None:
    nb = _read(relpath)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, f"{relpath} has no code cell"
    assert code[0].source == new_notebook.setup_cell_source(), (
        f"{relpath}: the first code cell must be the canonical setup cell "
        "(run `python scripts/book/new_notebook.py --sync`)"
    )
    urls = set(re.findall(r"https://github\.com/[\w./-]+?(?=@|\")", code[0].source))
    assert urls == {REPO_URL}, urls


@pytest.mark.parametrize("relpath", NOTEBOOKS)
def test_colab_badge_points_at_this_notebook(relpath: str) -> None:
    nb = _read(relpath)
    first_code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    badges = [c for c in nb.cells[:first_code] if c.cell_type == "markdown" and new_notebook.BADGE_ALT in c.source]
    assert badges, f"{relpath}: no 'Open in Colab' badge before the setup cell"
    slug, branch = REPO_URL.removeprefix("https://github.com/"), CONFIG["repository"]["branch"]
    # the notebook's Colab copy, its MyST markup resolved (scripts/book/colab_notebooks.py)
    expected = f"https://colab.research.google.com/github/{slug}/blob/{branch}/locales/en/notebooks/{relpath}"
    assert f'href="{expected}"' in badges[0].source
    assert badges[0].source == new_notebook.badge_source(relpath)


@pytest.mark.parametrize("relpath", NOTEBOOKS)
def test_notebook_metadata(relpath: str) -> None:
    meta = _read(relpath).metadata
    assert meta["kernelspec"]["name"] == "python3"
    assert meta.get("accelerator") == "GPU" and meta["colab"].get("gpuType") == "T4"


def test_new_notebook_skeleton() -> None:
    nb = new_notebook.new_notebook("chapters/99_x.ipynb", "A title")
    assert [c.cell_type for c in nb.cells] == ["markdown", "markdown", "code"]
    assert nb.cells[0].source == "# A title"
    assert "chapters/99_x.ipynb" in nb.cells[1].source
    nbformat.validate(nb)


def _html_pages() -> list[Path]:
    return sorted(p for p in SITE.rglob("*.html") if "vendor" not in p.relative_to(SITE).parts)


@pytest.mark.site
def test_site_loads_nothing_from_outside(built_site: Path) -> None:
    external_script = re.compile(r"""<script\b[^>]*\bsrc\s*=\s*["']?(https?:)?//""", re.I)
    external_link = re.compile(r"""<link\b[^>]*\bhref\s*=\s*["']?(https?:)?//[^>]*>""", re.I)
    offenders = []
    for page in _html_pages():
        text = page.read_text(encoding="utf-8")
        offenders += [f"{page.relative_to(SITE)}: script {m.group(0)}" for m in external_script.finditer(text)]
        for m in external_link.finditer(text):
            if re.search(r"rel\s*=\s*[\"']?(stylesheet|preload|modulepreload|icon)", m.group(0)):
                offenders.append(f"{page.relative_to(SITE)}: {m.group(0)}")
    assert not offenders, "\n".join(offenders)


@pytest.mark.site
def test_site_css_loads_nothing_from_outside(built_site: Path) -> None:
    offenders = []
    for css in built_site.rglob("*.css"):
        for m in re.finditer(r"""(url\(\s*["']?(https?:)?//[^)]*\)|@import\s+["']?(https?:)?//\S+)""",
                             css.read_text(encoding="utf-8", errors="replace")):
            offenders.append(f"{css.relative_to(built_site)}: {m.group(0)}")
    assert not offenders, "\n".join(offenders)


@pytest.mark.site
def test_vendored_assets_are_served(built_site: Path) -> None:
    for rel in ("vendor/mathjax/tex-mml-chtml.js", "vendor/require.js", "vendor/html-manager/embed-amd.js",
                "vendor/widgets-setup.js"):
        assert (built_site / rel).is_file(), f"{rel} missing: run scripts/book/vendor_assets.sh (make book does)"
    for page in _html_pages():
        text = page.read_text(encoding="utf-8")
        if "application/vnd.jupyter.widget-state+json" in text:
            assert "vendor/html-manager/embed-amd.js" in text, f"{page}: widgets without the local manager"
