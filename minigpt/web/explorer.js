// MiniGPTExplorer: analytic explorers that recompute in the browser, with no kernel.
// minigpt/book/explorers.py writes the HTML (sliders, outputs with their initial values computed in
// Python, an optional plot, and a JSON spec). Every output and series of the spec is a call of a
// MiniGPTCosts function (costs/*.js) with named arguments: a string argument names a constant, a slider
// or an earlier output ("m.L" reads a field), anything else is a literal. On the book's site this file
// and the cost scripts its explorers call are loaded once per page and wire every explorer when the page has loaded; in a kernel
// they are inlined after the explorer, which calls `MiniGPTExplorer.initAll()`.
// On a page of another edition (globalThis.MiniGPTStrings, the Spanish site, read by i18n.js) `init` shows
// every text of the box through the edition's table (title, labels, options, note, plot axes and legend,
// values, errors) and writes the numbers it prints the edition's way; without it (English, a kernel)
// nothing changes.
(function (root) {
  "use strict";
  if (root.MiniGPTExplorer) return;  // several explorers on one page share one copy

  const SVG = "http://www.w3.org/2000/svg";

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

  // Constants, slider values, then every output in order (an output may read earlier ones).
  function evaluateAll(spec, values, C) {
    const env = Object.assign({}, spec.constants, values), errors = {};
    for (const o of spec.outputs) {
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

  function niceTicks(lo, hi, log) {
    if (log) {
      const ticks = [];
      let e = Math.ceil(Math.log10(lo) - 1e-9);
      const last = Math.floor(Math.log10(hi) + 1e-9);
      const stride = Math.max(1, Math.ceil((last - e + 1) / 6));
      for (; e <= last; e += stride) ticks.push(Math.pow(10, e));
      return ticks;
    }
    const span = hi - lo || Math.abs(hi) || 1;
    const raw = span / 5, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((m) => m >= raw);
    const ticks = [];
    for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(+t.toPrecision(12));
    return ticks;
  }

  function el(tag, attrs, parent) {
    const node = document.createElementNS(SVG, tag);
    for (const k in attrs) node.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(node);
    return node;
  }

  // Tick labels that tell the ticks apart: a formatter with `decimals` (fmt_fixed, fmt_percent) gets
  // more of them when its own would print two ticks alike or a non-zero tick as zero ("1×, 1×, 0×").
  function tickLabels(ticks, fmt, C) {
    const label = (f) => ticks.map((t) => format(f, t, C));
    let labels = label(fmt);
    const readable = (ls, f) => new Set(ls).size === ls.length
      && ticks.every((t, i) => t === 0 || ls[i] !== format(f, 0, C));
    if (!fmt || !(fmt.fn === "fmt_fixed" || fmt.fn === "fmt_percent") || readable(labels, fmt)) return labels;
    const base = fmt.args && fmt.args.decimals !== undefined ? fmt.args.decimals : 1;
    for (let d = base + 1; d <= base + 8; d++) {
      const f = {fn: fmt.fn, args: Object.assign({}, fmt.args, {decimals: d})};
      labels = label(f);
      if (readable(labels, f)) return labels;
    }
    return labels;
  }

  // Ticks of an axis from lo to hi: powers of ten on a log axis that spans two, else round steps.
  function axisTicks(lo, hi, log) {
    if (!log) return niceTicks(lo, hi, false);
    const ticks = niceTicks(lo, hi, true);
    return ticks.length >= 2 ? ticks : niceTicks(lo, hi, false).filter((t) => t > 0);
  }

  // What a plot shows at these slider values, without drawing it: the x samples, every series' y
  // (null where undefined), the y range and both axes' ticks with their labels.
  function plotModel(spec, values, C) {
    const plot = spec.plot, sliders = spec.sliders;
    const n = plot.points;
    // Sample x; when x is a slider, snap to its step (an integer slider gets integer x).
    const xSlider = sliders.find((s) => s.name === plot.x && !s.options);
    const xs = [];
    for (let i = 0; i < n; i++) {
      const f = i / (n - 1);
      let x = plot.log_x ? plot.x_min * Math.pow(plot.x_max / plot.x_min, f) : plot.x_min + f * (plot.x_max - plot.x_min);
      if (xSlider) x = snap(x, {min: Math.min(xSlider.min, plot.x_min), max: Math.max(xSlider.max, plot.x_max), step: xSlider.step});
      if (!xs.length || x !== xs[xs.length - 1]) xs.push(x);
    }
    // Every output is recomputed at each x: a series may read outputs that depend on x.
    const envs = xs.map((x) => {
      const at = Object.assign({}, values);
      at[plot.x] = x;
      return evaluateAll(spec, at, C).env;
    });
    const series = plot.series.map((s) => {
      const ys = xs.map((x, j) => {
        let y;
        try {
          if (s.until && !(x <= lookup(s.until, envs[j]))) return null;
          y = +evaluate(s, envs[j], C);
        } catch (err) { return null; }
        return Number.isFinite(y) && (!plot.log_y || y > 0) ? y : null;
      });
      return {label: s.label, ys};
    });
    const all = [].concat(...series.map((s) => s.ys)).filter((y) => y !== null);
    if (!all.length) return {xs, series, empty: true};
    let lo = plot.y_min !== null ? plot.y_min : Math.min(...all);
    let hi = plot.y_max !== null ? plot.y_max : Math.max(...all);
    if (!plot.log_y && plot.y_min === null) lo = Math.min(lo, 0);
    if (hi === lo) hi = lo + (lo ? Math.abs(lo) : 1);
    const xTicks = niceTicks(plot.x_min, plot.x_max, plot.log_x);
    const yTicks = axisTicks(lo, hi, plot.log_y).filter((t) => t >= lo && t <= hi);
    return {xs, series, lo, hi, xTicks, xLabels: xTicks.map(compact), yTicks,
      yLabels: tickLabels(yTicks, plot.y_fmt, C)};
  }

  function drawPlot(svg, spec, values, C) {
    const plot = spec.plot;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const W = 520, H = 280, m = {l: 84, r: 12, t: 10, b: 40};
    const model = plotModel(spec, values, C);
    if (model.empty) return;
    const {xs, series, lo, hi} = model;
    const tx = (x) => plot.log_x ? Math.log10(x) : x, ty = (y) => plot.log_y ? Math.log10(y) : y;
    const X = (x) => m.l + (tx(x) - tx(plot.x_min)) / (tx(plot.x_max) - tx(plot.x_min)) * (W - m.l - m.r);
    const Y = (y) => H - m.b - (ty(y) - ty(lo)) / (ty(hi) - ty(lo)) * (H - m.t - m.b);
    const g = el("g", {"font-size": "11", fill: "currentColor"}, svg);
    el("rect", {x: m.l, y: m.t, width: W - m.l - m.r, height: H - m.t - m.b, fill: "none", stroke: "#999"}, g);
    model.xTicks.forEach((t, i) => {
      el("line", {x1: X(t), x2: X(t), y1: m.t, y2: H - m.b, stroke: "#ddd"}, g);
      el("text", {x: X(t), y: H - m.b + 14, "text-anchor": "middle"}, g).textContent = localCompact(model.xLabels[i]);
    });
    model.yTicks.forEach((t, i) => {
      el("line", {x1: m.l, x2: W - m.r, y1: Y(t), y2: Y(t), stroke: "#ddd"}, g);
      el("text", {x: m.l - 4, y: Y(t) + 4, "text-anchor": "end"}, g).textContent = I18N().translated(model.yLabels[i]);
    });
    el("text", {x: (m.l + W - m.r) / 2, y: H - 6, "text-anchor": "middle"}, g).textContent = I18N().tr(plot.x_label);
    el("text", {x: 12, y: (m.t + H - m.b) / 2, "text-anchor": "middle",
      transform: "rotate(-90 12 " + (m.t + H - m.b) / 2 + ")"}, g).textContent = I18N().tr(plot.y_label);
    const colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"];
    series.forEach((s, i) => {
      let d = "", pen = false;
      s.ys.forEach((y, j) => {
        if (y === null || y < lo || y > hi) { pen = false; return; }
        d += (pen ? "L" : "M") + X(xs[j]).toFixed(1) + "," + Y(y).toFixed(1);
        pen = true;
      });
      el("path", {d, fill: "none", stroke: colors[i % colors.length], "stroke-width": "2",
        "data-series": s.label}, g);
      const ly = m.t + 14 + 14 * i;
      el("line", {x1: m.l + 8, x2: m.l + 24, y1: ly - 4, y2: ly - 4, stroke: colors[i % colors.length], "stroke-width": "2"}, g);
      el("text", {x: m.l + 28, y: ly}, g).textContent = I18N().tr(s.label);
    });
    const xc = Object.assign({}, spec.constants, values)[plot.x];
    if (typeof xc === "number" && xc >= plot.x_min && xc <= plot.x_max) {
      el("line", {x1: X(xc), x2: X(xc), y1: m.t, y2: H - m.b, stroke: "#555", "stroke-dasharray": "4 3",
        "data-marker": plot.x}, g);
    }
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
      if (svg && spec.plot) drawPlot(svg, spec, current, C);
    }

    for (const s of spec.sliders) {
      const control = input(s.name);
      const moved = () => {
        current[s.name] = s.options ? s.options[+control.value][1] : valueAt(s, +control.value);
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

  root.MiniGPTExplorer = {init, initAll, compact, format, valueAt, positionOf, evaluate, evaluateAll, plotModel,
    tickLabels, localCompact};
  // On the book's site this file is loaded in the page's head: wire the explorers once the page is parsed.
  if (typeof document !== "undefined") {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", initAll);
    else initAll();
  }
})(typeof globalThis !== "undefined" ? globalThis : this);
