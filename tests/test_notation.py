"""The notation appendix and the package say the same thing; the errata quote the values the code computes."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from minigpt import costs
from minigpt.config import ModelConfig
from minigpt.costs.presets import HARDWARE, MODELS

ROOT = Path(__file__).resolve().parent.parent
NOTATION = ROOT / "appendices" / "notation.md"
ERRATA = ROOT / "appendices" / "errata.md"

# Keyword arguments of `minigpt.costs` that are switches or plain inputs, not symbols of the book.
# Options and formatter arguments, not quantities of the book: a fraction kept free, output styles, a label.
NOT_SYMBOLS = {"reserve", "binary", "n", "biases", "overlap", "digits", "x", "suffix", "exact", "decimals", "seconds",
               "fit", "scheme", "layout", "path", "B_max"}  # B_max: where a search for the largest batch stops


def tables(path: Path) -> dict[str, list[list[str]]]:
    """The Markdown tables of `path`, keyed by the `## ` heading above each, as rows of cells (header dropped)."""
    found: dict[str, list[list[str]]] = {}
    heading = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
        elif line.startswith("|"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if all(set(cell) <= set("-: ") for cell in cells):
                continue  # the separator row
            found.setdefault(heading, []).append(cells)
    # drop each table's header row
    return {heading: rows[1:] for heading, rows in found.items()}


def code_names(rows: list[list[str]]) -> list[str]:
    """The backticked names of each row's second column ("Code name")."""
    names = []
    for row in rows:
        names += re.findall(r"`([^`]+)`", row[1])
    return names


def notation() -> dict[str, list[str]]:
    return {heading: code_names(rows) for heading, rows in tables(NOTATION).items() if heading != "Equation index"}


def test_tables_have_a_code_name_per_row():
    for heading, rows in tables(NOTATION).items():
        if heading == "Equation index":
            continue
        for row in rows:
            assert len(row) == 3, f"{heading}: row {row} should have symbol | code name | meaning"
            assert re.fullmatch(r"`[A-Za-z_][A-Za-z0-9_]*`", row[1]), f"{heading}: bad code name {row[1]!r}"
            assert row[0].startswith("$") and row[0].endswith("$"), f"{heading}: symbol {row[0]!r} is not math"


def test_every_model_config_field_is_in_the_table():
    names = set(notation()["Model shape"])
    fields = {f.name for f in dataclasses.fields(ModelConfig)}
    missing = (fields | {"d"}) - names
    assert not missing, f"ModelConfig fields missing from appendices/notation.md: {sorted(missing)}"


def test_every_model_symbol_is_a_field_or_property():
    cfg = ModelConfig()
    fields = {f.name for f in dataclasses.fields(ModelConfig)}
    properties = {name for name, value in vars(ModelConfig).items() if isinstance(value, property)}
    for name in notation()["Model shape"]:
        assert name in fields | properties, f"{name} is in the model-shape table but not in ModelConfig"
        assert isinstance(getattr(cfg, name), int)


def test_the_defaults_are_the_seeds_minigpt():
    cfg = ModelConfig()
    assert (cfg.L, cfg.H, cfg.d_h, cfg.d, cfg.d_ffn, cfg.V) == (4, 4, 16, 64, 256, 600)
    text = NOTATION.read_text(encoding="utf-8")
    assert "$L=4$, $H=4$, $d_h=16$, $d=64$, $d_\\text{ffn}=256$, $V=600$" in text


def public_functions() -> list:
    """The formulas of `minigpt.costs` (its `FORMULAS`, the functions a reader sees computed)."""
    functions = [getattr(costs, name) for name in costs.FORMULAS]
    assert len(functions) >= 30 and all(inspect.isfunction(f) for f in functions)
    return functions


def test_costs_keyword_arguments_are_in_the_table():
    names = {name for group in notation().values() for name in group}
    used: dict[str, str] = {}
    for f in public_functions():
        for parameter in inspect.signature(f).parameters.values():
            used.setdefault(parameter.name, f.__name__)
    missing = {name: where for name, where in used.items() if name not in names | NOT_SYMBOLS}
    assert not missing, f"keyword arguments of minigpt.costs missing from the notation table: {missing}"


