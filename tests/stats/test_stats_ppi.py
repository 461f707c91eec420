"""Prediction-powered inference against the papers' formulas written out independently."""

from __future__ import annotations

import math
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import pytest

from sealedeval import stats

Z = NormalDist().inv_cdf(0.975)


def _paper(y: np.ndarray, f: np.ndarray, fu: np.ndarray, alpha: float = 0.05) -> dict[str, float]:
    """PPI (Angelopoulos et al. 2023) and PPI++ (Angelopoulos, Duchi & Zrnic 2024) for a mean,
    term by term from the papers (sample variances, ddof = 1)."""
    n, big_n = len(y), len(fu)
    z = NormalDist().inv_cdf(1 - alpha / 2)
    # PPI: θ = mean f(X̃) − mean(f(X) − Y); σ² = var f(X̃)/N + var(f(X) − Y)/n
    theta = fu.mean() - (f - y).mean()
    se = math.sqrt(fu.var(ddof=1) / big_n + (f - y).var(ddof=1) / n)
    # PPI++: λ = Cov(Y, f)/((1 + n/N) Var f), clipped to [0, 1]
    cov = ((y - y.mean()) * (f - f.mean())).sum() / (n - 1)
    pooled = np.concatenate([f, fu])
    lam = min(1.0, max(0.0, cov / ((1 + n / big_n) * pooled.var(ddof=1))))
    theta_pp = y.mean() + lam * (fu.mean() - f.mean())
    se_pp = math.sqrt(lam**2 * fu.var(ddof=1) / big_n + (y - lam * f).var(ddof=1) / n)
    se_cl = y.std(ddof=1) / math.sqrt(n)
    return {
        "ppi": theta,
        "ppi_lo": theta - z * se,
        "ppi_hi": theta + z * se,
        "lam": lam,
        "pp": theta_pp,
        "pp_lo": theta_pp - z * se_pp,
        "pp_hi": theta_pp + z * se_pp,
        "cl_lo": y.mean() - z * se_cl,
        "cl_hi": y.mean() + z * se_cl,
        "eff_n": n * (se_cl / se_pp) ** 2,
    }


def test_matches_the_papers_formulas_on_a_simulated_judge() -> None:
    rng = np.random.default_rng(20240101)
    truth = rng.random(1060) < 0.3
    # a judge right 85% of the time, biased towards PASS on the answers it gets wrong
    judge = np.where(rng.random(1060) < 0.85, truth, rng.random(1060) < 0.8)
    y, f, fu = truth[:60].astype(float), judge[:60].astype(float), judge[60:].astype(float)
    want = _paper(y, f, fu)
    got = stats.ppi_mean(y, f, fu)
    assert got.n_labelled == 60 and got.n_unlabelled == 1000
    assert got.ppi.estimate == pytest.approx(want["ppi"], abs=1e-12)
    assert (got.ppi.lo, got.ppi.hi) == pytest.approx((want["ppi_lo"], want["ppi_hi"]), abs=1e-12)
    assert got.lam == pytest.approx(want["lam"], abs=1e-12)
    assert 0 < got.lam < 1
    assert got.ppi_pp.estimate == pytest.approx(want["pp"], abs=1e-12)
    assert (got.ppi_pp.lo, got.ppi_pp.hi) == pytest.approx(
        (want["pp_lo"], want["pp_hi"]), abs=1e-12
    )
    assert (got.classical.lo, got.classical.hi) == pytest.approx(
        (want["cl_lo"], want["cl_hi"]), abs=1e-12
    )
    assert got.effective_n == pytest.approx(want["eff_n"], rel=1e-12)
    # the judge is good, so the labels go further than 60
    assert got.effective_n > 60 and got.width_ratio < 1
    assert got.judge.estimate == pytest.approx(fu.mean())


