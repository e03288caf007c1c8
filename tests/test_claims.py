"""The claims ledger (`references/claims.yml`): every sentence that names a real system is accounted for,
every marker names an entry, every entry is well formed and used, and the Spanish edition keeps the
markers. The bugs these catch: a sentence about vLLM added with no check behind it; a marker whose id
was renamed in the ledger (the build would fail later, less clearly); an entry with no date or source;
a translation that drops the version bracket."""

from __future__ import annotations

import datetime as dt
import re
import sys
from pathlib import Path

import pytest

from minigpt.book import claims

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "book"))
import book_pages  # noqa: E402
import claim_sentences  # noqa: E402

LEDGER = claims.load(ROOT / "references" / "claims.yml")
GOOD = dict(system="vLLM", version="v0.11.2", source="vllm/config.py:12", url="https://github.com/x/y",
            checked="2026-12-03", quote="max_num_seqs = 1024", statement="vLLM admits `max_num_seqs` sequences.",
            statement_es="vLLM admite `max_num_seqs` secuencias.")


def _ledger(**extra: object) -> dict:
    return {"max_age_days": 180, "systems": ["vLLM", "SGLang"], "claims": {"vllm-seqs": dict(GOOD)}, **extra}


def test_every_sentence_that_names_a_real_system_is_accounted_for():
    found = claim_sentences.naming(LEDGER)
    missing = claim_sentences.unaccounted(LEDGER, found)
    assert not missing, ("sentences that name a real system with no {claim} marker and no line in "
                         "references/claims.yml (python scripts/book/claim_sentences.py prints them):\n"
                         + "\n".join(f"{s.page} {s.where}: {s.text[:160]}" for s in missing))
    stale = claim_sentences.stale_listings(LEDGER, found)
    assert not stale, "ledger lines whose sentence is gone (remove or update them):\n" + "\n".join(stale)


def test_every_marker_names_an_entry_and_every_entry_is_used():
    used: dict[str, list[str]] = {}
    for page in book_pages.pages():
        for block in book_pages.page_blocks(page):
            for key in claims.markers(block.text):
                used.setdefault(key, []).append(page)
    unknown = {k: v for k, v in used.items() if k not in LEDGER.claims}
    assert not unknown, f"markers with no ledger entry: {unknown}"
    unused = sorted(set(LEDGER.claims) - set(used))
    assert not unused, f"ledger entries no page marks (mark the sentence or remove the entry): {unused}"


def test_the_spanish_catalogs_keep_every_marker():
    babel = pytest.importorskip("babel.messages.pofile")
    lost = []
    for po in sorted((ROOT / "locales" / "es" / "LC_MESSAGES").rglob("*.po")):
        with po.open("rb") as f:
            for message in babel.read_po(f):
                if message.id and message.string and not message.fuzzy and sorted(
                        claims.markers(message.id)) != sorted(claims.markers(message.string)):
                    lost.append(f"{po.relative_to(ROOT)}: {message.id[:80]}")
    assert not lost, "translations whose {claim} markers differ from the English:\n" + "\n".join(lost)


def test_a_sentence_naming_a_system_needs_a_marker_or_a_line(monkeypatch, tmp_path):
    """A synthetic page: the detector sees the system in prose, not in code, roles or maths."""
    ledger = claims.parse(_ledger(unchecked=[{"page": "p.md", "text": "SGLang runs radix trees"}]))
    text = ("vLLM admits 1024 sequences by default. SGLang runs radix trees, says its docs.\n\n"
            "A name in code `vLLM` or a role {cite}`vLLM2023` is not prose. Checked {claim}`vllm-seqs`: "
            "vLLM admits 1024.\n\n```python\nimport vLLM\n```\n")
    monkeypatch.setattr(book_pages, "page_blocks", lambda page: [book_pages.Block(page, "", text)])
    found = claim_sentences.naming(ledger, ["p.md"])
    assert [s.text[:20] for s in found] == ["vLLM admits 1024 seq", "SGLang runs radix tr", "Checked {claim}`vllm"]
    assert [s.text[:20] for s in claim_sentences.unaccounted(ledger, found)] == ["vLLM admits 1024 seq"]
    gone = claims.parse(_ledger(mentions=[{"page": "p.md", "text": "no such sentence", "why": "x"}]))
    assert claim_sentences.stale_listings(gone, found) == ["mentions: p.md: 'no such sentence'"]


