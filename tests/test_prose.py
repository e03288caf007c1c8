"""What the book's prose may say: sources by their titles, no internal documents, no numbers typed by
hand, and an errata appendix that points at the Erratum boxes where they really are.

Every check reads the pages listed in `_toc.yml` as they are (`scripts/book/book_text.py`): Markdown pages
and the Markdown cells of the notebooks.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str, path: Path):
    """The module at `path`, imported once under `name` (pytest may have imported it already)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


book_text = _load("book_text", ROOT / "scripts" / "book" / "book_text.py")
book_pages = sys.modules["book_pages"]  # book_text finds the book at its ROOT: a test patches it there

PAGES = book_text.pages()
ALLOWLIST = ROOT / "tests" / "data" / "prose_numbers_allowlist.txt"

# ---------------------------------------------------------------- "seed" means an RNG seed

SEED = re.compile(r"\bseed(?:s|ed|ing|'s)?\b", re.I)
# "seed" as an RNG seed: seed=…, seed 0, random/RNG/same/fixed seed, seeded, seeds the random number generators
RNG_SEED_AFTER = re.compile(r"^(?:\s*=|\s+(?!00\d)\d+\b|s?\s+(?:of\s+|for\s+)?the\s+(?:random|RNG))", re.I)
RNG_SEED_BEFORE = re.compile(r"\b(?:random|RNG|PRNG|same|fixed|new|its|their|one|a|integer)\s+$", re.I)


def seed_words(text: str) -> list[str]:
    """Each use of "seed" in `text`'s prose that is not an RNG seed, with some context."""
    words = book_text.prose(text)
    found = []
    for m in SEED.finditer(words):
        word = m.group(0).lower()
        if word in ("seeded", "seeding"):
            continue
        if word != "seed's" and (RNG_SEED_AFTER.match(words[m.end():]) or RNG_SEED_BEFORE.search(words[: m.start()])):
            continue
        found.append(" ".join(words[max(0, m.start() - 40): m.end() + 30].split()))
    return found


@pytest.mark.parametrize("page", PAGES)
def test_seed_means_only_an_rng_seed(page):
    problems = [f"{b.label}: ...{w}..." for b in book_text.page_blocks(page) for w in seed_words(b.text)]
    assert not problems, (
        "name the sources by their titles (the course page \"Prefill vs Decode: two phases of one forward\", "
        "the guide \"Prefill vs decode: how generation runs\"), not \"the seed\":\n" + "\n".join(problems)
    )


INTERNAL = re.compile(r"\b(?:DESIGN|STYLE|REFERENCE)(?:\.md)?\b(?:'s)?|\bDesign:")


@pytest.mark.parametrize("page", PAGES)
def test_no_internal_documents_cited(page):
    problems = [
        f"{b.label}: {' '.join(b.text[max(0, m.start() - 40): m.end() + 30].split())!r}"
        for b in book_text.page_blocks(page) for m in INTERNAL.finditer(b.text)
    ]
    assert not problems, "the book cites documents its readers do not have:\n" + "\n".join(problems)


# The book's own history, which a reader never saw: "the older executor", "this cache used to", "the old
# argument", "the first recording", "no longer records". (Technical "no longer" stays: "can no longer attend".)
HISTORY = re.compile(
    r"\b(?:the|an|its) older (?:executor|version|code|table|argument|figure|cache|recording|sweep|chapter)\b"
    r"|\bthe old (?:argument|way|path|executor|table|version|figure|text|wording|plot)\b"
    r"|\b(?:this|the) (?:book|chapter|cache|table|figure|sweep|page|executor|engine|model) used to\b"
    r"|\b(?:an earlier|a previous|the previous|the first) (?:version|edition|draft|recording|run) of (?:this|the book)"
    r"|\bthe first recording\b|\bno longer (?:records|prints|plots|uses|reads|counts|shows)\b"
    r"|\bin (?:an|the) earlier (?:version|draft|edition)\b", re.I)


