"""llama.cpp's meters for MiniGPT over P and S, and the book's formulas' prediction of them (issue 27).

MiniGPT's shipped checkpoint as GGUF files (f32, f16, q8_0; `minigpt.interop.gguf`) run by llama.cpp
through llama-cpp-python with its defaults (f16 KV cache, no flash attention) and `--threads` threads.
Measured, per file type, from llama.cpp's own meters (`llama_perf_context`, the numbers of its
`prompt eval time` and `eval time` log lines):

* prompt eval: the prefill of P tokens, for P in `--P` (min/median/max of `--repeats` requests);
* eval: each decode step's share of the eval meter at S = P0 .. P0 + D - 1 cached tokens (median of
  `--repeats` requests of P0 = 4 and D = 120), and the same step's wall time seen from Python.

Agreement first: llama.cpp's logits against MiniGPT's and against the file's graph with ggml's GELU
(f32 weights with an f32 and the default f16 KV cache, f16 and q8_0 weights), and greedy continuations.

Predicted (f32 and the others, each with its bytes per weight s): Eq. (18.2), a step = t_traffic +
t_floor, one thread both dispatching and running each operator. t_traffic is Eq. (7.2)/(3.3)'s
max(bytes/BW, F/π) with BW and π from this machine's probes (torch, one thread; `measure.probe`), F the
step's FLOPs (Eq. 1.2 for a prefill of P, the decode step's at S); t_floor, llama.cpp's per-call
overhead, is *measured*: the median over the first 8 decode steps of (step − t_traffic). The decode
steps at larger S and every prefill are then predictions, compared with the meters. Fitted (labelled so):
llama.cpp's achieved matmul rate π_eff, a line through the fastest prefill of each P ≥ 8; and Chapter 8's
Eq. (8.2) over `presets.FAMILY` (f32, random weights): llama.cpp's per-step floor t0 and BW_eff, to set
beside PyTorch's (minigpt/measure/data/hardware_cpu.json).

    python scripts/sweeps/sweep_llamacpp.py --threads 1       # what the book's CPU data used
Writes minigpt/measure/data/llamacpp_cpu.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

import numpy as np
import torch

from minigpt import costs, generate, load_pretrained, measure
from minigpt.costs.params import config_param_count
from minigpt.interop import gguf as G
from minigpt.interop import llamacpp
from minigpt.measure import sweeps

#: Bytes per weight value of each file type (q8_0: 32 int8 values + one f16 scale per block = 34/32).
S_BYTES = {"f32": 4, "f16": 2, "q8_0": 34 / 32}
#: llama.cpp's default KV cache type: f16, 2 bytes per value.
S_KV = 2
FLOOR_STEPS = 8


def _spread(values: list[float]) -> dict[str, float]:
    v = sorted(values)
    return {"min": v[0], "median": statistics.median(v), "max": v[-1]}


def traffic_s(config, *, T: int, S: int, s: float, bandwidth: float, peak: float) -> float:
    """max(bytes/BW, F/π) of one llama.cpp call of T tokens after S cached ones (Eq. 3.3): the weights
    read once, the cache's S rows read, F = Eq. (1.2)'s prefill FLOPs for T > 1 (LM head at the last
    position: llama.cpp computes only the rows asked for) or the decode step's for T = 1."""
    c = config
    N = config_param_count(c)
    weights = costs.weight_bytes(N_params=N, s=s)
    kv_token = costs.of(c).kv_bytes_per_token(s=S_KV)
    if T == 1:
        return costs.decode_step_time(L=c.L, S=S, d=c.d, N_params=N, s=s, s_kv=S_KV, bandwidth=bandwidth,
                                      peak_flops=peak, H_kv=c.H_kv, d_h=c.d_h, d_ffn=c.d_ffn, V=c.V)
    flops = costs.of(c).prefill_flops(P=T)
    return costs.roofline_time(flops=flops, bytes=weights + T * kv_token, peak_flops=peak, bandwidth=bandwidth)


