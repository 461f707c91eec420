"""An anytime-valid confidence sequence for a bounded mean, and the stopping rule built on it.

Why a confidence sequence: an evaluation that looks at its comparison after every batch of
items and stops when the interval excludes 0 inflates its error rate when each look uses a
fixed-n interval. A confidence sequence (CS) covers the mean at *every* n simultaneously with
probability ``1 − α``, so any number of looks, at any times, keeps the error rate at α.

The boundary (Robbins' normal mixture; Howard, Ramdas, McAuliffe & Sekhon 2021, "Time-uniform,
nonparametric, nonasymptotic confidence sequences", Ann. Statist. 49(2), §3 and Eq. (14)):
observations ``X_i`` in ``[a, b]`` are sub-Gaussian with variance proxy ``(b − a)²/4`` each
(Hoeffding's lemma), so ``S_t = Σ (X_i − μ)`` with ``V_t = t (b − a)²/4`` makes
``exp(λ S_t − λ² V_t / 2)`` a supermartingale for every λ. Mixing λ over ``N(0, 1/ρ)`` gives
``M_t = sqrt(ρ / (V_t + ρ)) · exp(S_t² / (2 (V_t + ρ)))``, and Ville's inequality
``P(∃t: M_t ≥ 1/α) ≤ α`` gives the two-sided boundary

    ``|S_t| < sqrt((V_t + ρ) · (log((V_t + ρ)/ρ) + 2 log(1/α)))``  for all t, w.p. ≥ 1 − α,

so the CS for μ is ``mean_t ± boundary / t``. ρ is fixed before any data: the value minimising
the boundary at the plan's maximum n (``mixture_rho``), so it is sealed with the plan.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ._validate import as_count, as_float_array, check_probability_level

CS_METHOD = "Hoeffding normal-mixture confidence sequence (Howard et al. 2021, Eq. 14)"

CONTINUE, STOP_A, STOP_B, EXHAUSTED = "continue", "stop: a better", "stop: b better", "exhausted"


def mixture_rho(v_max: float, alpha: float) -> float:
    """The mixture precision ρ that makes the boundary tightest at intrinsic time ``v_max``:
    the root of ``log((v + ρ)/ρ) + 2 log(1/α) − v/ρ = 0`` (the derivative of the squared
    boundary in ρ), found by bisection on a log scale. Deterministic in its arguments."""
    c = 2.0 * math.log(1.0 / alpha)

    def g(rho: float) -> float:
        return math.log((v_max + rho) / rho) + c - v_max / rho

    lo, hi = v_max * 1e-9, v_max * 1e9
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if g(mid) < 0:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def cs_radius(t: int, alpha: float, rho: float, value_range: float) -> float:
    """Half-width of the CS for the mean after ``t`` observations (see the module docstring)."""
    v = t * value_range * value_range / 4.0
    return math.sqrt((v + rho) * (math.log((v + rho) / rho) + 2.0 * math.log(1.0 / alpha))) / t


@dataclass(frozen=True)
class Look:
    """One planned look: ``n`` observations, their mean, the CS ``[lo, hi]`` and the rule's
    decision there (``continue``, ``stop: a better``, ``stop: b better``, ``exhausted``)."""

    n: int
    mean: float
    lo: float
    hi: float
    decision: str


@dataclass(frozen=True)
class SequentialResult:
    """The looks the rule made, where it stopped and what it saved (``n_max − stopped_at``)."""

    looks: tuple[Look, ...]
    stopped_at: int
    decision: str
    n_max: int
    alpha: float
    rho: float
    method: str = CS_METHOD

    @property
    def saved(self) -> int:
        return self.n_max - self.stopped_at

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"saved": self.saved}


def sequential_rule(
    values: Sequence[float],
    looks: Sequence[int],
    *,
    alpha: float = 0.05,
    bounds: tuple[float, float] = (-1.0, 1.0),
) -> SequentialResult:
    """Evaluate the sealed rule on ``values`` (paired differences a − b in ``bounds``, in the
    sealed item order) at each planned look: stop at the first look whose CS excludes 0, else
    at the last look (``n_max``). Values beyond the stop are ignored, so the same function
    replays a run from its raw rows (the audit) and decides a run's next step (the run stage).

    Args:
        values: The observations available, in order (at least up to the last look reached).
        looks: Planned look sizes, strictly increasing, the last one the maximum n.
        alpha: The CS's error rate over all looks together.
        bounds: The range every value lies in (Hoeffding's lemma needs it).

    Returns:
        A :class:`SequentialResult`; when fewer values than the next look are available the
        last look is marked ``continue`` and ``stopped_at`` is the values' count.

    Raises:
        ValueError: Empty or non-increasing looks, a value outside ``bounds``, bad ``alpha``.
    """
    x = as_float_array(values, "values")
    a = check_probability_level(alpha, "alpha")
    lo_b, hi_b = float(bounds[0]), float(bounds[1])
    if not lo_b < hi_b:
        raise ValueError(f"bounds must be (low, high) with low < high, got {bounds!r}")
    ns = [as_count(n, "looks[]") for n in looks]
    if not ns or ns[0] < 1 or any(b <= a_ for a_, b in itertools.pairwise(ns)):
        raise ValueError(f"looks must be positive and strictly increasing, got {list(looks)!r}")
    if x.size and (x.min() < lo_b or x.max() > hi_b):
        raise ValueError(f"values must lie in {bounds!r}")
    n_max = ns[-1]
    width = hi_b - lo_b
    rho = mixture_rho(n_max * width * width / 4.0, a)
    made: list[Look] = []
    for n in ns:
        if x.size < n:
            break
        m = float(np.mean(x[:n]))
        r = cs_radius(n, a, rho, width)
        lo, hi = max(lo_b, m - r), min(hi_b, m + r)
        decision = STOP_A if lo > 0 else STOP_B if hi < 0 else CONTINUE
        if decision == CONTINUE and n == n_max:
            decision = EXHAUSTED
        made.append(Look(n, m, lo, hi, decision))
        if decision != CONTINUE:
            return SequentialResult(tuple(made), n, decision, n_max, a, rho)
    return SequentialResult(tuple(made), min(x.size, n_max), CONTINUE, n_max, a, rho)


def check_stop(
    values: Sequence[float],
    looks: Sequence[int],
    stopped_at: int,
    *,
    alpha: float = 0.05,
    bounds: tuple[float, float] = (-1.0, 1.0),
) -> str | None:
    """Why a run that used ``stopped_at`` observations broke the sealed rule, or None.

    A run breaks it by stopping where the rule said continue (or between looks), or by going
    on after a look where the rule said stop.
    """
    n_used = as_count(stopped_at, "stopped_at")
    replay = sequential_rule(values[:n_used], looks, alpha=alpha, bounds=bounds)
    if replay.decision == CONTINUE:
        return f"stopped at n = {n_used}, where the rule says continue"
    if replay.stopped_at != n_used:
        return (
            f"went on to n = {n_used} after the rule said {replay.decision!r} "
            f"at n = {replay.stopped_at}"
        )
    return None
