"""Wilson score interval and all-or-nothing compounding.

Reference (shared/reference/stats.md):
    Wilson 95% (z = 1.959964): centre = (p̂ + z²/2n)/(1 + z²/n);
    half = z/(1 + z²/n) · sqrt(p̂(1−p̂)/n + z²/4n²).
    SciPy: ``binomtest(k, n).proportion_ci(method="wilson")`` (its default is Clopper–Pearson!).
    Vectors: 8/10 → (0.490162, 0.943318); 0/10 → (0, 0.277533); 10/10 → (0.722467, 1).
    Compounding (Schaeffer et al. 2023): per-fact p over L facts all-or-nothing ≈ p^L
    (0.9^5 = 0.59049).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval.stats import Z_95, compounded, wilson

SETTINGS = settings(database=None, deadline=None)

try:
    from scipy.stats import binomtest
except ImportError:  # pragma: no cover - depends on the environment
    binomtest = None

needs_scipy = pytest.mark.skipif(binomtest is None, reason="scipy not installed")


@pytest.mark.parametrize(
    ("k", "n", "expected"),
    [
        (8, 10, (0.490162, 0.943318)),
        (0, 10, (0.0, 0.277533)),
        (10, 10, (0.722467, 1.0)),
    ],
)
def test_wilson_reference_vectors(k: int, n: int, expected: tuple[float, float]) -> None:
    lo, hi = wilson(k, n)
    assert lo == pytest.approx(expected[0], abs=1e-6)
    assert hi == pytest.approx(expected[1], abs=1e-6)


def test_wilson_extremes_are_exact() -> None:
    assert wilson(0, 10)[0] == 0.0
    assert wilson(10, 10)[1] == 1.0


def test_wilson_default_z_is_95_percent() -> None:
    assert pytest.approx(1.959964, abs=1e-6) == Z_95
    assert wilson(8, 10) == wilson(8, 10, Z_95)


def test_wilson_wider_with_larger_z() -> None:
    lo95, hi95 = wilson(8, 10)
    lo99, hi99 = wilson(8, 10, 2.5758293035489)
    assert lo99 < lo95 and hi99 > hi95


def test_wilson_no_trials_is_nan() -> None:
    lo, hi = wilson(0, 0)
    assert math.isnan(lo) and math.isnan(hi)


@pytest.mark.parametrize(("k", "n"), [(11, 10), (-1, 10), (1, -1)])
def test_wilson_rejects_malformed_counts(k: int, n: int) -> None:
    with pytest.raises(ValueError):
        wilson(k, n)


def test_wilson_rejects_bad_z_and_float_counts() -> None:
    with pytest.raises(ValueError):
        wilson(1, 2, -1.0)
    with pytest.raises(ValueError):
        wilson(1, 2, math.nan)
    with pytest.raises(TypeError):
        wilson(1.0, 2)  # type: ignore[arg-type]


@SETTINGS
@given(
    st.integers(min_value=1, max_value=10**6).flatmap(
        lambda n: st.tuples(st.integers(min_value=0, max_value=n), st.just(n))
    )
)
def test_wilson_contains_phat_and_lies_in_unit_interval(kn: tuple[int, int]) -> None:
    k, n = kn
    lo, hi = wilson(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    assert lo < hi


@SETTINGS
@given(
    st.integers(min_value=1, max_value=500).flatmap(
        lambda n: st.tuples(st.integers(min_value=0, max_value=n), st.just(n))
    )
)
def test_wilson_is_symmetric_under_label_swap(kn: tuple[int, int]) -> None:
    k, n = kn
    lo, hi = wilson(k, n)
    lo2, hi2 = wilson(n - k, n)
    assert lo == pytest.approx(1.0 - hi2, abs=1e-12)
    assert hi == pytest.approx(1.0 - lo2, abs=1e-12)


@needs_scipy
@SETTINGS
@given(
    st.integers(min_value=1, max_value=2000).flatmap(
        lambda n: st.tuples(st.integers(min_value=0, max_value=n), st.just(n))
    )
)
def test_wilson_matches_scipy(kn: tuple[int, int]) -> None:
    k, n = kn
    assert binomtest is not None
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lo, hi = wilson(k, n)
    assert lo == pytest.approx(ci.low, abs=1e-9)
    assert hi == pytest.approx(ci.high, abs=1e-9)


def test_compounded_reference_vector() -> None:
    assert compounded(0.9, 5) == pytest.approx(0.59049, abs=1e-12)
    assert compounded(0.9, 0) == 1.0
    assert math.isnan(compounded(math.nan, 3))
    with pytest.raises(ValueError):
        compounded(1.5, 2)
    with pytest.raises(ValueError):
        compounded(0.5, -1)