@pytest.mark.parametrize("page", PAGES)
def test_the_prose_tells_no_revision_history(page):
    problems = [f"{b.label}: {' '.join(w[max(0, m.start() - 40): m.end() + 30].split())!r}"
                for b in book_text.page_blocks(page) for w in [book_text.prose(b.text)] for m in HISTORY.finditer(w)]
    assert not problems, "the prose tells the book's own history, which a reader never saw:\n" + "\n".join(problems)


def test_seed_and_internal_checks_can_fail():
    assert len(seed_words("The seed's running example, as seed 002 says.")) == 2
    assert seed_words("the seed that replays it") != []
    ok = ("`setup(seed=0)` seeds the random number generators; run with seed=3 or seed 0, a random seed, "
          "an RNG seed, the same seed; seeded sweeps; `--seed N`; {glue:text}`ch1_seed_393k`.")
    assert seed_words(ok) == []
    assert INTERNAL.search("(Design: \"V·d is not small\")") and INTERNAL.search("REFERENCE's table")
    assert INTERNAL.search("the mistake STYLE.md warns about") and not INTERNAL.search("a design choice")
    for history in ("served by the older executor", "this cache used to hash", "the old argument in this chapter",
                    "the first recording also timed", "the sweep no longer records them", "the table used to plot"):
        assert HISTORY.search(history), history
    for fine in ("a token can no longer attend", "rescales the old sums", "the old block loses one reference",
                 "vLLM's V0 engine offered both", "the first version of the protocol"):
        assert not HISTORY.search(fine), fine


# ---------------------------------------------------------------- numbers typed by hand

# Pages whose prose must not carry typed numbers: the chapters, and the book's own Markdown pages.
NUMBER_PAGES = [p for p in PAGES if book_text.chapter_number(p) is not None or p.startswith(
    ("intro", "appendices/", "decoder_ring/"))]
NUMBER = re.compile(r"(?<![\w.,/#@\-−–×^'’])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w]|[.,]\d)")
QUOTE = re.compile(r"\"[^\"]{0,400}\"|“[^”]{0,400}”|«[^»]{0,400}»")
# words right before a number that make it a name or a reference, not a quantity
NAME_BEFORE = re.compile(
    r"(?:\b(?:Eqs?|Equations?|Chapters?|Parts?|Sections?|Figures?|Fig|Tables?|PR|issue|version|v|Python|"
    r"torch|RTX|GTX|Exercise|ex|row|rows|step|question|q)\.?\s*\(?|#|§\s*)$", re.I)
CITE_MARK = "\x00cite\x00"


def significant_digits(number: str) -> int:
    """3 for "85.7" and "1.00", 4 for "4,096", 1 for "1,000" (trailing zeros of an integer do not count)."""
    digits = number.replace(",", "")
    if "." in digits:
        return len(digits.replace(".", "").lstrip("0"))
    return len(digits.lstrip("0").rstrip("0"))


def sentences(text: str) -> list[str]:
    return re.split(r"(?<=[.!?])\s+(?=[A-Z(*\[])|\n\s*\n|\n\s*[-*|]\s", text)


def typed_numbers(text: str, verified: tuple[str, ...] = ()) -> list[tuple[str, str, int]]:
    """(number, its sentence, where it starts there) for each number of 3+ significant digits typed in the prose.

    Not counted: glued values and every other role, code, math, link addresses, directive options and
    titles (an Erratum's title quotes its source), quotations ("…", “…”, «…», > blockquotes), sentences
    that cite a source ({cite}) or a checked claim ({claim}), equation and chapter numbers, versions, years,
    model and chip names (glued: Llama-2-7B, H100, fp16; or after RTX, …), and the strings in `verified`,
    which a test recomputes.
    """
    for string in verified:
        text = re.sub(r"\s+".join(map(re.escape, string.split())), " ", text)
    text = book_text.strip_code(text, keep_titles=False)
    text = re.sub(r"^\s*>.*$", " ", text, flags=re.M)
    text = re.sub(r"\{(?:cite(?::\w+)?|claim)\}`[^`]*`", CITE_MARK, text)  # a cited paper or a checked claim
    text = book_text.strip_markup(book_text.strip_math(book_text.strip_inline_code(book_text.strip_roles(text))))
    text = QUOTE.sub(" ", text)
    found = []
    for sentence in sentences(text):
        if CITE_MARK in sentence:
            continue
        for m in NUMBER.finditer(sentence):
            number = m.group(0)
            if significant_digits(number) < 3:
                continue
            if re.fullmatch(r"(19|20)\d\d", number):
                continue  # a year
            if NAME_BEFORE.search(sentence[: m.start()]):
                continue
            if re.fullmatch(r"\d{1,2}\.\d{1,2}", number) and sentence[m.start() - 1: m.start()] == "(" \
                    and sentence[m.end(): m.end() + 1] == ")":
                continue  # an equation number, "(2.10)"
            before = " ".join(sentence[: m.start()].split())
            found.append((number, " ".join(sentence.split()), len(before) + (1 if before else 0)))
    return found