#: Prompts of the agreement check (greedy continuations of 24 tokens).
PROMPTS = ("Yesterday I worked", "Every morning the", "Tomorrow she will", "Yesterday I worked and he played .")


def agreement(pre, paths: dict[str, Path], threads: int) -> list[dict]:
    """Max |logit diff| of llama.cpp against MiniGPT (f32, erf GELU) and against the file's own graph with
    ggml's GELU (`reference_logits(gelu="ggml")`), at every position of a 64-token sequence; and the greedy
    continuations of `PROMPTS`, equal or where they first differ (with MiniGPT's top-2 logit gap there)."""
    tok, model = pre.tokenizer, pre.model
    ids = tok.encode(PROMPTS[-1]) + torch.randint(1, model.config.V, (57,), generator=torch.Generator().manual_seed(1)
                                                 ).tolist()
    with torch.no_grad():
        want = model(torch.tensor([ids]))[0].numpy()
    rows = []
    for ft, kv in (("f32", "f32"), ("f32", "f16"), ("f16", "f16"), ("q8_0", "f16")):
        llm = llamacpp.open_gguf(paths[ft], n_threads=threads, kv_type=kv)
        got = llamacpp.logits(llm, ids)
        ggml = G.reference_logits(paths[ft], ids, gelu="ggml")
        row = {"file_type": ft, "kv_cache": kv, "T": len(ids),
               "max_abs_vs_minigpt": float(abs(got - want).max()),
               "max_abs_vs_ggml_gelu_graph": float(abs(got - ggml).max()),
               "max_abs_logit": float(abs(want).max()), "greedy": []}
        for text in PROMPTS[:3]:
            prompt = tok.encode(text)
            mine = generate(model, torch.tensor([prompt]), 24).tokens[0]
            theirs = llamacpp.greedy(llm, prompt, 24)
            first = next((k for k in range(24) if mine[k] != theirs[k]), None)
            entry = {"prompt": text, "equal": first is None}
            if first is not None:
                with torch.no_grad():
                    last = model(torch.tensor([prompt + mine[:first]]))[0, -1]
                entry.update(first_difference=first, minigpt_gap=float(last[mine[first]] - last[theirs[first]]))
            row["greedy"].append(entry)
        print(f"{ft:>5} weights, {kv} KV: max |diff| vs MiniGPT {row['max_abs_vs_minigpt']:.2e}, vs the graph "
              f"with ggml's GELU {row['max_abs_vs_ggml_gelu_graph']:.2e}; greedy equal "
              f"{sum(e['equal'] for e in row['greedy'])}/{len(row['greedy'])}", flush=True)
        rows.append(row)
        del llm
    return rows


