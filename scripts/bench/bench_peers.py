"""MiniGPT eager and compiled against transformers and llama.cpp (issues 14, 27): tok/s, overhead floor, bandwidth."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from minigpt import MiniGPT, ModelConfig, costs, generate, load_pretrained, measure
from minigpt.costs.presets import FAMILY, SCALED
from minigpt.measure import overhead, sweeps
from minigpt.runtime.compiled import StaticDecoder


def peer_models(device: torch.device) -> dict[str, MiniGPT]:
    """The shipped MiniGPT, the scaled config and Chapter 8's larger family members (random weights)."""
    models = {"MiniGPT (shipped)": load_pretrained(device=device).model,
              "scaled L=8 d=512": sweeps.random_model(SCALED, device=device)}
    for name, cfg in FAMILY.items():
        if cfg.d > ModelConfig().d and cfg.d != SCALED.d:
            models[name] = sweeps.random_model(cfg, device=device)
    return models


def _spread(times: list[float], D: int) -> dict[str, float]:
    rates = sorted(D / t for t in times)
    return {"tok_s": statistics.median(rates), "tok_s_min": rates[0], "tok_s_max": rates[-1]}


def peers(models: dict[str, MiniGPT], P: int, D: int, repeats: int, device: torch.device) -> list[dict]:
    """Greedy D-token generations (prefill included) per model: MiniGPT eager, compiled, transformers GPT-2."""
    import transformers

    from minigpt.interop.hf import export_gpt2

    print(f"\npeers: greedy, P={P}, D={D}, tok/s = D / (prefill + D-1 steps); median [min-max] of {repeats} "
          "interleaved repeats")
    from minigpt.interop import llamacpp

    why_not = llamacpp.unavailable() if device.type == "cpu" else "llama.cpp's wheel here is CPU-only"
    engine = "" if why_not else f" {'llama.cpp':>16}"
    print(f"{'model':<18} {'eager':>16} {'compiled':>16} {'transformers':>16}{engine} {'eager/hf':>9} "
          f"{'comp/eager':>11} {'compile s':>10} {'same':>5}")
    if why_not:
        print(f"(no llama.cpp column: {why_not})")
    gguf_dir = tempfile.TemporaryDirectory()  # llama.cpp maps its file: kept until the table is done
    rows = []
    for name, model in models.items():
        prompt = torch.randint(0, model.config.V, (1, P), generator=torch.Generator().manual_seed(0)).to(device)
        with tempfile.TemporaryDirectory() as tmp:
            hf = transformers.GPT2LMHeadModel.from_pretrained(export_gpt2(model, tmp), local_files_only=True)
        hf = hf.to(device).eval()
        decoder = StaticDecoder(model, 1, S_max=P + D - 1)
        mask = torch.ones_like(prompt)
        runs: dict[str, Callable[[], list[int]]] = {
            "eager": lambda m=model, p=prompt: generate(m, p, D).tokens[0],
            "compiled": lambda dec=decoder, p=prompt: dec.generate(p, D)[0].tolist(),
            "transformers": lambda h=hf, p=prompt, a=mask: h.generate(
                p, attention_mask=a, max_new_tokens=D, min_new_tokens=D, do_sample=False)[0, P:].tolist(),
        }
        if not why_not:  # llama.cpp on the same weights (f32 GGUF, its default f16 KV cache), torch's threads
            from minigpt.interop.gguf_write import export_gguf
            from minigpt.runtime.tokenizer import Tokenizer

            words = ["<pad>", *(f"w{i}" for i in range(1, model.config.V))]
            path = export_gguf(model, Path(gguf_dir.name) / f"{len(rows)}.gguf", Tokenizer(words))
            llm = llamacpp.open_gguf(path, n_threads=torch.get_num_threads(), logits_all=False)
            ids = prompt[0].tolist()
            runs["llama.cpp"] = lambda e=llm, p=ids: llamacpp.greedy(e, p, D)
        with torch.no_grad():
            tokens = {k: run() for k, run in runs.items()}  # warm-up; the compiled step compiles here
            times: dict[str, list[float]] = {k: [] for k in runs}
            for _ in range(repeats):
                for k, run in runs.items():
                    start = time.perf_counter()
                    run()
                    measure.sync(device)
                    times[k].append(time.perf_counter() - start)
        r = {k: _spread(v, D) for k, v in times.items()}
        same = tokens["eager"] == tokens["compiled"] == tokens["transformers"]
        if "llama.cpp" in runs:  # its GELU is the tanh form (minigpt.interop.gguf): a near tie may differ
            r["llama.cpp"]["tokens_agree"] = tokens["llama.cpp"] == tokens["eager"]
        row = {"model": name, "config": model.config.to_dict(), "P": P, "D": D, "repeats": repeats,
               **{k: {**v, "times_s": times[k]} for k, v in r.items()},
               "eager_over_transformers": r["eager"]["tok_s"] / r["transformers"]["tok_s"],
               "compiled_over_eager": r["compiled"]["tok_s"] / r["eager"]["tok_s"],
               "compile_s": decoder.compile_s, "tokens_agree": same,
               "overhead_floor": overhead.overhead_floor(model, S=P, repeats=10).to_record()}
        row["overhead_floor"]["kinds"] = overhead.kind_counts(row["overhead_floor"]["ops"])
        cells = " ".join(f"{r[k]['tok_s']:.0f} [{r[k]['tok_s_min']:.0f}-{r[k]['tok_s_max']:.0f}]".rjust(16)
                         for k in runs)
        print(f"{name:<18} {cells} {row['eager_over_transformers']:>8.2f}x {row['compiled_over_eager']:>10.2f}x"
              f" {decoder.compile_s:>10.1f} {'yes' if same else 'NO':>5}", flush=True)
        rows.append(row)
    gguf_dir.cleanup()
    print(f"\n{'model':<18} {'ops/step':>9} {'kernels':>8} {'views':>6} {'syncs':>6} {'t_op (us)':>10} "
          f"{'floor (ms)':>11} {'eager step (ms)':>16} {'explained':>10}")
    for row in rows:
        f = row["overhead_floor"]
        k = f["kinds"]
        print(f"{row['model']:<18} {f['n_ops']:>9} {k['kernel']:>8} {k['view']:>6} {k['sync']:>6} "
              f"{f['per_op_s'] * 1e6:>10.2f} {f['floor_s'] * 1e3:>11.3f} {f['measured_s'] * 1e3:>16.3f} "
              f"{f['explained']:>9.0%}")
    print("The floor is n_ops x the cheapest operator; where the rest of the step goes (module calls, the\n"
          "other operators' Python, the matmuls): scripts/sweeps/sweep_overhead.py --breakdown, Chapter 18 Step 2b.")
    return rows


