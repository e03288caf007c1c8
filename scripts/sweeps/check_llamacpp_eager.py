"""llama.cpp against eager PyTorch on the same weights, interleaved and timed by one clock (issue 27).

`scripts/sweeps/sweep_llamacpp.py` records llama.cpp's decode step over the family by its own wall clock;
Chapter 8's eager steps come from another run (`sweep_hardware.py`, the thread's CPU time, another
day). At the largest models the two records disagree by about 2x. This check removes both
differences for two of the family's models: in one process, each repeat times eager PyTorch's decode
step (the best of 5 calls, `time.perf_counter`) and then one llama.cpp request (the median of its
decode steps on llama.cpp's eval meter, also a wall clock), at S = 32 cached tokens, B = 1, one
thread, with the model's weights as f32 and as f16 GGUF files (llama.cpp's default f16 KV cache).

    python scripts/sweeps/check_llamacpp_eager.py
Writes minigpt/measure/data/llamacpp_vs_eager_cpu.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from minigpt import measure
from minigpt.costs.presets import FAMILY
from minigpt.interop import gguf as G
from minigpt.interop import llamacpp
from minigpt.measure import sweeps
from minigpt.runtime.generate import decode_step
from minigpt.runtime.tokenizer import Tokenizer

S = 32
STEPS = 8


def eager_step_s(model, token: torch.Tensor, cache) -> float:
    """One eager decode step after S cached tokens, wall clock; the cache is cut back to S after it."""
    t0 = time.perf_counter()
    with torch.no_grad():
        decode_step(model, token, cache)
    dt = time.perf_counter() - t0
    cache.truncate(S)
    return dt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["L8-d512", "L12-d768"], choices=list(FAMILY))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=sweeps.DATA_DIR / "llamacpp_vs_eager_cpu.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    why = llamacpp.unavailable()
    if why:
        raise SystemExit(f"llama.cpp cannot run here: {why}")
    load_start = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            config = FAMILY[name]
            model = sweeps.random_model(config)
            words = ["<pad>", *(f"w{i}" for i in range(1, config.V))]
            ids = torch.randint(1, config.V, (S,), generator=torch.Generator().manual_seed(0)).tolist()
            cache = sweeps.filled_cache(model, B=1, S=S)
            token = torch.zeros(1, dtype=torch.long)

            for file_type in ("f32", "f16"):
                path = G.export_gguf(model, Path(tmp) / f"{name}-{file_type}.gguf", Tokenizer(words),
                                     file_type=file_type)
                llm = llamacpp.open_gguf(path, n_threads=1, logits_all=False)
                llamacpp.request_meters(llm, ids, 4)  # warm-up
                eager_step_s(model, token, cache)
                eager, cpp = [], []
                for _ in range(args.repeats):  # interleaved: load hits both alike
                    eager.append(min(eager_step_s(model, token, cache) for _ in range(5)))
                    cpp.append(statistics.median(llamacpp.request_meters(llm, ids, STEPS).step_eval_ms) / 1e3)
                rows.append({"name": name, "file_type": file_type, "eager_s": eager, "llamacpp_s": cpp})
                print(f"{name:<10} {file_type}: llama.cpp {statistics.median(cpp) * 1e3:7.2f} ms, eager "
                      f"{statistics.median(eager) * 1e3:7.2f} ms (medians of {args.repeats})", flush=True)
                del llm
                path.unlink()
    sweeps.write_json(args.out, {
        "script": "scripts/sweeps/check_llamacpp_eager.py",
        "environment": {**measure.environment("cpu", torch.float32), **llamacpp.llama_cpp_version()},
        "clock": "wall", "S": S, "B": 1, "threads": 1, "kv_cache": "f16", "steps_per_request": STEPS,
        "repeats": args.repeats,
        "load": f"{load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end (1-minute load average)",
        "rows": rows,
    })
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
