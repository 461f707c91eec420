"""Seeded, vectorised percentile bootstrap: stratified composites and per-group tables."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from ._small_n import MIN_N_BOOTSTRAP
from ._validate import (
    FloatArray,
    K,
    as_count,
    as_float_array,
    check_probability_level,
    check_same_length,
    group_codes,
)

_MAX_DRAW_ELEMENTS = 1 << 22
"""Upper bound on resampled indices held in memory at once (16-32 MB)."""

_MULTINOMIAL_FACTOR = 16
"""Resample by multinomial counts over distinct values when they are this much fewer than n."""

_NAN3 = (math.nan, math.nan, math.nan)


def _units(
    values: Sequence[float],
    labels: Sequence[K],
    items: Sequence[Hashable] | None,
    label_name: str,
) -> tuple[FloatArray, list[K], npt.NDArray[np.intp]]:
    """Validate and, when ``items`` is given, collapse replicates to item means.

    Returns ``(unit values, unique labels, label code per unit)``.
    """
    check_same_length(values, labels, f"values/{label_name}")
    x = as_float_array(values, "values")
    label_uniques, label_codes = group_codes(labels)
    if items is None:
        return x, label_uniques, label_codes
    check_same_length(values, items, "values/items")
    item_uniques, item_codes = group_codes(items)
    n_items = len(item_uniques)
    sums = np.bincount(item_codes, weights=x, minlength=n_items)
    counts = np.bincount(item_codes, minlength=n_items)
    unit_labels = np.full(n_items, -1, dtype=np.intp)
    unit_labels[item_codes] = label_codes
    if (unit_labels[item_codes] != label_codes).any():
        bad = int(np.flatnonzero(unit_labels[item_codes] != label_codes)[0])
        raise ValueError(
            f"item {item_uniques[item_codes[bad]]!r} appears under more than one {label_name} "
            f"value; each item must belong to exactly one"
        )
    return sums / counts, label_uniques, unit_labels


def _resampled_sums(rng: np.random.Generator, u: FloatArray, n_boot: int) -> FloatArray:
    """Sum of ``u`` (row 0) and of ``n_boot`` resamples of ``u`` with replacement (rows 1..).

    Two exact draw schemes with the same distribution, chosen by the data alone (so a seed
    always gives the same result): when ``u`` has few distinct values (binary scores, item means
    of a few replicates) draw each resample's multiplicities of the distinct values from
    ``Multinomial(n, freq/n)``, which costs O(distinct) per resample; otherwise draw integer
    indices uniformly, in row chunks to bound memory. Row 0 goes through the same arithmetic as
    the resamples so that constant data gives bit-identical rows.
    """
    n = u.size
    distinct, counts = np.unique(u, return_counts=True)
    if distinct.size * _MULTINOMIAL_FACTOR <= n:
        draws = rng.multinomial(n, counts / n, size=n_boot)
        mult = np.vstack([counts[np.newaxis, :], draws]).astype(np.float64)
        return np.asarray((mult * distinct).sum(axis=1), dtype=np.float64)
    out = np.empty(n_boot + 1, dtype=np.float64)
    out[0] = u[np.newaxis, :].sum(axis=1)[0]
    rows = max(1, _MAX_DRAW_ELEMENTS // n)
    index_type = np.int32 if n <= np.iinfo(np.int32).max else np.int64  # int32 draws are faster
    for start in range(0, n_boot, rows):
        stop = min(n_boot, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n), dtype=index_type)
        out[1 + start : 1 + stop] = u[idx].sum(axis=1)
    return out


def _percentile(estimates: FloatArray, level: float) -> tuple[float, float, float]:
    """``(estimates[0], lo, hi)`` with the percentile CI from ``estimates[1:]``."""
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(estimates[1:], [tail, 1.0 - tail])
    return (float(estimates[0]), float(lo), float(hi))


def _small(est: tuple[float, float, float], n: int, min_n: int) -> tuple[float, float, float]:
    """``est`` without its interval when it rests on fewer than ``min_n`` units."""
    return est if n >= min_n else (est[0], math.nan, math.nan)


def _check_boot(n_boot: int, seed: int, level: float) -> tuple[int, np.random.Generator, float]:
    nb = as_count(n_boot, "n_boot")
    if nb < 1:
        raise ValueError(f"n_boot must be >= 1, got {nb}")
    rng = np.random.Generator(np.random.PCG64(as_count(seed, "seed")))
    return nb, rng, check_probability_level(level, "level")


def stratified_bootstrap(
    values: Sequence[float],
    strata: Sequence[K],
    *,
    weights: Mapping[K, float] | None = None,
    n_boot: int = 2000,
    seed: int,
    level: float = 0.95,
    items: Sequence[Hashable] | None = None,
    min_n: int = MIN_N_BOOTSTRAP,
) -> tuple[float, float, float]:
    """Stratified percentile bootstrap CI for a (weighted) mean of stratum means.

    The estimand is ``Σ_h w_h · mean_h`` over strata ``h`` (e.g. labels), with ``w_h`` the given
    ``weights`` normalised to sum to 1, or the stratum's share of units when ``weights`` is None
    (then the estimate is simply the overall mean of the units). Balanced accuracy is the case
    ``weights = {positive: 0.5, negative: 0.5}`` with 0/1 correctness values.

    Procedure: (1) when ``items`` is given, replicates are averaged within each item first, so
    the item is the unit resampled (replicates of an item are not independent); (2) each
    resample draws units with replacement *within* each stratum, keeping stratum sizes fixed,
    because the stratum sizes are fixed by design rather than random; (3) the CI is the
    ``(1−level)/2`` and ``(1+level)/2`` percentiles of the ``n_boot`` resampled estimates.
    Draws come from ``numpy.random.Generator(PCG64(seed))``, are vectorised per stratum (no
    Python loop over resamples), and are reproducible for a given seed and input order.

    Analytic check: for ``Σ w_h p̂_h`` the bootstrap variance approaches
    ``Σ w_h² p̂_h(1−p̂_h)/n_h``; recall 32/40 and specificity 54/60 with weights ½, ½ give
    balanced accuracy 0.85 with SE 0.0370810.

    Degenerate cases: no values → ``(nan, nan, nan)``; a stratum with positive weight but no
    values → ``(nan, nan, nan)`` (the composite is undefined, and dropping the stratum would
    change the estimand). A stratum of one unit contributes no resampling variability. Fewer
    than ``min_n`` units in all → ``(estimate, nan, nan)`` (``stats._small_n``: no bootstrap
    interval below ``MIN_N_BOOTSTRAP``; the draws are still made, so the stream is the same).

    Args:
        values: One score per observation.
        strata: Stratum of each observation, aligned with ``values``.
        weights: Stratum → non-negative weight; every stratum present in ``strata`` must have
            one. None weights strata by their number of units.
        n_boot: Number of bootstrap resamples, ``>= 1``.
        seed: Non-negative integer seed.
        level: Confidence level in (0, 1).
        items: Item id of each observation; replicates are averaged per item first. An item
            must lie in a single stratum.
        min_n: Fewest units with an interval (``MIN_N_BOOTSTRAP``).

    Returns:
        ``(estimate, lower, upper)``.

    Raises:
        TypeError: ``n_boot`` or ``seed`` is not an integer.
        ValueError: Lengths differ, a value is not finite, an item spans strata, a present
            stratum has no weight, weights are negative / non-finite / all zero on the present
            strata, ``n_boot < 1``, a negative seed, or ``level`` outside (0, 1).
    """
    nb, rng, lv = _check_boot(n_boot, seed, level)
    u, uniques, codes = _units(values, strata, items, "strata")
    if u.size == 0:
        return _NAN3
    sizes = np.bincount(codes, minlength=len(uniques))
    if weights is None:
        coef = sizes / u.size
    else:
        missing = [s for s in uniques if s not in weights]
        if missing:
            raise ValueError(f"weights has no entry for stratum {missing[0]!r}")
        w = np.array([float(weights[s]) for s in uniques], dtype=np.float64)
        all_w = np.array([float(v) for v in weights.values()], dtype=np.float64)
        if not np.isfinite(all_w).all() or (all_w < 0).any():
            raise ValueError("weights must be finite and non-negative")
        present = set(uniques)
        if any(float(v) > 0 for s, v in weights.items() if s not in present):
            return _NAN3
        if w.sum() <= 0:
            raise ValueError("weights of the strata present must not all be zero")
        coef = w / w.sum()
    order = np.argsort(codes, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    means = np.empty((nb + 1, len(uniques)), dtype=np.float64)
    for h in range(len(uniques)):
        stratum = u[order[bounds[h] : bounds[h + 1]]]
        means[:, h] = _resampled_sums(rng, stratum, nb) / stratum.size
    return _small(_percentile((means * coef).sum(axis=1), lv), int(u.size), min_n)


def bootstrap_by_group(
    values: Sequence[float],
    groups: Sequence[K],
    *,
    n_boot: int = 2000,
    seed: int,
    level: float = 0.95,
    items: Sequence[Hashable] | None = None,
    min_n: int = MIN_N_BOOTSTRAP,
) -> dict[K, tuple[float, float, float]]:
    """Percentile bootstrap CI of the mean within each group (for per-label tables).

    Each group's mean is bootstrapped on its own by resampling its units with replacement
    (items, when ``items`` is given: replicates are averaged within item first). One
    ``Generator(PCG64(seed))`` serves all groups in order of first appearance, so results are
    reproducible for a given seed and input order. Vectorised: one pass per group.

    Degenerate cases: no values → empty dict; a group of fewer than ``min_n`` units (one unit
    included) → ``(mean, nan, nan)``: no bootstrap interval below ``MIN_N_BOOTSTRAP``
    (``stats._small_n``; a group of one unit used to get the zero-width ``(x, x, x)``). Its
    draws are still made, so the other groups' intervals do not depend on it.

    Args:
        values: One score per observation.
        groups: Group of each observation, aligned with ``values``.
        n_boot: Number of bootstrap resamples, ``>= 1``.
        seed: Non-negative integer seed.
        level: Confidence level in (0, 1).
        items: Item id of each observation; an item must lie in a single group.
        min_n: Fewest units a group needs for an interval (``MIN_N_BOOTSTRAP``).

    Returns:
        Group → ``(mean, lower, upper)``, in order of first appearance.

    Raises:
        TypeError: ``n_boot`` or ``seed`` is not an integer.
        ValueError: Lengths differ, a value is not finite, an item spans groups,
            ``n_boot < 1``, a negative seed, or ``level`` outside (0, 1).
    """
    nb, rng, lv = _check_boot(n_boot, seed, level)
    u, uniques, codes = _units(values, groups, items, "groups")
    order = np.argsort(codes, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(uniques)))])
    table: dict[K, tuple[float, float, float]] = {}
    for h, group in enumerate(uniques):
        unit_values = u[order[bounds[h] : bounds[h + 1]]]
        est = _percentile(_resampled_sums(rng, unit_values, nb) / unit_values.size, lv)
        table[group] = _small(est, int(unit_values.size), min_n)
    return table


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_boot: int = 2000,
    seed: int,
    level: float = 0.95,
    min_n: int = MIN_N_BOOTSTRAP,
) -> tuple[float, float, float]:
    """Seeded percentile bootstrap CI of the mean paired difference ``mean(a − b)``.

    The pair (item) is the unit resampled: each resample draws n items with replacement and
    takes the mean of their differences, so the correlation between the two engines' scores on
    an item is kept (resampling the engines separately would throw the pairing away and widen
    the interval). For non-binary bounded scores — bloodpanel's per-case composite — this does
    not lean on the normal approximation of :func:`paired_difference`. Same draws as the other
    bootstraps here (``Generator(PCG64(seed))``, multinomial counts when the differences take few
    distinct values), so a seed always gives the same interval.

    Degenerate cases: no pairs → ``(nan, nan, nan)``; fewer than ``min_n`` pairs (one pair
    included) → ``(d̄, nan, nan)`` (``stats._small_n``: a resample of one item has no spread, of
    a few items a handful of values; a zero-width or percentile interval there would claim a
    certainty the data do not have); every pair tied (at least ``min_n``) → ``(0.0, 0.0, 0.0)``.

    Args:
        a: Per-item scores of engine A (item means if there are replicates).
        b: Per-item scores of engine B, aligned with ``a``.
        n_boot: Resamples, ``>= 1``.
        seed: Non-negative integer seed.
        level: Confidence level in (0, 1).
        min_n: Fewest pairs with an interval (``MIN_N_BOOTSTRAP``).

    Returns:
        ``(difference, lower, upper)``.

    Raises:
        TypeError: ``n_boot`` or ``seed`` is not an integer.
        ValueError: Lengths differ, a value is not finite, ``n_boot < 1``, a negative seed or
            ``level`` outside (0, 1).
    """
    nb, rng, lv = _check_boot(n_boot, seed, level)
    check_same_length(a, b, "a/b")
    d = as_float_array(a, "a") - as_float_array(b, "b")
    if d.size == 0:
        return _NAN3
    if d.size < min_n:
        return (float(np.mean(d)), math.nan, math.nan)
    return _percentile(_resampled_sums(rng, d, nb) / d.size, lv)
