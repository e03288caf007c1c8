"""Chapter 19's sweep: goodput colocated against prefill and decode apart, measured on MiniGPT and replayed.

- MiniGPT, measured here: one Poisson trace per rate, `--repeats` times (medians, each run kept), served
  (a) by one colocated engine in this process (its clock: each step's wall time, idle gaps jumped) and
  (b) disaggregated, 1 prefill + 1 decode worker (`minigpt.distributed.disagg`, gloo, wall clock), and
  at one rate 2 + 2. The SLOs are set from
  the colocated engine at the lowest rate: TTFT ≤ `--ttft-x` × its P90 TTFT, TPOT ≤ `--tpot-x` × its
  P90 TPOT. This machine's CPU cores are shared: the driver and both workers compete with each other
  (and with anyone else) for them, which a cluster of separate GPUs would not.
- Llama-2-7B and Llama-3-8B on H100 SXM, replayed (`minigpt.serving.goodput`: the engine's replay clock,
  the transfer priced by Eq. 19.2 over a link preset): per-chip goodput (Eq. 19.4, 90 % attainment) of a
  colocated replica (chunked prefill, and whole prefills) and of prefill:decode ratios, for long and for
  short prompts; then the best ratio's goodput over each link.

Writes minigpt/measure/data/disagg_<device>.json.

    python scripts/sweeps/sweep_disagg.py --threads 1
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import torch

from minigpt import costs, load_pretrained, measure
from minigpt.costs.presets import HARDWARE, KV_LINKS, MODELS
from minigpt.distributed import disagg
from minigpt.measure import sweeps
from minigpt.measure.sweep_files import PRESETS_KEY, preset_record
from minigpt.serving import Engine, EngineConfig, Request
from minigpt.serving import goodput as G
from minigpt.serving.replay import replay_blocks
from minigpt.serving.trace import poisson_trace

REPLAY_LINKS = ("NVLink 4 (H100 SXM)", "PCIe Gen5 x16 (peer)", "InfiniBand NDR 400 Gb/s", "100 GbE")
RATIOS = ((1, 1), (1, 2), (2, 1), (1, 3))
WORKLOADS = {
    "long prompts": {"P": (1024, 3072), "D": (32, 128), "rates": (2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 20.0)},
    "short prompts": {"P": (16, 128), "D": (32, 128), "rates": (16.0, 32.0, 64.0, 96.0, 128.0, 192.0, 256.0)},
}
SHORT_FOR = ("Llama-2-7B",)  # the short-prompt workload is replayed for these models only (time)
SLO = {"ttft_s": 0.4, "tpot_s": 0.025, "source": "chatbot-like SLOs in the spirit of DistServe's (TTFT a few tenths "
       "of a second, TPOT below a reading pace); chosen here, not taken from a paper"}


def summary(records: list[Any], slo: dict[str, float]) -> dict[str, float]:
    import math
    return {**G.p90(records), "attainment": G.attainment(records, ttft_slo=slo["ttft_s"], tpot_slo=slo["tpot_s"]),
            "finished": sum(1 for x in G.latencies(records) if math.isfinite(x.ttft_s))}


def medians(rate: float, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One row per rate: the median of each number over the repeats, and every run's value beside it."""
    row: dict[str, Any] = {"rate": rate, "repeats": len(runs)}
    for key in runs[0]:
        values = [r[key] for r in runs]
        row[key] = statistics.median(values)
        row[f"{key}_runs"] = values
    return row


