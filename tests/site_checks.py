"""The checks of one loaded page that the per-page visits run (tests/test_site.py for the English pages,
tests/test_site_es_english.py for the Spanish ones): one visit per page and edition does them all, so that
the site tests fit CI's budget (CONTRIBUTING.md, "The suite's budget").

- `weight_problems`: everything the page loaded, counted in the browser (scripts, styles, fonts, images,
  MathJax's parts, raw as served). A page loads at most `MAX_BYTES`, and at most `SHELL_BYTES` apart from
  its own content, the images of its figures and MiniGPT's weights where MiniGPT runs (what is left is the
  theme, the scripts, the fonts, MathJax: what every page pays), so that a 1.5 MB icon script on every
  page, or a 3.6 MB widget manager for one control, fails on the first page it reaches.
- `reader_view`: each erratum box shows its title only (its text one click away), and each figure's image
  is a link to the image itself, shown (at the desktop width) no narrower than its natural width or the main
  column, `figure_text.COLUMN_PX`: the scale `minigpt.book.figure_text` assumes when it checks that every
  figure's text is at least 10 px on the page. A theme change that narrows the column fails here, not
  silently under the text check.
- `control_problems`: every control of every explorer, driven from the keyboard (Home, End) and set to its
  middle (tests/test_site_controls.py says what it catches).
- `axe_problems`: axe-core (pinned in package.json, injected from node_modules: nothing from a CDN, nothing
  added to the site) finds no serious or critical violation of its default rules (WCAG 2.x A and AA and
  its best practices) on the page: contrast, names of controls, images and plots, list structure, ARIA.
- `phone_problems`, last (it narrows the window): at 390 px nothing makes the page scroll sideways, and
  every explorer's controls and readouts lie inside its box. The bugs: a long inline code span or URL that
  cannot break (an install line once widened the landing page to 560 px), and an explorer whose rows keep
  their desktop layout (a 12em label, a track and a 7em readout) on a phone, pushing every readout past the
  right edge, where the output's own scroller hides it. The window is narrowed, not reloaded as a phone:
  the theme's and the explorers' layouts follow the width (CSS media queries), which is the same; MiniGPT
  live's own phone layout, touch included, is tested by tests/test_minigpt_live_site.py and the engine
  page's by tests/test_watch_engine_site.py.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: No page loads more than this many bytes (raw, as served: no compression), everything included.
MAX_BYTES = 4_000_000
#: Nor more than this apart from its content: the images of its figures, MiniGPT's weights.
SHELL_BYTES = 2_000_000
CONTENT = ("/_images/", "/minigpt-web/minigpt_weights.js")
#: The phone's width in CSS pixels.
PHONE_WIDTH = 390


#: axe-core's script, installed by `npm ci` (scripts/book/vendor_assets.sh) with the site's own packages.
AXE = Path(__file__).resolve().parent.parent / "node_modules" / "axe-core" / "axe.min.js"
#: The impacts that fail a page (axe's four: minor, moderate, serious, critical).
AXE_FAILS = ("serious", "critical")


@functools.cache
def _axe_source() -> str:
    assert AXE.is_file(), f"{AXE} is missing: run scripts/book/vendor_assets.sh (npm ci)"
    return AXE.read_text(encoding="utf-8")


#: axe's rules that read colours only (text against its background, a link against the text around it): what
#: they check is the stylesheet's colours and the markup that carries them, the same in both editions.
COLOUR_RULES = ("color-contrast", "link-in-text-block")


def axe_problems(page, *, colours: bool = True) -> list[str]:
    """Each serious or critical axe-core violation on the loaded page: rule, impact, how many elements, the
    first two (selector and markup). `colours=False` leaves out `COLOUR_RULES`: the Spanish pages, built from
    the same sources with the same stylesheet, whose colours the English pages' visits check (the two rules
    are two thirds of axe's time on a chapter)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(content=_axe_source())
    off = {} if colours else {rule: {"enabled": False} for rule in COLOUR_RULES}
    found = page.evaluate("""async ([fails, off]) => {
      const r = await axe.run(document, {resultTypes: ["violations"], rules: off});
      return r.violations.filter(v => fails.includes(v.impact)).map(v => [v.id, v.impact, v.nodes.length,
        v.nodes.slice(0, 2).map(n => n.target.join(" ") + " " + (n.html || "").slice(0, 120))]);
    }""", [list(AXE_FAILS), off])
    return [f"axe {rule} ({impact}, {n} elements): {'; '.join(where)}" for rule, impact, n, where in found]


