"""The interface strings of the page scripts in the Spanish edition: locales/es/ui.yml.

On the Spanish site every page's head sets `globalThis.MiniGPTStrings = {lang, strings}` from
`locales/es/ui.yml` (English -> Spanish; `minigpt.book.sphinx_editions.add_ui_strings`), and the
explorers (minigpt/web/explorer.js) and MiniGPT live (minigpt/web/minigpt_live.js) show every string
they show through it. This file checks, with no browser:

- every visible string of every explorer committed in a notebook's outputs (chapters/, exercises/,
  decoder_ring/: title, slider and output labels, options, note, the static line, plot axis labels and
  series), every text its outputs, sliders and y ticks print at the initial settings and at the
  sliders' ends (where it holds words: "1,024 tokens" -> the template "{0} tokens"), every string
  minigpt_live.js passes to `tr(...)`, and the error messages of minigpt_forward.js a reader can
  trigger from the form, has an entry in ui.yml; the failure names the missing ones. The table has no
  entry nothing uses, and each entry keeps its key's {0}, {1}... and HTML tags;
- minigpt_live.js shows no literal text that bypasses `tr`;
- the number rule of minigpt/web/i18n.js (MiniGPTI18N, the one copy both scripts use) equals
  `minigpt.book.editions.localize_numbers` on a list of cases, and returns English input unchanged;
  neither script carries a copy of its own, and explorer.js without i18n.js (a kernel) stays English.

`python tests/test_ui_strings.py` prints the missing entries as YAML lines to translate.
The pages themselves in Chromium: tests/test_site_es.py.
"""

from __future__ import annotations

import html
import json
import re
import sys
from functools import cache
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
import yaml
from node import NODE, load_costs, run_node, slider_values_of

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from minigpt.book import editions  # noqa: E402

WEB = ROOT / "minigpt" / "web"
UI = ROOT / "locales" / "es" / "ui.yml"
NOTEBOOK_DIRS = ("chapters", "exercises", "decoder_ring")

# Numbers as the pages print them, and texts around numbers: the cases of the JS/Python number rule.
NUMBER_CASES = [
    "32,768", "3.95", "0.3.36", "L4-d128", "1.2e-05", "−1,234,567.25", "2048", "12345", "1,024 tokens",
    "867,328 (867.3 kFLOP)", "1.0 TB/s", "0.5%", "2.1×", "-3.5", "+7", "1e+21", "1.2e+21", "v5e", "GPT-3 175B",
    "H100 SXM (80.0 GiB)", "a1.5", "1.5a", "x 1,5", "1,5", "12,34", "1,2345", "1.2.3", "4.", ".5", "10..20",
    "0..4294967295", "D=5 and P=12,345", "α = 0.75, γ = 4", "٣٤٥٦٧", "100 GbE", "3,950", "1,000,000", "12.3k",
    "2.5G", "9.99e-4", "(4.71 chars/token)", "_12", "12_", "é12", "12é", "[4, 2, 10, 32]", "",
]


# ---- Explorer strings, from the committed notebook outputs ----

def notebooks() -> list[Path]:
    return [p for d in NOTEBOOK_DIRS for p in sorted((ROOT / d).glob("*.ipynb"))]


