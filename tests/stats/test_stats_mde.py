"""MDE, variance components and exact sign-test power, against independent SciPy computations.

Reference (shared/reference/stats.md, copied here so the tests never read it at run time):
    Sample size (Miller 2024 Eq. 9): n = (z_{α/2}+z_β)² · (ω² + σ_A²/K_A + σ_B²/K_B)/δ²;
    ω²=1/9, σ²=0, δ=0.03 → 969 items. Exact sign test: b=10, c=2 → 0.038574 (=158/4096).
The MDE is Eq. 9 solved for δ; the sign test's power is summed over its exact rejection region.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval.stats import (
    discordant_split,
    mde_paired,
    sample_size_items,
    sign_test_power,
    variance_components,
    z_total,
)

scipy_stats = pytest.importorskip("scipy.stats")

SETTINGS = settings(database=None, deadline=None, max_examples=200)


def _z(alpha: float, power: float) -> float:
    return float(scipy_stats.norm.ppf(1 - alpha / 2) + scipy_stats.norm.ppf(power))


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1])
@pytest.mark.parametrize("power", [0.5, 0.8, 0.9])
@pytest.mark.parametrize(
    ("omega2", "s2a", "s2b", "ka", "kb", "n"),
    [(1 / 9, 0.0, 0.0, 1, 1, 969), (0.04, 0.09, 0.01, 4, 2, 50), (0.2, 0.25, 0.25, 1, 10, 7)],
)
def test_mde_matches_the_formula_with_scipy_quantiles(
    alpha: float, power: float, omega2: float, s2a: float, s2b: float, ka: int, kb: int, n: int
) -> None:
    want = _z(alpha, power) * math.sqrt((omega2 + s2a / ka + s2b / kb) / n)
    assert mde_paired(omega2, s2a, s2b, ka, kb, n, alpha, power) == pytest.approx(want, rel=1e-12)
    assert z_total(alpha, power) == pytest.approx(_z(alpha, power), rel=1e-12)


def test_mde_is_the_inverse_of_the_eq9_vector() -> None:
    assert sample_size_items(1 / 9, 0, 0, 1, 1, 0.03) == 969
    assert mde_paired(1 / 9, 0, 0, 1, 1, 969) <= 0.03 < mde_paired(1 / 9, 0, 0, 1, 1, 968)
    assert mde_paired(1 / 9, 0, 0, 1, 1, 969) == pytest.approx(0.03, rel=1e-4)


@SETTINGS
@given(
    omega2=st.floats(0.0, 1.0),
    s2a=st.floats(0.0, 1.0),
    s2b=st.floats(0.0, 1.0),
    ka=st.integers(1, 20),
    kb=st.integers(1, 20),
    delta=st.floats(0.005, 1.0),
    power=st.floats(0.05, 0.99),
)
def test_round_trip_with_sample_size(
    omega2: float, s2a: float, s2b: float, ka: int, kb: int, delta: float, power: float
) -> None:
    """n = sample_size_items(δ) is the smallest n whose MDE is at most δ (up to float error)."""
    if omega2 + s2a / ka + s2b / kb < 1e-6:
        return
    n = sample_size_items(omega2, s2a, s2b, ka, kb, delta, power=power)
    assert mde_paired(omega2, s2a, s2b, ka, kb, n, power=power) <= delta * (1 + 1e-12)
    if n > 1:
        assert mde_paired(omega2, s2a, s2b, ka, kb, n - 1, power=power) > delta * (1 - 1e-12)


def test_mde_degenerate_cases_and_bad_input() -> None:
    assert mde_paired(0.1, 0.0, 0.0, 1, 1, 0) == math.inf
    assert mde_paired(0.0, 0.0, 0.0, 1, 1, 10) == 0.0
    with pytest.raises(ValueError, match="omega2"):
        mde_paired(-0.1, 0, 0, 1, 1, 10)
    with pytest.raises(ValueError, match="k_a"):
        mde_paired(0.1, 0, 0, 0, 1, 10)
    with pytest.raises(TypeError, match="n must be an integer"):
        mde_paired(0.1, 0, 0, 1, 1, 10.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="power"):
        mde_paired(0.1, 0, 0, 1, 1, 10, power=1.0)


# -- variance components -----------------------------------------------------------------------


def _anova_msw(groups: list[list[float]]) -> float:
    """Mean square within of a one-way ANOVA, computed independently (SciPy's f_oneway gives F
    = MSB/MSW; MSB from the group means, so MSW = MSB / F)."""
    means = [np.mean(g) for g in groups]
    grand = np.mean(np.concatenate(groups))
    k = len(groups)
    msb = sum(len(g) * (m - grand) ** 2 for g, m in zip(groups, means, strict=True)) / (k - 1)
    f = scipy_stats.f_oneway(*groups).statistic
    return float(msb / f)


def test_within_item_variance_is_the_anova_mean_square_within() -> None:
    rng = np.random.default_rng(3)
    a = {f"i{j}": list(rng.normal(j * 0.1, 0.3, size=4)) for j in range(12)}
    b = {f"i{j}": list(rng.normal(j * 0.05, 0.2, size=3)) for j in range(12)}
    vc = variance_components(a, b)
    assert vc.sigma2_a == pytest.approx(_anova_msw(list(a.values())), rel=1e-10)
    assert vc.sigma2_b == pytest.approx(_anova_msw(list(b.values())), rel=1e-10)
    assert (vc.k_a, vc.k_b, vc.n, vc.sigma2_identified) == (4, 3, 12, True)
    d = [np.mean(a[i]) - np.mean(b[i]) for i in sorted(a)]
    assert vc.var_diff == pytest.approx(np.var(d, ddof=1))
    assert vc.omega2 == pytest.approx(max(0.0, vc.var_diff - vc.sigma2_a / 4 - vc.sigma2_b / 3))


def test_components_recover_known_variances_in_a_large_simulation() -> None:
    """ω² = 0.04, σ_A² = 0.09, σ_B² = 0.01, K = 5 and 2 on 4000 items: estimates within a few
    standard errors of the truth (the estimator is unbiased before the truncation at 0)."""
    rng = np.random.default_rng(11)
    n = 4000
    mu_b = rng.normal(0.5, 0.3, size=n)
    mu_a = mu_b + 0.1 + rng.normal(0, 0.2, size=n)  # ω² = 0.04
    a = {i: list(mu_a[i] + rng.normal(0, 0.3, size=5)) for i in range(n)}
    b = {i: list(mu_b[i] + rng.normal(0, 0.1, size=2)) for i in range(n)}
    vc = variance_components(a, b)
    assert vc.sigma2_a == pytest.approx(0.09, rel=0.05)
    assert vc.sigma2_b == pytest.approx(0.01, rel=0.08)
    assert vc.omega2 == pytest.approx(0.04, rel=0.1)


def test_one_replicate_folds_the_within_variance_into_omega2() -> None:
    a = {i: [float(x)] for i, x in enumerate([1, 1, 0, 1, 0, 1, 1, 0, 1, 1])}
    b = {i: [float(x)] for i, x in enumerate([1, 0, 0, 1, 0, 0, 1, 0, 1, 0])}
    vc = variance_components(a, b)
    d = np.array([a[i][0] - b[i][0] for i in range(10)])
    assert (vc.sigma2_a, vc.sigma2_b, vc.sigma2_identified) == (0.0, 0.0, False)
    assert vc.omega2 == pytest.approx(np.var(d, ddof=1))
    # the MDE from the components is z_total · paired SE (Miller Eq. 7: 0.1527525)
    mde = mde_paired(vc.omega2, vc.sigma2_a, vc.sigma2_b, vc.k_a, vc.k_b, vc.n)
    assert mde == pytest.approx(_z(0.05, 0.8) * 0.1527525, rel=1e-6)


def test_components_degenerate_cases() -> None:
    empty = variance_components({}, {"x": [1.0]})
    assert empty.n == 0 and math.isnan(empty.omega2) and math.isnan(empty.sigma2_a)
    one = variance_components({"x": [1.0, 0.0]}, {"x": [1.0]})
    assert one.n == 1 and math.isnan(one.omega2) and one.sigma2_a == 0.5
    tied = variance_components({i: [1.0, 1.0] for i in range(5)}, {i: [1.0] for i in range(5)})
    assert (tied.omega2, tied.sigma2_a, tied.sigma2_b, tied.var_diff) == (0.0, 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="at least one score"):
        variance_components({"x": []}, {"x": [1.0]})
    with pytest.raises(ValueError, match="not a finite number"):
        variance_components({"x": [math.nan]}, {"x": [1.0]})


# -- exact power of the sign test --------------------------------------------------------------


def _scipy_power(m: int, split: float, alpha: float) -> float:
    region = [b for b in range(m + 1) if scipy_stats.binomtest(b, m, 0.5).pvalue <= alpha]
    return float(sum(scipy_stats.binom.pmf(b, m, split) for b in region))


@pytest.mark.parametrize("m", [1, 5, 6, 12, 17, 30, 61])
@pytest.mark.parametrize("split", [0.5, 0.6, 0.75, 0.9, 0.2])
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_sign_test_power_matches_scipy(m: int, split: float, alpha: float) -> None:
    assert sign_test_power(m, split, alpha) == pytest.approx(_scipy_power(m, split, alpha), 1e-9)


def test_sign_test_power_vector_size_and_degenerate_cases() -> None:
    # m = 12: the exact test rejects at b ∈ {0, 1, 2, 10, 11, 12} (p(10, 2) = 0.038574)
    assert sign_test_power(12, 0.9) == pytest.approx(0.889130, abs=1e-6)
    assert sign_test_power(12, 0.5) == pytest.approx(158 / 4096)  # the actual size = p(10, 2)
    for m in range(0, 40):
        assert sign_test_power(m, 0.5) <= 0.05
    assert sign_test_power(0, 0.9) == 0.0
    assert sign_test_power(5, 1.0) == 0.0  # 5:0 gives p = 0.0625: five pairs can never reject
    assert sign_test_power(6, 1.0) == 1.0 and sign_test_power(6, 0.0) == 1.0
    assert sign_test_power(20, 0.7) == pytest.approx(sign_test_power(20, 0.3))
    with pytest.raises(ValueError, match="split"):
        sign_test_power(5, 1.5)
    with pytest.raises(TypeError):
        sign_test_power(5.0, 0.5)  # type: ignore[arg-type]


def test_discordant_split() -> None:
    assert discordant_split(0.05, 0.2) == pytest.approx(0.625)
    assert discordant_split(-0.1, 0.2) == pytest.approx(0.25)
    assert discordant_split(0.5, 0.2) == 1.0
    assert math.isnan(discordant_split(0.05, 0.0))
    with pytest.raises(ValueError, match="discordance"):
        discordant_split(0.05, 1.5)
