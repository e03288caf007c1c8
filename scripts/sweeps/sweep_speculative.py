"""The speculative-decoding sweep: the shipped MiniGPT (target) and the draft MiniGPT (L=1, H=2, d_ffn=128,
trained on the same corpus: minigpt/data/minigpt-draft.*) on corpus prompts, one sequence at a time.

For each temperature and γ: the acceptance rate α (counted: accepted / (accepted + rejections); and
Leviathan et al.'s E[β] = E[Σ_x min(p, q)] over the verified positions), tokens per target pass against
(1 − α^(γ+1))/(1 − α), and the wall-clock speedup over the target's own generation against
`costs.speculative_speedup` with the measured draft/target cost ratio c (a draft decode step over a target
decode step), with the paper's free verify pass (v = 1) and with the measured verify pass over γ+1 tokens
against one decode step (v): what "several decode steps for free" leaves out.

Writes minigpt/measure/data/speculative_<device>.json.

    python scripts/sweeps/sweep_speculative.py --threads 1 --clock thread    # the book's CPU data
    python scripts/sweeps/sweep_speculative.py --device cuda
"""

from __future__ import annotations

import statistics
import time

import torch

from minigpt import costs, generate, load_pretrained, measure
from minigpt.corpus.sentences import generate_sentences
from minigpt.measure import sweeps
from minigpt.runtime.speculative import speculative_generate

GAMMAS = [1, 2, 3, 4, 6, 8]
TEMPERATURES = [0.0, 0.7, 1.0]


def step_costs(target, draft, prompts, device, clock: str, repeats: int) -> dict[str, float]:
    """Median seconds of one decode step of each model and of the target's verify pass over γ+1 tokens."""
    out: dict[str, float] = {}
    prompt = prompts[0]
    for name, model in (("target_step_s", target), ("draft_step_s", draft)):
        cache = model.new_cache(1)
        model(prompt, cache)
        S = cache.S
        token = prompt[:, -1:]

        def step(model=model, cache=cache, S=S, token=token):
            cache.truncate(S)
            model(token, cache)

        out[name] = measure.time_fn(step, repeats=repeats, device=device, clock=clock).median_s
    cache = target.new_cache(1)
    target(prompt, cache)
    S = cache.S
    for gamma in GAMMAS:
        chunk = prompt[:, -1:].expand(1, gamma + 1).contiguous()

        def verify(chunk=chunk):
            cache.truncate(S)
            target(chunk, cache)

        out[f"verify_{gamma + 1}_s"] = measure.time_fn(verify, repeats=repeats, device=device, clock=clock).median_s
    return out


def timed(fn, clock: str, repeats: int) -> float:
    now = time.thread_time if clock == "thread" else time.perf_counter
    times = []
    for _ in range(repeats):
        start = now()
        fn()
        times.append(now() - start)
    return statistics.median(times)


def main() -> None:
    parser = sweeps.sweep_arguments(__doc__)
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--D", type=int, default=40, help="new tokens per prompt")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    device, dtype, out = sweeps.sweep_setup(args, "speculative")
    print(measure.environment(device, dtype))
    target_ckpt = load_pretrained(device=device, dtype=dtype)
    target, tok = target_ckpt.model, target_ckpt.tokenizer
    draft = load_pretrained(name="minigpt-draft", device=device, dtype=dtype).model
    words = [s.split() for s in generate_sentences(args.prompts, seed=11)]
    prompts = [torch.tensor([tok.encode(" ".join(w[: 2 + i % 3]))], device=device) for i, w in enumerate(words)]
    costs_s = step_costs(target, draft, prompts, device, args.clock, 20)
    c = costs_s["draft_step_s"] / costs_s["target_step_s"]
    v = {gamma: costs_s[f"verify_{gamma + 1}_s"] / costs_s["target_step_s"] for gamma in GAMMAS}
    print(f"step costs: {costs_s}; c = {c:.3f}; verify / step: {v}")
    runs = []
    for T in TEMPERATURES:
        def baseline(T=T):
            for i, p in enumerate(prompts):
                generate(target, p, args.D, temperature=T, seed=i)
        base_s = timed(baseline, args.clock, args.repeats)
        for gamma in GAMMAS:
            results = []

            def spec(T=T, gamma=gamma, keep=results):
                keep.clear()
                for i, p in enumerate(prompts):
                    g = torch.Generator(device=device).manual_seed(i)
                    keep.append(speculative_generate(target, draft, p, args.D, gamma=gamma, temperature=T,
                                                     generator=g))
            spec_s = timed(spec, args.clock, args.repeats)
            accepted = sum(sum(r.accepted) for r in results)
            rejected = sum(sum(1 for n, g in zip(r.accepted, r.proposed, strict=True) if n < g) for r in results)
            beta = [b for r in results for b in r.beta]
            alpha = accepted / (accepted + rejected)
            alpha_beta = sum(beta) / len(beta)
            passes = sum(r.target_passes for r in results)
            emitted = sum(len(r.accepted) + sum(r.accepted) for r in results)  # before the cut to D
            run = {
                "temperature": T, "gamma": gamma, "alpha_counted": alpha, "alpha_beta": alpha_beta,
                "tokens_per_pass": emitted / passes,
                "tokens_per_pass_formula": costs.speculative_tokens_per_pass(alpha=min(alpha, 1.0), gamma=gamma),
                "tokens_per_pass_formula_beta": costs.speculative_tokens_per_pass(alpha=min(alpha_beta, 1.0),
                                                                                  gamma=gamma),
                "target_passes": passes, "draft_steps": sum(r.draft_steps for r in results),
                "baseline_s": base_s, "speculative_s": spec_s, "measured_speedup": base_s / spec_s,
                "predicted_speedup": costs.speculative_speedup(alpha=min(alpha, 1.0), gamma=gamma, cost_ratio=c),
                "verify_ratio": v[gamma],
                "predicted_speedup_measured_verify": costs.speculative_speedup(
                    alpha=min(alpha, 1.0), gamma=gamma, cost_ratio=c, verify_ratio=v[gamma]),
            }
            runs.append(run)
            print(f"T={T} γ={gamma}: α={alpha:.3f} (E[β]={alpha_beta:.3f}), tokens/pass {run['tokens_per_pass']:.2f}"
                  f" (formula {run['tokens_per_pass_formula']:.2f}), speedup {run['measured_speedup']:.2f}"
                  f" (model {run['predicted_speedup']:.2f}; with the verify cost"
                  f" {run['predicted_speedup_measured_verify']:.2f})")
    best = {str(T): max((r for r in runs if r["temperature"] == T), key=lambda r: r["measured_speedup"])["gamma"]
            for T in TEMPERATURES}
    best_predicted = {str(T): max((r for r in runs if r["temperature"] == T),
                                  key=lambda r: r["predicted_speedup"])["gamma"] for T in TEMPERATURES}
    sweeps.write_json(out, {
        "script": "scripts/sweeps/sweep_speculative.py",
        "environment": measure.environment(device, dtype),
        "clock": args.clock,
        "target": target.config.to_dict(), "draft": draft.config.to_dict(),
        "N_params": {"target": sweeps.n_params(target), "draft": sweeps.n_params(draft)},
        "prompts": len(prompts), "D": args.D, "repeats": args.repeats,
        "step_costs": costs_s, "cost_ratio": c,
        "runs": runs, "best_gamma_measured": best, "best_gamma_predicted": best_predicted,
    })
    print(f"wrote {out}; best γ measured {best}, predicted {best_predicted}")


if __name__ == "__main__":
    main()
