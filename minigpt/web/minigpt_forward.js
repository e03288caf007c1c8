// MiniGPTForward: MiniGPT's forward pass, KV cache, word tokenizer and sampler in plain JavaScript,
// for the browser (no kernel) and node (tests/test_minigpt_js.py checks it against PyTorch).
// It mirrors minigpt/model.py layer by layer: token + learned position embeddings, L pre-LayerNorm
// blocks (causal attention with H query heads sharing H_kv key/value heads, exact-erf GELU MLP),
// a final LayerNorm and the LM head tied to the token embedding. The cache has the layout of
// minigpt/kv_cache.py for B = 1: keys and values [L, H_kv, S_max, d_h] in float32.
// Values are stored in Float32Array (as PyTorch stores them); sums run in float64.
(function (root) {
  "use strict";

  const LN_EPS = 1e-5;  // torch.nn.LayerNorm's default

  // ---- erf and GELU (torch.nn.functional.gelu's default, approximate="none": x·Φ(x)) ----
  function erf(x) {
    const a = Math.abs(x);
    let r;
    if (a < 2.5) {  // Maclaurin series: 2/√π · Σ (−1)^n x^(2n+1) / (n!(2n+1)), below 1e-15 here
      const x2 = a * a;
      let term = a, sum = a;
      for (let n = 1; n < 60; n++) {
        term *= -x2 / n;
        const add = term / (2 * n + 1);
        sum += add;
        if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
      }
      r = (2 / Math.sqrt(Math.PI)) * sum;
    } else if (a < 6) {  // erfc by its continued fraction (modified Lentz), then 1 − erfc
      const tiny = 1e-300;
      let f = a, C = a, D = 0;
      for (let n = 1; n < 300; n++) {
        const an = n / 2;
        D = a + an * D; D = D === 0 ? tiny : 1 / D;
        C = a + an / C; if (C === 0) C = tiny;
        const delta = C * D;
        f *= delta;
        if (Math.abs(delta - 1) < 1e-16) break;
      }
      r = 1 - Math.exp(-a * a) / (Math.sqrt(Math.PI) * f);
    } else {
      r = 1;  // erfc(6) < 3e-17
    }
    return x < 0 ? -r : r;
  }

  function gelu(x) {
    return 0.5 * x * (1 + erf(x / Math.SQRT2));
  }

  // ---- Errors with a name the page can show as it is ----
  function fail(message) {
    const e = new RangeError(message);
    e.name = "MiniGPTError";
    return e;
  }

  function isInt(v) {
    return typeof v === "number" && Number.isInteger(v);
  }

  // ---- The model: views into one Float32Array, named like model.state_dict() ----
  function fromBase64(text) {
    if (typeof Buffer !== "undefined" && typeof window === "undefined") {
      const b = Buffer.from(text, "base64");
      return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
    }
    const bin = atob(text);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return bytes.buffer;
  }

  function loadModel(asset) {
    if (!asset || !asset.manifest || typeof asset.data !== "string") {
      throw fail("the weights asset is malformed: expected {manifest, data} from minigpt.book.web_export");
    }
    const m = asset.manifest;
    if (m.format !== "minigpt-web/1") throw fail("weights asset has format " + m.format + "; expected minigpt-web/1");
    const buffer = fromBase64(asset.data);
    if (buffer.byteLength !== 4 * m.N_params) {
      throw fail("weights asset holds " + buffer.byteLength + " bytes but the manifest says N_params=" +
        m.N_params + " float32 values (" + 4 * m.N_params + " bytes)");
    }
    const all = new Float32Array(buffer);
    const views = {};
    for (const t of m.tensors) {
      const size = t.shape.reduce((a, b) => a * b, 1);
      views[t.name] = all.subarray(t.offset, t.offset + size);
    }
    const w = new Proxy(views, {
      get(target, name) {
        if (!(name in target)) throw fail("weights asset is missing tensor " + String(name));
        return target[name];
      },
    });
    const c = Object.assign({}, m.config);
    c.d = c.H * c.d_h;
    c.group_size = c.H / c.H_kv;
    const layers = [];
    for (let l = 0; l < c.L; l++) {
      const p = "blocks." + l + ".";
      layers.push({
        ln1: [w[p + "ln1.weight"], w[p + "ln1.bias"]],
        qkv: [w[p + "attn.qkv.weight"], w[p + "attn.qkv.bias"]],
        out: [w[p + "attn.out.weight"], w[p + "attn.out.bias"]],
        ln2: [w[p + "ln2.weight"], w[p + "ln2.bias"]],
        up: [w[p + "mlp.up.weight"], w[p + "mlp.up.bias"]],
        down: [w[p + "mlp.down.weight"], w[p + "mlp.down.bias"]],
      });
    }
    return {
      config: c, weights: views, layers, tok_emb: w["tok_emb.weight"], pos_emb: w["pos_emb.weight"],
      ln_f: [w["ln_f.weight"], w["ln_f.bias"]], N_params: m.N_params, tokenizer: new Tokenizer(m.vocab),
      manifest: m,
    };
  }

  // ---- The KV cache: [L, H_kv, S_max, d_h] keys and values, S rows valid ----
  class KVCache {
    constructor(config, S_max) {
      S_max = S_max === undefined ? config.S_max : S_max;
      if (!isInt(S_max) || S_max < 1 || S_max > config.S_max) {
        throw fail("S_max must be an integer in 1.." + config.S_max + " (the model's position table), got " + S_max);
      }
      this.config = config;
      this.S_max = S_max;
      const n = config.L * config.H_kv * S_max * config.d_h;
      this.k = new Float32Array(n);
      this.v = new Float32Array(n);
      this.S = 0;
    }
    get s() { return 4; }
    get nbytes() { return this.k.byteLength + this.v.byteLength; }
    get bytes_used() {
      const c = this.config;
      return 2 * c.L * c.H_kv * this.S * c.d_h * this.s;
    }
    index(layer, head, row) {
      return ((layer * this.config.H_kv + head) * this.S_max + row) * this.config.d_h;
    }
    checkRoom(T) {
      if (this.S + T > this.S_max) {
        throw fail("KV cache overflow: it holds S=" + this.S + " tokens and " + T + " more were written, " +
          "but S_max is " + this.S_max + "; allocate a larger cache or generate fewer tokens");
      }
    }
    reset() { this.S = 0; }
  }

  // ---- Building blocks ----
  function layerNorm(x, T, d, gamma, beta, out) {
    for (let t = 0; t < T; t++) {
      const o = t * d;
      let mean = 0;
      for (let i = 0; i < d; i++) mean += x[o + i];
      mean /= d;
      let v = 0;
      for (let i = 0; i < d; i++) { const z = x[o + i] - mean; v += z * z; }
      const inv = 1 / Math.sqrt(v / d + LN_EPS);
      for (let i = 0; i < d; i++) out[o + i] = (x[o + i] - mean) * inv * gamma[i] + beta[i];
    }
    return out;
  }

  // y[t, o] = b[o] + Σ_i x[t, i]·W[o, i]   (W is [n_out, n_in], as nn.Linear stores it)
  function linear(x, T, n_in, W, b, n_out) {
    const y = new Float32Array(T * n_out);
    for (let t = 0; t < T; t++) {
      const xo = t * n_in;
      for (let o = 0; o < n_out; o++) {
        const wo = o * n_in;
        let acc = b ? b[o] : 0;
        for (let i = 0; i < n_in; i++) acc += x[xo + i] * W[wo + i];
        y[t * n_out + o] = acc;
      }
    }
    return y;
  }

  // Causal attention of T new tokens at positions S..S+T−1 over keys/values 0..S+T−1.
  // K, V: flat arrays with row r of kv head g at (g·rowsPerHead + r)·d_h.
  function attend(q, T, S, K, V, rowsPerHead, c) {
    const { H, H_kv, d_h, d } = c, g = c.group_size, n = S + T;
    const a = new Float32Array(T * d);
    const scale = 1 / Math.sqrt(d_h);
    const scores = new Float64Array(n);
    const qkvWidth = (H + 2 * H_kv) * d_h;
    for (let h = 0; h < H; h++) {
      const hk = Math.floor(h / g), base = hk * rowsPerHead * d_h;
      for (let t = 0; t < T; t++) {
        const qo = t * qkvWidth + h * d_h;
        let max = -Infinity;
        // Every key is scored, as the PyTorch model does; keys after position S+t are masked.
        for (let j = 0; j < n; j++) {
          let acc = 0;
          const ko = base + j * d_h;
          for (let i = 0; i < d_h; i++) acc += q[qo + i] * K[ko + i];
          scores[j] = j > S + t ? -Infinity : Math.fround(acc) * scale;
          if (scores[j] > max) max = scores[j];
        }
        let sum = 0;
        for (let j = 0; j < n; j++) { const e = Math.exp(scores[j] - max); scores[j] = e; sum += e; }
        const ao = t * d + h * d_h;
        for (let i = 0; i < d_h; i++) {
          let acc = 0;
          for (let j = 0; j <= S + t; j++) acc += scores[j] * V[base + j * d_h + i];
          a[ao + i] = acc / sum;
        }
      }
    }
    return a;
  }

  function checkTokens(model, tokens, cache) {
    const c = model.config;
    if (!Array.isArray(tokens) && !(tokens instanceof Int32Array)) throw fail("tokens must be an array of token ids");
    if (tokens.length === 0) throw fail("tokens must hold at least one token, got none");
    for (const id of tokens) {
      if (!isInt(id) || id < 0 || id >= c.V) {
        throw fail("token id " + id + " is out of range: ids must be in 0.." + (c.V - 1) + " (V=" + c.V + ")");
      }
    }
    const S = cache ? cache.S : 0;
    if (cache) cache.checkRoom(tokens.length);
    if (S + tokens.length > c.S_max) {
      throw fail("sequence of " + (S + tokens.length) + " tokens exceeds S_max=" + c.S_max +
        " (the model's position table)");
    }
  }

  // Logits for `tokens` (one sequence, B = 1): a Float32Array [T, V], or [V] for the last position
  // when lastOnly. With a cache holding S tokens they sit at positions S..S+T−1 and their keys and
  // values are written to rows [S, S+T) of every layer (T = P: prefill; T = 1: a decode step).
  function forward(model, tokens, cache, lastOnly) {
    checkTokens(model, tokens, cache);
    const c = model.config, { d, d_h, H, H_kv, d_ffn, V } = c;
    const T = tokens.length, S = cache ? cache.S : 0;
    const qkvWidth = (H + 2 * H_kv) * d_h;
    let x = new Float32Array(T * d);
    for (let t = 0; t < T; t++) {
      const eo = tokens[t] * d, po = (S + t) * d;
      for (let i = 0; i < d; i++) x[t * d + i] = model.tok_emb[eo + i] + model.pos_emb[po + i];
    }
    const h = new Float32Array(T * d);
    for (let l = 0; l < c.L; l++) {
      const p = model.layers[l];
      layerNorm(x, T, d, p.ln1[0], p.ln1[1], h);
      const qkv = linear(h, T, d, p.qkv[0], p.qkv[1], qkvWidth);  // [T, (H + 2·H_kv)·d_h]
      let K, Vv, rows;
      if (cache) {
        K = cache.k.subarray(cache.index(l, 0, 0), cache.index(l + 1, 0, 0));  // [H_kv, S_max, d_h]
        Vv = cache.v.subarray(cache.index(l, 0, 0), cache.index(l + 1, 0, 0));
        rows = cache.S_max;
      } else {
        K = new Float32Array(H_kv * T * d_h);  // [H_kv, T, d_h], thrown away after this layer
        Vv = new Float32Array(H_kv * T * d_h);
        rows = T;
      }
      for (let t = 0; t < T; t++) {
        for (let hk = 0; hk < H_kv; hk++) {
          const src = t * qkvWidth + H * d_h + hk * d_h, dst = (hk * rows + S + t) * d_h;
          for (let i = 0; i < d_h; i++) {
            K[dst + i] = qkv[src + i];
            Vv[dst + i] = qkv[src + H_kv * d_h + i];
          }
        }
      }
      const a = attend(qkv, T, S, K, Vv, rows, c);
      const o = linear(a, T, d, p.out[0], p.out[1], d);
      for (let i = 0; i < T * d; i++) x[i] += o[i];
      layerNorm(x, T, d, p.ln2[0], p.ln2[1], h);
      const u = linear(h, T, d, p.up[0], p.up[1], d_ffn);
      for (let i = 0; i < u.length; i++) u[i] = gelu(u[i]);
      const m = linear(u, T, d_ffn, p.down[0], p.down[1], d);
      for (let i = 0; i < T * d; i++) x[i] += m[i];
    }
    if (cache) cache.S += T;
    const first = lastOnly ? T - 1 : 0, n = T - first;
    const y = layerNorm(x.subarray(first * d), n, d, model.ln_f[0], model.ln_f[1], new Float32Array(n * d));
    return linear(y, n, d, model.tok_emb, null, V);  // the LM head shares the token embedding
  }

  // ---- Word tokenizer: the rules of minigpt/tokenizer.py (whitespace split, case-sensitive) ----
  function editDistance(a, b) {
    const prev = new Array(b.length + 1), cur = new Array(b.length + 1);
    for (let j = 0; j <= b.length; j++) prev[j] = j;
    for (let i = 1; i <= a.length; i++) {
      cur[0] = i;
      for (let j = 1; j <= b.length; j++) {
        cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      }
      for (let j = 0; j <= b.length; j++) prev[j] = cur[j];
    }
    return prev[b.length];
  }

  class Tokenizer {
    constructor(vocab) {
      if (!Array.isArray(vocab) || vocab[0] !== "<pad>") throw fail("vocab must start with \"<pad>\" at id 0");
      this.vocab = vocab.slice();
      this.ids = new Map(vocab.map((w, i) => [w, i]));
      if (this.ids.size !== vocab.length) throw fail("vocab words must be unique");
    }
    get V() { return this.vocab.length; }
    words(text) {
      if (typeof text !== "string") throw fail("text must be a string, got " + typeof text);
      const trimmed = text.trim();
      return trimmed ? trimmed.split(/\s+/) : [];
    }
    unknown(text) {
      return [...new Set(this.words(text).filter((w) => !this.ids.has(w)))];
    }
    // The n vocabulary words nearest to `word`: edit distance ignoring case, then with case, then id.
    nearest(word, n) {
      n = n === undefined ? 3 : n;
      const low = word.toLowerCase();
      const scored = [];
      for (let i = 1; i < this.vocab.length; i++) {
        const w = this.vocab[i];
        scored.push([editDistance(low, w.toLowerCase()), editDistance(word, w), i, w]);
      }
      scored.sort((p, q) => p[0] - q[0] || p[1] - q[1] || p[2] - q[2]);
      return scored.slice(0, n).map((s) => s[3]);
    }
    encode(text) {
      const unknown = this.unknown(text);
      if (unknown.length) {
        const e = fail("unknown words " + JSON.stringify(unknown) + " — the vocabulary has " + this.V + " words");
        e.unknown = unknown;
        e.suggestions = Object.fromEntries(unknown.map((w) => [w, this.nearest(w)]));
        throw e;
      }
      return this.words(text).map((w) => this.ids.get(w));
    }
    decode(ids) {
      return ids.map((i, position) => {
        if (!isInt(i) || i < 0 || i >= this.V) {
          throw fail("id " + i + " at position " + position + " is out of range; allowed ids are 0.." + (this.V - 1));
        }
        return this.vocab[i];
      }).join(" ");
    }
  }

  // ---- Sampling: greedy at temperature 0, else softmax(logits / T) over the top k, with a seeded PRNG ----
  function rngFromSeed(seed) {  // mulberry32: 32-bit state, uniform floats in [0, 1)
    if (!isInt(seed) || seed < 0 || seed > 4294967295) {
      throw fail("seed must be an integer in 0..4294967295, got " + seed);
    }
    let a = seed >>> 0;
    return function () {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  function argmax(logits) {
    let best = 0;
    for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
    return best;
  }

  // The distribution the next token is drawn from: softmax(logits / T) over the top k (T = 0: softmax(logits)).
  function distribution(logits, temperature, topK) {
    const V = logits.length, T = temperature > 0 ? temperature : 1;
    let kth = -Infinity;
    if (temperature > 0 && topK && topK < V) kth = Array.from(logits).sort((p, q) => q - p)[topK - 1];
    const probs = new Float64Array(V);
    let max = -Infinity, sum = 0;
    for (let i = 0; i < V; i++) if (logits[i] >= kth && logits[i] / T > max) max = logits[i] / T;
    for (let i = 0; i < V; i++) {
      probs[i] = logits[i] >= kth ? Math.exp(logits[i] / T - max) : 0;
      sum += probs[i];
    }
    for (let i = 0; i < V; i++) probs[i] /= sum;
    return probs;
  }

  function checkSampling(opts, V) {
    const temperature = opts.temperature === undefined ? 0 : opts.temperature;
    if (typeof temperature !== "number" || !Number.isFinite(temperature) || temperature < 0) {
      throw fail("temperature must be a number >= 0 (0 means greedy), got " + opts.temperature);
    }
    const topK = opts.topK === undefined || opts.topK === null ? null : opts.topK;
    if (topK !== null && (!isInt(topK) || topK < 1 || topK > V)) {
      throw fail("top_k must be empty or an integer in 1.." + V + " (V), got " + opts.topK);
    }
    return { temperature, topK };
  }

  // Next token and the distribution it came from. rng is needed when temperature > 0.
  function sample(logits, opts) {
    const { temperature, topK } = checkSampling(opts || {}, logits.length);
    const probs = distribution(logits, temperature, topK);
    if (temperature === 0) return { token: argmax(logits), probs };
    const u = opts.rng();
    let acc = 0, token = -1;
    for (let i = 0; i < probs.length; i++) {
      if (probs[i] === 0) continue;
      token = i;
      acc += probs[i];
      if (u < acc) break;
    }
    return { token, probs };
  }

  function topCandidates(probs, n) {
    const ids = Array.from(probs.keys()).sort((a, b) => probs[b] - probs[a] || a - b);
    return ids.slice(0, n).map((id) => ({ id, p: probs[id] }));
  }

  // ---- Generation, one step at a time: prefill, then decode steps (or full recomputes without the cache) ----
  function checkRequest(model, ids, D) {
    const S_max = model.config.S_max, P = ids.length;
    if (P === 0) throw fail("the prompt is empty: generation needs at least one prompt token (P >= 1)");
    if (P > S_max) throw fail("the prompt has P=" + P + " tokens but S_max is " + S_max);
    if (!isInt(D) || D < 1) throw fail("new tokens D must be an integer >= 1, got " + D);
    if (P + D - 1 > S_max) {
      throw fail("D=" + D + " does not fit: a prompt of P=" + P + " tokens plus " + D + " new ones needs " +
        (P + D - 1) + " positions but S_max is " + S_max + "; allowed: D <= " + (S_max - P + 1));
    }
  }

  // A generation the caller advances with step(): each returns what that step did and produced.
  class Generation {
    constructor(model, ids, opts) {
      opts = opts || {};
      const D = opts.D === undefined ? 1 : opts.D;
      checkRequest(model, ids, D);
      this.sampling = checkSampling(opts, model.config.V);
      this.rng = this.sampling.temperature > 0 ? rngFromSeed(opts.seed === undefined ? 0 : opts.seed) : null;
      this.model = model;
      this.useCache = opts.useCache !== false;
      this.cache = this.useCache ? new KVCache(model.config) : null;
      this.P = ids.length;
      this.D = D;
      this.seq = ids.slice();
      this.tokens = [];
      this.now = typeof performance !== "undefined" ? () => performance.now() : () => Date.now();
    }
    get done() { return this.tokens.length >= this.D; }
    step() {
      if (this.done) throw fail("the generation is complete: all D=" + this.D + " tokens were produced");
      const t = this.tokens.length;
      const input = t === 0 || !this.useCache ? this.seq.slice() : [this.seq[this.seq.length - 1]];
      const S = this.useCache ? this.cache.S : 0;
      const t0 = this.now();
      const logits = forward(this.model, input, this.cache, true);
      const ms = this.now() - t0;
      const { token, probs } = sample(logits, Object.assign({ rng: this.rng }, this.sampling));
      this.seq.push(token);
      this.tokens.push(token);
      return { index: t, phase: t === 0 ? "prefill" : "decode", T: input.length, S, logits, probs, token, ms };
    }
  }

  const api = {
    erf, gelu, loadModel, KVCache, Tokenizer, editDistance, forward, sample, distribution, topCandidates,
    rngFromSeed, argmax, Generation, checkRequest,
  };
  root.MiniGPTForward = api;
  if (typeof module !== "undefined" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : this);