@cache
def explorer_boxes() -> tuple[tuple[str, str], ...]:
    """(notebook, the HTML of one explorer) for every explorer in every notebook's committed outputs."""
    found = []
    for path in notebooks():
        for cell in nbformat.read(path, as_version=4).cells:
            for out in cell.get("outputs", []):
                page = out.get("data", {}).get("text/html", "")
                page = "".join(page) if isinstance(page, list) else page
                if "mgx-explorer" not in page:
                    continue
                boxes = re.findall(r'<div class="mgx-explorer".*?</script></div>', page, re.S)
                assert boxes, f"{path.name}: an output mentions mgx-explorer but holds no explorer box"
                found += [(path.relative_to(ROOT).as_posix(), box) for box in boxes]
    return tuple(found)


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Serializer(HTMLParser):
    """A fragment re-serialized as a browser's innerHTML writes it (the HTML fragment serialization
    algorithm): entities decoded, then &, <, > and U+00A0 escaped in text, & and " in attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []

    def handle_starttag(self, tag, attrs):
        def quoted(v: str | None) -> str:
            return (v or "").replace("&", "&amp;").replace("\xa0", "&nbsp;").replace('"', "&quot;")

        attr = "".join(f' {k}="{quoted(v)}"' for k, v in attrs)
        self.out.append(f"<{tag}{attr}>")

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.out.append(f"</{tag}>")

    def handle_endtag(self, tag):
        if tag not in VOID:
            self.out.append(f"</{tag}>")

    def handle_data(self, data):
        self.out.append(data.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\xa0", "&nbsp;"))


def inner_html(source: str) -> str:
    """The innerHTML a browser gives an element whose source is `source`: the key explorer.js looks up."""
    parser = _Serializer()
    parser.feed(source)
    parser.close()
    return "".join(parser.out)


def spec_of(box: str) -> dict:
    m = re.search(r'<script type="application/json" class="mgx-spec">(.*?)</script>', box, re.S)
    assert m, "an explorer without its spec"
    return json.loads(m.group(1).replace("<\\/", "</"))


def explorer_labels() -> dict[str, set[str]]:
    """Every fixed visible string of every committed explorer (as explorer.js looks it up) -> where it is."""
    found: dict[str, set[str]] = {}

    def add(text: str, where: str) -> None:
        if re.search(r"[^\W\d_]", text):  # a string with a letter in it; bare numbers ("128") are only reformatted
            found.setdefault(text, set()).add(where)

    for nb, box in explorer_boxes():
        spec = spec_of(box)
        where = f"{nb} {spec['id']}"
        for cls in ("mgx-title", "mgx-note", "mgx-static"):
            for source in re.findall(rf'<div class="{cls}">(.*?)</div>', box, re.S):
                add(inner_html(source), f"{where} {cls}")
        for source in re.findall(r"<label[^>]*>(.*?)</label>", box, re.S):
            add(inner_html(source), f"{where} label")
        for source in re.findall(r"<option[^>]*>(.*?)</option>", box, re.S):
            add(html.unescape(source), f"{where} option")
        if spec.get("plot"):
            plot = spec["plot"]
            add(plot["x_label"], f"{where} plot x_label")
            add(plot["y_label"], f"{where} plot y_label")
            for s in plot["series"]:
                add(s["label"], f"{where} plot series")
    return found


def committed_cases() -> list[dict]:
    cases = []
    for nb, box in explorer_boxes():
        cases.append({"page": nb, "spec": spec_of(box), "values": slider_values_of(box)})
    return cases


@cache
def explorer_value_texts() -> dict[str, set[str]]:
    """Every text the committed explorers print in an output, a slider's value or an error, at the initial
    settings, each slider at five positions (a select at each option) and all at their ends, and the y ticks
    of the initial plot; and
    what fmt_memory_fit prints in each of its cases. Computed by explorer.js + the cost scripts under node."""
    script = f"""
      const C = {load_costs()};
      require({json.dumps(str(WEB / "explorer.js"))});
      const E = globalThis.MiniGPTExplorer;
      const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
      const seen = {{}};
      const add = (text, where) => {{ (seen[text] = seen[text] || []).push(where); }};
      for (const {{page, spec, values}} of cases) {{
        const at = (s, f) => E.valueAt(s, s.log ? f * 1000 : s.min + f * (s.max - s.min));
        const ends = (s) => s.options ? s.options.map((o) => o[1]) : [0, 0.25, 0.5, 0.75, 1].map((f) => at(s, f));
        const settings = [values];
        for (const s of spec.sliders) {{
          for (const v of ends(s)) settings.push(Object.assign({{}}, values, {{[s.name]: v}}));
        }}
        for (const end of [0, 4]) {{
          const all = Object.assign({{}}, values);
          for (const s of spec.sliders) if (!s.options) all[s.name] = ends(s)[end];
          settings.push(all);
        }}
        const where = page + " " + spec.id;
        for (const v of settings) {{
          const {{env, errors}} = E.evaluateAll(spec, v, C);
          for (const s of spec.sliders) if (s.fmt) add(E.format(s.fmt, v[s.name], C), where + " slider " + s.name);
          for (const o of spec.outputs) {{
            if (errors[o.name]) {{ add(errors[o.name], where + " error " + o.name); continue; }}
            try {{ add(E.format(o.fmt, env[o.name], C), where + " output " + o.name); }}
            catch (err) {{ add(String(err.message), where + " error " + o.name); }}
          }}
          if (spec.plot && v === values) {{  // a y axis prints one formatter's words: the initial plot shows them
            const m = E.plotModel(spec, v, C);
            if (!m.empty) for (const t of m.yLabels) add(t, where + " y tick");
          }}
        }}
      }}
      for (const fit of [{{weights_fit: false}}, {{weights_fit: true, fits: true, max_context: 1, max_batch: 1}},
                         {{weights_fit: true, fits: false, max_context: 1, max_batch: 1}}]) {{
        add(C.fmt_memory_fit(fit), "costs/format.js fmt_memory_fit");
      }}
      for (const b of [true, false]) add(E.format(null, b, C), "explorer.js format (a boolean)");
      process.stdout.write(JSON.stringify(seen));
    """
    got = run_node(script, json.dumps(committed_cases()))
    return {text: set(where) for text, where in got.items()}


# ---- MiniGPT live ----

JS_STRING = r'"(?:[^"\\\n]|\\.)*"'


def live_source() -> str:
    return (WEB / "minigpt_live.js").read_text(encoding="utf-8")


def live_tr_strings() -> set[str]:
    """The first argument of every tr("...") call of minigpt_live.js (a string literal, by rule)."""
    code = re.sub(r"^\s*//.*$", "", live_source(), flags=re.M)
    calls = re.findall(r"\btr\(", code)
    literal = re.findall(r"\btr\(\s*(" + JS_STRING + ")", code)
    assert len(literal) == len(calls) - code.count("function tr("), \
        "a tr(...) call whose first argument is not a string literal: the table cannot be checked"
    return {json.loads(s) for s in literal}


#: Watch the engine (decoder_ring/watch_engine.md)
ENGINE_PAGE = ("engine/watch.js", "engine/views.js", "engine/watch_text.js")


def _tr_literals(name: str, every: bool) -> set[str]:
    """The string literals a script of minigpt/web passes to tr() as its first argument (comments left out);
    `every`: each tr() call must pass one, so that the table can be checked."""
    code = re.sub(r"^\s*//.*$", "", (WEB / name).read_text(encoding="utf-8"), flags=re.M)
    literal = re.findall(r"\btr\(\s*(" + JS_STRING + ")", code)
    assert not every or len(literal) == len(re.findall(r"\btr\(", code)), \
        f"{name}: a tr(...) call whose first argument is not a string literal: the table cannot be checked"
    return {json.loads(s) for s in literal}


def engine_tr_strings() -> set[str]:
    """The first argument of every tr("...") call of Watch the engine's scripts (a string literal, by rule)."""
    return set().union(*(_tr_literals(name, every=True) for name in ENGINE_PAGE))


