"""`make bench`: decode with and without the KV cache, and decode tok/s against the bandwidth ceiling.

Prints one table from one run. Speed targets live here, not in timed tests: the machines are shared
and noisy, so the figures are reported, never asserted.
"""

from __future__ import annotations

import argparse
import platform

import torch

from minigpt import MiniGPT, ModelConfig, costs, generate, load_pretrained
from minigpt.measure import default_device, probe_bandwidth, time_fn
from minigpt.measure.sweeps import SCALED


def decode_seconds(model: MiniGPT, P: int, D: int, use_cache: bool, repeats: int) -> float:
    """Median wall time of the decode phase (D − 1 steps) of a greedy D-token generation."""
    prompt = torch.randint(0, model.config.V, (1, P), generator=torch.Generator().manual_seed(0)).to(model.device)
    samples = [generate(model, prompt, D, use_cache=use_cache).meters.decode_s for _ in range(repeats)]
    return sorted(samples)[len(samples) // 2]


def predicted_speedup(cfg: ModelConfig, P: int, D: int) -> float:
    """FLOP model: no-cache decode FLOPs over cached decode FLOPs (prefill excluded from both)."""
    sym = dict(L=cfg.L, d=cfg.d, H_kv=cfg.H_kv, d_h=cfg.d_h, d_ffn=cfg.d_ffn, V=cfg.V)
    no_cache = costs.no_cache_flops(P=P, D=D, **sym) - costs.prefill_flops(P=P, **sym)
    return no_cache / costs.decode_flops(P=P, D=D, **sym)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--P", type=int, default=16)
    parser.add_argument("--D", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    device = default_device()
    torch.manual_seed(0)
    models = {"MiniGPT (shipped)": load_pretrained(device=device).model,
              "scaled L=8 d=512": MiniGPT(SCALED).to(device).eval()}
    print(f"# make bench — torch {torch.__version__}, device {device}, {platform.processor() or platform.machine()},"
          f" {torch.get_num_threads()} threads; P={args.P}; medians of {args.repeats}")
    print(f"{'model':<20} {'D':>5} {'no cache (s)':>13} {'cache (s)':>10} {'speedup':>8} {'FLOP model':>11}")
    for name, model in models.items():
        for D in args.D:
            if args.P + D - 1 > model.config.S_max:
                print(f"{name:<20} {D:>5}  skipped: P + D - 1 = {args.P + D - 1} > S_max = {model.config.S_max}")
                continue
            generate(model, [[1] * args.P], 4)  # warm-up
            slow = decode_seconds(model, args.P, D, False, args.repeats)
            fast = decode_seconds(model, args.P, D, True, args.repeats)
            print(f"{name:<20} {D:>5} {slow:>13.4f} {fast:>10.4f} {slow / fast:>7.1f}x "
                  f"{predicted_speedup(model.config, args.P, D):>10.1f}x")
    bandwidth = probe_bandwidth(device=device)
    cfg = SCALED
    n_params = sum(p.numel() for p in models["scaled L=8 d=512"].parameters())
    weight_bytes = costs.weight_bytes(N_params=n_params, s=4)
    kv = costs.kv_bytes_per_token(L=cfg.L, H_kv=cfg.H_kv, d_h=cfg.d_h, s=4)
    print(f"\nbandwidth probe: {bandwidth / 1e9:.1f} GB/s; scaled config weights {weight_bytes / 2**20:.1f} MiB fp32")
    print(f"{'S':>5} {'bytes/step (MiB)':>17} {'ceiling tok/s':>14} {'measured tok/s':>15} {'of ceiling':>11}")
    model = models["scaled L=8 d=512"]
    for S in (16, 128, 256):
        cache = model.new_cache(1)
        model(torch.zeros(1, S, dtype=torch.long, device=device), cache)
        token = torch.zeros(1, 1, dtype=torch.long, device=device)

        def step(cache=cache, S=S, token=token) -> None:
            cache.truncate(S)  # rewind so every timed step sees the same S
            with torch.no_grad():
                model(token, cache, last_only=True)

        t = time_fn(step, warmup=3, repeats=20, device=device).median_s
        step_bytes = costs.decode_step_bytes(weight_bytes=weight_bytes, kv_bytes_per_token=kv, S=S)
        ceiling = costs.decode_tok_s_ceiling(bandwidth=bandwidth, bytes_per_step=step_bytes)
        print(f"{S:>5} {step_bytes / 2**20:>17.1f} {ceiling:>14.0f} {1 / t:>15.0f} {t and (1 / t) / ceiling:>10.0%}")


if __name__ == "__main__":
    main()
