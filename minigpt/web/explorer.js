// MiniGPTExplorer: analytic explorers that recompute in the browser, with no kernel.
// minigpt/book/explorers.py writes the HTML (sliders, outputs, an optional plot, and a JSON spec) and
// inlines this file and costs.js after it; `MiniGPTExplorer.initAll()` wires up every explorer on
// the page that is not wired yet. Expressions in the spec are JavaScript, evaluated with the cost
// module as `C` and every constant and slider value bound to its name.
(function (root) {
  "use strict";
  if (root.MiniGPTExplorer) return;  // several explorers on one page share one copy

  const SVG = "http://www.w3.org/2000/svg";

  function compile(names, expr) {
    // eslint-disable-next-line no-new-func
    return new Function("C", ...names, '"use strict"; return (' + expr + ");");
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

  function drawPlot(svg, plot, env, C, names, sliders) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const W = 520, H = 280, m = {l: 84, r: 12, t: 10, b: 40};
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
    const series = plot.series.map((s) => {
      const fn = compile(names, s.expr);
      const ys = xs.map((x) => {
        const vals = names.map((k) => (k === plot.x ? x : env[k]));
        let y;
        try { y = +fn(C, ...vals); } catch (err) { return null; }
        return Number.isFinite(y) && (!plot.log_y || y > 0) ? y : null;
      });
      return {label: s.label, ys};
    });
    const all = [].concat(...series.map((s) => s.ys)).filter((y) => y !== null);
    if (!all.length) return;
    let lo = plot.y_min !== null ? plot.y_min : Math.min(...all);
    let hi = plot.y_max !== null ? plot.y_max : Math.max(...all);
    if (!plot.log_y && plot.y_min === null) lo = Math.min(lo, 0);
    if (hi === lo) hi = lo + (lo ? Math.abs(lo) : 1);
    const tx = (x) => plot.log_x ? Math.log10(x) : x, ty = (y) => plot.log_y ? Math.log10(y) : y;
    const X = (x) => m.l + (tx(x) - tx(plot.x_min)) / (tx(plot.x_max) - tx(plot.x_min)) * (W - m.l - m.r);
    const Y = (y) => H - m.b - (ty(y) - ty(lo)) / (ty(hi) - ty(lo)) * (H - m.t - m.b);
    const g = el("g", {"font-size": "11", fill: "currentColor"}, svg);
    el("rect", {x: m.l, y: m.t, width: W - m.l - m.r, height: H - m.t - m.b, fill: "none", stroke: "#999"}, g);
    const fmtY = plot.y_fmt ? compile(["x"], plot.y_fmt).bind(null, C) : compact;
    for (const t of niceTicks(plot.x_min, plot.x_max, plot.log_x)) {
      el("line", {x1: X(t), x2: X(t), y1: m.t, y2: H - m.b, stroke: "#ddd"}, g);
      el("text", {x: X(t), y: H - m.b + 14, "text-anchor": "middle"}, g).textContent = compact(t);
    }
    for (const t of niceTicks(lo, hi, plot.log_y)) {
      if (t < lo || t > hi) continue;
      el("line", {x1: m.l, x2: W - m.r, y1: Y(t), y2: Y(t), stroke: "#ddd"}, g);
      el("text", {x: m.l - 4, y: Y(t) + 4, "text-anchor": "end"}, g).textContent = fmtY(t);
    }
    el("text", {x: (m.l + W - m.r) / 2, y: H - 6, "text-anchor": "middle"}, g).textContent = plot.x_label;
    el("text", {x: 12, y: (m.t + H - m.b) / 2, "text-anchor": "middle",
      transform: "rotate(-90 12 " + (m.t + H - m.b) / 2 + ")"}, g).textContent = plot.y_label;
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
      el("text", {x: m.l + 28, y: ly}, g).textContent = s.label;
    });
    const xc = env[plot.x];
    if (typeof xc === "number" && xc >= plot.x_min && xc <= plot.x_max) {
      el("line", {x1: X(xc), x2: X(xc), y1: m.t, y2: H - m.b, stroke: "#555", "stroke-dasharray": "4 3",
        "data-marker": plot.x}, g);
    }
  }

  function init(box) {
    if (box.getAttribute("data-ready")) return;
    box.setAttribute("data-ready", "1");
    const C = root.MiniGPTCosts;
    const spec = JSON.parse(box.querySelector("script.mgx-spec").textContent);
    const names = Object.keys(spec.constants).concat(spec.sliders.map((s) => s.name));
    const outputs = spec.outputs.map((o) => ({
      o, value: compile(names, o.expr), fmt: o.fmt ? compile(["x"], o.fmt) : null,
      node: box.querySelector('[data-output="' + o.name + '"]'),
    }));
    const svg = box.querySelector("svg.mgx-plot");

    // Current slider values: the declared ones until the reader moves a slider (a log slider's
    // position is rounded, so reading it back could shift the declared value slightly).
    const current = {};
    for (const s of spec.sliders) {
      current[s.name] = s.options && s.value === null ? s.options[0][1] : s.value;
    }

    function update() {
      const env = Object.assign({}, spec.constants);
      for (const s of spec.sliders) {
        const holder = box.querySelector('[data-slider="' + s.name + '"]');
        const v = current[s.name];
        env[s.name] = v;
        holder.setAttribute("data-value", typeof v === "object" ? JSON.stringify(v) : String(v));
        const shown = holder.querySelector(".mgx-value");
        if (shown) shown.textContent = s.fmt ? compile(["x"], s.fmt)(C, v) : (typeof v === "number" ? group(v) : "");
      }
      const vals = names.map((k) => env[k]);
      for (const out of outputs) {
        try {
          const x = out.value(C, ...vals);
          out.node.setAttribute("data-value", typeof x === "number" ? String(x) : JSON.stringify(x));
          out.node.textContent = out.fmt ? out.fmt(C, x) : (typeof x === "number" ? compact(x) : String(x));
          out.node.removeAttribute("data-error");
        } catch (err) {
          out.node.setAttribute("data-error", String(err && err.message ? err.message : err));
          out.node.setAttribute("data-value", "");
          out.node.textContent = "— (" + (err && err.message ? err.message : err) + ")";
        }
      }
      if (svg && spec.plot) drawPlot(svg, spec.plot, env, C, names, spec.sliders);
    }

    for (const s of spec.sliders) {
      const input = box.querySelector('[data-slider="' + s.name + '"]').querySelector("input, select");
      const moved = () => {
        current[s.name] = s.options ? s.options[+input.value][1] : valueAt(s, +input.value);
        update();
      };
      input.addEventListener("input", moved);
      input.addEventListener("change", moved);
    }
    update();
  }

  function initAll() {
    document.querySelectorAll("div.mgx-explorer").forEach(init);
  }

  root.MiniGPTExplorer = {init, initAll, compact, valueAt};
})(typeof globalThis !== "undefined" ? globalThis : this);
