"""minigpt/web/minigpt_forward.js (MiniGPT in the browser) computes what the PyTorch package computes.

Under node: the JS logits equal PyTorch's within 1e-4 for random prompts and at every decode step of
a generation, greedy continuations are identical token for token, and the JS cache after a prefill
holds the package's `KVCache` rows. The weights come from `minigpt.book.web_export`, as on the site.
"""

from __future__ import annotations

import json
import math
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from node import NODE, run_node

from minigpt import MiniGPT, ModelConfig, Pretrained, Tokenizer, costs, load_pretrained
from minigpt.book.web_export import WEIGHTS_ASSET, export_web_assets, web_weights
from minigpt.corpus import generate_sentences
from minigpt.corpus.grammar import vocabulary

FORWARD_JS = Path(__file__).resolve().parents[1] / "minigpt" / "web" / "minigpt_forward.js"
TOL = 1e-4
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed; minigpt_forward.js runs under node")

# Reads {"asset": path, "calls": [[op, args], ...]} on stdin; answers one result per call.
DRIVER = r"""
const F = require(process.argv[1]);
const req = JSON.parse(require("fs").readFileSync(0, "utf8"));
const model = req.asset ? F.loadModel(require(req.asset)) : null;
const ops = {
  forward({ids, cached, lastOnly}) {
    const cache = cached ? new F.KVCache(model.config) : null;
    return Array.from(F.forward(model, ids, cache, lastOnly));
  },
  generate({ids, D, useCache, temperature, topK, seed}) {
    const g = new F.Generation(model, ids, {D, useCache, temperature, topK, seed});
    const steps = [];
    while (!g.done) {
      const s = g.step();
      steps.push({token: s.token, T: s.T, S: s.S, logits: Array.from(s.logits)});
    }
    return {steps, cacheS: g.cache ? g.cache.S : null};
  },
  cache({ids}) {
    const cache = new F.KVCache(model.config);
    F.forward(model, ids, cache, true);
    const c = model.config, P = ids.length, rows = (a) => {
      const out = [];
      for (let l = 0; l < c.L; l++) for (let h = 0; h < c.H_kv; h++) {
        const o = cache.index(l, h, 0);
        out.push(Array.from(a.subarray(o, o + P * c.d_h)));
      }
      return out;
    };
    return {S: cache.S, nbytes: cache.nbytes, bytes_used: cache.bytes_used, k: rows(cache.k), v: rows(cache.v)};
  },
  encode({text}) { return model.tokenizer.encode(text); },
  decode({ids}) { return model.tokenizer.decode(ids); },
  nearest({word, n}) { return model.tokenizer.nearest(word, n); },
  request({ids, D, temperature, topK, seed}) {
    new F.Generation(model, ids, {D, temperature, topK, seed});
    return "ok";
  },
  erf({xs}) { return xs.map(F.erf); },
  gelu({xs}) { return xs.map(F.gelu); },
  uniform({seed, n}) { const r = F.rngFromSeed(seed); return Array.from({length: n}, r); },
  sample({logits, temperature, topK, seed, n}) {
    const rng = F.rngFromSeed(seed);
    return Array.from({length: n}, () => F.sample(Float32Array.from(logits), {temperature, topK, rng}).token);
  },
  manifest() { return {N_params: model.N_params, config: model.config, V: model.tokenizer.V}; },
};
const out = req.calls.map(([op, args]) => {
  try {
    return {value: ops[op](args || {})};
  } catch (e) {
    return {error: e.message, name: e.name, unknown: e.unknown, suggestions: e.suggestions};
  }
});
process.stdout.write(JSON.stringify(out));
"""


def run_js(asset: Path | None, calls: list[tuple[str, dict]]) -> list[dict]:
    """Run calls in node against the exported asset; one {"value"} or {"error"} per call."""
    return run_node(DRIVER, json.dumps({"asset": str(asset) if asset else None, "calls": calls}), str(FORWARD_JS))


