// MiniGPTEngine, prefix cache: the twin of minigpt/serving/prefix_cache.py. Full blocks found again by a
// key chain (h_i from h_{i-1} and block i's tokens: core.js's 53-bit hash, not SHA-256), one allocator
// reference per cached block, the cached keys a tree; eviction frees leaves (no cached child, held by no
// sequence), least recently used first, a parent joining the candidates when its last child goes.
// needs: core
(function (root) {
  "use strict";
  const E = root.MiniGPTEngine;
  if (!E || !E._) throw new Error("engine/core.js must load before engine/prefix_cache.js");

  function sameKey(a, b) {
    if (a.digest !== b.digest || a.parent !== b.parent || a.tokens.length !== b.tokens.length) return false;
    for (let i = 0; i < a.tokens.length; i++) if (a.tokens[i] !== b.tokens[i]) return false;
    return true;
  }

  // The key chain of the full blocks of the first `n` tokens (all by default), extending `start` in place (the
  // keys already computed; Python builds a new list, and its caller drops the old one).
  function blockHashes(tokens, blockSize, start, n) {
    const keys = start || [];
    const full = Math.floor((n === undefined ? tokens.length : n) / blockSize);
    for (let i = keys.length; i < full; i++) {
      const parent = keys.length ? keys[keys.length - 1].digest : E.ROOT;
      const block = tokens.slice(i * blockSize, (i + 1) * blockSize);
      keys.push({ digest: E.blockHash(parent, block), parent: parent, tokens: block });
    }
    return keys;
  }

  class PrefixCache {
    constructor(pool) {
      this.pool = pool;
      this.nodes = new Map();  // digest -> {key, block, used, children: Set of digests}
      this.clock = 0;
      this.hits = 0;
      this.queries = 0;
      this.evictions = 0;
      this.stamp = 0;
    }
    get size() { return this.nodes.size; }
    prefix(keys) {
      const found = [];
      for (const key of keys) {
        const node = this.nodes.get(key.digest);
        if (node === undefined || !sameKey(node.key, key)) break;  // a miss, or a collision
        found.push(node);
      }
      return found;
    }
    cachedBlocks(keys) { return this.prefix(keys).length; }
    match(keys) {
      const found = this.prefix(keys);
      this.clock += 1;
      for (const node of found) node.used = this.clock;
      return found.map((node) => node.block);
    }
    record(lookedUp, found) {
      this.queries += lookedUp;
      this.hits += found;
    }
    get hitRate() { return this.queries ? this.hits / this.queries : 0; }
    insert(key, block) {
      if (this.nodes.has(key.digest)) return false;
      const parent = this.nodes.get(key.parent);
      if (key.parent !== E.ROOT && parent === undefined) return false;
      this.pool.allocator.incref(block);
      this.clock += 1;
      this.nodes.set(key.digest, { key: key, block: block, used: this.clock, children: new Set(),
        up: parent === undefined ? null : parent, mark: 0 });  // up: the parent node (cached while this one is)
      if (parent !== undefined) parent.children.add(key.digest);
      return true;
    }
    held(node) { return this.pool.allocator.refs[node.block] > 1; }
    // How many cached blocks eviction cannot reach: those a sequence holds, and every block above one.
    pinnedCount() {
      const stamp = ++this.stamp;
      let n = 0;
      for (const node of this.nodes.values()) {
        if (!this.held(node)) continue;
        for (let x = node; x !== null && x.mark !== stamp; x = x.up) {  // climb to a root or a marked block
          x.mark = stamp;
          n++;
        }
      }
      return n;
    }
    // Memoized on the allocator's version: the cached set and every `held` change only with a reference count.
    get evictable() {
      const v = this.pool.allocator.version;
      if (this.evictableAt !== v) {
        this.evictableAt = v;
        this.evictableNow = this.nodes.size - this.pinnedCount();
      }
      return this.evictableNow;
    }
    canEvict(n) { return n <= 0 || this.evictable >= n; }
    freeLeaf(node) { return node.children.size === 0 && !this.held(node); }
    // Release up to n evictable blocks, leaves first, least recently used first; returns how many.
    evict(n) {
      const heap = [];
      for (const [digest, node] of this.nodes) if (this.freeLeaf(node)) heap.push([node.used, digest]);
      let freed = 0;
      while (heap.length && freed < n) {
        let k = 0;
        for (let i = 1; i < heap.length; i++) if (heap[i][0] < heap[k][0]) k = i;  // the least recently used leaf
        const digest = heap.splice(k, 1)[0][1];
        const node = this.nodes.get(digest);
        this.nodes.delete(digest);
        this.pool.allocator.release(node.block);
        freed += 1;
        const parent = this.nodes.get(node.key.parent);
        if (parent !== undefined) {
          parent.children.delete(digest);
          if (this.freeLeaf(parent)) heap.push([parent.used, node.key.parent]);
        }
      }
      this.evictions += freed;
      return freed;
    }
    clear() {
      for (const node of this.nodes.values()) this.pool.allocator.release(node.block);
      this.nodes.clear();
      this.treeAt = null;
    }
    // The tree as flat triples (block, parent block or -1 at a root, last use), by block: an Int32Array shared
    // by the records until the cache changes (schedule_log.py's `tree`, unflattened by MiniGPTEngine.plain).
    tree() {
      const at = this.clock + "/" + this.evictions;  // nodes change by insert or evict, last uses by match
      if (this.treeAt === at) return this.treeNow;
      const byBlock = new Array(this.pool.allocator.numBlocks);
      for (const node of this.nodes.values()) byBlock[node.block] = node;
      const out = new Int32Array(3 * this.nodes.size);
      let i = 0;
      for (const node of byBlock) {
        if (node === undefined) continue;
        out[i++] = node.block;
        out[i++] = node.up === null ? -1 : node.up.block;
        out[i++] = node.used;
      }
      this.treeAt = at;
      return (this.treeNow = out);
    }
  }

  // Cache-aware order of the waiting queue (SGLang's lpm): longest cached prefix first, ties first come first.
  function longestPrefixFirst(keys, cache) {
    const cached = keys.map((k) => cache.cachedBlocks(k));
    return keys.map((_, i) => i).sort((a, b) => cached[b] - cached[a]);
  }

  Object.assign(E, { PrefixCache, blockHashes, longestPrefixFirst });
})(typeof globalThis !== "undefined" ? globalThis : this);