def explorer_fixed_strings() -> set[str]:
    """The string literals the explorers' own scripts pass to tr() (most of their tr() calls translate a
    label from an explorer's spec, checked through `explorer_labels`; these are the scripts' own words)."""
    return _tr_literals("explorer.js", every=False) | _tr_literals("explorer_plot.js", every=False)


def shipped_config() -> dict:
    return json.loads((ROOT / "minigpt" / "data" / "minigpt.json").read_text(encoding="utf-8"))["config"]


@cache
def live_error_messages() -> set[str]:
    """The messages of minigpt_forward.js that MiniGPT live's form can trigger (shown after "Cannot generate:"),
    with the shipped model's S_max and V; and the one the page throws itself."""
    c = shipped_config()
    script = f"""
      const F = require({json.dumps(str(WEB / "minigpt_forward.js"))});
      const model = {{config: {{S_max: {c["S_max"]}, V: {c["V"]}, L: 1, H_kv: 1, d_h: 1}}}};
      const ids = (n) => Array.from({{length: n}}, () => 1);
      const out = [];
      const tryIt = (f) => {{ try {{ f(); }} catch (e) {{ out.push(e.message); }} }};
      tryIt(() => F.checkRequest(model, [], 5));
      tryIt(() => F.checkRequest(model, ids({c["S_max"]} + 2), 1));
      tryIt(() => F.checkRequest(model, ids(5), 0));
      tryIt(() => F.checkRequest(model, ids(5), 2.5));
      tryIt(() => F.checkRequest(model, ids(5), 1000));
      tryIt(() => F.rngFromSeed(-1));
      tryIt(() => new F.Generation(model, ids(5), {{D: 3, temperature: -1}}));
      tryIt(() => new F.Generation(model, ids(5), {{D: 3, temperature: 1, topK: 0}}));
      process.stdout.write(JSON.stringify(out));
    """
    got = set(run_node(script))
    assert len(got) == 8, got
    thrown = re.findall(r"new RangeError\((" + JS_STRING + r")\)", live_source())
    return got | {json.loads(s) for s in thrown}


