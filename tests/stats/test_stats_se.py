"""Item-level, clustered and i.i.d. standard errors (Miller 2024, "Adding Error Bars to Evals").

Reference (shared/reference/stats.md):
    Unit of analysis = the item. Average replicates within each item first; then
    SE = sd(item means, ddof=1)/sqrt(n_items).
    Vector: items [1,1,1,1], [0,0,0,0], [1,1,0,1] → item SE 0.3005 (pooling 12 replicates gives
    0.1486 — wrong).
    Clustered SE (Eq. 4): sqrt(SE_CLT² + (1/n²) Σ_c Σ_{i≠j∈c} (s_i − s̄)(s_j − s̄)).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval.stats import clustered_se, item_means, item_se, mean_sd

SETTINGS = settings(database=None, deadline=None)

VALUES = [1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 1]
ITEMS = ["q1"] * 4 + ["q2"] * 4 + ["q3"] * 4


def test_item_se_reference_vector() -> None:
    assert item_se(VALUES, ITEMS) == pytest.approx(0.3005, abs=5e-5)


def test_pooling_replicates_gives_the_wrong_smaller_se() -> None:
    _, sd = mean_sd(VALUES)
    pooled = sd / math.sqrt(len(VALUES))
    assert pooled == pytest.approx(0.1486, abs=5e-5)
    assert item_se(VALUES, ITEMS) > 2 * pooled


def test_item_means_in_first_appearance_order() -> None:
    means = item_means(VALUES, ITEMS)
    assert list(means) == ["q1", "q2", "q3"]
    assert means == {"q1": 1.0, "q2": 0.0, "q3": 0.75}
    interleaved = item_means([1, 0, 0.5, 1], ["b", "a", "a", "b"])
    assert interleaved == {"b": 1.0, "a": 0.25}
    assert item_means([], []) == {}


def test_item_se_ignores_unequal_replicate_counts_when_means_agree() -> None:
    assert item_se([1, 1, 1, 0], ["a", "a", "a", "b"]) == item_se([1, 0], ["a", "b"])


def test_item_se_degenerate_cases() -> None:
    assert math.isnan(item_se([1, 0, 1], ["a", "a", "a"]))  # one item
    assert math.isnan(item_se([], []))
    assert item_se([1, 1, 1, 1], ["a", "a", "b", "b"]) == 0.0


def test_item_se_rejects_malformed_input() -> None:
    with pytest.raises(ValueError):
        item_se([1, 0], ["a"])
    with pytest.raises(ValueError):
        item_se([1, math.nan], ["a", "b"])
    with pytest.raises(ValueError):
        item_means([1, 0], [["unhashable"], "b"])


def brute_force_clustered_se(values: list[float], clusters: list[int]) -> float:
    """Eq. 4 literally, with the double sum over ordered pairs i ≠ j in the same cluster."""
    n = len(values)
    mean = sum(values) / n
    se_clt2 = sum((s - mean) ** 2 for s in values) / (n - 1) / n
    cross = 0.0
    for i in range(n):
        for j in range(n):
            if i != j and clusters[i] == clusters[j]:
                cross += (values[i] - mean) * (values[j] - mean)
    return math.sqrt(se_clt2 + cross / n**2)


def test_clustered_se_worked_example() -> None:
    """Replicates of the reference items as clusters: var = 0.0220960 + 0.0399306."""
    expected = math.sqrt(420 / 144 / (11 * 12) + (78 / 9 - 420 / 144) / 144)
    assert expected == pytest.approx(0.249051, abs=1e-6)
    assert clustered_se(VALUES, ITEMS) == pytest.approx(expected, abs=1e-12)


@SETTINGS
@given(
    st.lists(
        st.tuples(st.floats(-10, 10, allow_nan=False), st.integers(0, 5)),
        min_size=2,
        max_size=40,
    )
)
def test_clustered_se_matches_eq4_brute_force(rows: list[tuple[float, int]]) -> None:
    values = [v for v, _ in rows]
    clusters = [c for _, c in rows]
    got = clustered_se(values, clusters)
    if len(set(clusters)) < 2:
        assert math.isnan(got)
    else:
        assert got == pytest.approx(brute_force_clustered_se(values, clusters), abs=1e-9)


@SETTINGS
@given(st.lists(st.floats(-100, 100, allow_nan=False), min_size=2, max_size=50))
def test_clustered_se_with_singleton_clusters_is_the_iid_se(values: list[float]) -> None:
    _, sd = mean_sd(values)
    iid = sd / math.sqrt(len(values))
    assert clustered_se(values, list(range(len(values)))) == pytest.approx(iid, abs=1e-9)


def test_clustered_se_grows_with_within_cluster_correlation() -> None:
    rng = np.random.default_rng(0)
    effects = np.repeat(rng.normal(size=50), 10)
    values = (effects + 0.1 * rng.normal(size=500)).tolist()
    clusters = np.repeat(np.arange(50), 10).tolist()
    iid = mean_sd(values)[1] / math.sqrt(500)
    assert clustered_se(values, clusters) > 2.5 * iid


def test_clustered_se_degenerate_and_malformed() -> None:
    assert math.isnan(clustered_se([1.0], ["a"]))
    assert math.isnan(clustered_se([1.0, 0.0, 1.0], ["a", "a", "a"]))  # one cluster
    with pytest.raises(ValueError):
        clustered_se([1.0, 0.0], ["a"])


def test_mean_sd() -> None:
    mean, sd = mean_sd([2, 4, 4, 4, 5, 5, 7, 9])
    assert mean == 5.0
    assert sd == pytest.approx(math.sqrt(32 / 7), abs=1e-12)  # ddof = 1
    single = mean_sd([3.0])
    assert single[0] == 3.0 and math.isnan(single[1])
    empty = mean_sd([])
    assert math.isnan(empty[0]) and math.isnan(empty[1])
    with pytest.raises(ValueError):
        mean_sd([1.0, math.inf])
