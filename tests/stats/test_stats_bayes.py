"""The small-n Bayesian view (Beta(1,1) posteriors) and the paired difference with its interval
(normal from the paired SE, and the seeded paired bootstrap), against SciPy.

Reference (shared/reference/stats.md): Wilson 8/10 → (0.490162, 0.943318), beside which the
Beta(9, 3) interval sits; paired SE (Miller 2024 Eq. 7) for A=[1,1,0,1,0,1,1,0,1,1],
B=[1,0,0,1,0,0,1,0,1,0] → diff 0.3, SE_paired 0.1527525.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval.stats import (
    Z_95,
    beta_interval,
    paired_bootstrap,
    paired_difference,
    prob_a_better,
    wilson,
)

scipy_stats = pytest.importorskip("scipy.stats")
SETTINGS = settings(database=None, deadline=None, max_examples=150)

A = [1, 1, 0, 1, 0, 1, 1, 0, 1, 1]
B = [1, 0, 0, 1, 0, 0, 1, 0, 1, 0]


@pytest.mark.parametrize(("k", "n"), [(8, 10), (0, 10), (10, 10), (0, 1), (37, 99), (3, 20)])
@pytest.mark.parametrize("level", [0.95, 0.9])
def test_beta_interval_matches_scipy(k: int, n: int, level: float) -> None:
    t = (1 - level) / 2
    want = scipy_stats.beta.ppf([t, 1 - t], k + 1, n - k + 1)
    assert beta_interval(k, n, level) == pytest.approx(tuple(want), abs=1e-12)


def test_beta_interval_vectors_beside_wilson() -> None:
    assert beta_interval(8, 10) == pytest.approx((0.482244, 0.939782), abs=1e-6)
    assert wilson(8, 10) == pytest.approx((0.490162, 0.943318), abs=1e-6)
    lo, hi = beta_interval(0, 10)
    assert 0 < lo < 0.003 and hi == pytest.approx(0.284914, abs=1e-6)
    assert beta_interval(0, 0) == pytest.approx((0.025, 0.975))  # the prior itself
    with pytest.raises(ValueError, match="k must be <= n"):
        beta_interval(3, 2)
    with pytest.raises(TypeError):
        beta_interval(1.0, 2)  # type: ignore[arg-type]


@SETTINGS
@given(b=st.integers(0, 80), c=st.integers(0, 80))
def test_prob_a_better_is_the_beta_posterior_tail(b: int, c: int) -> None:
    assert prob_a_better(b, c) == pytest.approx(scipy_stats.beta.sf(0.5, b + 1, c + 1), abs=1e-12)
    assert prob_a_better(b, c) + prob_a_better(c, b) == pytest.approx(1.0, abs=1e-15)


def test_prob_a_better_vectors() -> None:
    assert prob_a_better(10, 2) == pytest.approx(0.988770, abs=1e-6)
    assert prob_a_better(6, 6) == 0.5
    assert prob_a_better(3, 0) == 0.9375
    assert prob_a_better(0, 0) == 0.5  # all ties: the prior's answer
    with pytest.raises(ValueError):
        prob_a_better(-1, 2)


# -- the paired difference with its interval ---------------------------------------------------


def test_paired_difference_reference_vector() -> None:
    d, lo, hi = paired_difference(A, B)
    assert d == pytest.approx(0.3)
    assert (lo, hi) == pytest.approx((0.3 - Z_95 * 0.1527525, 0.3 + Z_95 * 0.1527525), abs=1e-6)
    # SciPy: the same interval from a normal with the paired SE
    se = scipy_stats.sem(np.subtract(A, B))
    assert (lo, hi) == pytest.approx(scipy_stats.norm.interval(0.95, loc=0.3, scale=se))


def test_paired_difference_degenerate_cases() -> None:
    assert all(math.isnan(x) for x in paired_difference([], []))
    d, lo, hi = paired_difference([1.0], [0.0])
    assert d == 1.0 and math.isnan(lo) and math.isnan(hi)
    assert paired_difference([1, 0, 1], [1, 0, 1]) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="same length"):
        paired_difference([1, 0], [1])


def test_paired_bootstrap_agrees_with_scipy_on_a_composite() -> None:
    """Non-binary scores (a bloodpanel-like composite in [0, 1]): the percentile interval of the
    mean difference from resampling pairs is SciPy's ``bootstrap(paired=True)`` up to Monte Carlo
    error (different generators), and is reproducible for a seed."""
    rng = np.random.default_rng(5)
    b = rng.uniform(0.3, 0.9, size=60)
    a = np.clip(b + rng.normal(0.05, 0.1, size=60), 0, 1)
    got = paired_bootstrap(list(a), list(b), n_boot=20000, seed=1)
    res = scipy_stats.bootstrap(
        (a, b),
        lambda x, y: np.mean(x - y),
        paired=True,
        vectorized=False,
        n_resamples=20000,
        method="percentile",
        random_state=np.random.default_rng(2),
    )
    assert got[0] == pytest.approx(float(np.mean(a - b)))
    ci = res.confidence_interval
    assert got[1] == pytest.approx(ci.low, abs=0.004)
    assert got[2] == pytest.approx(ci.high, abs=0.004)
    assert paired_bootstrap(list(a), list(b), n_boot=500, seed=9) == paired_bootstrap(
        list(a), list(b), n_boot=500, seed=9
    )
    assert paired_bootstrap(list(a), list(b), n_boot=500, seed=9) != paired_bootstrap(
        list(a), list(b), n_boot=500, seed=10
    )


def test_paired_bootstrap_keeps_the_pairing() -> None:
    """Strongly correlated engines: the paired interval is much narrower than resampling the two
    engines' scores independently would give (the unpaired SE is ~10x the paired one here)."""
    rng = np.random.default_rng(8)
    b = rng.uniform(0, 1, size=80)
    a = b + 0.02 + rng.normal(0, 0.02, size=80)
    _, lo, hi = paired_bootstrap(list(a), list(b), seed=3)
    assert hi - lo < 2 * 1.96 * np.std(a - b, ddof=1) / math.sqrt(80) * 1.2
    unpaired = math.sqrt(np.var(a, ddof=1) / 80 + np.var(b, ddof=1) / 80)
    assert hi - lo < 0.2 * 2 * 1.96 * unpaired
    assert lo > 0


def test_paired_bootstrap_degenerate_cases() -> None:
    assert all(math.isnan(x) for x in paired_bootstrap([], [], seed=1))
    d, lo, hi = paired_bootstrap([0.7], [0.2], seed=1)
    assert d == pytest.approx(0.5) and math.isnan(lo) and math.isnan(hi)
    assert paired_bootstrap([0.5] * 10, [0.5] * 10, seed=1) == (0.0, 0.0, 0.0)
    # fewer pairs than MIN_N_BOOTSTRAP (issue #30): the difference, no interval
    d, lo, hi = paired_bootstrap([0.5, 1.0, 0.0], [0.25, 0.5, 0.0], seed=1)
    assert d == pytest.approx(0.25) and math.isnan(lo) and math.isnan(hi)
    assert paired_bootstrap([0.5] * 4, [0.5] * 4, seed=1, min_n=2) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="n_boot"):
        paired_bootstrap([1, 0], [0, 1], seed=1, n_boot=0)