@pytest.mark.parametrize(("field", "value", "message"), [
    ("checked", "03/12/2026", r"^claims\.vllm-seqs\.checked: a date YYYY-MM-DD, got '03/12/2026'$"),
    ("url", "github.com/x", r"^claims\.vllm-seqs\.url: an https:// address"),
    ("quote", " ", r"^claims\.vllm-seqs\.quote: a non-empty string"),
    ("extra", "x", r"fields must be exactly .*unknown \['extra'\]"),
])
def test_a_malformed_entry_is_refused_naming_its_field(field, value, message):
    data = _ledger()
    data["claims"]["vllm-seqs"][field] = value
    with pytest.raises(ValueError, match=message):
        claims.parse(data)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("version", "technical report (arXiv:2503.19786, March 2025)",
     r"^claims\.vllm-seqs\.version: a tag, commit or date .* without the words \['technical', 'report', 'March'\]"),
    ("version", "main@0251105 (tag fa4-v4.0.0.beta27)", r"without the words \['tag'\]"),
    ("source", "sglang-0.5.23 wheel, schedule.py:137 and 311", r"^claims\.vllm-seqs\.source_es: the source has "
     r"the words \['wheel', 'and'\], which the Spanish appendix would show in English"),
    ("source_es", " ", r"^claims\.vllm-seqs\.source_es: a non-empty string"),
])
def test_what_the_spanish_edition_would_show_in_english_is_refused(field, value, message):
    """The version is the bracket both editions' prose show, so it holds no words; a source with prose words
    needs its Spanish twin. Guards "[Gemma 3 technical report (…, March 2025)]" in a Spanish sentence, and a
    Spanish appendix that shows "the disaggregated-prefill proxy example"."""
    data = _ledger()
    data["claims"]["vllm-seqs"][field] = value
    with pytest.raises(ValueError, match=message):
        claims.parse(data)


def test_an_entry_keeps_every_field_where_it_was_given():
    """Each field of the YAML lands in its own attribute (a constructor that shifts or drops one would show
    the quote as the statement); `source_es` is optional, empty when not given."""
    claim = claims.parse(_ledger()).claims["vllm-seqs"]
    given = {**GOOD, "checked": dt.date(2026, 12, 3), "source_es": ""}
    assert {f: getattr(claim, f) for f in given} == given
    spanish = claims.parse({**_ledger(), "claims": {"vllm-seqs": {**GOOD, "source_es": "vllm/config.py:12 y más"}}})
    assert spanish.claims["vllm-seqs"].source_es == "vllm/config.py:12 y más"
    for data, message in ((["a"], "an entry must be a mapping of system, version, source, url, checked, quote, "
                           "statement, statement_es, got ['a']"),
                          ({**GOOD, "x": 1}, "fields must be exactly system, version, source, url, checked, quote, "
                           "statement, statement_es (and source_es where needed); missing [], unknown ['x']")):
        with pytest.raises(ValueError) as err:
            claims.parse({**_ledger(), "claims": {"vllm-seqs": data}})
        assert str(err.value) == f"claims.vllm-seqs: {message}"


def test_prose_words_are_what_is_not_a_path_a_flag_or_an_identifier():
    assert claims.prose_words("vllm/envs.py:636 (VLLM_BATCH_INVARIANT); --kv-offloading-size") == []
    assert claims.prose_words("linear.py:1066 (QKVParallelLinear); main@7b58334, v0.33.0 2023-12-16") == []
    assert claims.prose_words("_custom_ops.py (no paged_attention_v1/v2 on CUDA)") == ["no", "on"]
    assert claims.prose_words("the v0.2 model card's change list") == ["the", "model", "card's", "change", "list"]
    assert claims.prose_words("paquete wheel sglang-0.5.23, y 311") == ["paquete", "wheel", "y"]
    assert claims.prose_words("the tensor-parallel rows") == ["the", "tensor-parallel", "rows"]


