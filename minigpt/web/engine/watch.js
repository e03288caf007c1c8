// Watch the engine (decoder_ring/watch_engine.md): the serving engine's twin (MiniGPTEngine) run step by
// step in the reader's browser, no kernel. Controls build a seeded trace and an engine; every step's record
// is kept, so step back and forward show the same states; the views are engine/views.js. Step times are
// predicted by the cost twin (MiniGPTCosts) for the chosen model and chip. Strings go through MiniGPTI18N.tr.
// With "MiniGPT's own tokens" (engine/watch_text.js) the prompts are text and MiniGPT computes every token.
// Loads after the cost scripts, minigpt_forward.js, engine/{core,prefix_cache,scheduler,meters,engine,
// minigpt_tokens}.js, i18n.js, engine/views.js and watch_text.js (minigpt.book.web_export.ENGINE_SCRIPTS, in order).
(function (root) {
  "use strict";
  const E = root.MiniGPTEngine, V = root.WatchEngineViews, I18N = root.MiniGPTI18N, C = root.MiniGPTCosts, X = root.WatchEngineText;
  if (!E || !E.Engine || !V || !I18N || !C || !X) throw new Error("the engine, cost, i18n and view scripts must load before engine/watch.js");
  const tr = I18N.tr, h = V.h;
  const dur = (x) => I18N.localizeNumbers(C.fmt_duration(x));  // a duration written the edition's way

  const DEFAULTS = { n: 300, rate: 20, P_lo: 16, P_hi: 256, D_lo: 16, D_hi: 256, systems: 2, system_len: 64,
    seed: 0, num_blocks: 256, block_size: 16, budget: 512, max_batch: 16, preemption: "recompute",
    prefix_caching: true, policy: "fcfs", reservation: "paged", watermark: 0, model: "Llama-2-7B", hardware: "A100 80GB", tokens: false };
  // [key, label, kind, options]: number fields [min, max, step], selects [[value, label], ...], checkboxes.
  const FIELDS = [
    ["rate", tr("arrival rate (requests/s)"), "number", [0.1, 1e7, 0.1]], ["n", tr("requests"), "number", [1, 2000, 1]],
    ["P_lo", tr("prompt length, from"), "number", [1, 4000, 1]], ["P_hi", tr("prompt length, to"), "number", [1, 4000, 1]],
    ["D_lo", tr("output length, from"), "number", [1, 4000, 1]], ["D_hi", tr("output length, to"), "number", [1, 4000, 1]],
    ["systems", tr("shared system prompts"), "number", [0, 8, 1]], ["system_len", tr("system prompt tokens"), "number", [0, 2000, 1]],
    ["num_blocks", tr("KV blocks"), "number", [4, 4096, 1]], ["block_size", tr("block size (tokens)"), "number", [1, 256, 1]],
    ["budget", tr("token budget per step (0 = none)"), "number", [0, 16384, 1]], ["max_batch", tr("max batch"), "number", [1, 256, 1]],
    ["preemption", tr("preemption"), "select", [["recompute", tr("recompute")], ["swap", tr("swap")]]],
    ["reservation", tr("blocks reserved"), "select", [["paged", tr("paged (on demand)")], ["max_tokens", tr("P + D per request")], ["S_max", tr("S_max per request")]]],
    ["watermark", tr("watermark (% of blocks)"), "number", [0, 50, 1]], ["prefix_caching", tr("prefix caching"), "checkbox"],
    ["policy", tr("admission"), "select", [["fcfs", tr("first come, first served")], ["lpf", tr("longest cached prefix first")]]],
    ["model", tr("model"), "select", [["Llama-2-7B", "Llama-2-7B"], ["Llama-3-8B", "Llama-3-8B"], ["MiniGPT", "MiniGPT"]]],
    ["hardware", tr("chip"), "select", [["A100 80GB", "A100 80GB"], ["H100 SXM", "H100 SXM"]]],
    ["seed", tr("trace seed"), "number", [0, 4294967295, 1]], ["tokens", tr("MiniGPT's own tokens"), "checkbox"],
  ];
  const PRESETS = [
    ["paging", tr("Why paging admits more requests"), { reservation: "S_max", num_blocks: 512, n: 120, max_batch: 32, prefix_caching: false },
      tr("Every sequence is given S_max = 4,096 tokens of blocks up front, so only two run at once and the waiting queue grows: switch 'blocks reserved' to paged and watch the same pool hold a full batch.")],
    ["preempt", tr("What a preemption costs"), { num_blocks: 64, rate: 30, P_lo: 64, D_lo: 64, prefix_caching: false, systems: 0 },
      tr("The pool is small: watch the youngest request preempted when a block runs out, its blocks back on the free list, then its whole context prefilled again as one long chunk, and the preemptions plot climb.")],
    ["prefix", tr("A prefix hit saves a prefill"), { systems: 1, system_len: 256, P_lo: 8, P_hi: 32, D_lo: 8, D_hi: 32, rate: 8, n: 80 },
      tr("Every prompt starts with the same 256-token system prompt: after the first request, each first chunk covers only the request's own tokens, and its block table starts with the shared (outlined) blocks.")],
    ["stall", tr("A long prompt stalls decodes"), { budget: 0, P_lo: 16, P_hi: 3000, D_lo: 64, D_hi: 128, rate: 6, n: 80, num_blocks: 2048, max_batch: 32, prefix_caching: false, systems: 0 },
      tr("No token budget: a 3,000-token prompt is prefilled in one step and every running decode waits for it, so the inter-token gaps spike; set the token budget to 256 and they flatten.")],
    ["watermark", tr("What the watermark prevents"), { num_blocks: 96, rate: 40, P_lo: 32, P_hi: 160, D_lo: 64, D_hi: 192, prefix_caching: false, systems: 0 },
      tr("No watermark: new prompts take the last free blocks and running requests are preempted as they grow; set the watermark to 10 % and watch admissions wait instead, with fewer preemptions.")],
    ["text", tr("Real text, the same schedule"), { model: "MiniGPT", tokens: true, n: 24, rate: 1e6, P_lo: 8, P_hi: 48, D_lo: 16, D_hi: 48, systems: 2, system_len: 24, num_blocks: 16, block_size: 8, budget: 64, max_batch: 6, seed: 6 },
      tr("MiniGPT computes every token in this browser: each request's text grows in the text view, a prefix hit starts from shared sentences, and a request preempted by recompute goes on with its text where it stopped. A step of MiniGPT is predicted at a quarter of a microsecond on this chip, so the requests arrive a microsecond apart to share a batch.")],
  ];
  const SPEEDS = [1, 4, 16, 64];

  class Watch {
    constructor(box) {
      this.box = box;
      this.values = Object.assign({}, DEFAULTS);
      this.inputs = {};
      this.speed = 4;
      this.playing = false;
      this.build();
      this.rebuild();
    }
    settings() {
      const v = this.values;
      return { model: v.model, hardware: v.hardware, num_blocks: v.num_blocks, block_size: v.block_size, max_batch: v.max_batch,
        chunk_size: v.budget > 0 ? v.budget : null, prefix_caching: v.prefix_caching, cache_aware: v.policy === "lpf" && v.prefix_caching,
        preemption: v.preemption, reservation: v.reservation, watermark: v.watermark / 100, tokens: this.text ? "minigpt" : "replay" };
    }
    traceOptions() {
      const v = this.values;
      return { n: v.n, rate: v.rate, seed: v.seed, P: [v.P_lo, Math.max(v.P_lo, v.P_hi)], D: [v.D_lo, Math.max(v.D_lo, v.D_hi)],
        systems: v.system_len > 0 ? v.systems : 0, system_len: v.system_len, V: C.MODELS[v.model].V };
    }
    field([key, label, kind, opts]) {
      let input;
      if (kind === "select") {
        input = h("select", { name: key }, opts.map(([value, text]) => h("option", { value: value, text: text })));
      } else if (kind === "checkbox") {
        input = h("input", { type: "checkbox", name: key });
      } else {
        input = h("input", { type: "number", name: key, min: String(opts[0]), max: String(opts[1]), step: String(opts[2]) });
      }
      input.addEventListener("change", () => this.changed(key, kind, input));
      this.inputs[key] = input;
      return h("label", { class: "we-field" + (kind === "checkbox" ? " we-check" : "") }, [h("span", { text: label }), input]);
    }
    changed(key, kind, input) {
      let value = kind === "checkbox" ? input.checked : input.value;
      if (kind === "number") {
        const [lo, hi] = FIELDS.find((f) => f[0] === key)[3];
        value = Number(value);
        if (!Number.isFinite(value)) value = DEFAULTS[key];
        value = Math.min(hi, Math.max(lo, value));
        input.value = String(value);
      }
      this.values[key] = value;
      this.note.textContent = "";
      this.sync();
      this.rebuild();
    }
    sync() {
      for (const [key, , kind] of FIELDS) {
        if (kind === "checkbox") this.inputs[key].checked = !!this.values[key];
        else this.inputs[key].value = String(this.values[key]);
      }
      this.inputs.tokens.disabled = !!(this.hint.textContent = X.unavailable(this.values) || "");
    }
    button(text, onClick, attrs) {
      const b = h("button", Object.assign({ type: "button", text: text }, attrs || {}));
      b.addEventListener("click", onClick);
      return b;
    }
    build() {
      const presets = h("div", { class: "we-presets" }, [h("span", { text: tr("Questions:") })].concat(PRESETS.map(([key, label, values, sentence]) =>
        this.button(label, () => this.preset(key), { "data-preset": key }))));
      this.note = h("p", { class: "we-note", "aria-live": "polite" });
      const form = h("div", { class: "we-form" }, FIELDS.map((f) => this.field(f)));
      this.hint = h("p", { class: "we-hint" });
      this.textBox = h("div", { class: "we-text" });
      this.playButton = this.button(tr("Play"), () => this.toggle(), { class: "we-play" });
      this.speedSelect = h("select", { name: "speed", "aria-label": tr("speed") }, SPEEDS.map((s) => h("option", { value: String(s), text: tr("{0} steps per frame", [s]) })));
      this.speedSelect.value = String(this.speed);
      this.speedSelect.addEventListener("change", () => { this.speed = Number(this.speedSelect.value); });
      const controls = h("div", { class: "we-controls" }, [this.button(tr("◀ Step back"), () => this.show(this.cursor - 1), { class: "we-back" }),
        this.playButton, this.button(tr("Step forward ▶"), () => this.show(this.cursor + 1), { class: "we-forward" }),
        this.button(tr("Restart"), () => this.show(0), { class: "we-restart" }), this.speedSelect]);
      this.status = h("p", { class: "we-status", "aria-live": "off" });
      this.poolCanvas = h("canvas", { class: "we-pool", role: "img" });
      this.free = h("p", { class: "we-free" });
      this.tablesList = h("ul", { class: "we-tables" });
      this.waitingBox = h("div", { class: "we-queue we-waiting" });
      this.swappedBox = h("div", { class: "we-queue we-swapped" });
      this.batchBox = h("div", { class: "we-batch" });
      this.treeBox = h("div", { class: "we-tree" });
      this.summaryBox = h("p", { class: "we-summary" });
      const colours = ["#1f6fb2", "#c0392b", "#27ae60", "#8e44ad", "#e67e00"];
      this.plots = [tr("TTFT (s)"), tr("inter-token gap (s)"), tr("throughput (tokens/s)"), tr("pool use"), tr("preemptions")].map((label, j) =>
        [label, V.plotBox(label, colours[j], j >= 2)]);
      const section = (title, ...nodes) => h("section", { class: "we-view" }, [h("h4", { text: title }), ...nodes]);
      this.textSection = section(tr("Text: MiniGPT's own tokens"), this.textBox);
      this.box.replaceChildren(presets, this.note, form, this.hint, controls, this.status,
        h("div", { class: "we-views" }, [this.textSection, section(tr("The step: one fused batch"), this.batchBox),
          section(tr("Block pool"), this.poolCanvas, this.free), section(tr("Block tables of the running requests"), this.tablesList),
          section(tr("Waiting"), this.waitingBox), section(tr("Swapped out"), this.swappedBox), section(tr("Prefix tree"), this.treeBox),
          section(tr("Meters"), this.summaryBox, h("div", { class: "we-plots" }, this.plots.map((p) => p[1])))]));
      this.box.addEventListener("keydown", (ev) => this.key(ev));
      this.measure();
      root.addEventListener("resize", () => { this.measure(); this.render(); });
      this.sync();
    }
    measure() {  // the pool canvas's width, read once here and not in every render (a read forces a layout)
      this.poolWidth = this.poolCanvas.clientWidth || 320;
    }
    key(ev) {
      const tag = ev.target && ev.target.tagName;
      if (tag === "INPUT" || tag === "SELECT") return;
      if (ev.key === "ArrowRight") this.show(this.cursor + 1);
      else if (ev.key === "ArrowLeft") this.show(this.cursor - 1);
      else if (ev.key === " " && tag !== "BUTTON") this.toggle();
      else return;
      ev.preventDefault();
    }
    preset(key) {
      const [, , values, sentence] = PRESETS.find((p) => p[0] === key);
      this.values = Object.assign({}, DEFAULTS, values);
      this.sync();
      this.rebuild();
      this.note.textContent = sentence;
    }
    rebuild() {
      this.pause();
      const text = this.values.tokens && !X.unavailable(this.values);
      if (!X.ready(this, text)) return;  // MiniGPT's weights first (once), then this run
      try {
        this.text = text ? new E.MiniGPTTokens(this.model) : null;
        this.trace = text ? E.textTrace(this.traceOptions(), this.model) : E.trace(this.traceOptions());
        this.engine = new E.Engine(this.settings(), this.text);
      } catch (err) {
        this.note.textContent = tr("Cannot run: {0}", [err.message]);
        return;
      }
      this.engine.submit(this.trace);
      this.t0 = this.trace.length ? this.trace[0].arrival_s : 0;
      this.series = [[], [], [], [], []];
      this.tokens = 0;
      this.finished = [];
      this.doneBy = [];
      this.textSection.hidden = !text;
      this.tokenSteps = {};  // request -> the step of each of its tokens
      this.summaryKey = null;
      this.cursor = -1;
      this.show(0);
    }
    ensure(k) {
      const e = this.engine;
      while (e.records.length <= k && e.busy) this.collect(e.step(), e.records.length - 1);
    }
    collect(rec, i) {  // the meters' points of step i: [engine time, value, step]
      const [ttft, itl, tput, kv, pre] = this.series;
      for (const id of rec.sampled) {
        const t = this.engine.requests.get(id), n = t.token_s.length;
        (this.tokenSteps[id] = this.tokenSteps[id] || []).push(i);
        if (n === 1) ttft.push([rec.end, rec.end - t.request.arrival_s, i]);
        else itl.push([rec.end, t.token_s[n - 1] - t.token_s[n - 2], i]);
      }
      this.tokens += rec.sampled.length;
      this.finished.push(...rec.finished);
      this.doneBy.push(this.finished.length);  // requests finished by the end of step i
      if (rec.end > this.t0) tput.push([rec.end, this.tokens / (rec.end - this.t0), i]);
      kv.push([rec.start, rec.kv_usage, i]);
      pre.push([rec.start, rec.preempted, i]);
    }
    show(k) {
      this.ensure(Math.max(k, 0));
      const last = this.engine.records.length - 1;
      this.cursor = Math.max(0, Math.min(k, last));
      if (last >= 0) this.render();
      return this.cursor;
    }
    render() {
      if (this.cursor < 0) return;
      const rec = this.engine.records[this.cursor], v = this.values, e = this.engine;
      const done = e.busy ? "" : " " + tr("(the run ends at step {0})", [e.records.length - 1]);
      this.status.textContent = tr("step {0}: engine time {1}, this step {2} (predicted for {3} on {4})",
        [this.cursor, dur(rec.start), dur(rec.end - rec.start), v.model, v.hardware]) + done;
      this.box.dataset.step = String(this.cursor);
      V.batch(this.batchBox, rec, v.budget);
      V.pool(this.poolCanvas, rec, v.num_blocks, this.poolWidth);
      V.freeList(this.free, rec);
      V.tables(this.tablesList, rec);
      V.queue(this.waitingBox, rec.waiting);
      V.queue(this.swappedBox, rec.swapped, rec.host);
      V.tree(this.treeBox, rec);
      if (this.text) X.view(this.textBox, { rec: rec, k: this.cursor, engine: e, vocab: this.model.tokenizer.vocab,
        steps: this.tokenSteps, finished: this.finished.slice(0, this.doneBy[this.cursor]) });
      const tmax = Math.max(e.now, rec.end), fmt = [dur, dur, (x) => Math.round(x) + "", (x) => I18N.localizeNumbers(C.fmt_percent(x)), (x) => Math.round(x) + ""];
      this.plots.forEach(([label, canvas], j) => V.plot(canvas, this.series[j], this.cursor,
        { tmax: tmax, fmt: fmt[j], ymax: j === 3 ? 1 : 0 }));
      this.summarize(rec);
    }
    summarize(rec) {
      const count = this.doneBy[this.cursor];
      if (this.summaryKey === count + "/" + rec.preempted) return;  // the same requests finished: the same meters
      this.summaryKey = count + "/" + rec.preempted;
      const done = this.finished.slice(0, count).map((id) => this.engine.requests.get(id))
        .sort((a, b) => +a.id.slice(1) - +b.id.slice(1));  // in arrival order, as Python sums them
      if (!done.length) {
        this.summaryBox.textContent = tr("no request has finished yet");
        this.summaryBox.dataset.summary = "{}";
        return;
      }
      const s = E.latencySummary(done);
      this.summaryBox.dataset.summary = JSON.stringify(s);
      this.summaryBox.textContent = tr("{0} finished: TTFT p50 {1}, p99 {2}; inter-token gap p50 {3}, p99 {4}; {5} tokens/s; {6} preemptions",
        [s.requests, dur(s.ttft_p50_s), dur(s.ttft_p99_s), dur(s.itl_p50_s || 0),
          dur(s.itl_p99_s || 0), Math.round(s.output_tok_s || 0), rec.preempted]);
    }
    toggle() { if (this.playing) this.pause(); else this.play(); }
    play() {
      this.playing = true;
      this.playButton.textContent = tr("Pause");
      const tick = () => {
        if (!this.playing) return;
        const before = this.cursor, until = performance.now() + 12;  // up to `speed` steps, in about 12 ms of steps
        let k = this.cursor;
        while (k < before + this.speed && performance.now() < until) this.ensure(++k);
        this.show(k);
        if (this.cursor === before) { this.pause(); return; }
        root.requestAnimationFrame(tick);
      };
      root.requestAnimationFrame(tick);
    }
    pause() {
      this.playing = false;
      if (this.playButton) this.playButton.textContent = tr("Play");
    }
    // Scripting time of n steps (milliseconds): the engine's steps alone; the run played at the top speed (the
    // engine's steps, one drawing per 64 steps); and every step drawn.
    benchmark(n) {
      this.rebuild();
      let t = performance.now();
      const e = new E.Engine(this.settings(), this.text && new E.MiniGPTTokens(this.model));
      e.submit(this.trace);
      e.run(n);
      const engineMs = performance.now() - t;
      t = performance.now();
      for (let i = 0; i < n; i += SPEEDS[SPEEDS.length - 1]) this.show(i);  // as play draws them at the top speed
      this.show(n - 1);
      const playedMs = performance.now() - t;
      this.rebuild();
      t = performance.now();
      for (let i = 0; i < n; i++) this.show(i);
      return { steps: this.cursor + 1, engine_ms: engineMs, played_ms: playedMs, rendered_ms: performance.now() - t };
    }
  }

  function start() {
    const boxes = Array.from(document.querySelectorAll("[data-watch-engine]"));
    root.WatchEngine = { DEFAULTS, PRESETS, instances: boxes.map((box) => new Watch(box)) };
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})(typeof globalThis !== "undefined" ? globalThis : this);
