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

  // The key chain of the full blocks of `tokens`, extending `start` (keys already computed).
  function blockHashes(tokens, blockSize, start) {
    const keys = start ? start.slice() : [];
    for (let i = keys.length; i < Math.floor(tokens.length / blockSize); i++) {
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
      this.nodes.set(key.digest, { key: key, block: block, used: this.clock, children: new Set() });
      if (parent !== undefined) parent.children.add(key.digest);
      return true;
    }
    held(node) { return this.pool.allocator.refs[node.block] > 1; }
    pinned() {
      const pinned = new Set();
      for (let [digest, node] of this.nodes) {
        if (!this.held(node)) continue;
        while (!pinned.has(digest)) {
          pinned.add(digest);
          if (node.key.parent === E.ROOT) break;
          digest = node.key.parent;
          node = this.nodes.get(digest);
        }
      }
      return pinned;
    }
    get evictable() { return this.nodes.size - this.pinned().size; }
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
    }
    // The tree as [block, parent block (-1 at a root), last use], sorted by block (the Python log's `tree`).
    tree() {
      const out = [];
      for (const node of this.nodes.values()) {
        const parent = this.nodes.get(node.key.parent);
        out.push([node.block, parent === undefined ? -1 : parent.block, node.used]);
      }
      return out.sort((a, b) => a[0] - b[0]);
    }
  }

  // Cache-aware order of the waiting queue (SGLang's lpm): longest cached prefix first, ties first come first.
  function longestPrefixFirst(keys, cache) {
    const cached = keys.map((k) => cache.cachedBlocks(k));
    return keys.map((_, i) => i).sort((a, b) => cached[b] - cached[a]);
  }

  Object.assign(E, { PrefixCache, blockHashes, longestPrefixFirst });
})(typeof globalThis !== "undefined" ? globalThis : this);
