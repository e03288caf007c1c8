"""The small timings: the grammar checker's speed and the shipped checkpoint's load time."""

from __future__ import annotations

import time

from minigpt import load_pretrained, measure
from minigpt.corpus import generate_sentences, is_grammatical


def small_timings() -> dict[str, float]:
    sentences = generate_sentences(1000, seed=11)
    checker = measure.time_fn(lambda: all(is_grammatical(s) for s in sentences), warmup=1, repeats=5)
    load_pretrained()  # warm the imports
    start = time.perf_counter()
    load_pretrained()
    load_s = time.perf_counter() - start
    print(f"\ngrammar checker: {checker.median_s * 1e3:.0f} ms per 1,000 sentences; "
          f"checkpoint load: {load_s * 1e3:.0f} ms")
    return {"checker_s_per_1000": checker.median_s, "checkpoint_load_s": load_s}
