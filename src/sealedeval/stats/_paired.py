"""Paired comparisons of two engines on the same items: exact sign test and paired SE."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from ._proportion import Z_95
from ._validate import as_count, as_float_array, check_same_length


def sign_test(b: int, c: int) -> float:
    """Exact two-sided sign test on discordant pairs (the exact McNemar test).

    With ``b`` items where A is right and B wrong and ``c`` items where A is wrong and B
    right, under H0 (no difference) each discordant pair is a fair coin:
    ``p = min(1, 2·P(X <= min(b, c)))`` with ``X ~ Bin(b + c, 1/2)``. Concordant pairs carry
    no information about the difference and are not an argument. The tail is summed with exact
    integer arithmetic (``math.comb``) and converted to float once, so the p-value is correctly
    rounded even for thousands of discordant pairs. The exact test is used rather than the
    chi-square McNemar approximation, which is poor for the small ``b + c`` typical of evals.

    Examples: ``sign_test(10, 2) == 158/4096 ≈ 0.038574``; ``sign_test(6, 6) == 1.0``.

    Degenerate cases: ``b = c = 0`` → 1.0 (no discordant pairs, no evidence of a difference;
    this is the test's actual p-value, not a placeholder).

    Args:
        b: Discordant pairs favouring A.
        c: Discordant pairs favouring B.

    Returns:
        Two-sided p-value in (0, 1]; symmetric in ``b`` and ``c``.

    Raises:
        TypeError: ``b`` or ``c`` is not an integer.
        ValueError: ``b`` or ``c`` is negative.
    """
    b_ = as_count(b, "b")
    c_ = as_count(c, "c")
    n = b_ + c_
    m = min(b_, c_)
    tail = 0
    term = 1  # C(n, 0)
    for i in range(m + 1):
        tail += term
        term = term * (n - i) // (i + 1)  # C(n, i + 1), exact
    p = Fraction(2 * tail, 2**n)
    return 1.0 if p >= 1 else float(p)


def sign_test_items(diffs: Sequence[float]) -> tuple[int, int, float]:
    """Sign test on per-item mean differences (A − B), replicates already averaged.

    When each engine has several replicates per item, the item (not the replicate) is the unit
    of analysis: average the replicates within each item, take the difference of the item
    means, and count items with a positive versus a negative difference. Ties (difference
    exactly 0) carry no sign and are dropped, as in the classic sign test. The p-value is
    :func:`sign_test` on the two counts.

    Example: ``d = [0.5, 0.25, 0, −0.25, 1, 0.75, 0, 0.5]`` → 5 positive vs 1 negative →
    ``p = 0.21875``.

    Degenerate cases: no differences, or all zero → ``(0, 0, 1.0)``.

    Args:
        diffs: Per-item mean differences; must be finite.

    Returns:
        ``(n_pos, n_neg, p)``.

    Raises:
        ValueError: ``diffs`` holds NaN or infinite values.
    """
    d = as_float_array(diffs, "diffs")
    n_pos = int(np.count_nonzero(d > 0))
    n_neg = int(np.count_nonzero(d < 0))
    return (n_pos, n_neg, sign_test(n_pos, n_neg))


def paired_se(a: Sequence[float], b: Sequence[float]) -> float:
    """Standard error of the mean difference ``mean(a − b)`` for paired scores.

    Miller (2024), "Adding Error Bars to Evals", Eq. 7: when both engines answer the same items,
    ``SE = sd(d_i) / sqrt(n)`` with ``d_i = a_i − b_i`` and ``sd`` the sample standard deviation
    (ddof = 1). Pairing removes the between-item variance both engines share, so this is usually
    much smaller than :func:`unpaired_se`.

    Example: ``A = [1,1,0,1,0,1,1,0,1,1]``, ``B = [1,0,0,1,0,0,1,0,1,0]`` → difference 0.3,
    ``SE_paired = 0.1527525``.

    Degenerate cases: fewer than 2 pairs → nan (the sample variance is undefined).

    Args:
        a: Per-item scores of engine A (item means if there are replicates).
        b: Per-item scores of engine B, aligned with ``a``.

    Returns:
        The paired standard error, or nan.

    Raises:
        ValueError: Lengths differ, or a value is not finite.
    """
    check_same_length(a, b, "a/b")
    d = as_float_array(a, "a") - as_float_array(b, "b")
    if d.size < 2:
        return math.nan
    return float(np.std(d, ddof=1) / math.sqrt(d.size))


def unpaired_se(a: Sequence[float], b: Sequence[float]) -> float:
    """Standard error of ``mean(a) − mean(b)`` for independent samples.

    Miller (2024), Eq. 6: ``SE = sqrt(SE_A² + SE_B²)`` with ``SE_X = sd(X) / sqrt(n_X)`` and
    ``sd`` the sample standard deviation (ddof = 1). Use it only when the two engines were run
    on different items; on shared items use :func:`paired_se`.

    Example: ``A = [1,1,0,1,0,1,1,0,1,1]``, ``B = [1,0,0,1,0,0,1,0,1,0]`` →
    ``SE_unpaired = 0.2236068``.

    Degenerate cases: either sample with fewer than 2 values → nan.

    Args:
        a: Scores of engine A.
        b: Scores of engine B (may differ in length from ``a``).

    Returns:
        The unpaired standard error, or nan.

    Raises:
        ValueError: A value is not finite.
    """
    xa = as_float_array(a, "a")
    xb = as_float_array(b, "b")
    if xa.size < 2 or xb.size < 2:
        return math.nan
    var = np.var(xa, ddof=1) / xa.size + np.var(xb, ddof=1) / xb.size
    return float(math.sqrt(var))


def paired_difference(
    a: Sequence[float], b: Sequence[float], z: float = Z_95
) -> tuple[float, float, float]:
    """Mean paired difference ``mean(a − b)`` with its normal interval from :func:`paired_se`.

    ``d̄ ± z · sd(d_i)/sqrt(n)`` (Miller 2024, Eq. 7): the interval every suite printed for its
    paired comparisons, now one function. For 0/1 scores and small n prefer reading it beside the
    exact sign test and the Beta view (``prob_a_better``); for bounded non-binary scores (a
    composite) ``paired_bootstrap`` is the distribution-free alternative.

    Example: ``A = [1,1,0,1,0,1,1,0,1,1]``, ``B = [1,0,0,1,0,0,1,0,1,0]`` → 0.3 ± 1.96 ·
    0.1527525 = (0.3, 0.000611, 0.599389).

    Degenerate cases: no pairs → ``(nan, nan, nan)``; one pair → ``(d, nan, nan)`` (no spread,
    no interval); every pair tied → ``(0.0, 0.0, 0.0)`` (zero observed variance: the normal
    interval has zero width, which is why the suites print the MDE as "not estimable" there).

    Args:
        a: Per-item scores of engine A (item means if there are replicates).
        b: Per-item scores of engine B, aligned with ``a``.
        z: Standard-normal quantile (default: 95% two-sided).

    Returns:
        ``(difference, lower, upper)``.

    Raises:
        ValueError: Lengths differ, a value is not finite, or ``z`` negative / not finite.
    """
    if not (math.isfinite(z) and z >= 0):
        raise ValueError(f"z must be a finite non-negative number, got {z!r}")
    check_same_length(a, b, "a/b")
    d = as_float_array(a, "a") - as_float_array(b, "b")
    if d.size == 0:
        return (math.nan, math.nan, math.nan)
    mean = float(np.mean(d))
    se = paired_se(a, b)
    if not math.isfinite(se):
        return (mean, math.nan, math.nan)
    return (mean, mean - z * se, mean + z * se)
