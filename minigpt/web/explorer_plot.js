// MiniGPTExplorerPlot: the plot of an analytic explorer (explorer.js), sampled and drawn as SVG.
// `plotModel` computes what the plot shows (x samples, each series' y, the axes' ticks and labels) without
// drawing it; `drawPlot` draws it. The spec's evaluation (`evaluateAll`, `lookup`, `snap`, `format`) and the
// edition's strings come from MiniGPTExplorer, looked up when used: this file loads before explorer.js (on the
// book's site, and inlined in a kernel), and explorer.js requires it under node.
(function (root) {
  "use strict";
  if (root.MiniGPTExplorerPlot) return;

  const SVG = "http://www.w3.org/2000/svg";
  const E = () => root.MiniGPTExplorer;
  const I18N = () => E().i18n();
  const format = (...a) => E().format(...a), compact = (x) => E().compact(x);

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

  // The names a call reads (the part of each reference before its first dot).
  function reads(call) {
    const refs = "value" in call ? [call.value] : Object.values(call.args).filter((v) => typeof v === "string");
    return refs.map((r) => r.split(".")[0]);
  }

  // The outputs a plot's series read, directly or through other outputs: all a point of the plot needs.
  // (Each point recomputes them at its x; an output no series needs, such as a costly sum, is skipped.)
  function plotNeeds(spec) {
    const byName = new Map(spec.outputs.map((o) => [o.name, o])), needed = new Set();
    const visit = (name) => {
      if (!byName.has(name) || needed.has(name)) return;
      needed.add(name);
      reads(byName.get(name)).forEach(visit);
    };
    for (const s of spec.plot.series) {
      reads(s).forEach(visit);
      if (s.until) visit(s.until.split(".")[0]);
    }
    return needed;
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
      if (xSlider) x = E().snap(x, {min: Math.min(xSlider.min, plot.x_min), max: Math.max(xSlider.max, plot.x_max), step: xSlider.step});
      if (!xs.length || x !== xs[xs.length - 1]) xs.push(x);
    }
    // The outputs the series read are recomputed at each x: they may depend on x.
    const needed = plotNeeds(spec);
    const envs = xs.map((x) => {
      const at = Object.assign({}, values);
      at[plot.x] = x;
      return E().evaluateAll(spec, at, C, needed).env;
    });
    const series = plot.series.map((s) => {
      const ys = xs.map((x, j) => {
        let y;
        try {
          if (s.until && !(x <= E().lookup(s.until, envs[j]))) return null;
          y = +E().evaluate(s, envs[j], C);
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

  // The width of a text in the plot's font, measured on a canvas (a fixed width per character without one).
  let canvas = null;
  function textWidth(svg) {
    if (canvas === null) canvas = (typeof document !== "undefined" && document.createElement("canvas").getContext("2d")) || false;
    const font = "11px " + (getComputedStyle(svg).fontFamily || "sans-serif");
    return (text) => {
      if (!canvas) return 6.5 * text.length;
      canvas.font = font;
      return canvas.measureText(text).width;
    };
  }

  function drawPlot(svg, spec, values, C) {
    const plot = spec.plot;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const model = plotModel(spec, values, C);
    if (model.empty) return;
    const {xs, series, lo, hi} = model;
    const xText = model.xLabels.map((l) => E().localCompact(l)), yText = model.yLabels.map((l) => I18N().translated(l));
    const labels = series.map((s) => I18N().tr(s.label)), width = textWidth(svg);
    // Margins that fit the labels: the widest y tick label between the y axis title and the frame, half the
    // last x tick label right of the frame.
    const W = 520, H = 280, m = {l: Math.max(48, 26 + Math.max(0, ...yText.map(width))), r: 12, t: 10, b: 40};
    if (xText.length) m.r = Math.max(m.r, width(xText[xText.length - 1]) / 2 + 3);
    const tx = (x) => plot.log_x ? Math.log10(x) : x, ty = (y) => plot.log_y ? Math.log10(y) : y;
    const X = (x) => m.l + (tx(x) - tx(plot.x_min)) / (tx(plot.x_max) - tx(plot.x_min)) * (W - m.l - m.r);
    const Y = (y) => H - m.b - (ty(y) - ty(lo)) / (ty(hi) - ty(lo)) * (H - m.t - m.b);
    // The plot's name for a screen reader (an svg with role="img" needs one): what it draws against what.
    svg.setAttribute("aria-label", I18N().tr("{0} against {1}", [I18N().tr(plot.y_label), I18N().tr(plot.x_label)]));
    const g = el("g", {"font-size": "11", fill: "currentColor"}, svg);
    el("rect", {x: m.l, y: m.t, width: W - m.l - m.r, height: H - m.t - m.b, fill: "none", stroke: "#999",
      class: "mgx-frame"}, g);
    model.xTicks.forEach((t, i) => {
      el("line", {x1: X(t), x2: X(t), y1: m.t, y2: H - m.b, stroke: "#ddd", class: "mgx-grid"}, g);
      el("text", {x: X(t), y: H - m.b + 17, "text-anchor": "middle"}, g).textContent = xText[i];
    });
    model.yTicks.forEach((t, i) => {
      el("line", {x1: m.l, x2: W - m.r, y1: Y(t), y2: Y(t), stroke: "#ddd", class: "mgx-grid"}, g);
      el("text", {x: m.l - 4, y: Y(t) + 4, "text-anchor": "end"}, g).textContent = yText[i];
    });
    el("text", {x: (m.l + W - m.r) / 2, y: H - 4, "text-anchor": "middle"}, g).textContent = I18N().tr(plot.x_label);
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
    });
    const xc = Object.assign({}, spec.constants, values)[plot.x];
    if (typeof xc === "number" && xc >= plot.x_min && xc <= plot.x_max) {
      el("line", {x1: X(xc), x2: X(xc), y1: m.t, y2: H - m.b, stroke: "#555", "stroke-dasharray": "4 3",
        "data-marker": plot.x, class: "mgx-marker"}, g);
    }
    // The legend on top, on a backing that keeps the curves under it from crossing its words.
    el("rect", {x: m.l + 4, y: m.t + 3, width: 28 + Math.max(...labels.map(width)), height: 14 * labels.length + 4,
      fill: "#fff", "fill-opacity": "0.85", class: "mgx-legend"}, g);
    labels.forEach((label, i) => {
      const ly = m.t + 14 + 14 * i, color = colors[i % colors.length];
      el("line", {x1: m.l + 8, x2: m.l + 24, y1: ly - 4, y2: ly - 4, stroke: color, "stroke-width": "2"}, g);
      el("text", {x: m.l + 28, y: ly}, g).textContent = label;
    });
  }

  root.MiniGPTExplorerPlot = {plotModel, drawPlot, tickLabels, plotNeeds};
})(typeof globalThis !== "undefined" ? globalThis : this);
