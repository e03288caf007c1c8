"""The cache's memory, 2026 (Chapters 21-22): quality at equal cache bytes, measured on the CPU (1 thread).

    python scripts/sweeps/measure_cache_memory.py latent      # MHA, GQA, MQA and MLA (SVD copies, uptrained) per byte
    python scripts/sweeps/measure_cache_memory.py streaming   # sliding windows with and without attention sinks
    python scripts/sweeps/measure_cache_memory.py eviction    # H2O and SnapKV against the budget b
    python scripts/sweeps/measure_cache_memory.py paths       # MLA's naive vs absorbed forward time against T

Each writes minigpt/measure/data/<what>_quality.json (paths: mla_paths_cpu.json). Perplexities come with their 95 %
intervals over windows (paired differences against the full cache or the MHA model), grammaticality with its
Wilson interval. The uptrained MLA checkpoints are made by

    python -m minigpt.corpus.train --uptrain-from minigpt --latent 8 --steps 300 --warmup 30 --threads 1 \\
        --name minigpt-mla8-uptrained            (and --latent 4 ... --name minigpt-mla4-uptrained)
"""

from __future__ import annotations

import argparse
import math
import time

import torch

from minigpt import load_pretrained
from minigpt.corpus import fidelity, long_context
from minigpt.corpus.quality import grammaticality
from minigpt.corpus.train import Batches
from minigpt.measure import environment, sweeps
from minigpt.runtime.eviction import H2OCache, SnapKVCache
from minigpt.runtime.mla import latent_from_mha
from minigpt.runtime.window_cache import WindowKVCache

DATA = sweeps.DATA_DIR  # the package's sweep data, minigpt/measure/data
WINDOWS, PROMPT, D, SENTENCES = 64, 8, 60, 1000


def _r(v: object) -> object:
    if isinstance(v, float):
        return float(f"{v:.6g}")
    if isinstance(v, list):
        return [_r(x) for x in v]
    if isinstance(v, dict):
        return {k: _r(x) for k, x in v.items()}
    return v


def _ppl(nll: torch.Tensor, base: torch.Tensor | None = None) -> dict:
    mean, half = fidelity.mean_ci(nll)
    out = {"perplexity": math.exp(mean), "perplexity_ci": [math.exp(mean - half), math.exp(mean + half)]}
    if base is not None:
        d, dh = fidelity.mean_ci(nll - base)
        out.update(delta_log_ppl=d, delta_log_ppl_ci=dh)
    return out


def _gram(g) -> dict:
    return {"grammatical": g.n_grammatical, "sentences": g.n_sentences,
            "grammatical_ci": list(fidelity.wilson_ci(g.n_grammatical, g.n_sentences))}


def latent() -> dict:
    """Every attention variant at its cache bytes per token: perplexity (paired with MHA), greedy agreement
    with MHA, grammaticality of sampled text (decoded through the absorbed path for MLA)."""
    base = load_pretrained()
    tok, mha = base.tokenizer, base.model
    c = mha.config
    windows = fidelity.held_out_windows(tok, n=WINDOWS, T=c.S_max)
    calibration, _ = Batches(tok, c.S_max, 200_000, 0).next(8)  # what train.py --latent uses
    base_nll = fidelity.window_nll(mha, windows)
    variants = [("MHA", "minigpt", None), ("GQA H_kv=2 uptrained", "minigpt-gqa2-uptrained", None),
                ("MQA uptrained", "minigpt-mqa-uptrained", None)]
    variants += [(f"MLA d_c={d_c} SVD", None, d_c) for d_c in (64, 32, 16, 8, 4)]
    variants += [("MLA d_c=8 uptrained", "minigpt-mla8-uptrained", 8), ("MLA d_c=4 uptrained",
                                                                        "minigpt-mla4-uptrained", 4)]
    results = {}
    for label, name, d_c in variants:
        t0 = time.perf_counter()
        card = None
        if name is None:
            model = latent_from_mha(mha, d_c, calibration).eval()
        else:
            pre = load_pretrained(name=name)
            model, card = pre.model, pre.card
        values = 2 * model.config.H_kv * c.d_h if d_c is None else d_c  # cached values per token and layer
        record = {"values_per_token_layer": values, "kv_bytes_per_token": c.L * values * 4,
                  **_ppl(fidelity.window_nll(model, windows), base_nll)}
        if d_c is not None:
            with torch.no_grad():
                naive = fidelity.teacher_forced_logits(model.set_path("naive"), windows[:8])
                model.set_path("absorbed")
                cache = model.new_cache(8)
                steps = [model(windows[:8, :16], cache)] + [model(windows[:8, t : t + 1], cache)
                                                             for t in range(16, c.S_max)]
                record["absorbed_vs_naive_max_abs"] = (torch.cat(steps, 1) - naive).abs().max().item()
        agree = fidelity.greedy_agreement(model, windows[:, :PROMPT], D, baseline_model=mha)
        record.update(greedy_equal=agree.equal, greedy_tokens=agree.tokens,
                      greedy_mean_first_difference=agree.mean_first_difference,
                      **_gram(grammaticality(model, tok, SENTENCES)))
        if card is not None:
            record.update(train_steps=card["train_config"]["steps"], train_seconds=card.get("train_seconds"),
                          uptrained_from=card.get("uptrained_from"))
        results[label] = _r(record)
        print(label, results[label], f"{time.perf_counter() - t0:.0f} s", flush=True)
    return {"results": results, "windows": WINDOWS, "prompt_tokens": PROMPT, "D": D,
            "calibration": "8 training windows (Batches seed 0), as train.py --latent"}