def measured(args: Any) -> dict[str, Any]:
    model = load_pretrained().model
    rates = args.rates
    c = model.config
    kv = {"L": c.L, "H_kv": c.H_kv, "d_h": c.d_h, "s": 4}

    def trace(rate: float) -> list[Request]:
        return poisson_trace(args.requests, rate=rate, seed=11, P=(8, 100), D=(8, 28))

    def colocated(rate: float) -> list[Any]:
        engine = Engine.for_model(model, num_blocks=64, config=EngineConfig(max_batch=8))
        return engine.run([Request(r.id, r.prompt, r.max_new_tokens, arrival_s=r.arrival_s) for r in trace(rate)])

    base = G.p90(colocated(rates[0]))
    slo = {"ttft_s": args.ttft_x * base["ttft_p90_s"], "tpot_s": args.tpot_x * base["tpot_p90_s"]}
    out: dict[str, Any] = {"rates": list(rates), "requests": args.requests, "slo": slo,
                           "slo_rule": f"TTFT <= {args.ttft_x} x and TPOT <= {args.tpot_x} x the colocated P90 "
                           f"at {rates[0]} req/s", "colocated": [], "disagg_1_1": [], "disagg_2_2": [],
                           "load_average_before": os.getloadavg()}
    print("SLO", slo, flush=True)
    for rate in rates:
        t0 = time.perf_counter()
        col, dis = [], []
        for _ in range(args.repeats):
            col.append(summary(colocated(rate), slo))
            run = disagg.serve(trace(rate), disagg.DisaggConfig(1, 1, num_blocks=64), timeout_s=240)
            dis.append({**summary(run.records, slo), "kv_bytes": run.kv_bytes,
                        "kv_bytes_formula": sum(costs.kv_transfer_bytes(**kv, P=r.P) for r in trace(rate)
                                                if r.max_new_tokens > 1),
                        "prefill_busy_s": run.workers[1]["busy_s"], "decode_busy_s": run.workers[2]["busy_s"],
                        "span_s": run.span_s})
        out["colocated"].append(medians(rate, col))
        out["disagg_1_1"].append(medians(rate, dis))
        print(rate, out["colocated"][-1], out["disagg_1_1"][-1], f"{time.perf_counter() - t0:.1f} s", flush=True)
    rate = rates[len(rates) // 2]
    run = disagg.serve(trace(rate), disagg.DisaggConfig(2, 2, num_blocks=64), timeout_s=240)
    out["disagg_2_2"].append({"rate": rate, **summary(run.records, slo), "kv_bytes": run.kv_bytes})
    print("2+2", out["disagg_2_2"][-1], flush=True)
    out["load_average_after"] = os.getloadavg()
    for key, chips in (("colocated", 1), ("disagg_1_1", 2), ("disagg_2_2", 4)):
        rows = out[key]
        out[f"goodput_{key}"] = costs.goodput(rates=[r["rate"] for r in rows],
                                                attainments=[r["attainment"] for r in rows], chips=1)
        out[f"chips_{key}"] = chips
    return out


def replayed(requests: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The replayed section (predicted: the engine's replay clock) and the record of the presets it read
    (`preset_record`)."""
    hw = HARDWARE["H100 SXM"]
    used: list[Any] = [hw]
    out: dict[str, Any] = {"chip": hw.name, "slo": SLO, "models": {}, "pool_blocks": {}}
    for name in ("Llama-2-7B", "Llama-3-8B"):
        m = MODELS[name]
        used.append(m)
        # every replayed chip's pool (Engine.replay's default: blocks of 16 beside the weights, Eq. 2.4)
        out["pool_blocks"][name] = replay_blocks(m, hw)
        per_model: dict[str, Any] = {}
        for wname, w in WORKLOADS.items():
            if wname == "short prompts" and name not in SHORT_FOR:
                continue
            def trace(rate: float, w=w, m=m) -> list[Request]:
                return poisson_trace(requests, rate=rate, seed=3, P=w["P"], D=w["D"], V=m.V)

            def curve(serve, chips: int, w=w) -> dict[str, Any]:
                rates = [r * chips for r in w["rates"]]
                return G.goodput_curve(trace, rates, serve, ttft_slo=SLO["ttft_s"], tpot_slo=SLO["tpot_s"],
                                       chips=chips)

            res: dict[str, Any] = {"P": list(w["P"]), "D": list(w["D"]), "per_chip_rates": list(w["rates"])}
            res["colocated_chunked"] = curve(lambda tr, m=m: G.replay_colocated(
                tr, m, hw, config=EngineConfig(max_batch=64, chunk_size=512)), 1)
            res["colocated_whole"] = curve(lambda tr, m=m: G.replay_colocated(
                tr, m, hw, config=EngineConfig(max_batch=64)), 1)
            link = KV_LINKS["InfiniBand NDR 400 Gb/s"]
            used.extend([link, *(KV_LINKS[lname] for lname in REPLAY_LINKS)])
            res["ratios"] = {}
            for p, d in RATIOS:
                res["ratios"][f"{p}:{d}"] = curve(lambda tr, m=m, p=p, d=d, link=link: G.replay_disaggregated(
                    tr, m, hw, link, prefill=p, decode=d, decode_config=EngineConfig(max_batch=64)), p + d)
            best = max(res["ratios"], key=lambda k: res["ratios"][k]["goodput_per_chip"])
            res["best_ratio"] = best
            p, d = (int(x) for x in best.split(":"))
            res["links"] = {}
            for lname in REPLAY_LINKS:
                res["links"][lname] = curve(lambda tr, m=m, p=p, d=d, lk=KV_LINKS[lname]: G.replay_disaggregated(
                    tr, m, hw, lk, prefill=p, decode=d, decode_config=EngineConfig(max_batch=64)), p + d)
            per_model[wname] = res
            print(name, wname, {k: (v["goodput_per_chip"] if isinstance(v, dict) and "goodput_per_chip" in v else v)
                                for k, v in res.items() if k not in ("ratios", "links")},
                  {k: v["goodput_per_chip"] for k, v in res["ratios"].items()},
                  {k: v["goodput_per_chip"] for k, v in res["links"].items()}, flush=True)
        out["models"][name] = per_model
    return out, preset_record(*used, script="scripts/sweeps/sweep_disagg.py")


def main() -> None:
    parser = sweeps.sweep_arguments(__doc__)
    parser.add_argument("--requests", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3, help="runs per rate (medians, each run kept)")
    parser.add_argument("--rates", type=float, nargs="+", default=[10.0, 20.0, 40.0, 80.0])
    parser.add_argument("--ttft-x", type=float, default=5.0)
    parser.add_argument("--tpot-x", type=float, default=2.0)
    parser.add_argument("--replay-requests", type=int, default=120)
    parser.add_argument("--skip-measured", action="store_true", help="keep the JSON's measured part")
    parser.add_argument("--skip-replayed", action="store_true", help="keep the JSON's replayed part")
    args = parser.parse_args()
    device, dtype, path = sweeps.sweep_setup(args, "disagg")
    torch.set_num_threads(args.threads or 1)
    started = time.perf_counter()
    data: dict[str, Any] = {"environment": measure.environment(device, dtype), "cpu_cores": torch.get_num_threads()}
    if args.skip_measured and path.exists():
        data = sweeps.read_json(path)
    else:
        data["measured"] = measured(args)
    if args.skip_replayed and path.exists():
        kept = sweeps.read_json(path)
        data["replayed"] = kept["replayed"]
        if PRESETS_KEY in kept:
            data[PRESETS_KEY] = kept[PRESETS_KEY]
    else:
        data["replayed"], data[PRESETS_KEY] = replayed(args.replay_requests)
    data["elapsed_s"] = time.perf_counter() - started
    sweeps.write_json(path, data)
    print(f"wrote {path} in {data['elapsed_s']:.0f} s")


if __name__ == "__main__":
    main()
