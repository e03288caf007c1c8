"""Part III's quality measurements, too slow for a notebook cell on a shared CPU; the chapters load the JSON.

    python scripts/sweeps/measure_quality.py kv         # Chapter 10: fp32, int8, int4 caches of the shipped MiniGPT
    python scripts/sweeps/measure_quality.py variants   # Chapter 9: the shipped MHA model and its GQA/MQA variants

`kv` writes minigpt/measure/data/kv_quant_quality.json for every cache kind (fp32, int8, int4, keys per channel
int8-kivi/int4-kivi, fp8): held-out perplexity (Eq. 10.4) and its paired difference from fp32, mean KL against
the fp32 cache (Eq. 10.3), greedy agreement with the fp32 cache, grammaticality of sampled text, each with a
95 % interval (about 5 minutes on one core).
`variants` writes minigpt/measure/data/gqa_quality.json: perplexity, greedy agreement with the MHA model,
grammaticality, and each checkpoint's training record (its card). Everything runs on the CPU, 1 thread.
"""

from __future__ import annotations

import argparse
import math
import time

import torch

from minigpt import load_pretrained
from minigpt.corpus import fidelity
from minigpt.corpus.quality import grammaticality
from minigpt.measure import environment, sweeps

DATA = sweeps.DATA_DIR  # the package's sweep data, minigpt/measure/data
VARIANTS = ("minigpt", "minigpt-gqa2", "minigpt-mqa", "minigpt-gqa2-uptrained", "minigpt-mqa-uptrained")
WINDOWS, PROMPT, D, SENTENCES = 64, 8, 60, 1000
KV_WINDOWS, KV_PROMPTS = 256, 128  # enough to separate int4 from int8 and fp32 (see the intervals in the JSON)


def _rounded(record: dict) -> dict:
    return {k: float(f"{v:.6g}") if isinstance(v, float) else v for k, v in record.items()}


def kv() -> dict:
    """Every cache kind against the fp32 cache, each number with its 95 % interval over windows or prompts:
    paired per-window differences of log perplexity, per-window KL, per-prompt greedy agreement, and the
    Wilson interval of the grammatical fraction."""
    pre = load_pretrained()
    model, tok = pre.model, pre.tokenizer
    windows = fidelity.held_out_windows(tok, n=KV_WINDOWS, T=model.config.S_max)
    prompts = windows[:KV_PROMPTS, :PROMPT]
    base_nll = fidelity.window_nll(model, windows)
    base_greedy = fidelity.greedy_tokens(model, prompts, D)
    results = {}
    for kind in fidelity.CACHE_KINDS:
        factory = fidelity.cache_factory(model.config, kind)
        t0 = time.perf_counter()
        nll = fidelity.window_nll(model, windows, factory)
        kl = fidelity.window_kl(model, windows, factory)
        err = fidelity.logit_error(model, windows[:WINDOWS], factory)
        greedy = fidelity.greedy_tokens(model, prompts, D, factory)
        equal = [sum(a == b for a, b in zip(x, y, strict=True)) / D for x, y in zip(greedy, base_greedy, strict=True)]
        first = [next((i for i, (a, b) in enumerate(zip(x, y, strict=True)) if a != b), D)
                 for x, y in zip(greedy, base_greedy, strict=True)]
        gram = grammaticality(model, tok, SENTENCES, new_cache=factory)
        log_ppl, log_ppl_ci = fidelity.mean_ci(nll)
        record = {
            "perplexity": math.exp(log_ppl),
            "perplexity_ci": [math.exp(log_ppl - log_ppl_ci), math.exp(log_ppl + log_ppl_ci)],
            **_with_ci("delta_log_ppl", nll - base_nll), **_with_ci("mean_kl", kl),
            "max_abs": err.max_abs, "mean_abs": err.mean_abs,  # over the first WINDOWS windows
            **_with_ci("greedy_agreement", equal), **_with_ci("greedy_first_difference", first),
            "grammatical": gram.n_grammatical, "sentences": gram.n_sentences,
            "grammatical_ci": list(fidelity.wilson_ci(gram.n_grammatical, gram.n_sentences)),
            "bytes_per_value": round(factory(1, model.config.S_max).s, 4),
        }
        results[kind] = {k: _rounded_value(v) for k, v in record.items()}
        print(kind, results[kind], f"{time.perf_counter() - t0:.0f} s")
    return {"results": results, "windows": KV_WINDOWS, "prompts": KV_PROMPTS,
            "intervals": "95 %: mean ± 1.96·sd/√n over windows (log perplexity, its paired difference from fp32, "
                         "KL) or prompts (greedy); Wilson for the grammatical fraction"}


def _with_ci(name: str, samples: object) -> dict[str, float]:
    mean, half = fidelity.mean_ci(samples)
    return {name: mean, f"{name}_ci": half}


def _rounded_value(v: object) -> object:
    if isinstance(v, float):
        return float(f"{v:.6g}")
    if isinstance(v, list):
        return [_rounded_value(x) for x in v]
    return v


def variants() -> dict:
    base = load_pretrained(name="minigpt")
    windows = fidelity.held_out_windows(base.tokenizer, n=WINDOWS, T=base.model.config.S_max)
    results = {}
    for name in VARIANTS:
        pre = load_pretrained(name=name)
        model, card = pre.model, pre.card
        agree = fidelity.greedy_agreement(model, windows[:, :PROMPT], D, baseline_model=base.model)
        gram = grammaticality(model, pre.tokenizer, SENTENCES)
        results[name] = _rounded({
            "H_kv": model.config.H_kv, "perplexity": fidelity.perplexity(model, windows),
            "greedy_equal": agree.equal, "greedy_tokens": agree.tokens,
            "greedy_mean_first_difference": agree.mean_first_difference,
            "grammatical": gram.n_grammatical, "sentences": gram.n_sentences,
            "train_steps": card["train_config"]["steps"], "train_seconds": card.get("train_seconds"),
            "uptrained_from": card.get("uptrained_from"),
        })
        results[name]["train_log"] = card["train_log"]
        print(name, {k: v for k, v in results[name].items() if k != "train_log"})
    return {"results": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["kv", "variants"])
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = kv() if args.what == "kv" else variants()
    data = {"windows": WINDOWS, **data}
    data.update(script="scripts/sweeps/measure_quality.py", environment=environment("cpu", torch.float32),
                window_tokens=128, prompt_tokens=PROMPT, D=D, seed=fidelity.HELD_OUT_SEED)
    out = DATA / ("kv_quant_quality.json" if args.what == "kv" else "gqa_quality.json")
    sweeps.write_json(out, data)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
