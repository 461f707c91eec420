"""pass@k (Chen et al. 2021) and pass^k (τ-bench), per task and averaged over tasks.

Reference (shared/reference/stats.md):
    pass@k = 1 − C(n−c, k)/C(n, k). Stable form: if n−c < k → 1, else
    1 − Π_{i=n−c+1..n} (1 − k/i). Unbiased; the plug-in 1−(1−c/n)^k is biased.
    Vector: n=10, c=3, k=5 → 0.9166666667 (plug-in 0.831930); n=10, c=3, k=8 → 1.0; c=0 → 0.
    pass^k = C(c, k)/C(n, k): all k i.i.d. trials succeed. 0 if c < k.
    Vector: n=10, c=5, k=3 → 10/120 = 0.0833333.
    Undefined (NaN, reported as such) when a task has fewer than k valid trials; never a silent
    1.0.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval.stats import mean_pass_at_k, mean_pass_hat_k, pass_at_k, pass_hat_k

SETTINGS = settings(database=None, deadline=None)


def test_pass_at_k_reference_vectors() -> None:
    assert pass_at_k(10, 3, 5) == pytest.approx(0.9166666667, abs=1e-10)
    assert pass_at_k(10, 3, 8) == 1.0
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 0, 1) == 0.0


def test_pass_at_k_is_not_the_biased_plug_in() -> None:
    plug_in = 1 - (1 - 3 / 10) ** 5
    assert plug_in == pytest.approx(0.831930, abs=1e-6)
    assert abs(pass_at_k(10, 3, 5) - plug_in) > 0.08


def test_pass_at_1_is_the_success_rate() -> None:
    for n in range(1, 12):
        for c in range(n + 1):
            assert pass_at_k(n, c, 1) == pytest.approx(c / n, abs=1e-12)
            assert pass_hat_k(n, c, 1) == pytest.approx(c / n, abs=1e-12)


def test_pass_hat_k_reference_vectors() -> None:
    assert pass_hat_k(10, 5, 3) == pytest.approx(10 / 120, abs=1e-12)
    assert pass_hat_k(10, 5, 3) == pytest.approx(0.0833333, abs=1e-7)
    assert pass_hat_k(10, 2, 3) == 0.0  # c < k
    assert pass_hat_k(10, 10, 10) == 1.0


def test_fewer_than_k_trials_is_nan_not_one() -> None:
    assert math.isnan(pass_at_k(3, 3, 5))
    assert math.isnan(pass_hat_k(3, 3, 5))
    assert math.isnan(pass_at_k(0, 0, 1))


@pytest.mark.parametrize(("n", "c", "k"), [(5, 6, 1), (-1, 0, 1), (5, -1, 1), (5, 2, 0)])
def test_malformed_input_raises(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)


def test_non_integer_counts_raise_type_error() -> None:
    with pytest.raises(TypeError):
        pass_at_k(10.0, 3, 5)  # type: ignore[arg-type]


small_nck = st.integers(1, 10).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))
)


@SETTINGS
@given(small_nck)
def test_pass_at_k_and_pass_hat_k_match_brute_force_enumeration(nck: tuple[int, int, int]) -> None:
    """Enumerate every k-subset of the n trials (first c succeed)."""
    n, c, k = nck
    subsets = list(itertools.combinations(range(n), k))
    any_ok = Fraction(sum(any(i < c for i in s) for s in subsets), len(subsets))
    all_ok = Fraction(sum(all(i < c for i in s) for s in subsets), len(subsets))
    assert pass_at_k(n, c, k) == pytest.approx(float(any_ok), abs=1e-12)
    assert pass_hat_k(n, c, k) == pytest.approx(float(all_ok), abs=1e-12)


@SETTINGS
@given(st.integers(1, 300).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_k_matches_exact_combinatorial_form(nc: tuple[int, int]) -> None:
    n, c = nc
    for k in sorted({1, min(2, n), n // 3 + 1, n // 2 + 1, n}):
        exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
        assert pass_at_k(n, c, k) == pytest.approx(float(exact), abs=1e-10)


@SETTINGS
@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_monotone_in_k(nc: tuple[int, int]) -> None:
    n, c = nc
    at = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    hat = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    assert all(later >= earlier - 1e-12 for earlier, later in itertools.pairwise(at))
    assert all(later <= earlier + 1e-12 for earlier, later in itertools.pairwise(hat))
    assert all(0.0 <= v <= 1.0 for v in at + hat)
    assert all(h <= a + 1e-12 for h, a in zip(hat, at, strict=True))


def test_mean_over_tasks() -> None:
    results = {
        "t1": [True] * 3 + [False] * 7,  # pass@5 0.91667, pass^3 C(3,3)/C(10,3) = 1/120
        "t2": [True] * 5 + [False] * 5,  # pass^3 10/120
    }
    assert mean_pass_at_k(results, 5) == pytest.approx(
        (pass_at_k(10, 3, 5) + pass_at_k(10, 5, 5)) / 2, abs=1e-12
    )
    assert mean_pass_hat_k(results, 3) == pytest.approx((1 / 120 + 10 / 120) / 2, abs=1e-12)


def test_mean_weights_tasks_equally_not_trials() -> None:
    results = {"many": [True] * 100, "few": [False] * 2}
    assert mean_pass_at_k(results, 1) == pytest.approx(0.5)
    assert mean_pass_hat_k(results, 2) == pytest.approx(0.5)


def test_mean_is_nan_if_any_task_has_fewer_than_k_trials() -> None:
    results = {"ok": [True] * 10, "short": [True, True]}
    assert math.isnan(mean_pass_at_k(results, 3))
    assert math.isnan(mean_pass_hat_k(results, 3))
    assert mean_pass_at_k(results, 2) == 1.0
    assert math.isnan(mean_pass_at_k({}, 1))


def test_mean_rejects_non_boolean_outcomes_and_bad_k() -> None:
    with pytest.raises(ValueError):
        mean_pass_at_k({"t": [True, 0.5]}, 1)  # type: ignore[list-item]
    with pytest.raises(ValueError):
        mean_pass_at_k({"t": [True, False]}, 0)
    ints_are_accepted = {"t": [1, 0, 1, 1]}
    assert mean_pass_at_k(ints_are_accepted, 1) == pytest.approx(0.75)  # type: ignore[arg-type]