def test_every_entry_shows_its_source_in_the_editions_language():
    """Each Spanish source is the English one's paths, lines and names with Spanish words around them: the same
    code-like tokens in the same order (a translation that drops or changes a line number fails)."""
    def code(text: str) -> list[str]:  # the paths, lines, commits and flags
        return [w for w in re.split(r"[\s,;()`]+", text) if re.search(r"[/:@\d]|^--", w)]

    for claim in LEDGER.claims.values():
        assert claim.source_in("en") == claim.source
        if claim.source_es:
            assert code(claim.source_es) == code(claim.source), claim.id
            assert claim.source_in("es") == claim.source_es != claim.source
        else:
            assert claims.prose_words(claim.source) == [] and claim.source_in("es") == claim.source


def test_malformed_ledgers_are_refused():
    data = _ledger()
    del data["claims"]["vllm-seqs"]["source"]
    with pytest.raises(ValueError, match=r"missing \['source'\]"):
        claims.parse(data)
    with pytest.raises(ValueError, match="an id must be lower-case"):
        claims.parse({**_ledger(), "claims": {"vLLM_seqs": dict(GOOD)}})
    with pytest.raises(ValueError, match="max_age_days: an integer >= 1"):
        claims.parse({**_ledger(), "max_age_days": 0})
    with pytest.raises(ValueError, match=r"unchecked\[0\]: exactly the non-empty strings page, text"):
        claims.parse(_ledger(unchecked=[{"page": "p.md"}]))


def test_stale_lists_entries_older_than_the_age_oldest_first():
    data = _ledger()
    data["claims"]["sglang-a"] = {**GOOD, "system": "SGLang", "checked": "2026-01-01"}
    data["claims"]["sglang-b"] = {**GOOD, "system": "SGLang", "checked": "2025-12-01"}
    ledger = claims.parse(data)
    today = dt.date(2026, 12, 3)
    assert [c.id for c in ledger.stale(today)] == ["sglang-b", "sglang-a"]
    assert ledger.stale(dt.date(2026, 6, 29)) == [ledger.claims["sglang-b"]]  # 210 and 179 days
    assert [c.id for c in ledger.stale(dt.date(2026, 6, 29), days=170)] == ["sglang-b", "sglang-a"]
    assert ledger.claims["vllm-seqs"].label == "vLLM v0.11.2"
    assert claims.markers("a {claim}`x-y` b {claim}` z `") == ["x-y", " z "]


def test_the_ledgers_repository_addresses_are_pinned():
    """An entry that points into a repository names a commit or a release, not a branch (a branch
    moves, and the line quoted with it). Age is not a test failure: `make claims-report` lists it."""
    for c in LEDGER.claims.values():
        if "github.com" in c.url and "/blob/" in c.url:
            ref = c.url.split("/blob/")[1].split("/")[0]
            assert re.fullmatch(r"[0-9a-f]{40}|v?\d+(\.\d+)*\w*", ref), (c.id, ref)


def test_prune_removes_only_the_lines_whose_sentence_is_gone(monkeypatch, tmp_path):
    """`claim_sentences.py --prune` rewrites the ledger's last two sections: a line whose sentence is still
    on its page stays (with its reason), a line whose sentence was rewritten goes; the entries above are
    untouched. Guards a prune that drops every line, or keeps the stale one."""
    path = tmp_path / "claims.yml"
    path.write_text("# head\nmax_age_days: 180\nsystems: [vLLM]\nclaims:\n  vllm-seqs:\n"
                    + "".join(f"    {k}: {v!r}\n" for k, v in GOOD.items())
                    + "\nmentions:\n  - page: p.md\n    text: \"vLLM {cite}`k` measured\"\n    why: \"paper\"\n"
                    + "\nunchecked:\n  - page: p.md\n    text: \"vLLM admits\"\n  - page: p.md\n    text: \"gone\"\n")
    text = "vLLM {cite}`k` measured 2x. vLLM admits 1024 sequences. A {claim}`vllm-seqs` vLLM line."
    monkeypatch.setattr(book_pages, "page_blocks", lambda page: [book_pages.Block(page, "", text)])
    monkeypatch.setattr(book_pages, "pages", lambda: ["p.md"])
    assert claim_sentences.prune(path) == ["unchecked: p.md: 'gone'"]
    ledger = claims.load(path)
    assert [m["text"] for m in ledger.mentions] == ["vLLM {cite}`k` measured"]
    assert [u["text"] for u in ledger.unchecked] == ["vLLM admits"] and "vllm-seqs" in ledger.claims
    assert path.read_text().startswith("# head\n")