def allowlist() -> dict[tuple[str, str], str]:
    """(page, phrase) -> reason, from tests/data/prose_numbers_allowlist.txt (`page | phrase | reason`).

    The phrase is the number itself (allowed wherever the page types it) or a few words around it as the
    page's prose reads once code, math and roles are removed ("4,096-token context"), which allows that
    use of the number only.
    """
    entries: dict[tuple[str, str], str] = {}
    for i, line in enumerate(ALLOWLIST.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split("|")]
        assert len(parts) == 3 and all(parts), f"{ALLOWLIST.name}:{i}: expected 'page | phrase | reason'"
        page, phrase, reason = parts
        assert page in NUMBER_PAGES, f"{ALLOWLIST.name}:{i}: {page} is not a page whose numbers are checked"
        assert any(significant_digits(n.group(0)) >= 3 for n in NUMBER.finditer(phrase)), (
            f"{ALLOWLIST.name}:{i}: {phrase!r} holds no number of three or more significant digits")
        assert (page, phrase) not in entries, f"{ALLOWLIST.name}:{i}: {page} {phrase!r} is listed twice"
        entries[(page, phrase)] = reason
    return entries


def allowed_by(page: str, number: str, sentence: str, start: int,
               entries: dict[tuple[str, str], str]) -> tuple[str, str] | None:
    """The allowlist entry whose phrase covers this occurrence of `number` (at `start` in `sentence`), if any."""
    for entry_page, phrase in entries:
        if entry_page != page or number not in [n.group(0) for n in NUMBER.finditer(phrase)]:
            continue
        for occurrence in re.finditer(re.escape(phrase), sentence):
            if occurrence.start() <= start < occurrence.end():
                return entry_page, phrase
    return None


notation = _load("test_notation", ROOT / "tests" / "test_notation.py")


def decoder_ring_values() -> dict[str, str]:
    """The values the decoder ring page types (its GQA Erratum box; the gains next to them are glued)."""
    from minigpt import costs
    from minigpt.costs.presets import MODELS

    m = MODELS["Llama-2-7B"]
    weights = costs.weight_bytes(N_params=m.N_params, s=2)
    kv = costs.kv_cache_bytes(L=m.L, H_kv=m.H_kv, d_h=m.d_h, s=2, S=1024, B=1)
    return {"short context": f"the cache is {costs.fmt_bytes(kv)} against {costs.fmt_bytes(weights)} of weights"}


def notation_values() -> dict[str, str]:
    """The capacities the notation page quotes, as the hardware presets store them."""
    from minigpt.costs.presets import HARDWARE

    def mib(name: str) -> str:
        return f"{HARDWARE[name].memory_bytes / 2**20:,.0f} MiB"

    return {"A100 80GB": f"an \"A100 80GB\" holds 80 GiB, {mib('A100 80GB')}", "H200": f"an H200 {mib('H200')}"}


VERIFIED = {
    book_text.ERRATA_PAGE: notation.errata_values,  # tested in tests/test_notation.py
    "decoder_ring/index.ipynb": decoder_ring_values,
    "appendices/notation.md": notation_values,
}


