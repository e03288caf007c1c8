"""Train MiniGPT on the grammar corpus: `python -m minigpt.corpus.train` reproduces the shipped checkpoint."""

from __future__ import annotations

import argparse
import copy
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from minigpt.config import ModelConfig
from minigpt.corpus import training_stream
from minigpt.corpus.grammar import PERIOD, vocabulary
from minigpt.runtime.checkpoint import DATA_DIR, DEFAULT_NAME, save_checkpoint
from minigpt.runtime.model import MiniGPT
from minigpt.runtime.tokenizer import Tokenizer


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of the shipped checkpoint (the defaults reproduce it)."""

    steps: int = 2000
    B: int = 32
    lr: float = 6e-3
    warmup: int = 100
    weight_decay: float = 0.0
    corpus_tokens: int = 2_000_000
    seed: int = 0
    log_every: int = 25

    def __post_init__(self) -> None:
        for name in ("steps", "B", "corpus_tokens", "log_every"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        if not 0 <= self.warmup < self.steps:
            raise ValueError(f"warmup must be in 0..steps-1 = 0..{self.steps - 1}, got {self.warmup!r}")


class Batches:
    """Training windows of S_max + 1 tokens that start at a sentence start (so position 0 is a first word)."""

    def __init__(self, tokenizer: Tokenizer, S_max: int, n_tokens: int, seed: int) -> None:
        words = training_stream(n_tokens, seed=seed)
        self.ids = torch.tensor([tokenizer.id_of(w) for w in words], dtype=torch.long)
        ends = (self.ids == tokenizer.id_of(PERIOD)).nonzero().view(-1)
        starts = torch.cat([torch.zeros(1, dtype=torch.long), ends + 1])
        self.starts = starts[starts + S_max + 1 <= len(self.ids)]
        self.S_max = S_max
        self.generator = torch.Generator().manual_seed(seed)

    def next(self, B: int) -> tuple[torch.Tensor, torch.Tensor]:
        pick = self.starts[torch.randint(len(self.starts), (B,), generator=self.generator)]
        window = self.ids[pick.view(B, 1) + torch.arange(self.S_max + 1)]  # [B, S_max + 1]
        return window[:, :-1], window[:, 1:]


def learning_rate(step: int, tc: TrainConfig) -> float:
    """Linear warm-up, then cosine decay to 1 % of the peak."""
    if step < tc.warmup:
        return tc.lr * (step + 1) / tc.warmup
    progress = (step - tc.warmup) / max(1, tc.steps - tc.warmup)
    return tc.lr * (0.01 + 0.99 * 0.5 * (1 + math.cos(math.pi * progress)))


def train(config: ModelConfig | None = None, tc: TrainConfig | None = None, *, progress: bool = True,
          init: MiniGPT | None = None) -> tuple[MiniGPT, Tokenizer, dict[str, Any]]:
    """Train on CPU, from scratch or from `init` (uptraining); returns the model, the tokenizer and the log."""
    config = init.config if init is not None else (config or ModelConfig())
    tc = tc or TrainConfig()
    tokenizer = Tokenizer(vocabulary())
    if tokenizer.V != config.V:
        raise ValueError(f"config V={config.V} does not match the grammar's vocabulary of {tokenizer.V} words")
    torch.manual_seed(tc.seed)
    model = MiniGPT(config)
    if init is not None:  # a copy of init, whatever its class (MiniGPT, or `runtime.mla.MiniGPTMLA`)
        model = copy.deepcopy(init).float()
    batches = Batches(tokenizer, config.S_max, tc.corpus_tokens, tc.seed)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": tc.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=tc.lr, betas=(0.9, 0.95))
    log: list[dict[str, float]] = []
    start = time.perf_counter()
    model.train()
    bar = tqdm(range(tc.steps), desc="training MiniGPT", disable=not progress)
    for step in bar:
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, tc)
        x, y = batches.next(tc.B)
        logits = model(x)  # [B, S_max, V]
        loss = torch.nn.functional.cross_entropy(logits.view(-1, config.V), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % tc.log_every == 0 or step == tc.steps - 1:
            log.append({"step": step, "loss": round(loss.item(), 5), "lr": round(learning_rate(step, tc), 7)})
            bar.set_postfix(loss=f"{loss.item():.3f}")
    model.eval()
    card = {
        "train_config": asdict(tc),
        "train_log": log,
        "train_seconds": round(time.perf_counter() - start, 1),
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "tokens_seen": tc.steps * tc.B * config.S_max,
    }
    return model, tokenizer, card


def main(argv: list[str] | None = None) -> None:
    """Command line: train, measure quality, and write the checkpoint."""
    from minigpt.corpus.quality import grammaticality, greedy_next_word

    parser = argparse.ArgumentParser(description=__doc__)
    defaults = TrainConfig()
    parser.add_argument("--steps", type=int, default=defaults.steps)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--warmup", type=int, default=defaults.warmup)
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="directory for minigpt.safetensors/.json")
    parser.add_argument("--threads", type=int, default=2,
                        help="torch CPU threads (the shipped run used 2; results depend on the thread count)")
    parser.add_argument("--name", default=DEFAULT_NAME, help="checkpoint name: <out>/<name>.safetensors and .json")
    shape = parser.add_argument_group("model shape (defaults: the shipped MiniGPT)")
    for field in ("L", "H", "H_kv", "d_h", "d_ffn"):
        shape.add_argument(f"--{field}", type=int, default=getattr(ModelConfig, field))
    parser.add_argument("--uptrain-from", metavar="NAME", default=None,
                        help="start from the shipped checkpoint NAME with its K/V heads mean-pooled to --H_kv "
                             "(GQA uptraining, Ainslie et al. 2023) instead of from scratch")
    parser.add_argument("--latent", metavar="D_C", type=int, default=None,
                        help="with --uptrain-from: multi-head latent attention with a latent of D_C values, "
                             "initialised by an activation-weighted SVD of the K/V projections "
                             "(minigpt.runtime.mla.latent_from_mha) on one training batch")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = ModelConfig(L=args.L, H=args.H, H_kv=args.H_kv, d_h=args.d_h, d_ffn=args.d_ffn)
    init = None
    if args.uptrain_from is not None:
        from minigpt.runtime.checkpoint import load_pretrained
        from minigpt.runtime.gqa import mean_pool_kv_heads

        source = load_pretrained(name=args.uptrain_from)
        if args.latent is None:
            init = mean_pool_kv_heads(source.model, args.H_kv)
        else:
            from minigpt.runtime.mla import latent_from_mha

            calibration, _ = Batches(source.tokenizer, config.S_max, 200_000, args.seed).next(8)
            init = latent_from_mha(source.model, args.latent, calibration)
    elif args.latent is not None:
        parser.error("--latent needs --uptrain-from (an MLA model starts from an MHA checkpoint)")
    model, tokenizer, card = train(config, TrainConfig(steps=args.steps, seed=args.seed, warmup=args.warmup), init=init)
    card["uptrained_from"] = args.uptrain_from
    if args.latent is not None:
        card["latent"] = {"d_c": args.latent, "init": "activation-weighted SVD of [W_K; W_V]"}
    quality = grammaticality(model, tokenizer, 1000, temperature=1.0, seed=0)
    card["quality"] = {
        "grammatical_fraction_T1": quality.fraction,
        "n_sentences": quality.n_sentences,
        "examples_bad": list(quality.examples_bad),
        "next_after_Yesterday_I_worked_and_he": greedy_next_word(model, tokenizer, "Yesterday I worked and he"),
        "next_after_Every_day_he": greedy_next_word(model, tokenizer, "Every day he"),
    }
    weights, meta = save_checkpoint(model, tokenizer, card, args.out, name=args.name)
    print(f"trained in {card['train_seconds']} s; final loss {card['train_log'][-1]['loss']}; "
          f"grammatical at T=1: {quality.fraction:.1%} of {quality.n_sentences}; wrote {weights} and {meta}")


if __name__ == "__main__":
    main()