def _sphinx(tmp_path: Path, body: str, language: str = "en", entry: dict | None = None) -> tuple[int, str, str]:
    """Build a two-page Sphinx project with the extension; (status, warnings, html of the ledger page)."""
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    (src / "references").mkdir(parents=True)
    (src / "conf.py").write_text(f"extensions = ['minigpt.book.sphinx_claims']\nlanguage = {language!r}\n")
    (src / "references" / "claims.yml").write_text(
        "max_age_days: 180\nsystems: [vLLM]\nclaims:\n  vllm-seqs:\n"
        + "".join(f"    {k}: {v!r}\n" for k, v in (entry or GOOD).items())
        + "unchecked:\n  - page: p.md\n    text: vLLM does a thing\n")
    (src / "index.rst").write_text(f"Home\n====\n\n{body}\n\n.. toctree::\n\n   ledger\n")
    (src / "ledger.rst").write_text("Ledger\n======\n\n.. claims-ledger::\n")
    import io
    warnings = io.StringIO()
    app = Sphinx(str(src), str(src), str(tmp_path / "out"), str(tmp_path / "doctrees"), "html",
                 status=None, warning=warnings, freshenv=True)
    app.build()
    return app.statuscode, warnings.getvalue(), (tmp_path / "out" / "ledger.html").read_text(encoding="utf-8")


def test_the_role_links_the_version_checked_to_its_entry(tmp_path):
    """The role renders "[vLLM v0.11.2]" linked to the entry's anchor on the ledger page, which shows the
    statement, the source's address and the date; the reader sees the unchecked list too. Guards a role
    that renders nothing, or a link that points nowhere."""
    status, warnings, ledger = _sphinx(tmp_path, "vLLM admits 1024 sequences :claim:`vllm-seqs`.")
    assert status == 0 and "WARNING" not in warnings, warnings
    home = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert 'href="ledger.html#claim-vllm-seqs"' in home and "[vLLM v0.11.2]" in home
    assert 'id="claim-vllm-seqs"' in ledger and GOOD["url"] in ledger
    assert "vLLM admits <code" in ledger and "max_num_seqs</span></code> sequences." in ledger
    assert "checked 2026-12-03" in ledger and "Not yet checked against a source of late 2026" in ledger
    assert "vLLM does a thing" in ledger


def test_an_unknown_claim_is_a_build_error_and_the_appendix_speaks_the_editions_language(tmp_path):
    _, warnings, _ = _sphinx(tmp_path / "a", "Said :claim:`vllm-nope`.")
    assert "unknown claim 'vllm-nope'" in warnings
    _, _, ledger = _sphinx(tmp_path / "b", "Said :claim:`vllm-seqs`.", language="es")
    assert "comprobado el 2026-12-03" in ledger and "Aún sin comprobar" in ledger
    assert "vLLM admite <code" in ledger and "admits" not in ledger
    entry = {**GOOD, "source": "vllm/config.py:12 (the default); --max-num-seqs",
             "source_es": "vllm/config.py:12 (el valor por defecto); --max-num-seqs"}
    for language, shown, hidden in (("es", "(el valor por defecto)", "(the default)"),
                                    ("en", "(the default)", "(el valor por defecto)")):
        _, _, page = _sphinx(tmp_path / f"c{language}", "Said :claim:`vllm-seqs`.", language=language, entry=entry)
        assert shown in page and hidden not in page, language
        assert "; --max-num-seqs" in page, "a flag's two hyphens became a dash"


def test_a_sentence_that_starts_with_a_lower_case_system_name_is_its_own():
    """"… within each other's spread. vLLM's V0 engine offered both" is two sentences: a marker on the second
    must not account for the first, nor a line for the first hide the second."""
    assert claim_sentences.sentences("The modes are level. vLLM's V0 engine offered both. gpt-fast runs it.") == [
        "The modes are level.", "vLLM's V0 engine offered both.", "gpt-fast runs it."]
    assert claim_sentences.sentences("Use `vllm serve`. e.g. this stays") == ["Use `vllm serve`. e.g. this stays"]