STREAM_CONFIGS = [(8, 0), (4, 4), (16, 0), (12, 4), (32, 0), (28, 4)]  # (window, sinks): equal budgets in pairs
LONG_CONFIGS = [(32, 0), (28, 4), (64, 0), (60, 4), (124, 4)]
LONG_T, LONG_WINDOWS, BIN = 512, 64, 32


def streaming() -> dict:
    """(a) Within S_max, absolute positions: loss per position for windows with and without sinks (one masked
    chunk per window; the cache's chunk path equals the decode stream, tests/test_window_cache.py).
    (b) Past S_max, positions re-indexed in the cache: loss per position over 512-token streams, decoded one
    token at a time, and the grammaticality of 512 sampled tokens per stream by start position."""
    pre = load_pretrained()
    model, tok = pre.model, pre.tokenizer
    c = model.config
    windows = fidelity.held_out_windows(tok, n=128, T=c.S_max)
    full = fidelity.window_nll(model, windows)

    def per_position(factory):
        logits = fidelity.teacher_forced_logits(model, windows, factory)[:, :-1]
        nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), windows[:, 1:], reduction="none")
        return nll  # [n, S_max - 1]

    base_pos = per_position(None).mean(0)
    inside = {"full": {"per_position": base_pos.tolist(), **_ppl(full)}}
    for W, k in STREAM_CONFIGS:
        nll = per_position(lambda B, S_max, W=W, k=k: WindowKVCache(c, B, window=W, sinks=k))
        inside[f"W={W},k={k}"] = {"window": W, "sinks": k, "per_position": nll.mean(0).tolist(),
                                  **_ppl(nll.mean(1), full)}
        print("inside", W, k, _r(_ppl(nll.mean(1), full)), flush=True)
    long_windows = fidelity.held_out_windows(tok, n=LONG_WINDOWS, T=LONG_T)
    past = {}
    edges = list(range(0, LONG_T + 1, 128))
    for W, k in LONG_CONFIGS:
        t0 = time.perf_counter()
        factory = lambda B, W=W, k=k: WindowKVCache(c, B, window=W, sinks=k, positions="cache")  # noqa: E731
        nll = long_context.stream_nll(model, long_windows, factory)  # [n, LONG_T - 1]
        bins = nll[:, : (LONG_T - 1) // BIN * BIN].reshape(LONG_WINDOWS, -1, BIN).mean(2)
        sentences = long_context.sample_long(model, tok, factory, B=64, n_tokens=LONG_T, seed=0)
        past[f"W={W},k={k}"] = {
            "window": W, "sinks": k, "bin": BIN,
            "perplexity_by_bin": [math.exp(x) for x in bins.mean(0).tolist()],
            "inside_S_max": _ppl(nll[:, : c.S_max - 1].mean(1)), "past_S_max": _ppl(nll[:, c.S_max - 1 :].mean(1)),
            "grammatical_by_start": long_context.grammatical_by_position(sentences, edges),
        }
        print("past", W, k, _r({key: v for key, v in past[f"W={W},k={k}"].items() if "by" not in key}),
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    return {"inside": _r(inside), "past": _r(past), "windows_inside": 128, "windows_past": LONG_WINDOWS,
            "stream_tokens": LONG_T}


BUDGETS = (8, 16, 32, 48)
EVICT_P = 64


def eviction() -> dict:
    """Prompts of 64 held-out tokens, then 63 teacher-forced decode steps: the loss on the continuation with a
    cache of b tokens (H2O: b held, recent = b/2; SnapKV: the prompt compressed to b; a window of b + 1 with
    or without 4 sinks), paired against the full cache; grammaticality of sampled text (1-token prompts, the
    budget enforced during decode) for H2O and the windows; bytes read per step, measured and Eq. (3.5)."""
    pre = load_pretrained()
    model, tok = pre.model, pre.tokenizer
    c = model.config
    windows = fidelity.held_out_windows(tok, n=128, T=c.S_max)
    per_token = 2 * c.L * c.H_kv * c.d_h * 4

    def cont(factory):
        return long_context.stream_nll(model, windows, factory, P=EVICT_P)[:, EVICT_P - 1 :].mean(1)

    full = cont(lambda B: model.new_cache(B))
    results = {"full": {**_ppl(full), **_gram(grammaticality(model, tok, SENTENCES))}}
    for b in BUDGETS:
        kinds = {
            "H2O": lambda B, S_max=None, b=b: H2OCache(c, B, budget=b),
            "SnapKV": lambda B, S_max=None, b=b: SnapKVCache(c, B, budget=b),
            "window": lambda B, S_max=None, b=b: WindowKVCache(c, B, window=b + 1),
            "window+4 sinks": lambda B, S_max=None, b=b: WindowKVCache(c, B, window=b - 3, sinks=4),
        }
        for kind, factory in kinds.items():
            t0 = time.perf_counter()
            record = {"budget": b, **_ppl(cont(factory), full)}
            cache = factory(4)
            with torch.no_grad():
                model(windows[:4, :EVICT_P], cache)
                before = cache.bytes_read
                for t in range(EVICT_P, c.S_max):
                    step_before = cache.bytes_read
                    model(windows[:4, t : t + 1], cache)
                record["kv_bytes_last_step_measured"] = cache.bytes_read - step_before
                record["kv_bytes_decode_measured"] = cache.bytes_read - before
            record["kv_bytes_per_token"] = per_token
            if kind != "SnapKV":  # 1-token prompts: SnapKV has no prompt to compress
                record.update(_gram(grammaticality(model, tok, SENTENCES, new_cache=factory)))
            results[f"{kind} b={b}"] = _r(record)
            print(kind, b, results[f"{kind} b={b}"], f"{time.perf_counter() - t0:.0f} s", flush=True)
    return {"results": results, "prompt_tokens": EVICT_P, "windows": 128, "B_bytes": 4}


def paths() -> dict:
    """MLA's forward time, naive vs absorbed, for T new tokens after S = 32 cached ones, B = 8, one thread
    (median and minimum of 30 repeats): the shipped d_c = 8 model (d_c < d_h: absorbing never adds FLOPs) and
    the exact SVD copy of MHA with d_c = 64 (d_c > d_h: Eq. 21.4 predicts a crossover near T = 21)."""
    from minigpt.measure import time_fn

    models = {8: load_pretrained(name="minigpt-mla8-uptrained").model,
              64: latent_from_mha(load_pretrained().model, 64).eval()}
    rows = []
    S, B = 32, 8
    for d_c, model in models.items():
        for T in (1, 2, 4, 8, 16, 32, 64, 96):
            row = {"d_c": d_c, "T": T, "S": S}
            tokens = torch.randint(0, model.config.V, (B, S + T), generator=torch.Generator().manual_seed(0))
            for path in ("naive", "absorbed"):
                model.set_path(path)
                cache = model.new_cache(B)
                with torch.no_grad():
                    model(tokens[:, :S], cache)

                    def step(cache=cache, tokens=tokens, model=model):
                        cache.truncate(S)
                        model(tokens[:, S:], cache)
                    t = time_fn(step, repeats=30, warmup=5, clock="thread")
                row[path] = {"median_s": t.median_s, "min_s": t.min_s}
            rows.append(row)
            print(_r(row), flush=True)
    return {"rows": _r(rows), "B": B, "S": S}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["latent", "streaming", "eviction", "paths"])
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = {"latent": latent, "streaming": streaming, "eviction": eviction, "paths": paths}[args.what]()
    data.update(script="scripts/sweeps/measure_cache_memory.py", environment=environment("cpu", torch.float32),
                seed=fidelity.HELD_OUT_SEED)
    out = DATA / ("mla_paths_cpu.json" if args.what == "paths" else f"{args.what}_quality.json")
    sweeps.write_json(out, data)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
