"""Abstention-aware score, contamination probes, multiple comparisons and sample size.

Reference (shared/reference/stats.md):
    Abstention (Kalai et al. 2025): correct +1, "I don't know" 0, wrong −t/(1−t). (The paper
    prints "t=0.75 (penalty 2)"; the formula gives 3 — use the formula.) 70 correct, 20 wrong,
    10 IDK of 100 → 0.10 at t=0.75, 0.70 at t=0.
    Contamination: mean NLL per token; Min-K% prob (Shi et al. 2023) = −mean of the
    k = max(1, floor(ratio·T)) lowest token log-probs. Vector: log-probs [−0.1, −2.3, −0.05,
    −4.0, −0.7, −1.2, −0.3, −3.1, −0.02, −0.6] → PPL 3.4452622, Min-20% 3.55, Min-50% 2.26,
    Min-5% → k=1 → 4.0.
    Multiple comparisons: Holm for a few confirmatory tests, Benjamini–Hochberg for
    exploratory grids.
    Sample size (Miller 2024 Eq. 9): n = (z_{α/2}+z_β)² · (ω² + σ_A²/K_A + σ_B²/K_B)/δ²;
    ω²=1/9, σ²=0, δ=0.03 → 969 items.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sealedeval.stats import (
    abstention_score,
    benjamini_hochberg,
    holm,
    mean_nll,
    min_k_prob,
    perplexity,
    sample_size_items,
)

try:
    from scipy.stats import false_discovery_control
except ImportError:  # pragma: no cover - depends on the environment / SciPy < 1.11
    false_discovery_control = None

SETTINGS = settings(database=None, deadline=None)

LOGPROBS = [-0.1, -2.3, -0.05, -4.0, -0.7, -1.2, -0.3, -3.1, -0.02, -0.6]


# --- abstention -------------------------------------------------------------------------------


def test_abstention_reference_vectors() -> None:
    assert abstention_score(70, 20, 10, 0.75) == pytest.approx(0.10, abs=1e-12)
    assert abstention_score(70, 20, 10, 0.0) == pytest.approx(0.70, abs=1e-12)
    assert abstention_score(70, 20, 10, 0.5) == pytest.approx(0.50, abs=1e-12)
    assert abstention_score(70, 20, 10, 0.9) == pytest.approx(-1.10, abs=1e-12)


def test_abstaining_beats_guessing_wrong_but_not_answering_right() -> None:
    assert abstention_score(0, 0, 1, 0.5) == 0.0
    assert abstention_score(0, 1, 0, 0.5) < abstention_score(0, 0, 1, 0.5)
    assert abstention_score(1, 0, 0, 0.9) == 1.0


def test_abstention_degenerate_and_malformed() -> None:
    assert math.isnan(abstention_score(0, 0, 0, 0.5))
    for t in (1.0, -0.1, math.nan):
        with pytest.raises(ValueError):
            abstention_score(1, 1, 1, t)
    with pytest.raises(ValueError):
        abstention_score(-1, 1, 1, 0.5)


# --- contamination ----------------------------------------------------------------------------


def test_contamination_reference_vectors() -> None:
    assert mean_nll(LOGPROBS) == pytest.approx(1.237, abs=1e-12)
    assert perplexity(LOGPROBS) == pytest.approx(3.4452622, abs=1e-7)
    assert min_k_prob(LOGPROBS, 0.2) == pytest.approx(3.55, abs=1e-12)
    assert min_k_prob(LOGPROBS, 0.5) == pytest.approx(2.26, abs=1e-12)
    assert min_k_prob(LOGPROBS, 0.05) == pytest.approx(4.0, abs=1e-12)  # k = max(1, 0) = 1
    assert min_k_prob(LOGPROBS, 1.0) == pytest.approx(mean_nll(LOGPROBS), abs=1e-12)


def test_min_k_uses_the_decimal_ratio() -> None:
    """0.29 · 100 is 28.999… in binary floating point; k must still be 29."""
    lp = [-float(i) for i in range(100)]
    assert min_k_prob(lp, 0.29) == pytest.approx(np.mean(np.arange(71, 100)), abs=1e-12)


def test_contamination_degenerate_and_malformed() -> None:
    assert math.isnan(mean_nll([]))
    assert math.isnan(perplexity([]))
    assert math.isnan(min_k_prob([], 0.2))
    assert perplexity([0.0, 0.0]) == 1.0
    assert perplexity([-0.5, -math.inf]) == math.inf
    with pytest.raises(ValueError):
        mean_nll([-0.1, 0.2])  # a probability above 1
    with pytest.raises(ValueError):
        perplexity([-0.1, math.nan])
    for ratio in (0.0, 1.5, math.nan):
        with pytest.raises(ValueError):
            min_k_prob(LOGPROBS, ratio)


@SETTINGS
@given(
    st.lists(st.floats(-50, 0, allow_nan=False), min_size=1, max_size=200),
    st.floats(0.01, 1.0),
)
def test_min_k_is_mean_nll_of_the_k_lowest(lp: list[float], ratio: float) -> None:
    exact = ratio * len(lp)
    assume(abs(exact - round(exact)) > 1e-6)  # away from float-rounding ties at integers
    k = max(1, math.floor(exact))
    assert min_k_prob(lp, ratio) == pytest.approx(-np.mean(np.sort(lp)[:k]), abs=1e-9)
    assert min_k_prob(lp, ratio) >= mean_nll(lp) - 1e-9


# --- multiple comparisons ---------------------------------------------------------------------


def holm_by_definition(p: list[float]) -> list[float]:
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def test_multiple_comparisons_hand_vectors() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-12)
    assert benjamini_hochberg(p) == pytest.approx([0.02, 0.04, 0.04, 0.02], abs=1e-12)
    assert holm([]) == [] and benjamini_hochberg([]) == []
    assert holm([0.3]) == [0.3] and benjamini_hochberg([0.3]) == [0.3]
    assert holm([0.5, 0.6]) == [1.0, 1.0]


def test_multiple_comparisons_reject_bad_pvalues() -> None:
    for bad in ([0.1, 1.2], [-0.1], [math.nan]):
        with pytest.raises(ValueError):
            holm(bad)
        with pytest.raises(ValueError):
            benjamini_hochberg(bad)


pvalue_lists = st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=30)


@SETTINGS
@given(pvalue_lists)
def test_adjustment_properties(p: list[float]) -> None:
    h = holm(p)
    bh = benjamini_hochberg(p)
    assert h == pytest.approx(holm_by_definition(p), abs=1e-12)
    for raw, adj_h, adj_bh in zip(p, h, bh, strict=True):
        assert raw - 1e-15 <= adj_bh <= adj_h + 1e-12 <= 1.0 + 1e-12
    for i in range(len(p)):
        for j in range(len(p)):
            if p[i] <= p[j]:
                assert h[i] <= h[j] + 1e-15 and bh[i] <= bh[j] + 1e-15


@pytest.mark.skipif(false_discovery_control is None, reason="scipy >= 1.11 not installed")
@SETTINGS
@given(pvalue_lists)
def test_bh_matches_scipy(p: list[float]) -> None:
    assert false_discovery_control is not None
    expected = false_discovery_control(np.array(p), method="bh")
    assert benjamini_hochberg(p) == pytest.approx(list(expected), abs=1e-12)


# --- sample size ------------------------------------------------------------------------------


def test_sample_size_reference_vector() -> None:
    assert sample_size_items(1 / 9, 0.0, 0.0, 1, 1, 0.03) == 969


def test_sample_size_behaviour() -> None:
    base = sample_size_items(1 / 9, 0.1, 0.1, 1, 1, 0.03)
    assert base > 969  # replicate noise adds variance
    assert sample_size_items(1 / 9, 0.1, 0.1, 10, 10, 0.03) < base  # more replicates help
    assert sample_size_items(1 / 9, 0.0, 0.0, 1, 1, -0.03) == 969  # sign of delta irrelevant
    assert sample_size_items(1 / 9, 0.0, 0.0, 1, 1, 0.06) == 243  # 968.998 / 4 = 242.25 → 243
    assert sample_size_items(1 / 9, 0, 0, 1, 1, 0.03, power=0.9) > 969
    assert sample_size_items(0.0, 0.0, 0.0, 1, 1, 0.03) == 0


def test_sample_size_rejects_malformed_input() -> None:
    with pytest.raises(ValueError):
        sample_size_items(-1.0, 0, 0, 1, 1, 0.03)
    with pytest.raises(ValueError):
        sample_size_items(1 / 9, 0, 0, 0, 1, 0.03)
    with pytest.raises(ValueError):
        sample_size_items(1 / 9, 0, 0, 1, 1, 0.0)
    with pytest.raises(ValueError):
        sample_size_items(1 / 9, 0, 0, 1, 1, 0.03, alpha=1.0)
    with pytest.raises(ValueError):
        sample_size_items(1 / 9, 0, 0, 1, 1, 0.03, power=0.0)
