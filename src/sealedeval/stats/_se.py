"""Means and standard errors with the item (question) as the unit of analysis."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np

from ._validate import FloatArray, K, as_float_array, check_same_length, group_codes


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Sample mean and sample standard deviation (ddof = 1).

    The ``n − 1`` (Bessel) denominator makes the variance unbiased for i.i.d. draws; it is the
    convention of Inspect AI's ``std`` metric and of Miller (2024).

    Degenerate cases: no values → ``(nan, nan)``; one value → ``(value, nan)`` (a spread cannot
    be estimated from one observation; 0.0 would claim certainty).

    Args:
        values: Finite numbers.

    Returns:
        ``(mean, sd)``.

    Raises:
        ValueError: A value is not finite.
    """
    x = as_float_array(values, "values")
    if x.size == 0:
        return (math.nan, math.nan)
    mean = float(np.mean(x))
    if x.size < 2:
        return (mean, math.nan)
    return (mean, float(np.std(x, ddof=1)))


def _item_arrays(values: Sequence[float], items: Sequence[K]) -> tuple[list[K], FloatArray]:
    check_same_length(values, items, "values/items")
    x = as_float_array(values, "values")
    uniques, codes = group_codes(items)
    sums = np.bincount(codes, weights=x, minlength=len(uniques))
    counts = np.bincount(codes, minlength=len(uniques))
    return uniques, sums / counts


def item_means(values: Sequence[float], items: Sequence[K]) -> dict[K, float]:
    """Average replicate scores within each item.

    Replicates (several samples of the same question) are not independent observations of the
    benchmark; collapsing them to one mean per item is the first step of every item-level
    estimate here (Miller 2024, section 3).

    Degenerate cases: empty input → empty dict.

    Args:
        values: One score per replicate.
        items: Item id of each score, aligned with ``values``.

    Returns:
        Item id → mean score, in order of first appearance.

    Raises:
        ValueError: Lengths differ, a value is not finite, or an item id is unhashable.
    """
    uniques, means = _item_arrays(values, items)
    return {item: float(m) for item, m in zip(uniques, means, strict=True)}


def item_se(values: Sequence[float], items: Sequence[Hashable]) -> float:
    """Standard error of the benchmark mean with the item as the unit of analysis.

    Miller (2024): average replicates within item first, then
    ``SE = sd(item means, ddof=1) / sqrt(n_items)``. Pooling all replicates as if independent
    understates the SE because replicates of one item are correlated.

    Example: items ``[1,1,1,1]``, ``[0,0,0,0]``, ``[1,1,0,1]`` → 0.3005 (pooling the 12
    replicates would give the wrong 0.1486).

    Degenerate cases: fewer than 2 items → nan.

    Args:
        values: One score per replicate.
        items: Item id of each score, aligned with ``values``.

    Returns:
        The item-level standard error, or nan.

    Raises:
        ValueError: Lengths differ, a value is not finite, or an item id is unhashable.
    """
    _, means = _item_arrays(values, items)
    if means.size < 2:
        return math.nan
    return float(np.std(means, ddof=1) / math.sqrt(means.size))


def clustered_se(values: Sequence[float], clusters: Sequence[Hashable]) -> float:
    """Cluster-robust standard error of the mean of ``values``.

    Miller (2024), Eq. 4, for questions that come in groups sharing a passage, document or
    template (scores within a cluster are correlated)::

        SE = sqrt(SE_CLT² + (1/n²) Σ_c Σ_{i≠j∈c} (s_i − s̄)(s_j − s̄))

    with ``SE_CLT² = Σ (s_i − s̄)² / ((n − 1) n)`` the i.i.d. variance of the mean and ``s̄``
    the overall mean. The double sum is computed as ``Σ_c [(Σ_{i∈c} a_i)² − Σ_{i∈c} a_i²]``
    with ``a_i = s_i − s̄``. The variance is never negative. With every cluster a singleton it
    reduces to ``SE_CLT``.

    Degenerate cases: fewer than 2 values or fewer than 2 clusters → nan (with one cluster
    there is no between-cluster information to estimate the variance from).

    Args:
        values: One score per observation.
        clusters: Cluster id of each observation, aligned with ``values``.

    Returns:
        The clustered standard error, or nan.

    Raises:
        ValueError: Lengths differ, a value is not finite, or a cluster id is unhashable.
    """
    check_same_length(values, clusters, "values/clusters")
    x = as_float_array(values, "values")
    uniques, codes = group_codes(clusters)
    n = x.size
    if n < 2 or len(uniques) < 2:
        return math.nan
    a = x - x.mean()
    sum_sq = float(np.dot(a, a))
    cluster_sums = np.bincount(codes, weights=a, minlength=len(uniques))
    cross = float(np.dot(cluster_sums, cluster_sums)) - sum_sq
    var = sum_sq / ((n - 1) * n) + cross / (n * n)
    return math.sqrt(max(var, 0.0))
