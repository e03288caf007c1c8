// MiniGPTEngine, scheduler: the twin of minigpt/serving/scheduler.py's continuous policy with its three
// parts (scheduler_memory, scheduler_preemption, scheduler_admission). Each step: decodes first (one
// token each), then unfinished prompts, oldest first, within the token budget (chunked prefill); then
// swap-ins (only in a step that preempted nobody, or whose preemptions emptied the batch), then new
// admissions (FCFS, or the longest cached prefix first) while nobody is swapped out. A chunk's blocks are
// reserved all or nothing; when none is free the youngest running request is preempted, by swap (its
// written blocks to the host pool) or by recompute (freed, requeued first). New prefills and swap-ins
// keep the watermark free while anything runs. Reservation "max_tokens" or "S_max" gives a sequence
// every block it could need on admission. The static policy is not twinned.
// needs: core, prefix_cache
(function (root) {
  "use strict";
  const E = root.MiniGPTEngine;
  if (!E || !E._) throw new Error("engine/core.js must load before engine/scheduler.js");

  // What the engine keeps about a request (Tracked): `tokens` are its generated tokens (all 0 in replay, MiniGPT's
  // own with an executor: engine/minigpt_tokens.js), `generated` their count.
  function tracked(request) {
    return { request: request, id: request.id, status: "waiting", reason: "", generated: 0, tokens: [], seq: null,
      computed: 0, cachedTokens: 0, recomputeHitTokens: 0, preemptions: 0, swaps: 0, swapped: null,
      hashes: [], registered: 0, context: null, token_s: [], admitted_s: null, finished_s: null };
  }
  const P = (t) => t.request.prompt.length;
  const pending = (t) => P(t) + t.generated - t.computed;
  const decoding = (t) => t.generated > 0 && pending(t) === 1;
  function context(t) {  // prompt then generated tokens, kept on the request (callers only read it)
    if (!t.context) t.context = t.request.prompt.slice();
    while (t.context.length < P(t) + t.generated) t.context.push(t.tokens[t.context.length - P(t)]);
    return t.context;
  }

  class Scheduler {
    constructor(pool, o) {
      this.pool = pool;
      this.maxBatch = E._.positiveInt("max_batch", o.max_batch);
      this.chunkSize = o.chunk_size == null ? null : E._.positiveInt("chunk_size", o.chunk_size);
      if (o.preemption !== "recompute" && o.preemption !== "swap") throw new RangeError("preemption must be 'recompute' or 'swap', got " + o.preemption);
      if (!["paged", "max_tokens", "S_max"].includes(o.reservation)) throw new RangeError("reservation must be 'paged', 'max_tokens' or 'S_max', got " + o.reservation);
      if (!(o.watermark >= 0 && o.watermark < 1)) throw new RangeError("watermark must be a share of the pool in [0, 1), got " + o.watermark);
      this.preemption = o.preemption;
      this.reservation = o.reservation;
      this.S_max = o.S_max;
      this.watermarkBlocks = Math.floor(o.watermark * pool.allocator.numBlocks);
      this.swapPool = o.preemption === "swap" ? new E.SwapPool(pool, o.swap_blocks || pool.allocator.numBlocks) : null;
      this.prefixCache = o.prefix_caching ? new E.PrefixCache(pool) : null;
      if (o.cache_aware && !this.prefixCache) throw new RangeError("cache_aware orders the queue by cached prefix: it needs prefix_caching");
      this.cacheAware = !!o.cache_aware;
      this.waiting = [];
      this.running = [];
      this.swapped = [];
      this.preempted = 0;
      this.swapBlocks = 0;  // blocks the swaps of the last schedule() moved, out and in
    }

    // ---- memory (scheduler_memory) ----
    get freeBlocks() { return this.pool.allocator.numFree + (this.prefixCache ? this.prefixCache.evictable : 0); }
    get kvUsage() { const n = this.pool.allocator.numBlocks; return (n - this.freeBlocks) / n; }
    fits(needed) {
      const short = needed - this.pool.allocator.numFree;
      return short <= 0 || (this.prefixCache !== null && this.prefixCache.canEvict(short));
    }
    fitsAdmission(needed) { return this.fits(needed + (this.running.length ? this.watermarkBlocks : 0)); }
    makeRoom(needed) {
      const short = needed - this.pool.allocator.numFree;
      if (short > 0 && this.prefixCache) this.prefixCache.evict(short);
    }
    reservedTokens(t) {
      if (this.reservation === "S_max") return this.S_max;
      if (this.reservation === "max_tokens") return P(t) + t.request.max_new_tokens - 1;
      return 0;
    }
    reserveAhead(t) {
      const ahead = this.reservedTokens(t) - this.pool.length(t.seq);
      if (ahead > 0) {
        this.makeRoom(this.pool.blocksNeeded(t.seq, ahead));
        this.pool.reserve(t.seq, ahead);
      }
    }

    // ---- preemption (scheduler_preemption) ----
    reserve(t, T, chunks) {
      for (;;) {
        const needed = this.pool.blocksNeeded(t.seq, T);
        if (this.fits(needed)) {
          this.makeRoom(needed);
          this.pool.reserve(t.seq, T);
          return true;
        }
        const victim = this.running[this.running.length - 1];
        this.preempt(victim);
        for (let i = chunks.length - 1; i >= 0; i--) if (chunks[i].t === victim) chunks.splice(i, 1);
        if (victim === t) return false;
      }
    }
    preempt(t) {
      t.preemptions += 1;
      this.preempted += 1;
      const sp = this.swapPool;
      if (sp && t.computed > 0 && t.computed === this.pool.length(t.seq) && sp.canSwapOut(t.seq)) {
        const before = sp.blocksOut;
        t.swapped = sp.swapOut(t.seq);
        this.swapBlocks += sp.blocksOut - before;
        t.seq = null;
        this.running.splice(this.running.indexOf(t), 1);
        t.status = "swapped";
        t.swaps += 1;
        this.swapped.unshift(t);
        return;
      }
      this.release(t);
      t.status = "waiting";
      t.computed = 0;
      this.waiting.unshift(t);
    }
    swapIn(t) {
      const sp = this.swapPool, before = sp.blocksIn;
      this.makeRoom(t.swapped.blocks.length);
      t.seq = sp.swapIn(t.swapped);
      this.swapBlocks += sp.blocksIn - before;
      t.swapped = null;
      t.registered = Math.floor(t.computed / this.pool.blockSize);
      this.reserveAhead(t);
      this.swapped.splice(this.swapped.indexOf(t), 1);
      t.status = "running";
      this.running.push(t);
    }
    release(t) {
      if (t.seq !== null) { this.pool.freeSequence(t.seq); t.seq = null; }
      if (t.swapped !== null) { this.swapPool.discard(t.swapped); t.swapped = null; }
      let i = this.running.indexOf(t);
      if (i >= 0) this.running.splice(i, 1);
      i = this.swapped.indexOf(t);
      if (i >= 0) this.swapped.splice(i, 1);
    }

    // ---- admission (scheduler_admission) ----
    open(t, wholeBlocks) {
      const b = this.pool.blockSize;
      if (!this.prefixCache) { t.seq = this.pool.addSequence(); t.computed = 0; return; }
      const ctx = context(t);
      t.hashes = E.blockHashes(ctx, b, t.hashes);
      const blocks = this.prefixCache.match(t.hashes);
      let S = Math.min(blocks.length * b, ctx.length - 1);
      if (wholeBlocks) S = Math.floor(S / b) * b;
      t.seq = this.pool.addSequenceFrom(blocks.slice(0, E._.ceilDiv(S, b)), S);
      t.computed = S;
      t.registered = Math.min(blocks.length, Math.floor(S / b));
    }
    admit(t) {
      for (const whole of [false, true]) {
        this.open(t, whole);
        const tokens = Math.max(pending(t), this.reservedTokens(t) - t.computed);
        if (this.fitsAdmission(this.pool.blocksNeeded(t.seq, tokens))) break;
        this.pool.freeSequence(t.seq);
        const partial = t.computed % this.pool.blockSize;
        t.seq = null;
        t.computed = 0;
        if (!partial) return false;
      }
      this.reserveAhead(t);
      this.waiting.splice(this.waiting.indexOf(t), 1);
      if (this.prefixCache) {
        if (!t.generated) {
          this.prefixCache.record(P(t), t.computed);
          t.cachedTokens += t.computed;
        } else t.recomputeHitTokens += t.computed;
      }
      t.status = "running";
      this.running.push(t);
      return true;
    }
    orderWaiting() {
      const b = this.pool.blockSize;
      for (const t of this.waiting) t.hashes = E.blockHashes(context(t), b, t.hashes);
      const order = E.longestPrefixFirst(this.waiting.map((t) => t.hashes), this.prefixCache);
      this.waiting = order.map((i) => this.waiting[i]);
    }

    // ---- one step ----
    schedule() {
      this.swapBlocks = 0;
      if (this.cacheAware) this.orderWaiting();
      const preempted = this.preempted;
      let budget = this.chunkSize !== null ? this.chunkSize : Infinity;
      const chunks = [];
      const add = (t, T) => { if (this.reserve(t, T, chunks)) { chunks.push({ t: t, T: T }); budget -= T; } };
      for (const t of this.running.slice()) if (decoding(t) && this.running.includes(t)) add(t, 1);
      for (const t of this.running.slice()) {
        if (!decoding(t) && this.running.includes(t) && budget > 0) add(t, Math.min(pending(t), budget));
      }
      while (this.swapped.length && (this.preempted === preempted || !this.running.length)
             && this.running.length < this.maxBatch && budget > 0
             && this.fitsAdmission(this.swapped[0].swapped.blocks.length)) {
        const t = this.swapped[0];
        this.swapIn(t);
        add(t, Math.min(pending(t), budget));
      }
      while (!this.swapped.length && this.waiting.length && this.running.length < this.maxBatch && budget > 0) {
        const t = this.waiting[0];
        if (!this.admit(t)) break;
        add(t, Math.min(pending(t), budget));
      }
      return chunks;
    }

    // Cache the full blocks the step completed (prefix caching).
    afterStep(chunks) {
      if (!this.prefixCache) return;
      const b = this.pool.blockSize;
      for (const c of chunks) {
        const t = c.t;
        if (t.seq === null) continue;
        const full = Math.floor(t.computed / b);
        if (full <= t.registered) continue;
        t.hashes = E.blockHashes(context(t), b, t.hashes, full * b);
        const table = this.pool.tables.get(t.seq);
        for (let i = t.registered; i < full; i++) this.prefixCache.insert(t.hashes[i], table[i]);
        t.registered = full;
      }
    }
  }

  Object.assign(E, { Scheduler, tracked, pending, decoding, context });
})(typeof globalThis !== "undefined" ? globalThis : this);
