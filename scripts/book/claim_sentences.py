"""The sentences of the book that name a real system, and whether each is accounted for in the claims
ledger (`references/claims.yml`, read by `minigpt.book.claims`).

A sentence is accounted for when it carries a ``{claim}`id` `` marker, or when the ledger lists it (a
fragment of its text, on its page) under `mentions` (it names the system and states nothing about what
the system does, or states a paper's result and cites the paper) or under `unchecked` (a statement not
yet checked). `tests/test_claims.py` fails on any other, and on a listed fragment that no sentence holds
any more; `python scripts/book/claim_sentences.py` prints the sentences not accounted for, in the
ledger's YAML, to paste under `unchecked` or `mentions`, and `--prune` removes the lines whose sentence
is gone.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import book_pages  # noqa: E402
from prose_strip import strip_code, strip_inline_code, strip_markup, strip_math, strip_roles  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from minigpt.book.claims import Ledger, load, markers  # noqa: E402

LEDGER = ROOT / "references" / "claims.yml"
_BREAK = re.compile(r"\n\s*\n|\n(?=\s*(?:[-*+] |\d+\. |\||#|>))")
_SENTENCE = re.compile(r"(?<=[.!?])[\"”)]?\s+(?=[A-Z*\"“(\[{`]|vLLM|gpt-|llama\.cpp)")


@dataclass(frozen=True)
class Sentence:
    page: str
    where: str
    text: str  # whitespace collapsed, roles and inline code kept (the markers are read from it)


def sentences(text: str) -> list[str]:
    """The prose sentences of a block of Markdown (code blocks and maths removed, roles kept)."""
    text = strip_markup(strip_math(strip_code(text)))
    out = []
    for part in _BREAK.split(text):
        for s in _SENTENCE.split(part):
            s = " ".join(s.split())
            if s:
                out.append(s)
    return out


def system_pattern(systems: tuple[str, ...]) -> re.Pattern[str]:
    names = sorted(systems, key=len, reverse=True)
    return re.compile(r"(?<![\w/.-])(?:" + "|".join(re.escape(n) for n in names) + r")(?![\w-])")


def naming(ledger: Ledger, pages: list[str] | None = None) -> list[Sentence]:
    """Every prose sentence of the book's pages that names one of the ledger's systems (outside code,
    roles and link addresses)."""
    pattern = system_pattern(ledger.systems)
    found = []
    for page in pages if pages is not None else book_pages.pages():
        for block in book_pages.page_blocks(page):
            for s in sentences(block.text):
                if pattern.search(strip_inline_code(strip_roles(s))):
                    found.append(Sentence(page, block.where, s))
    return found


def _listed(ledger: Ledger) -> list[tuple[str, dict[str, str]]]:
    return [("mentions", m) for m in ledger.mentions] + [("unchecked", u) for u in ledger.unchecked]


def unaccounted(ledger: Ledger, found: list[Sentence]) -> list[Sentence]:
    """The sentences with no marker that the ledger does not list."""
    listed = _listed(ledger)
    return [s for s in found if not markers(s.text) and not any(
        item["page"] == s.page and " ".join(item["text"].split()) in s.text for _, item in listed)]


def stale_listings(ledger: Ledger, found: list[Sentence]) -> list[str]:
    """The ledger's `mentions` and `unchecked` fragments that no unmarked sentence of their page holds (the
    sentence is gone, or it carries a `{claim}` marker now and the line is no longer needed)."""
    return [f"{kind}: {item['page']}: {item['text']!r}" for kind, item in _listed(ledger)
            if not any(s.page == item["page"] and not markers(s.text) and " ".join(item["text"].split()) in s.text
                       for s in found)]


def _emit(kind: str, items: list[dict[str, str]]) -> list[str]:
    out = [f"{kind}:"] if items else [f"{kind}: []"]
    for item in items:
        out += [f"  - page: {item['page']}", f"    text: {json.dumps(item['text'], ensure_ascii=False)}"]
        if "why" in item:
            out.append(f"    why: {json.dumps(item['why'], ensure_ascii=False)}")
    return out


def prune(path: Path = LEDGER) -> list[str]:
    """Rewrite the ledger's `mentions` and `unchecked` (the file's last two sections) without the lines no
    sentence holds any more; the removed lines, as `stale_listings` names them."""
    ledger = load(path)
    found = naming(ledger)
    gone = stale_listings(ledger, found)
    text = path.read_text(encoding="utf-8")
    head = text[: text.index("\nmentions:")]
    keep = {kind: [item for k, item in _listed(ledger) if k == kind and f"{kind}: {item['page']}: {item['text']!r}"
                   not in gone] for kind in ("mentions", "unchecked")}
    body = _emit("mentions", keep["mentions"]) + [""] + _emit("unchecked", keep["unchecked"])
    path.write_text(head + "\n" + "\n".join(body) + "\n", encoding="utf-8")
    return gone


def main() -> None:
    if sys.argv[1:] == ["--prune"]:
        print("\n".join(prune()) or "nothing to prune")
        return
    ledger = load(LEDGER)
    for s in unaccounted(ledger, naming(ledger)):
        fragment = s.text if len(s.text) <= 100 else s.text[:100].rsplit(" ", 1)[0]
        print(f"  - page: {s.page}\n    text: {json.dumps(fragment, ensure_ascii=False)}")


if __name__ == "__main__":
    main()
