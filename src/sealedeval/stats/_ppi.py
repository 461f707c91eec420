"""Prediction-powered inference (PPI, PPI++) for the mean of a judged metric.

A judge (a model grader) labels every answer cheaply; a person labels a small random subset.
The judge's own rate is biased by however often it is wrong; the human subset alone is unbiased
but wide. Prediction-powered inference combines them: the judge's mean over all answers,
corrected by the judge's average error measured on the human subset (the *rectifier*). The
estimate is unbiased whatever the judge's quality, and its interval is narrower than the
human-only one when the judge is good.

Sources:

* PPI — Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, "Prediction-powered inference",
  Science 382 (2023), mean estimation (their Eq. 1 and the CLT interval of §"Mean estimation"):
  ``θ̂_PP = mean(f(X̃)) − mean(f(X) − Y)``, half-width
  ``z_{1−α/2} · sqrt(σ̂²_f / N + σ̂²_Δ / n)``, ``σ̂²_f`` the variance of the predictions on the N
  unlabelled answers, ``σ̂²_Δ`` the variance of the rectifier ``f(X) − Y`` on the n labelled.
* PPI++ — Angelopoulos, Duchi & Zrnic (2024), "PPI++: Efficient Prediction-Powered Inference",
  the power-tuned estimator for a mean (§2, Example "mean estimation"):
  ``θ̂_λ = mean(Y) + λ · (mean(f(X̃)) − mean(f(X)))`` with the variance-minimising
  ``λ̂ = Cov(Y, f(X)) / ((1 + n/N) · Var(f(X)))``, clipped to [0, 1] as in the paper (λ = 0
  is the classical estimate, λ = 1 is PPI), and half-width
  ``z · sqrt(λ̂² σ̂²_f / N + Var(Y − λ̂ f(X)) / n)``. ``Var(f(X))`` is estimated on the labelled
  and unlabelled predictions pooled (the authors' reference implementation, ``ppi_py``).

Conventions: variances and the covariance use the ``n − 1`` denominator (as ``mean_sd``); the
normal quantile comes from ``statistics.NormalDist``; estimates and bounds are not clipped to
[0, 1] (a PPI estimate of a rate can leave it when the judge is bad and n small: that is data).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from ._validate import as_float_array, check_probability_level

MIN_LABELLED = 2
"""Fewest human labels PPI accepts: the rectifier's variance needs two (one label gives no
spread, so the interval would be a fiction)."""

MIN_UNLABELLED = 2
"""Fewest judge-only predictions: the variance of ``f(X̃)`` needs two."""


@dataclass(frozen=True)
class MeanInterval:
    """A point estimate with its standard error and two-sided CLT interval ``est ± z·se``."""

    estimate: float
    se: float
    lo: float
    hi: float

    @property
    def width(self) -> float:
        return self.hi - self.lo


@dataclass(frozen=True)
class PPIMean:
    """The three estimates of one mean side by side, and what the judge bought.

    ``judge`` is the judge's own mean over the unlabelled answers (no correction: what a
    judge-only report would print), ``classical`` the human labels alone, ``ppi`` the
    prediction-powered estimate (λ = 1), ``ppi_pp`` PPI++ with the tuned ``lam``.
    ``effective_n`` is the number of human labels the classical estimate would need for PPI++'s
    standard error, ``n · (se_classical / se_ppi++)²``; ``width_ratio`` is PPI++'s interval width
    over the classical one (below 1: the judge helped). Both are nan where a standard error is 0.
    """

    n_labelled: int
    n_unlabelled: int
    alpha: float
    judge: MeanInterval
    classical: MeanInterval
    ppi: MeanInterval
    ppi_pp: MeanInterval
    lam: float
    effective_n: float
    width_ratio: float
    method: str = "PPI++ (Angelopoulos, Duchi & Zrnic 2024), CLT interval, lambda clipped to [0, 1]"

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (the analysis files store this)."""
        return asdict(self)


def _var(x: npt.NDArray[np.float64]) -> float:
    return float(np.var(x, ddof=1))


def _interval(estimate: float, se: float, z: float) -> MeanInterval:
    return MeanInterval(estimate, se, estimate - z * se, estimate + z * se)


