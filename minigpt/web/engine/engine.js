// MiniGPTEngine, engine: the twin of minigpt/serving/engine.py in replay (Engine.replay): arrivals, the
// rejection rule (request.rejection), one scheduled step at a time, its predicted time (replay.py's fused
// step priced by the cost twin, MiniGPTCosts: max(bytes / BW, FLOPs / peak), a swap's blocks over the host
// link, Eq. 12.5), every sampled token 0 (or, with settings.tokens "minigpt", MiniGPT's own greedy token from an
// executor: engine/minigpt_tokens.js), the clock. `record()` after each schedule() writes what
// minigpt/serving/schedule_log.py writes, field for field, plus what the page draws.
// needs: core, prefix_cache, scheduler
(function (root) {
  "use strict";
  const E = root.MiniGPTEngine;
  const MAX_STEPS = 100000;  // a run that has not ended by then is a bug: run_schedule's max_steps default
  if (!E || !E.Scheduler) throw new Error("engine/core.js, prefix_cache.js and scheduler.js must load before engine/engine.js");

  // minigpt.costs.presets.HOST_LINKS: bytes per second each way (tests/test_engine_js.py checks them).
  E.HOST_LINKS = { "PCIe Gen4 x16": 32e9, "PCIe Gen5 x16": 64e9, "NVLink-C2C (GH200)": 450e9 };
  E.SETTINGS = Object.freeze({
    model: "Llama-2-7B", hardware: "A100 80GB", host_link: "PCIe Gen4 x16", s: 2, num_blocks: 64, block_size: 16,
    max_batch: 8, chunk_size: null, prefix_caching: false, cache_aware: false, preemption: "recompute",
    reservation: "paged", watermark: 0, swap_blocks: null, swap_overlap: true, tokens: "replay" });

  class Engine {
    // `executor` (with tokens "minigpt"): run(chunks) -> Map of request -> token, before the chunks advance;
    // release(request) when one ends.
    constructor(settings, executor) {
      const C = root.MiniGPTCosts;
      if (!C || !C.roofline_time || !C.MODELS) throw new Error("the cost scripts (core, flops, memory, traffic, roofline, preemption, presets) must load first");
      for (const k of Object.keys(settings || {})) {
        if (!(k in E.SETTINGS)) throw new RangeError("unknown setting " + k + "; allowed: " + Object.keys(E.SETTINGS).join(", "));
      }
      const o = this.settings = Object.assign({}, E.SETTINGS, settings);
      const model = C.MODELS[o.model], hw = C.HARDWARE[o.hardware], link = E.HOST_LINKS[o.host_link];
      if (!model) throw new RangeError("model must be one of " + Object.keys(C.MODELS).join(", ") + ", got " + o.model);
      if (!hw) throw new RangeError("hardware must be one of " + Object.keys(C.HARDWARE).join(", ") + ", got " + o.hardware);
      if (!link) throw new RangeError("host_link must be one of " + Object.keys(E.HOST_LINKS).join(", ") + ", got " + o.host_link);
      if (o.tokens !== "replay" && o.tokens !== "minigpt") throw new RangeError("tokens must be 'replay' or 'minigpt', got " + o.tokens);
      if (o.tokens === "minigpt" && (o.model !== "MiniGPT" || !executor)) {
        throw new RangeError("tokens 'minigpt' needs the model MiniGPT and its executor (MiniGPTEngine.MiniGPTTokens)");
      }
      this.executor = o.tokens === "minigpt" ? executor : null;
      this.model = model;
      this.hw = hw;
      this.link = link;
      this.S_max = model.S_max || 4096;  // replay's shadow pool
      this.pool = new E.PagedPool(o.num_blocks, o.block_size);
      this.scheduler = new E.Scheduler(this.pool, Object.assign({}, o, { S_max: this.S_max }));
      const d = model.H * model.d_h;
      this.shape = { d: d, H_kv: model.H_kv, d_h: model.d_h, d_ffn: model.d_ffn, ffn_matrices: model.ffn_matrices };
      // A layer's FLOPs for T tokens after S cached ones (Eq. 1.1) are T·m + 4·T·(S + T)·d, m the per-token
      // matrix FLOPs: read once from the twin, so a step costs no BigInt arithmetic (exact below 2^53).
      this.perToken = C.layer_flops(Object.assign({ T: 1, S: 0 }, this.shape)) - 4 * d;
      this.headRow = C.lm_head_flops({ d: d, V: model.V, T: 1, B: 1 });
      this.weightBytes = C.weight_bytes({ N_params: model.N_params, s: o.s });
      this.kvToken = C.kv_bytes_per_token({ L: model.L, H_kv: model.H_kv, d_h: model.d_h, s: o.s });
      this.now = 0;
      this.requests = new Map();  // arrived, in arrival order
      this.arrivals = [];
      this.next = 0;
      this.records = [];
    }
    submit(requests) {
      const all = this.arrivals.concat(requests.map((r, i) => ({ r: r, order: this.arrivals.length + i })));
      this.arrivals = all.sort((a, b) => a.r.arrival_s - b.r.arrival_s || a.order - b.order);
    }
    rejection(r) {
      const Pn = r.prompt.length, D = r.max_new_tokens, S = this.S_max, b = this.pool.blockSize;
      if (Pn > S) return "prompt has P=" + Pn + " tokens but the model has S_max=" + S + " positions";
      if (Pn + D - 1 > S) return "max_new_tokens=" + D + " does not fit: P + max_new_tokens - 1 exceeds S_max=" + S;
      if (Math.max.apply(null, r.prompt) >= this.model.V) return "a token id is out of range (V=" + this.model.V + ")";
      if (E._.ceilDiv(Pn + D - 1, b) > this.pool.allocator.numBlocks) return "needs more KV blocks than the pool has";
      return null;
    }
    events() {
      while (this.next < this.arrivals.length && this.arrivals[this.next].r.arrival_s <= this.now) {
        const r = this.arrivals[this.next++].r, t = E.tracked(r);
        this.requests.set(r.id, t);
        const reason = this.rejection(r);
        if (reason !== null) { t.status = "rejected"; t.reason = reason; t.finished_s = this.now; continue; }
        this.scheduler.waiting.push(t);
      }
    }
    get busy() {
      const s = this.scheduler;
      return this.next < this.arrivals.length || s.waiting.length > 0 || s.running.length > 0 || s.swapped.length > 0;
    }
    // Predicted seconds of one fused step (replay.py's ReplayExecutor.step_time, fused).
    stepTime(chunks) {
      const C = root.MiniGPTCosts, m = this.model;  // fused: the LM head at one row per sequence
      const B = chunks.length;
      const d = this.shape.d;
      let flops = B * this.headRow, kv = 0;
      for (const c of chunks) {
        flops += m.L * (c.T * this.perToken + 4 * c.T * (c.t.computed + c.T) * d);
        kv += c.t.computed * this.kvToken;
      }
      let step = C.roofline_time({ flops: flops, bytes: this.weightBytes + kv, peak_flops: this.hw.peak_flops, bandwidth: this.hw.bandwidth });
      const moved = this.scheduler.swapBlocks;
      if (moved) {
        const swap = moved * this.pool.blockSize * this.kvToken / this.link;
        step = C.step_time_with_swap({ step_time: step, swap_time: swap, overlap: this.settings.swap_overlap });
      }
      return step;
    }
    // Each live request's counters before schedule(), kept on the request (no allocation per step).
    counts() {
      for (const t of this.requests.values()) {
        if (t.status === "finished" || t.status === "rejected") continue;
        t.before0 = t.preemptions; t.before1 = t.swaps; t.before2 = t.cachedTokens; t.before3 = t.recomputeHitTokens;
      }
    }
    // What schedule() just decided, as schedule_log.py's `_state` writes it (refs, free and tree as typed arrays:
    // MiniGPTEngine.plain gives the plain lists).
    record(chunks) {
      const s = this.scheduler, pool = this.pool, events = [], tables = {}, host = {};
      for (const [id, t] of this.requests) {
        if (t.status === "finished" || t.status === "rejected") continue;  // as counts(): nothing changes there
        if (t.preemptions > t.before0) events.push([id, t.swaps > t.before1 ? "swap" : "recompute"]);
        const hit = t.cachedTokens - t.before2 + t.recomputeHitTokens - t.before3;
        if (t.cachedTokens > t.before2 || t.recomputeHitTokens > t.before3) events.push([id, "hit", hit]);
      }
      for (const t of s.running) if (t.seq !== null) tables[t.id] = pool.blockTable(t.seq);
      for (const t of s.swapped) host[t.id] = t.swapped.blocks.slice();
      return {
        start: this.now,
        chunks: chunks.map((c) => [c.t.id, c.T, c.t.computed]),
        tables: tables, waiting: s.waiting.map((t) => t.id), swapped: s.swapped.map((t) => t.id), host: host,
        events: events, refs: Int32Array.from(pool.allocator.refs), free: Int32Array.from(pool.allocator.free),
        tree: s.prefixCache ? s.prefixCache.tree() : new Int32Array(0), preempted: s.preempted, kv_usage: s.kvUsage,
        evictions: s.prefixCache ? s.prefixCache.evictions : 0,
        // for the page: the host pool's use, who sampled and who finished in this step, the hit rate
        host_used: s.swapPool ? s.swapPool.allocator.numUsed : 0, sampled: [], finished: [],
        hit_rate: s.prefixCache ? s.prefixCache.hitRate : 0,
      };
    }
    step() {
      this.events();
      this.counts();
      const s = this.scheduler, chunks = s.schedule();
      const rec = this.record(chunks);
      this.records.push(rec);
      if (!chunks.length) {
        if ((s.waiting.length || s.swapped.length) && !s.running.length) {
          throw new Error("the scheduler admitted nothing into an empty batch: a request that fits alone was refused (a bug)");
        }
        if (this.next < this.arrivals.length) this.now = Math.max(this.now, this.arrivals[this.next].r.arrival_s);
        rec.end = this.now;
        return rec;
      }
      for (const c of chunks) if (c.t.admitted_s === null) c.t.admitted_s = this.now;
      const predicted = this.stepTime(chunks);
      const samples = chunks.map((c) => c.T === E.pending(c.t));
      const tokens = this.executor ? this.executor.run(chunks) : null;  // from the chunks' tokens, before they advance
      for (const c of chunks) this.pool.advance(c.t.seq, c.T);
      for (const c of chunks) c.t.computed += c.T;
      s.afterStep(chunks);
      this.now += predicted;
      chunks.forEach((c, i) => {
        if (!samples[i]) return;
        const t = c.t;
        t.tokens.push(tokens ? tokens.get(t) : 0);
        t.generated += 1;
        t.token_s.push(this.now);
        rec.sampled.push(t.id);
        if (t.generated === t.request.max_new_tokens) {
          s.release(t);
          if (this.executor) this.executor.release(t);
          t.status = "finished";
          t.reason = "max_new_tokens";
          t.finished_s = this.now;
          rec.finished.push(t.id);
        }
      });
      rec.end = this.now;
      return rec;
    }
    // Serve until every request has ended (or `maxSteps` steps); returns the records.
    run(maxSteps) {
      const limit = maxSteps === undefined ? MAX_STEPS : maxSteps;
      while (this.busy && this.records.length < limit) this.step();
      return this.records;
    }
  }

  // A record with plain lists, as schedule_log.py writes it: the tree as [block, parent, last use] triples.
  function plain(rec) {
    const tree = [];
    for (let i = 0; i < rec.tree.length; i += 3) tree.push([rec.tree[i], rec.tree[i + 1], rec.tree[i + 2]]);
    return Object.assign({}, rec, { refs: Array.from(rec.refs), free: Array.from(rec.free), tree: tree });
  }

  // A run of `trace` with `settings`, as minigpt.serving.schedule_log.run_schedule returns it.
  function runSchedule(trace, settings, maxSteps, executor) {
    const e = new Engine(settings, executor);
    e.submit(trace);
    const limit = maxSteps === undefined ? MAX_STEPS : maxSteps;
    const steps = e.run(limit).map(plain);
    if (e.busy) throw new Error("the run did not end within max_steps=" + limit + " steps");  // as Python
    const requests = {};
    for (const [id, t] of e.requests) {
      requests[id] = { status: t.status, reason: t.reason, token_s: t.token_s, admitted_s: t.admitted_s,
        preemptions: t.preemptions, swaps: t.swaps, cached_tokens: t.cachedTokens, tokens: t.tokens };
    }
    const done = Array.from(e.requests.values()).filter((t) => t.status === "finished" && t.token_s.length);
    return { steps: steps, requests: requests, summary: done.length ? E.latencySummary(done) : {} };
  }

  Object.assign(E, { Engine, plain, runSchedule });
})(typeof globalThis !== "undefined" ? globalThis : this);