@pytest.mark.parametrize("page", ["decoder_ring/index.ipynb", "appendices/notation.md"])
def test_pages_quote_the_values_the_code_computes(page):
    text = " ".join(" ".join(block.text for block in book_text.page_blocks(page)).split())
    missing = {key: quoted for key, quoted in VERIFIED[page]().items() if quoted not in text}
    assert not missing, f"{page} should quote the recomputed values: {missing}"


def verified_strings(page: str) -> tuple[str, ...]:
    """Strings of `page` whose numbers a test recomputes (`VERIFIED`): their numbers count as computed."""
    if page not in VERIFIED:
        return ()
    return tuple(sorted(VERIFIED[page]().values(), key=len, reverse=True))


def page_numbers(page: str) -> list[tuple[str, str, str, int]]:
    """(block label, number, its sentence, where it starts) for each typed number on `page`."""
    verified = verified_strings(page)
    return [(b.label, *found) for b in book_text.page_blocks(page) for found in typed_numbers(b.text, verified)]


def short(sentence: str, start: int) -> str:
    return sentence[max(0, start - 50): start + 40]


@pytest.mark.parametrize("page", NUMBER_PAGES)
def test_no_number_typed_by_hand(page):
    entries = allowlist()
    problems = [f"{label}: {number}  (…{short(sentence, start)}…)"
                for label, number, sentence, start in page_numbers(page)
                if allowed_by(page, number, sentence, start, entries) is None]
    assert not problems, (
        "numbers with three or more significant digits typed into the prose: glue them "
        "(glue(\"name\", value) and {glue:text}`name`), quote them from a cited source, or list them with a "
        f"reason in {ALLOWLIST.relative_to(ROOT)}:\n" + "\n".join(problems)
    )


def test_allowlist_entries_are_still_needed():
    """An allowlist line that covers no number of its page any more is a stale excuse: delete it."""
    entries = allowlist()
    used = {allowed_by(page, number, sentence, start, entries)
            for page in NUMBER_PAGES for _, number, sentence, start in page_numbers(page)}
    stale = [f"{page} | {phrase}" for page, phrase in entries if (page, phrase) not in used]
    assert not stale, f"{ALLOWLIST.relative_to(ROOT)} lists numbers these pages no longer type:\n" + "\n".join(stale)


def test_number_detector_on_examples():
    text = (
        "The prefill costs 85.7 % of it, 1.00 FLOP/byte, 13.5 GB, 254 names and 4,096 tokens; "
        "small ones pass: 2, 16, 1,000, 64, 0.5.\n\n"
        "Glued {glue:text}`ch1_x` and `code 12345`, math $12 \\cdot 4096$, Eq. (1.6), Eqs. (2.6)–(2.10), "
        "Chapter 3, Python 3.11, "
        "torch 2.13.0, in 2023, Llama-2-7B, H100, fp16, RTX 4090, [link](https://x.org/a/12345).\n\n"
        "The guide says \"1,500 tok/s\" and quotes «12,000 tokens».\n\n"
        "> A quoted 98.7 % line.\n\n"
        "A sentence with a source, 989 TFLOP/s {cite}`nvidia2022h100`. Another: 1,397 GB/s.\n\n"
        "```{admonition} Erratum (course page: \"393 K FLOPs\")\n:class: warning erratum\n:name: erratum-x\n"
        "It is 790,528 FLOPs.\n```\n"
    )
    assert [n for n, _, _ in typed_numbers(text)] == ["85.7", "1.00", "13.5", "254", "4,096", "1,397", "790,528"]
    assert typed_numbers("It is 790,528 FLOPs.", verified=("790,528 FLOPs",)) == []
    assert [significant_digits(n) for n in ("85.7", "1.00", "4,096", "1,000", "0.94", "12,000", "600")] == [
        3, 3, 4, 1, 2, 2, 1]


# ---------------------------------------------------------------- the errata appendix and the Erratum boxes

def errata_tables() -> dict[str, list[list[str]]]:
    """The appendix's tables by their `## ` heading, as rows of cells."""
    tables: dict[str, list[list[str]]] = {}
    text = (book_pages.ROOT / book_text.ERRATA_PAGE).read_text(encoding="utf-8")
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        heading, _, body = section.partition("\n")
        tables[heading.strip()] = book_text.table_rows(body)
    return tables