def weight_problems(sizes: dict[str, int]) -> list[str]:
    """What is wrong with the bytes a page loaded (`Visit.sizes`: URL -> bytes)."""
    if not sizes:  # a visit without count_bytes: the check would pass having weighed nothing
        return ["no response was counted (Visit(..., count_bytes=True))"]
    total = sum(sizes.values())
    shell = sum(size for url, size in sizes.items() if not any(c in unquote(urlsplit(url).path) for c in CONTENT))
    biggest = [(url.rsplit("/", 1)[-1], size) for url, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:4]]
    problems = []
    if total > MAX_BYTES:
        problems.append(f"the page loads {total / 1e6:.2f} MB, over {MAX_BYTES / 1e6:.0f} MB; biggest: {biggest}")
    if shell > SHELL_BYTES:
        problems.append(f"apart from its figures the page loads {shell / 1e6:.2f} MB, over "
                        f"{SHELL_BYTES / 1e6:.0f} MB; biggest: {biggest}")
    return problems


def reader_view(page) -> list[str]:
    """Erratum boxes closed with their title shown; every figure's image a link to itself."""
    problems = []
    for box in page.locator(".admonition.erratum").all():
        title = box.locator(".admonition-title")
        if not title.is_visible():
            problems.append("an erratum box without its title")
            continue
        body = box.locator(":scope > :not(.admonition-title):not(button)")
        if not body.count() or any(part.is_visible() for part in body.all()):
            problems.append(f"an erratum box is open: {title.text_content()[:80]!r}")
    for image in page.locator("main figure img").all():
        link = image.locator("xpath=ancestor::a[1]")
        if link.count() != 1 or link.get_attribute("href") != image.get_attribute("src"):
            problems.append(f"figure {image.get_attribute('src')} does not open at full size")
    return problems + figure_width_problems(page)


#: Every figure image on the page, once loaded: its address, shown width and natural width (CSS px).
FIGURE_WIDTHS = """() => [...document.querySelectorAll('main figure img')].map(
    (i) => [i.getAttribute('src'), i.getBoundingClientRect().width, i.naturalWidth])"""


def figure_width_problems(page) -> list[str]:
    """A figure image shown narrower than min(its natural width, `figure_text.COLUMN_PX`) by more than a
    pixel of rounding: its text is then smaller on the page than the text check measured."""
    from minigpt.book.figure_text import COLUMN_PX

    page.wait_for_function("() => [...document.querySelectorAll('main figure img')].every((i) => i.complete)")
    return [f"figure {src.rsplit('/', 1)[-1][:16]} is shown {shown:.0f} px wide, under min(natural {natural} px, "
            f"the column's {COLUMN_PX} px that minigpt.book.figure_text assumes)"
            for src, shown, natural in page.evaluate(FIGURE_WIDTHS) if shown < min(natural, COLUMN_PX) - 1]


def control_problems(page) -> list[str]:
    """Every control of every explorer on the page, driven (`check_control`; what it catches:
    tests/test_site_controls.py)."""
    problems: list[str] = []
    for box in page.locator("div.mgx-explorer").all():
        if box.get_attribute("data-ready") != "1":
            problems.append(f"{box.get_attribute('data-explorer')}: explorer script did not run")
            continue
        spec = json.loads(box.locator("script.mgx-spec").text_content())
        for slider in spec["sliders"]:
            problems += check_control(page, box, spec["id"], slider)
    return problems


# The state of one explorer: every output's value (or error), the plot's drawing, and every slider's value.
# Also whether the focused element is the control and shows a focus ring (an outline or a box shadow).
STATE = """(control) => {
    const box = control.closest("div.mgx-explorer"), svg = box.querySelector("svg.mgx-plot");
    const style = getComputedStyle(control);
    const ring = (style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0)
        || style.boxShadow !== "none";
    // The plot's texts (ticks, axis titles, legend) as drawn: each inside the picture, no two overlapping.
    const labels = [];
    if (svg) {
        const frame = svg.getBoundingClientRect(), texts = [...svg.querySelectorAll("text")]
            .map((t) => [t.textContent, t.getBoundingClientRect()]).filter(([, r]) => r.width);
        for (const [text, r] of texts) {
            if (r.left < frame.left - 0.5 || r.right > frame.right + 0.5 || r.top < frame.top - 0.5
                || r.bottom > frame.bottom + 0.5) labels.push(`"${text}" is clipped by the plot's edge`);
        }
        texts.forEach(([a, r], i) => texts.slice(i + 1).forEach(([b, q]) => {
            const w = Math.min(r.right, q.right) - Math.max(r.left, q.left);
            const h = Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top);
            if (w > 1 && h > 1) labels.push(`"${a}" overlaps "${b}"`);
        }));
    }
    return {
        labels,
        outputs: [...box.querySelectorAll("[data-output]")].map(
            (o) => o.getAttribute("data-value") + "|" + (o.getAttribute("data-error") || "")),
        plot: svg ? svg.innerHTML : "",
        value: control.closest("[data-slider]").getAttribute("data-value"),
        focused: document.activeElement === control && control.matches(":focus-visible"),
        ring,
    };
}"""

