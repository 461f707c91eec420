"""Confidence intervals and compounding for a single binomial proportion."""

from __future__ import annotations

import math

from ._validate import as_count

Z_95 = 1.959963984540054
"""Two-sided 95% standard-normal quantile, ``NormalDist().inv_cdf(0.975)``."""


def wilson(k: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``k/n``.

    The Wilson interval inverts the score test, so unlike the Wald interval
    ``p̂ ± z·sqrt(p̂(1−p̂)/n)`` it never collapses to zero width at ``k = 0`` or ``k = n`` and
    stays inside [0, 1]; its coverage is close to nominal even for small ``n``. (SciPy's
    ``binomtest(k, n).proportion_ci(method="wilson")`` is the same interval; SciPy's *default*
    method is Clopper–Pearson.)

    ``centre = (p̂ + z²/2n) / (1 + z²/n)``,
    ``half = z / (1 + z²/n) · sqrt(p̂(1−p̂)/n + z²/4n²)``.

    Degenerate cases: ``n = 0`` → ``(nan, nan)`` (no data, no interval). At ``k = 0`` the lower
    bound is exactly 0 and at ``k = n`` the upper bound is exactly 1.

    Args:
        k: Number of successes, ``0 <= k <= n``.
        n: Number of trials.
        z: Standard-normal quantile for the confidence level (default: 95% two-sided).

    Returns:
        ``(lower, upper)``, both in [0, 1] and containing ``k/n``.

    Raises:
        TypeError: ``k`` or ``n`` is not an integer.
        ValueError: ``k`` or ``n`` negative, ``k > n``, or ``z`` negative or not finite.
    """
    k_ = as_count(k, "k")
    n_ = as_count(n, "n")
    if k_ > n_:
        raise ValueError(f"k must be <= n, got k={k_}, n={n_}")
    if not (math.isfinite(z) and z >= 0):
        raise ValueError(f"z must be a finite non-negative number, got {z!r}")
    if n_ == 0:
        return (math.nan, math.nan)
    p = k_ / n_
    z2 = z * z
    denom = 1.0 + z2 / n_
    centre = (p + z2 / (2 * n_)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / n_ + z2 / (4.0 * n_ * n_))
    lower = 0.0 if k_ == 0 else max(0.0, min(p, centre - half))
    upper = 1.0 if k_ == n_ else min(1.0, max(p, centre + half))
    return (lower, upper)


def compounded(p: float, length: int) -> float:
    """All-or-nothing success rate of ``length`` independent parts each right with rate ``p``.

    Schaeffer et al. (2023): an exact-match score over ``L`` facts behaves like ``p**L``, so a
    smooth per-fact improvement looks like a sudden "emergent" jump. Report partial credit
    beside it. Example: ``compounded(0.9, 5) == 0.59049``.

    Degenerate cases: ``length = 0`` → 1.0 (the empty conjunction), ``p = nan`` → nan.

    Args:
        p: Per-part success probability in [0, 1].
        length: Number of parts that must all be right.

    Returns:
        ``p ** length``.

    Raises:
        TypeError: ``length`` is not an integer.
        ValueError: ``p`` outside [0, 1] or ``length`` negative.
    """
    n = as_count(length, "length")
    if math.isnan(p):
        return math.nan
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p!r}")
    return float(p**n)
