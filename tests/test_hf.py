"""MiniGPT ↔ Hugging Face GPT-2: the exported directory loads in transformers with no custom code and
computes the same logits (1e-5, fp32), the same greedy continuation, and the same cached `generate`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from mutation_pass import shared_scope

from minigpt import ModelConfig, generate, load_pretrained
from minigpt.interop.hf import export_gpt2, from_gpt2_state, load_gpt2, load_gpt2_tokenizer, to_gpt2_state
from minigpt.measure import sweeps

transformers = pytest.importorskip("transformers", reason="transformers is in requirements.txt (make install)")


@pytest.fixture(scope=shared_scope)
def shipped() -> tuple:
    return load_pretrained()


@pytest.fixture(scope=shared_scope)
def exported(shipped, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_gpt2(shipped.model, tmp_path_factory.mktemp("gpt2"), shipped.tokenizer)


@pytest.fixture(scope=shared_scope)
def hf_model(exported: Path):
    return transformers.GPT2LMHeadModel.from_pretrained(exported, local_files_only=True).eval()


def test_directory_holds_standard_files(exported: Path) -> None:
    assert sorted(p.name for p in exported.iterdir()) == [
        "config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
    config = json.loads((exported / "config.json").read_text())
    assert config["model_type"] == "gpt2" and config["activation_function"] == "gelu"
    assert config["n_positions"] == 128 and config["layer_norm_epsilon"] == 1e-5
    tokenizer = json.loads((exported / "tokenizer_config.json").read_text())
    assert tokenizer["tokenizer_class"] == "PreTrainedTokenizerFast"  # the class transformers resolves by name


def test_logits_equal(shipped, hf_model) -> None:
    ids = torch.tensor([shipped.tokenizer.encode("Yesterday I worked and he played ."), list(range(1, 8))])
    with torch.no_grad():
        ours = shipped.model(ids)
        theirs = hf_model(ids).logits
    torch.testing.assert_close(theirs, ours, atol=1e-5, rtol=0)


def test_greedy_continuation_and_cached_generate_equal(shipped, hf_model) -> None:
    ids = torch.tensor([shipped.tokenizer.encode("Yesterday I worked")])
    D = 20
    ours = generate(shipped.model, ids, D).tokens[0]
    with torch.no_grad():  # transformers' own KV cache, greedy
        theirs = hf_model.generate(ids, max_new_tokens=D, do_sample=False, use_cache=True,
                                   attention_mask=torch.ones_like(ids))[0, ids.shape[1]:].tolist()
        seq = ids  # and greedy without a cache, argmax of the full forward each step
        for _ in range(D):
            seq = torch.cat([seq, hf_model(seq).logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert theirs == ours == seq[0, ids.shape[1]:].tolist()


def test_tokenizer_round_trips(shipped, exported: Path) -> None:
    fast = transformers.AutoTokenizer.from_pretrained(exported, local_files_only=True)
    text = "Yesterday I worked and he played ."
    assert fast(text)["input_ids"] == shipped.tokenizer.encode(text)
    assert fast.decode(shipped.tokenizer.encode(text)) == text
    assert fast.pad_token_id == 0
    assert load_gpt2_tokenizer(exported).vocab == shipped.tokenizer.vocab


def test_import_back_is_the_same_model(shipped, exported: Path) -> None:
    back = load_gpt2(exported)
    assert back.config == shipped.config
    for (name, a), (_, b) in zip(shipped.model.state_dict().items(), back.state_dict().items(), strict=True):
        assert torch.equal(a, b), name


def test_a_transformers_written_gpt2_imports(tmp_path: Path) -> None:
    cfg = ModelConfig(L=2, H=2, H_kv=2, d_h=8, d_ffn=40, V=30, S_max=24)
    model = sweeps.random_model(cfg, seed=5)
    hf = transformers.GPT2LMHeadModel.from_pretrained(export_gpt2(model, tmp_path / "a"), local_files_only=True)
    hf.save_pretrained(tmp_path / "b")  # transformers' own writing of it
    back = load_gpt2(tmp_path / "b")
    ids = torch.randint(0, 30, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(back(ids), model(ids), atol=1e-5, rtol=0)


def test_what_gpt2_cannot_hold_is_a_clear_error(tmp_path: Path) -> None:
    gqa = sweeps.random_model(ModelConfig(L=1, H=4, H_kv=2, d_h=8, d_ffn=32, V=20, S_max=16))
    with pytest.raises(ValueError, match=r"H_kv must equal H to export, got H=4, H_kv=2 \(GQA"):
        export_gpt2(gqa, tmp_path / "gqa")
    assert not (tmp_path / "gqa").exists()
    model = sweeps.random_model(ModelConfig(L=1, H=2, H_kv=2, d_h=8, d_ffn=32, V=20, S_max=16))
    out = export_gpt2(model, tmp_path / "ok")
    config = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**config, "activation_function": "gelu_new"}))
    with pytest.raises(ValueError, match=r"activation_function must be 'gelu' for MiniGPT.*tanh"):
        load_gpt2(out)
    (out / "config.json").write_text(json.dumps({**config, "layer_norm_epsilon": 1e-6}))
    with pytest.raises(ValueError, match=r"layer_norm_epsilon must be 1e-05"):
        load_gpt2(out)
    (out / "config.json").write_text(json.dumps({**config, "scale_attn_weights": False}))
    with pytest.raises(ValueError, match=r"scale_attn_weights must be True for MiniGPT, got False$"):
        load_gpt2(out)  # the GELU hint belongs to the activation only
    (out / "config.json").write_text(json.dumps({**config, "add_cross_attention": True}))
    with pytest.raises(ValueError, match=r"add_cross_attention must be False for MiniGPT, got True$"):
        load_gpt2(out)  # another key starting with "a"
    with pytest.raises(FileNotFoundError, match=r"config.json does not exist"):
        load_gpt2(tmp_path / "nothing")


def test_an_untied_head_is_refused_by_name() -> None:
    """Guards the LM head looked up under another name (an untied head would be dropped without a word)."""
    cfg = ModelConfig(L=1, H=2, H_kv=2, d_h=8, d_ffn=32, V=20, S_max=16)
    state = to_gpt2_state(sweeps.random_model(cfg))
    assert from_gpt2_state({**state, "lm_head.weight": state["transformer.wte.weight"].clone()}, cfg).keys() == \
        from_gpt2_state(state, cfg).keys()
    with pytest.raises(ValueError, match="lm_head.weight differs from transformer.wte.weight"):
        from_gpt2_state({**state, "lm_head.weight": state["transformer.wte.weight"] + 1}, cfg)


def test_import_minigpt_stays_light() -> None:
    code = "import sys, minigpt, minigpt.interop.hf; sys.exit('transformers' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_export_creates_the_folders_on_its_path(shipped, tmp_path: Path) -> None:
    """`export_gpt2(model, "checkpoints/minigpt")` in a fresh folder makes both levels, as `save_pretrained`
    does: a user's nested path must not need a mkdir first."""
    out = export_gpt2(shipped.model, tmp_path / "checkpoints" / "minigpt", shipped.tokenizer)
    assert out == tmp_path / "checkpoints" / "minigpt" and (out / "config.json").is_file()
    assert load_gpt2(out).config == shipped.model.config
