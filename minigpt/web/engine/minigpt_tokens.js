// MiniGPTEngine, MiniGPT's own tokens: what the page's mode "MiniGPT's own tokens" adds to the twin. A trace whose
// prompts are real text (sentences of the book's grammar corpus, shipped in the weights asset's manifest by
// minigpt.book.web_export; the shared system prompts are sentences too, so prefix hits still happen), and an
// executor that computes every sampled token with MiniGPT live's model (minigpt_forward.js), greedy, as
// minigpt.serving.schedule_log does with tokens "minigpt" (tests/test_engine_js.py checks tokens and schedule).
// needs: core, scheduler (and ../minigpt_forward.js, a model loaded from MiniGPTWeights)
(function (root) {
  "use strict";
  const E = root.MiniGPTEngine;
  if (!E || !E.Scheduler) throw new Error("engine/core.js and scheduler.js must load before engine/minigpt_tokens.js");

  // The bank of corpus sentences as token ids (the manifest's `sentences`, words of MiniGPT's vocabulary).
  function sentenceIds(model) {
    const sentences = model.manifest.sentences;
    if (!Array.isArray(sentences) || !sentences.length) {
      throw new RangeError("the weights asset has no sentences: rebuild it with minigpt.book.web_export");
    }
    return sentences.map((s) => model.tokenizer.encode(s));
  }

  // E.trace's draws with prompts of real text: k words are sentences drawn from the bank, one after the other, cut
  // at k; a request's own words may end inside a sentence (the model continues it), a system prompt ends at its
  // last full stop within the k words (so it is at most k words; the whole cut when no sentence ends there).
  function textTrace(o, model) {
    const bank = sentenceIds(model), stop = model.tokenizer.ids.get(".");
    return E.trace(o, (u, k, system) => {
      const out = [];
      while (out.length < k) out.push(...bank[Math.floor(u() * bank.length)]);
      const end = system ? out.lastIndexOf(stop, k - 1) + 1 : 0;
      return out.slice(0, end || k);
    });
  }

  // The executor: each request keeps its own KV cache (B = 1, MiniGPTForward.KVCache). A step's chunk of T tokens
  // after S computed ones feeds the cache the context tokens it lacks up to S + T; a chunk that ends the context
  // samples the argmax of the last position's logits. Why this is the engine's token: greedy decoding of one
  // sequence is a function of its tokens alone, since MiniGPT's batch rows are independent (attention reads
  // only the row's own keys, every other layer acts on each token alone), so batching changes no token; a
  // request preempted by recompute computes the same K/V from the same tokens, so its rows are kept here, not
  // computed twice; a swapped one keeps its K/V; a prefix hit's blocks hold the K/V of the same tokens at the
  // same positions, which this request's cache computes for itself. What remains are float roundings, whose
  // effect on the argmax tests/test_engine_js.py bounds (the margin between the top two logits).
  class MiniGPTTokens {
    constructor(model) {
      this.F = root.MiniGPTForward;
      this.model = model;
      this.caches = new Map();
      this.fed = 0;  // tokens fed to the model so far (the page reports the work)
    }
    run(chunks) {
      const out = new Map();
      for (const c of chunks) {
        const t = c.t, ctx = E.context(t), end = t.computed + c.T;
        let cache = this.caches.get(t);
        if (!cache) this.caches.set(t, (cache = new this.F.KVCache(this.model.config)));
        if (end <= cache.S) continue;  // recomputed rows this cache already holds: the same tokens, the same K/V
        this.fed += end - cache.S;
        const logits = this.F.forward(this.model, ctx.slice(cache.S, end), cache, true);
        if (end === ctx.length) out.set(t, this.F.argmax(logits));
      }
      return out;
    }
    release(t) { this.caches.delete(t); }
  }

  Object.assign(E, { sentenceIds, textTrace, MiniGPTTokens });
})(typeof globalThis !== "undefined" ? globalThis : this);
