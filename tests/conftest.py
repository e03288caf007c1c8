"""Shared pytest setup: the `site` marker and the built site used by the site tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "site: needs the built book in _build/html (run after `make book`; `make site`)"
    )


@pytest.fixture(scope="session")
def built_site() -> Path:
    """`_build/html`, building the book first (`make book`) if it is missing."""
    if not (SITE / "index.html").is_file():
        subprocess.run(["make", "book"], cwd=ROOT, check=True)
    return SITE