def test_no_code_name_appears_twice():
    names = [name for group in notation().values() for name in group]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_equation_index_names_real_functions():
    rows = tables(NOTATION)["Equation index"]
    numbers = []
    for row in rows:
        m = re.fullmatch(r"\[\((\d+)\.(\d+)\)\]\(#eq-(\d+)-(\d+)\)", row[0])
        assert m and m.group(1, 2) == m.group(3, 4), f"{row[0]!r} should be a link [(x.y)](#eq-x-y)"
        numbers.append((int(m.group(1)), int(m.group(2))))
        label = f"({m.group(1)}.{m.group(2)})"
        for name in re.findall(r"`([^`]+)`", row[2]):
            f = getattr(costs, name, None)
            assert callable(f), f"{name} (Eq. {label}) is not a function of minigpt.costs"
            assert f"Eq. {label}" in (f.__doc__ or ""), f"{name}'s docstring does not name Eq. {label}"
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers), numbers
    assert len(numbers) >= 10


def llama2_7b_step_bytes(*, B: int, S: int, H_kv: int) -> int:
    """Eq. (3.5) for Llama-2-7B in bf16 (weights and cache), with H_kv key/value heads."""
    m = MODELS["Llama-2-7B"]
    kv = costs.kv_bytes_per_token(L=m.L, H_kv=H_kv, d_h=m.d_h, s=2)
    return costs.decode_step_bytes(weight_bytes=costs.weight_bytes(N_params=m.N_params, s=2),
                                   kv_bytes_per_token=kv, S=S, B=B)


