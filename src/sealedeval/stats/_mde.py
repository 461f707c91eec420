"""What a paired comparison could have detected: MDE, variance components, sign-test power.

The inverse of ``sample_size_items`` (Miller 2024, Eq. 9): for the n items at hand, the smallest
true difference the comparison detects with the planned power, and the variance components it
needs, estimated from the observed replicate scores of the two engines on the same items.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from itertools import chain
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

from ._validate import FloatArray, K, as_count, as_float_array, check_probability_level


def _check_variances(omega2: float, sigma2_a: float, sigma2_b: float) -> None:
    for name, v in (("omega2", omega2), ("sigma2_a", sigma2_a), ("sigma2_b", sigma2_b)):
        if not (math.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be a finite non-negative variance, got {v!r}")


def _check_replicates(k_a: int, k_b: int) -> tuple[int, int]:
    ka = as_count(k_a, "k_a")
    kb = as_count(k_b, "k_b")
    if ka < 1 or kb < 1:
        raise ValueError(f"k_a and k_b must be >= 1, got {ka}, {kb}")
    return ka, kb


def z_total(alpha: float = 0.05, power: float = 0.8) -> float:
    """``z_{1−α/2} + z_{power}``: the multiplier of the SE in the MDE and in Eq. 9.

    α = 0.05, power 0.8 → 1.959964 + 0.841621 = 2.801585.

    Raises:
        ValueError: ``alpha`` or ``power`` outside (0, 1).
    """
    a = check_probability_level(alpha, "alpha")
    pw = check_probability_level(power, "power")
    return NormalDist().inv_cdf(1.0 - a / 2.0) + NormalDist().inv_cdf(pw)


def mde_paired(
    omega2: float,
    sigma2_a: float,
    sigma2_b: float,
    k_a: int,
    k_b: int,
    n: int,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """Minimum detectable effect of a paired comparison on ``n`` items (inverse of Eq. 9).

    ``MDE = (z_{1−α/2} + z_{power}) · sqrt((ω² + σ_A²/K_A + σ_B²/K_B) / n)``: the smallest true
    mean difference a two-sided level-α test on the paired item means detects with probability
    ``power`` (normal approximation, the one ``sample_size_items`` plans with, so
    ``sample_size_items(..., delta=mde_paired(..., n))`` gives back ``n`` up to rounding; the
    tests check that ``mde_paired`` at ``sample_size_items(δ)`` items is ``<= δ`` and at one item
    fewer ``> δ``). A comparison whose MDE exceeds the observed difference could not have
    detected a difference of that size: a non-significant p says nothing about equality there.

    Example: ``ω² = 1/9``, ``σ² = 0``, ``n = 969`` (α = 0.05, power 0.8) → 0.029999 (the 0.03 of
    the Eq. 9 vector).

    Degenerate cases: ``n = 0`` → ``inf`` (no items detect nothing); zero total variance with
    ``n >= 1`` → 0.0 (there is no noise to detect against).

    Args:
        omega2: Variance of the per-item difference in true scores, ``>= 0``.
        sigma2_a: Within-item variance of engine A's replicate scores, ``>= 0``.
        sigma2_b: Within-item variance of engine B's replicate scores, ``>= 0``.
        k_a: Replicates per item for engine A, ``>= 1``.
        k_b: Replicates per item for engine B, ``>= 1``.
        n: Number of items both engines answered.
        alpha: Two-sided significance level in (0, 1).
        power: Power in (0, 1).

    Returns:
        The MDE in the units of the scores (a rate difference for 0/1 scores).

    Raises:
        TypeError: ``k_a``, ``k_b`` or ``n`` is not an integer.
        ValueError: A negative or non-finite variance, ``k < 1``, a negative ``n``, or
            ``alpha``/``power`` outside (0, 1).
    """
    _check_variances(omega2, sigma2_a, sigma2_b)
    ka, kb = _check_replicates(k_a, k_b)
    n_ = as_count(n, "n")
    z = z_total(alpha, power)
    if n_ == 0:
        return math.inf
    return z * math.sqrt((omega2 + sigma2_a / ka + sigma2_b / kb) / n_)


class VarianceComponents(NamedTuple):
    """Estimated inputs of ``mde_paired`` / ``sample_size_items`` from observed scores.

    ``sigma2_identified`` is False when no item has two replicates of an engine: then the
    within-item variances are not identifiable, are reported as 0 and ``omega2`` holds the whole
    variance of the item differences (their sum, which is what the MDE at the observed K uses,
    is still estimated without bias).
    """

    omega2: float
    sigma2_a: float
    sigma2_b: float
    k_a: int
    k_b: int
    n: int
    var_diff: float
    sigma2_identified: bool


def _within(reps: Sequence[FloatSeq]) -> tuple[float, int, bool, FloatArray]:
    """Pooled within-item variance ``Σ (k_i−1) s_i² / Σ (k_i−1)``, the K to plan with, whether
    any item has two replicates, and the item means (vectorised over all items at once)."""
    lens = np.fromiter((len(r) for r in reps), dtype=np.intp, count=len(reps))
    if lens.size and int(lens.min()) < 1:
        raise ValueError("every item needs at least one score per engine")
    x = as_float_array(list(chain.from_iterable(reps)), "scores")
    if not lens.size:
        return (0.0, 1, False, np.empty(0))
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    means = np.add.reduceat(x, starts) / lens
    k = max(1, round(lens.size / float(np.sum(1.0 / lens))))
    dof = int(np.sum(lens - 1))
    if dof == 0:
        return (0.0, k, False, means)
    ss = float(np.sum((x - np.repeat(means, lens)) ** 2))
    return (ss / dof, k, True, means)


FloatSeq = Sequence[float]


def variance_components(
    scores_a: Mapping[K, FloatSeq], scores_b: Mapping[K, FloatSeq]
) -> VarianceComponents:
    """Estimate ω², σ_A², σ_B² from per-item replicate scores of two engines on shared items.

    Miller (2024), section 4: the variance of the observed per-item mean difference
    ``d̄_i = mean_A,i − mean_B,i`` is ``ω² + σ_A²/K_A + σ_B²/K_B``. The within-item variance
    ``σ_X²`` is estimated by the pooled sample variance of engine X's replicates within items
    (one-way ANOVA mean square within, ``Σ (k_i − 1) s_i² / Σ (k_i − 1)``), ``K_X`` is the
    harmonic mean of its replicate counts (rounded; exact for the balanced designs here), and
    ``ω² = max(0, var(d̄_i) − σ_A²/K_A − σ_B²/K_B)`` with ``var`` the sample variance (ddof = 1).
    Truncating at 0 keeps a variance a variance; it can only make the MDE larger (conservative).

    Only items present in both mappings enter (a comparison's common items), in sorted order.

    Degenerate cases: no common item → every variance nan, ``n = 0``; one common item →
    ``omega2`` and ``var_diff`` nan (a spread needs two items); every score tied → all 0.0.

    Args:
        scores_a: Item → engine A's replicate scores on it (>= 1 each).
        scores_b: Item → engine B's replicate scores on it (>= 1 each).

    Returns:
        The components, the replicate counts to plan with, the number of common items and the
        observed variance of the item differences.

    Raises:
        ValueError: An item has no scores, or a score is not finite.
    """
    common = sorted(set(scores_a) & set(scores_b), key=repr)
    n = len(common)
    if n == 0:
        return VarianceComponents(math.nan, math.nan, math.nan, 1, 1, 0, math.nan, False)
    ra = [scores_a[i] for i in common]
    rb = [scores_b[i] for i in common]
    s2a, ka, ida, ma = _within(ra)
    s2b, kb, idb, mb = _within(rb)
    d = ma - mb
    identified = ida or idb
    if n < 2:
        return VarianceComponents(math.nan, s2a, s2b, ka, kb, n, math.nan, identified)
    var_d = float(np.var(d, ddof=1))
    omega2 = max(0.0, var_d - s2a / ka - s2b / kb)
    return VarianceComponents(omega2, s2a, s2b, ka, kb, n, var_d, identified)


def sign_test_power(n_discordant: int, split: float, alpha: float = 0.05) -> float:
    """Exact power of the two-sided sign test (``sign_test``) on ``n_discordant`` pairs.

    Under the alternative each discordant pair favours A with probability ``split``; the power
    is ``Σ_b P(Bin(m, split) = b) · 1[sign_test(b, m − b) <= α]``, summed exactly over every
    outcome (no normal approximation: the exact test's rejection region is discrete, so its
    power is not monotone in m). ``split = 1/2`` gives the test's actual size, which is at most
    α. For 0/1 scores with discordance rate ``r`` (share of items where the engines disagree),
    a rate difference δ corresponds to ``split = 1/2 + δ / (2r)``.

    Example: m = 12 discordant, split 0.9, α = 0.05 → rejects at b ∈ {0, 1, 2, 10, 11, 12};
    power 0.889.

    Degenerate cases: ``n_discordant = 0`` → 0.0 (no discordant pair, the test never rejects).

    Args:
        n_discordant: Discordant pairs (items where exactly one engine is right), ``>= 0``.
        split: True probability that a discordant pair favours A, in [0, 1].
        alpha: Two-sided significance level in (0, 1).

    Returns:
        The rejection probability in [0, 1].

    Raises:
        TypeError: ``n_discordant`` is not an integer.
        ValueError: ``n_discordant`` negative, ``split`` outside [0, 1], ``alpha`` outside (0, 1).
    """
    m = as_count(n_discordant, "n_discordant")
    if not (math.isfinite(split) and 0.0 <= split <= 1.0):
        raise ValueError(f"split must be in [0, 1], got {split!r}")
    a = check_probability_level(alpha, "alpha")
    if m == 0:
        return 0.0
    lo = _rejection_bound(m, a)
    if lo < 0:
        return 0.0
    reject = sorted({*range(lo + 1), *range(m - lo, m + 1)})
    if split in (0.0, 1.0):
        return 1.0 if (0 if split == 0.0 else m) in reject else 0.0
    log_q, log_1q = math.log(split), math.log1p(-split)
    log_m = math.lgamma(m + 1)
    terms = [
        math.exp(log_m - math.lgamma(b + 1) - math.lgamma(m - b + 1) + b * log_q + (m - b) * log_1q)
        for b in reject
    ]
    return min(1.0, math.fsum(terms))


def _rejection_bound(m: int, alpha: float) -> int:
    """Largest ``lo`` with ``sign_test(lo, m − lo) <= alpha`` (−1 if none), in one exact pass.

    ``sign_test(k, m − k) = 2·Σ_{i<=k} C(m, i) / 2^m`` grows with ``k <= m/2``, so the bound is
    where the exact cumulative sum first exceeds ``alpha · 2^(m−1)`` (compared as integers with
    ``alpha`` as its exact binary fraction: no rounding at the boundary)."""
    q = Fraction(alpha)
    limit = q.numerator * 2**m  # 2·tail <= α·2^m  ⇔  2·tail·den <= num·2^m
    tail = 0
    term = 1  # C(m, 0)
    lo = -1
    for k in range(m // 2 + 1):
        tail += term
        if 2 * tail * q.denominator > limit:
            break
        lo = k
        term = term * (m - k) // (k + 1)
    return lo


def discordant_split(delta: float, discordance: float) -> float:
    """The discordant split ``1/2 + δ / (2r)`` a 0/1 rate difference δ implies at discordance r.

    Clipped to [0, 1] (a δ larger than the discordance rate cannot happen with that many
    discordant items; the clip gives the test its best case). ``r = 0`` → nan.

    Raises:
        ValueError: ``discordance`` outside [0, 1] or ``delta`` not finite.
    """
    if not math.isfinite(delta):
        raise ValueError(f"delta must be finite, got {delta!r}")
    if not (math.isfinite(discordance) and 0.0 <= discordance <= 1.0):
        raise ValueError(f"discordance must be in [0, 1], got {discordance!r}")
    if discordance == 0:
        return math.nan
    return min(1.0, max(0.0, 0.5 + delta / (2.0 * discordance)))
