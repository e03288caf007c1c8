"""Part III's quality measurements, too slow for a notebook cell on a shared CPU; the chapters load the JSON.

    python scripts/measure_quality.py kv         # Chapter 10: fp32, int8, int4 caches of the shipped MiniGPT
    python scripts/measure_quality.py variants   # Chapter 9: the shipped MHA model and its GQA/MQA variants

`kv` writes chapters/data/kv_quant_quality.json: held-out perplexity (Eq. 10.3), logit error and mean KL
against the fp32 cache (Eq. 10.2), greedy agreement with the fp32 cache, grammaticality of sampled text.
`variants` writes chapters/data/gqa_quality.json: perplexity, greedy agreement with the MHA model,
grammaticality, and each checkpoint's training record (its card). Everything runs on the CPU, 1 thread.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict
from pathlib import Path

import torch

from minigpt import load_pretrained
from minigpt.corpus import fidelity
from minigpt.corpus.quality import grammaticality
from minigpt.measure import environment, sweeps

DATA = Path(__file__).resolve().parents[1] / "chapters" / "data"
VARIANTS = ("minigpt", "minigpt-gqa2", "minigpt-mqa", "minigpt-gqa2-uptrained", "minigpt-mqa-uptrained")
WINDOWS, PROMPT, D, SENTENCES = 64, 8, 60, 1000


def _rounded(record: dict) -> dict:
    return {k: float(f"{v:.6g}") if isinstance(v, float) else v for k, v in record.items()}


def kv() -> dict:
    pre = load_pretrained()
    model, tok = pre.model, pre.tokenizer
    windows = fidelity.held_out_windows(tok, n=WINDOWS, T=model.config.S_max)
    results = {}
    for kind in ("fp32", "int8", "int4"):
        factory = fidelity.cache_factory(model.config, kind)
        t0 = time.perf_counter()
        err = fidelity.logit_error(model, windows, factory)
        agree = fidelity.greedy_agreement(model, windows[:, :PROMPT], D, factory)
        gram = grammaticality(model, tok, SENTENCES, new_cache=factory)
        results[kind] = _rounded({
            "perplexity": fidelity.perplexity(model, windows, factory), **asdict(err),
            "greedy_equal": agree.equal, "greedy_tokens": agree.tokens,
            "greedy_mean_first_difference": agree.mean_first_difference,
            "grammatical": gram.n_grammatical, "sentences": gram.n_sentences,
        })
        print(kind, results[kind], f"{time.perf_counter() - t0:.0f} s")
    return {"results": results}


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
    data.update(script="scripts/measure_quality.py", environment=environment("cpu", torch.float32),
                windows=WINDOWS, window_tokens=128, prompt_tokens=PROMPT, D=D, seed=fidelity.HELD_OUT_SEED)
    out = DATA / ("kv_quant_quality.json" if args.what == "kv" else "gqa_quality.json")
    sweeps.write_json(out, data)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