def errata_values() -> dict[str, str]:
    """Each corrected or confirmed value quoted in appendices/errata.md, recomputed and formatted as quoted."""
    mini = dict(L=4, d=64)
    seed_mini = costs.prefill_macs(P=2, **mini)
    first_term = 12 * 4 * 2 * 64**2
    flops = costs.prefill_flops(P=2, d_ffn=256, **mini)
    flops_head = costs.prefill_flops(P=2, d_ffn=256, V=600, **mini)

    # Llama-2-7B in the seed's formula, P = 4096: per-token multiply-adds per layer
    d, P = 4096, 4096
    ffn, proj, attn = 8 * d**2, 4 * d**2, 2 * P * d
    total = ffn + proj + attn

    def saving(**kw: int) -> float:
        return costs.no_cache_macs_seed(**kw) / (
            costs.prefill_macs(L=kw["L"], P=kw["P"], d=kw["d"]) + costs.decode_macs_seed(**kw)
        )

    # first D at which the cubic attention term of the no-cache total overtakes the matmul term
    L, P2 = 4, 2
    D_cross = next(
        D for D in range(1, 10_000)
        if 2 * L * 64 * (D * P2 * P2 + P2 * D * (D - 1) + (D - 1) * D * (2 * D - 1) // 6)
        > 12 * L * 64**2 * (D * P2 + D * (D - 1) // 2)
    )

    seed_7b = dict(L=32, d=4096, s=2, N_params=costs.non_embedding_matrix_params(L=32, d=4096))
    l7 = MODELS["Llama-2-7B"]

    def l7_decode(B: int, S: int) -> float:
        """A Llama-2-7B decode step's intensity in bf16, as Chapter 7's box computes it."""
        return costs.evaluate(costs.decode_intensity, l7, S=S, s=2, N_params=l7.N_params, B=B)
    llama70 = MODELS["Llama-3-70B"]
    a100 = HARDWARE["A100 80GB"]
    h100 = HARDWARE["H100 SXM"]

    def ridge(chip) -> float:
        return costs.ridge_point(peak_flops=chip.peak_flops, bandwidth=chip.bandwidth)
    ceiling = costs.decode_tok_s_ceiling(bandwidth=a100.bandwidth, bytes_per_step=llama70.N_params)
    used_at_10 = 2 * llama70.N_params * 10
    used_at_ceiling = 2 * llama70.N_params * ceiling
    mini_N = costs.param_count(L=4, d=64, V=600, S_max=128, d_ffn=256)
    kv8b = costs.kv_bytes_per_token(L=32, H_kv=8, d_h=128, s=2)
    chat = costs.wall_clock(P=1000, D=300, prefill_tok_s=2000, decode_tok_s=40)
    rag = costs.wall_clock(P=12000, D=500, prefill_tok_s=1500, decode_tok_s=40)

    def gqa_gain(B: int, S: int) -> float:
        """Decode-step bytes of Llama-2-7B in bf16 with its 32 KV heads over those with 8, each model with its own
        weights (Eq. 9.3: the K/V projections shrink too), Eq. (9.2)."""
        m = MODELS["Llama-2-7B"]
        return costs.gqa_decode_gain(N_params=m.N_params, L=m.L, d=m.d, d_h=m.d_h, H_kv=8, s=2, S=S, B=B)

    def gqa_cut() -> float:
        m = MODELS["Llama-2-7B"]
        return 1 - costs.kv_heads_params(N_params=m.N_params, L=m.L, d=m.d, d_h=m.d_h, H_kv=32, H_kv_new=8) / m.N_params

    def int8_share(L: int, H_kv: int, d_h: int) -> float:
        fp16 = costs.kv_cache_bytes(L=L, H_kv=H_kv, d_h=d_h, s=2, S=1)
        return costs.int8_kv_bytes(L=L, H_kv=H_kv, d_h=d_h, S=1) / fp16

    return {
        "393,216 (first term)": f"$12 L P d^2 = {first_term:,}$".replace(",", "{,}"),
        "395,264 MACs": f"gives {seed_mini:,} multiply-adds, i.e. {flops:,} FLOPs, and {flops_head:,} FLOPs",
        "all matmuls share": f"{(ffn + proj) / total:.1%} is every weight matmul",
        "FFN/proj/attn shares": f"the FFN is {ffn / total:.1%}, the QKV and output projections {proj / total:.1%}, "
        f"attention {attn / total:.1%}",
        "cache saving D=1000": f"it is {saving(L=4, P=2, D=1000, d=64):.0f}× in the course page's multiply-adds, "
        f"{costs.cache_saving_factor(L=4, P=2, D=1000, d=64, d_ffn=256, V=600):.0f}× in FLOPs",
        "cubic crossover": f"({D_cross} new tokens for MiniGPT",
        "decode intensity": f"1.00 FLOP, per byte; for a multi-head model in fp16 (no LM head) the intensity is "
        f"{costs.decode_intensity(S=4096, **seed_7b):.2f} FLOP/byte",
        "decode intensity S=0": f"i.e. {costs.decode_intensity(S=0, **seed_7b):.2f} FLOP,",
        "batch 16 short": f"at $S = 128$ the intensity goes from {l7_decode(B=1, S=128):.2f} at $B = 1$ to "
        f"{l7_decode(B=16, S=128):.1f} at $B = 16$",
        "batch 16 long": f"reaches {l7_decode(B=16, S=4096):.2f} FLOP/byte",
        "70B bf16": f"({costs.weight_bytes(N_params=llama70.N_params, s=2) / 1e9:.1f} GB for Llama-3-70B's "
        f"{llama70.N_params / 1e9:.1f} B parameters)",
        "70B int8": f"in int8 ({costs.weight_bytes(N_params=llama70.N_params, s=1) / 1e9:.1f} GB)",
        "70B ceiling": f"ceiling of {ceiling:.1f} tok/s at {a100.bandwidth / 1e9:,.0f} GB/s",
        "70B idle": f"it uses {used_at_10 / 1e12:.2f} TFLOP/s, {1 - used_at_10 / a100.peak_flops:.1%} idle; "
        f"even at the {ceiling:.1f} tok/s ceiling {1 - used_at_ceiling / a100.peak_flops:.1%} idle",
        "MiniGPT weights": f"MiniGPT's {mini_N:,} parameters take {costs.fmt_bytes(4 * mini_N)} in fp32",
        "int8 share": f"{int8_share(32, 8, 128):.1%} of fp16 at $d_h = 128$ and "
        f"{int8_share(4, 4, 16):.1%} at MiniGPT's $d_h = 16$",
        "attention at 128k": f"{costs.prefill_attention_share(P=131072, d=4096):.1%} of the prefill",
        "20k tokens": f"20,000 tokens take {costs.fmt_bytes(20000 * kv8b, binary=False)} = "
        f"{costs.fmt_bytes(20000 * kv8b)}",
        "128k tokens": f"128,000 tokens {costs.fmt_bytes(128000 * kv8b, binary=False)} = "
        f"{costs.fmt_bytes(128000 * kv8b)}",
        "131,072 tokens": f"read as 131,072 tokens, {costs.fmt_bytes(131072 * kv8b, binary=False)} = "
        f"{costs.fmt_bytes(131072 * kv8b)}",
        "crossover": f"holds in the course page's formula ({costs.prefill_crossover_P(d=4096):,})",
        "6d regimes": f"equal at $P = 6d$ ({costs.prefill_crossover_P(d=64)} for MiniGPT, "
        f"{costs.prefill_crossover_P(d=4096):,} for Llama-2-7B)",
        "prefill intensity": f"{costs.of(l7).prefill_intensity(P=4096, s=2, N_params=l7.N_params):,.0f}"
        " FLOP/byte for Llama-2-7B in bf16",
        "50 tok/s": f"holds: {costs.decode_tok_s_ceiling(bandwidth=400e9, bytes_per_step=8e9):.1f} tok/s",
        "fp16 weights": f"with FP16 weights, 16 GB, the same card's ceiling is "
        f"{costs.decode_tok_s_ceiling(bandwidth=400e9, bytes_per_step=16e9):.1f} tok/s",
        "gqa gains": f"{gqa_cut():.0%} of Llama-2-7B's parameters go with 8 key/value heads), so decode gains the ratio"
        f" of step bytes, linear only where the cache dominates: for Llama-2-7B with 8 key/value heads, "
        f"{gqa_gain(B=1, S=1024):.2f}× at $B = 1$, $S = 1{{,}}024$ and {gqa_gain(B=16, S=4096):.2f}× at $B = 16$, "
        f"$S = 4{{,}}096$",
        "chat": f"holds: {chat.total_s:.1f} s, decode {chat.decode_share:.2%}",
        "50x": f"2,000 / 40 = {2000 / 40:.0f}×",
        "160 chars": f"the {40 * 4} characters/s hold",
        "rag": f"holds: {rag.total_s:.1f} s, TTFT {rag.ttft_s / rag.total_s:.1%}",
        "128 KiB": f"holds exactly: {kv8b:,} bytes = {costs.fmt_bytes(kv8b)}",
        "ridge": f"about {costs.ridge_point(peak_flops=a100.peak_flops, bandwidth=a100.bandwidth):.0f} sequences",
        "prefill ridges": f"{ridge(a100):.0f} FLOP/byte on an A100 80GB, {ridge(h100):.0f} on an H100 SXM",
    }


@pytest.mark.parametrize("key", sorted(errata_values()))
def test_errata_numbers(key):
    quoted = errata_values()[key]
    text = ERRATA.read_text(encoding="utf-8")
    assert quoted in text, f"appendices/errata.md should quote the recomputed value: {quoted!r}"


GLOSSARY_TERMS = {
    "Prefill", "Decode", "KV cache", "TTFT", "TPOT", "Arithmetic intensity", "Roofline", "Ridge point",
    "Memory-bound", "Compute-bound", "MHA", "GQA", "MQA", "PagedAttention", "Continuous batching",
    "FlashAttention", "Flash-Decoding", "Speculative decoding", "Quantization", "Prefix caching", "Throughput",
    "Latency", "Bandwidth", "FLOP", "MAC", "HBM", "Batch size",
    "All-reduce", "Tensor parallelism",
    "GELU", "SwiGLU", "Token-pass", "CUDA graph",
    "Critical batch", "Latency–throughput frontier",
    "MLA", "Attention sink", "Sliding-window attention", "KV eviction",  # Chapters 21-22
    # Part III
    "Block table", "Copy-on-write", "Internal fragmentation", "Ragged batch", "Uptraining", "Absmax quantization",
    "Dequantize on read", "KL divergence", "Greedy agreement", "Online softmax", "Split-K", "Log-sum-exp",
    "Draft model", "Acceptance rate", "Speculative sampling", "Preemption", "Hash chain", "Static cache",
    "torch.compile", "Operator floor",
    # Part IV
    "Disaggregated serving", "Goodput", "SLO attainment",
    "Pipeline parallelism",
}


def test_glossary_defines_exactly_the_books_terms():
    text = (ROOT / "appendices" / "glossary.md").read_text(encoding="utf-8")
    body = text.split("```{glossary}", 1)[1].split("\n```", 1)[0]
    terms = [line for line in body.splitlines() if line and not line.startswith(" ")]
    assert len(terms) == len(set(terms))
    assert set(terms) == GLOSSARY_TERMS


def test_bibliography_parses_and_every_entry_has_a_url():
    pybtex = pytest.importorskip("pybtex.database", reason="pybtex comes with sphinxcontrib-bibtex")
    entries = pybtex.parse_file(str(ROOT / "references.bib")).entries
    assert len(entries) >= 36
    # The book's two source texts are unpublished course material: a title and a description, no year or URL.
    for key, entry in entries.items():
        assert entry.fields.get("title"), key
        if key in SOURCE_TEXTS:
            assert "no author, date or public address" in " ".join(entry.fields.get("note", "").split()).lower(), key
            continue
        assert entry.fields.get("year"), key
        assert entry.fields.get("url", "").startswith("https://"), key


# The two texts the book grew from: they give no author, date or address, and their entries say so.
SOURCE_TEXTS = {"course-prefill-decode", "guide-prefill-decode"}


def test_the_source_texts_are_in_the_bibliography_and_cited():
    pybtex = pytest.importorskip("pybtex.database", reason="pybtex comes with sphinxcontrib-bibtex")
    entries = pybtex.parse_file(str(ROOT / "references.bib")).entries
    assert SOURCE_TEXTS <= set(entries)
    intro = (ROOT / "intro.md").read_text(encoding="utf-8")
    for key in SOURCE_TEXTS:
        assert f"{{cite}}`{key}`" in intro, f"intro.md should say once what {key} is, citing it"
