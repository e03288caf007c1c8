// MiniGPTExplorer: analytic explorers that recompute in the browser, with no kernel. Their plots are drawn by
// explorer_plot.js, which every page and kernel loads before this file.
// minigpt/book/explorers.py writes the HTML (sliders, outputs with their initial values computed in
// Python, an optional plot, and a JSON spec). Every output and series of the spec is a call of a
// MiniGPTCosts function (costs/*.js) with named arguments: a string argument names a constant, a slider
// or an earlier output ("m.L" reads a field), anything else is a literal. On the book's site this file
// and the cost scripts its explorers call are loaded once per page and wire every explorer when the page has loaded; in a
// kernel they are inlined after the explorer, which calls `MiniGPTExplorer.initAll()`.
// On a page of another edition (globalThis.MiniGPTStrings, the Spanish site, read by i18n.js) `init` shows
// every text of the box through the edition's table (title, labels, options, note, plot axes and legend,
// values, errors) and writes the numbers it prints the edition's way; without it (English, a kernel)
// nothing changes.
(function (root) {
  "use strict";
  if (root.MiniGPTExplorer) return;  // several explorers on one page share one copy
  if (!root.MiniGPTExplorerPlot && typeof module !== "undefined" && module.exports) require("./explorer_plot.js");

  const MISSING = undefined;

  // The edition's strings: MiniGPTI18N (i18n.js), looked up when used, so the order the page loads the
  // scripts in does not matter. Without it (a kernel, where only the cost scripts and this file are inlined) every
  // text stays the English it is: the kernel has no edition's table anyway.
  const ENGLISH = {edition: () => null, localizeNumbers: String, tr: String, translated: String,
    translateElement: () => {}};
  const I18N = () => root.MiniGPTI18N || ENGLISH;

  function lookup(ref, env) {
    const [root, ...fields] = ref.split(".");
    if (!(root in env)) throw new Error(ref + " names no constant, slider or output");
    let value = env[root];
    for (const f of fields) {
      value = value !== null && typeof value === "object" && f in value ? value[f] : MISSING;
      if (value === MISSING) return MISSING;
    }
    return value;
  }

  // One call of the spec (explorers.py `_evaluate` is its twin).
  function evaluate(call, env, C) {
    if ("value" in call) return lookup(call.value, env);
    const args = {};
    for (const k in call.args) {
      const v = typeof call.args[k] === "string" ? lookup(call.args[k], env) : call.args[k];
      if (v !== MISSING) args[k] = v;
    }
    const fn = C[call.fn];
    if (typeof fn !== "function") throw new Error("MiniGPTCosts has no function " + call.fn + " (is its costs/ script loaded?)");
    const result = fn(args);
    return call.key !== null && call.key !== undefined ? result[call.key] : result;
  }

  // Constants, slider values, then every output in order (an output may read earlier ones); with `only` (a
  // Set of names), only those outputs.
  function evaluateAll(spec, values, C, only) {
    const env = Object.assign({}, spec.constants, values), errors = {};
    for (const o of spec.outputs) {
      if (only && !only.has(o.name)) continue;
      try {
        env[o.name] = evaluate(o, env, C);
      } catch (err) {
        env[o.name] = MISSING;
        errors[o.name] = String(err && err.message ? err.message : err);
      }
    }
    return {env, errors};
  }

  function format(fmt, x, C) {
    if (fmt) return C[fmt.fn](x, fmt.args);
    if (typeof x === "boolean") return x ? "yes" : "no";
    if (typeof x === "string") return x;
    return compact(x);
  }

  function group(x) {
    const [i, f] = String(x).split(".");
    const g = i.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    return f === undefined ? g : g + "." + f;
  }

  // A compact number for axis ticks and default displays: 1,234 / 12.3k / 4.5M / 1.2e+21.
  function compact(x) {
    if (typeof x !== "number" || !Number.isFinite(x)) return String(x);
    const a = Math.abs(x);
    if (a !== 0 && (a < 1e-3 || a >= 1e18)) return x.toExponential(1);
    if (a < 1e4) return group(Number.isInteger(x) ? x : +x.toPrecision(4));
    const units = [["E", 1e18], ["P", 1e15], ["T", 1e12], ["G", 1e9], ["M", 1e6], ["k", 1e3]];
    for (const [u, v] of units) {
      if (a >= v) return +(x / v).toPrecision(3) + u;
    }
    return String(x);
  }

  // A compact tick label in the edition's way: "12.3k" -> "12,3k" (the number before the suffix rewritten).
  function localCompact(label) {
    const m = /^(.*\d)([kMGTPE])$/.exec(label);
    return m ? I18N().localizeNumbers(m[1]) + m[2] : I18N().localizeNumbers(label);
  }

  function snap(x, s) {
    let v = s.step ? Math.round((x - s.min) / s.step) * s.step + s.min : x;
    v = Math.min(s.max, Math.max(s.min, v));
    return s.step && Number.isInteger(s.step) && Number.isInteger(s.min) ? Math.round(v) : +v.toPrecision(12);
  }

  // Slider value <-> position of the <input type=range>. Log sliders run over LOG_STEPS positions.
  const LOG_STEPS = 1000;
  function valueAt(s, pos) {
    if (s.options) return s.options[Math.round(pos)][1];
    if (!s.log) return snap(pos, s);
    return snap(s.min * Math.pow(s.max / s.min, pos / LOG_STEPS), s);
  }
  function positionOf(s, value) {
    if (!s.log) return value;
    return Math.round(LOG_STEPS * Math.log(value / s.min) / Math.log(s.max / s.min));
  }

  // The box's own texts in the edition's language, once (title, labels, options, note, the static line);
  // the values and the plot are written in it at each update. English pages: nothing to do.
  function translateBox(box) {
    if (!I18N().edition() || box.mgxTranslated) return;
    box.mgxTranslated = true;
    box.querySelectorAll(".mgx-title, .mgx-row > label, .mgx-note, .mgx-static").forEach(I18N().translateElement);
    box.querySelectorAll("option").forEach((o) => { o.textContent = I18N().translated(o.textContent); });
  }

  function init(box) {
    if (box.getAttribute("data-ready")) return;
    translateBox(box);
    const C = root.MiniGPTCosts;
    if (!C) return;  // the cost scripts not loaded (yet): the initial values computed in Python stay
    box.setAttribute("data-ready", "1");
    const spec = JSON.parse(box.querySelector("script.mgx-spec").textContent);
    const stale = box.querySelector(".mgx-static");
    if (stale) stale.remove();
    const svg = box.querySelector("svg.mgx-plot");
    const holder = (name) => box.querySelector('[data-slider="' + name + '"]');
    const input = (name) => holder(name).querySelector("input, select");

    // Current slider values: the declared ones until the reader moves a slider (a log slider's
    // position is rounded, so reading it back could shift the declared value slightly).
    const current = {};
    for (const s of spec.sliders) current[s.name] = s.options && s.value === null ? s.options[0][1] : s.value;

    function update() {
      for (const s of spec.sliders) {
        const v = current[s.name], h = holder(s.name);
        h.setAttribute("data-value", typeof v === "string" ? v : JSON.stringify(v));
        const shown = h.querySelector(".mgx-value");
        if (shown) shown.textContent = I18N().translated(s.fmt ? format(s.fmt, v, C) : (typeof v === "number" ? group(v) : ""));
      }
      const {env, errors} = evaluateAll(spec, current, C);
      for (const o of spec.outputs) {
        const node = box.querySelector('[data-output="' + o.name + '"]');
        let error = errors[o.name], text;
        if (!error) {
          try { text = format(o.fmt, env[o.name], C); } catch (err) { error = String(err && err.message ? err.message : err); }
        }
        if (error) {
          node.setAttribute("data-error", error);
          node.setAttribute("data-value", "");
          node.textContent = "— (" + I18N().translated(error) + ")";
        } else {
          const x = env[o.name];
          node.setAttribute("data-value", typeof x === "string" ? x : JSON.stringify(x));
          node.textContent = I18N().translated(text);
          node.removeAttribute("data-error");
        }
      }
      if (svg && spec.plot) root.MiniGPTExplorerPlot.drawPlot(svg, spec, current, C);
    }

    for (const s of spec.sliders) {
      const control = input(s.name);
      const moved = () => {
        const next = s.options ? s.options[+control.value][1] : valueAt(s, +control.value);
        if (next === current[s.name]) return;  // a "change" after its "input": nothing new to compute
        current[s.name] = next;
        const chosen = current[s.name];
        // A select that sets other sliders (a chip: bandwidth, peak) moves them to its option's fields.
        if (s.options && chosen !== null && typeof chosen === "object") {
          for (const target in s.sets || {}) {
            const t = spec.sliders.find((x) => x.name === target);
            current[target] = chosen[s.sets[target]];
            input(target).value = String(positionOf(t, current[target]));
          }
        }
        // Moving a slider that a select sets by hand selects that select's "custom" (null) option.
        if (!s.options) {
          for (const sel of spec.sliders) {
            if (!sel.options || !(sel.sets && s.name in sel.sets)) continue;
            const custom = sel.options.findIndex((o) => o[1] === null);
            if (custom >= 0) { current[sel.name] = null; input(sel.name).value = String(custom); }
          }
        }
        update();
      };
      control.addEventListener("input", moved);
      control.addEventListener("change", moved);
    }
    update();
  }

  function initAll() {
    document.querySelectorAll("div.mgx-explorer").forEach(init);
  }

  // The plot's half (explorer_plot.js, loaded before this file; under node, required here) is reached through
  // this object too, as the tests do.
  const plot = () => root.MiniGPTExplorerPlot;
  root.MiniGPTExplorer = {init, initAll, compact, format, valueAt, positionOf, lookup, snap, evaluate, evaluateAll,
    localCompact, i18n: I18N, plotModel: (...a) => plot().plotModel(...a), tickLabels: (...a) => plot().tickLabels(...a)};
  // On the book's site this file is loaded in the page's head: wire the explorers once the page is parsed.
  if (typeof document !== "undefined") {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", initAll);
    else initAll();
  }
})(typeof globalThis !== "undefined" ? globalThis : this);