def family_steps(tmp: Path, threads: int, repeats: int, S: int = 32, D: int = 16) -> dict:
    """Chapter 8's fit, Eq. (8.2) t_step ≈ t0 + bytes/BW_eff, for llama.cpp: the decode step (its eval
    meter, median over D steps after S cached tokens, best of `repeats` requests) of each model of
    `presets.FAMILY` as an f32 GGUF with random weights. t0 is llama.cpp's per-step floor, measured over
    sizes (not fitted to the points it is compared with: MiniGPT alone is in the overhead regime)."""
    from minigpt.costs.presets import FAMILY
    from minigpt.runtime.tokenizer import Tokenizer

    rows = []
    for name, config in FAMILY.items():
        model = sweeps.random_model(config)
        words = ["<pad>", *(f"w{i}" for i in range(1, config.V))]
        path = G.export_gguf(model, tmp / f"family-{name}.gguf", Tokenizer(words))
        llm = llamacpp.open_gguf(path, n_threads=threads, logits_all=False)
        ids = torch.randint(1, config.V, (S,), generator=torch.Generator().manual_seed(0)).tolist()
        llamacpp.request_meters(llm, ids, 4)  # warm-up
        medians = [statistics.median(llamacpp.request_meters(llm, ids, D).step_eval_ms) / 1e3
                   for _ in range(repeats)]
        kv = costs.of(config).kv_bytes_per_token(s=S_KV)
        nbytes = costs.decode_step_bytes(weight_bytes=costs.weight_bytes(N_params=config_param_count(config), s=4),
                                         kv_bytes_per_token=kv, S=S)
        rows.append({"name": name, "config": config.to_dict(), "N_params": config_param_count(config),
                     "decode_bytes": nbytes, "step_s": min(medians), "step_s_medians": medians})
        print(f"{name:<10} {nbytes / 2**20:8.1f} MiB  step {min(medians) * 1e3:8.3f} ms", flush=True)
        del llm, model
        path.unlink()
    t0, bw_eff = sweeps.fit_step_overhead([r["decode_bytes"] for r in rows], [r["step_s"] for r in rows])
    for r in rows:
        r["fitted_s"] = t0 + r["decode_bytes"] / bw_eff
    print(f"Eq. (8.2) fitted over the family: t0 = {t0 * 1e3:.3f} ms per step, BW_eff = {bw_eff / 1e9:.1f} GB/s")
    return {"S": S, "D": D, "weights": "f32", "kv_cache": "f16", "t0_s": t0, "bw_eff": bw_eff, "models": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (and torch's, for the probes)")
    parser.add_argument("--P", type=int, nargs="+", default=[2, 4, 8, 16, 32, 64, 96, 127])
    parser.add_argument("--D", type=int, default=120, help="decode steps after a prompt of 4 tokens")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--file-types", nargs="+", default=list(G.FILE_TYPES), choices=G.FILE_TYPES)
    parser.add_argument("--out", type=Path,
                        default=sweeps.sweep_output("llamacpp"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    why = llamacpp.unavailable()
    if why:
        raise SystemExit(f"llama.cpp cannot run here: {why}")
    pre = load_pretrained()
    c = pre.model.config
    if 4 + args.D > c.S_max or max(args.P) > c.S_max:
        raise SystemExit(f"--P and 4 + --D must be at most S_max={c.S_max}")
    probe = measure.probe(device="cpu", dtype=torch.float32)
    bw, peak = probe["bandwidth"], probe["peak_flops"]
    print(f"llama.cpp {llamacpp.llama_cpp_version()['llama_cpp_python']}, threads {args.threads}; "
          f"probes: {bw / 1e9:.1f} GB/s, {peak / 1e9:.1f} GFLOP/s")
    g = torch.Generator().manual_seed(0)
    prompt = torch.randint(1, c.V, (c.S_max,), generator=g).tolist()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {ft: G.export_gguf(pre.model, Path(tmp) / f"minigpt-{ft}.gguf", pre.tokenizer, file_type=ft)
                 for ft in G.FILE_TYPES}
        agree = agreement(pre, paths, args.threads)
        family = family_steps(Path(tmp), args.threads, args.repeats)
        for ft in args.file_types:
            path = paths[ft]
            llm = llamacpp.open_gguf(path, n_threads=args.threads, logits_all=False)
            llamacpp.request_meters(llm, prompt[:16], 8)  # warm-up
            prefill = {P: [] for P in args.P}
            steps: list[list[float]] = [[] for _ in range(args.D)]
            walls: list[list[float]] = [[] for _ in range(args.D)]
            logs = []
            for _ in range(args.repeats):  # interleaved: every P, then a long decode, per repeat
                for P in args.P:
                    m = llamacpp.request_meters(llm, prompt[:P], 1)
                    prefill[P].append(m.prompt_eval_ms / 1e3)
                m = llamacpp.request_meters(llm, prompt[:4], args.D)
                logs = m.log_lines()
                for k in range(args.D):
                    steps[k].append(m.step_eval_ms[k] / 1e3)
                    walls[k].append(m.wall_steps_s[k])
            s = S_BYTES[ft]
            step_med = [statistics.median(v) for v in steps]
            traffic = [traffic_s(c, T=1, S=4 + k, s=s, bandwidth=bw, peak=peak) for k in range(args.D)]
            floor = statistics.median(step_med[k] - traffic[k] for k in range(FLOOR_STEPS))
            rows_p = []
            for P in args.P:
                pred = floor + traffic_s(c, T=P, S=0, s=s, bandwidth=bw, peak=peak)
                rows_p.append({"P": P, "prompt_eval_s": _spread(prefill[P]), "predicted_s": pred,
                               "measured_over_predicted": statistics.median(prefill[P]) / pred})
            # Fitted, not predicted: t = t0 + F(P)/π_eff through the fastest prefill of each P ≥ 8 (the least
            # disturbed by the other processes of a shared machine), π_eff llama.cpp's achieved matmul rate.
            big = [P for P in args.P if P >= 8]
            slope, t0 = np.polyfit([costs.of(c).prefill_flops(P=P) for P in big], [min(prefill[P]) for P in big], 1)
            fit = {"t0_s": float(t0), "pi_eff": float(1 / slope), "of_probe": float(1 / slope / peak), "P": big}
            rows_d = [{"S": 4 + k, "eval_s": _spread(steps[k]), "wall_s": _spread(walls[k]),
                       "predicted_s": floor + traffic[k],
                       "measured_over_predicted": step_med[k] / (floor + traffic[k])} for k in range(args.D)]
            results[ft] = {"s": s, "floor_s": floor, "prefill": rows_p, "prefill_fit": fit, "decode": rows_d,
                           "log_lines": logs}
            print(f"\n{ft}: llama.cpp's floor (median of step - traffic, first {FLOOR_STEPS} steps) "
                  f"{floor * 1e3:.3f} ms; {logs[0].strip()} | {logs[1].strip()}")
            print(f"prefill fitted through the fastest runs (P >= 8): {t0 * 1e3:.3f} ms + F/π_eff, π_eff = "
                  f"{1 / slope / 1e9:.1f} GFLOP/s = {1 / slope / peak:.1%} of the probe")
            print(f"{'P':>5} {'prompt eval ms':>22} {'predicted':>10} {'meas/pred':>10}")
            for r in rows_p:
                e = r["prompt_eval_s"]
                print(f"{r['P']:>5} {e['median'] * 1e3:8.3f} [{e['min'] * 1e3:.3f}-{e['max'] * 1e3:.3f}] "
                      f"{r['predicted_s'] * 1e3:10.3f} {r['measured_over_predicted']:10.2f}")
            print(f"{'S':>5} {'eval ms':>22} {'wall ms':>9} {'predicted':>10} {'meas/pred':>10}")
            for r in rows_d[:: max(1, args.D // 8)] + [rows_d[-1]]:
                e = r["eval_s"]
                print(f"{r['S']:>5} {e['median'] * 1e3:8.3f} [{e['min'] * 1e3:.3f}-{e['max'] * 1e3:.3f}] "
                      f"{r['wall_s']['median'] * 1e3:9.3f} {r['predicted_s'] * 1e3:10.3f} "
                      f"{r['measured_over_predicted']:10.2f}")
            del llm
    sweeps.write_json(args.out, {
        "script": "scripts/sweeps/sweep_llamacpp.py",
        "environment": {**measure.environment("cpu", torch.float32), **llamacpp.llama_cpp_version()},
        "threads": args.threads, "repeats": args.repeats, "kv_cache": "f16", "flash_attn": False,
        "probe": probe, "config": c.to_dict(), "N_params": config_param_count(c),
        "load": f"{os.getloadavg()[0]:.1f} (1-minute load average at the end)",
        "agreement": agree, "family": family, "file_types": results,
    })
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
