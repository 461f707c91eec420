"""Honest intervals at small n: no bootstrap interval below a stated minimum, exact intervals
for proportions.

A percentile bootstrap interval from a handful of units is not an interval: with one unit every
resample is that unit (a zero-width "interval" that claims certainty), with two or three the
resamples take a few values and the percentiles land on them. Hesterberg (2015, "What teachers
should know about the bootstrap", The American Statistician 69(4):371–386, §3–4) shows the
percentile interval is too narrow for small samples — the bootstrap distribution's spread is
biased by ``sqrt((n − 1)/n)`` and its coverage falls well short of the nominal level for n in
the single digits. Below ``MIN_N_BOOTSTRAP`` units we therefore print no bootstrap interval and
say why (``bootstrap_note``); for a proportion an exact interval needs no minimum
(``clopper_pearson``, or the Beta view of ``_bayes``).
"""

from __future__ import annotations

from typing import Final

from ._bayes import _beta_ppf
from ._validate import as_count, check_probability_level

MIN_N_BOOTSTRAP: Final = 10
"""No bootstrap interval from fewer units than this (Hesterberg 2015: the percentile interval
undercovers for small n; at n = 10 its narrowness factor sqrt((n−1)/n) is 0.95). A project rule,
stated and sealed with the statistics, printed with every interval it suppresses."""


def bootstrap_note(n: int, unit: str = "unit", min_n: int = MIN_N_BOOTSTRAP) -> str:
    """Why a bootstrap interval is not given for ``n`` units ('' when it is).

    Example: ``bootstrap_note(2, "case")`` → ``"no interval: 2 cases, below the 10 a bootstrap
    interval needs (Hesterberg 2015)"``.
    """
    n_ = as_count(n, "n")
    if n_ >= min_n:
        return ""
    units = unit if n_ == 1 else f"{unit}s"
    return (
        f"no interval: {n_} {units}, below the {min_n} a bootstrap interval needs (Hesterberg 2015)"
    )


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper & Pearson 1934) interval of a binomial proportion ``k/n``.

    ``lower = Beta_{(1−level)/2}(k, n − k + 1)`` (0 when ``k = 0``), ``upper =
    Beta_{(1+level)/2}(k + 1, n − k)`` (1 when ``k = n``): the interval inverting the two
    one-sided exact binomial tests, so its coverage is at least ``level`` for every n — the
    interval for a proportion at the small n where no bootstrap is given. Quantiles by
    bisection on the incomplete beta written as a binomial tail (``_bayes``), no SciPy.

    Examples: 8/10 → (0.443904, 0.974789); 0/10 → (0, 0.308497); 1/1 → (0.025, 1).

    Degenerate cases: ``n = 0`` → ``(nan, nan)``.

    Raises:
        TypeError: ``k`` or ``n`` not an integer.
        ValueError: ``k > n``, negative counts, or ``level`` outside (0, 1).
    """
    k_ = as_count(k, "k")
    n_ = as_count(n, "n")
    if k_ > n_:
        raise ValueError(f"k must be <= n, got k={k_}, n={n_}")
    lv = check_probability_level(level, "level")
    if n_ == 0:
        return (float("nan"), float("nan"))
    tail = (1.0 - lv) / 2.0
    lo = 0.0 if k_ == 0 else _beta_ppf(tail, k_, n_ - k_ + 1)
    hi = 1.0 if k_ == n_ else _beta_ppf(1.0 - tail, k_ + 1, n_ - k_)
    return (lo, hi)
