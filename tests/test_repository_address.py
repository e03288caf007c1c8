"""The repository's address is set in one place, `_config.yml` (minigpt.book.repository): every file that
writes it (badges, setup cells, install lines, Colab links in the catalogs, links to the sources) names that
one. Catches: an address typed by hand, or left behind after publishing under another
(`python scripts/book/new_notebook.py --sync`, README "Publishing under another address")."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from minigpt.book import repository

ROOT = Path(__file__).resolve().parents[1]
SUFFIXES = {".md", ".ipynb", ".po", ".py", ".yml", ".toml", ".txt", ".cfg", ".js", ".html"}


def _tracked() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    files = [ROOT / name for name in out.decode().split("\0") if name]
    # the tests' own sample addresses are not the book's
    return [p for p in files if p.suffix in SUFFIXES and p.is_file() and not p.relative_to(ROOT).parts[0] == "tests"]


def addresses(text: str) -> set[str]:
    """The `<owner>/<name>` of every mention of a repository as the book writes its own (install, blob, Colab)."""
    return set(repository.MENTION.findall(text))


def test_mentions_are_found():
    """The scanner itself: an install line, a source link and a Colab link are each found."""
    text = ('pip install "git+https://github.com/a/b@main" [x](https://github.com/c/d/blob/main/x.py) '
            "https://colab.research.google.com/github/e/f/blob/main/g.ipynb https://github.com/vllm-project")
    assert addresses(text) == {"a/b", "c/d", "e/f"}


#: Other projects whose sources the book cites by a blob/tree link (references/claims.yml): not ours.
CITED = {"Dao-AILab/flash-attention", "deepseek-ai/DeepSeek-V3.2-Exp", "FasterDecoding/SnapKV", "FMInference/H2O",
         "openai/gpt-oss", "deepseek-ai/FlashMLA", "vllm-project/vllm", "ggml-org/llama.cpp", "meta-pytorch/gpt-fast",
         "pytorch/pytorch", "MiniMax-AI/MiniMax-01", "huggingface/transformers"}


def test_every_file_names_the_configured_repository():
    own = repository.slug()
    others = {}
    for path in _tracked():
        found = addresses(path.read_text(encoding="utf-8", errors="replace")) - CITED - {own}
        if found:
            others[path.relative_to(ROOT).as_posix()] = sorted(found)
    assert not others, (f"files naming another address than _config.yml's {own} (run scripts/book/new_notebook.py "
                        f"--sync; another project's source cited: add it to CITED): {others}")


def test_site_and_colab_addresses_derive_from_the_setting(monkeypatch: pytest.MonkeyPatch):
    """Catches: a derived address (site, Colab, blob) that ignores the setting."""
    monkeypatch.setattr(repository, "repository", lambda: ("https://github.com/Someone/book", "pages"))
    assert repository.site_url() == "https://someone.github.io/book/"
    assert repository.site_url("es") == "https://someone.github.io/book/es/"
    assert repository.colab_url("x.ipynb") == "https://colab.research.google.com/github/Someone/book/blob/pages/x.ipynb"
