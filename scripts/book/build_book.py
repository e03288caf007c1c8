"""Build the book's editions: English into _build/html, Spanish into _build/html/es, or the catalogs.

    python scripts/book/build_book.py            # both editions, warnings are errors (`make book`)
    python scripts/book/build_book.py --lang es  # the Spanish edition only
    python scripts/book/build_book.py --gettext  # the message templates into _build/gettext (`make translations`)

Each edition is one Sphinx build through Jupyter Book 1's own entry point (`build_sphinx`, the function
`jupyter-book build` calls) with the same `_config.yml`; the Spanish one overrides only the language and
what depends on it (README, "The Spanish edition").
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import operator
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from jupyter_book.sphinx import build_sphinx

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "_build"
LANGS = ("en", "es")


def overrides(lang: str) -> dict:
    """The Sphinx settings an edition adds to `_config.yml` (what `jupyter-book build -n` passes, and the language)."""
    conf: dict = {
        "external_toc_path": (ROOT / "_toc.yml").as_posix(),
        "latex_individualpages": False,
        "nitpicky": True,
        "language": lang,
    }
    return conf


def build(lang: str, builder: str = "html", *, strict: bool = True) -> int:
    """One Sphinx build of one edition; returns Sphinx's exit status."""
    if builder == "gettext":
        out, doctrees = BUILD / "gettext", BUILD / ".doctrees-gettext"
    elif lang == "en":
        out, doctrees = BUILD / "html", BUILD / ".doctrees"
    else:
        out, doctrees = BUILD / "html" / lang, BUILD / f".doctrees-{lang}"
    conf = overrides(lang)
    result = build_sphinx(
        ROOT,
        out,
        noconfig=True,
        path_config=ROOT / "_config.yml",
        confoverrides=conf,
        builder=builder,
        doctreedir=doctrees,
        warningiserror=strict,
        keep_going=True,
        freshenv=builder == "gettext",
    )
    return 1 if isinstance(result, Exception) else int(result)


def _build_logged(lang: str, strict: bool) -> tuple[int, str]:
    """`build` in a process of its own, its output kept (returned) so that two editions' logs do not mix."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as log:
        sys.stdout = sys.stderr = log
        try:
            status = build(lang, strict=strict)
        finally:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        log.seek(0)
        return status, log.read()


def build_editions(langs: tuple[str, ...], *, strict: bool = True) -> int:
    """Build `langs`, at the same time when there are cores for it (each edition is one Sphinx build of its own
    output and doctree folders; on two cores both take about as long as one). Each edition's log is printed
    whole when it is done, in the order of `langs`; the status is every build's, or-ed."""
    if len(langs) == 1 or (os.cpu_count() or 1) < 2:
        return functools.reduce(operator.or_, (build(lang, strict=strict) for lang in langs), 0)
    with ProcessPoolExecutor(len(langs), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_build_logged, lang, strict) for lang in langs]
        status = 0
        for lang, future in zip(langs, futures, strict=True):
            code, log = future.result()
            print(f"===== the {lang} edition: Sphinx exited with {code}\n{log}", flush=True)
            status |= code
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", choices=(*LANGS, "all"), default="all", help="which edition (default: all)")
    parser.add_argument("--gettext", action="store_true", help="write the message templates instead")
    parser.add_argument("--no-strict", action="store_true", help="do not turn warnings into errors")
    args = parser.parse_args(argv)
    if args.gettext:
        return build("en", "gettext", strict=False)
    langs = LANGS if args.lang == "all" else (args.lang,)
    return build_editions(langs, strict=not args.no_strict)


if __name__ == "__main__":
    sys.exit(main())
