// MiniGPT live: the page that runs MiniGPT in the reader's browser and draws its KV cache filling.
// Needs MiniGPTForward (minigpt_forward.js), MiniGPTCosts (costs/*.js: web_export.SCRIPTS), MiniGPTI18N (i18n.js) and
// MiniGPTLiveCharts (minigpt_live_charts.js, its two plots) loaded first; loads the weights script (minigpt_weights.js, written at build time by minigpt.book.web_export) from its own folder.
// Every count beside a step comes from MiniGPTCosts, the browser twin of minigpt.costs.
// Every string the reader sees goes through `tr` (the edition's table, MiniGPTStrings, on the Spanish site;
// templates with {0}, {1}, ... where a string is built from values); MiniGPT's own words stay English.
(function (root) {
  "use strict";
  const SCRIPT_URL = document.currentScript && document.currentScript.src;
  const SVG = "http://www.w3.org/2000/svg";
  const EXAMPLES = ["Yesterday I worked and he", "Every day she", "Tomorrow the teachers will", "Last night my uncle"];

  function h(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const k in attrs || {}) {
      if (k === "text") node.textContent = attrs[k];
      else node.setAttribute(k, attrs[k]);
    }
    for (const c of children || []) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    return node;
  }

  function svg(tag, attrs, parent) {
    const node = document.createElementNS(SVG, tag);
    for (const k in attrs) node.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(node);
    return node;
  }

  const group = (n) => Math.round(n).toLocaleString("en-US");
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  // The next task, with no timer's clamp: the browser paints and hears Stop in between.
  const nextTask = () => new Promise((resolve) => {
    const channel = new MessageChannel(); channel.port1.onmessage = () => resolve(); channel.port2.postMessage(null); });
  const SLICE_MS = 12;  // the least model time between two turns of the browser when there is no pause

  // The edition's strings: MiniGPTI18N (i18n.js), loaded before this file like the cost scripts and minigpt_forward.js.
  const I18N = root.MiniGPTI18N;
  if (!I18N) throw new Error("i18n.js must load before minigpt_live.js");
  const tr = I18N.tr, L = I18N.localizeNumbers;

  // ---- The costs of one step, from the book's formulas (2 FLOPs per multiply-add, fp32: s = 4) ----
  // N_params is the number of weights the page loaded (tests/test_minigpt_js.py: = minigpt.costs.param_count).
  function stepCosts(C, c, N_params, step, useCache) {
    const model = { L: c.L, d: c.d, H_kv: c.H_kv, d_h: c.d_h, d_ffn: c.d_ffn, V: c.V };
    const s = 4, shape = { L: c.L, H_kv: c.H_kv, d_h: c.d_h, s };
    const weights = C.weight_bytes({ N_params, s });
    const kvToken = C.kv_bytes_per_token(shape);
    const cached = step.phase === "decode" && useCache;
    const S = cached ? step.S : 0;  // cached rows this pass reads: none for a prefill or without a cache
    return {
      // Without the cache every step is a prefill of all S + 1 tokens.
      flops: cached ? C.decode_step_flops(Object.assign({ S: step.S }, model))
        : C.prefill_flops(Object.assign({ P: step.T }, model)),
      weights,
      cacheRead: C.kv_cache_bytes(Object.assign({ S }, shape)),
      cacheWritten: useCache ? C.kv_cache_bytes(Object.assign({ S: step.T }, shape)) : 0,
      bytes: C.decode_step_bytes({ weight_bytes: weights, kv_bytes_per_token: kvToken, S }),  // Eq. (3.5)
    };
  }

  // FLOPs of step t of a generation of a P-token prompt, with the cache and without it.
  function flopsBoth(C, c, P, t) {
    const model = { L: c.L, d: c.d, H_kv: c.H_kv, d_h: c.d_h, d_ffn: c.d_ffn, V: c.V };
    const cached = t === 0 ? C.prefill_flops(Object.assign({ P }, model, { L: c.L }))
      : C.decode_step_flops(Object.assign({ S: P + t - 1 }, model, { L: c.L }));
    return { cached, uncached: C.prefill_flops(Object.assign({ P: P + t }, model, { L: c.L })) };
  }

  class Live {
    constructor(box, F, C, model) {
      this.box = box; this.F = F; this.C = C; this.model = model; this.c = model.config;
      this.running = false; this.stopRequested = false;
      this.build();
      this.reset();
      box.setAttribute("data-state", "ready");
    }

    build() {
      const c = this.c, box = this.box;
      box.textContent = "";
      const field = (label, input, hint) => h("label", { class: "mgl-field" },
        [h("span", { text: label }), input].concat(hint ? [h("small", { text: hint })] : []));
      this.prompt = h("input", { type: "text", class: "mgl-prompt", value: EXAMPLES[0], autocomplete: "off",
        autocapitalize: "off", spellcheck: "false", "aria-label": tr("prompt") });
      this.D = h("input", { type: "number", class: "mgl-D", value: "12", min: "1", max: String(c.S_max), step: "1" });
      this.mode = h("select", { class: "mgl-mode" }, [
        h("option", { value: "cache", text: tr("with the KV cache") }),
        h("option", { value: "nocache", text: tr("no cache: recompute every step") })]);
      this.temperature = h("input", { type: "number", class: "mgl-temperature", value: "0", min: "0", step: "0.1" });
      this.topK = h("input", { type: "number", class: "mgl-topk", value: "", min: "1", max: String(c.V), step: "1",
        placeholder: tr("all {0}", [c.V]) });
      this.seed = h("input", { type: "number", class: "mgl-seed", value: "0", min: "0", step: "1" });
      this.pace = h("select", { class: "mgl-pace" }, [
        h("option", { value: "250", text: tr("watch (250 ms per step)") }),
        h("option", { value: "40", text: tr("fast") }),
        h("option", { value: "0", text: tr("no pause") })]);
      this.go = h("button", { type: "button", class: "mgl-generate", text: tr("Generate") });
      this.stop = h("button", { type: "button", class: "mgl-stop", text: tr("Stop"), disabled: "" });
      const examples = h("div", { class: "mgl-examples" }, [h("span", { text: tr("try:") + " " })].concat(EXAMPLES.map((e) => {
        const b = h("button", { type: "button", class: "mgl-example", text: e });
        b.addEventListener("click", () => { this.prompt.value = e; this.message(""); });
        return b;
      })));
      this.msg = h("div", { class: "mgl-message", role: "alert", "aria-live": "polite" });
      this.text = h("p", { class: "mgl-text", "aria-live": "polite" });
      this.status = h("p", { class: "mgl-status" });
      // The cache.
      this.layerPick = h("select", { class: "mgl-layer" }, [h("option", { value: "all", text: tr("all {0} layers", [c.L]) })]
        .concat(Array.from({ length: c.L }, (_, l) => h("option", { value: String(l), text: tr("layer {0}", [l]) }))));
      this.cacheTitle = h("div", { class: "mgl-cache-title" });
      this.cacheBytes = h("div", { class: "mgl-cache-bytes" });
      this.canvas = h("canvas", { class: "mgl-canvas", "aria-label": tr("KV cache rows") });
      this.scroller = h("div", { class: "mgl-scroll" }, [this.canvas]);
      this.cacheBox = h("div", { class: "mgl-cache", "data-S": "0", "data-rows": "0" },
        [this.cacheTitle, this.cacheBytes, h("label", { class: "mgl-field mgl-inline" },
          [h("span", { text: tr("show") }), this.layerPick]), this.scroller]);
      // The next-word distribution and the step table.
      this.dist = h("div", { class: "mgl-dist" });
      this.tbody = h("tbody");
      const head = [[tr("step"), tr("0 is the prefill")], [tr("phase"), ""], ["T", tr("tokens fed to this forward pass")],
        ["S", tr("tokens already in the cache before it")],
        [tr("FLOPs"), tr("Eq. (1.2) or (1.3) with the LM head, 2 per multiply-add")],
        [tr("weights read"), tr("N·s: every weight, once per pass")], [tr("cache read"), tr("S rows of 2·L·H_kv·d_h·s bytes")],
        [tr("cache written"), tr("new rows of 2·L·H_kv·d_h·s bytes")],
        [tr("bytes read"), tr("weights + cache read, Eq. (3.5)")],
        [tr("time"), tr("measured in this browser around the forward pass")], [tr("next word"), ""],
        [tr("top candidates"), tr("the three most likely next words")]];
      this.table = h("table", { class: "mgl-steps" }, [h("thead", {}, [h("tr", {}, head.map(([x, title]) =>
        h("th", title ? { text: x, title } : { text: x })))]), this.tbody]);
      this.totals = h("p", { class: "mgl-totals" });
      this.flopPlot = svg("svg", { class: "mgl-plot mgl-flops", viewBox: "0 0 520 250", role: "img",
        "aria-label": tr("cumulative FLOPs with and without the cache") });
      this.timePlot = svg("svg", { class: "mgl-plot mgl-times", viewBox: "0 0 520 200", role: "img",
        "aria-label": tr("measured time per step") });

      box.append(
        h("div", { class: "mgl-form" }, [
          field(tr("prompt (words of MiniGPT's vocabulary, '.' as its own word)"), this.prompt),
          examples,
          h("div", { class: "mgl-row" }, [
            field(tr("new tokens D"), this.D, tr("D ≤ S_max − P + 1")), field(tr("mode"), this.mode),
            field(tr("temperature"), this.temperature, tr("0 = greedy")), field(tr("top-k"), this.topK, tr("empty = all")),
            field(tr("seed"), this.seed), field(tr("pace"), this.pace)]),
          h("div", { class: "mgl-row" }, [this.go, this.stop])]),
        this.msg, this.status, this.text,
        h("div", { class: "mgl-panels" }, [this.cacheBox, h("div", { class: "mgl-dist-box" },
          [h("div", { class: "mgl-cache-title", text: tr("next-word distribution") }), this.dist])]),
        h("div", { class: "mgl-table-scroll", tabindex: "0", role: "region", "aria-label": tr("the steps, one row each") },
          [this.table]), this.totals,
        h("div", { class: "mgl-plots" }, [this.flopPlot, this.timePlot]));
      this.go.addEventListener("click", () => this.generate());
      this.stop.addEventListener("click", () => { this.stopRequested = true; });
      this.prompt.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); this.generate(); } });
      this.layerPick.addEventListener("change", () => this.drawCache());
      if (box.clientWidth && box.clientWidth < 560) this.layerPick.value = "0";
      root.addEventListener("resize", () => this.drawCache());
    }

    message(text, kind, suggestions) {
      this.msg.textContent = "";
      this.msg.setAttribute("data-kind", text ? kind || "info" : "");
      if (!text) return;
      this.msg.appendChild(h("span", { text }));
      for (const [word, near] of Object.entries(suggestions || {})) {
        const line = h("div", { class: "mgl-suggest" }, [h("span", { text: tr("“{0}”: did you mean", [word]) + " " })]);
        near.forEach((w, i) => {
          const b = h("button", { type: "button", class: "mgl-suggestion", text: w });
          b.addEventListener("click", () => this.replaceWord(word, w));
          line.append(b, i < near.length - 1 ? " " : "?");
        });
        this.msg.appendChild(line);
      }
    }

    replaceWord(word, replacement) {
      const words = this.model.tokenizer.words(this.prompt.value).map((w) => (w === word ? replacement : w));
      this.prompt.value = words.join(" ");
      this.message("");
    }

    // Parse the form into a request, or show what is wrong and return null.
    request() {
      const c = this.c, tok = this.model.tokenizer;
      let ids;
      try {
        ids = tok.encode(this.prompt.value);
      } catch (e) {
        const hint = e.unknown && e.unknown.some((w) => /[.,;:!?]$/.test(w)) ? " " + tr("Write “.” as its own word.") : "";
        this.message(tr("Not in MiniGPT's vocabulary of {0} words: {1}. Words are case-sensitive.",
          [c.V, e.unknown.map((w) => tr("“{0}”", [w])).join(", ")]) + hint, "error", e.suggestions);
        return null;
      }
      if (!ids.length) {
        this.message(tr("Type a prompt first: generation needs at least one prompt token (P ≥ 1)."), "error");
        return null;
      }
      const num = (input) => (input.value.trim() === "" ? null : Number(input.value));
      const D = num(this.D), temperature = num(this.temperature) === null ? 0 : num(this.temperature);
      const topK = num(this.topK), seed = num(this.seed) === null ? 0 : num(this.seed);
      const useCache = this.mode.value === "cache";
      try {
        if (D === null) throw new RangeError("new tokens D must be an integer >= 1, got nothing");
        this.F.checkRequest(this.model, ids, D);
        if (temperature > 0) this.F.rngFromSeed(seed);
        return new this.F.Generation(this.model, ids, { D, useCache, temperature, topK, seed });
      } catch (e) {
        this.message(tr("Cannot generate: {0}.", [I18N.translated(e.message)]), "error");
        return null;
      }
    }

    reset() {
      this.gen = null; this.steps = []; this.shown = 0; this.tbody.textContent = ""; this.dist.textContent = "";
      this.text.textContent = ""; this.totals.textContent = ""; this.status.textContent = "";
      this.box.setAttribute("data-steps", "0");
      this.box.removeAttribute("data-output");
      this.drawCache(); this.drawPlots();
    }

    async generate() {
      if (this.running) return;
      const gen = this.request();
      if (!gen) return;
      this.message("");
      this.reset();
      this.gen = gen;
      this.running = true; this.stopRequested = false;
      this.go.disabled = true; this.stop.disabled = false;
      this.box.setAttribute("data-state", "running");
      try {
        // The model sets the pace: each step is recorded, the page redrawn at most once per animation frame
        // (drawSoon), and the browser given its turn after each pause or, with none, every SLICE_MS.
        // A slice of model time lasts at least 3 times what the browser took at its last turn (a redraw and a
        // paint), so the drawing takes at most a quarter of the wall clock however slow it is.
        const pace = Number(this.pace.value), now = () => performance.now();
        let slice = this.started = now(), budget = SLICE_MS;
        while (!gen.done && !this.stopRequested) {
          this.record(gen.step());
          this.drawSoon();
          if (pace) await sleep(pace);
          else if (now() - slice >= budget) {
            const away = now();
            await nextTask();
            if (now() - away > 1) budget = Math.max(SLICE_MS, 3 * (now() - away));  // the browser drew
            slice = now();
          }
        }
        this.draw();
        this.status.textContent = this.stopRequested ? tr("Stopped after {0} of D = {1} tokens.", [gen.tokens.length, gen.D])
          : this.summary();
      } catch (e) {
        this.message(tr("Generation stopped: {0}", [I18N.translated(e.message)]), "error");
      } finally {
        this.running = false; this.go.disabled = false; this.stop.disabled = true;
        this.box.setAttribute("data-state", "done");
      }
    }

    // One step of the generation: its counts and candidates, kept for the next draw.
    record(step) {
      const cost = stepCosts(this.C, this.c, this.model.N_params, step, this.gen.useCache);
      this.steps.push(Object.assign({}, step, cost, { top: this.F.topCandidates(step.probs, 5) }));
    }

    drawSoon() {  // once, at the next frame; a draw before it (the last one of a run) takes its place
      if (!this.drawPending) this.drawPending = requestAnimationFrame(() => this.draw());
    }

    // The page as the generation stands: the table's new rows, the text, the last step's status and
    // candidates, the cache and the plots.
    draw() {
      cancelAnimationFrame(this.drawPending); this.drawPending = 0;
      while (this.shown < this.steps.length) this.addRow(this.steps[this.shown++]);
      const tok = this.model.tokenizer, gen = this.gen, step = this.steps[this.steps.length - 1];
      if (!step) return;
      const scroll = this.tbody.parentNode.parentNode;
      scroll.scrollTop = scroll.scrollHeight;
      // The text: prompt, then the new words.
      this.text.textContent = "";
      gen.seq.forEach((id, i) => this.text.append(h("span", {
        class: i < gen.P ? "mgl-p" : "mgl-new", text: tok.vocab[id] }), " "));
      this.box.setAttribute("data-output", tok.decode(gen.tokens));
      this.box.setAttribute("data-steps", String(this.steps.length));
      this.status.textContent = step.phase === "prefill"
        ? (gen.useCache ? tr("Prefill: all P = {0} prompt tokens in one pass, {0} rows written to every layer of the cache.", [step.T])
          : tr("Prefill: all P = {0} prompt tokens in one pass (no cache: their keys and values are dropped).", [step.T]))
        : gen.useCache ? tr("Decode step {0}: one token against S = {1} cached tokens, one row appended per layer.",
          [step.index, step.S])
          : tr("Step {0} without a cache: a full forward over all {1} tokens again.", [step.index, step.T]);
      this.drawDistribution(step.top, step.token);
      this.drawCache();
      this.drawPlots();
    }

    addRow(step) {
      const C = this.C, tok = this.model.tokenizer, cost = step, top = step.top;
      const row = h("tr", { class: "mgl-" + step.phase, "data-flops": String(cost.flops), "data-bytes": String(cost.bytes) });
      const cells = [L(String(step.index)), step.phase === "prefill" ? tr("prefill") : tr("decode"), L(String(step.T)),
        L(String(step.S)), L(C.fmt_flops(cost.flops)), L(C.fmt_bytes(cost.weights)), L(C.fmt_bytes(cost.cacheRead)),
        L(C.fmt_bytes(cost.cacheWritten)), L(C.fmt_bytes(cost.bytes)), L(step.ms.toFixed(2)) + " ms", tok.vocab[step.token],
        top.slice(0, 3).map((x) => tok.vocab[x.id] + " " + L((100 * x.p).toFixed(0)) + "%").join(" · ")];
      cells.forEach((x, i) => row.appendChild(h("td", { text: x, class: i === 10 ? "mgl-word" : "" })));
      this.tbody.appendChild(row);
    }

    summary() {
      const C = this.C, steps = this.steps, gen = this.gen;
      const flops = steps.reduce((a, s) => a + s.flops, 0), ms = steps.reduce((a, s) => a + s.ms, 0);
      const other = steps.reduce((a, s, t) => a + flopsBoth(C, this.c, gen.P, t)[gen.useCache ? "uncached" : "cached"], 0);
      const decode = steps.slice(1), decodeMs = decode.reduce((a, s) => a + s.ms, 0);
      const total = [L(C.fmt_flops(flops)), L(ms.toFixed(1)), L(steps[0].ms.toFixed(2))];
      const ratio = [L(C.fmt_flops(other)), L((gen.useCache ? other / flops : flops / other).toFixed(1))];
      this.totals.textContent = (decode.length
        ? tr("Total: {0} counted in {1} ms (prefill {2} ms, decode steps {3} ms on average).",
          total.concat([L((decodeMs / decode.length).toFixed(2))]))
        : tr("Total: {0} counted in {1} ms (prefill {2} ms).", total)) + " " +
        (gen.useCache ? tr("Without the cache: {0} ({1}× more).", ratio) : tr("With the cache: {0} ({1}× fewer).", ratio));
      return tr("Done: {0} new tokens in {1} s.", [gen.tokens.length, L(((performance.now() - this.started) / 1e3).toFixed(2))]);
    }

    drawDistribution(top, chosen) {
      const tok = this.model.tokenizer, T = this.gen.sampling.temperature;
      this.dist.textContent = "";
      const topK = this.gen.sampling.topK, seed = L(this.seed.value);
      this.dist.appendChild(h("small", { text: T > 0
        ? (topK ? tr("sampled from softmax(logits / {0}) over the top {1}, seed {2}", [T, topK, seed])
          : tr("sampled from softmax(logits / {0}), seed {1}", [T, seed]))
        : tr("greedy: the most likely word is taken; probabilities are softmax(logits)") }));
      for (const { id, p } of top) {
        const bar = h("span", { class: "mgl-bar" });
        bar.style.width = (100 * p).toFixed(1) + "%";
        this.dist.appendChild(h("div", { class: "mgl-cand" + (id === chosen ? " mgl-chosen" : "") }, [
          h("span", { class: "mgl-cand-word", text: tok.vocab[id] }), h("span", { class: "mgl-bar-box" }, [bar]),
          h("span", { class: "mgl-cand-p", text: L((100 * p).toFixed(p > 0.9995 ? 0 : 1)) + " %" })]));
      }
    }

    // The cache as it is: for each layer, K and V, each H_kv heads × d_h values, one row per token.
    drawCache() {
      const c = this.c, C = this.C, gen = this.gen, cache = gen && gen.cache;
      const S = cache ? cache.S : 0;
      const layers = this.layerPick.value === "all" ? Array.from({ length: c.L }, (_, l) => l) : [Number(this.layerPick.value)];
      this.cacheTitle.textContent = tr("KV cache [L, H_kv, S, d_h] = [{0}, {1}, {2}, {3}] for keys and for values",
        [c.L, c.H_kv, S, c.d_h]);
      const used = C.kv_cache_bytes({ L: c.L, H_kv: c.H_kv, d_h: c.d_h, s: 4, S });
      const allocated = C.kv_cache_bytes({ L: c.L, H_kv: c.H_kv, d_h: c.d_h, s: 4, S: c.S_max });
      this.cacheBytes.textContent = gen && !gen.useCache
        ? tr("No cache in this mode: every step recomputes the keys and values of all tokens and drops them.")
        : tr("S = {0} rows × {1} B (2·L·H_kv·d_h·s, fp32) = {2} used of {3} allocated (S_max = {4})",
          [S, L(group(C.kv_bytes_per_token({ L: c.L, H_kv: c.H_kv, d_h: c.d_h, s: 4 }))), L(C.fmt_bytes(used)),
            L(C.fmt_bytes(allocated)), c.S_max]);
      this.cacheBox.setAttribute("data-S", String(S));
      this.cacheBox.setAttribute("data-bytes", String(used));
      const width = Math.max(this.scroller.clientWidth || 320, 240);
      const labelW = 72, gapHead = 1, gapKV = 4, gapLayer = 8;
      const cols = layers.length * 2 * c.H_kv * c.d_h;
      const gaps = layers.length * (2 * (c.H_kv - 1) * gapHead + gapKV) + (layers.length - 1) * gapLayer;
      const cell = Math.max(1, Math.floor((width - labelW - gaps - 4) / cols));
      const rowH = 11, top = 16;
      const rows = Math.max(S, 1);
      const dpr = root.devicePixelRatio || 1;
      const W = labelW + cols * cell + gaps + 4, Hpx = top + rows * rowH + 2;
      if (this.canvas.width !== Math.round(W * dpr) || this.canvas.height !== Math.round(Hpx * dpr)) {
        this.canvas.width = Math.round(W * dpr); this.canvas.height = Math.round(Hpx * dpr);
        this.canvas.style.width = W + "px"; this.canvas.style.height = Hpx + "px";
      }
      const g = this.canvas.getContext("2d");
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
      g.clearRect(0, 0, W, Hpx);
      g.font = "10px sans-serif"; g.textBaseline = "middle";
      let drawn = 0;
      let x = labelW;
      const starts = [];
      for (const l of layers) {
        for (const kv of ["K", "V"]) {
          starts.push([l, kv, x]);
          x += c.H_kv * c.d_h * cell + (c.H_kv - 1) * gapHead + (kv === "K" ? gapKV : 0);
        }
        x += gapLayer;
      }
      g.fillStyle = "#555";
      for (const [l, kv, x0] of starts) g.fillText("L" + l + " " + kv, x0, 7);
      if (!cache || S === 0) {
        g.fillStyle = "#888";
        g.fillText(cache ? tr("empty: press Generate") : gen ? tr("not used") : tr("empty"), 4, top + rowH / 2);
      } else {
        const scale = new Float64Array(c.L);
        for (const l of layers) {
          let m = 1e-6;
          for (const a of [cache.k, cache.v]) {
            for (let hk = 0; hk < c.H_kv; hk++) {
              const o = cache.index(l, hk, 0);
              for (let i = 0; i < S * c.d_h; i++) m = Math.max(m, Math.abs(a[o + i]));
            }
          }
          scale[l] = m;
        }
        const lastStep = this.steps[this.steps.length - 1];
        const firstNew = lastStep ? S - (lastStep.phase === "prefill" ? lastStep.T : 1) : S;
        // The values go into one image of the heat map's pixels, put once: a rectangle per value drawn
        // through the canvas took most of a step's time at S = 100.
        const X0 = Math.round(labelW * dpr), Y0 = Math.round(top * dpr);
        const img = g.createImageData(Math.max(1, this.canvas.width - X0), Math.max(1, Math.round(S * rowH * dpr)));
        const px = img.data, IW = img.width;
        const paint = (x, y, w, hgt, R, G, B) => {  // a rectangle of the heat map, in CSS pixels
          const xa = Math.round(x * dpr) - X0, xb = Math.round((x + w) * dpr) - X0;
          for (let yy = Math.round(y * dpr) - Y0, yb = Math.round((y + hgt) * dpr) - Y0; yy < yb; yy++) {
            for (let o = 4 * (yy * IW + xa), end = 4 * (yy * IW + xb); o < end; o += 4) {
              px[o] = R; px[o + 1] = G; px[o + 2] = B; px[o + 3] = 255;
            }
          }
        };
        for (let r = 0; r < S; r++) {
          const y = top + r * rowH;
          g.fillStyle = r < gen.P ? "#dbe9f7" : "#fde7cf";
          g.fillRect(0, y, labelW - 4, rowH - 1);
          g.fillStyle = "#222";
          g.fillText(String(r).padStart(3, " ") + " " + this.model.tokenizer.vocab[gen.seq[r]], 2, y + rowH / 2);
          for (const [l, kv, x0] of starts) {
            const a = kv === "K" ? cache.k : cache.v;
            for (let hk = 0; hk < c.H_kv; hk++) {
              const o = cache.index(l, hk, r);
              const hx = x0 + hk * (c.d_h * cell + gapHead);
              for (let i = 0; i < c.d_h; i++) {
                const v = Math.max(-1, Math.min(1, a[o + i] / scale[l]));
                const t = Math.round(255 * (1 - Math.abs(v)));
                if (v >= 0) paint(hx + i * cell, y, cell, rowH - 1, 255, t, t);
                else paint(hx + i * cell, y, cell, rowH - 1, t, t, 255);
              }
            }
          }
          drawn += 1;
        }
        g.putImageData(img, X0, Y0);
        g.strokeStyle = "#e67e00"; g.lineWidth = 1.5;
        for (let r = firstNew; r < S; r++) g.strokeRect(labelW - 2, top + r * rowH + 0.5, W - labelW - 1, rowH - 2);
      }
      this.cacheBox.setAttribute("data-rows", String(drawn));
      this.scroller.scrollTop = this.scroller.scrollHeight;
    }

    drawPlots() {
      const C = this.C, c = this.c, gen = this.gen, steps = this.steps;
      for (const plot of [this.flopPlot, this.timePlot]) while (plot.firstChild) plot.removeChild(plot.firstChild);
      if (!gen || !steps.length) return;
      const n = gen.D, P = gen.P;
      let a = 0, b = 0;
      const cached = [], uncached = [];
      for (let t = 0; t < n; t++) {
        const f = flopsBoth(C, c, P, t);
        a += f.cached; b += f.uncached;
        cached.push(a); uncached.push(b);
      }
      const run = gen.useCache ? "cached" : "uncached";
      this.flopPlot.setAttribute("data-cached", String(a));
      this.flopPlot.setAttribute("data-uncached", String(b));
      const charts = root.MiniGPTLiveCharts, legend = (s) => tr("— {0}: {1} for D = {2}",
        [s.label, L(C.fmt_flops(s.ys[s.ys.length - 1])), n]);
      charts.lineChart(this.flopPlot, n, [
        { ys: uncached, color: "#c0392b", label: run === "uncached" ? tr("no cache (this run)") : tr("no cache (formula)"),
          upto: run === "uncached" ? steps.length : n },
        { ys: cached, color: "#1f6fb2", label: run === "cached" ? tr("KV cache (this run)") : tr("KV cache (formula)"),
          upto: run === "cached" ? steps.length : n }],
      tr("step (0 = prefill)"), tr("cumulative FLOPs"), (v) => L(C.fmt_flops(v).replace(/ ?FLOP$/, "")), legend);
      charts.barChart(this.timePlot, n, steps.map((s) => s.ms), tr("step (0 = prefill)"), tr("measured ms per step"),
        (t) => (t === 0 ? "#1f6fb2" : gen.useCache ? "#e67e00" : "#c0392b"));
    }
  }

  function loadScript(url) {
    return new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = url;
      s.onload = () => resolve();
      s.onerror = () => reject(new Error(tr("could not load {0}", [url])));
      document.head.appendChild(s);
    });
  }

  async function start(box) {
    if (box.getAttribute("data-state")) return;
    box.setAttribute("data-state", "loading");
    box.textContent = tr("Loading MiniGPT's weights (about 1 MB, from this site)…");
    try {
      const F = root.MiniGPTForward, C = root.MiniGPTCosts;
      if (!F || !C) throw new Error(tr("minigpt_forward.js and the cost scripts must load before minigpt_live.js"));
      if (!root.MiniGPTWeights) {
        const base = box.getAttribute("data-assets") || (SCRIPT_URL || "").replace(/[^/]*$/, "");
        await loadScript(base + "minigpt_weights.js");
      }
      const model = F.loadModel(root.MiniGPTWeights);
      // One warm-up pass of each shape, so the first measured step times the model, not the JIT compiler.
      new F.Generation(model, [1, 1], { D: 2 }).step();
      F.forward(model, [1], null, true);
      box.live = new Live(box, F, C, model);
    } catch (e) {
      box.setAttribute("data-state", "error");
      box.textContent = tr("MiniGPT could not start: {0}. The weights are written by the site build (`make book`, minigpt.book.web_export).",
        [I18N.translated(e.message)]);
    }
  }

  function startAll() {
    document.querySelectorAll("div.mgl[data-minigpt-live]").forEach(start);
  }
  root.MiniGPTLive = { start, startAll, stepCosts };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", startAll);
  else startAll();
})(typeof globalThis !== "undefined" ? globalThis : this);