def heading_slugs(page: str) -> set[str]:
    """The anchors MyST gives the headings (levels 1–3, `myst_heading_anchors: 3`) of `page`."""
    slugs = set()
    for block in book_text.page_blocks(page):
        for title in re.findall(r"^#{1,3} (.+)$", book_text.strip_code(block.text), flags=re.M):
            slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
            slugs.add(slug)
    return slugs


def box_problems() -> list[str]:
    """Erratum boxes without a `:name: erratum-…`, without the `erratum` class, or sharing a name."""
    boxes = book_text.erratum_boxes()
    problems = [] if boxes else ["the book has no ```{admonition} Erratum box"]
    problems += [f"{b.page} {b.where}".strip() + f": {b.title[:70]!r} has no `:name: erratum-…`"
                 for b in boxes if not (b.name or "").startswith("erratum-")]
    problems += [f"{b.page} {b.where}".strip() + f": {b.name} lacks `:class: … erratum`"
                 for b in boxes if "erratum" not in b.classes]
    counts = Counter(b.name for b in boxes if b.name)
    problems += [f"{name} names {n} boxes" for name, n in counts.items() if n > 1]
    return problems


def explicit_labels(page: str) -> set[str]:
    """The page's MyST targets, `(name)=` above a heading: anchors that hold in every language (a heading's
    slug changes with its translated text)."""
    text = " ".join(block.text for block in book_text.page_blocks(page))
    return set(re.findall(r"\(([A-Za-z0-9_-]+)\)=", text))


def shown_in_problems() -> list[str]:
    """Each "Shown in" link must name the page that holds its box (or heading), and every box must be listed."""
    boxes = {b.name: b for b in book_text.erratum_boxes() if b.name}
    pages = book_text.pages()
    tables = errata_tables()
    problems, listed = [], set()
    if not set(tables) >= {"Errors and imprecisions", "Claims that hold"}:
        problems.append(f"the appendix's tables are {sorted(tables)}")
    for heading, rows in tables.items():
        for row in rows:
            links = book_text.shown_in_links(row[-1])
            if heading == "Errors and imprecisions" and not any(a.startswith("#erratum-") for _, a in links):
                problems.append(f"row {row[0]}: 'Shown in' links to no Erratum box")
            if not links:
                problems.append(f"row {row[0]}: 'Shown in' has no link")
            for text, address in links:
                if address.startswith("#erratum-"):
                    name = address[1:]
                    listed.add(name)
                    box = boxes.get(name)
                    if box is None:
                        problems.append(f"row {row[0]}: no Erratum box is named {name}")
                    elif text != book_text.page_title(box.page):
                        problems.append(f"row {row[0]}: [{text}](#{name}) is in {book_text.page_title(box.page)}"
                                        " (run `python scripts/book/book_text.py --write`)")
                    continue
                if address.startswith("#"):  # a MyST target `(name)=` above a heading, valid in every language
                    holders = [p for p in pages if address[1:] in explicit_labels(p)]
                    if len(holders) != 1:
                        problems.append(f"row {row[0]}: {address} is the target of {len(holders)} pages")
                    elif text != (title := book_text.page_title(holders[0])):
                        problems.append(f"row {row[0]}: [{text}]({address}) should say {title!r}")
                    continue
                path, _, anchor = address.partition("#")
                root = book_pages.ROOT.resolve()
                page = ((root / book_text.ERRATA_PAGE).parent / path).resolve().relative_to(root).as_posix()
                if page not in pages:
                    problems.append(f"row {row[0]}: {address} is not a page of the book")
                elif text != book_text.page_title(page):
                    problems.append(f"row {row[0]}: [{text}]({address}) should say {book_text.page_title(page)!r}")
                elif anchor and anchor not in heading_slugs(page):
                    problems.append(f"row {row[0]}: {page} has no heading #{anchor}")
    unlisted = sorted(set(boxes) - listed)
    problems += [f"{boxes[n].page}: box {n} ({boxes[n].title[:60]!r}) is in no row of the appendix" for n in unlisted]
    numbers = [row[0] for rows in tables.values() for row in rows]
    if numbers != [str(i) for i in range(1, len(numbers) + 1)]:
        problems.append(f"rows are numbered {numbers}, not 1, 2, 3, …")
    return problems