def values(asset: Path, calls: list[tuple[str, dict]]) -> list:
    out = run_js(asset, calls)
    for (op, args), got in zip(calls, out, strict=True):
        assert "error" not in got, f"{op}({args}) raised in JS: {got['error']}"
    return [got["value"] for got in out]


@pytest.fixture(scope="module")
def shipped() -> Pretrained:
    return load_pretrained()


@pytest.fixture(scope="module")
def asset(shipped: Pretrained, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_web_assets(tmp_path_factory.mktemp("web"), shipped)


def random_prompts(V: int, S_max: int, seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    lengths = [P for P in (1, 2, 7, 19, 64) if P < S_max - 1] + [S_max - 1, S_max]
    return [[rng.randrange(1, V) for _ in range(P)] for P in lengths]


def max_diff(js: list[float], py: torch.Tensor) -> float:
    return (torch.tensor(js, dtype=torch.float64).view_as(py) - py.double()).abs().max().item()


def test_asset_is_the_shipped_checkpoint(shipped: Pretrained, asset: Path) -> None:
    manifest, raw = web_weights(shipped)
    (got,) = values(asset, [("manifest", {})])
    c = shipped.config
    N = costs.param_count(L=c.L, d=c.d, V=c.V, S_max=c.S_max, d_ffn=c.d_ffn, H_kv=c.H_kv, d_h=c.d_h)
    assert got["N_params"] == manifest["N_params"] == N == sum(p.numel() for p in shipped.model.parameters())
    assert len(raw) == 4 * N
    assert got["V"] == shipped.tokenizer.V and got["config"]["d"] == c.d
    assert manifest["vocab"] == shipped.tokenizer.vocab
    assert asset.name == WEIGHTS_ASSET and asset.stat().st_size < 2_000_000
    # The export is a build product: no copy of it lives in the repository.
    repo = Path(__file__).resolve().parents[1]
    if (repo / ".git").exists() and shutil.which("git"):
        tracked = subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True, check=True).stdout
        assert WEIGHTS_ASSET not in tracked


def test_random_prompts_logits_match(shipped: Pretrained, asset: Path) -> None:
    model, c = shipped.model, shipped.config
    prompts = random_prompts(c.V, c.S_max)
    calls = [("forward", {"ids": ids, "cached": True, "lastOnly": True}) for ids in prompts]
    calls += [("forward", {"ids": ids, "cached": False, "lastOnly": False}) for ids in prompts[:4]]
    got = values(asset, calls)
    with torch.no_grad():
        for ids, js in zip(prompts, got[: len(prompts)], strict=True):
            cache = model.new_cache()
            expected = model(torch.tensor([ids]), cache, last_only=True)[0, -1]
            assert max_diff(js, expected) < TOL, f"P={len(ids)}: {max_diff(js, expected):.2e}"
        for ids, js in zip(prompts[:4], got[len(prompts):], strict=True):
            expected = model(torch.tensor([ids]))[0]  # [T, V]: every position, no cache
            assert max_diff(js, expected) < TOL, f"P={len(ids)} all positions: {max_diff(js, expected):.2e}"


def _python_steps(model: MiniGPT, ids: list[int], D: int) -> tuple[list[int], list[torch.Tensor]]:
    """Greedy generation by the package's prefill/decode_step, with the logits of every step."""
    from minigpt import decode_step, prefill

    cache = model.new_cache()
    logits = [prefill(model, torch.tensor([ids]), cache)[0]]
    tokens = [int(logits[0].argmax())]
    while len(tokens) < D:
        logits.append(decode_step(model, torch.tensor([tokens[-1]]), cache)[0])
        tokens.append(int(logits[-1].argmax()))
    return tokens, logits


@pytest.mark.parametrize("use_cache", [True, False])
def test_every_decode_step_matches_and_greedy_is_identical(shipped: Pretrained, asset: Path, use_cache: bool) -> None:
    model, tok = shipped.model, shipped.tokenizer
    prompts = ["Yesterday I worked and he", "Every day she", *generate_sentences(3, 7)]
    lengths = [40, 20, 30, 30, 30]
    calls = [("generate", {"ids": tok.encode(p), "D": D, "useCache": use_cache}) for p, D in zip(prompts, lengths,
                                                                                                   strict=True)]
    got = values(asset, calls)
    for prompt, D, js in zip(prompts, lengths, got, strict=True):
        ids = tok.encode(prompt)
        tokens, logits = _python_steps(model, ids, D)
        js_tokens = [s["token"] for s in js["steps"]]
        assert js_tokens == tokens, f"{prompt!r}: JS {tok.decode(js_tokens)!r} != Python {tok.decode(tokens)!r}"
        for t, (step, expected) in enumerate(zip(js["steps"], logits, strict=True)):
            assert max_diff(step["logits"], expected) < TOL, f"{prompt!r} step {t}"
            assert step["T"] == (1 if use_cache and t else len(ids) + t)  # no cache: all P + t tokens again
            assert step["S"] == ((len(ids) + t - 1 if t else 0) if use_cache else 0)
        assert js["cacheS"] == (len(ids) + D - 1 if use_cache else None)
        reference = shipped_generate(shipped, prompt, D, use_cache)
        assert tok.decode(js_tokens) == reference


def shipped_generate(shipped: Pretrained, prompt: str, D: int, use_cache: bool) -> str:
    from minigpt import generate

    return generate(shipped.model, prompt, D, use_cache=use_cache, tokenizer=shipped.tokenizer).text


def test_cache_after_prefill_equals_kvcache_rows(shipped: Pretrained, asset: Path) -> None:
    model, c = shipped.model, shipped.config
    prompts = [shipped.tokenizer.encode("Yesterday I worked and he played ."), random_prompts(c.V, c.S_max)[4]]
    got = values(asset, [("cache", {"ids": ids}) for ids in prompts])
    for ids, js in zip(prompts, got, strict=True):
        P = len(ids)
        cache = model.new_cache()
        with torch.no_grad():
            model(torch.tensor([ids]), cache)
        assert js["S"] == cache.S == P
        assert js["nbytes"] == cache.nbytes == costs.kv_cache_bytes(L=c.L, H_kv=c.H_kv, d_h=c.d_h, s=4, S=c.S_max)
        assert js["bytes_used"] == cache.bytes_used
        for name, rows in (("k", js["k"]), ("v", js["v"])):
            expected = getattr(cache, name)[:, 0, :, :P]  # [L, H_kv, P, d_h]
            got_rows = torch.tensor(rows).view(c.L, c.H_kv, P, c.d_h)
            diff = (got_rows - expected).abs().max().item()
            assert diff < 1e-5, f"{name} rows differ by {diff:.2e} (P={P})"


@pytest.mark.parametrize("H_kv", [1, 2])
def test_grouped_query_attention_matches(H_kv: int, tmp_path: Path) -> None:
    torch.manual_seed(H_kv)
    config = ModelConfig(L=2, H=4, H_kv=H_kv, d_h=8, d_ffn=48, V=600, S_max=32)
    model = MiniGPT(config).eval()
    with torch.no_grad():  # move off the init (zero biases, unit norms) so every parameter matters
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    asset = export_web_assets(tmp_path, Pretrained(model, Tokenizer(vocabulary()), card={}))
    prompts = random_prompts(config.V, config.S_max, seed=H_kv)[:5]
    got = values(asset, [("generate", {"ids": ids, "D": config.S_max - len(ids) + 1}) for ids in prompts[:3]]
                 + [("forward", {"ids": ids, "cached": False, "lastOnly": False}) for ids in prompts])
    for ids, js in zip(prompts[:3], got[:3], strict=True):
        tokens, logits = _python_steps(model, ids, config.S_max - len(ids) + 1)
        assert [s["token"] for s in js["steps"]] == tokens
        for step, expected in zip(js["steps"], logits, strict=True):
            assert max_diff(step["logits"], expected) < TOL
    with torch.no_grad():
        for ids, js in zip(prompts, got[3:], strict=True):
            assert max_diff(js, model(torch.tensor([ids]))[0]) < TOL


def test_tokenizer_rules_are_the_package_rules(shipped: Pretrained, asset: Path) -> None:
    tok = shipped.tokenizer
    sentences = generate_sentences(50, 3)
    texts = sentences + ["  Yesterday   I\tworked\nand he ", "", "<pad> ."]
    got = run_js(asset, [("encode", {"text": t}) for t in texts] + [("decode", {"ids": tok.encode(s)})
                                                                      for s in sentences])
    for text, js in zip(texts, got, strict=False):
        assert js == {"value": tok.encode(text)}, text
    for sentence, js in zip(sentences, got[len(texts):], strict=True):
        assert js["value"] == tok.decode(tok.encode(sentence)) == sentence


def test_unknown_words_get_a_message_and_the_nearest_words(shipped: Pretrained, asset: Path) -> None:
    tok = shipped.tokenizer
    cases = {"yesterday I wrked": ["yesterday", "wrked"], "Yesterday I worked.": ["worked."],
             "Every day she zzz zzz": ["zzz"]}
    got = run_js(asset, [("encode", {"text": t}) for t in cases])
    for (text, unknown), js in zip(cases.items(), got, strict=True):
        with pytest.raises(ValueError, match="unknown words"):
            tok.encode(text)
        assert "error" in js and js["unknown"] == unknown, js
        assert "unknown words" in js["error"] and unknown[0] in js["error"]
        for word in unknown:
            assert len(js["suggestions"][word]) == 3 and all(w in tok.vocab for w in js["suggestions"][word])
    words = ["yesterday", "wrked", "worked.", "zzz", "Teacher", "<pad", "sheep", "x"]
    for word, js in zip(words, values(asset, [("nearest", {"word": w, "n": 4}) for w in words]), strict=True):
        assert js == tok.nearest(word, 4), word  # the Python twin ranks the same way
    assert got[0]["suggestions"]["yesterday"][0] == "Yesterday"
    assert got[0]["suggestions"]["wrked"][0] == "worked"
    assert got[1]["suggestions"]["worked."][0] == "worked"


def test_bad_requests_raise_clear_errors(shipped: Pretrained, asset: Path) -> None:
    S_max = shipped.config.S_max
    calls = [
        ("request", {"ids": [], "D": 5}),
        ("request", {"ids": [3] * (S_max + 1), "D": 1}),
        ("request", {"ids": [3] * 100, "D": 30}),
        ("request", {"ids": [3], "D": 0}),
        ("request", {"ids": [3], "D": 2, "temperature": -1}),
        ("request", {"ids": [3], "D": 2, "temperature": 1, "topK": 0}),
        ("request", {"ids": [3], "D": 2, "temperature": 1, "seed": -4}),
        ("forward", {"ids": [600], "cached": False, "lastOnly": True}),
        ("request", {"ids": [3] * 100, "D": 29}),
    ]
    got = run_js(asset, calls)
    expected = ["prompt is empty", f"P={S_max + 1} tokens but S_max is {S_max}",
                f"needs 129 positions but S_max is {S_max}; allowed: D <= {S_max - 100 + 1}",
                "D must be an integer >= 1", "temperature must be a number >= 0", "top_k must be empty or an integer",
                "seed must be an integer", "token id 600 is out of range"]
    for (op, args), js, message in zip(calls, got, expected, strict=False):
        assert "error" in js and message in js["error"], (op, args, js)
    assert got[-1] == {"value": "ok"}


def test_erf_and_gelu_are_exact() -> None:
    xs = [i / 64 for i in range(-640, 641)] + [1e-8, -3e-5, 2.4999, 2.5, 5.999, 6.0, 30.0]
    erf, gelu = [r["value"] for r in run_js(None, [("erf", {"xs": xs}), ("gelu", {"xs": xs})])]
    for x, e, g in zip(xs, erf, gelu, strict=True):
        assert math.isclose(e, math.erf(x), rel_tol=1e-13, abs_tol=1e-15), x
        exact = torch.nn.functional.gelu(torch.tensor(x, dtype=torch.float64)).item()  # approximate="none"
        assert math.isclose(g, exact, rel_tol=1e-12, abs_tol=1e-13), x  # 1 + erf cancels for x < -3


def test_seeded_sampling(asset: Path) -> None:
    logits = [0.0, 1.0, 2.0, 0.5, -1.0, 1.5]
    calls = [
        ("uniform", {"seed": 7, "n": 5}), ("uniform", {"seed": 7, "n": 5}), ("uniform", {"seed": 8, "n": 5}),
        ("sample", {"logits": logits, "temperature": 1.0, "topK": None, "seed": 1, "n": 20000}),
        ("sample", {"logits": logits, "temperature": 0.7, "topK": 2, "seed": 2, "n": 4000}),
        ("sample", {"logits": logits, "temperature": 1.0, "topK": 1, "seed": 3, "n": 50}),
        ("sample", {"logits": logits, "temperature": 0.0, "topK": None, "seed": 3, "n": 5}),
        ("generate", {"ids": [20, 30], "D": 10, "temperature": 1.2, "topK": 20, "seed": 5}),
        ("generate", {"ids": [20, 30], "D": 10, "temperature": 1.2, "topK": 20, "seed": 5}),
        ("generate", {"ids": [20, 30], "D": 10, "temperature": 1.2, "topK": 20, "seed": 6}),
    ]
    a, b, c, full, top2, top1, greedy, g5, g5_again, g6 = values(asset, calls)
    assert a == b != c and all(0 <= u < 1 for u in a + c)
    probs = torch.softmax(torch.tensor(logits, dtype=torch.float64), 0)
    counts = torch.bincount(torch.tensor(full), minlength=len(logits)).double()
    chi2 = (((counts - 20000 * probs) ** 2) / (20000 * probs)).sum().item()
    assert chi2 < 20.5, f"frequencies {counts.tolist()} vs {(20000 * probs).tolist()}: chi2={chi2:.1f} (5 dof, p<0.001)"
    assert set(top2) == {2, 5} and 0.635 < top2.count(2) / len(top2) < 0.708  # softmax([2, 1.5] / 0.7)[0] = 0.671
    assert top1 == [2] * 50 and greedy == [2] * 5
    tokens = [[s["token"] for s in g["steps"]] for g in (g5, g5_again, g6)]
    assert tokens[0] == tokens[1] != tokens[2]


def test_export_command_writes_every_asset_and_no_temporary_file(tmp_path: Path) -> None:
    from minigpt.book.web_export import SCRIPTS, main

    assert main([str(tmp_path / "web")]) == 0
    written = sorted(p.relative_to(tmp_path / "web").as_posix() for p in (tmp_path / "web").rglob("*") if p.is_file())
    assert written == sorted([WEIGHTS_ASSET, *SCRIPTS])
    source = Path(__file__).resolve().parents[1] / "minigpt" / "web"
    for name in SCRIPTS:
        assert (tmp_path / "web" / name).read_text(encoding="utf-8") == (source / name).read_text(encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        main([str(tmp_path / "other"), "--checkpoint", str(tmp_path / "missing")])


@pytest.mark.parametrize("source, prefix", [("chapters/01_minigpt_live.md", "../minigpt-web/"),
                                           ("intro.md", "minigpt-web/")])
def test_the_live_page_loads_the_scripts_the_export_writes(source: str, prefix: str) -> None:
    """The pages that run MiniGPT live (its own, and the landing page) load exactly LIVE_SCRIPTS' scripts, in order:
    a cost room minigpt_live.js needs and a page forgets would only show in a browser."""
    from minigpt.book.web_export import LIVE_SCRIPTS as SCRIPTS

    page = (Path(__file__).resolve().parents[1] / source).read_text(encoding="utf-8")
    loaded = re.findall(r'<script src="' + re.escape(prefix) + r'([^"]+)"></script>', page)
    assert loaded == [s for s in SCRIPTS if s.endswith(".js")]
