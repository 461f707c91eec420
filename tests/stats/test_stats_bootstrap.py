"""Seeded stratified percentile bootstrap and per-group bootstrap tables.

Reference (shared/reference/stats.md):
    Collapse replicates to items; resample items with replacement within each stratum (fixed
    stratum sizes); percentile or BCa CI; seeded. Analytic check for Σ w_h p̂_h:
    var = Σ w_h² p̂_h(1−p̂_h)/n_h. Vector: recall 32/40, specificity 54/60, balanced accuracy
    0.85 → SE 0.0370810.

The bootstrap SE is read off the percentile CI as (hi − lo) / (2 · 1.959964), which for these
near-normal sampling distributions is within a few percent of the bootstrap standard deviation.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval.stats import bootstrap_by_group, stratified_bootstrap
from sealedeval.stats._small_n import MIN_N_BOOTSTRAP

SETTINGS = settings(database=None, deadline=None, max_examples=60)
Z = 1.959963984540054

# Balanced accuracy: positives (recall 32/40) and negatives (specificity 54/60).
BA_VALUES = [1.0] * 32 + [0.0] * 8 + [1.0] * 54 + [0.0] * 6
BA_STRATA = ["pos"] * 40 + ["neg"] * 60
BA_WEIGHTS = {"pos": 0.5, "neg": 0.5}


def se_from_ci(lo: float, hi: float) -> float:
    return (hi - lo) / (2 * Z)


def test_balanced_accuracy_matches_analytic_se() -> None:
    analytic = math.sqrt(0.25 * 0.8 * 0.2 / 40 + 0.25 * 0.9 * 0.1 / 60)
    assert analytic == pytest.approx(0.0370810, abs=1e-7)
    est, lo, hi = stratified_bootstrap(
        BA_VALUES, BA_STRATA, weights=BA_WEIGHTS, n_boot=4000, seed=20240601
    )
    assert est == pytest.approx(0.85, abs=1e-12)
    assert lo < est < hi
    assert se_from_ci(lo, hi) == pytest.approx(analytic, rel=0.10)


def test_unweighted_estimate_is_the_overall_mean_and_se_is_analytic() -> None:
    est, lo, hi = stratified_bootstrap(BA_VALUES, BA_STRATA, n_boot=4000, seed=7)
    assert est == pytest.approx(86 / 100, abs=1e-12)
    analytic = math.sqrt(0.4**2 * 0.8 * 0.2 / 40 + 0.6**2 * 0.9 * 0.1 / 60)
    assert se_from_ci(lo, hi) == pytest.approx(analytic, rel=0.10)


def test_continuous_values_match_analytic_se() -> None:
    """Many distinct values (index-draw path): bootstrap SE ≈ sd·sqrt((n−1)/n)/sqrt(n)."""
    x = np.random.default_rng(1).normal(size=400)
    strata = ["a"] * 400
    est, lo, hi = stratified_bootstrap(x.tolist(), strata, n_boot=4000, seed=3)
    assert est == pytest.approx(float(x.mean()), abs=1e-12)
    analytic = float(x.std(ddof=0)) / math.sqrt(400)
    assert se_from_ci(lo, hi) == pytest.approx(analytic, rel=0.10)


def test_weights_are_normalised() -> None:
    a = stratified_bootstrap(BA_VALUES, BA_STRATA, weights=BA_WEIGHTS, n_boot=500, seed=1)
    b = stratified_bootstrap(BA_VALUES, BA_STRATA, weights={"pos": 3, "neg": 3}, n_boot=500, seed=1)
    assert a == b


def test_reproducible_with_seed_and_different_with_another_seed() -> None:
    x = np.random.default_rng(5).random(300).tolist()
    strata = [i % 3 for i in range(300)]
    first = stratified_bootstrap(x, strata, n_boot=300, seed=11)
    assert stratified_bootstrap(x, strata, n_boot=300, seed=11) == first
    other = stratified_bootstrap(x, strata, n_boot=300, seed=12)
    assert other[0] == first[0]
    assert (other[1], other[2]) != (first[1], first[2])
    binary = stratified_bootstrap(BA_VALUES, BA_STRATA, n_boot=300, seed=11)
    assert stratified_bootstrap(BA_VALUES, BA_STRATA, n_boot=300, seed=11) == binary
    assert stratified_bootstrap(BA_VALUES, BA_STRATA, n_boot=300, seed=12) != binary


def test_stratum_sizes_stay_fixed() -> None:
    """All-1 and all-0 strata: with fixed sizes every resample has the same mean."""
    values = [1.0] * 30 + [0.0] * 70
    strata = ["one"] * 30 + ["zero"] * 70
    est, lo, hi = stratified_bootstrap(values, strata, n_boot=200, seed=0)
    assert est == pytest.approx(0.3, abs=1e-12)
    assert lo == est == hi


def test_items_collapse_replicates_first() -> None:
    item_values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.5, 1.0, 0.0, 0.0, 1.0, 1.0]
    item_strata = ["a"] * 6 + ["b"] * 6
    reps = 3
    values = [v for v in item_values for _ in range(reps)]
    strata = [s for s in item_strata for _ in range(reps)]
    items = [i for i in range(len(item_values)) for _ in range(reps)]
    collapsed = stratified_bootstrap(values, strata, items=items, n_boot=400, seed=9)
    direct = stratified_bootstrap(item_values, item_strata, n_boot=400, seed=9)
    assert collapsed == direct
    pooled = stratified_bootstrap(values, strata, n_boot=400, seed=9)
    assert pooled[2] - pooled[1] < collapsed[2] - collapsed[1]  # pooling overstates precision


def test_estimate_is_mean_of_item_means_with_unequal_replicates() -> None:
    values = [1.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    items = ["q1", "q1", "q1", "q2", "q3", "q3"]
    strata = ["s"] * 6
    est, _, _ = stratified_bootstrap(values, strata, items=items, n_boot=50, seed=0)
    assert est == pytest.approx((1.0 + 0.0 + 0.5) / 3, abs=1e-12)


def test_degenerate_cases_are_nan() -> None:
    assert all(math.isnan(v) for v in stratified_bootstrap([], [], seed=0))
    weighted_absent = stratified_bootstrap(
        [1.0, 0.0], ["pos", "pos"], weights={"pos": 0.5, "neg": 0.5}, seed=0
    )
    assert all(math.isnan(v) for v in weighted_absent)
    zero_weight_absent = stratified_bootstrap(
        [1.0, 0.0], ["pos", "pos"], weights={"pos": 1.0, "neg": 0.0}, n_boot=50, seed=0
    )
    assert zero_weight_absent[0] == 0.5


def test_malformed_input_raises() -> None:
    with pytest.raises(ValueError):
        stratified_bootstrap([1.0, 0.0], ["a"], seed=0)
    with pytest.raises(ValueError):
        stratified_bootstrap([1.0, math.nan], ["a", "a"], seed=0)
    with pytest.raises(ValueError, match="more than one"):
        stratified_bootstrap([1.0, 0.0], ["a", "b"], items=["q", "q"], seed=0)
    with pytest.raises(ValueError):
        stratified_bootstrap([1.0, 0.0], ["a", "a"], items=["q"], seed=0)
    with pytest.raises(ValueError, match="no entry"):
        stratified_bootstrap([1.0, 0.0], ["a", "b"], weights={"a": 1.0}, seed=0)
    with pytest.raises(ValueError):
        stratified_bootstrap([1.0, 0.0], ["a", "b"], weights={"a": 1.0, "b": -1.0}, seed=0)
    with pytest.raises(ValueError):
        stratified_bootstrap([1.0, 0.0], ["a", "b"], weights={"a": 0.0, "b": 0.0}, seed=0)
    with pytest.raises(ValueError):
        stratified_bootstrap([1.0, 0.0], ["a", "b"], n_boot=0, seed=0)
    with pytest.raises(ValueError):
        stratified_bootstrap([1.0, 0.0], ["a", "b"], level=1.0, seed=0)
    with pytest.raises(ValueError):
        stratified_bootstrap([1.0, 0.0], ["a", "b"], seed=-1)


strata_data = st.lists(
    st.tuples(
        st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.floats(0, 1, allow_nan=False)),
        st.sampled_from(["a", "b", "c", "d"]),
    ),
    min_size=1,
    max_size=80,
)


@SETTINGS
@given(strata_data, st.integers(0, 2**32), st.booleans())
def test_ci_contains_estimate(rows: list[tuple[float, str]], seed: int, weighted: bool) -> None:
    values = [v for v, _ in rows]
    strata = [s for _, s in rows]
    weights = {s: 1.0 + ord(s) % 3 for s in strata} if weighted else None
    est, lo, hi = stratified_bootstrap(
        values, strata, weights=weights, n_boot=200, seed=seed, min_n=1
    )
    assert lo <= est <= hi
    # a resample mean lies in [min, max] up to rounding: (x + x + x) / 3 may be x + 1 ulp
    # (hypothesis found hi = max + 3e-17 for rows [0, 0, 0.2419...])
    tol = 1e-12 * max(1.0, max(abs(v) for v in values))
    assert min(values) - tol <= lo and hi <= max(values) + tol


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from([0.1, 0.7, 0.3]), st.sampled_from("xyz")), min_size=1))
def test_constant_strata_give_a_degenerate_ci(rows: list[tuple[float, str]]) -> None:
    """Each stratum constant → every resample equals the estimate, to the last bit."""
    constants = {"x": 0.1, "y": 0.7, "z": 0.3}
    values = [constants[s] for _, s in rows]
    strata = [s for _, s in rows]
    est, lo, hi = stratified_bootstrap(values, strata, n_boot=100, seed=0, min_n=1)
    assert lo == est == hi


def test_large_input_is_fast() -> None:
    """100,000 values × 2,000 resamples over 127 strata in a few seconds."""
    rng = np.random.default_rng(0)
    values = rng.random(100_000).tolist()
    strata = rng.integers(0, 127, 100_000).tolist()
    start = time.perf_counter()
    est, lo, hi = stratified_bootstrap(values, strata, n_boot=2000, seed=1)
    elapsed = time.perf_counter() - start
    assert lo < est < hi
    assert elapsed < 30.0, f"took {elapsed:.1f}s"


# --- bootstrap_by_group -----------------------------------------------------------------------


def test_by_group_table() -> None:
    table = bootstrap_by_group(BA_VALUES, BA_STRATA, n_boot=4000, seed=2)
    assert list(table) == ["pos", "neg"]
    est_pos, lo_pos, hi_pos = table["pos"]
    est_neg, lo_neg, hi_neg = table["neg"]
    assert est_pos == pytest.approx(0.8, abs=1e-12)
    assert est_neg == pytest.approx(0.9, abs=1e-12)
    assert se_from_ci(lo_pos, hi_pos) == pytest.approx(math.sqrt(0.8 * 0.2 / 40), rel=0.10)
    assert se_from_ci(lo_neg, hi_neg) == pytest.approx(math.sqrt(0.9 * 0.1 / 60), rel=0.10)


def test_by_group_reproducible_and_degenerate() -> None:
    x = np.random.default_rng(3).random(90).tolist()
    groups = [("g", i % 3) for i in range(90)]
    first = bootstrap_by_group(x, groups, n_boot=300, seed=4)
    assert bootstrap_by_group(x, groups, n_boot=300, seed=4) == first
    assert bootstrap_by_group(x, groups, n_boot=300, seed=5) != first
    # one unit: no zero-width interval (issue #30, MIN_N_BOOTSTRAP); min_n=1 shows why not
    (solo,) = bootstrap_by_group([0.25], ["solo"], n_boot=50, seed=0).values()
    assert solo[0] == 0.25 and math.isnan(solo[1]) and math.isnan(solo[2])
    assert bootstrap_by_group([0.25], ["solo"], n_boot=50, seed=0, min_n=1) == {
        "solo": (0.25, 0.25, 0.25)
    }
    assert bootstrap_by_group([], [], n_boot=50, seed=0) == {}
    with pytest.raises(ValueError):
        bootstrap_by_group([1.0], ["a", "b"], n_boot=50, seed=0)


def test_by_group_with_items() -> None:
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    groups = ["a", "a", "a", "a", "b", "b"]
    items = ["q1", "q1", "q2", "q2", "q3", "q3"]
    table = bootstrap_by_group(values, groups, n_boot=100, seed=0, items=items, min_n=1)
    assert table["a"][0] == pytest.approx(0.75)
    assert table["b"] == (0.0, 0.0, 0.0)


@SETTINGS
@given(strata_data, st.integers(0, 2**32))
def test_by_group_ci_contains_group_mean(rows: list[tuple[float, str]], seed: int) -> None:
    values = [v for v, _ in rows]
    groups = [g for _, g in rows]
    table = bootstrap_by_group(values, groups, n_boot=200, seed=seed, min_n=1)
    assert set(table) == set(groups)
    for g, (est, lo, hi) in table.items():
        members = [v for v, gg in rows if gg == g]
        assert est == pytest.approx(sum(members) / len(members), abs=1e-12)
        assert lo <= est <= hi


# --- no bootstrap interval below MIN_N_BOOTSTRAP (issue #30 item 4) ------------------------------


def test_small_groups_get_no_interval_and_leave_the_others_unchanged() -> None:
    rng = np.random.default_rng(11)
    big = rng.random(40).tolist()
    values = [*big, 0.3, 0.9, 0.5]
    groups = ["big"] * 40 + ["two", "two", "one"]
    table = bootstrap_by_group(values, groups, n_boot=500, seed=9)
    assert MIN_N_BOOTSTRAP == 10
    for g in ("two", "one"):
        est, lo, hi = table[g]
        assert math.isfinite(est) and math.isnan(lo) and math.isnan(hi)
    # the small groups' draws are still made: the big group's interval is the one min_n=1 gives
    assert table["big"] == bootstrap_by_group(values, groups, n_boot=500, seed=9, min_n=1)["big"]
    at_min = bootstrap_by_group(big[:10], ["g"] * 10, n_boot=500, seed=9)["g"]
    assert all(math.isfinite(x) for x in at_min)


def test_stratified_below_the_minimum_has_no_interval() -> None:
    est, lo, hi = stratified_bootstrap([0.1, 0.5, 0.9], ["a", "b", "b"], n_boot=100, seed=1)
    assert est == pytest.approx(0.5) and math.isnan(lo) and math.isnan(hi)