# After End: the state there, then at the control's middle position (set as the reader's drag would), then the
# control put back where it started.
END_MIDDLE_BACK = """(control, [start]) => {
    const state = """ + STATE + """;
    const set = (position) => {
        control.value = String(position);
        control.dispatchEvent(new Event("input", {bubbles: true}));
        control.dispatchEvent(new Event("change", {bubbles: true}));
    };
    const end = state(control);
    if (control.tagName === "SELECT") set(Math.floor(control.options.length / 2));
    else {
        const lo = +control.min, hi = +control.max, step = +control.step || 1;
        set(lo + Math.round((hi - lo) / 2 / step) * step);
    }
    const middle = state(control);
    set(start);
    return [end, middle];
}"""


def _value(raw: str) -> object:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw  # a string option is written as itself


def _close(a: object, b: object) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=1e-9)
    return a == b


def check_control(page, box, explorer_id: str, slider: dict) -> list[str]:
    """Drive one control: Home, End (keyboard), the middle; what is wrong with it, as sentences."""
    name = slider["name"]
    where = f"{explorer_id}.{name}"
    control = box.locator(f'[data-slider="{name}"]').locator("input, select")
    start = control.evaluate("c => { c.focus(); return c.value; }")
    states = {}
    page.keyboard.press("Home")
    states["Home"] = control.evaluate(STATE)
    page.keyboard.press("End")
    states["End"], states["middle"] = control.evaluate(END_MIDDLE_BACK, [start])
    problems = []
    if slider["options"] is None:
        first, last = slider["min"], slider["max"]
    else:
        first, last = slider["options"][0][1], slider["options"][-1][1]
    for key, want in (("Home", first), ("End", last)):
        got = _value(states[key]["value"])
        if not _close(got, want):
            problems.append(f"{where}: {key} gives {got!r}, not its {'min' if key == 'Home' else 'max'} {want!r}")
        if not states[key]["focused"]:
            problems.append(f"{where}: not focused (:focus-visible) after {key}")
        elif not states[key]["ring"]:
            problems.append(f"{where}: focused but shows no focus ring (outline or box-shadow)")
    middle = _value(states["middle"]["value"])
    if slider["options"] is None and not (isinstance(middle, int | float) and first < middle < last):
        problems.append(f"{where}: its middle position gives {middle!r}, not a value strictly inside "
                        f"({first!r}, {last!r})")
    for key, state in states.items():
        problems += [f"{where} at {key}: the plot's {label}" for label in state["labels"]]
    outputs = {json.dumps(s["outputs"]) for s in states.values()}
    plots = {s["plot"] for s in states.values()}
    if len(outputs) == 1 and len(plots) == 1:
        problems.append(f"{where}: min, middle and max show the same outputs and plot: the control moves nothing")
    return problems


# What sticks out past the screen's right edge: the text that does (a word that cannot break), and every
# explorer control or readout past its box's right edge or the screen's.
OVERFLOW = """(width) => {
    const found = [];
    // Inside a sideways scroller of its own that fits the screen (a table's, a code block's)? (Typeset maths
    // draws no text nodes: the theme fits each equation in the column, clipping a long inline one.)
    const scrolls = (e) => {
        for (let s = e; s; s = s.parentElement) {
            const x = getComputedStyle(s).overflowX;
            if (x === "auto" || x === "scroll") return s.getBoundingClientRect().right <= width + 0.5;
        }
        return false;
    };
    const article = document.querySelector(".bd-article") || document.body;
    const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
    while (walker.nextNode() && found.length < 5) {
        const node = walker.currentNode, range = document.createRange();
        // MathJax's hidden copy for screen readers (mjx-assistive-mml) is clipped to nothing.
        if (!node.textContent.trim() || node.parentElement.closest("mjx-assistive-mml")) continue;
        range.selectNodeContents(node);
        const right = Math.max(0, ...[...range.getClientRects()].map((r) => r.right));
        if (right > width + 0.5 && !scrolls(node.parentElement)) {
            found.push(`text "${node.textContent.trim().slice(0, 40)}" reaches ${Math.round(right)} px`);
        }
    }
    for (const box of document.querySelectorAll("div.mgx-explorer")) {
        const edge = Math.min(width, box.getBoundingClientRect().right) + 0.5;
        for (const e of box.querySelectorAll(".mgx-row > *, .mgx-value, svg")) {
            const r = e.getBoundingClientRect();
            if (r.width && r.right > edge) {
                const what = `${e.tagName.toLowerCase()}.${e.getAttribute("class") || ""}`;
                found.push(`${box.dataset.explorer}: ${what} "${e.textContent.trim().slice(0, 30)}" reaches `
                    + `${Math.round(r.right)} px, past ${Math.round(edge)}`);
            }
        }
    }
    return {scroll: document.documentElement.scrollWidth, found};
}"""


def phone_problems(page) -> list[str]:
    """The page narrowed to a phone's width, once its layout settled: what sticks out."""
    page.set_viewport_size({"width": PHONE_WIDTH, "height": 844})
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    got = page.evaluate(OVERFLOW, PHONE_WIDTH)
    problems = [f"at {PHONE_WIDTH} px: {what}" for what in got["found"]]
    if got["scroll"] > PHONE_WIDTH:
        problems.append(f"at {PHONE_WIDTH} px the page is {got['scroll']} px wide")
    return problems
