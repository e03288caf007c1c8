// MiniGPTEngine, core: the object the browser twin of minigpt/serving/ is built on, and the block manager
// it schedules over: the block allocator (a free stack, the lowest id out first, reference counts), the
// paged pool's block tables (minigpt/runtime/paged_cache.py: growth all or nothing, copy-on-write of a
// shared last block), the host pool a swapped sequence's blocks go to (minigpt/runtime/swap.py); a
// seeded trace of arrivals; the prefix cache's block hash. Every decision equals Python's: the rooms
// prefix_cache.js, scheduler.js and engine.js follow, and tests/test_engine_js.py checks each step's
// schedule against minigpt.serving.schedule_log on seeded traces, in node.
// The hash is not SHA-256: a block key here is a fast non-cryptographic 53-bit hash (cyrb53's mixing)
// of the parent key and the block's token ids; a hit still compares the parent and the tokens, as
// Python's does, so a collision finds no block rather than another prefix's.
// needs: (and ../minigpt_forward.js first: its seeded mulberry32, rngFromSeed, draws the traces)
(function (root) {
  "use strict";
  if (root.MiniGPTEngine) return;
  const E = {};

  function positiveInt(name, value) {
    if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
      throw new RangeError(name + " must be a positive integer, got " + value);
    }
    return value;
  }
  const ceilDiv = (a, b) => Math.floor((a + b - 1) / b);

  // ---- The block allocator (BlockAllocator) ----
  class Allocator {
    constructor(numBlocks) {
      this.numBlocks = positiveInt("num_blocks", numBlocks);
      this.free = [];
      for (let i = numBlocks - 1; i >= 0; i--) this.free.push(i);  // a stack: the lowest id comes out first
      this.refs = new Array(numBlocks).fill(0);
      this.version = 0;  // bumped by every change of a reference count (what the prefix cache memoizes on)
    }
    get numFree() { return this.free.length; }
    get numUsed() { return this.numBlocks - this.free.length; }
    allocate() {
      if (!this.free.length) throw new RangeError("the KV pool is full: all " + this.numBlocks + " blocks are in use");
      const block = this.free.pop();
      this.refs[block] = 1;
      this.version++;
      return block;
    }
    incref(block) {
      if (this.refs[block] < 1) throw new RangeError("block " + block + " is free; only a used block can be shared");
      this.refs[block] += 1;
      this.version++;
    }
    release(block) {
      if (this.refs[block] < 1) throw new RangeError("block " + block + " is already free");
      this.refs[block] -= 1;
      this.version++;
      if (this.refs[block] === 0) this.free.push(block);
    }
  }

  // ---- The paged pool's sequences (PagedKVCache): block tables and lengths, no K/V ----
  class PagedPool {
    constructor(numBlocks, blockSize) {
      this.blockSize = positiveInt("block_size", blockSize);
      this.allocator = new Allocator(numBlocks);
      this.tables = new Map();
      this.lengths = new Map();
      this.nextId = 0;
    }
    addSequence() {
      const seq = this.nextId++;
      this.tables.set(seq, []);
      this.lengths.set(seq, 0);
      return seq;
    }
    addSequenceFrom(blocks, S) {
      if (blocks.length !== ceilDiv(S, this.blockSize)) throw new RangeError(S + " tokens do not fill " + blocks.length + " blocks");
      const seq = this.addSequence();
      for (const b of blocks) this.allocator.incref(b);
      this.tables.set(seq, blocks.slice());
      this.lengths.set(seq, S);
      return seq;
    }
    freeSequence(seq) {
      for (const b of this.tables.get(seq)) this.allocator.release(b);
      this.tables.delete(seq);
      this.lengths.delete(seq);
    }
    length(seq) { return this.lengths.get(seq); }
    blockTable(seq) { return this.tables.get(seq).slice(); }
    blocksNeeded(seq, T) {
      const S = this.lengths.get(seq), table = this.tables.get(seq), b = this.blockSize;
      const grow = ceilDiv(S + T, b) - table.length;
      const copy = S % b && this.allocator.refs[table[table.length - 1]] > 1 ? 1 : 0;
      return grow + copy;
    }
    // Room for T more tokens of one sequence, all or nothing: new blocks, copy-on-write of a shared last block.
    reserve(seq, T) {
      const needed = this.blocksNeeded(seq, T);
      if (needed > this.allocator.numFree) {
        throw new RangeError(T + " more tokens need " + needed + " free KV blocks but only " + this.allocator.numFree + " are free");
      }
      const S = this.lengths.get(seq), table = this.tables.get(seq), b = this.blockSize;
      if (S % b && this.allocator.refs[table[table.length - 1]] > 1) {
        const old = table[table.length - 1], fresh = this.allocator.allocate();
        this.allocator.release(old);
        table[table.length - 1] = fresh;
      }
      while (table.length * b < S + T) table.push(this.allocator.allocate());
    }
    advance(seq, T) { this.lengths.set(seq, this.lengths.get(seq) + T); }
  }

  // ---- The host pool (HostSwapPool): a sequence's written blocks out, and back into free blocks ----
  class SwapPool {
    constructor(pool, numBlocks) {
      this.pool = pool;
      this.allocator = new Allocator(numBlocks);
      this.blocksOut = 0;
      this.blocksIn = 0;
    }
    blocksOf(seq) { return ceilDiv(this.pool.length(seq), this.pool.blockSize); }
    canSwapOut(seq) { return this.blocksOf(seq) <= this.allocator.numFree; }
    swapOut(seq) {
      const n = this.blocksOf(seq), S = this.pool.length(seq);
      const host = [];
      for (let i = 0; i < n; i++) host.push(this.allocator.allocate());
      this.pool.freeSequence(seq);
      this.blocksOut += n;
      return { blocks: host, S: S };
    }
    swapIn(swapped) {
      const n = swapped.blocks.length;
      const seq = this.pool.addSequence();
      this.pool.reserve(seq, swapped.S);
      this.pool.advance(seq, swapped.S);
      this.discard(swapped);
      this.blocksIn += n;
      return seq;
    }
    discard(swapped) {
      for (const b of swapped.blocks) this.allocator.release(b);
      swapped.blocks = [];
    }
  }

  // ---- The block key: a 53-bit hash of (parent key, block size, token ids) (cyrb53's mixing) ----
  const ROOT = -1;
  function blockHash(parent, tokens) {
    let h1 = 0xdeadbeef ^ tokens.length, h2 = 0x41c6ce57 ^ tokens.length;
    const p = parent < 0 ? [0x9e3779b9, 0x7f4a7c15] : [parent % 4294967296, Math.floor(parent / 4294967296)];
    const mix = (x) => {
      h1 = Math.imul(h1 ^ x, 2654435761);
      h2 = Math.imul(h2 ^ x, 1597334677);
    };
    mix(p[0]); mix(p[1]);
    for (let i = 0; i < tokens.length; i++) mix(tokens[i] | 0);
    h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
    h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
    return 4294967296 * (2097151 & h2) + (h1 >>> 0);
  }

  // ---- A seeded trace: Poisson arrivals, uniform prompt and output lengths, shared system prompts; a share
  // `repeats` of the requests repeats an earlier request's prompt (its whole prompt cached: copy-on-write) ----
  // (the draws come from MiniGPT live's seeded generator, MiniGPTForward.rngFromSeed: load minigpt_forward.js first)
  // `words(u, k, system)`, if given, draws k token ids (a system prompt's: at most k) with the trace's generator u
  // (engine/minigpt_tokens.js: real text); by default each id is uniform below V.
  function trace(o, words) {
    const n = positiveInt("n", o.n), seed = o.seed === undefined ? 0 : o.seed;
    if (!(o.rate > 0)) throw new RangeError("rate must be > 0 (requests per second), got " + o.rate);
    for (const k of ["P", "D"]) {
      const r = o[k];
      if (!Array.isArray(r) || !(r[0] >= 1 && r[0] <= r[1])) throw new RangeError(k + " must be a range [lo, hi] with 1 <= lo <= hi");
    }
    const u = root.MiniGPTForward.rngFromSeed(seed), V = Math.min(o.V || 1000, 1000);
    const int = (lo, hi) => lo + Math.floor(u() * (hi - lo + 1));
    const tokens = words ? (k, system) => words(u, k, system) : (k) => Array.from({ length: k }, () => Math.floor(u() * V));
    const systems = Array.from({ length: o.systems || 0 }, () => tokens(o.system_len || 0, true));
    const out = [];
    let t = 0;
    for (let i = 0; i < n; i++) {
      t += -Math.log(1 - u()) / o.rate;
      const head = systems.length ? systems[Math.floor(u() * systems.length)] : [];
      let prompt = head.concat(tokens(int(o.P[0], o.P[1])));
      if (o.repeats > 0 && out.length && u() < o.repeats) prompt = out[Math.floor(u() * out.length)].prompt.slice();  // asked again
      out.push({ id: "r" + i, prompt: prompt, max_new_tokens: int(o.D[0], o.D[1]), arrival_s: t });
    }
    return out;
  }

  E._ = Object.freeze({ positiveInt, ceilDiv });
  Object.assign(E, { Allocator, PagedPool, SwapPool, ROOT, blockHash, trace });
  root.MiniGPTEngine = E;
  if (typeof module !== "undefined" && module.exports) module.exports = E;
})(typeof globalThis !== "undefined" ? globalThis : this);
