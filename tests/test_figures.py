"""minigpt.book.figures: each conceptual figure is a Figure with its stated title and the model's shapes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from minigpt.book import figures  # noqa: E402
from minigpt.config import ModelConfig  # noqa: E402


def _texts(fig: Figure) -> str:
    return "\n".join(t.get_text() for t in fig.findobj(matplotlib.text.Text))


def test_dataflow_figure_shows_both_phases_with_the_config_shapes():
    cfg = ModelConfig(L=2, H=8, H_kv=2, d_h=8, d_ffn=128, V=50, S_max=32)
    fig = figures.dataflow_figure(cfg, P=5, S=7)
    assert isinstance(fig, Figure) and fig.get_suptitle() == figures.DATAFLOW_TITLE
    assert [ax.get_title() for ax in fig.axes] == ["Prefill: T = P = 5 tokens, empty cache",
                                                   "Decode step: T = 1 token, S = 7 cached"]
    text = _texts(fig)
    assert "X: [B=1, T=5, d=64]" in text and "[B, H_kv=2, T=1, d_h=8]" in text and "S+T=8" in text
    assert "S_max=32" in text and "V=50" in text
    plt.close(fig)
    with pytest.raises(ValueError, match="S_max"):
        figures.dataflow_figure(cfg, P=33)


def test_cache_layout_figure_fills_rows_per_token():
    fig = figures.cache_layout_figure(ModelConfig(), P=16, steps=(0, 8))
    assert fig.get_suptitle() == figures.CACHE_TITLE
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["after the prefill\nS = 16 of S_max = 128",
                      "after the prefill and 8 decode steps\nS = 24 of S_max = 128"]
    image = fig.axes[1].images[0].get_array()
    assert image.shape[0] == 128 and (image[:16, 0] == 1).all() and (image[16:24, 0] == 2).all()
    assert (image[24:, 0] == 0).all()
    assert "[4, 2, 4, 128, 16]" in _texts(fig)
    plt.close(fig)
    with pytest.raises(ValueError, match="steps"):
        figures.cache_layout_figure(P=100, steps=(0, 40))


def test_causal_mask_is_the_models_rule_and_the_figure_shows_three_cases():
    assert figures.causal_mask(3) == [[True, False, False], [True, True, False], [True, True, True]]
    assert figures.causal_mask(2, S=2) == [[True, True, True, False], [True, True, True, True]]
    assert figures.causal_mask(1, S=5) == [[True] * 6]  # a decode step needs no mask
    with pytest.raises(ValueError, match="T must be"):
        figures.causal_mask(0)
    fig = figures.causal_mask_figure(P=4, S=4, T=2)
    assert fig.get_suptitle().startswith(figures.MASK_TITLE)
    assert [ax.get_title() for ax in fig.axes] == ["prefill: T = P = 4, S = 0", "chunk: T = 2 after S = 4 cached",
                                                   "decode step: T = 1 after S = 6"]
    assert fig.axes[1].images[0].get_array().shape == (2, 6)
    plt.close(fig)