# ---- The table ----

def ui_table() -> dict[str, str]:
    if not UI.exists():
        return {}
    return {str(k): str(v) for k, v in (yaml.safe_load(UI.read_text(encoding="utf-8")) or {}).items()}


def template(text: str) -> str:
    """explorer.js `templateOf`: each number of the text as {0}, {1}, ..."""
    count = iter(range(10**6))
    return editions.NUMBER.sub(lambda m: f"{{{next(count)}}}", text)


def translated(text: str, table: dict[str, str]) -> str:
    """explorer.js `translated` in Python: what the Spanish page shows for a text computed in English."""
    if text in table:
        return editions.spaced_percent(table[text])
    numbers = [m.group(0) for m in editions.NUMBER.finditer(text)]
    key = template(text)
    if numbers and key in table:
        return editions.spaced_percent(
            re.sub(r"\{(\d+)\}", lambda m: editions.localize_numbers(numbers[int(m.group(1))], "es"), table[key]))
    return editions.spaced_percent(editions.localize_numbers(text, "es"))


# Units that stand as they are in every language, besides those of editions.needs_words ("kB", "EFLOP").
UNITS = re.compile(r"\b(?:[kKMGTPEZ]i?B|[kKMGTPEZ]?FLOPs?|[kKMGTPEZ]?B/s)\b")


def has_words(text: str) -> bool:
    """Whether a printed value holds words to translate (not only numbers, units and symbols)."""
    return editions.needs_words(UNITS.sub(" ", text))


def needed() -> dict[str, set[str]]:
    """Every key the table must hold -> where it is shown."""
    keys: dict[str, set[str]] = {}
    table = ui_table()
    for text, where in explorer_labels().items():
        keys.setdefault(text, set()).update(where)
    for text, where in explorer_value_texts().items():
        if has_words(text):
            keys.setdefault(text if text in table else template(text), set()).update(where)
    for text in live_tr_strings():
        keys.setdefault(text, set()).add("minigpt_live.js tr()")
    for text in engine_tr_strings():
        keys.setdefault(text, set()).add("Watch the engine tr()")
    for text in explorer_fixed_strings():
        keys.setdefault(text, set()).add("explorer_plot.js tr()")
    for text in live_error_messages():
        keys.setdefault(text if text in table else template(text), set()).add("a MiniGPT live error")
    return keys


def missing() -> dict[str, set[str]]:
    table = ui_table()
    return {k: v for k, v in needed().items() if k not in table}


@pytest.mark.skipif(NODE is None, reason="needs node")
def test_every_interface_string_has_a_spanish_entry() -> None:
    assert UI.exists(), f"{UI.relative_to(ROOT)} is missing"
    assert len(explorer_boxes()) >= 15 and len(live_tr_strings()) >= 60
    gaps = missing()
    lines = [f"  {k!r}  (shown in {sorted(v)[0]}{' and more' if len(v) > 1 else ''})" for k, v in sorted(gaps.items())]
    assert not gaps, (f"{len(gaps)} interface strings have no entry in {UI.relative_to(ROOT)} (add them, translated; "
                      "`python tests/test_ui_strings.py` prints them as YAML):\n" + "\n".join(lines))


@pytest.mark.skipif(NODE is None, reason="needs node")
def test_every_entry_is_used() -> None:
    unused = sorted(set(ui_table()) - set(needed()))
    assert not unused, f"entries of {UI.relative_to(ROOT)} that no explorer or MiniGPT live shows: {unused}"


