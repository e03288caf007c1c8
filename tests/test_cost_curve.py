"""The cost-curve helpers: exact formula coefficients, least-squares fits, counted FLOPs (Chapter 6)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch

from minigpt.config import ModelConfig
from minigpt.measure import cost_curve as cc
from minigpt.runtime.model import MiniGPT

TINY = ModelConfig(L=2, H=2, H_kv=1, d_h=4, d_ffn=12, V=11, S_max=24)


def test_polynomial_coefficients_are_exact():
    assert cc.polynomial_coefficients(lambda x: 7 + 3 * x + 5 * x**3, (0, 1, 2, 3)) == [7, 3, 0, 5]
    with pytest.raises(ValueError, match="not a polynomial"):
        cc.polynomial_coefficients(lambda x: 2**x, (0, 1))


@pytest.mark.parametrize("cached", [True, False])
def test_step_coefficients_reproduce_the_formula(cached):
    coeffs = cc.step_coefficients(TINY, cached=cached)
    assert len(coeffs) == len(cc.STEP_POWERS[cached])
    for S in range(0, 20):
        value = sum(c * S**k for c, k in zip(coeffs, cc.STEP_POWERS[cached], strict=True))
        assert value == cc.step_flops(TINY, S=S, cached=cached)


def test_step_coefficients_of_minigpt_match_eq_1_3():
    cfg = ModelConfig()
    L, d, V = cfg.L, cfg.d, cfg.V
    assert cc.step_coefficients(cfg, cached=True) == [L * (24 * d * d + 4 * d) + 2 * d * V, 4 * L * d]
    assert cc.step_coefficients(cfg, cached=False) == [
        L * (24 * d * d + 4 * d) + 2 * d * V, L * (24 * d * d + 8 * d), 4 * L * d]


@pytest.mark.parametrize("cached", [True, False])
def test_total_coefficients_reproduce_the_formula(cached):
    coeffs = cc.total_coefficients(TINY, P=3, cached=cached)
    assert all(isinstance(c, Fraction) for c in coeffs)
    for D in range(1, 15):
        value = sum(c * D**k for c, k in zip(coeffs, cc.TOTAL_POWERS[cached], strict=True))
        assert value == cc.total_flops(TINY, P=3, D=D, cached=cached)
    assert coeffs[-1] != 0  # quadratic with the cache, cubic without


def test_fit_recovers_polynomial_and_rejects_bad_input():
    x = np.arange(1, 200)
    y = 3e5 + 2e3 * x + 7.5 * x**2
    np.testing.assert_allclose(cc.fit_powers(x, y, (0, 1, 2)), [3e5, 2e3, 7.5], rtol=1e-9)
    np.testing.assert_allclose(cc.evaluate([3e5, 2e3, 7.5], (0, 1, 2), x), y, rtol=1e-12)
    with pytest.raises(ValueError, match="at least 3 points"):
        cc.fit_powers([1, 2], [1, 2], (0, 1, 2))
    with pytest.raises(ValueError, match="1-D of equal length"):
        cc.fit_powers([1, 2, 3], [1, 2], (0, 1))


@pytest.mark.parametrize("cached", [True, False])
def test_counted_flops_equal_formula_and_fit_recovers_coefficients(cached):
    torch.manual_seed(0)
    model = MiniGPT(TINY).eval()
    Ss = list(range(0, 20, 3))
    counted = [cc.counted_step_flops(model, S=S, cached=cached) for S in Ss]
    assert counted == [cc.step_flops(TINY, S=S, cached=cached) for S in Ss]
    fitted = cc.fit_powers(Ss, counted, cc.STEP_POWERS[cached])
    exact = [float(c) for c in cc.step_coefficients(TINY, cached=cached)]
    np.testing.assert_allclose(fitted, exact, rtol=1e-9, atol=1e-6)