def achieved_bandwidth(model: MiniGPT, name: str, bandwidth: float, S: int, repeats: int) -> dict:
    """Batch-1 decode at S cached tokens: bytes per step / step time, over the probe's bandwidth, eager and compiled."""
    kv = costs.of(model.config).kv_bytes_per_token(s=model.dtype.itemsize)
    weights = measure.module_bytes(model)
    eager_t = sweeps.time_decode_step(model, B=1, S=S, warmup=3, repeats=repeats).median_s
    decoder = StaticDecoder(model, 1, S_max=S + 1)
    compiled_t = overhead.time_static_step(decoder, S=S, repeats=repeats).median_s
    eager_bytes = costs.decode_step_bytes(weight_bytes=weights, kv_bytes_per_token=kv, S=S, B=1)
    static_bytes = costs.decode_step_bytes(weight_bytes=weights, kv_bytes_per_token=kv, S=S + 1, B=1)  # all rows
    row = {"model": name, "config": model.config.to_dict(), "S": S, "probe_bytes_s": bandwidth}
    print(f"\nbatch-1 decode bandwidth, {name} at S={S} (weights {weights / 2**20:.0f} MiB), "
          f"probe {bandwidth / 1e9:.1f} GB/s (gpt-fast's anchor: 0.82 of peak on an A100)")
    for k, t, nbytes in (("eager", eager_t, eager_bytes), ("compiled", compiled_t, static_bytes)):
        row[k] = {"step_s": t, "bytes": nbytes, "bytes_s": nbytes / t, "of_probe": nbytes / t / bandwidth}
        print(f"  {k:<9} step {t * 1e3:8.2f} ms  {nbytes / t / 1e9:6.2f} GB/s  {nbytes / t / bandwidth:6.0%} of probe")
    return row


#: Issue 14's targets, reported (never asserted): name -> target.
TARGETS = {
    "eager >= 2x transformers (MiniGPT)": 2.0,
    "compiled >= 5x eager (MiniGPT)": 5.0,
    "compiled batch-1 bandwidth >= 0.75 of probe (largest)": 0.75,
}


def targets(peer_rows: list[dict], bandwidth_row: dict) -> dict[str, dict]:
    """Each target with its measured value and measured / target (>= 1: met)."""
    mini = peer_rows[0]
    values = [mini["eager_over_transformers"], mini["compiled_over_eager"], bandwidth_row["compiled"]["of_probe"]]
    out = {}
    print("\ntargets (reported, not asserted):")
    for (name, target), value in zip(TARGETS.items(), values, strict=True):
        out[name] = {"target": target, "measured": value, "of_target": value / target, "met": value >= target}
        print(f"  {name:<55} measured {value:6.2f}  target {target:5.2f}  {'met' if value >= target else 'MISSED'}"
              f" ({value / target:.0%} of target)")
    return out
