"""The book's repository, named in one place: `_config.yml` (`repository.url`, `repository.branch`).

Everything that names the repository derives from it: the Colab badges and launch buttons, the setup
cell's `pip install` line, the published site's address (GitHub Pages), the issue links Jupyter Book
draws. The copies written into files (the notebooks' badges and setup cells, the install lines of
README.md and intro.md, a source link of the notation appendix) are rewritten by
`python scripts/book/new_notebook.py --sync`; tests/test_repository_address.py fails on any that names
another address (README, "Publishing under another address").
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
COLAB = "https://colab.research.google.com"
#: The repository's address as files write it: `github.com/<owner>/<name>` followed by `@`, `/blob/` or
#: `/tree/`, or in a Colab URL, `colab.research.google.com/github/<owner>/<name>/blob/`.
MENTION = re.compile(r"(?:github\.com|colab\.research\.google\.com/github)/([\w.-]+/[\w.-]+?)(?=@|/blob/|/tree/)")


def repository() -> tuple[str, str]:
    """(url, branch) of the book's repository, from `_config.yml`."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    repo = config["repository"]
    url = repo["url"].rstrip("/")
    if not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url):
        raise ValueError(f"_config.yml repository.url must be https://github.com/<owner>/<name>, got {url!r}")
    return url, repo.get("branch", "main")


def slug() -> str:
    """`<owner>/<name>` of the repository."""
    return repository()[0].removeprefix("https://github.com/")


def blob(relpath: str = "") -> str:
    """`github/<owner>/<name>/blob/<branch>/<relpath>`: a file of the repository as Colab's URL names it."""
    return f"github/{slug()}/blob/{repository()[1]}/{relpath}"


def colab_url(relpath: str) -> str:
    """The Colab URL that opens the repository's file `relpath` from GitHub."""
    return f"{COLAB}/{blob(relpath)}"


def site_url(lang: str = "en") -> str:
    """The published site (GitHub Pages: https://<owner>.github.io/<name>/), an edition's under `<lang>/`."""
    owner, name = slug().split("/")
    base = f"https://{owner.lower()}.github.io/{name}/"
    return base if lang == "en" else f"{base}{lang}/"


def source_url(relpath: str) -> str:
    """The GitHub page of the repository's file `relpath` (on the configured branch)."""
    url, branch = repository()
    return f"{url}/blob/{branch}/{relpath}"
