"""minigpt.book.figures: each conceptual figure is a Figure with its stated title and the model's shapes,
and every text of it readable on the page."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from minigpt.book import figures, figures_kv, figures_prefix  # noqa: E402
from minigpt.book.figure_text import check_figure_text  # noqa: E402
from minigpt.config import ModelConfig  # noqa: E402


def _texts(fig: Figure) -> str:
    return "\n".join(t.get_text() for t in fig.findobj(matplotlib.text.Text))


def _line(text: str) -> str:
    """A title as one line: the figures break long titles to fit the page's column (figure_text)."""
    return text.replace("\n", " ")


def test_dataflow_figure_shows_both_phases_with_the_config_shapes():
    cfg = ModelConfig(L=2, H=8, H_kv=2, d_h=8, d_ffn=128, V=50, S_max=32)
    fig = figures.dataflow_figure(cfg, P=5, S=7)
    assert isinstance(fig, Figure) and _line(fig.get_suptitle()) == figures.DATAFLOW_TITLE
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
    assert _line(fig.get_suptitle()) == figures.CACHE_TITLE
    titles = [_line(ax.get_title()) for ax in fig.axes]
    assert titles == ["after the prefill S = 16 of S_max = 128",
                      "after the prefill and 8 decode steps S = 24 of S_max = 128"]
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
    assert _line(fig.get_suptitle()).startswith(figures.MASK_TITLE)
    assert [_line(ax.get_title()) for ax in fig.axes] == [
        "prefill: T = P = 4, S = 0", "chunk: T = 2 after S = 4 cached", "decode step: T = 1 after S = 6"]
    assert fig.axes[1].images[0].get_array().shape == (2, 6)
    plt.close(fig)


def test_gqa_figure_draws_each_config_from_the_attention_function():
    """The K/V heads each query head reads come from running `attention`: h // g (a figure that paired query
    head h with K/V head h % H_kv, a plausible slip, would draw GQA's groups interleaved)."""
    from minigpt.book import figures_kv

    assert figures_kv.kv_head_of_query(4, 4) == [0, 1, 2, 3]
    assert figures_kv.kv_head_of_query(4, 2) == [0, 0, 1, 1]
    assert figures_kv.kv_head_of_query(8, 2) == [0, 0, 0, 0, 1, 1, 1, 1]
    assert figures_kv.kv_head_of_query(4, 1) == [0, 0, 0, 0]
    with pytest.raises(ValueError, match="H_kv must divide"):
        figures_kv.kv_head_of_query(4, 3)
    cfg = ModelConfig(L=2, H=8, H_kv=8, d_h=8, d_ffn=64, V=50, S_max=32)
    fig = figures_kv.gqa_figure(cfg, H_kv_values=(8, 4, 1))
    assert _line(fig.get_suptitle()) == figures_kv.GQA_TITLE
    assert [ax.get_title() for ax in fig.axes] == ["MHA: H = 8, H_kv = 8, g = 1", "GQA: H = 8, H_kv = 4, g = 2",
                                                   "MQA: H = 8, H_kv = 1, g = 8"]
    for ax, H_kv in zip(fig.axes, (8, 4, 1), strict=True):
        gids = [p.get_gid() for p in ax.patches]
        assert gids.count("q") == 8 and gids.count("kv") == H_kv and gids.count("row") == 2 * H_kv
        assert len(ax.lines) == 8  # one line from each query head to the K/V head it reads
    assert "1.0 KiB per token over L = 2" in _texts(fig) and "8x less than MHA" in _texts(fig)
    plt.close(fig)
    assert len(figures_kv.gqa_figure().axes) == 3  # MiniGPT, H = 4: MHA, H_kv = 2, MQA
    plt.close("all")
    with pytest.raises(ValueError, match="H_kv_values"):
        figures_kv.gqa_figure(cfg, H_kv_values=(3,))


def test_scale_groups_are_found_by_probing_the_quantizers():
    """int8 one scale per token vector, int4 groups of g, KIVI keys one per channel and block of G tokens, FP8
    one for the layer (a quantizer that grouped along the wrong axis draws the wrong picture and fails)."""
    from minigpt.book import figures_kv

    token = figures_kv.scale_groups("per_token", T=4, d_h=8, bits=8)
    assert all(len(set(row)) == 1 for row in token) and len({row[0] for row in token}) == 4
    grouped = figures_kv.scale_groups("per_token", T=2, d_h=8, bits=4, group_size=4)
    assert grouped == [[0, 0, 0, 0, 1, 1, 1, 1], [2, 2, 2, 2, 3, 3, 3, 3]]
    kivi = figures_kv.scale_groups("kivi", T=4, d_h=4, bits=4, token_group=2)
    assert kivi == [[0, 1, 2, 3], [0, 1, 2, 3], [4, 5, 6, 7], [4, 5, 6, 7]]
    assert figures_kv.scale_groups("fp8", T=3, d_h=4) == [[0] * 4] * 3
    with pytest.raises(ValueError, match="layout must be one of"):
        figures_kv.scale_groups("int3", T=2, d_h=4)
    with pytest.raises(ValueError, match="multiple of token_group"):
        figures_kv.scale_groups("kivi", T=5, d_h=4, token_group=2)
    fig = figures_kv.scale_layout_figure(T=8, d_h=8, group_size=4, token_group=4)
    assert _line(fig.get_suptitle()) == figures_kv.SCALE_TITLE
    titles = [ax.get_title() for ax in fig.axes]
    assert [t.split("\n")[1] for t in titles] == ["8 scales for these 8 x 8 values", "16 scales for these 8 x 8 values",
                                                  "16 scales for these 8 x 8 values", "1 scale for these 8 x 8 values"]
    plt.close(fig)


@pytest.mark.parametrize("draw", [
    lambda: figures.dataflow_figure(ModelConfig(), P=2, S=2),
    lambda: figures.cache_layout_figure(ModelConfig(), P=16, steps=(0, 8, 48)),
    lambda: figures.causal_mask_figure(P=6, S=6, T=3),
    lambda: figures_kv.gqa_figure(ModelConfig()),
    lambda: figures_kv.scale_layout_figure(),
    lambda: figures_prefix.prefix_tree_figure(),
], ids=["dataflow", "cache_layout", "causal_mask", "gqa", "scale_layout", "prefix_tree"])
def test_the_chapters_figures_have_text_readable_on_the_page(draw):
    """As the chapters draw them (Chapters 1, 2, 9, 10 and 13): every text at least 10 px on the page
    (`figure_text.check_figure_text`, which `glue` runs too): drawn 13 in wide with 6.5 pt labels, the
    prefix tree's smallest text was 4.6 px."""
    fig = draw()
    check_figure_text(fig)
    plt.close(fig)