def test_entries_keep_placeholders_and_markup() -> None:
    bad = []
    for key, value in ui_table().items():
        if sorted(re.findall(r"\{\d+\}", key)) != sorted(re.findall(r"\{\d+\}", value)):
            bad.append(f"{key!r} -> {value!r}: not the same {{n}} placeholders")
        if sorted(re.findall(r"</?\w+", key)) != sorted(re.findall(r"</?\w+", value)):
            bad.append(f"{key!r} -> {value!r}: not the same HTML tags")
        if not value.strip():
            bad.append(f"{key!r}: empty")
    assert not bad, "\n".join(bad)


def test_the_table_parses_as_the_site_reads_it() -> None:
    editions.ui_strings.cache_clear()
    assert editions.ui_strings("es") == ui_table() and len(ui_table()) >= 300
    assert editions.ui_strings("en") == {}


def test_the_explorer_keys_are_what_a_browser_serializes() -> None:
    assert inner_html("prompt tokens <i>P</i>") == "prompt tokens <i>P</i>"
    assert inner_html("the sweep&#x27;s CPU &amp; <b class='x'>a&nbsp;b</b>") == \
        'the sweep\'s CPU &amp; <b class="x">a&nbsp;b</b>'


def test_live_shows_no_text_that_bypasses_tr() -> None:
    """Text put on the page (text:, textContent =, title:, placeholder:, aria-label:) is a tr(...) or a value;
    the only English prose literals left are MiniGPT's own example prompts and a thrown message (translated
    through its template where it is shown)."""
    code = re.sub(r"^\s*//.*$", "", live_source(), flags=re.M)
    bindings = re.findall(r"\b(?:const|let|var|function)\s+tr\b|\btr\s*=>|\(tr[,)]",
                          code)
    assert len(bindings) == 1, "a second binding of the name tr (a table row?) shadows the translation function"
    rest = re.sub(r"\btr\(\s*" + JS_STRING, "tr(", code)
    direct = re.findall(r'(?:\btext:|textContent =|\btitle:|placeholder:|"aria-label":)\s*(' + JS_STRING + ")", rest)
    direct = [s for s in direct if s != '""']
    assert direct == [], f"literal text that bypasses tr: {direct}"
    examples = json.loads("[" + re.search(r"const EXAMPLES = \[(.*?)\];", code).group(1) + "]")
    allowed = set(examples) | {"new tokens D must be an integer >= 1, got nothing", "mgl-field mgl-inline",
                               "i18n.js must load before minigpt_live.js",
                               "mgl-plot mgl-flops", "mgl-plot mgl-times", "10px sans-serif", "rotate(-90 12 ",
                               "use strict"}
    prose = {json.loads(s) for s in re.findall(JS_STRING, rest)}
    prose = {s for s in prose if re.search(r"[A-Za-z]{2,}\s+[A-Za-z]", s.strip())}
    assert prose <= allowed, f"English prose that is not passed through tr: {sorted(prose - allowed)}"


# ---- The number rule: JavaScript against Python ----

I18N_FUNCTIONS = ("edition", "lang", "localizeNumbers", "spacedPercent", "templateOf", "tr", "translated",
                  "translateElement")


def test_the_strings_have_one_source() -> None:
    """i18n.js defines the edition's functions; explorer.js and minigpt_live.js use it and define none of them."""
    source = (WEB / "i18n.js").read_text(encoding="utf-8")
    for name in I18N_FUNCTIONS:
        assert f"function {name}(" in source, f"i18n.js does not define {name}"
    for script in ("explorer.js", "minigpt_live.js"):
        code = re.sub(r"^\s*//.*$", "", (WEB / script).read_text(encoding="utf-8"), flags=re.M)
        own = [name for name in (*I18N_FUNCTIONS, "number", "spanish", "fill") if f"function {name}(" in code]
        assert not own, f"{script} defines its own {own}: the edition's strings live in i18n.js"
        assert "MiniGPTI18N" in code and "THIN" not in code and "\\p{Nd}" not in code, script


#: Percentages as the notebooks print them, and what must stay: the % of an expression ("n % 1000000").
PERCENT_CASES = ["1,5%", "24%-39%", "100 %", "3\u202f%", "7\u00a0%", "n % 1000000", "a%", "x = 50% of 2"]