def test_small_case_by_exact_fractions() -> None:
    """y = [1,0,1,1], f = [1,0,0,1], f̃ = [1,1,0,0,1,0]: rectifier f − y = [0,0,−1,0] has mean
    −1/4 and variance 1/4; var f̃ = 3/10 → PPI 1/2 + 1/4 = 3/4, se² = 3/60 + 1/16."""
    y, f, fu = [1, 0, 1, 1], [1, 0, 0, 1], [1, 1, 0, 0, 1, 0]
    got = stats.ppi_mean(y, f, fu, lam=1.0)
    assert got.ppi.estimate == pytest.approx(0.75)
    se = math.sqrt(float(Fraction(3, 10) / 6 + Fraction(1, 4) / 4))
    assert got.ppi.se == pytest.approx(se)
    assert got.ppi_pp == got.ppi  # λ = 1 fixed is PPI
    # tuned λ: cov(y, f) = 1/6; pooled f (10 values, 5 ones) var = 25/90; n/N = 4/6
    lam = Fraction(1, 6) / ((1 + Fraction(4, 6)) * Fraction(25, 90))
    tuned = stats.ppi_mean(y, f, fu)
    assert tuned.lam == pytest.approx(float(lam))  # 0.36
    assert tuned.ppi_pp.estimate == pytest.approx(float(Fraction(3, 4) + lam * 0))
    # λ = 0 is the classical estimate
    zero = stats.ppi_mean(y, f, fu, lam=0.0)
    assert zero.ppi_pp == zero.classical


def test_perfect_judge_equals_judge_mean_with_a_narrower_interval() -> None:
    rng = np.random.default_rng(7)
    y = (rng.random(40) < 0.4).astype(float)
    fu = (rng.random(400) < 0.4).astype(float)
    got = stats.ppi_mean(y, y, fu)
    assert got.ppi.estimate == pytest.approx(fu.mean(), abs=1e-15)
    assert got.ppi.se == pytest.approx(fu.std(ddof=1) / math.sqrt(400))
    assert got.ppi.width < got.classical.width
    assert got.ppi_pp.width < got.classical.width
    assert got.effective_n > 40


def test_constant_predictions_fall_back_to_the_classical_estimate() -> None:
    y = [1, 0, 0, 1, 1, 0, 1, 0]
    got = stats.ppi_mean(y, [1] * 8, [1] * 30)
    assert got.lam == 0.0
    assert got.ppi_pp == got.classical
    assert got.effective_n == pytest.approx(8)
    assert got.width_ratio == pytest.approx(1.0)
    # PPI itself: the judge says PASS always; the rectifier removes its bias exactly
    assert got.ppi.estimate == pytest.approx(0.5)


def test_everything_constant_is_undefined_not_infinite() -> None:
    got = stats.ppi_mean([1, 1, 1], [1, 1, 1], [1] * 10)
    assert got.ppi.estimate == 1.0 and got.ppi.se == 0.0
    assert math.isnan(got.effective_n) and math.isnan(got.width_ratio)


@pytest.mark.parametrize("n", [0, 1])
def test_refuses_fewer_than_two_labels(n: int) -> None:
    with pytest.raises(ValueError, match="at least 2 human labels"):
        stats.ppi_mean([1] * n, [1] * n, [0, 1, 1])


def test_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="same length"):
        stats.ppi_mean([1, 0], [1, 0, 1], [0, 1])
    with pytest.raises(ValueError, match="unlabelled"):
        stats.ppi_mean([1, 0], [1, 0], [1])
    with pytest.raises(ValueError, match="alpha"):
        stats.ppi_mean([1, 0], [1, 0], [1, 0], alpha=1.5)
    with pytest.raises(ValueError, match="lam"):
        stats.ppi_mean([1, 0], [1, 0], [1, 0], lam=2.0)
    with pytest.raises(ValueError, match="finite"):
        stats.ppi_mean([1, math.nan], [1, 0], [1, 0])


def test_alpha_sets_the_level() -> None:
    y, f, fu = [1, 0, 1, 1, 0], [1, 0, 1, 0, 0], [1, 0, 1, 1, 0, 0, 1]
    wide = stats.ppi_mean(y, f, fu, alpha=0.01)
    narrow = stats.ppi_mean(y, f, fu, alpha=0.10)
    z99, z90 = NormalDist().inv_cdf(0.995), NormalDist().inv_cdf(0.95)
    assert wide.ppi.width / narrow.ppi.width == pytest.approx(z99 / z90)
    assert wide.as_dict()["ppi"]["estimate"] == wide.ppi.estimate
