"""pass@k / pass^k for every k in one pass (``stats._passk.pass_k_curves``), as golden's
repeats table uses it: the same numbers as the per-k functions, and the estimator's defining
properties, on random counts.

Reference: pass@k = 1 − C(n−c, k)/C(n, k) (Chen et al. 2021), pass^k = C(c, k)/C(n, k)
(τ-bench); nan where k > n.
"""

from __future__ import annotations

import itertools
import math
import random
import time
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval.stats import mean_pass_at_k, mean_pass_hat_k, pass_at_k, pass_hat_k
from sealedeval.stats._passk import mean_pass_k_curves, pass_k_curves
from sealedeval.suites.golden import plan

SETTINGS = settings(database=None, deadline=None)

nc = st.integers(0, 400).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n)))


def _close(a: float, b: float, tol: float = 1e-12) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol


@SETTINGS
@given(nc, st.integers(1, 40))
def test_all_k_matches_the_per_k_functions(counts: tuple[int, int], extra: int) -> None:
    n, c = counts
    k_max = n + extra  # past n too: nan there
    at, hat = pass_k_curves(n, c, k_max)
    assert len(at) == len(hat) == k_max
    for k in range(1, k_max + 1):
        assert _close(at[k - 1], pass_at_k(n, c, k)), (n, c, k)
        assert _close(hat[k - 1], pass_hat_k(n, c, k)), (n, c, k)


@SETTINGS
@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_all_k_equals_the_exact_binomial_ratios(counts: tuple[int, int]) -> None:
    n, c = counts
    at, hat = pass_k_curves(n, c, n)
    for k in range(1, n + 1):
        assert at[k - 1] == pytest.approx(
            float(1 - Fraction(math.comb(n - c, k), math.comb(n, k))), abs=1e-13
        )
        assert hat[k - 1] == pytest.approx(
            float(Fraction(math.comb(c, k), math.comb(n, k))), rel=1e-12, abs=1e-300
        )


@SETTINGS
@given(st.integers(2, 120).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_leave_one_out_average_is_the_estimate(counts: tuple[int, int]) -> None:
    """The property of an unbiased (U-statistic) estimator: its value on n trials is the mean of
    its values on the n subsets of n − 1 trials, c of which drop a success. A plug-in estimate,
    an off-by-one in a factor or a product that starts at the wrong k all break it."""
    n, c = counts
    at, hat = pass_k_curves(n, c, n - 1)
    drop_hit = pass_k_curves(n - 1, c - 1, n - 1) if c else ([0.0] * (n - 1), [0.0] * (n - 1))
    drop_miss = pass_k_curves(n - 1, c, n - 1) if c < n else ([0.0] * (n - 1), [0.0] * (n - 1))
    for k in range(1, n):
        for full, hit, miss in ((at, drop_hit[0], drop_miss[0]), (hat, drop_hit[1], drop_miss[1])):
            avg = (c * hit[k - 1] + (n - c) * miss[k - 1]) / n
            assert full[k - 1] == pytest.approx(avg, abs=1e-12), (n, c, k)


@SETTINGS
@given(nc)
def test_curves_are_monotone_bounded_and_start_at_the_success_rate(counts: tuple[int, int]) -> None:
    n, c = counts
    if n == 0:
        at, hat = pass_k_curves(0, 0, 3)
        assert all(math.isnan(v) for v in at + hat)
        return
    at, hat = pass_k_curves(n, c, n)
    assert at[0] == pytest.approx(c / n, abs=1e-15)
    assert hat[0] == pytest.approx(c / n, abs=1e-15)
    assert all(b >= a - 1e-15 for a, b in itertools.pairwise(at))
    assert all(b <= a + 1e-15 for a, b in itertools.pairwise(hat))
    assert all(0.0 <= h <= a + 1e-15 and a <= 1.0 for h, a in zip(hat, at, strict=True))
    # exactly 1 once every k-subset must hold a success; exactly 0 (never -0.0) past c
    assert all(v == 1.0 for v in at[n - c :])
    assert all(v == 0.0 and math.copysign(1, v) == 1 for v in hat[c:])


@SETTINGS
@given(
    st.dictionaries(
        st.text("abcdef", min_size=1, max_size=3),
        st.lists(st.booleans(), min_size=0, max_size=25),
        max_size=6,
    ),
    st.integers(1, 30),
)
def test_mean_curves_match_the_per_k_means(results: dict[str, list[bool]], k_max: int) -> None:
    at, hat = mean_pass_k_curves(results, k_max)
    for k in range(1, k_max + 1):
        assert _close(at[k - 1], mean_pass_at_k(results, k))
        assert _close(hat[k - 1], mean_pass_hat_k(results, k))


def test_mean_curves_validate_like_the_per_k_means() -> None:
    with pytest.raises(ValueError):
        mean_pass_k_curves({"t": [True, 0.5]}, 1)  # type: ignore[list-item]
    with pytest.raises(ValueError):
        mean_pass_k_curves({"t": [True]}, 0)
    with pytest.raises(TypeError):
        mean_pass_k_curves({"t": [True]}, 1.0)  # type: ignore[arg-type]
    at, hat = mean_pass_k_curves({}, 2)
    assert all(math.isnan(v) for v in at + hat)


def _repeat_rows(
    trials: dict[str, list[bool]],
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    rows: list[dict[str, object]] = []
    graded: list[dict[str, object]] = []
    for tid, outcomes in trials.items():
        for i, ok in enumerate(outcomes):
            key = f"{tid}-{i}"
            rows.append({"request_key": key, "item_id": tid, "repeat": i})
            graded.append({"request_key": key, "category": "correct" if ok else "wrong"})
    return rows, graded


def test_repeats_table_matches_the_per_k_means() -> None:
    rng = random.Random(7)
    trials = {f"t{i}": [rng.random() < p for _ in range(12)] for i, p in enumerate((0.1, 0.5, 0.9))}
    rows, graded = _repeat_rows(trials)
    r = plan.repeats_table(rows, graded, 12)
    assert list(r["pass_at_k"]) == [str(k) for k in range(1, 13)]
    for k in range(1, 13):
        assert r["pass_at_k"][str(k)] == pytest.approx(mean_pass_at_k(trials, k), abs=1e-12)
        assert r["pass_hat_k"][str(k)] == pytest.approx(mean_pass_hat_k(trials, k), abs=1e-12)
    assert plan.repeats_table([], [], 0)["pass_at_k"] == {}


def test_repeats_table_is_linear_in_repeats() -> None:
    """4,500 repeats per task (a benchmark's scale) in well under a second; one k at a time took
    minutes."""
    rng = random.Random(3)
    trials = {f"t{i}": [rng.random() < 0.6 for _ in range(4500)] for i in range(4)}
    rows, graded = _repeat_rows(trials)
    t0 = time.perf_counter()
    r = plan.repeats_table(rows, graded, 4500)
    assert time.perf_counter() - t0 < 5.0
    assert len(r["pass_at_k"]) == 4500
    for k in (1, 2, 50, 4500):
        assert r["pass_at_k"][str(k)] == pytest.approx(mean_pass_at_k(trials, k), abs=1e-10)
        assert r["pass_hat_k"][str(k)] == pytest.approx(mean_pass_hat_k(trials, k), abs=1e-10)