@pytest.mark.skipif(NODE is None, reason="needs node")
def test_js_numbers_match_localize_numbers() -> None:
    """MiniGPTI18N.localizeNumbers and templateOf (i18n.js) against editions.localize_numbers and NUMBER on
    every case; English unchanged; `translated` and `tr` with a table, and with none (English: the input
    itself)."""
    table = {"{0} tokens": "{0} tókenes", "yes": "sí", "Done: {0} new tokens.": "Hecho: {0} tokens nuevos."}
    js = f"""
      require({json.dumps(str(WEB / "i18n.js"))});
      const I = globalThis.MiniGPTI18N;
      const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
      const en = {{
        tr: I.tr("Done: {{0}} new tokens.", [32768]), translated: cases.map((t) => I.translated(t)),
        local: cases.map((t) => I.localizeNumbers(t)), lang: I.lang(),
      }};
      globalThis.MiniGPTStrings = {{lang: "es", strings: {json.dumps(table)}}};
      process.stdout.write(JSON.stringify({{
        es: cases.map((t) => I.localizeNumbers(t, "es")), en_explicit: cases.map((t) => I.localizeNumbers(t, "en")),
        templates: cases.map((t) => I.templateOf(t)), translated: cases.map((t) => I.translated(t)),
        tr: [I.tr("Done: {{0}} new tokens.", [32768]), I.tr("Done: {{0}} new tokens.", ["3.5"]),
             I.tr("unknown {{0}}", [1.5])],
        lang: I.lang(), en, percent: {json.dumps(PERCENT_CASES)}.map((t) => I.spacedPercent(t)),
        translatedPercent: I.translated("hit rate 0.5%"),
      }}));
    """
    got = run_node(js, json.dumps(NUMBER_CASES))
    # The percent rule (a no-break space before %, after a digit only) and its twin; applied to what is shown.
    assert got["percent"] == [editions.spaced_percent(t) for t in PERCENT_CASES]
    assert got["percent"][:3] == ["1,5\u00a0%", "24\u00a0%-39\u00a0%", "100\u00a0%"]
    assert got["translatedPercent"] == "hit rate 0,5\u00a0%" == translated("hit rate 0.5%", table)
    expected = [editions.localize_numbers(t, "es") for t in NUMBER_CASES]
    wrong = [(t, js_, py) for t, js_, py in zip(NUMBER_CASES, got["es"], expected, strict=True) if js_ != py]
    assert not wrong, "JS and Python write these numbers differently (case, JS, Python): " + repr(wrong)
    assert got["en_explicit"] == NUMBER_CASES
    assert got["templates"] == [template(t) for t in NUMBER_CASES]
    assert got["translated"] == [translated(t, table) for t in NUMBER_CASES]
    assert got["es"][:6] == ["32\u202f768", "3,95", "0.3.36", "L4-d128", "1,2e-05", "−1\u202f234\u202f567,25"]
    assert got["tr"] == ["Hecho: 32\u202f768 tokens nuevos.", "Hecho: 3.5 tokens nuevos.", "unknown 1,5"]
    assert got["lang"] == "es"
    assert got["en"] == {"tr": "Done: 32768 new tokens.", "translated": NUMBER_CASES, "local": NUMBER_CASES,
                         "lang": "en"}


@pytest.mark.skipif(NODE is None, reason="needs node")
@pytest.mark.parametrize("with_i18n", [False, True])
def test_explorer_uses_i18n_when_it_is_there(with_i18n: bool) -> None:
    """explorer.js looks MiniGPTI18N up when it uses it: loaded after it (or never, as in a kernel, where it
    prints English as it is) and with a Spanish table, the compact tick labels follow the table's edition."""
    js = f"""
      {load_costs()};
      require({json.dumps(str(WEB / "explorer.js"))});
      if ({json.dumps(with_i18n)}) require({json.dumps(str(WEB / "i18n.js"))});
      globalThis.MiniGPTStrings = {{lang: "es", strings: {{}}}};
      const E = globalThis.MiniGPTExplorer;
      process.stdout.write(JSON.stringify([E.localCompact("12.3k"), E.localCompact("32,768")]));
    """
    assert run_node(js) == (["12,3k", "32\u202f768"] if with_i18n else ["12.3k", "32,768"])


if __name__ == "__main__":  # the missing entries, as YAML lines to translate
    for key, where in sorted(missing().items()):
        print(f"# {sorted(where)[0]}\n{json.dumps(key, ensure_ascii=False)}: {json.dumps(key, ensure_ascii=False)}")