def test_every_erratum_box_has_a_name_and_the_erratum_class():
    problems = box_problems()
    assert not problems, "\n".join(problems)


def test_errata_appendix_lists_every_box_where_it_is():
    problems = shown_in_problems()
    assert not problems, "\n".join(problems)


def test_errata_checks_on_a_small_book(tmp_path, monkeypatch):
    """The checks find a box without a name, a row pointing at the wrong page and an unlisted box; --write fixes
    the link text."""
    (tmp_path / "chapters").mkdir()
    (tmp_path / "appendices").mkdir()
    (tmp_path / "_toc.yml").write_text(
        "root: intro\nchapters:\n- file: chapters/01_a\n- file: chapters/02_b\n- file: appendices/errata\n")
    (tmp_path / "intro.md").write_text("# Intro\n")
    box = "```{{admonition}} Erratum (course page: \"x\")\n:class: warning erratum\n{}Body.\n```\n"
    (tmp_path / "chapters" / "01_a.md").write_text("# A\n\n## A section\n\n" + box.format(":name: erratum-one\n"))
    (tmp_path / "chapters" / "02_b.md").write_text("# B\n\n" + box.format(":name: erratum-two\n") + box.format(""))
    header = "| # | Source | Says | Right | Shown in |\n|---|---|---|---|---|\n"
    appendix = ("# Errata\n\n## Errors and imprecisions\n\n" + header
                + "| 1 | course page | x | y | [Chapter 2](#erratum-one) |\n\n## Claims that hold\n\n" + header
                + "| 2 | guide | x | y | [Chapter 1](../chapters/01_a.md#a-section), "
                "[Chapter 1](../chapters/01_a.md#nope) |\n")
    (tmp_path / "appendices" / "errata.md").write_text(appendix)
    monkeypatch.setattr(book_pages, "ROOT", tmp_path)
    assert box_problems() == ["chapters/02_b.md: 'Erratum (course page: \"x\")' has no `:name: erratum-…`"]
    problems = shown_in_problems()
    assert ("row 1: [Chapter 2](#erratum-one) is in Chapter 1 (run `python scripts/book/book_text.py --write`)"
            in problems)
    assert "row 2: chapters/01_a.md has no heading #nope" in problems
    assert any("box erratum-two" in p and "is in no row" in p for p in problems)
    assert len(problems) == 3, problems
    assert book_text.write_shown_in() == ["[Chapter 2](#erratum-one) -> [Chapter 1](#erratum-one)"]
    assert len(shown_in_problems()) == 2


def test_name_boxes_adds_the_name_and_class_and_nothing_else(tmp_path, monkeypatch):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("Text.\n\n```{admonition} Erratum (guide: \"x\")\n:class: warning\nBody.\n```"),
        nbformat.v4.new_code_cell("1 + 1", outputs=[nbformat.v4.new_output("execute_result", {"text/plain": "2"})]),
    ]
    (tmp_path / "chapters").mkdir()
    path = tmp_path / "chapters" / "01_a.ipynb"
    nbformat.write(nb, path)
    monkeypatch.setattr(book_pages, "ROOT", tmp_path)
    assert book_text.name_boxes([("chapters/01_a.ipynb", "guide", "erratum-x")]) == ["chapters/01_a.ipynb: erratum-x"]
    after = nbformat.read(path, as_version=4)
    assert after.cells[0].source == "Text.\n\n```{admonition} Erratum (guide: \"x\")\n:class: warning erratum\n" \
        ":name: erratum-x\nBody.\n```"
    assert after.cells[1] == nb.cells[1]
    assert book_text.name_boxes([("chapters/01_a.ipynb", "guide", "erratum-y")]) == []  # named already
    with pytest.raises(ValueError, match="matches 0 Erratum boxes"):
        book_text.name_boxes([("chapters/01_a.ipynb", "no such title", "erratum-z")])
