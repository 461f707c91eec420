"""The small-n Bayesian view: Beta(1, 1) posteriors for a rate and for a paired comparison.

Bowyer et al. (ICML 2025, "Position: Don't use the CLT in LLM evals with fewer than a few
hundred datapoints") recommend Bayesian intervals for small evaluations. With a uniform prior
and integer counts every quantity here is a binomial tail, because for integers
``I_x(a, b) = P(Bin(a + b − 1, x) >= a)``: no special functions, no SciPy, no sampling.
The frequentist headline (Wilson, exact sign test) stays; this is the labelled second view.
"""

from __future__ import annotations

import math
from fractions import Fraction

from ._validate import as_count, check_probability_level

_BISECT_STEPS = 64
"""Bisection steps for a quantile: 2⁻⁶⁴ is below float resolution on [0, 1]."""


def _binom_sf(k: int, n: int, x: float) -> float:
    """``P(Bin(n, x) >= k)`` in floating point, summed in log space (stable for large n)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lx, l1x, ln = math.log(x), math.log1p(-x), math.lgamma(n + 1)
    return min(
        1.0,
        math.fsum(
            math.exp(ln - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * lx + (n - j) * l1x)
            for j in range(k, n + 1)
        ),
    )


def _beta_cdf(x: float, a: int, b: int) -> float:
    """Regularised incomplete beta ``I_x(a, b)`` for integers ``a, b >= 1``."""
    return _binom_sf(a, a + b - 1, x)


def _beta_ppf(q: float, a: int, b: int) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(_BISECT_STEPS):
        mid = (lo + hi) / 2.0
        if _beta_cdf(mid, a, b) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def beta_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Equal-tailed credible interval of a rate under a Beta(1, 1) prior: Beta(k + 1, n − k + 1).

    The posterior of a binomial rate after ``k`` successes in ``n`` trials with a uniform prior
    is ``Beta(k + 1, n − k + 1)``; the interval is its ``(1 − level)/2`` and ``(1 + level)/2``
    quantiles, found by bisection on the exact CDF (a binomial tail, see the module). Unlike
    Wilson it is not a confidence interval; at ``k = 0`` its lower bound is 0 only in the limit
    (the posterior puts mass near 0, the equal-tailed interval starts just above it).

    Examples (SciPy ``beta.ppf``): 8/10 → (0.482244, 0.939782); 0/10 → (0.002299, 0.284914);
    10/10 → (0.715086, 0.997701).

    Degenerate cases: ``n = 0`` → the prior's own interval, ``(0.025, 0.975)`` at 95% (no data:
    the posterior is the prior, which is what the uniform prior claims).

    Args:
        k: Successes, ``0 <= k <= n``.
        n: Trials.
        level: Credible level in (0, 1).

    Returns:
        ``(lower, upper)``.

    Raises:
        TypeError: ``k`` or ``n`` is not an integer.
        ValueError: ``k`` or ``n`` negative, ``k > n``, or ``level`` outside (0, 1).
    """
    k_ = as_count(k, "k")
    n_ = as_count(n, "n")
    if k_ > n_:
        raise ValueError(f"k must be <= n, got k={k_}, n={n_}")
    lv = check_probability_level(level, "level")
    tail = (1.0 - lv) / 2.0
    a, b = k_ + 1, n_ - k_ + 1
    return (_beta_ppf(tail, a, b), _beta_ppf(1.0 - tail, a, b))


def prob_a_better(a_only: int, b_only: int) -> float:
    """Posterior probability that engine A's true rate exceeds B's, from the discordant split.

    On paired 0/1 scores the two rates differ exactly by ``P(A right, B wrong) − P(A wrong,
    B right)``, so ``A > B`` iff the share θ of discordant items that favour A exceeds 1/2. With a
    Beta(1, 1) prior on θ and ``a_only``/``b_only`` discordant items the posterior is
    ``Beta(a_only + 1, b_only + 1)`` and ``P(θ > 1/2) = P(Bin(a_only + b_only + 1, 1/2) <=
    a_only)``, an exact rational (computed with integers). Concordant items carry no information
    about the difference, as in the sign test this view sits beside. On item means (replicates)
    the same counts are the items A beats B on and the reverse (ties dropped): then it is the
    posterior probability that A wins more items than it loses.

    Examples (SciPy ``beta.sf(0.5, b + 1, c + 1)``): (10, 2) → 0.988770; (6, 6) → 0.5;
    (3, 0) → 0.9375.

    Degenerate cases: no discordant item (``0, 0``, e.g. all ties) → 0.5 (the prior's answer).

    Args:
        a_only: Discordant items favouring A.
        b_only: Discordant items favouring B.

    Returns:
        ``P(A > B)`` in (0, 1); ``prob_a_better(b, c) + prob_a_better(c, b) == 1``.

    Raises:
        TypeError: A count is not an integer.
        ValueError: A count is negative.
    """
    b_ = as_count(a_only, "a_only")
    c_ = as_count(b_only, "b_only")
    m = b_ + c_ + 1
    tail = 0
    term = 1  # C(m, 0)
    for j in range(b_ + 1):
        tail += term
        term = term * (m - j) // (j + 1)
    return float(Fraction(tail, 2**m))