def _power_lambda(
    y: npt.NDArray[np.float64], f: npt.NDArray[np.float64], f_unl: npt.NDArray[np.float64]
) -> float:
    """PPI++'s variance-minimising λ for a mean, clipped to [0, 1]. Constant predictions
    (``Var f = 0``) carry no information: λ = 0, the classical estimate."""
    n, big_n = y.size, f_unl.size
    var_f = _var(np.concatenate([f, f_unl]))
    if var_f == 0.0:
        return 0.0
    cov = float(np.cov(y, f, ddof=1)[0, 1])
    lam = cov / ((1.0 + n / big_n) * var_f)
    return min(1.0, max(0.0, lam))


def ppi_mean(
    y_labelled: npt.ArrayLike,
    pred_labelled: npt.ArrayLike,
    pred_unlabelled: npt.ArrayLike,
    *,
    alpha: float = 0.05,
    lam: float | None = None,
) -> PPIMean:
    """Prediction-powered estimate of a mean (a judged pass rate) with its interval.

    Example (a perfect judge): when ``pred_labelled == y_labelled`` the rectifier is 0, so PPI
    equals the judge's mean over the unlabelled answers, with the interval
    ``z·sd(f(X̃))/sqrt(N)``: narrower than the human-only one whenever N > n.

    Degenerate cases: constant predictions → λ = 0 (PPI++ is the classical estimate);
    every value equal → standard errors 0, ``effective_n`` and ``width_ratio`` nan.

    Args:
        y_labelled: Human labels (0/1 for a rate, any finite numbers), the subset.
        pred_labelled: The judge's predictions on the same answers, aligned.
        pred_unlabelled: The judge's predictions on the answers without a human label.
        alpha: Two-sided level: the intervals are ``1 − alpha``.
        lam: A fixed λ instead of the tuned one (1 gives PPI); must be in [0, 1].

    Returns:
        A :class:`PPIMean`.

    Raises:
        ValueError: Fewer than ``MIN_LABELLED`` labels or ``MIN_UNLABELLED`` predictions,
            mismatched lengths, non-finite values, ``alpha`` outside (0, 1), ``lam`` outside
            [0, 1].
    """
    y = as_float_array(y_labelled, "y_labelled")
    f = as_float_array(pred_labelled, "pred_labelled")
    fu = as_float_array(pred_unlabelled, "pred_unlabelled")
    a = check_probability_level(alpha, "alpha")
    if y.size != f.size:
        raise ValueError(
            f"y_labelled/pred_labelled must have the same length, got {y.size} and {f.size}"
        )
    if y.size < MIN_LABELLED:
        raise ValueError(
            f"PPI needs at least {MIN_LABELLED} human labels (the rectifier's variance), "
            f"got {y.size}"
        )
    if fu.size < MIN_UNLABELLED:
        raise ValueError(
            f"PPI needs at least {MIN_UNLABELLED} unlabelled predictions, got {fu.size}"
        )
    if lam is not None and not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1], got {lam!r}")
    n, big_n = y.size, fu.size
    z = NormalDist().inv_cdf(1.0 - a / 2.0)

    judge = _interval(float(fu.mean()), math.sqrt(_var(fu) / big_n), z)
    classical = _interval(float(y.mean()), math.sqrt(_var(y) / n), z)

    def tuned(lm: float) -> MeanInterval:
        # θ̂_λ = mean Y + λ (mean f(X̃) − mean f(X)); at λ = 1 it is PPI's
        # mean f(X̃) − mean(f(X) − Y), computed the same way so the two agree to the bit
        est = float(y.mean() + lm * (fu.mean() - f.mean()))
        return _interval(est, math.sqrt(lm * lm * _var(fu) / big_n + _var(y - lm * f) / n), z)

    ppi = tuned(1.0)
    lm = _power_lambda(y, f, fu) if lam is None else float(lam)
    ppi_pp = tuned(lm)
    se = ppi_pp.se
    eff = n * (classical.se / se) ** 2 if se > 0 else math.nan
    ratio = ppi_pp.width / classical.width if classical.width > 0 else math.nan
    return PPIMean(n, big_n, a, judge, classical, ppi, ppi_pp, lm, eff, ratio)
