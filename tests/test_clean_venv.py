"""A notebook as Colab opens it: the wheel installed into a fresh venv outside the repository, the notebook
alone in an empty folder, run top to bottom (scripts/book/clean_venv.py; `--all` runs every chapter that
reads data, CONTRIBUTING.md "The Colab path").

Catches: sweep data read by a path relative to the checkout (chapters/data/...), a data file left out of the
wheel's package data, a module or file that only an editable install or PYTHONPATH provides, an exercise that
needs the repository's folders. One data-reading chapter and one exercise, each from its generated Colab
notebook (locales/en/notebooks/).
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "book"))

import clean_venv  # noqa: E402

pytestmark = [pytest.mark.xdist_group("clean_venv"), pytest.mark.source_text]
NOTEBOOKS = ROOT / "locales" / "en" / "notebooks"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("clean-venv")
    wheel = clean_venv.build_wheel(tmp / "wheel")
    names = zipfile.ZipFile(wheel).namelist()
    assert "minigpt/measure/data/gqa_quality.json" in names and "minigpt/data/minigpt.safetensors" in names
    return clean_venv.make_venv(tmp / "venv", wheel)


@pytest.mark.parametrize("page", ["chapters/09_gqa_mqa", "exercises/ex09_gqa_mqa"])
def test_colab_notebook_runs_alone_from_the_installed_wheel(venv: Path, page: str):
    run = clean_venv.run_notebook(venv, NOTEBOOKS / f"{page}.ipynb", timeout=600)
    assert run.ok, run.error
    assert run.minigpt_from.startswith(str(venv.parents[1])), f"minigpt came from {run.minigpt_from}, not the wheel"
