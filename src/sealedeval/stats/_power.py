"""Sample size planning for paired engine comparisons."""

from __future__ import annotations

import math
from statistics import NormalDist

from ._validate import as_count, check_probability_level


def sample_size_items(
    omega2: float,
    sigma2_a: float,
    sigma2_b: float,
    k_a: int,
    k_b: int,
    delta: float,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int:
    """Number of items needed to detect a paired difference ``delta`` (Miller 2024, Eq. 9).

    ``n = (z_{α/2} + z_β)² · (ω² + σ_A²/K_A + σ_B²/K_B) / δ²``, rounded up, where ``ω²`` is the
    variance of the per-item true difference, ``σ_X²`` the within-item (replicate) variance of
    engine X and ``K_X`` its replicates per item; ``z_{α/2}`` is the two-sided critical value and
    ``z_β`` the quantile of the desired power. Normal quantiles come from
    ``statistics.NormalDist`` (no SciPy needed).

    Example: ``ω² = 1/9``, ``σ² = 0``, ``δ = 0.03`` (α = 0.05, power 0.8) → 969 items.

    Degenerate cases: zero total variance → 0 items (nothing to detect against; a single item
    would already show the difference).

    Args:
        omega2: Variance of the per-item difference in true scores, ``>= 0``.
        sigma2_a: Within-item variance of engine A's replicate scores, ``>= 0``.
        sigma2_b: Within-item variance of engine B's replicate scores, ``>= 0``.
        k_a: Replicates per item for engine A, ``>= 1``.
        k_b: Replicates per item for engine B, ``>= 1``.
        delta: Minimum difference to detect, non-zero.
        alpha: Two-sided significance level in (0, 1).
        power: Desired power in (0, 1).

    Returns:
        The required number of items (ceil).

    Raises:
        TypeError: ``k_a`` or ``k_b`` is not an integer.
        ValueError: A negative or non-finite variance, ``k < 1``, ``delta == 0`` or
            non-finite, or ``alpha``/``power`` outside (0, 1).
    """
    for name, v in (("omega2", omega2), ("sigma2_a", sigma2_a), ("sigma2_b", sigma2_b)):
        if not (math.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be a finite non-negative variance, got {v!r}")
    ka = as_count(k_a, "k_a")
    kb = as_count(k_b, "k_b")
    if ka < 1 or kb < 1:
        raise ValueError(f"k_a and k_b must be >= 1, got {ka}, {kb}")
    if not (math.isfinite(delta) and delta != 0):
        raise ValueError(f"delta must be finite and non-zero, got {delta!r}")
    a = check_probability_level(alpha, "alpha")
    pw = check_probability_level(power, "power")
    z = NormalDist().inv_cdf(1.0 - a / 2.0) + NormalDist().inv_cdf(pw)
    n = z * z * (omega2 + sigma2_a / ka + sigma2_b / kb) / (delta * delta)
    return math.ceil(n)
