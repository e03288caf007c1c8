// MiniGPTLiveCharts: the two plots of MiniGPT live (minigpt_live.js), drawn as SVG: the cumulative FLOPs
// of a generation with and without the cache (lines), and the measured time of each step (bars). The caller
// gives every text already in the edition's language; the numbers on the x axis are written its way here.
(function (root) {
  "use strict";
  const SVG = "http://www.w3.org/2000/svg";
  const L = (text) => (root.MiniGPTI18N ? root.MiniGPTI18N.localizeNumbers(text) : text);

  function svg(tag, attrs, parent) {
    const node = document.createElementNS(SVG, tag);
    for (const k in attrs) node.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(node);
    return node;
  }

  // The frame, four y gridlines with their labels (fmt), at most eight step numbers, and the axis titles.
  function axes(g, W, H, m, n, yMax, xLabel, yLabel, fmt) {
    svg("rect", { x: m.l, y: m.t, width: W - m.l - m.r, height: H - m.t - m.b, fill: "none", stroke: "#999" }, g);
    for (let i = 0; i <= 4; i++) {
      const v = (yMax * i) / 4, y = H - m.b - ((H - m.t - m.b) * i) / 4;
      svg("line", { x1: m.l, x2: W - m.r, y1: y, y2: y, stroke: "#eee" }, g);
      svg("text", { x: m.l - 4, y: y + 4, "text-anchor": "end" }, g).textContent = fmt(v);
    }
    const stride = Math.max(1, Math.ceil(n / 8));
    for (let t = 0; t < n; t += stride) {
      const x = m.l + ((t + 0.5) / n) * (W - m.l - m.r);
      svg("text", { x, y: H - m.b + 13, "text-anchor": "middle" }, g).textContent = L(String(t));
    }
    svg("text", { x: (m.l + W - m.r) / 2, y: H - 4, "text-anchor": "middle" }, g).textContent = xLabel;
    svg("text", { x: 10, y: (m.t + H - m.b) / 2, "text-anchor": "middle",
      transform: "rotate(-90 12 " + (m.t + H - m.b) / 2 + ")" }, g).textContent = yLabel;
  }

  // Each series dashed over all n steps and solid up to `upto`, with its legend line (legend(series)) on top.
  function lineChart(plot, n, series, xLabel, yLabel, fmt, legend) {
    const W = 520, H = 250, m = { l: 64, r: 10, t: 36, b: 34 };
    const yMax = Math.max(...series.map((s) => s.ys[s.ys.length - 1]));
    const g = svg("g", { "font-size": "11", fill: "currentColor" }, plot);
    axes(g, W, H, m, n, yMax, xLabel, yLabel, fmt);
    const X = (t) => m.l + ((t + 0.5) / n) * (W - m.l - m.r), Y = (v) => H - m.b - (v / yMax) * (H - m.t - m.b);
    series.forEach((s, i) => {
      const pts = s.ys.map((v, t) => X(t).toFixed(1) + "," + Y(v).toFixed(1));
      svg("polyline", { points: pts.join(" "), fill: "none", stroke: s.color, "stroke-dasharray": "4 3",
        "stroke-width": 1 }, g);
      svg("polyline", { points: pts.slice(0, s.upto).join(" "), fill: "none", stroke: s.color, "stroke-width": 2.5,
        "data-series": s.label }, g);
      svg("text", { x: m.l, y: 12 + 14 * i, fill: s.color }, g).textContent = legend(s);
    });
  }

  // One bar per measured step, of colorOf(step) (n slots: the bars fill in as the generation runs).
  function barChart(plot, n, ms, xLabel, yLabel, colorOf) {
    const W = 520, H = 200, m = { l: 64, r: 10, t: 12, b: 34 };
    const yMax = Math.max(...ms, 0.01);
    const g = svg("g", { "font-size": "11", fill: "currentColor" }, plot);
    axes(g, W, H, m, n, yMax, xLabel, yLabel, (v) => L(v.toFixed(v < 1 ? 2 : 1)));
    const bw = (W - m.l - m.r) / n;
    ms.forEach((v, t) => {
      const y = H - m.b - (v / yMax) * (H - m.t - m.b);
      svg("rect", { x: m.l + t * bw + bw * 0.15, y, width: Math.max(bw * 0.7, 1), height: H - m.b - y,
        fill: colorOf(t) }, g);
    });
  }

  root.MiniGPTLiveCharts = { lineChart, barChart };
})(typeof globalThis !== "undefined" ? globalThis : this);
