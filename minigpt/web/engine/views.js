// Watch the engine, views: what one step's record (MiniGPTEngine's `record`, the fields of
// minigpt/serving/schedule_log.py) looks like on the page: the block pool as a grid coloured by request
// (shared blocks outlined, cached-only blocks grey, the free stack listed), each running request's block
// table, the waiting and swapped queues, the prefix tree, the step's chunks as one fused batch, and the
// meters plotted so far. Each view keeps its data in data- attributes too (tests/test_watch_engine_site.py
// reads them). Strings go through MiniGPTI18N.tr (i18n.js).
// needs: ../i18n.js
(function (root) {
  "use strict";
  const I18N = root.MiniGPTI18N;
  if (!I18N) throw new Error("i18n.js must load before engine/views.js");
  const tr = I18N.tr;

  function h(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const k in attrs || {}) {
      if (k === "text") node.textContent = attrs[k];
      else node.setAttribute(k, attrs[k]);
    }
    for (const c of children || []) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    return node;
  }
  const index = (id) => +String(id).slice(1);
  // A request's colour; `light` for a chip, whose dark text needs a light background (contrast 4.5:1 at every hue).
  const colour = (id, light) => "hsl(" + ((index(id) * 137.508) % 360).toFixed(1) + (light ? ",62%,78%)" : ",62%,58%)");

  function chip(id, extra) {
    const c = h("span", { class: "we-chip", "data-rid": id, text: id + (extra || "") });
    c.style.background = colour(id, true);
    return c;
  }

  // A view that scrolls is a region the keyboard can reach (Tab, then the arrow keys up and down), named by its
  // section's heading; a list keeps its role.
  function region(node) {
    if (node.hasAttribute("tabindex")) return;
    const title = node.parentNode && node.parentNode.querySelector("h4");
    node.setAttribute("tabindex", "0");
    if (node.tagName !== "UL") node.setAttribute("role", "region");
    if (title) node.setAttribute("aria-label", title.textContent);
  }

  // ---- The block pool: one cell per block ----
  function pool(canvas, rec, numBlocks, width) {  // width: the canvas's CSS width, measured once by the page
    const owner = new Array(numBlocks).fill(null);
    for (const id in rec.tables) for (const b of rec.tables[id]) if (owner[b] === null) owner[b] = id;
    const cached = new Set();
    for (let i = 0; i < rec.tree.length; i += 3) cached.add(rec.tree[i]);
    const cols = Math.max(8, Math.ceil(Math.sqrt(numBlocks * 2)));
    const rows = Math.ceil(numBlocks / cols);
    const cell = Math.max(4, Math.floor(width / cols));
    if (canvas.width !== cols * cell) canvas.width = cols * cell;
    if (canvas.height !== rows * cell) canvas.height = rows * cell;
    const g = canvas.getContext("2d");
    g.clearRect(0, 0, canvas.width, canvas.height);
    for (let b = 0; b < numBlocks; b++) {
      const x = (b % cols) * cell, y = Math.floor(b / cols) * cell;
      g.fillStyle = owner[b] !== null ? colour(owner[b]) : rec.refs[b] > 0 ? (cached.has(b) ? "#b9b9b9" : "#777") : "#fff";
      g.fillRect(x + 1, y + 1, cell - 2, cell - 2);
      g.strokeStyle = rec.refs[b] > 1 ? "#000" : "#ddd";
      g.lineWidth = rec.refs[b] > 1 ? 2 : 1;
      g.strokeRect(x + 1, y + 1, cell - 2, cell - 2);
    }
    canvas.dataset.refs = rec.refs.join(" ");
    canvas.dataset.owners = owner.map((o) => (o === null ? "-" : o)).join(" ");
    const used = rec.refs.filter((r) => r > 0).length;
    canvas.setAttribute("aria-label", tr("block pool: {0} of {1} blocks in use, {2} free", [used, numBlocks, rec.free.length]));
  }

  function freeList(node, rec) {
    const order = rec.free.slice().reverse();  // the next block out first
    node.dataset.free = rec.free.join(" ");
    node.textContent = tr("free list (next out first): {0}", [order.length ? order.slice(0, 40).join(" ") + (order.length > 40 ? " …" : "") : "—"]);
  }

  // ---- Block tables, queues, the fused batch ----
  // A view whose data did not change since its last drawing is left as it is (the DOM is the costly part).
  function same(node, key) {
    if (node.weKey === key) return true;
    node.weKey = key;
    return false;
  }

  function tables(node, rec) {
    const ids = Object.keys(rec.tables);
    if (same(node, ids.map((id) => id + ":" + rec.tables[id].map((b) => b + (rec.refs[b] > 1 ? "s" : "")).join(",")).join(" "))) return;
    region(node);
    node.replaceChildren();
    if (!ids.length) node.appendChild(h("li", { text: tr("nothing running") }));
    for (const id of ids) {
      const li = h("li", { "data-rid": id, "data-blocks": rec.tables[id].join(" ") }, [chip(id), " "]);
      for (const b of rec.tables[id]) {
        li.appendChild(h("span", { class: rec.refs[b] > 1 ? "we-block we-shared" : "we-block", text: String(b) }));
      }
      node.appendChild(li);
    }
  }

  function queue(node, ids, host) {
    if (same(node, ids.join(" ") + (host ? JSON.stringify(host) : ""))) return;
    region(node);
    node.replaceChildren();
    node.dataset.ids = ids.join(" ");
    if (!ids.length) node.appendChild(h("span", { class: "we-empty", text: tr("empty") }));
    for (const id of ids.slice(0, 60)) node.appendChild(chip(id, host && host[id] ? " (" + host[id].length + ")" : ""));
    if (ids.length > 60) node.appendChild(h("span", { text: " … +" + (ids.length - 60) }));
  }

  function batch(node, rec, budget) {
    node.replaceChildren();
    const total = rec.chunks.reduce((a, c) => a + c[1], 0);
    node.dataset.chunks = rec.chunks.map((c) => c[0] + ":" + c[1]).join(" ");
    const scale = Math.max(total, budget || 0, 1);
    const bar = h("div", { class: "we-bar" });
    for (const [id, T, done] of rec.chunks) {
      const seg = h("span", { class: T > 1 ? "we-seg we-prefill" : "we-seg", "data-rid": id, "data-T": String(T),
        title: tr("{0}: {1} tokens after {2} cached", [id, T, done]) });
      seg.style.width = (100 * T / scale) + "%";
      seg.style.background = colour(id);
      if (T > 1 && 100 * T / scale > 8) seg.textContent = id + " ×" + T;
      bar.appendChild(seg);
    }
    node.appendChild(bar);
    const events = rec.events.map((e) => e[1] === "hit" ? tr("{0}: prefix hit, {1} tokens", [e[0], e[2]])
      : e[1] === "swap" ? tr("{0}: preempted by swap", [e[0]]) : tr("{0}: preempted by recompute", [e[0]]));
    node.appendChild(h("div", { class: "we-events", text: tr("{0} chunks, {1} tokens in one forward", [rec.chunks.length, total])
      + (events.length ? " · " + events.join(" · ") : "") }));
  }

  // ---- The prefix tree: block (parent) as nested lists, the least recently used leaves evicted first ----
  function tree(node, rec) {
    let key = "";  // the cached blocks, their parents and which are held (a match's new last use redraws nothing)
    for (let i = 0; i < rec.tree.length; i += 3) key += rec.tree[i] + "<" + rec.tree[i + 1] + (rec.refs[rec.tree[i]] > 1 ? "h " : " ");
    if (same(node, key)) return;
    region(node);
    node.replaceChildren();
    const triples = [];
    for (let i = 0; i < rec.tree.length; i += 3) triples.push([rec.tree[i], rec.tree[i + 1], rec.tree[i + 2]]);
    node.dataset.tree = triples.map((n) => n[0] + "<" + n[1]).join(" ");
    if (!triples.length) { node.appendChild(h("span", { class: "we-empty", text: tr("empty") })); return; }
    const kids = new Map();
    for (const [b, p] of triples) {
      if (!kids.has(p)) kids.set(p, []);
      kids.get(p).push(b);
    }
    let shown = 0;
    const grow = (parent) => {
      const ul = h("ul");
      for (const b of kids.get(parent) || []) {
        if (++shown > 80) break;
        const li = h("li", {}, [h("span", { class: rec.refs[b] > 1 ? "we-block we-shared" : "we-block", text: String(b) })]);
        if (kids.has(b)) li.appendChild(grow(b));
        ul.appendChild(li);
      }
      return ul;
    };
    node.appendChild(grow(-1));
  }

  // ---- Meters: five small SVG plots against engine time, up to the shown step (a path's `d` per step) ----
  const SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, parent) {
    const node = document.createElementNS(SVG, tag);
    for (const k in attrs) node.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(node);
    return node;
  }
  function plotBox(label, colour, line) {
    const box = svg("svg", { class: "we-plot", viewBox: "0 0 300 110", role: "img", "aria-label": label });
    svg("rect", { x: 30.5, y: 4.5, width: 265, height: 88, fill: "none", stroke: "#999" }, box);
    svg("text", { x: 292, y: 15, "font-size": 10, fill: "#555", "text-anchor": "end" }, box).textContent = label;
    box.weMax = svg("text", { x: 2, y: 12, "font-size": 9, fill: "#555" }, box);
    svg("text", { x: 2, y: 92, "font-size": 9, fill: "#555" }, box).textContent = "0";
    box.wePath = svg("path", line ? { fill: "none", stroke: colour, "stroke-width": 1.5 }
      : { fill: "none", stroke: colour, "stroke-width": 3, "stroke-linecap": "square" }, box);
    box.weLine = line;
    return box;
  }
  function plot(box, series, upto, opts) {
    let lo = 0, hi = series.length;  // series are in step order: the points up to step `upto`
    while (lo < hi) { const mid = (lo + hi) >> 1; if (series[mid][2] <= upto) lo = mid + 1; else hi = mid; }
    const stride = Math.max(1, Math.ceil(lo / 200)), pts = [];
    for (let i = 0; i < lo; i += stride) pts.push(series[i]);
    if (lo && pts[pts.length - 1] !== series[lo - 1]) pts.push(series[lo - 1]);
    const tmax = Math.max(opts.tmax, 1e-9);
    let ymax = Math.max(opts.ymax || 0, 1e-12);
    for (const p of pts) if (p[1] > ymax) ymax = p[1];
    const X = (t) => (31 + 264 * t / tmax).toFixed(1), Y = (y) => (92 - 86 * y / ymax).toFixed(1);
    let d = "";
    if (box.weLine) pts.forEach((p, i) => { d += (i ? "L" : "M") + X(p[0]) + " " + Y(p[1]); });
    else for (const p of pts) d += "M" + X(p[0]) + " " + Y(p[1]) + "h0";
    box.wePath.setAttribute("d", d);
    const top = opts.fmt(ymax);
    if (box.weMax.textContent !== top) box.weMax.textContent = top;
    box.dataset.points = String(lo);
  }

  root.WatchEngineViews = { h, colour, chip, region, pool, freeList, tables, queue, batch, tree, plotBox, plot };
})(typeof globalThis !== "undefined" ? globalThis : this);
