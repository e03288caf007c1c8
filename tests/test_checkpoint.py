"""The shipped checkpoint: small, safe, fast to load, and as good as its card says."""


import torch

from minigpt import generate, load_pretrained
from minigpt.corpus import is_grammatical
from minigpt.corpus.grammar import is_past_verb, is_present_3sg_verb
from minigpt.corpus.train import TrainConfig, train
from minigpt.runtime.checkpoint import DATA_DIR


def test_shipped_checkpoint_is_small_and_loads():
    # Its load time is measured in `make bench` (scripts/bench/bench.py), not asserted here.
    files = list(DATA_DIR.glob("minigpt.*"))
    assert {f.suffix for f in files} == {".safetensors", ".json"}
    assert sum(f.stat().st_size for f in files) <= 5 * 2**20
    pre = load_pretrained()
    assert pre.config.V == pre.tokenizer.V == 600
    assert not pre.model.training


def test_tense_agreement_probes():
    pre = load_pretrained()
    past = generate(pre.model, "Yesterday I worked and he", 1, tokenizer=pre.tokenizer).text
    present = generate(pre.model, "Every day he", 1, tokenizer=pre.tokenizer).text
    assert is_past_verb(past), past
    assert is_present_3sg_verb(present), present


def test_greedy_sentences_are_grammatical():
    pre = load_pretrained()
    for prompt in ["Yesterday I", "Every day he", "Tomorrow they", "Last week my brother"]:
        out = generate(pre.model, prompt, 30, stop=["."], include_stop=True, tokenizer=pre.tokenizer)
        assert out.stop_reasons == ["stop"]
        assert is_grammatical(f"{prompt} {out.text}"), out.text


def test_card_records_training_log_and_quality():
    card = load_pretrained().card
    losses = [row["loss"] for row in card["train_log"]]
    assert losses[-1] < losses[0] / 2  # from ln(V) ≈ 6.4 down to the grammar's own entropy
    assert card["quality"]["grammatical_fraction_T1"] >= 0.99
    assert card["quality"]["n_sentences"] == 1000


def test_training_is_seeded():
    tc = TrainConfig(steps=3, warmup=1, corpus_tokens=20_000, log_every=1)
    _, _, a = train(tc=tc, progress=False)
    _, _, b = train(tc=tc, progress=False)
    assert a["train_log"] == b["train_log"]
    assert torch.tensor([r["loss"] for r in a["train_log"]]).isfinite().all()


def test_a_saved_card_is_the_same_bytes_whatever_the_order_of_its_keys(tmp_path):
    """Two saves of one model whose cards list the same facts in another order write the same card (keys
    sorted): a checkpoint's diff shows what changed, not the order a script built its dict in."""
    from minigpt.runtime.checkpoint import save_checkpoint

    pre = load_pretrained()
    _, first = save_checkpoint(pre.model, pre.tokenizer, {"zeta": 1, "alpha": {"y": 2, "b": 3}}, tmp_path / "a")
    _, second = save_checkpoint(pre.model, pre.tokenizer, {"alpha": {"b": 3, "y": 2}, "zeta": 1}, tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()
    text = first.read_text()
    assert text.index('"alpha"') < text.index('"config"') < text.index('"zeta"')


def test_loading_ignores_the_callers_default_device():
    """Catches: the model built on the ambient default device. Under `torch.device("meta")` (how a caller
    describes shapes without memory, as Exercise 17's oracle does) the weights went into meta tensors, which
    hold no values, and the load failed ("Cannot copy out of meta tensor")."""
    want = load_pretrained().model.state_dict()
    with torch.device("meta"):
        got = load_pretrained().model.state_dict()
    assert got.keys() == want.keys()
    for name, t in got.items():
        assert t.device.type == "cpu", name
        assert torch.equal(t, want[name]), name
